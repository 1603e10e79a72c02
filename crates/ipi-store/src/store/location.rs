//! Where a store is: its URL (a directory, `file://`, `etcd://`, `etcd+https://`) and the etcd
//! settings that go with it, checked against each other before anything is opened.

use std::path::Path;

use super::access::EtcdAccess;
use super::record::StoreError;

/// Where the store is when none is named: a directory for one machine.
pub const DEFAULT_DIR: &str = "/var/lib/ipi-net/ipam";

/// A store and how to get into it: its URL and, for etcd, the TLS files and credentials.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreSpec {
    /// A directory, `file://PATH`, `etcd://...` or `etcd+https://...`.
    pub url: String,
    /// The etcd settings (none for a directory or a plaintext etcd without authentication).
    pub etcd: EtcdAccess,
}

impl StoreSpec {
    /// The store at `url`, with no etcd settings.
    pub fn plain(url: &str) -> Self {
        Self {
            url: url.to_owned(),
            etcd: EtcdAccess::default(),
        }
    }
}

/// Where a store URL points.
pub(super) enum Location<'a> {
    /// etcd: the endpoints and prefix after `etcd://` or `etcd+https://`, and whether it is the
    /// latter.
    #[cfg_attr(not(feature = "etcd"), allow(dead_code))]
    Etcd { rest: &'a str, tls: bool },
    /// A directory.
    Dir(&'a Path),
}

/// The schemes of etcd store URLs: plaintext, and TLS.
pub const ETCD_SCHEMES: [(&str, bool); 2] = [("etcd://", false), ("etcd+https://", true)];

/// Where `url` points; an unknown scheme, no path, or credentials in it are refused.
pub(super) fn locate(url: &str) -> Result<Location<'_>, StoreError> {
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

/// Whether the etcd settings of `spec` fit its store (see [`EtcdAccess::check`]):
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

/// The error for an etcd URL in a build without the `etcd` feature (the fuzz targets').
#[cfg(not(feature = "etcd"))]
pub(super) fn without_etcd(url: &str) -> StoreError {
    StoreError::Url {
        url: url.to_owned(),
        why: "this build has no etcd store (cargo feature etcd)".into(),
    }
}
