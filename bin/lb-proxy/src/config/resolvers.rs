//! A `resolvers` section's settings (haproxy 2.6's keywords and defaults), one line at a time.

use super::lexer::{address, duration};
use super::model::Resolvers;

/// Applies the line `w` of a `resolvers` section to `r`, or says what is wrong with it.
pub fn setting(r: &mut Resolvers, w: &[String]) -> Result<(), String> {
    let line = w.join(" ");
    let time = |v: Option<&String>| {
        v.and_then(|v| duration(v))
            .filter(|d| !d.is_zero())
            .ok_or_else(|| format!("`{line}`: not a duration"))
    };
    match w {
        [kw, name, addr] if kw == "nameserver" => {
            let plain = addr.strip_prefix("udp@").unwrap_or(addr);
            let (address, _) = address(plain)
                .filter(|(a, host)| host.is_none() && !a.ip().is_unspecified())
                .ok_or_else(|| format!("`{line}`: a nameserver is IP:PORT (UDP)"))?;
            if r.nameservers.iter().any(|(n, _)| n == name) {
                return Err(format!("nameserver {name} is defined twice"));
            }
            r.nameservers.push((name.clone(), address));
        }
        [kw] if kw == "parse-resolv-conf" => r.resolv_conf = true,
        [kw, status, v] if kw == "hold" => {
            let d = duration(v).ok_or_else(|| format!("`{line}`: not a duration"))?;
            match status.as_str() {
                "valid" => r.hold_valid = d,
                "nx" | "other" | "refused" | "timeout" => r.hold_other = r.hold_other.max(d),
                // How long an address the DNS stopped giving is kept: lb-proxy keeps none.
                "obsolete" => {}
                other => {
                    return Err(format!(
                        "`hold {other}`: one of nx, other, refused, timeout, valid, obsolete"
                    ))
                }
            }
        }
        [kw, n] if kw == "resolve_retries" => {
            r.resolve_retries = at_least(n, 1).ok_or(format!("`{line}`: 1 or more tries"))?;
        }
        [kw, which, _] if kw == "timeout" => {
            let d = time(w.get(2))?;
            match which.as_str() {
                "resolve" => r.timeout_resolve = d,
                "retry" => r.timeout_retry = d,
                other => return Err(format!("`timeout {other}` in resolvers: resolve or retry")),
            }
        }
        [kw, n] if kw == "accepted_payload_size" => {
            r.accepted_payload_size =
                at_least(n, 512).ok_or(format!("`{line}`: a size from 512 to 65535"))?;
        }
        _ => {
            return Err(format!(
                "`{line}`: a resolvers section takes nameserver, parse-resolv-conf, hold, \
                 resolve_retries, timeout resolve|retry and accepted_payload_size"
            ))
        }
    }
    Ok(())
}

/// `text` as a number of at least `min`.
fn at_least<T: std::str::FromStr + PartialOrd>(text: &str, min: T) -> Option<T> {
    text.parse().ok().filter(|n| *n >= min)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn apply(r: &mut Resolvers, line: &str) -> Result<(), String> {
        setting(r, &super::super::lexer::words(line).unwrap())
    }

    #[test]
    fn haproxys_resolvers_keywords() {
        let mut r = Resolvers::new("dns", &Default::default());
        for line in [
            "nameserver dns1 192.0.2.53:53",
            "nameserver dns2 udp@[2001:db8::53]:53",
            "parse-resolv-conf",
            "hold valid 5s",
            "hold nx 40s",
            "hold obsolete 0s",
            "resolve_retries 4",
            "timeout resolve 2s",
            "timeout retry 500ms",
            "accepted_payload_size 8192",
        ] {
            apply(&mut r, line).unwrap_or_else(|e| panic!("{line}: {e}"));
        }
        assert_eq!(r.nameservers.len(), 2);
        assert!(r.resolv_conf);
        assert_eq!(r.hold_valid, Duration::from_secs(5));
        assert_eq!(r.hold_other, Duration::from_secs(40));
        assert_eq!((r.resolve_retries, r.accepted_payload_size), (4, 8192));
        assert_eq!(r.timeout_retry, Duration::from_millis(500));
        for bad in [
            "nameserver dns1 192.0.2.54:53",
            "nameserver x dns.example:53",
            "hold forever 1s",
            "resolve_retries 0",
            "timeout client 1s",
            "accepted_payload_size 100",
            "nameservers",
        ] {
            assert!(apply(&mut r, bad).is_err(), "{bad}");
        }
    }
}
