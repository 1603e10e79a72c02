//! resolv.conf: reading the upstream servers, and the resolv-prepender.

use std::net::IpAddr;

/// The most nameservers the resolver uses (glibc's MAXNS).
pub const MAX_NAMESERVERS: usize = 3;

/// The `nameserver` addresses of resolv.conf text, in order; an unparsable one is an error
/// with its line.
pub fn nameservers(text: &str, origin: &str) -> Result<Vec<IpAddr>, String> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let mut words = line.split_whitespace();
        if words.next() != Some("nameserver") {
            continue;
        }
        let Some(value) = words.next() else {
            return Err(format!(
                "{origin}:{}: `nameserver` without an address",
                n + 1
            ));
        };
        // A scope suffix (fe80::1%eth0) is not for a DNS server's config.
        let address = value.split('%').next().unwrap_or(value);
        let ip: IpAddr = address
            .parse()
            .map_err(|_| format!("{origin}:{}: `{value}` is not an IP address", n + 1))?;
        if !out.contains(&ip) {
            out.push(ip);
        }
    }
    Ok(out)
}

/// The upstream servers of a node: resolv.conf's nameservers without the node's own addresses
/// and loopback (forwarding to ourselves would loop). None left is an error.
pub fn upstreams(text: &str, origin: &str, own: &[IpAddr]) -> Result<Vec<IpAddr>, String> {
    let all = nameservers(text, origin)?;
    let kept: Vec<IpAddr> = all
        .iter()
        .copied()
        .filter(|a| !a.is_loopback() && !own.contains(a))
        .collect();
    if kept.is_empty() {
        return Err(format!(
            "{origin}: no upstream nameserver left once this node's own addresses and loopback are removed (it had {})",
            if all.is_empty() { "none".to_string() } else { all.iter().map(IpAddr::to_string).collect::<Vec<_>>().join(", ") }
        ));
    }
    Ok(kept)
}

/// The resolv-prepender: `nameserver NODE_IP` first, `search DOMAIN` first in the search list,
/// duplicates dropped, nameservers beyond the third commented out, every other line kept.
pub fn prepend(text: &str, nameserver: IpAddr, search: &str) -> String {
    let mut servers: Vec<String> = vec![nameserver.to_string()];
    let mut domains: Vec<String> = vec![search.trim_end_matches('.').to_string()];
    let mut other: Vec<String> = Vec::new();
    for line in text.lines() {
        let mut words = line.split_whitespace();
        match words.next() {
            Some("nameserver") => {
                if let Some(v) = words.next() {
                    if !servers.iter().any(|s| s == v) {
                        servers.push(v.to_string());
                    }
                }
            }
            Some("search" | "domain") => {
                for d in words {
                    let d = d.trim_end_matches('.');
                    // `.` alone is the root: no domain to search (and an empty word would
                    // print as a trailing blank that the next pass drops: found by the fuzzer).
                    if !d.is_empty() && !domains.iter().any(|x| x.eq_ignore_ascii_case(d)) {
                        domains.push(d.to_string());
                    }
                }
            }
            _ if line.starts_with("# dns-render:") => {}
            // CRLF or a stray CR: resolv.conf lines end at the newline alone.
            _ => other.push(line.trim_end_matches('\r').to_string()),
        }
    }
    let mut out = String::from("# dns-render: this node's DNS server first\n");
    out.push_str(&format!("search {}\n", domains.join(" ")));
    for (i, s) in servers.iter().enumerate() {
        if i < MAX_NAMESERVERS {
            out.push_str(&format!("nameserver {s}\n"));
        } else {
            out.push_str(&format!(
                "# nameserver {s}   (beyond the resolver's {MAX_NAMESERVERS})\n"
            ));
        }
    }
    for l in other.iter().filter(|l| !l.trim().is_empty()) {
        out.push_str(l);
        out.push('\n');
    }
    out
}

/// A systemd-resolved drop-in that makes the node's DNS server the one for the cluster domain.
pub fn resolved_dropin(nameserver: IpAddr, search: &str) -> String {
    format!(
        "# dns-render: this node's DNS server for the cluster domain\n[Resolve]\nDNS={nameserver}\nDomains={}\n",
        search.trim_end_matches('.')
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_root_search_domain_is_no_domain() {
        let own: IpAddr = "192.0.2.1".parse().unwrap();
        let once = prepend("domain\rc\r\r.\n", own, "lab.example.com");
        assert!(once.contains("search lab.example.com c\n"), "{once:?}");
        assert_eq!(prepend(&once, own, "lab.example.com"), once);
    }

    #[test]
    fn upstreams_leave_out_the_node_and_loopback() {
        let text = "nameserver 127.0.0.1\nnameserver 192.0.2.10\nnameserver ::1\nnameserver 198.51.100.53\n";
        let own: Vec<IpAddr> = vec!["192.0.2.10".parse().unwrap()];
        assert_eq!(
            upstreams(text, "r", &own).unwrap(),
            vec!["198.51.100.53".parse::<IpAddr>().unwrap()]
        );
        let e = upstreams("nameserver 127.0.0.1\n", "r", &own).unwrap_err();
        assert!(e.contains("no upstream") && e.contains("127.0.0.1"), "{e}");
        let e = upstreams("nameserver 300.1.1.1\n", "r.conf", &own).unwrap_err();
        assert!(e.starts_with("r.conf:1:"), "{e}");
    }

    #[test]
    fn the_prepender_puts_the_node_first_and_keeps_three() {
        let text = "# Generated by NetworkManager\nsearch example.org\nnameserver 198.51.100.1\nnameserver 192.0.2.10\nnameserver 198.51.100.2\nnameserver 198.51.100.3\noptions edns0\n";
        let out = prepend(text, "192.0.2.10".parse().unwrap(), "lab.example.com");
        assert_eq!(
            out,
            "# dns-render: this node's DNS server first\nsearch lab.example.com example.org\nnameserver 192.0.2.10\n\
             nameserver 198.51.100.1\nnameserver 198.51.100.2\n# nameserver 198.51.100.3   (beyond the resolver's 3)\n\
             # Generated by NetworkManager\noptions edns0\n"
        );
        // Prepending again changes nothing.
        assert_eq!(
            prepend(&out, "192.0.2.10".parse().unwrap(), "lab.example.com"),
            out
        );
    }
}
