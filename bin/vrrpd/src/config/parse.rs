//! keepalived.conf's meaning: statements ([`super::tree`]) to the [`Config`] model, every
//! problem collected with its file and line.

use std::net::IpAddr;
use std::time::Duration;

use ipi_core::secret::Secret;
use ipi_core::vrrp::Version;

use super::error::Found;
use super::model::{
    Command, Config, FileInit, GlobalDefs, Location, Notify, ParamMatch, SyncGroup, TrackFile,
    TrackProcess, TrackedFile, TrackedInterface, TrackedProcess, TrackedScript, User,
    VirtualAddress, VrrpInstance, VrrpScript,
};
use super::tree::Node;
use crate::fsm::{GarpParams, InitialState};

/// Keywords accepted and without effect because vrrpd always does what they ask for
/// (`vrrp_skip_check_adv_addr`: vrrpd checks every advert's addresses, which keepalived's
/// keyword only makes cheaper). What is not vrrpd's job is set aside earlier, with a warning
/// ([`super::ignored`]); anything else unknown is an error.
const IGNORED_GLOBALS: &[&str] = &["vrrp_skip_check_adv_addr"];

/// Reads the statements of a whole file into a model; problems go to `errors`.
pub fn config(nodes: &[Node], errors: &mut Found) -> Config {
    let mut c = Config::default();
    // global_defs first: instances take their defaults from it wherever it is written.
    for node in nodes.iter().filter(|n| n.keyword == "global_defs") {
        global_defs(node, &mut c.global, errors);
    }
    for node in nodes {
        match node.keyword.as_str() {
            "global_defs" => {}
            "vrrp_script" => c.scripts.extend(vrrp_script(node, errors)),
            "vrrp_instance" => c.instances.extend(vrrp_instance(node, &c.global, errors)),
            "vrrp_sync_group" => c.sync_groups.extend(sync_group(node, errors)),
            "vrrp_track_process" => c.processes.extend(track_process(node, errors)),
            // vrrp_track_file: keepalived's older name, still read.
            "track_file" | "vrrp_track_file" => c.files.extend(track_file(node, errors)),
            other => match super::known::refusal(other) {
                Some(why) => errors.push(&node.location, why),
                None => errors.push(
                    &node.location,
                    format!(
                        "unknown keyword `{other}` at the top level (vrrpd reads global_defs, \
                         vrrp_script, vrrp_instance, vrrp_sync_group and include)"
                    ),
                ),
            },
        }
    }
    unknown_tracks(&mut c, errors);
    c
}

/// A `track_script`, `track_process` or `track_file` entry that names no block: keepalived
/// warns ("not found, ignoring") and runs the instance without it; so does vrrpd, and the
/// warning says that check is not made.
fn unknown_tracks(c: &mut Config, errors: &mut Found) {
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

// ---- argument helpers --------------------------------------------------------------------

/// A keyword vrrpd does not read here: keepalived's (refused, with the reason where there
/// is one), or unknown to keepalived too.
fn unknown(node: &Node, within: &str, errors: &mut Found) {
    let message = match super::known::refusal(&node.keyword) {
        Some(why) => format!("{why} (in {within})"),
        None => format!("unknown keyword `{}` in {within}", node.keyword),
    };
    errors.push(&node.location, message);
}

/// The one argument of `node`. More are keepalived's to ignore (it reads the first word
/// after the keyword and no further): vrrpd takes the first too, with a warning.
fn one<'a>(node: &'a Node, errors: &mut Found) -> Option<&'a str> {
    match node.args.as_slice() {
        [arg] if node.block.is_none() => Some(arg),
        [arg, rest @ ..] if node.block.is_none() => {
            errors.warn(
                &node.location,
                format!(
                    "`{}` takes one value: `{arg}` is read and `{}` ignored, as keepalived does",
                    node.keyword,
                    rest.join(" ")
                ),
            );
            Some(arg)
        }
        _ => {
            errors.push(&node.location, format!("`{}` needs a value", node.keyword));
            None
        }
    }
}

fn no_args(node: &Node, errors: &mut Found) -> bool {
    if node.args.is_empty() && node.block.is_none() {
        return true;
    }
    errors.push(&node.location, format!("`{}` takes no value", node.keyword));
    false
}

fn block<'a>(node: &'a Node, errors: &mut Found) -> &'a [Node] {
    match &node.block {
        Some(children) if node.args.is_empty() || node.keyword == "vrrp_script" => children,
        Some(children) => children,
        None => {
            errors.push(
                &node.location,
                format!("`{}` needs a `{{ ... }}` block", node.keyword),
            );
            &[]
        }
    }
}

fn number<T: std::str::FromStr + PartialOrd + std::fmt::Display>(
    node: &Node,
    range: std::ops::RangeInclusive<T>,
    errors: &mut Found,
) -> Option<T> {
    let text = one(node, errors)?;
    match text.parse::<T>() {
        Ok(v) if range.contains(&v) => Some(v),
        _ => {
            errors.push(
                &node.location,
                format!(
                    "`{} {text}`: must be a whole number from {} to {}",
                    node.keyword,
                    range.start(),
                    range.end()
                ),
            );
            None
        }
    }
}

/// Decimal seconds (`1`, `0.1`, `2.50`) in centiseconds.
pub fn centiseconds(text: &str) -> Option<u32> {
    decimal(text, 2)
}

/// Decimal seconds (`0.001`, `1.5`) in microseconds.
pub fn microseconds(text: &str) -> Option<u32> {
    decimal(text, 6)
}

/// A decimal number in units of 10^-`digits` (more decimals only when they are zeros).
fn decimal(text: &str, digits: usize) -> Option<u32> {
    let (whole, frac) = text.split_once('.').unwrap_or((text, ""));
    if whole.is_empty() && frac.is_empty()
        || !whole.bytes().all(|b| b.is_ascii_digit())
        || !frac.bytes().all(|b| b.is_ascii_digit())
        || frac.len() > digits && frac[digits..].bytes().any(|b| b != b'0')
    {
        return None;
    }
    let whole: u32 = if whole.is_empty() {
        0
    } else {
        whole.parse().ok()?
    };
    let frac = format!("{frac:0<digits$}");
    let frac: u32 = if digits == 0 {
        0
    } else {
        frac[..digits].parse().ok()?
    };
    whole
        .checked_mul(10u32.checked_pow(u32::try_from(digits).ok()?)?)?
        .checked_add(frac)
}

fn seconds_cs(node: &Node, max_cs: u32, errors: &mut Found) -> Option<u32> {
    let text = one(node, errors)?;
    match centiseconds(text) {
        Some(cs) if cs <= max_cs => Some(cs),
        _ => {
            errors.push(
                &node.location,
                format!(
                    "`{} {text}`: must be seconds with at most two decimals, at most {}",
                    node.keyword,
                    max_cs / 100
                ),
            );
            None
        }
    }
}

/// A router's own or its peer's address (`unicast_src_ip`, `mcast_src_ip`, a unicast peer).
/// keepalived reads `ADDR/LEN` there as ADDR, silently: vrrpd reads it so too, and says so.
fn host_address(node: &Node, what: &str, text: &str, errors: &mut Found) -> Option<IpAddr> {
    let Some((addr, len)) = text.split_once('/') else {
        return address(node, text, errors);
    };
    let a = address(node, addr, errors)?;
    let max = if a.is_ipv4() { 32 } else { 128 };
    if !len.parse::<u8>().is_ok_and(|l| l <= max) {
        errors.push(
            &node.location,
            format!("`{what}`: `{text}`: the prefix length must be 0 to {max}"),
        );
        return None;
    }
    errors.warn(
        &node.location,
        format!(
            "`{what}`: `{text}` is read as the address {a}, its prefix length ignored, as \
             keepalived does"
        ),
    );
    Some(a)
}

fn address(node: &Node, text: &str, errors: &mut Found) -> Option<IpAddr> {
    match text.parse() {
        Ok(a) => Some(a),
        Err(_) => {
            errors.push(
                &node.location,
                format!("`{}`: `{text}` is not an IP address", node.keyword),
            );
            None
        }
    }
}

/// An entry's `weight N` after its name, within `range`; keepalived's `reverse` is refused.
fn weight(
    node: &Node,
    args: &[String],
    range: std::ops::RangeInclusive<i32>,
    errors: &mut Found,
) -> Option<i32> {
    match args {
        [] => None,
        [kw, w] if kw == "weight" => match w.parse::<i32>() {
            Ok(w) if range.contains(&w) => Some(w),
            _ => {
                errors.push(
                    &node.location,
                    format!(
                        "`{}`: weight `{w}` must be from {} to {}",
                        node.keyword,
                        range.start(),
                        range.end()
                    ),
                );
                None
            }
        },
        _ => {
            let reverse = if args.iter().any(|a| a == "reverse") {
                " (`reverse` is not supported by vrrpd)"
            } else {
                ""
            };
            errors.push(
                &node.location,
                format!(
                    "`{} {}`: only `weight N` may follow the name{reverse}",
                    node.keyword,
                    args.join(" ")
                ),
            );
            None
        }
    }
}

/// Why a command line has no program to run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommandError {
    /// The words cannot be split (ipi-core's message: an unclosed quote).
    #[error("{0}")]
    Words(String),
    /// No word at all.
    #[error("the command is empty")]
    Empty,
}

/// A command line as keepalived splits it: the words of the (quoted) string, where single or
/// double quotes group words and a backslash escapes the next character. No shell runs it.
pub fn command_words(text: &str) -> Result<Vec<String>, CommandError> {
    let words = ipi_core::place::words(text, None).map_err(CommandError::Words)?;
    if words.is_empty() {
        return Err(CommandError::Empty);
    }
    Ok(words)
}

fn command(node: &Node, errors: &mut Found) -> Option<Command> {
    if node.block.is_some() || node.args.is_empty() {
        errors.push(
            &node.location,
            format!("`{}` takes a command line", node.keyword),
        );
        return None;
    }
    match command_words(&node.args.join(" ")) {
        Ok(words) => Some(Command {
            words,
            location: node.location.clone(),
        }),
        Err(e) => {
            errors.push(&node.location, format!("`{}`: {e}", node.keyword));
            None
        }
    }
}

fn user(node: &Node, errors: &mut Found) -> Option<User> {
    match node.args.as_slice() {
        [user] => Some(User {
            user: user.clone(),
            group: None,
        }),
        [user, group] => Some(User {
            user: user.clone(),
            group: Some(group.clone()),
        }),
        _ => {
            errors.push(
                &node.location,
                format!("`{}` takes a user and an optional group", node.keyword),
            );
            None
        }
    }
}

/// The GARP keywords shared by global_defs (`vrrp_` prefix) and instances.
fn garp(node: &Node, keyword: &str, garp: &mut GarpParams, errors: &mut Found) -> bool {
    match keyword {
        "garp_master_delay" => {
            garp.master_delay_cs = seconds_cs(node, 100_000, errors).unwrap_or(garp.master_delay_cs)
        }
        "garp_master_repeat" => {
            garp.master_repeat = number(node, 1..=255, errors).unwrap_or(garp.master_repeat)
        }
        "garp_master_refresh" => {
            garp.master_refresh_cs =
                seconds_cs(node, 100_000, errors).unwrap_or(garp.master_refresh_cs)
        }
        "garp_master_refresh_repeat" => {
            garp.master_refresh_repeat =
                number(node, 1..=255, errors).unwrap_or(garp.master_refresh_repeat)
        }
        "garp_lower_prio_delay" => {
            garp.lower_prio_delay_cs =
                seconds_cs(node, 100_000, errors).unwrap_or(garp.lower_prio_delay_cs)
        }
        "garp_lower_prio_repeat" => {
            garp.lower_prio_repeat = number(node, 0..=255, errors).unwrap_or(garp.lower_prio_repeat)
        }
        _ => return false,
    }
    true
}

fn notify(node: &Node, notify: &mut Notify, errors: &mut Found) -> bool {
    let slot = match node.keyword.as_str() {
        "notify_master" => &mut notify.master,
        "notify_backup" => &mut notify.backup,
        "notify_fault" => &mut notify.fault,
        "notify_stop" => &mut notify.stop,
        "notify" => &mut notify.any,
        _ => return false,
    };
    *slot = command(node, errors);
    true
}

// ---- blocks ------------------------------------------------------------------------------

fn global_defs(node: &Node, g: &mut GlobalDefs, errors: &mut Found) {
    let children = block(node, errors);
    for n in children {
        let kw = n.keyword.as_str();
        match kw {
            "router_id" => g.router_id = one(n, errors).map(str::to_string),
            "script_user" => g.script_user = user(n, errors),
            "enable_script_security" => g.enable_script_security = no_args(n, errors),
            "vrrp_version" => {
                g.vrrp_version = match number::<u8>(n, 2..=3, errors) {
                    Some(3) => Version::V3,
                    _ => Version::V2,
                }
            }
            "vrrp_strict" => errors.push(
                &n.location,
                "`vrrp_strict` is not supported by vrrpd (it forbids what OpenShift configures: \
                 PASS authentication and unicast)",
            ),
            "vrrp_preempt_on_lower_priority" => g.preempt_on_lower_priority = flag(n, errors),
            _ if global_vrrp(n, g, errors) => {}
            _ if kw.starts_with("vrrp_garp_") && garp(n, &kw[5..], &mut g.garp, errors) => {}
            _ if IGNORED_GLOBALS.contains(&kw) => {}
            _ => unknown(n, "global_defs", errors),
        }
    }
    // keepalived: the lower-priority burst defaults to the global master burst, wherever in
    // the block either is written.
    let set = |kw: &str| children.iter().any(|n| n.keyword == kw);
    if !set("vrrp_garp_lower_prio_repeat") {
        g.garp.lower_prio_repeat = g.garp.master_repeat;
    }
    if !set("vrrp_garp_lower_prio_delay") {
        g.garp.lower_prio_delay_cs = g.garp.master_delay_cs;
    }
}

/// The global VRRP keywords beyond the version and the GARP bursts. False when `n` is none.
fn global_vrrp(n: &Node, g: &mut GlobalDefs, errors: &mut Found) -> bool {
    match n.keyword.as_str() {
        "vrrp_lower_prio_no_advert" => g.lower_prio_no_advert = flag(n, errors),
        "vrrp_startup_delay" => {
            g.startup_delay_cs = seconds_cs(n, 360_000, errors).unwrap_or(0);
        }
        "vrrp_garp_interval" => g.garp_interval_us = interval_us(n, errors),
        "vrrp_gna_interval" => g.gna_interval_us = interval_us(n, errors),
        // vrrpd always waits for an instance's interface to appear and follows it going and
        // coming back (FAULT meanwhile): what keepalived does with this keyword.
        "dynamic_interfaces" => {
            if !matches!(n.args.as_slice(), [] | [_])
                || n.args.first().is_some_and(|a| a != "allow_if_changes")
            {
                errors.push(
                    &n.location,
                    "`dynamic_interfaces` takes nothing or `allow_if_changes`",
                );
            }
        }
        // keepalived's interface for static addresses, which vrrpd does not manage; an
        // instance names its own.
        "default_interface" => {
            one(n, errors);
        }
        // vrrpd always accepts unicast adverts only from the listed peers.
        "vrrp_check_unicast_src" => {
            no_args(n, errors);
        }
        _ => return false,
    }
    true
}

/// Decimal seconds to the microsecond (keepalived's `vrrp_garp_interval`), at least 1 us;
/// 0 is keepalived's default (no delay), with its warning.
fn interval_us(n: &Node, errors: &mut Found) -> u32 {
    let text = one(n, errors).unwrap_or("");
    match microseconds(text) {
        Some(us) if us > 0 => us,
        Some(_) => {
            errors.warn(
                &n.location,
                format!(
                    "`{} {text}`: keepalived reports 0 as outside its range (0.000001 to \
                     4294.967295) and keeps its default, no delay between the packets of a \
                     burst; vrrpd does the same",
                    n.keyword
                ),
            );
            0
        }
        None => {
            errors.push(
                &n.location,
                format!(
                    "`{} {text}`: must be seconds with at most six decimals, from 0.000001 to 4294",
                    n.keyword
                ),
            );
            0
        }
    }
}

fn name(node: &Node, errors: &mut Found) -> Option<String> {
    match node.args.as_slice() {
        [name] => Some(name.clone()),
        _ => {
            errors.push(
                &node.location,
                format!("`{}` takes one name before its block", node.keyword),
            );
            None
        }
    }
}

fn vrrp_script(node: &Node, errors: &mut Found) -> Option<VrrpScript> {
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
fn track_process(node: &Node, errors: &mut Found) -> Option<TrackProcess> {
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
fn track_file(node: &Node, errors: &mut Found) -> Option<TrackFile> {
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

fn vrrp_instance(node: &Node, global: &GlobalDefs, errors: &mut Found) -> Option<VrrpInstance> {
    let name = name(node, errors)?;
    let within = format!("vrrp_instance {name}");
    let mut i = VrrpInstance::new(name, global.garp, node.location.clone());
    i.preempt_on_lower_priority = global.preempt_on_lower_priority;
    i.lower_prio_no_advert = global.lower_prio_no_advert;
    // advert_int is checked once the version is known, which may be written after it.
    let mut advert_int_text = None;
    for n in block(node, errors) {
        let known = election(n, &mut i, &mut advert_int_text, errors)
            || addresses(n, &mut i, errors)
            || tracking(n, &mut i, errors)
            || notify(n, &mut i.notify, errors)
            || garp(n, &n.keyword, &mut i.garp, errors);
        if !known {
            unknown(n, &within, errors);
        }
    }
    if i.interface.is_empty() {
        errors.push(&node.location, format!("{within}: `interface` is required"));
    }
    if i.vrid == 0 {
        errors.push(
            &node.location,
            format!("{within}: `virtual_router_id` (1-255) is required"),
        );
    }
    if let Some((text, location)) = advert_int_text {
        i.advert_int_cs = advert_int(&i, global, &text, &location, errors).unwrap_or(100);
    }
    Some(i)
}

/// The keywords of the election: state, interface, VRID, priority, timers, version,
/// preemption, password. False when `n` is none of them.
fn election(
    n: &Node,
    i: &mut VrrpInstance,
    advert_int_text: &mut Option<(String, Location)>,
    errors: &mut Found,
) -> bool {
    match n.keyword.as_str() {
        "state" => i.state = initial_state(n, errors),
        "interface" => i.interface = one(n, errors).unwrap_or_default().to_string(),
        "virtual_router_id" => i.vrid = number(n, 1..=255, errors).unwrap_or(0),
        "priority" => i.priority = number(n, 1..=255, errors).unwrap_or(100),
        "advert_int" => {
            *advert_int_text = one(n, errors).map(|t| (t.to_string(), n.location.clone()));
        }
        "version" => {
            i.version =
                number::<u8>(n, 2..=3, errors).map(
                    |v| {
                        if v == 3 {
                            Version::V3
                        } else {
                            Version::V2
                        }
                    },
                )
        }
        "native_ipv6" => i.native_ipv6 = no_args(n, errors),
        "nopreempt" => i.preempt = !no_args(n, errors),
        "preempt" => i.preempt = no_args(n, errors),
        "preempt_delay" => i.preempt_delay_cs = seconds_cs(n, 100_000, errors).unwrap_or(0),
        "authentication" => i.auth_pass = authentication(n, errors),
        "lower_prio_no_advert" => i.lower_prio_no_advert = flag(n, errors),
        // keepalived's accept mode, vrrpd's only one (it installs no firewall rules).
        "accept" => {
            no_args(n, errors);
        }
        "preempt_on_lower_priority" => i.preempt_on_lower_priority = flag(n, errors),
        _ => return false,
    }
    true
}

fn initial_state(n: &Node, errors: &mut Found) -> Option<InitialState> {
    match one(n, errors) {
        Some("MASTER") => Some(InitialState::Master),
        Some("BACKUP") => Some(InitialState::Backup),
        Some(other) => {
            errors.push(
                &n.location,
                format!("`state {other}`: must be MASTER or BACKUP"),
            );
            None
        }
        None => None,
    }
}

/// A switch as keepalived writes `lower_prio_no_advert`: alone it means on, or
/// true/false/on/off.
fn flag(n: &Node, errors: &mut Found) -> bool {
    match n.args.as_slice() {
        [] if n.block.is_none() => true,
        [v] if n.block.is_none() && (v == "true" || v == "on") => true,
        [v] if n.block.is_none() && (v == "false" || v == "off") => false,
        _ => {
            errors.push(
                &n.location,
                format!("`{}` takes nothing, or true/false/on/off", n.keyword),
            );
            false
        }
    }
}

/// The addresses: VIPs, advert sources, unicast peers. False when `n` is none of them.
fn addresses(n: &Node, i: &mut VrrpInstance, errors: &mut Found) -> bool {
    match n.keyword.as_str() {
        "virtual_ipaddress" => {
            for v in block(n, errors) {
                i.vips.extend(virtual_address(v, errors));
            }
        }
        "virtual_routes" => {
            for r in block(n, errors) {
                i.virtual_routes
                    .extend(super::route::virtual_route(r, errors));
            }
        }
        "virtual_rules" => {
            for r in block(n, errors) {
                i.virtual_rules
                    .extend(super::route::virtual_rule(r, errors));
            }
        }
        "virtual_ipaddress_excluded" => {
            for v in block(n, errors) {
                i.vips_excluded.extend(virtual_address(v, errors));
            }
        }
        // What vrrpd always does: a configured source address that leaves its interface puts
        // the instance in FAULT (track_src_ip); unicast adverts are accepted only from the
        // listed peers (check_unicast_src); every advert's addresses are checked
        // (skip_check_adv_addr only makes keepalived's check cheaper).
        "track_src_ip" | "check_unicast_src" | "skip_check_adv_addr" => {
            no_args(n, errors);
        }
        "mcast_src_ip" => {
            i.mcast_src_ip = one(n, errors).and_then(|t| host_address(n, &n.keyword, t, errors))
        }
        "unicast_src_ip" => {
            i.unicast_src_ip = one(n, errors).and_then(|t| host_address(n, &n.keyword, t, errors))
        }
        "unicast_peer" => {
            for p in block(n, errors) {
                if let Some((peer, ttl)) = unicast_peer(p, errors) {
                    if i.unicast_peers.contains(&peer) {
                        errors.push(&p.location, format!("unicast_peer {peer}: listed twice"));
                        continue;
                    }
                    i.unicast_peers.push(peer);
                    if let Some(range) = ttl {
                        i.peer_ttl.insert(peer, range);
                    }
                }
            }
        }
        _ => return false,
    }
    true
}

/// A line of `unicast_peer { ... }`: `IP [min_ttl N] [max_ttl M]` (keepalived's options, 0 to
/// 255 each), the address and the TTL range when one is written.
fn unicast_peer(p: &Node, errors: &mut Found) -> Option<(IpAddr, Option<(u8, u8)>)> {
    let peer = host_address(p, "unicast_peer", &p.keyword, errors)?;
    let (mut min, mut max, mut ranged) = (0u8, 255u8, false);
    for pair in p.args.chunks(2) {
        let [option, value] = pair else {
            errors.push(
                &p.location,
                format!("unicast_peer {peer}: `{}` needs a value", pair[0]),
            );
            return None;
        };
        let Ok(ttl) = value.parse::<u8>() else {
            errors.push(
                &p.location,
                format!("unicast_peer {peer}: `{option} {value}`: must be a TTL from 0 to 255"),
            );
            return None;
        };
        match option.as_str() {
            "min_ttl" => min = ttl,
            "max_ttl" => max = ttl,
            _ => {
                errors.push(
                    &p.location,
                    format!("unicast_peer {peer}: `{option}`: not an option (min_ttl, max_ttl)"),
                );
                return None;
            }
        }
        ranged = true;
    }
    if min > max {
        errors.push(
            &p.location,
            format!(
                "unicast_peer {peer}: min_ttl {min} > max_ttl {max}: every advert would be refused"
            ),
        );
        return None;
    }
    Some((peer, ranged.then_some((min, max))))
}

/// What the instance tracks: scripts and interfaces. False when `n` is none of them.
fn tracking(n: &Node, i: &mut VrrpInstance, errors: &mut Found) -> bool {
    match n.keyword.as_str() {
        "track_script" => {
            for t in block(n, errors) {
                i.track_scripts.push(TrackedScript {
                    name: t.keyword.clone(),
                    weight: weight(t, &t.args, -253..=253, errors),
                });
            }
        }
        "track_interface" => {
            for t in block(n, errors) {
                i.track_interfaces.push(TrackedInterface {
                    name: t.keyword.clone(),
                    weight: weight(t, &t.args, -253..=253, errors).unwrap_or(0),
                });
            }
        }
        "track_file" => {
            for t in block(n, errors) {
                i.track_files.push(TrackedFile {
                    name: t.keyword.clone(),
                    weight: weight(t, &t.args, -254..=254, errors),
                });
            }
        }
        "track_process" => {
            for t in block(n, errors) {
                i.track_processes.push(TrackedProcess {
                    name: t.keyword.clone(),
                    weight: weight(t, &t.args, -253..=253, errors),
                });
            }
        }
        "dont_track_primary" => i.dont_track_primary = no_args(n, errors),
        _ => return false,
    }
    true
}

/// RFC 3768 5.3.7: v2 carries whole seconds (1-255); RFC 5798 5.2.7: v3 carries 12 bits of
/// centiseconds (0.01-40.95 s).
fn advert_int(
    i: &VrrpInstance,
    global: &GlobalDefs,
    text: &str,
    location: &Location,
    errors: &mut Found,
) -> Option<u16> {
    let version = i.effective_version(global);
    let cs = centiseconds(text);
    let ok = match (version, cs) {
        (Version::V2, Some(cs)) => cs % 100 == 0 && (100..=25_500).contains(&cs),
        (_, Some(cs)) => (1..=4095).contains(&cs),
        (_, None) => false,
    };
    if ok {
        return cs.and_then(|cs| u16::try_from(cs).ok());
    }
    let rule = match version {
        Version::V2 => "VRRPv2 carries whole seconds from 1 to 255",
        _ => "VRRPv3 carries 0.01 to 40.95 seconds",
    };
    errors.push(location, format!("`advert_int {text}`: {rule}"));
    None
}

fn authentication(node: &Node, errors: &mut Found) -> Option<Secret> {
    let (mut kind, mut pass) = (None, None);
    for n in block(node, errors) {
        match n.keyword.as_str() {
            "auth_type" => kind = one(n, errors).map(|k| (k.to_string(), n.location.clone())),
            "auth_pass" => pass = one(n, errors).map(Secret::from),
            _ => unknown(n, "authentication", errors),
        }
    }
    match (kind, pass) {
        (Some((k, _)), Some(pass)) if k == "PASS" => Some(pass),
        // `auth_type PASS;`, seen in real files: keepalived reads `PASS;` as a type it does
        // not know and runs the instance without authentication. vrrpd does the same, so
        // that the two agree on the wire, and says so loudly.
        (Some((k, location)), _) if matches!(k.as_str(), "PASS;" | "AH;") => {
            errors.warn(
                &location,
                format!(
                    "`auth_type {k}`: keepalived reads the type as `{k}`, which it does not \
                     know, and runs this instance WITHOUT authentication; vrrpd does the \
                     same so that both agree on the wire (remove the `;` to authenticate)"
                ),
            );
            None
        }
        (Some((k, location)), _) if k == "AH" => {
            errors.push(
                &location,
                "`auth_type AH` is not supported by vrrpd (RFC 3768 removed it): use PASS or none",
            );
            None
        }
        (Some((k, location)), _) if k != "PASS" => {
            errors.push(&location, format!("`auth_type {k}`: must be PASS"));
            None
        }
        _ => {
            errors.push(
                &node.location,
                "authentication needs both `auth_type PASS` and `auth_pass`",
            );
            None
        }
    }
}

fn virtual_address(node: &Node, errors: &mut Found) -> Option<VirtualAddress> {
    let (addr_text, len_text) = match node.keyword.split_once('/') {
        Some((a, l)) => (a, Some(l)),
        None => (node.keyword.as_str(), None),
    };
    let address: IpAddr = match addr_text.parse() {
        Ok(a) => a,
        Err(_) => {
            errors.push(
                &node.location,
                format!("virtual_ipaddress: `{}` is not an IP address", node.keyword),
            );
            return None;
        }
    };
    let max = if address.is_ipv4() { 32 } else { 128 };
    let prefix_len = match len_text.map(str::parse::<u8>) {
        None => max,
        Some(Ok(l)) if l <= max => l,
        Some(_) => {
            errors.push(
                &node.location,
                format!(
                    "virtual_ipaddress: `{}`: the prefix length must be 0 to {max}",
                    node.keyword
                ),
            );
            return None;
        }
    };
    let mut v = VirtualAddress {
        address,
        prefix_len,
        dev: None,
        ..VirtualAddress::host(address)
    };
    let mut args = node.args.iter();
    while let Some(opt) = args.next() {
        let value = args.next().cloned();
        match (opt.as_str(), value) {
            ("dev", Some(d)) => v.dev = Some(d),
            ("label", Some(l)) => v.label = Some(l),
            ("preferred_lft", Some(t)) if t == "forever" => v.preferred_lft = None,
            ("preferred_lft", Some(t)) if t.parse::<u32>().is_ok() => {
                v.preferred_lft = t.parse().ok();
            }
            (other, _) => {
                errors.push(
                    &node.location,
                    format!(
                        "virtual_ipaddress {}: `{other}` is not supported (only `dev IF`, \
                         `label LABEL` and `preferred_lft SECONDS|forever`)",
                        node.keyword
                    ),
                );
                return None;
            }
        }
    }
    Some(v)
}

fn sync_group(node: &Node, errors: &mut Found) -> Option<SyncGroup> {
    let name = name(node, errors)?;
    let mut g = SyncGroup {
        name,
        members: Vec::new(),
        notify: Notify::default(),
        location: node.location.clone(),
    };
    for n in block(node, errors) {
        match n.keyword.as_str() {
            "group" => g
                .members
                .extend(block(n, errors).iter().map(|m| m.keyword.clone())),
            _ if notify(n, &mut g.notify, errors) => {}
            _ => unknown(n, &format!("vrrp_sync_group {}", g.name), errors),
        }
    }
    Some(g)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_to_centiseconds() {
        assert_eq!(centiseconds("1"), Some(100));
        assert_eq!(centiseconds("0.1"), Some(10));
        assert_eq!(centiseconds(".5"), Some(50));
        assert_eq!(centiseconds("2.50"), Some(250));
        assert_eq!(centiseconds("0.100"), Some(10));
        assert_eq!(centiseconds("0.001"), None);
        assert_eq!(centiseconds("x"), None);
        assert_eq!(centiseconds(""), None);
        assert_eq!(centiseconds("-1"), None);
    }

    #[test]
    fn commands_split_like_keepalived() {
        assert_eq!(
            command_words("/usr/bin/timeout 1.9 /etc/keepalived/chk.sh").unwrap(),
            ["/usr/bin/timeout", "1.9", "/etc/keepalived/chk.sh"]
        );
        assert_eq!(
            command_words(r#"/bin/echo 'a b' "c d" e\ f"#).unwrap(),
            ["/bin/echo", "a b", "c d", "e f"]
        );
        assert!(command_words("'open").is_err());
        assert!(command_words("   ").is_err());
    }
}
