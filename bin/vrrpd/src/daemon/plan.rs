//! What a reload (SIGHUP) does, decided without IO: from the running configuration and the new
//! one, which units, instances and scripts are kept, changed, started or stopped. The daemon
//! carries the plan out ([`super::setup::build`] with the kept units); this module only decides,
//! so every decision is unit-tested.
//!
//! A reload moves no VIP unless the new configuration requires it. A changed instance is
//! reconfigured in place ([`Step::Reconfigure`]: its running state machine takes the new
//! parameters, with no state change) unless something that makes it another virtual router
//! changed ([`restarts`]: its interface, VRID, version or address family, or its sync group);
//! only then does its unit resign with the old configuration (RFC 5798 6.4.3: priority 0 when
//! it was master) and start again with the new one ([`Step::Change`]).

use std::collections::BTreeMap;
use std::fmt;

use crate::config::{Config, VrrpInstance, VrrpScript};

/// What runs one state machine: a sync group (its members move together, keepalived's
/// vrrp_sync_group) or an instance in none. A unit is carried over a reload by its key.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum UnitKey {
    /// A `vrrp_sync_group`, by name.
    Group(String),
    /// A `vrrp_instance` in no sync group, by name.
    Instance(String),
}

impl UnitKey {
    /// The unit that runs `instance` in `c`: its sync group, or itself.
    pub fn of(c: &Config, instance: &str) -> UnitKey {
        c.sync_groups
            .iter()
            .find(|g| g.members.iter().any(|m| m == instance))
            .map_or_else(
                || UnitKey::Instance(instance.to_string()),
                |g| UnitKey::Group(g.name.clone()),
            )
    }
}

impl fmt::Display for UnitKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UnitKey::Group(name) => write!(f, "group {name}"),
            UnitKey::Instance(name) => write!(f, "instance {name}"),
        }
    }
}

/// Every unit of `c` with its members, in running order: each sync group (members in its
/// order), then each instance in no group (in file order).
pub fn units(c: &Config) -> Vec<(UnitKey, Vec<String>)> {
    let mut out: Vec<(UnitKey, Vec<String>)> = c
        .sync_groups
        .iter()
        .map(|g| (UnitKey::Group(g.name.clone()), g.members.clone()))
        .collect();
    for i in &c.instances {
        if !c.sync_groups.iter().any(|g| g.members.contains(&i.name)) {
            out.push((UnitKey::Instance(i.name.clone()), vec![i.name.clone()]));
        }
    }
    out
}

/// One thing that differs between the running configuration and the new one.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Difference {
    /// A keyword of the `vrrp_instance` or `vrrp_script` block, as keepalived.conf names it.
    Keyword(&'static str),
    /// A `vrrp_script` the instance tracks.
    Script(String),
    /// `global_defs`, which every instance and script takes defaults from.
    Global,
    /// The instance's unit: it joined, left or changed sync group, or its group did (members
    /// added, removed, reordered or changed).
    Group,
    /// A member of the group: new, gone or changed.
    Member(String),
    /// Where a script is written: compared, as for notify commands, although it is not
    /// configuration.
    Place,
    /// The address family: the first VIP's, or `native_ipv6`.
    Family,
}

/// Whether `d` makes the instance another virtual router, which only a restart gives: another
/// interface, VRID, version or address family (another socket and group, RFC 5798 5.1), or
/// another sync group (the group's state machine is built for its members). Everything else
/// (peers, priority, interval, tracking, VIPs, notify, garp, authentication, sources, global
/// defaults) is applied in place.
pub fn restarts(d: &Difference) -> bool {
    match d {
        // virtual_routes / virtual_rules: those of the running instance are removed with its
        // VIPs and the new ones added when it holds them again (no diff in place yet).
        Difference::Keyword(k) => [
            "interface",
            "virtual_router_id",
            "version",
            "vrrp_version",
            "native_ipv6",
            "use_vmac",
            "virtual_routes",
            "virtual_rules",
        ]
        .contains(k),
        Difference::Family | Difference::Group | Difference::Member(_) => true,
        Difference::Script(_) | Difference::Global | Difference::Place => false,
    }
}

/// What a reload does to one instance, unit or script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Unchanged: runs on, state and timers as they are (no VIP moves).
    Keep,
    /// Changed as listed, in place: the running state machine takes the new parameters
    /// without a state change (a VIP moves only when the protocol then says so).
    Reconfigure(Vec<Difference>),
    /// Changed as listed, one of them needing a restart ([`restarts`]): stopped with the old
    /// configuration (a master resigns) and started with the new.
    Change(Vec<Difference>),
    /// New: started.
    Start,
    /// Gone: stopped (a master resigns).
    Stop,
}

/// What a reload does, by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// Every unit of either configuration.
    pub units: BTreeMap<UnitKey, Step>,
    /// Every instance of either configuration.
    pub instances: BTreeMap<String, Step>,
    /// Every `vrrp_script` of either configuration. A script's runner goes on unless how it
    /// runs changed ([`same_run`]).
    pub scripts: BTreeMap<String, Step>,
}

impl Plan {
    /// Whether the running unit `key` goes on, as it is or reconfigured in place.
    pub fn keeps(&self, key: &UnitKey) -> bool {
        matches!(self.units.get(key), Some(Step::Keep | Step::Reconfigure(_)))
    }

    /// Whether the running instance `name` takes new parameters in place.
    pub fn reconfigures(&self, name: &str) -> bool {
        matches!(self.instances.get(name), Some(Step::Reconfigure(_)))
    }
}

/// The plan for replacing `old` by `new`.
pub fn plan(old: &Config, new: &Config) -> Plan {
    let mut instances = BTreeMap::new();
    for i in &old.instances {
        let step = match new.instance(&i.name) {
            Some(n) => changes(instance_differences(old, new, i, n)),
            None => Step::Stop,
        };
        instances.insert(i.name.clone(), step);
    }
    for i in &new.instances {
        instances.entry(i.name.clone()).or_insert(Step::Start);
    }
    let units = unit_steps(old, new, &instances);
    // A member of a unit that restarts restarts with it, changed or not.
    for (name, step) in &mut instances {
        let carried = matches!(
            units.get(&UnitKey::of(old, name)),
            Some(Step::Keep | Step::Reconfigure(_))
        );
        if matches!(step, Step::Keep | Step::Reconfigure(_)) && !carried {
            *step = Step::Change(vec![Difference::Group]);
        }
    }
    Plan {
        units,
        instances,
        scripts: script_steps(old, new),
    }
}

fn changes(differences: Vec<Difference>) -> Step {
    if differences.is_empty() {
        Step::Keep
    } else if differences.iter().any(restarts) {
        Step::Change(differences)
    } else {
        Step::Reconfigure(differences)
    }
}

/// A unit is kept when it has the same members in the same order (a group's state machine is
/// built for its members) and each is kept; reconfigured when, besides, some are
/// reconfigured in place; otherwise changed (restarted).
fn unit_steps(
    old: &Config,
    new: &Config,
    instances: &BTreeMap<String, Step>,
) -> BTreeMap<UnitKey, Step> {
    let new_units: BTreeMap<UnitKey, Vec<String>> = units(new).into_iter().collect();
    let mut steps = BTreeMap::new();
    for (key, members) in units(old) {
        let step = match new_units.get(&key) {
            None => Step::Stop,
            Some(now) => {
                let differences: Vec<Difference> = members
                    .iter()
                    .chain(now.iter().filter(|m| !members.contains(m)))
                    .filter(|m| instances.get(*m) != Some(&Step::Keep))
                    .map(|m| Difference::Member(m.clone()))
                    .collect();
                let in_place = differences.iter().all(|d| match d {
                    Difference::Member(m) => matches!(instances.get(m), Some(Step::Reconfigure(_))),
                    _ => false,
                });
                if members != *now {
                    let mut differences = differences;
                    if differences.is_empty() {
                        differences.push(Difference::Group);
                    }
                    Step::Change(differences)
                } else if differences.is_empty() {
                    Step::Keep
                } else if in_place {
                    Step::Reconfigure(differences)
                } else {
                    Step::Change(differences)
                }
            }
        };
        steps.insert(key, step);
    }
    for key in new_units.into_keys() {
        steps.entry(key).or_insert(Step::Start);
    }
    steps
}

/// What differs for an instance in both configurations: its own keywords (not where it is
/// written: lines move when others are added above), the scripts it tracks, global_defs, and
/// which unit runs it.
fn instance_differences(
    old: &Config,
    new: &Config,
    a: &VrrpInstance,
    b: &VrrpInstance,
) -> Vec<Difference> {
    let mut out: Vec<Difference> = keywords(a, b).map(Difference::Keyword).collect();
    for t in &a.track_scripts {
        if old.script(&t.name) != new.script(&t.name) {
            out.push(Difference::Script(t.name.clone()));
        }
    }
    if a.track_processes
        .iter()
        .any(|t| old.process(&t.name) != new.process(&t.name))
    {
        out.push(Difference::Keyword("vrrp_track_process"));
    }
    if a.track_files
        .iter()
        .any(|t| old.file(&t.name) != new.file(&t.name))
    {
        out.push(Difference::Keyword("track_file block"));
    }
    if old.global != new.global {
        out.push(Difference::Global);
    }
    // What the keywords leave implicit: the family of the first VIP, and the version that
    // global_defs' vrrp_version gives an instance without its own.
    if a.is_ipv6() != b.is_ipv6() {
        out.push(Difference::Family);
    }
    let same_family = a.is_ipv6() == b.is_ipv6();
    if same_family
        && a.version == b.version
        && a.effective_version(&old.global) != b.effective_version(&new.global)
    {
        out.push(Difference::Keyword("vrrp_version"));
    }
    if UnitKey::of(old, &a.name) != UnitKey::of(new, &b.name) {
        out.push(Difference::Group);
    }
    out
}

/// Where use_vmac is written does not count, the macvlan and where adverts go do.
fn vmac_of(m: &Option<crate::config::Vmac>) -> Option<(String, bool)> {
    m.as_ref().map(|m| (m.name.clone(), m.xmit_base))
}

/// The keywords whose values differ between `a` and `b`. Every field is named (no `..`), so a
/// new one cannot be forgotten here.
fn keywords<'a>(a: &'a VrrpInstance, b: &'a VrrpInstance) -> impl Iterator<Item = &'static str> {
    let VrrpInstance {
        name: _,
        interface,
        state,
        vrid,
        priority,
        advert_int_cs,
        version,
        native_ipv6,
        preempt,
        preempt_delay_cs,
        auth_pass,
        auth_ah,
        vips,
        vips_excluded,
        virtual_routes,
        virtual_rules,
        mcast_src_ip,
        unicast_src_ip,
        unicast_peers,
        peer_ttl,
        track_scripts,
        track_interfaces,
        track_processes,
        track_files,
        dont_track_primary: dtp,
        notify,
        garp,
        lower_prio_no_advert: lpna,
        preempt_on_lower_priority,
        vmac,
        location: _,
    } = a;
    [
        ("interface", *interface != b.interface),
        ("state", *state != b.state),
        ("virtual_router_id", *vrid != b.vrid),
        ("priority", *priority != b.priority),
        ("advert_int", *advert_int_cs != b.advert_int_cs),
        ("version", *version != b.version),
        ("native_ipv6", *native_ipv6 != b.native_ipv6),
        ("nopreempt", *preempt != b.preempt),
        ("preempt_delay", *preempt_delay_cs != b.preempt_delay_cs),
        (
            "authentication",
            (auth_pass, auth_ah) != (&b.auth_pass, &b.auth_ah),
        ),
        ("virtual_ipaddress", *vips != b.vips),
        (
            "virtual_ipaddress_excluded",
            *vips_excluded != b.vips_excluded,
        ),
        ("virtual_routes", *virtual_routes != b.virtual_routes),
        ("virtual_rules", *virtual_rules != b.virtual_rules),
        ("mcast_src_ip", *mcast_src_ip != b.mcast_src_ip),
        ("unicast_src_ip", *unicast_src_ip != b.unicast_src_ip),
        (
            "unicast_peer",
            *unicast_peers != b.unicast_peers || *peer_ttl != b.peer_ttl,
        ),
        ("track_script", *track_scripts != b.track_scripts),
        ("track_interface", *track_interfaces != b.track_interfaces),
        ("track_process", *track_processes != b.track_processes),
        ("track_file", *track_files != b.track_files),
        ("dont_track_primary", *dtp != b.dont_track_primary),
        // Notify commands keep where they are written: a moved notify line counts as changed.
        ("notify", *notify != b.notify),
        ("garp", *garp != b.garp),
        ("lower_prio_no_advert", *lpna != b.lower_prio_no_advert),
        (
            "preempt_on_lower_priority",
            *preempt_on_lower_priority != b.preempt_on_lower_priority,
        ),
        ("use_vmac", vmac_of(vmac) != vmac_of(&b.vmac)),
    ]
    .into_iter()
    .filter_map(|(keyword, differs)| differs.then_some(keyword))
}

fn script_steps(old: &Config, new: &Config) -> BTreeMap<String, Step> {
    let mut steps = BTreeMap::new();
    for s in &old.scripts {
        let step = match new.script(&s.name) {
            Some(n) => {
                let differences: Vec<Difference> = script_differences(s, n).collect();
                if differences.is_empty() {
                    Step::Keep
                } else if same_run(s, n) {
                    Step::Reconfigure(differences)
                } else {
                    Step::Change(differences)
                }
            }
            None => Step::Stop,
        };
        steps.insert(s.name.clone(), step);
    }
    for s in &new.scripts {
        steps.entry(s.name.clone()).or_insert(Step::Start);
    }
    steps
}

/// Whether a script's runner can go on for the new definition `b` (its last result kept): the
/// same program and arguments, interval, timeout and user. Weight, rise, fall and init_fail
/// are the instances' business, applied in place.
pub fn same_run(a: &VrrpScript, b: &VrrpScript) -> bool {
    a.command.words == b.command.words
        && a.interval == b.interval
        && a.timeout == b.timeout
        && a.user == b.user
}

/// What differs between two definitions of a script. Its place counts, as for the instances
/// that track it (the command's own place is part of its place, not of the command).
fn script_differences<'a>(
    a: &'a VrrpScript,
    b: &'a VrrpScript,
) -> impl Iterator<Item = Difference> + 'a {
    let VrrpScript {
        name: _,
        command,
        interval,
        timeout,
        weight,
        rise,
        fall,
        user,
        init_fail,
        location,
    } = a;
    [
        ("script", command.words != b.command.words),
        ("interval", *interval != b.interval),
        ("timeout", *timeout != b.timeout),
        ("weight", *weight != b.weight),
        ("rise", *rise != b.rise),
        ("fall", *fall != b.fall),
        ("user", *user != b.user),
        ("init_fail", *init_fail != b.init_fail),
    ]
    .into_iter()
    .filter_map(|(keyword, differs)| differs.then_some(Difference::Keyword(keyword)))
    .chain((*location != b.location).then_some(Difference::Place))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::parse_str;

    const SCRIPT: &str = "vrrp_script chk {\n script \"/bin/true\"\n interval 1\n}\n";

    fn instance(name: &str, vrid: u8, priority: u8, extra: &str) -> String {
        format!(
            "vrrp_instance {name} {{\n interface eth0\n virtual_router_id {vrid}\n \
             priority {priority}\n{extra} virtual_ipaddress {{\n  192.0.2.{vrid}\n }}\n}}\n"
        )
    }

    fn group(name: &str, members: &[&str]) -> String {
        format!(
            "vrrp_sync_group {name} {{\n group {{\n  {}\n }}\n}}\n",
            members.join("\n  ")
        )
    }

    fn config(text: &str) -> Config {
        parse_str(text, "k.conf").unwrap_or_else(|e| panic!("{e}\n{text}"))
    }

    fn one(name: &str) -> UnitKey {
        UnitKey::Instance(name.to_string())
    }

    fn in_place(k: &'static str) -> Step {
        Step::Reconfigure(vec![Difference::Keyword(k)])
    }

    #[test]
    fn the_same_configuration_keeps_everything() {
        let c = config(&format!(
            "{SCRIPT}{}",
            instance("a", 1, 100, " track_script {\n  chk\n }\n")
        ));
        let p = plan(&c, &c);
        assert_eq!(p.units, BTreeMap::from([(one("a"), Step::Keep)]));
        assert_eq!(p.instances, BTreeMap::from([("a".to_string(), Step::Keep)]));
        assert_eq!(p.scripts, BTreeMap::from([("chk".to_string(), Step::Keep)]));
        assert!(p.keeps(&one("a")));
    }

    #[test]
    fn new_and_gone_instances_start_and_stop() {
        let old = config(&instance("a", 1, 100, ""));
        let new = config(&instance("b", 2, 100, ""));
        let p = plan(&old, &new);
        assert_eq!(
            p.units,
            BTreeMap::from([(one("a"), Step::Stop), (one("b"), Step::Start)])
        );
        assert_eq!(
            p.instances,
            BTreeMap::from([
                ("a".to_string(), Step::Stop),
                ("b".to_string(), Step::Start)
            ])
        );
        assert!(!p.keeps(&one("a")) && !p.keeps(&one("b")));
    }

    #[test]
    fn a_changed_instance_is_named_with_what_changed_and_the_others_kept() {
        let old = config(&format!(
            "{}{}",
            instance("a", 1, 100, ""),
            instance("b", 2, 100, "")
        ));
        let new = config(&format!(
            "{}{}",
            instance("a", 1, 100, ""),
            instance("b", 2, 90, " unicast_peer {\n  192.0.2.9\n }\n")
        ));
        let p = plan(&old, &new);
        let change = Step::Reconfigure(vec![
            Difference::Keyword("priority"),
            Difference::Keyword("unicast_peer"),
        ]);
        assert_eq!(p.instances["a"], Step::Keep);
        assert_eq!(p.instances["b"], change);
        assert!(p.reconfigures("b") && !p.reconfigures("a"));
        assert_eq!(p.units[&one("a")], Step::Keep);
        assert_eq!(
            p.units[&one("b")],
            Step::Reconfigure(vec![Difference::Member("b".into())])
        );
        assert!(p.keeps(&one("b")));
    }

    #[test]
    fn lines_moving_is_no_change_but_a_moved_notify_line_is() {
        let old = config(&instance("a", 1, 100, " notify_master \"/bin/true\"\n"));
        let moved = config(&format!(
            "\n\n{}",
            instance("a", 1, 100, " notify_master \"/bin/true\"\n")
        ));
        assert_eq!(plan(&old, &moved).instances["a"], in_place("notify"));
        let old = config(&instance("a", 1, 100, ""));
        let moved = config(&format!("\n\n{}", instance("a", 1, 100, "")));
        assert_eq!(plan(&old, &moved).instances["a"], Step::Keep);
    }

    #[test]
    fn a_changed_script_changes_the_instances_that_track_it() {
        let tracked = instance("a", 1, 100, " track_script {\n  chk\n }\n");
        let old = config(&format!("{SCRIPT}{tracked}{}", instance("b", 2, 100, "")));
        let new = config(&format!(
            "{}{tracked}{}",
            SCRIPT.replace("interval 1", "interval 2"),
            instance("b", 2, 100, "")
        ));
        let p = plan(&old, &new);
        // The timeout defaults to the interval, so it changes with it; the runner restarts.
        assert_eq!(
            p.scripts["chk"],
            Step::Change(vec![
                Difference::Keyword("interval"),
                Difference::Keyword("timeout")
            ])
        );
        // The instance takes the script's new definition in place.
        assert_eq!(
            p.instances["a"],
            Step::Reconfigure(vec![Difference::Script("chk".into())])
        );
        assert_eq!(p.instances["b"], Step::Keep);
    }

    #[test]
    fn a_script_runner_goes_on_unless_how_it_runs_changed() {
        let tracked = instance("a", 1, 100, " track_script {\n  chk\n }\n");
        let old = config(&format!("{SCRIPT}{tracked}"));
        let weighted = config(&format!(
            "{}{tracked}",
            SCRIPT.replace("interval 1", "interval 1\n weight -20\n rise 3")
        ));
        let p = plan(&old, &weighted);
        assert_eq!(
            p.scripts["chk"],
            Step::Reconfigure(vec![
                Difference::Keyword("weight"),
                Difference::Keyword("rise")
            ])
        );
        assert!(same_run(&old.scripts[0], &weighted.scripts[0]));
        // Moved down the file: the same runner.
        let moved = config(&format!("\n\n{SCRIPT}{tracked}"));
        assert_eq!(
            plan(&old, &moved).scripts["chk"],
            Step::Reconfigure(vec![Difference::Place])
        );
        assert!(same_run(&old.scripts[0], &moved.scripts[0]));
        let other = config(&format!("{}{tracked}", SCRIPT.replace("true", "false")));
        assert_eq!(
            plan(&old, &other).scripts["chk"],
            Step::Change(vec![Difference::Keyword("script")])
        );
        assert!(!same_run(&old.scripts[0], &other.scripts[0]));
    }

    #[test]
    fn what_makes_another_virtual_router_restarts() {
        let old = config(&instance("a", 1, 100, ""));
        let vrid = config(&instance("a", 2, 100, ""));
        assert_eq!(
            plan(&old, &vrid).instances["a"],
            Step::Change(vec![
                Difference::Keyword("virtual_router_id"),
                Difference::Keyword("virtual_ipaddress")
            ])
        );
        assert_eq!(
            plan(&old, &vrid).units[&one("a")],
            Step::Change(vec![Difference::Member("a".into())])
        );
        let eth1 = config(&instance("a", 1, 100, "").replace("eth0", "eth1"));
        assert_eq!(
            plan(&old, &eth1).instances["a"],
            Step::Change(vec![Difference::Keyword("interface")])
        );
        let v6 = config(&instance("a", 1, 100, "").replace("192.0.2.1", "2001:db8::1"));
        assert_eq!(
            plan(&old, &v6).instances["a"],
            Step::Change(vec![
                Difference::Keyword("virtual_ipaddress"),
                Difference::Family
            ])
        );
        let v3 = config(&format!(
            "global_defs {{\n vrrp_version 3\n}}\n{}",
            instance("a", 1, 100, "")
        ));
        assert_eq!(
            plan(&old, &v3).instances["a"],
            Step::Change(vec![
                Difference::Global,
                Difference::Keyword("vrrp_version")
            ])
        );
        // Everything else is in place: VIPs added, peers, interval, notify, tracking.
        let many = config(
            &instance(
                "a",
                1,
                90,
                " advert_int 2\n nopreempt\n unicast_peer {\n  192.0.2.9\n }\n \
                 notify_master \"/bin/true\"\n",
            )
            .replace("192.0.2.1\n", "192.0.2.1\n  192.0.2.77\n"),
        );
        let Step::Reconfigure(all) = &plan(&old, &many).instances["a"] else {
            panic!("{:?}", plan(&old, &many).instances["a"]);
        };
        assert!(!all.iter().any(restarts), "{all:?}");
    }

    /// keepalived's trackers and routes: a changed tracker definition is applied in place to
    /// the instances that track it; changed routes or rules restart the instance (removed with
    /// the old VIPs, added with the new).
    #[test]
    fn trackers_change_in_place_and_routes_restart() {
        let trackers = |quorum: u32, value: i32| {
            format!(
                "vrrp_track_process p {{\n process haproxy\n quorum {quorum}\n}}\n\
                 track_file f {{\n file /run/w\n init_file {value}\n}}\n"
            )
        };
        let tracking = " track_process {\n  p\n }\n track_file {\n  f\n }\n";
        let old = config(&(trackers(1, 0) + &instance("a", 1, 100, tracking)));
        let process = config(&(trackers(2, 0) + &instance("a", 1, 100, tracking)));
        assert_eq!(
            plan(&old, &process).instances["a"],
            in_place("vrrp_track_process")
        );
        let file = config(&(trackers(1, 5) + &instance("a", 1, 100, tracking)));
        assert_eq!(
            plan(&old, &file).instances["a"],
            in_place("track_file block")
        );
        let untracked = config(&(trackers(1, 0) + &instance("a", 1, 100, "")));
        assert_eq!(
            plan(&old, &untracked).instances["a"],
            Step::Reconfigure(vec![
                Difference::Keyword("track_process"),
                Difference::Keyword("track_file")
            ])
        );
        let plain = config(&instance("a", 1, 100, ""));
        for (keyword, block) in [
            (
                "virtual_routes",
                " virtual_routes {\n  198.51.100.0/24 via 192.0.2.254\n }\n",
            ),
            (
                "virtual_rules",
                " virtual_rules {\n  from 198.51.100.0/24 table 7\n }\n",
            ),
        ] {
            let routed = config(&instance("a", 1, 100, block));
            assert_eq!(
                plan(&plain, &routed).instances["a"],
                Step::Change(vec![Difference::Keyword(keyword)])
            );
        }
    }

    #[test]
    fn global_defs_change_every_instance() {
        let old = config(&instance("a", 1, 100, ""));
        let new = config(&format!(
            "global_defs {{\n router_id r1\n}}\n{}",
            instance("a", 1, 100, "")
        ));
        assert_eq!(
            plan(&old, &new).instances["a"],
            Step::Reconfigure(vec![Difference::Global])
        );
    }

    #[test]
    fn a_group_takes_a_member_changed_in_place_and_restarts_whole_for_a_new_router() {
        let members = format!("{}{}", instance("a", 1, 100, ""), instance("b", 2, 100, ""));
        let old = config(&format!("{members}{}", group("g", &["a", "b"])));
        let changed = format!("{}{}", instance("a", 1, 100, ""), instance("b", 2, 50, ""));
        let new = config(&format!("{changed}{}", group("g", &["a", "b"])));
        let p = plan(&old, &new);
        let g = UnitKey::Group("g".into());
        assert_eq!(
            p.units[&g],
            Step::Reconfigure(vec![Difference::Member("b".into())])
        );
        assert_eq!(p.instances["a"], Step::Keep);
        assert_eq!(p.instances["b"], in_place("priority"));
        assert_eq!(plan(&old, &old).units[&g], Step::Keep);
        // Another VRID for b: the group restarts, a with it.
        let renumbered = format!(
            "{}{}",
            instance("a", 1, 100, ""),
            instance("b", 3, 100, "").replace("192.0.2.3", "192.0.2.2")
        );
        let new = config(&format!("{renumbered}{}", group("g", &["a", "b"])));
        let p = plan(&old, &new);
        assert_eq!(
            p.units[&g],
            Step::Change(vec![Difference::Member("b".into())])
        );
        assert_eq!(p.instances["a"], Step::Change(vec![Difference::Group]));
        assert_eq!(
            p.instances["b"],
            Step::Change(vec![Difference::Keyword("virtual_router_id")])
        );
    }

    #[test]
    fn joining_or_leaving_a_group_restarts() {
        let two = format!("{}{}", instance("a", 1, 100, ""), instance("b", 2, 100, ""));
        let lone = config(&two);
        let grouped = config(&format!("{two}{}", group("g", &["a", "b"])));
        let p = plan(&lone, &grouped);
        assert_eq!(p.units[&one("a")], Step::Stop);
        assert_eq!(p.units[&UnitKey::Group("g".into())], Step::Start);
        assert_eq!(p.instances["a"], Step::Change(vec![Difference::Group]));
        let p = plan(&grouped, &lone);
        assert_eq!(p.units[&UnitKey::Group("g".into())], Step::Stop);
        assert_eq!(p.units[&one("b")], Step::Start);
        assert_eq!(p.instances["b"], Step::Change(vec![Difference::Group]));
    }

    #[test]
    fn a_group_whose_members_change_is_not_kept() {
        let three = format!(
            "{}{}{}",
            instance("a", 1, 100, ""),
            instance("b", 2, 100, ""),
            instance("c", 3, 100, "")
        );
        let old = config(&format!("{three}{}", group("g", &["a", "b"])));
        let new = config(&format!("{three}{}", group("g", &["a", "b", "c"])));
        let p = plan(&old, &new);
        let g = UnitKey::Group("g".into());
        assert_eq!(
            p.units[&g],
            Step::Change(vec![Difference::Member("c".into())])
        );
        assert_eq!(p.units[&one("c")], Step::Stop);
        assert_eq!(p.instances["a"], Step::Change(vec![Difference::Group]));
        let reordered = config(&format!("{three}{}", group("g", &["b", "a"])));
        assert_eq!(
            plan(&old, &reordered).units[&g],
            Step::Change(vec![Difference::Group])
        );
    }

    #[test]
    fn units_run_groups_first_then_lone_instances_in_file_order() {
        let c = config(&format!(
            "{}{}{}{}",
            instance("z", 1, 100, ""),
            instance("a", 2, 100, ""),
            instance("m", 3, 100, ""),
            group("g", &["m"])
        ));
        assert_eq!(
            units(&c),
            vec![
                (UnitKey::Group("g".into()), vec!["m".to_string()]),
                (one("z"), vec!["z".to_string()]),
                (one("a"), vec!["a".to_string()]),
            ]
        );
        assert_eq!(UnitKey::of(&c, "m").to_string(), "group g");
        assert_eq!(UnitKey::of(&c, "z").to_string(), "instance z");
    }
}
