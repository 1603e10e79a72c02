//! What a reload (SIGHUP) does, decided without IO: from the running configuration and the new
//! one, which units, instances and scripts are kept, changed, started or stopped. The daemon
//! carries the plan out ([`super::setup::build`] with the kept units); this module only decides,
//! so every decision is unit-tested.
//!
//! Today a changed instance is restarted: its unit resigns with the old configuration (RFC 5798
//! 6.4.3: priority 0 when it was master) and starts again with the new one. What changed is
//! recorded ([`Difference`]) so that some changes (peers, priority) can later be applied in
//! place by deciding them here, without touching the shell.

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
}

/// What a reload does to one instance, unit or script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Unchanged: runs on, state and timers as they are (no VIP moves).
    Keep,
    /// Changed as listed: today stopped with the old configuration and started with the new.
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
    /// Every `vrrp_script` of either configuration. The shell restarts every script runner on
    /// a reload; a kept script's runner just reports its result again.
    pub scripts: BTreeMap<String, Step>,
}

impl Plan {
    /// Whether the running unit `key` goes on as it is.
    pub fn keeps(&self, key: &UnitKey) -> bool {
        self.units.get(key) == Some(&Step::Keep)
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
        if *step == Step::Keep && !units.get(&UnitKey::of(old, name)).is_some_and(is_keep) {
            *step = Step::Change(vec![Difference::Group]);
        }
    }
    Plan {
        units,
        instances,
        scripts: script_steps(old, new),
    }
}

fn is_keep(step: &Step) -> bool {
    *step == Step::Keep
}

fn changes(differences: Vec<Difference>) -> Step {
    if differences.is_empty() {
        Step::Keep
    } else {
        Step::Change(differences)
    }
}

/// A unit is kept when it has the same members in the same order (a group's state machine is
/// built for its members) and each is kept.
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
                let mut differences: Vec<Difference> = members
                    .iter()
                    .chain(now.iter().filter(|m| !members.contains(m)))
                    .filter(|m| instances.get(*m) != Some(&Step::Keep))
                    .map(|m| Difference::Member(m.clone()))
                    .collect();
                if differences.is_empty() && members != *now {
                    differences.push(Difference::Group);
                }
                changes(differences)
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
    if old.global != new.global {
        out.push(Difference::Global);
    }
    if UnitKey::of(old, &a.name) != UnitKey::of(new, &b.name) {
        out.push(Difference::Group);
    }
    out
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
        vips,
        mcast_src_ip,
        unicast_src_ip,
        unicast_peers,
        track_scripts,
        track_interfaces,
        dont_track_primary,
        notify,
        garp,
        lower_prio_no_advert,
        preempt_on_lower_priority,
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
        ("authentication", *auth_pass != b.auth_pass),
        ("virtual_ipaddress", *vips != b.vips),
        ("mcast_src_ip", *mcast_src_ip != b.mcast_src_ip),
        ("unicast_src_ip", *unicast_src_ip != b.unicast_src_ip),
        ("unicast_peer", *unicast_peers != b.unicast_peers),
        ("track_script", *track_scripts != b.track_scripts),
        ("track_interface", *track_interfaces != b.track_interfaces),
        (
            "dont_track_primary",
            *dont_track_primary != b.dont_track_primary,
        ),
        // Notify commands keep where they are written: a moved notify line counts as changed.
        ("notify", *notify != b.notify),
        ("garp", *garp != b.garp),
        (
            "lower_prio_no_advert",
            *lower_prio_no_advert != b.lower_prio_no_advert,
        ),
        (
            "preempt_on_lower_priority",
            *preempt_on_lower_priority != b.preempt_on_lower_priority,
        ),
    ]
    .into_iter()
    .filter_map(|(keyword, differs)| differs.then_some(keyword))
}

fn script_steps(old: &Config, new: &Config) -> BTreeMap<String, Step> {
    let mut steps = BTreeMap::new();
    for s in &old.scripts {
        let step = match new.script(&s.name) {
            Some(n) => changes(script_differences(s, n).collect()),
            None => Step::Stop,
        };
        steps.insert(s.name.clone(), step);
    }
    for s in &new.scripts {
        steps.entry(s.name.clone()).or_insert(Step::Start);
    }
    steps
}

/// What differs between two definitions of a script. Its place counts, as for the instances
/// that track it.
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
        ("script", *command != b.command),
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

    fn keyword(k: &'static str) -> Step {
        Step::Change(vec![Difference::Keyword(k)])
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
        let change = Step::Change(vec![
            Difference::Keyword("priority"),
            Difference::Keyword("unicast_peer"),
        ]);
        assert_eq!(p.instances["a"], Step::Keep);
        assert_eq!(p.instances["b"], change);
        assert_eq!(p.units[&one("a")], Step::Keep);
        assert_eq!(
            p.units[&one("b")],
            Step::Change(vec![Difference::Member("b".into())])
        );
    }

    #[test]
    fn lines_moving_is_no_change_but_a_moved_notify_line_is() {
        let old = config(&instance("a", 1, 100, " notify_master \"/bin/true\"\n"));
        let moved = config(&format!(
            "\n\n{}",
            instance("a", 1, 100, " notify_master \"/bin/true\"\n")
        ));
        assert_eq!(plan(&old, &moved).instances["a"], keyword("notify"));
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
        // The timeout defaults to the interval, so it changes with it.
        assert_eq!(
            p.scripts["chk"],
            Step::Change(vec![
                Difference::Keyword("interval"),
                Difference::Keyword("timeout")
            ])
        );
        assert_eq!(
            p.instances["a"],
            Step::Change(vec![Difference::Script("chk".into())])
        );
        assert_eq!(p.instances["b"], Step::Keep);
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
            Step::Change(vec![Difference::Global])
        );
    }

    #[test]
    fn a_group_restarts_whole_when_one_member_changes() {
        let members = format!("{}{}", instance("a", 1, 100, ""), instance("b", 2, 100, ""));
        let old = config(&format!("{members}{}", group("g", &["a", "b"])));
        let changed = format!("{}{}", instance("a", 1, 100, ""), instance("b", 2, 50, ""));
        let new = config(&format!("{changed}{}", group("g", &["a", "b"])));
        let p = plan(&old, &new);
        let g = UnitKey::Group("g".into());
        assert_eq!(
            p.units[&g],
            Step::Change(vec![Difference::Member("b".into())])
        );
        assert_eq!(p.instances["a"], Step::Change(vec![Difference::Group]));
        assert_eq!(p.instances["b"], keyword("priority"));
        assert_eq!(plan(&old, &old).units[&g], Step::Keep);
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
