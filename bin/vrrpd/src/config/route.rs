//! One `virtual_routes` or `virtual_rules` entry, as keepalived writes it (vrrp_iproute.c, the `ip route` syntax
//! it takes): `[src ADDR] [to] [blackhole|unreachable|prohibit] DEST[/LEN] [via|gw ADDR]
//! [dev IF] [src ADDR] [metric N] [table N] [scope SCOPE] [no_track]`. What else `ip route`
//! knows (multipath `or`/`nexthop`, `realms`, MTUs, named tables, ...) is refused naming the
//! line.

use std::net::IpAddr;

use super::error::Found;
use super::model::{RouteType, VirtualRoute, VirtualRule};
use super::tree::Node;

/// What vrrpd reads of an entry, for the error that names what it does not.
const READ: &str = "vrrpd reads [src ADDR] [to] [blackhole|unreachable|prohibit] DEST[/LEN] \
                    [via|gw ADDR] [dev IF] [metric N] [table N] [scope SCOPE] [no_track]";

/// iproute2's scope names (`/etc/iproute2/rt_scopes`) and their numbers.
const SCOPES: &[(&str, u8)] = &[
    ("global", 0),
    ("universe", 0),
    ("site", 200),
    ("link", 253),
    ("host", 254),
    ("nowhere", 255),
];

/// A route's `scope`: a name iproute2 knows or a number from 0 to 255.
pub fn scope(text: &str) -> Option<u8> {
    SCOPES
        .iter()
        .find(|(name, _)| *name == text)
        .map(|&(_, n)| n)
        .or_else(|| text.parse().ok())
}

/// The name iproute2 writes for scope `n` (its number when it has none).
pub fn scope_name(n: u8) -> String {
    SCOPES
        .iter()
        .find(|&&(_, m)| m == n)
        .map_or_else(|| n.to_string(), |(name, _)| (*name).to_string())
}

/// An entry's words (its keyword first) and where it stands, for the errors that name it.
struct Entry<'a> {
    node: &'a Node,
    block: &'static str,
    words: Vec<&'a str>,
}

impl<'a> Entry<'a> {
    fn new(node: &'a Node, block: &'static str) -> Self {
        let words = std::iter::once(node.keyword.as_str())
            .chain(node.args.iter().map(String::as_str))
            .collect();
        Entry { node, block, words }
    }

    /// Records why the entry is refused; `None`, for the caller to return.
    fn refuse<T>(&self, errors: &mut Found, why: String) -> Option<T> {
        errors.push(
            &self.node.location,
            format!("{} `{}`: {why}", self.block, self.words.join(" ")),
        );
        None
    }
}

/// The entry `node` (its keyword is the first word); `None` with its errors recorded.
pub fn virtual_route(node: &Node, errors: &mut Found) -> Option<VirtualRoute> {
    let entry = Entry::new(node, "virtual_routes");
    let words = &entry.words;
    let mut at = 0;
    let mut src = None;
    if words.first() == Some(&"src") {
        let Some(a) = address(words.get(1).copied()) else {
            return entry.refuse(errors, format!("`src` needs an address; {READ}"));
        };
        src = Some(a);
        at = 2;
    }
    if words.get(at) == Some(&"to") {
        at += 1;
    }
    let kind = match words.get(at).copied() {
        Some("blackhole") => RouteType::Blackhole,
        Some("unreachable") => RouteType::Unreachable,
        Some("prohibit") => RouteType::Prohibit,
        _ => RouteType::Unicast,
    };
    if kind != RouteType::Unicast {
        at += 1;
    }
    let Some((destination, prefix_len)) = words.get(at).and_then(|w| prefix(w)) else {
        return entry.refuse(errors, format!("no destination prefix; {READ}"));
    };
    let mut r = VirtualRoute {
        destination,
        prefix_len,
        via: None,
        src,
        dev: None,
        metric: None,
        table: None,
        scope: None,
        kind,
    };
    let mut rest = words[at + 1..].iter().copied();
    while let Some(option) = rest.next() {
        if option == "no_track" {
            continue;
        }
        let value = rest.next();
        let ok = match option {
            "via" | "gw" => value.and_then(|v| v.parse().ok()).map(|a| r.via = Some(a)),
            "src" => value.and_then(|v| v.parse().ok()).map(|a| r.src = Some(a)),
            "dev" => value.map(|v| r.dev = Some(v.to_string())),
            "metric" | "preference" | "priority" => value
                .and_then(|v| v.parse().ok())
                .map(|m| r.metric = Some(m)),
            "table" => value
                .and_then(|v| v.parse().ok())
                .map(|t| r.table = Some(t)),
            "scope" => value.and_then(scope).map(|s| r.scope = Some(s)),
            _ => return entry.refuse(errors, format!("`{option}` is not supported; {READ}")),
        };
        if ok.is_none() {
            return entry.refuse(errors, format!("`{option}` needs a valid value; {READ}"));
        }
    }
    let family = |a: &IpAddr| a.is_ipv4() == r.destination.is_ipv4();
    if !r.via.iter().chain(&r.src).all(family) {
        return entry.refuse(
            errors,
            "via and src must be of the destination's family".into(),
        );
    }
    if r.kind != RouteType::Unicast && r.via.is_some() {
        return entry.refuse(
            errors,
            "a blackhole, unreachable or prohibit route has no via".into(),
        );
    }
    Some(r)
}

/// What vrrpd reads of a rule, for the error that names what it does not.
const READ_RULE: &str = "vrrpd reads [inet6] [from PREFIX|all] [to PREFIX] [iif IF] [oif IF] \
                         [fwmark N] [priority N] table N [no_track]";

/// The `virtual_rules` entry `node`; `None` with its errors recorded.
pub fn virtual_rule(node: &Node, errors: &mut Found) -> Option<VirtualRule> {
    let entry = Entry::new(node, "virtual_rules");
    let words = &entry.words;
    let mut r = VirtualRule {
        ipv6: false,
        from: None,
        to: None,
        iif: None,
        oif: None,
        fwmark: None,
        priority: None,
        table: 0,
    };
    let mut table = None;
    let mut rest = words.iter().copied();
    while let Some(option) = rest.next() {
        let ok = match option {
            "inet6" => {
                r.ipv6 = true;
                Some(())
            }
            "no_track" => Some(()),
            _ => {
                let value = rest.next();
                match option {
                    "from" if value == Some("all") => Some(()),
                    "from" => value.and_then(prefix).map(|p| r.from = Some(p)),
                    "to" => value.and_then(prefix).map(|p| r.to = Some(p)),
                    "iif" | "dev" => value.map(|v| r.iif = Some(v.to_string())),
                    "oif" => value.map(|v| r.oif = Some(v.to_string())),
                    "fwmark" => value
                        .and_then(|v| v.parse().ok())
                        .map(|m| r.fwmark = Some(m)),
                    "priority" | "preference" | "pref" => value
                        .and_then(|v| v.parse().ok())
                        .map(|p| r.priority = Some(p)),
                    "table" | "lookup" => {
                        value.and_then(|v| v.parse().ok()).map(|t| table = Some(t))
                    }
                    _ => {
                        return entry
                            .refuse(errors, format!("`{option}` is not supported; {READ_RULE}"))
                    }
                }
            }
        };
        if ok.is_none() {
            return entry.refuse(
                errors,
                format!("`{option}` needs a valid value; {READ_RULE}"),
            );
        }
    }
    let Some(table) = table else {
        return entry.refuse(errors, format!("no table; {READ_RULE}"));
    };
    r.table = table;
    let prefixes: Vec<IpAddr> = r.from.iter().chain(&r.to).map(|(a, _)| *a).collect();
    r.ipv6 |= prefixes.first().is_some_and(IpAddr::is_ipv6);
    if prefixes.iter().any(|a| a.is_ipv6() != r.ipv6) {
        return entry.refuse(errors, "from and to must be of one family".into());
    }
    Some(r)
}

fn address(word: Option<&str>) -> Option<IpAddr> {
    word?.parse().ok()
}

/// `ADDR[/LEN]` (default the whole address); the address is taken as written (keepalived
/// masks it; the kernel refuses host bits, which vrrpd reports when adding).
fn prefix(word: &str) -> Option<(IpAddr, u8)> {
    let (a, len) = match word.split_once('/') {
        Some((a, l)) => (a, Some(l)),
        None => (word, None),
    };
    let address: IpAddr = a.parse().ok()?;
    let max = if address.is_ipv4() { 32 } else { 128 };
    let len = match len {
        Some(l) => l.parse::<u8>().ok().filter(|&l| l <= max)?,
        None => max,
    };
    Some((address, len))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::model::Location;

    /// `read` of `line` as the entry on line 3 of r.conf: its value, or its errors.
    fn entry<T>(line: &str, read: fn(&Node, &mut Found) -> Option<T>) -> Result<T, String> {
        let mut words = line.split_whitespace().map(String::from);
        let node = Node {
            keyword: words.next().unwrap(),
            args: words.collect(),
            block: None,
            location: Location::new("r.conf", 3),
        };
        let mut errors = Found::default();
        read(&node, &mut errors).ok_or_else(|| errors.errors.to_string())
    }

    fn route(line: &str) -> Result<VirtualRoute, String> {
        entry(line, virtual_route)
    }

    #[test]
    fn keepalived_route_lines() {
        let r = route("src 192.0.2.1 to 198.51.100.0/24 via 192.0.2.254 dev eth1").unwrap();
        assert_eq!(r.destination.to_string(), "198.51.100.0");
        assert_eq!(r.prefix_len, 24);
        assert_eq!(r.via.unwrap().to_string(), "192.0.2.254");
        assert_eq!(r.src.unwrap().to_string(), "192.0.2.1");
        assert_eq!(r.dev.as_deref(), Some("eth1"));
        let r = route("0.0.0.0/0 gw 192.0.2.1 table 100 metric 5 no_track").unwrap();
        assert_eq!((r.prefix_len, r.table, r.metric), (0, Some(100), Some(5)));
        let r = route("blackhole 2001:db8:1::/48").unwrap();
        assert_eq!((r.kind, r.prefix_len), (RouteType::Blackhole, 48));
        assert_eq!(route("203.0.113.7").unwrap().prefix_len, 32);
        // iproute2's scope names and numbers.
        for (text, n) in [
            ("host", 254),
            ("link", 253),
            ("global", 0),
            ("site", 200),
            ("7", 7),
        ] {
            let r = route(&format!("192.0.2.0/24 dev eth0 scope {text}")).unwrap();
            assert_eq!(r.scope, Some(n), "{text}");
        }
        assert_eq!(route("192.0.2.0/24").unwrap().scope, None);
        assert!(route("192.0.2.0/24 scope galaxy")
            .unwrap_err()
            .contains("`scope` needs a valid value"));
        assert_eq!(scope_name(254), "host");
        assert_eq!(scope_name(7), "7");
    }

    fn rule(line: &str) -> Result<VirtualRule, String> {
        entry(line, virtual_rule)
    }

    #[test]
    fn keepalived_rule_lines() {
        let r = rule("from 192.0.2.0/24 table 1").unwrap();
        assert_eq!((r.from.unwrap().1, r.table, r.ipv6), (24, 1, false));
        let r = rule("to 2001:db8::/32 lookup 7 priority 100 no_track").unwrap();
        assert!(r.ipv6);
        assert_eq!((r.table, r.priority), (7, Some(100)));
        let r = rule("inet6 fwmark 3 iif eth1 table 9").unwrap();
        assert_eq!(
            (r.ipv6, r.fwmark, r.iif.as_deref()),
            (true, Some(3), Some("eth1"))
        );
        assert!(rule("from 192.0.2.0/24").unwrap_err().contains("no table"));
        assert!(rule("from 192.0.2.0/24 to 2001:db8::/32 table 1")
            .unwrap_err()
            .contains("one family"));
        let e = rule("from all table 1 goto 5").unwrap_err();
        assert!(
            e.starts_with(
                "r.conf:3: virtual_rules `from all table 1 goto 5`: `goto` is not supported"
            ),
            "{e}"
        );
    }

    #[test]
    fn what_is_not_read_is_refused_with_the_line() {
        let e = route("192.0.2.0/24 via 198.51.100.1 or 198.51.100.2").unwrap_err();
        assert!(
            e.starts_with(
                "r.conf:3: virtual_routes `192.0.2.0/24 via 198.51.100.1 or \
                 198.51.100.2`: `or` is not supported"
            ),
            "{e}"
        );
        assert!(route("192.0.2.0/24 table main")
            .unwrap_err()
            .contains("`table` needs"));
        assert!(route("192.0.2.0/24 via 2001:db8::1")
            .unwrap_err()
            .contains("family"));
        assert!(route("via 192.0.2.1")
            .unwrap_err()
            .contains("no destination"));
    }
}
