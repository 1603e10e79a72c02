//! The cluster key: authenticated discovery on top of mDNS, which has none.
//!
//! Without it any host on the link can announce a plausible new node (`master-7`) and become
//! an API backend. With it, a publisher adds to each instance's TXT record the addresses of its
//! host, the time, and an HMAC-SHA256 over the host's name and every other TXT string
//! (`role=`, `addrs=`, `ts=`); a browser with the same key takes only nodes whose signature
//! verifies, dated within [`WINDOW`] of its own clock, and of each only the signed addresses.
//! The key is a file of at least 16 bytes (`head -c 32 /dev/urandom | base64 >
//! /etc/ipi-net/cluster.key`), the same on every node, installed like the pull secret.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ring::hmac;

use crate::records::Publication;

/// Where the units' key is, when the node has one.
pub const DEFAULT_PATH: &str = "/etc/ipi-net/cluster.key";
/// How far a signature's time may be from the browser's clock (the nodes' clocks are kept by
/// NTP; this leaves room for a publisher's [`RESIGN`] period and some skew).
pub const WINDOW: Duration = Duration::from_secs(2 * 3600);
/// How often a publisher signs again (its TXT records change, and are announced again).
pub const RESIGN: Duration = Duration::from_secs(3600);
/// The shortest key taken.
const SHORTEST: usize = 16;
/// What the signature covers besides the TXT strings: a version, so that another use of the
/// same key never signs the same bytes.
const CONTEXT: &str = "ipi-net mdns node v1";

/// A key that cannot be used; the message names the file.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// The file could not be read.
    #[error("{}: {why}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        why: std::io::Error,
    },
    /// Too short to be a key.
    #[error("{}: {len} bytes: a cluster key has at least {SHORTEST}", path.display())]
    Short {
        /// The file.
        path: PathBuf,
        /// Its length, without the trailing white space.
        len: usize,
    },
}

/// Why a node's records are not taken under the key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unsigned {
    /// No `sig=` string.
    #[error("no signature")]
    Missing,
    /// A signature that does not verify (another key, or records changed on the way).
    #[error("a signature that does not verify")]
    Bad,
    /// No `ts=`, or one out of the window.
    #[error("signed at {0}, more than {WINDOW:?} from now")]
    Stale(String),
    /// No `addrs=`, or one that does not parse.
    #[error("no signed addresses")]
    Addresses,
}

/// The cluster's key.
#[derive(Debug, Clone)]
pub struct ClusterKey(hmac::Key);

impl ClusterKey {
    /// The key in `bytes` (trailing white space left out), at least 16 bytes.
    pub fn new(bytes: &[u8], path: &Path) -> Result<ClusterKey, KeyError> {
        let trimmed = bytes.trim_ascii_end();
        if trimmed.len() < SHORTEST {
            return Err(KeyError::Short {
                path: path.to_owned(),
                len: trimmed.len(),
            });
        }
        Ok(ClusterKey(hmac::Key::new(hmac::HMAC_SHA256, trimmed)))
    }

    /// The key in `path`.
    pub fn load(path: &Path) -> Result<ClusterKey, KeyError> {
        let bytes = std::fs::read(path).map_err(|why| KeyError::Read {
            path: path.to_owned(),
            why,
        })?;
        ClusterKey::new(&bytes, path)
    }

    /// The key `path` names, or the one at [`DEFAULT_PATH`] when the node has one (none
    /// otherwise).
    pub fn given_or_default(path: Option<&Path>) -> Result<Option<ClusterKey>, KeyError> {
        match path {
            Some(p) => ClusterKey::load(p).map(Some),
            None if Path::new(DEFAULT_PATH).exists() => {
                ClusterKey::load(Path::new(DEFAULT_PATH)).map(Some)
            }
            None => Ok(None),
        }
    }

    /// Signs every service of `p` whose target is one of its hosts, at `now`: `addrs=`, `ts=`
    /// and `sig=` added to its TXT strings.
    pub fn sign(&self, p: &mut Publication, now: SystemTime) {
        let ts = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        for s in &mut p.services {
            let Some(host) = p.hosts.iter().find(|h| h.name == s.target) else {
                continue;
            };
            let mut addresses = host.addresses.clone();
            addresses.sort();
            s.txt
                .retain(|t| !["sig=", "addrs=", "ts="].iter().any(|k| t.starts_with(k)));
            s.txt.extend(address_strings(&addresses));
            s.txt.push(format!("ts={ts}"));
            let tag = hmac::sign(&self.0, &signed_bytes(&short(&host.name), &s.txt));
            s.txt.push(format!("sig={}", hex(tag.as_ref())));
        }
    }

    /// The signed addresses of host `name` (its short name) whose instance's TXT strings are
    /// `txt`, when the signature verifies and is dated within [`WINDOW`] of `now`.
    pub fn verify(
        &self,
        name: &str,
        txt: &[String],
        now: SystemTime,
    ) -> Result<Vec<IpAddr>, Unsigned> {
        let sig = txt
            .iter()
            .find_map(|t| t.strip_prefix("sig="))
            .ok_or(Unsigned::Missing)?;
        let tag = unhex(sig).ok_or(Unsigned::Bad)?;
        let rest: Vec<String> = txt
            .iter()
            .filter(|t| !t.starts_with("sig="))
            .cloned()
            .collect();
        hmac::verify(&self.0, &signed_bytes(name, &rest), &tag).map_err(|_| Unsigned::Bad)?;
        let value = |key: &str| rest.iter().find_map(|t| t.strip_prefix(key));
        let ts = value("ts=").unwrap_or_default();
        let at = ts
            .parse::<u64>()
            .map_err(|_| Unsigned::Stale(ts.to_string()))?;
        let at = UNIX_EPOCH + Duration::from_secs(at);
        let skew = now.duration_since(at).unwrap_or_else(|e| e.duration());
        if skew > WINDOW {
            return Err(Unsigned::Stale(ts.to_string()));
        }
        let addrs: Vec<&str> = (rest.iter().filter_map(|t| t.strip_prefix("addrs=")))
            .flat_map(|a| a.split(','))
            .collect();
        if addrs.is_empty() {
            return Err(Unsigned::Addresses);
        }
        (addrs.iter())
            .map(|a| a.parse().map_err(|_| Unsigned::Addresses))
            .collect()
    }
}

/// `addrs=A,B,...` strings, as many as it takes for each to fit a TXT string (255 bytes).
fn address_strings(addresses: &[IpAddr]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for a in addresses.iter().map(IpAddr::to_string) {
        match out.last_mut() {
            Some(last) if last.len() + 1 + a.len() <= 255 => {
                last.push(',');
                last.push_str(&a);
            }
            _ => out.push(format!("addrs={a}")),
        }
    }
    out
}

/// What is signed: the context, the host's name and the TXT strings, each on a line of its own
/// (none of them can hold a newline that would make two lists sign alike: TXT strings are
/// length-prefixed on the wire, so each is framed by its length here too).
fn signed_bytes(name: &str, txt: &[String]) -> Vec<u8> {
    let mut out = Vec::new();
    for part in std::iter::once(CONTEXT)
        .chain([name])
        .chain(txt.iter().map(String::as_str))
    {
        out.extend((part.len() as u32).to_be_bytes());
        out.extend(part.as_bytes());
    }
    out
}

/// `master-0` of `master-0.local.`, lower case (as browse names nodes).
fn short(host: &str) -> String {
    host.split('.').next().unwrap_or(host).to_ascii_lowercase()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if text.len() % 2 != 0 || !text.is_ascii() {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn key(k: &str) -> ClusterKey {
        ClusterKey::new(k.as_bytes(), Path::new("cluster.key")).unwrap()
    }

    fn node() -> Publication {
        let addresses = [
            "2001:db8::10".parse().unwrap(),
            "192.0.2.10".parse().unwrap(),
        ];
        crate::config::openshift("lab", "master-0", ipi_core::Role::Master, &addresses).unwrap()
    }

    fn signed(k: &ClusterKey, at: SystemTime) -> Vec<String> {
        let mut p = node();
        k.sign(&mut p, at);
        p.services[0].txt.clone()
    }

    #[test]
    fn a_signed_node_verifies_with_its_addresses() {
        let (k, now) = (key("0123456789abcdef0123"), SystemTime::now());
        let txt = signed(&k, now);
        assert_eq!(txt.len(), 4, "{txt:?}");
        let addresses = k.verify("master-0", &txt, now).unwrap();
        assert_eq!(addresses.len(), 2);
        // Signing again replaces the signature, not adds one.
        let mut p = node();
        k.sign(&mut p, now);
        k.sign(&mut p, now);
        assert_eq!(p.services[0].txt.len(), 4);
    }

    #[test]
    fn what_another_key_another_name_or_changed_strings_sign_is_refused() {
        let (k, now) = (key("0123456789abcdef0123"), SystemTime::now());
        let txt = signed(&k, now);
        assert_eq!(
            key("another key of the same length").verify("master-0", &txt, now),
            Err(Unsigned::Bad)
        );
        assert_eq!(k.verify("master-7", &txt, now), Err(Unsigned::Bad));
        let mut worker = txt.clone();
        worker[0] = "role=worker".into();
        assert_eq!(k.verify("master-0", &worker, now), Err(Unsigned::Bad));
        let mut moved = txt.clone();
        moved[1] = "addrs=192.0.2.66".into();
        assert_eq!(k.verify("master-0", &moved, now), Err(Unsigned::Bad));
        assert_eq!(k.verify("master-0", &txt[..3], now), Err(Unsigned::Missing));
    }

    #[test]
    fn a_signature_out_of_the_window_is_stale() {
        let (k, now) = (key("0123456789abcdef0123"), SystemTime::now());
        let old = signed(&k, now - WINDOW - Duration::from_secs(1));
        assert!(matches!(
            k.verify("master-0", &old, now),
            Err(Unsigned::Stale(_))
        ));
        let ahead = signed(&k, now + WINDOW - Duration::from_secs(1));
        assert!(k.verify("master-0", &ahead, now).is_ok());
    }

    #[test]
    fn many_addresses_are_signed_in_strings_that_fit() {
        let (k, now) = (key("0123456789abcdef0123"), SystemTime::now());
        let mut p = node();
        p.hosts[0].addresses = (0..40u16)
            .map(|i| IpAddr::from([0x2001, 0xdb8, 0, 0, 0, 0, 0xabcd, i]))
            .collect();
        k.sign(&mut p, now);
        assert!(p.services[0].txt.iter().all(|t| t.len() <= 255));
        assert_eq!(
            k.verify("master-0", &p.services[0].txt, now).unwrap().len(),
            40
        );
        let records = p.records().unwrap();
        use hickory_proto::serialize::binary::BinEncodable;
        assert!(records.iter().all(|o| o.record.to_bytes().is_ok()));
    }

    #[test]
    fn a_short_key_is_refused_by_its_file() {
        let e = ClusterKey::new(b"short\n", Path::new("/etc/ipi-net/cluster.key")).unwrap_err();
        assert!(e.to_string().contains("/etc/ipi-net/cluster.key"), "{e}");
    }
}
