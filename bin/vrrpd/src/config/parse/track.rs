//! What an instance tracks beside its interfaces: `vrrp_script`, `vrrp_track_process` and
//! `track_file` blocks, and the entries of an instance that name none of them.

use std::time::Duration;

use super::args::{block, command, name, no_args, number, one, seconds_cs, unknown, user};
use crate::config::error::Found;
use crate::config::model::{
    Command, Config, FileInit, ParamMatch, TrackFile, TrackProcess, VrrpScript,
};
use crate::config::tree::Node;

/// A `track_script`, `track_process` or `track_file` entry that names no block: keepalived
/// warns ("not found, ignoring") and runs the instance without it; so does vrrpd, and the
/// warning says that check is not made.
pub(super) fn unknown_tracks(c: &mut Config, errors: &mut Found) {
    let names = |it: &mut dyn Iterator<Item = String>| it.collect::<Vec<String>>();
    let scripts = names(&mut c.scripts.iter().map(|s| s.name.clone()));
    let processes = names(&mut c.processes.iter().map(|p| p.name.clone()));
    let files = names(&mut c.files.iter().map(|f| f.name.clone()));
    for i in &mut c.instances {
        let mut ignored = |keyword: &str, name: &str, known: &[String], block: &str| {
            let found = known.iter().any(|k| k == name);
            if !found {
                errors.warn(
                    &i.location,
                    format!(
                        "vrrp_instance {}: {keyword} `{name}` names no {block}: ignored, as \
                         keepalived does (the instance runs without that check)",
                        i.name
                    ),
                );
            }
            found
        };
        i.track_scripts
            .retain(|t| ignored("track_script", &t.name, &scripts, "vrrp_script"));
        i.track_processes
            .retain(|t| ignored("track_process", &t.name, &processes, "vrrp_track_process"));
        i.track_files
            .retain(|t| ignored("track_file", &t.name, &files, "track_file block"));
    }
}

pub(super) fn vrrp_script(node: &Node, errors: &mut Found) -> Option<VrrpScript> {
    let name = name(node, errors)?;
    let (mut command_line, mut interval, mut timeout) = (None, 100, None);
    let mut s = VrrpScript {
        name,
        command: Command {
            words: Vec::new(),
            location: node.location.clone(),
        },
        interval: Duration::ZERO,
        timeout: Duration::ZERO,
        weight: 0,
        rise: 1,
        fall: 1,
        user: None,
        init_fail: false,
        location: node.location.clone(),
    };
    for n in block(node, errors) {
        match n.keyword.as_str() {
            "script" => command_line = command(n, errors),
            "interval" => {
                interval = seconds_cs(n, 360_000, errors)
                    .filter(|&cs| cs > 0)
                    .unwrap_or(interval)
            }
            "timeout" => timeout = seconds_cs(n, 360_000, errors).filter(|&cs| cs > 0),
            "weight" => s.weight = number(n, -253..=253, errors).unwrap_or(0),
            "rise" => s.rise = number(n, 1..=10_000, errors).unwrap_or(1),
            "fall" => s.fall = number(n, 1..=10_000, errors).unwrap_or(1),
            "user" => s.user = user(n, errors),
            "init_fail" => s.init_fail = no_args(n, errors),
            _ => unknown(n, &format!("vrrp_script {}", s.name), errors),
        }
    }
    let Some(command_line) = command_line else {
        errors.push(
            &node.location,
            format!("vrrp_script {}: `script` is required", s.name),
        );
        return None;
    };
    s.command = command_line;
    s.interval = Duration::from_millis(u64::from(interval) * 10);
    s.timeout = Duration::from_millis(u64::from(timeout.unwrap_or(interval)) * 10);
    Some(s)
}

/// `vrrp_track_process NAME { process ...; quorum N; ... }`, keepalived's defaults (weight 1,
/// quorum 1, no maximum, no delays).
pub(super) fn track_process(node: &Node, errors: &mut Found) -> Option<TrackProcess> {
    let name = name(node, errors)?;
    let mut p = TrackProcess {
        name,
        process: Vec::new(),
        param_match: ParamMatch::Any,
        full_command: false,
        weight: 1,
        quorum: 1,
        quorum_max: u32::MAX,
        fork_delay_cs: 0,
        terminate_delay_cs: 0,
    };
    for n in block(node, errors) {
        match n.keyword.as_str() {
            "process" if !n.args.is_empty() && n.block.is_none() => p.process.clone_from(&n.args),
            "process" => errors.push(&n.location, "`process` takes a name and its parameters"),
            // Alone: the process must have no parameters.
            "param_match" if n.args.is_empty() && n.block.is_none() => {
                p.param_match = ParamMatch::Exact;
            }
            "param_match" => {
                p.param_match = match one(n, errors) {
                    Some("partial") => ParamMatch::Partial,
                    Some("initial") => ParamMatch::Initial,
                    Some(other) => {
                        errors.push(
                            &n.location,
                            format!("`param_match {other}`: must be partial or initial"),
                        );
                        ParamMatch::Any
                    }
                    None => ParamMatch::Any,
                }
            }
            "full_command" => p.full_command = no_args(n, errors),
            // keepalived allows 254; vrrpd's tracking weights stop at 253, as scripts'.
            "weight" => p.weight = number(n, -253..=253, errors).unwrap_or(1),
            "quorum" => p.quorum = number(n, 1..=65_535, errors).unwrap_or(1),
            "quorum_max" => p.quorum_max = number(n, 0..=65_535, errors).unwrap_or(u32::MAX),
            "delay" => {
                let cs = seconds_cs(n, 360_000, errors).unwrap_or(0);
                (p.fork_delay_cs, p.terminate_delay_cs) = (cs, cs);
            }
            "fork_delay" => p.fork_delay_cs = seconds_cs(n, 360_000, errors).unwrap_or(0),
            "terminate_delay" => p.terminate_delay_cs = seconds_cs(n, 360_000, errors).unwrap_or(0),
            _ => unknown(n, &format!("vrrp_track_process {}", p.name), errors),
        }
    }
    if p.process.is_empty() {
        errors.push(
            &node.location,
            format!("vrrp_track_process {}: `process` is required", p.name),
        );
        return None;
    }
    // keepalived: parameters mean the command line is compared, exactly unless said.
    if p.process.len() > 1 {
        p.full_command = true;
        if p.param_match == ParamMatch::Any {
            p.param_match = ParamMatch::Exact;
        }
    }
    if p.quorum > p.quorum_max {
        errors.push(
            &node.location,
            format!(
                "vrrp_track_process {}: quorum {} is above quorum_max {}",
                p.name, p.quorum, p.quorum_max
            ),
        );
    }
    Some(p)
}

/// `track_file NAME { file PATH; weight N; init_file [VALUE] [overwrite] }`.
pub(super) fn track_file(node: &Node, errors: &mut Found) -> Option<TrackFile> {
    let name = name(node, errors)?;
    let (mut path, mut weight, mut init) = (None, 1, None);
    for n in block(node, errors) {
        match n.keyword.as_str() {
            "file" => path = one(n, errors).map(str::to_string),
            "weight" => {
                weight = match n.args.as_slice() {
                    [_] => number(n, -2_147_483_647..=2_147_483_647, errors).unwrap_or(1),
                    _ => {
                        errors.push(
                            &n.location,
                            "`weight` takes a number (`reverse` is not supported by vrrpd)",
                        );
                        1
                    }
                }
            }
            "init_file" => init = file_init(n, errors),
            _ => unknown(n, &format!("track_file {name}"), errors),
        }
    }
    let Some(path) = path else {
        errors.push(
            &node.location,
            format!("track_file {name}: `file` is required"),
        );
        return None;
    };
    Some(TrackFile {
        name,
        path,
        weight,
        init,
    })
}

/// `init_file [VALUE] [overwrite]`: keepalived's value range for VRRP, -254 to 254.
fn file_init(n: &Node, errors: &mut Found) -> Option<FileInit> {
    let mut init = FileInit {
        value: 0,
        overwrite: false,
    };
    for arg in &n.args {
        match arg.parse::<i32>() {
            _ if arg == "overwrite" => init.overwrite = true,
            Ok(v) if (-254..=254).contains(&v) => init.value = v,
            _ => {
                errors.push(
                    &n.location,
                    format!("`init_file {arg}`: give a value from -254 to 254 and/or `overwrite`"),
                );
                return None;
            }
        }
    }
    Some(init)
}
