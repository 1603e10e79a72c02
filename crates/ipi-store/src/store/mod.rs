//! Where reservations live: a directory on one machine ([`mod@file`]), or etcd across machines
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
#[cfg(feature = "etcd")]
mod etcd_options;
pub mod file;
pub mod follow;
mod location;
mod names;
mod record;

#[cfg(not(feature = "etcd"))]
use location::without_etcd;
pub use location::{check, StoreSpec, DEFAULT_DIR, ETCD_SCHEMES};
use location::{locate, Location};
pub use names::{escape, unescape};
pub use record::{Record, Store, StoreError};

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

#[cfg(test)]
mod tests {
    use super::*;

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
