//! The model back to keepalived.conf: canonical (keepalived's defaults left out, one keyword a
//! line, four-space indents), so that reading what was written gives the same model, and
//! keepalived itself reads it too.

use std::fmt::Write as _;

use ipi_core::vrrp::Version;

use super::model::{
    Command, Config, Notify, ParamMatch, RouteType, TrackFile, TrackProcess, User, VirtualAddress,
    VirtualRoute, VirtualRule, VrrpInstance, VrrpScript,
};
use crate::fsm::{GarpParams, InitialState};

/// keepalived.conf text for `c`.
pub fn write(c: &Config) -> String {
    let mut out = String::new();
    global(&mut out, c);
    for s in &c.scripts {
        script(&mut out, s);
    }
    for p in &c.processes {
        process(&mut out, p);
    }
    for f in &c.files {
        file(&mut out, f);
    }
    for i in &c.instances {
        instance(&mut out, c, i);
    }
    for g in &c.sync_groups {
        let _ = writeln!(out, "\nvrrp_sync_group {} {{\n    group {{", g.name);
        for m in &g.members {
            let _ = writeln!(out, "        {m}");
        }
        out.push_str("    }\n");
        notify(&mut out, &g.notify);
        out.push_str("}\n");
    }
    out
}

fn line(out: &mut String, indent: usize, text: &str) {
    let _ = writeln!(out, "{:indent$}{text}", "");
}

fn user(u: &User) -> String {
    match &u.group {
        Some(g) => format!("{} {g}", u.user),
        None => u.user.clone(),
    }
}

/// A command as one quoted string, keepalived's way: words with spaces or quotes quoted.
fn command(c: &Command) -> String {
    let words: Vec<String> = c
        .words
        .iter()
        .map(|w| {
            if w.is_empty() || w.contains([' ', '\t', '\'', '"', '\\']) {
                format!("'{}'", w.replace('\\', "\\\\").replace('\'', "\\'"))
            } else {
                w.clone()
            }
        })
        .collect();
    format!(
        "\"{}\"",
        words.join(" ").replace('\\', "\\\\").replace('"', "\\\"")
    )
}

/// Microseconds as keepalived's decimal seconds (`0.000001`, `0.5`, `2`).
fn microseconds(us: u32) -> String {
    let text = format!("{}.{:06}", us / 1_000_000, us % 1_000_000);
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn seconds(cs: u32) -> String {
    if cs % 100 == 0 {
        (cs / 100).to_string()
    } else {
        format!("{}.{:02}", cs / 100, cs % 100)
    }
}

fn garp(out: &mut String, indent: usize, prefix: &str, g: &GarpParams, base: &GarpParams) {
    if g.master_delay_cs != base.master_delay_cs {
        line(
            out,
            indent,
            &format!("{prefix}garp_master_delay {}", seconds(g.master_delay_cs)),
        );
    }
    if g.master_repeat != base.master_repeat {
        line(
            out,
            indent,
            &format!("{prefix}garp_master_repeat {}", g.master_repeat),
        );
    }
    if g.master_refresh_cs != base.master_refresh_cs {
        line(
            out,
            indent,
            &format!(
                "{prefix}garp_master_refresh {}",
                seconds(g.master_refresh_cs)
            ),
        );
    }
    if g.master_refresh_repeat != base.master_refresh_repeat {
        line(
            out,
            indent,
            &format!(
                "{prefix}garp_master_refresh_repeat {}",
                g.master_refresh_repeat
            ),
        );
    }
    if g.lower_prio_delay_cs != base.lower_prio_delay_cs {
        line(
            out,
            indent,
            &format!(
                "{prefix}garp_lower_prio_delay {}",
                seconds(g.lower_prio_delay_cs)
            ),
        );
    }
    if g.lower_prio_repeat != base.lower_prio_repeat {
        line(
            out,
            indent,
            &format!("{prefix}garp_lower_prio_repeat {}", g.lower_prio_repeat),
        );
    }
}

fn global(out: &mut String, c: &Config) {
    let g = &c.global;
    if *g == super::model::GlobalDefs::default() {
        return;
    }
    out.push_str("global_defs {\n");
    if let Some(id) = &g.router_id {
        line(out, 4, &format!("router_id {id}"));
    }
    if g.enable_script_security {
        line(out, 4, "enable_script_security");
    }
    if let Some(u) = &g.script_user {
        line(out, 4, &format!("script_user {}", user(u)));
    }
    if g.fifo_states_on_reload {
        line(out, 4, "fifo_write_vrrp_states_on_reload");
    }
    for f in &g.notify_fifos {
        line(out, 4, &format!("{} {}", f.keyword, f.path.display()));
        if let Some((c, who)) = &f.script {
            let who = who
                .as_ref()
                .map(|u| format!(" {}", user(u)))
                .unwrap_or_default();
            line(out, 4, &format!("{}_script {}{who}", f.keyword, command(c)));
        }
    }
    if g.vrrp_version == Version::V3 {
        line(out, 4, "vrrp_version 3");
    }
    if g.preempt_on_lower_priority {
        line(out, 4, "vrrp_preempt_on_lower_priority");
    }
    if g.lower_prio_no_advert {
        line(out, 4, "vrrp_lower_prio_no_advert");
    }
    if g.startup_delay_cs != 0 {
        line(
            out,
            4,
            &format!("vrrp_startup_delay {}", seconds(g.startup_delay_cs)),
        );
    }
    for (kw, us) in [
        ("vrrp_garp_interval", g.garp_interval_us),
        ("vrrp_gna_interval", g.gna_interval_us),
    ] {
        if us != 0 {
            line(out, 4, &format!("{kw} {}", microseconds(us)));
        }
    }
    // keepalived: unset, the lower-priority burst is the global master burst.
    let base = GarpParams {
        lower_prio_repeat: g.garp.master_repeat,
        lower_prio_delay_cs: g.garp.master_delay_cs,
        ..GarpParams::default()
    };
    garp(out, 4, "vrrp_", &g.garp, &base);
    out.push_str("}\n");
}

fn script(out: &mut String, s: &VrrpScript) {
    let _ = writeln!(out, "\nvrrp_script {} {{", s.name);
    line(out, 4, &format!("script {}", command(&s.command)));
    let cs = |d: std::time::Duration| u32::try_from(d.as_millis() / 10).unwrap_or(u32::MAX);
    line(out, 4, &format!("interval {}", seconds(cs(s.interval))));
    if s.timeout != s.interval {
        line(out, 4, &format!("timeout {}", seconds(cs(s.timeout))));
    }
    if s.weight != 0 {
        line(out, 4, &format!("weight {}", s.weight));
    }
    if s.rise != 1 {
        line(out, 4, &format!("rise {}", s.rise));
    }
    if s.fall != 1 {
        line(out, 4, &format!("fall {}", s.fall));
    }
    if let Some(u) = &s.user {
        line(out, 4, &format!("user {}", user(u)));
    }
    if s.init_fail {
        line(out, 4, "init_fail");
    }
    out.push_str("}\n");
}

fn notify(out: &mut String, n: &Notify) {
    for (keyword, c) in n.commands() {
        line(out, 4, &format!("{keyword} {}", command(c)));
    }
}

fn instance(out: &mut String, c: &Config, i: &VrrpInstance) {
    let _ = writeln!(out, "\nvrrp_instance {} {{", i.name);
    election(out, i);
    addresses(out, i);
    tracking(out, i);
    if i.lower_prio_no_advert != c.global.lower_prio_no_advert {
        let on = if i.lower_prio_no_advert { "on" } else { "off" };
        line(out, 4, &format!("lower_prio_no_advert {on}"));
    }
    if i.preempt_on_lower_priority != c.global.preempt_on_lower_priority {
        let on = if i.preempt_on_lower_priority {
            "on"
        } else {
            "off"
        };
        line(out, 4, &format!("preempt_on_lower_priority {on}"));
    }
    notify(out, &i.notify);
    garp(out, 4, "", &i.garp, &c.global.garp);
    out.push_str("}\n");
}

/// What the election runs on: state, interface, VRID, priority, timers, version, password.
fn election(out: &mut String, i: &VrrpInstance) {
    match i.state {
        Some(InitialState::Master) => line(out, 4, "state MASTER"),
        Some(InitialState::Backup) => line(out, 4, "state BACKUP"),
        None => {}
    }
    line(out, 4, &format!("interface {}", i.interface));
    line(out, 4, &format!("virtual_router_id {}", i.vrid));
    line(out, 4, &format!("priority {}", i.priority));
    line(
        out,
        4,
        &format!("advert_int {}", seconds(u32::from(i.advert_int_cs))),
    );
    match i.version {
        Some(Version::V2) => line(out, 4, "version 2"),
        Some(Version::V3) => line(out, 4, "version 3"),
        _ => {}
    }
    if i.native_ipv6 {
        line(out, 4, "native_ipv6");
    }
    // The name always, the default one too: it depends on the other instances.
    if let Some(m) = &i.vmac {
        line(out, 4, &format!("use_vmac {}", m.name));
        if m.xmit_base {
            line(out, 4, "vmac_xmit_base");
        }
    }
    if !i.preempt {
        line(out, 4, "nopreempt");
    }
    if i.preempt_delay_cs != 0 {
        line(
            out,
            4,
            &format!("preempt_delay {}", seconds(i.preempt_delay_cs)),
        );
    }
    if let Some(pass) = &i.auth_pass {
        let _ = write!(
            out,
            "    authentication {{\n        auth_type {}\n        auth_pass {}\n    }}\n",
            if i.auth_ah { "AH" } else { "PASS" },
            pass.expose()
        );
    }
}

/// Where adverts come from and go to, and the addresses they carry.
fn addresses(out: &mut String, i: &VrrpInstance) {
    for (kw, a) in [
        ("mcast_src_ip", i.mcast_src_ip),
        ("unicast_src_ip", i.unicast_src_ip),
    ] {
        if let Some(a) = a {
            line(out, 4, &format!("{kw} {a}"));
        }
    }
    if !i.unicast_peers.is_empty() {
        out.push_str("    unicast_peer {\n");
        for p in &i.unicast_peers {
            match i.peer_ttl.get(p) {
                Some((min, max)) => line(out, 8, &format!("{p} min_ttl {min} max_ttl {max}")),
                None => line(out, 8, &p.to_string()),
            }
        }
        out.push_str("    }\n");
    }
    vips(out, "virtual_ipaddress", &i.vips);
    if !i.vips_excluded.is_empty() {
        vips(out, "virtual_ipaddress_excluded", &i.vips_excluded);
    }
    if !i.virtual_routes.is_empty() {
        out.push_str("    virtual_routes {\n");
        for r in &i.virtual_routes {
            line(out, 8, &route(r));
        }
        out.push_str("    }\n");
    }
    if !i.virtual_rules.is_empty() {
        out.push_str("    virtual_rules {\n");
        for r in &i.virtual_rules {
            line(out, 8, &rule(r));
        }
        out.push_str("    }\n");
    }
}

fn rule(r: &VirtualRule) -> String {
    let mut words = Vec::new();
    if r.ipv6 {
        words.push("inet6".to_string());
    }
    for (kw, p) in [("from", r.from), ("to", r.to)] {
        if let Some((a, len)) = p {
            words.push(format!("{kw} {a}/{len}"));
        }
    }
    for (kw, v) in [("iif", &r.iif), ("oif", &r.oif)] {
        if let Some(v) = v {
            words.push(format!("{kw} {v}"));
        }
    }
    if let Some(m) = r.fwmark {
        words.push(format!("fwmark {m}"));
    }
    if let Some(p) = r.priority {
        words.push(format!("priority {p}"));
    }
    words.push(format!("table {}", r.table));
    words.join(" ")
}

fn route(r: &VirtualRoute) -> String {
    let mut text = String::new();
    if let Some(s) = r.src {
        let _ = write!(text, "src {s} ");
    }
    match r.kind {
        RouteType::Unicast => {}
        RouteType::Blackhole => text.push_str("blackhole "),
        RouteType::Unreachable => text.push_str("unreachable "),
        RouteType::Prohibit => text.push_str("prohibit "),
    }
    let _ = write!(text, "{}/{}", r.destination, r.prefix_len);
    if let Some(v) = r.via {
        let _ = write!(text, " via {v}");
    }
    if let Some(d) = &r.dev {
        let _ = write!(text, " dev {d}");
    }
    if let Some(m) = r.metric {
        let _ = write!(text, " metric {m}");
    }
    if let Some(t) = r.table {
        let _ = write!(text, " table {t}");
    }
    if let Some(s) = r.scope {
        let _ = write!(text, " scope {}", super::route::scope_name(s));
    }
    text
}

fn vips(out: &mut String, keyword: &str, vips: &[VirtualAddress]) {
    let _ = writeln!(out, "    {keyword} {{");
    for v in vips {
        let mut text = format!("{}/{}", v.address, v.prefix_len);
        if let Some(d) = &v.dev {
            let _ = write!(text, " dev {d}");
        }
        if let Some(l) = &v.label {
            let _ = write!(text, " label {l}");
        }
        if v.preferred_lft != VirtualAddress::default_preferred_lft(v.address) {
            match v.preferred_lft {
                Some(t) => {
                    let _ = write!(text, " preferred_lft {t}");
                }
                None => text.push_str(" preferred_lft forever"),
            }
        }
        line(out, 8, &text);
    }
    out.push_str("    }\n");
}

/// A `track_script` or `track_process` block: names, each with its own weight if it has one.
fn weighted<'a>(
    out: &mut String,
    keyword: &str,
    entries: impl ExactSizeIterator<Item = (&'a String, Option<i32>)>,
) {
    if entries.len() == 0 {
        return;
    }
    let _ = writeln!(out, "    {keyword} {{");
    for (name, weight) in entries {
        match weight {
            Some(w) => line(out, 8, &format!("{name} weight {w}")),
            None => line(out, 8, name),
        }
    }
    out.push_str("    }\n");
}

fn tracking(out: &mut String, i: &VrrpInstance) {
    let scripts = i.track_scripts.iter().map(|t| (&t.name, t.weight));
    weighted(out, "track_script", scripts);
    if !i.track_interfaces.is_empty() {
        out.push_str("    track_interface {\n");
        for t in &i.track_interfaces {
            line(out, 8, &format!("{} weight {}", t.name, t.weight));
        }
        out.push_str("    }\n");
    }
    let processes = i.track_processes.iter().map(|t| (&t.name, t.weight));
    weighted(out, "track_process", processes);
    let files = i.track_files.iter().map(|t| (&t.name, t.weight));
    weighted(out, "track_file", files);
    if i.dont_track_primary {
        line(out, 4, "dont_track_primary");
    }
}

fn process(out: &mut String, p: &TrackProcess) {
    let _ = writeln!(out, "\nvrrp_track_process {} {{", p.name);
    let words: Vec<String> = p.process.iter().map(|w| quoted(w)).collect();
    line(out, 4, &format!("process {}", words.join(" ")));
    match p.param_match {
        ParamMatch::Exact if p.process.len() == 1 => line(out, 4, "param_match"),
        ParamMatch::Any | ParamMatch::Exact => {}
        ParamMatch::Partial => line(out, 4, "param_match partial"),
        ParamMatch::Initial => line(out, 4, "param_match initial"),
    }
    if p.full_command && p.process.len() == 1 {
        line(out, 4, "full_command");
    }
    line(out, 4, &format!("weight {}", p.weight));
    line(out, 4, &format!("quorum {}", p.quorum));
    if p.quorum_max != u32::MAX {
        line(out, 4, &format!("quorum_max {}", p.quorum_max));
    }
    for (kw, cs) in [
        ("fork_delay", p.fork_delay_cs),
        ("terminate_delay", p.terminate_delay_cs),
    ] {
        if cs != 0 {
            line(out, 4, &format!("{kw} {}", seconds(cs)));
        }
    }
    out.push_str("}\n");
}

fn file(out: &mut String, f: &TrackFile) {
    let _ = writeln!(out, "\ntrack_file {} {{", f.name);
    line(out, 4, &format!("file {}", quoted(&f.path)));
    line(out, 4, &format!("weight {}", f.weight));
    if let Some(init) = f.init {
        let overwrite = if init.overwrite { " overwrite" } else { "" };
        line(out, 4, &format!("init_file {}{overwrite}", init.value));
    }
    out.push_str("}\n");
}

/// A word as one keepalived word: quoted when it holds blanks, quotes or braces.
fn quoted(w: &str) -> String {
    if w.is_empty() || w.contains([' ', '\t', '"', '\\', '{', '}', '#', '!']) {
        format!("\"{}\"", w.replace('\\', "\\\\").replace('"', "\\\""))
    } else {
        w.to_string()
    }
}
