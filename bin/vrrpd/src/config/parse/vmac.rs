//! keepalived's `use_vmac [NAME]` and `vmac_xmit_base` (keepalived 2.2.7's vrrp_parser.c
//! `vrrp_vmac_handler`, vrrp.c `create_vmac_name` and `vrrp_complete_instance`): the instance's
//! macvlan, its name and where its adverts go. keepalived reports what it finds wrong and goes
//! on with something else (another name, no name); vrrpd refuses the file instead, naming the
//! line, so that the interface is always the one written.

use super::args::no_args;
use crate::config::error::Found;
use crate::config::model::{Config, Location, Vmac, VrrpInstance};
use crate::config::tree::Node;

/// The longest interface name the kernel takes (IFNAMSIZ 16, with its NUL).
const IFNAME_MAX: usize = 15;

/// Whether `n` is `use_vmac` or `vmac_xmit_base`, read by [`finish`] at the end of the block
/// (keepalived takes them in either order).
pub(super) fn vmac(n: &Node) -> bool {
    matches!(n.keyword.as_str(), "use_vmac" | "vmac_xmit_base")
}

/// At the end of the block `node` of instance `i`: its `use_vmac` and `vmac_xmit_base`.
/// `vmac_xmit_base` without `use_vmac` is refused (keepalived ignores it with an error), and
/// unicast with `use_vmac` sends from the interface, as keepalived has it (`vmac_xmit_base`
/// set, with its warning). The default name is given once the whole file is read ([`names`]).
pub(super) fn finish(node: &Node, i: &mut VrrpInstance, errors: &mut Found) {
    let children = node.block.as_deref().unwrap_or_default();
    let mut xmit_base = None;
    for n in children.iter().filter(|n| n.keyword == "vmac_xmit_base") {
        if no_args(n, errors) {
            xmit_base = Some(n.location.clone());
        }
    }
    let mut uses = children.iter().filter(|n| n.keyword == "use_vmac");
    let Some(n) = uses.next() else {
        if let Some(at) = xmit_base {
            errors.push(
                &at,
                format!(
                    "vrrp_instance {}: `vmac_xmit_base` is only valid with `use_vmac`",
                    i.name
                ),
            );
        }
        return;
    };
    for again in uses {
        errors.push(
            &again.location,
            format!(
                "`use_vmac` is already given in this instance at {}",
                n.location
            ),
        );
    }
    let mut m = Vmac {
        name: use_vmac(n, errors).unwrap_or_default(),
        xmit_base: xmit_base.is_some(),
        location: n.location.clone(),
    };
    if i.is_unicast() && !m.xmit_base {
        errors.warn(
            &m.location,
            format!(
                "vrrp_instance {}: unicast with `use_vmac` needs `vmac_xmit_base`: keepalived \
                 sets it, and so does vrrpd (adverts go from {}'s own address and MAC)",
                i.name, i.interface
            ),
        );
        m.xmit_base = true;
    }
    i.vmac = Some(m);
}

/// The NAME of `use_vmac [NAME]`, if written and valid.
fn use_vmac(n: &Node, errors: &mut Found) -> Option<String> {
    if n.block.is_some() {
        errors.push(&n.location, "`use_vmac` takes no block");
    }
    match n.args.as_slice() {
        [] => None,
        [name] => vmac_name(n, name, errors),
        [_, second, ..] => {
            errors.push(
                &n.location,
                format!(
                    "`use_vmac {}`: takes one interface name at most (`{second}` is one too many)",
                    n.args.join(" ")
                ),
            );
            None
        }
    }
}

/// NAME checked as keepalived's `dev_name_valid` checks it; a MAC address (keepalived 2.2.7
/// takes one in place of RFC 5798's) is refused.
fn vmac_name(n: &Node, name: &str, errors: &mut Found) -> Option<String> {
    if name.contains(':') {
        errors.push(
            &n.location,
            format!(
                "`use_vmac {name}`: a MAC address of your own is not supported by vrrpd; the \
                 macvlan takes RFC 5798's virtual router MAC address (00:00:5e:00:01:VRID, \
                 IPv6 00:00:5e:00:02:VRID)"
            ),
        );
        return None;
    }
    let bad = name.is_empty()
        || name.len() > IFNAME_MAX
        || name == "."
        || name == ".."
        || name.chars().any(|c| c == '/' || c.is_whitespace());
    if bad {
        errors.push(
            &n.location,
            format!(
                "`use_vmac {name}`: not an interface name (1 to {IFNAME_MAX} bytes, no `/`, \
                 `:` or white space, not `.` or `..`)"
            ),
        );
        return None;
    }
    Some(name.to_string())
}

/// Once every instance is read: names checked across instances and the defaults given, as
/// keepalived's `create_vmac_name` gives them (in file order, skipping every name written
/// and every default already given): `vrrp.VRID`, then `vrrp1.VRID`, `vrrp2.VRID`, ...;
/// IPv6 tries `vrrp6.VRID` second. A name that is another instance's macvlan or any
/// instance's (or VIP's) interface is refused: keepalived would use another name, or find
/// that interface and not make a macvlan.
pub(super) fn names(c: &mut Config, errors: &mut Found) {
    let mut taken: Vec<(String, String, Location)> = Vec::new();
    for i in &c.instances {
        let Some(m) = i.vmac.as_ref().filter(|m| !m.name.is_empty()) else {
            continue;
        };
        if let Some((_, other, _)) = taken.iter().find(|(name, _, _)| *name == m.name) {
            errors.push(
                &m.location,
                format!(
                    "vrrp_instance {}: `use_vmac {}`: vrrp_instance {other} already uses it",
                    i.name, m.name
                ),
            );
        } else if let Some(user) = uses_interface(c, &m.name) {
            errors.push(
                &m.location,
                format!(
                    "vrrp_instance {}: `use_vmac {}`: vrrp_instance {user} runs on that \
                     interface, which cannot be this instance's macvlan",
                    i.name, m.name
                ),
            );
        }
        taken.push((m.name.clone(), i.name.clone(), m.location.clone()));
    }
    for k in 0..c.instances.len() {
        let i = &c.instances[k];
        if !i.vmac.as_ref().is_some_and(|m| m.name.is_empty()) {
            continue;
        }
        let name = default_name(i.vrid, i.is_ipv6(), |n| {
            taken.iter().any(|(t, _, _)| t == n) || uses_interface(c, n).is_some()
        });
        taken.push((name.clone(), i.name.clone(), i.location.clone()));
        if let Some(m) = &mut c.instances[k].vmac {
            m.name = name;
        }
    }
}

/// The first instance that runs on, or puts a VIP on, the interface `name`.
fn uses_interface<'a>(c: &'a Config, name: &str) -> Option<&'a str> {
    c.instances
        .iter()
        .find(|i| i.interface == name || i.held().any(|v| v.dev.as_deref() == Some(name)))
        .map(|i| i.name.as_str())
}

/// keepalived's `create_vmac_name` with its prefix `vrrp`: the first name not `taken`.
pub fn default_name(vrid: u8, ipv6: bool, taken: impl Fn(&str) -> bool) -> String {
    let first = format!("vrrp.{vrid}");
    if !taken(&first) {
        return first;
    }
    let mut num: u16 = 0;
    loop {
        num = match (ipv6, num) {
            (true, 0) => 6,
            (true, 6) => 1,
            (true, 5) => 7,
            _ => num + 1,
        };
        let name = format!("vrrp{num}.{vrid}");
        if !taken(&name) {
            return name;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::default_name;

    #[test]
    fn default_names_follow_keepalived_s_order() {
        let upto = |taken: &[&str], ipv6: bool| default_name(7, ipv6, |n| taken.contains(&n));
        assert_eq!(upto(&[], false), "vrrp.7");
        assert_eq!(upto(&["vrrp.7"], false), "vrrp1.7");
        assert_eq!(upto(&["vrrp.7"], true), "vrrp6.7");
        assert_eq!(upto(&["vrrp.7", "vrrp6.7"], true), "vrrp1.7");
        let five: Vec<String> = (1..=5).map(|n| format!("vrrp{n}.7")).collect();
        let mut taken: Vec<&str> = vec!["vrrp.7", "vrrp6.7"];
        taken.extend(five.iter().map(String::as_str));
        assert_eq!(upto(&taken, true), "vrrp7.7");
        assert_eq!(upto(&taken[..4], false), "vrrp3.7");
    }
}
