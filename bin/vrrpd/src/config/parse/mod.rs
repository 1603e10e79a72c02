//! keepalived.conf's meaning: statements ([`super::tree`]) to the [`Config`] model, every
//! problem collected with its file and line. [`args`] reads the values, [`track`] the tracking
//! blocks, [`addresses`] an instance's addresses; this module the file, global_defs, instances
//! and sync groups.

mod addresses;
mod args;
mod auth;
mod fifo;
mod track;
mod vmac;

use ipi_core::vrrp::Version;

use super::error::Found;
use super::model::{
    Config, GlobalDefs, Location, Notify, SyncGroup, TrackedFile, TrackedInterface, TrackedProcess,
    TrackedScript, VrrpInstance,
};
use super::tree::Node;
use crate::fsm::InitialState;
use addresses::addresses;
use args::{
    block, centiseconds, flag, garp, microseconds, name, no_args, notify, number, one, seconds_cs,
    unknown, user, weight,
};
use track::{track_file, track_process, unknown_tracks, vrrp_script};

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
    vmac::names(&mut c, errors);
    c
}

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
            _ if fifo::fifo(n, g, errors) => {}
            _ if kw.starts_with("vrrp_garp_") && garp(n, &kw[5..], &mut g.garp, errors) => {}
            _ if IGNORED_GLOBALS.contains(&kw) => {}
            _ => unknown(n, "global_defs", errors),
        }
    }
    fifo::check(g, errors);
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
            || garp(n, &n.keyword, &mut i.garp, errors)
            || vmac::vmac(n);
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
    auth::settle(&mut i, global, errors);
    vmac::finish(node, &mut i, errors);
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
        "authentication" => auth::authentication(n, i, errors),
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

/// The entries of a tracking block `n`: each name and its `weight` (within `range`).
fn tracked(
    n: &Node,
    range: std::ops::RangeInclusive<i32>,
    errors: &mut Found,
) -> Vec<(String, Option<i32>)> {
    let entries = block(n, errors);
    entries
        .iter()
        .map(|t| (t.keyword.clone(), weight(t, &t.args, range.clone(), errors)))
        .collect()
}

/// What the instance tracks: scripts and interfaces. False when `n` is none of them.
fn tracking(n: &Node, i: &mut VrrpInstance, errors: &mut Found) -> bool {
    const WEIGHTS: std::ops::RangeInclusive<i32> = -253..=253;
    match n.keyword.as_str() {
        "track_script" => i.track_scripts.extend(
            (tracked(n, WEIGHTS, errors).into_iter())
                .map(|(name, weight)| TrackedScript { name, weight }),
        ),
        "track_interface" => {
            i.track_interfaces
                .extend(
                    (tracked(n, WEIGHTS, errors).into_iter()).map(|(name, weight)| {
                        TrackedInterface {
                            name,
                            weight: weight.unwrap_or(0),
                        }
                    }),
                )
        }
        // A file's value times its weight may reach -254 (FAULT below -253).
        "track_file" => i.track_files.extend(
            (tracked(n, -254..=254, errors).into_iter())
                .map(|(name, weight)| TrackedFile { name, weight }),
        ),
        "track_process" => i.track_processes.extend(
            (tracked(n, WEIGHTS, errors).into_iter())
                .map(|(name, weight)| TrackedProcess { name, weight }),
        ),
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
