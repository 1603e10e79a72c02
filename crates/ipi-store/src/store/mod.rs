//! Where reservations live: a directory on one machine ([`file`]), or etcd across machines
//! ([`etcd`]).
//!
//! Both keep the same thing. Addresses are handed out from *pools* (a NetConfig subnet, a
//! MetalLB pool, a CNI range set), each named by a string such as `netconfig/CtlPlane/subnet1`.
//! A pool holds one [`Record`] per reserved address, an index from each owner to its address,
//! and a hint of where the next search starts. Every change is conditional on what the caller
//! saw (a claim only succeeds on a free address, a release only removes the record it read), so
//! the allocator above the store never hands out an address twice however many processes or
//! machines run it: the file store makes that so with one lock for the whole store, etcd with a
//! compare-and-swap transaction per change.

pub mod access;
#[cfg(feature = "etcd")]
pub mod etcd;
pub mod etcd_keys;
pub mod file;
pub mod follow;

use std::fmt;
use std::io;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The holder of one reserved address.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// Who holds the address: an IPSet's name, a CNI attachment (`CONTAINER/IFNAME`), or a pool
    /// request's sharing key (or its name when it has none).
    pub owner: String,
    /// The requests that share the address (pool requests with one sharing key); empty when the
    /// owner is the only one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub names: Vec<String>,
}

impl Record {
    /// An address held by `owner` alone.
    pub fn owned_by(owner: &str) -> Self {
        Self {
            owner: owner.to_owned(),
            names: Vec::new(),
        }
    }

    /// The names the record answers to: its sharers, or its owner alone.
    pub fn holders(&self) -> Vec<&str> {
        if self.names.is_empty() {
            vec![self.owner.as_str()]
        } else {
            self.names.iter().map(String::as_str).collect()
        }
    }

    /// The record as stored: one line of JSON.
    pub fn encode(&self) -> Vec<u8> {
        let mut bytes = serde_json::to_vec(self).unwrap_or_default();
        bytes.push(b'\n');
        bytes
    }

    /// Reads a stored record; the error says what is wrong with it.
    pub fn decode(bytes: &[u8]) -> Result<Self, String> {
        let record: Record =
            serde_json::from_slice(bytes).map_err(|e| format!("not a reservation record: {e}"))?;
        if record.owner.is_empty() {
            return Err("the record names no owner".into());
        }
        Ok(record)
    }
}

/// A store that cannot be used; nothing was changed by the call that failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The file system refused.
    #[error("{}: {what}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What was being done.
        what: &'static str,
        /// Why it failed.
        #[source]
        source: io::Error,
    },
    /// The store holds something it never writes. It is left as it is.
    #[error(
        "{place}: the store is corrupt: {why}; it is left untouched (repair or move it aside)"
    )]
    Corrupt {
        /// The file or key.
        place: String,
        /// What is wrong.
        why: String,
    },
    /// etcd refused or could not be reached.
    #[error("etcd {endpoint}: {why}")]
    Etcd {
        /// The endpoints.
        endpoint: String,
        /// What went wrong.
        why: String,
    },
    /// A TLS file or credential that does not fit the store (or is missing for it).
    #[error("{setting}: {why} (store {url:?})")]
    Setting {
        /// The setting, as it was given (`--etcd-cert`, `ipam.etcd_cert_file`).
        setting: &'static str,
        /// The store URL.
        url: String,
        /// What is wrong.
        why: String,
    },
    /// The store URL is not one we know.
    #[error("store {url:?}: {why}")]
    Url {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        why: String,
    },
}

/// What every store offers the allocator. Methods take `&mut self`: a store is used by one
/// thread of one command at a time.
pub trait Store: fmt::Debug {
    /// The address `owner` holds in `pool`, with its record. An index entry whose address record
    /// names someone else (left by a crash between the two writes) is no holding.
    fn owned(&mut self, pool: &str, owner: &str) -> Result<Option<(IpAddr, Record)>, StoreError>;

    /// The record of `ip` in `pool`, if it is reserved.
    fn record(&mut self, pool: &str, ip: IpAddr) -> Result<Option<Record>, StoreError>;

    /// Reserves `ip` in `pool` for `record` if no one holds it; `false` when someone does.
    fn claim(&mut self, pool: &str, ip: IpAddr, record: &Record) -> Result<bool, StoreError>;

    /// Replaces the record of `ip` with `new` if it is still `old`; `false` otherwise.
    fn replace(
        &mut self,
        pool: &str,
        ip: IpAddr,
        old: &Record,
        new: &Record,
    ) -> Result<bool, StoreError>;

    /// Frees `ip` if its record is still `old`; `false` otherwise.
    fn free(&mut self, pool: &str, ip: IpAddr, old: &Record) -> Result<bool, StoreError>;

    /// Every reservation of `pool`, ordered by address.
    fn list(&mut self, pool: &str) -> Result<Vec<(IpAddr, Record)>, StoreError>;

    /// The pools that hold or have held reservations, sorted.
    fn pools(&mut self) -> Result<Vec<String>, StoreError>;

    /// Where the next search of `pool` starts, if one has been made.
    fn next(&mut self, pool: &str) -> Result<Option<IpAddr>, StoreError>;

    /// Sets where the next search of `pool` starts. A hint: losing it costs time, not safety.
    fn set_next(&mut self, pool: &str, ip: IpAddr) -> Result<(), StoreError>;
}

/// Where the store is when none is named: a directory for one machine.
pub const DEFAULT_DIR: &str = "/var/lib/ipi-net/ipam";

/// A store and how to get into it: its URL and, for etcd, the TLS files and credentials.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreSpec {
    /// A directory, `file://PATH`, `etcd://...` or `etcd+https://...`.
    pub url: String,
    /// The etcd settings (none for a directory or a plaintext etcd without authentication).
    pub etcd: access::EtcdAccess,
}

impl StoreSpec {
    /// The store at `url`, with no etcd settings.
    pub fn plain(url: &str) -> Self {
        Self {
            url: url.to_owned(),
            etcd: access::EtcdAccess::default(),
        }
    }
}

/// Where a store URL points.
enum Location<'a> {
    /// etcd: the endpoints and prefix after `etcd://` or `etcd+https://`, and whether it is the
    /// latter.
    #[cfg_attr(not(feature = "etcd"), allow(dead_code))]
    Etcd { rest: &'a str, tls: bool },
    /// A directory.
    Dir(&'a Path),
}

/// The schemes of etcd store URLs: plaintext, and TLS.
pub const ETCD_SCHEMES: [(&str, bool); 2] = [("etcd://", false), ("etcd+https://", true)];

fn locate(url: &str) -> Result<Location<'_>, StoreError> {
    for (scheme, tls) in ETCD_SCHEMES {
        if let Some(rest) = url.strip_prefix(scheme) {
            let hosts = rest.split('/').next().unwrap_or(rest);
            if hosts.contains('@') {
                // user:password@HOST: every message names the URL, so this one does not.
                return Err(StoreError::Url {
                    url: "(not shown: it holds credentials)".to_owned(),
                    why: "credentials in the URL: give them as --etcd-user and \
                          --etcd-password-file (in a CNI config: etcd_username, etcd_password)"
                        .to_owned(),
                });
            }
            return Ok(Location::Etcd { rest, tls });
        }
    }
    let bad = |why: String| StoreError::Url {
        url: url.to_owned(),
        why: format!("{why} (a path, file://PATH, etcd://HOST:PORT or etcd+https://HOST:PORT)"),
    };
    if let Some((scheme, _)) = url.split_once("://") {
        if scheme != "file" {
            return Err(bad(format!("unknown scheme {scheme:?}")));
        }
    }
    let path = url.strip_prefix("file://").unwrap_or(url);
    if path.is_empty() {
        return Err(bad("names no directory".into()));
    }
    Ok(Location::Dir(Path::new(path)))
}

/// Whether the etcd settings of `spec` fit its store (see [`access::EtcdAccess::check`]):
/// the setting that does not, named, and why. Pure: nothing is read or opened.
pub fn check(spec: &StoreSpec) -> Result<(), StoreError> {
    let (etcd, tls) = match locate(&spec.url)? {
        Location::Etcd { tls, .. } => (true, tls),
        Location::Dir(_) => (false, false),
    };
    spec.etcd
        .check(etcd, tls)
        .map_err(|(setting, why)| StoreError::Setting {
            setting,
            url: spec.url.clone(),
            why,
        })
}

/// Opens the store `url` names: `etcd://HOST:PORT[,HOST:PORT...][/PREFIX]` for etcd, a
/// directory path (or `file://PATH`) for the file store, which is created if need be. No TLS
/// and no credentials: [`open_spec`] takes them.
pub fn open(url: &str) -> Result<Box<dyn Store>, StoreError> {
    open_spec(&StoreSpec::plain(url))
}

/// Opens the store `spec` names, `etcd+https://HOST:PORT[,HOST:PORT...][/PREFIX]` included,
/// with its TLS files and credentials; settings that do not fit the store are refused first
/// ([`check`]).
pub fn open_spec(spec: &StoreSpec) -> Result<Box<dyn Store>, StoreError> {
    check(spec)?;
    let url = spec.url.as_str();
    Ok(match locate(url)? {
        #[cfg(feature = "etcd")]
        Location::Etcd { rest, tls } => {
            Box::new(etcd::EtcdStore::connect(url, rest, tls, &spec.etcd)?)
        }
        #[cfg(not(feature = "etcd"))]
        Location::Etcd { .. } => return Err(without_etcd(url)),
        Location::Dir(path) => Box::new(file::FileStore::open(path)?),
    })
}

/// The error for an etcd URL in a build without the `etcd` feature (the fuzz targets').
#[cfg(not(feature = "etcd"))]
fn without_etcd(url: &str) -> StoreError {
    StoreError::Url {
        url: url.to_owned(),
        why: "this build has no etcd store (cargo feature etcd)".into(),
    }
}

/// Opens the store `url` names if there is one: `None` for a directory that is not a store
/// yet. What only reads or releases (a listing, a CNI DEL) finds nothing there, and must not
/// leave an empty store behind (at a mistyped path, say).
pub fn open_existing(url: &str) -> Result<Option<Box<dyn Store>>, StoreError> {
    open_existing_spec(&StoreSpec::plain(url))
}

/// [`open_existing`] with the etcd settings of `spec`.
pub fn open_existing_spec(spec: &StoreSpec) -> Result<Option<Box<dyn Store>>, StoreError> {
    if let Location::Dir(path) = locate(&spec.url)? {
        check(spec)?;
        if !file::FileStore::exists(path) {
            return Ok(None);
        }
    }
    open_spec(spec).map(Some)
}

/// A pool or owner name as one safe path segment or key segment: letters, digits, `-`, `_` and
/// `.` stay (but a leading `.`), every other byte becomes `%XX`.
pub fn escape(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for (i, b) in name.bytes().enumerate() {
        let plain = b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || (b == b'.' && i > 0);
        if plain {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The name [`escape`] made `text` from; `None` when `text` is no escaped name.
pub fn unescape(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_escape_to_one_segment_and_back() {
        for name in [
            "netconfig/CtlPlane/subnet1",
            ".hidden",
            "a b%c",
            "ctr-1/eth0",
            "é",
        ] {
            let e = escape(name);
            assert!(!e.contains('/') && !e.starts_with('.'), "{e}");
            assert_eq!(unescape(&e).as_deref(), Some(name));
        }
        assert_eq!(escape("plain-name_1.2"), "plain-name_1.2");
        assert_eq!(unescape("%G1"), None);
        assert_eq!(unescape("%4"), None);
    }

    #[test]
    fn records_round_trip_and_bad_ones_are_named() {
        let r = Record {
            owner: "key".into(),
            names: vec!["a".into(), "b".into()],
        };
        assert_eq!(Record::decode(&r.encode()).unwrap(), r);
        assert_eq!(Record::owned_by("x").holders(), ["x"]);
        assert!(Record::decode(b"{")
            .unwrap_err()
            .contains("not a reservation record"));
        assert!(Record::decode(br#"{"owner":""}"#)
            .unwrap_err()
            .contains("no owner"));
    }

    #[test]
    fn unknown_schemes_and_empty_paths_are_refused() {
        assert!(matches!(open("http://x"), Err(StoreError::Url { .. })));
        assert!(matches!(open(""), Err(StoreError::Url { .. })));
    }

    #[test]
    fn credentials_in_an_etcd_url_are_refused_and_never_shown() {
        for url in [
            "etcd+https://ipam:hunter2@etcd:2379",
            "etcd://ipam:hunter2@etcd:2379/p",
        ] {
            let e = open(url).unwrap_err().to_string();
            assert!(e.contains("credentials in the URL"), "{e}");
            assert!(!e.contains("hunter2"), "{e}");
        }
    }

    #[test]
    fn settings_that_do_not_fit_the_store_are_refused_before_it_is_opened() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("store");
        let mut spec = StoreSpec::plain(&store.display().to_string());
        spec.etcd.ca = Some("/ca.pem".into());
        let e = open_spec(&spec).unwrap_err().to_string();
        assert!(
            e.contains("--etcd-cacert") && e.contains("directory"),
            "{e}"
        );
        assert!(open_existing_spec(&spec).is_err());
        assert!(!store.exists(), "nothing was created");
        spec.url = "etcd+https://127.0.0.1:1".into();
        spec.etcd.ca = None;
        let e = open_spec(&spec).unwrap_err().to_string();
        assert!(e.contains("--etcd-cacert") && e.contains("missing"), "{e}");
    }
}
