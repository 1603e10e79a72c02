//! What a store keeps and promises: one [`Record`] per reserved address, the [`Store`] calls
//! the allocator makes, and the [`StoreError`] of one that cannot be used.

use std::fmt;
use std::io;
use std::net::IpAddr;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// The holder of one reserved address.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// Who holds the address: an IPSet's name, a CNI attachment (`CONTAINER/IFNAME`), or a pool
    /// request's sharing key (or its name when it has none).
    pub owner: String,
    /// The requests that share the address (pool requests with one sharing key); empty when the
    /// owner is the only one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub names: Vec<String>,
    /// The node whose runtime asked for it (a CNI attachment's): a CNI GC, which knows only its
    /// own node's attachments, frees only its own node's reservations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// The pod, `NAMESPACE/NAME`, when the runtime said (CNI_ARGS `K8S_POD_NAMESPACE`,
    /// `K8S_POD_NAME`): for the people reading a listing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod: Option<String>,
    /// When it was reserved, in seconds since the epoch: a GC keeps what is younger than its
    /// grace period (an ADD in flight when the runtime listed its attachments).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<u64>,
}

impl Record {
    /// An address held by `owner` alone.
    pub fn owned_by(owner: &str) -> Self {
        Self {
            owner: owner.to_owned(),
            ..Self::default()
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
    pub fn decode(bytes: &[u8]) -> Result<Self, RecordError> {
        let record: Record =
            serde_json::from_slice(bytes).map_err(|e| RecordError::NotRecord(e.to_string()))?;
        if record.owner.is_empty() {
            return Err(RecordError::NoOwner);
        }
        Ok(record)
    }
}

/// Why stored bytes are no record.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    /// Not the JSON a record is written as.
    #[error("not a reservation record: {0}")]
    NotRecord(String),
    /// A record without an owner.
    #[error("the record names no owner")]
    NoOwner,
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

    /// Whether other processes may claim in this store while one searches it: etcd, shared by
    /// machines, says yes; a directory, locked while a command has it open, says no. A search
    /// of a shared store reads what is free before it claims.
    fn shared(&self) -> bool {
        false
    }

    /// The reserved addresses of `pool` from `from` to `to` (both included), in address order,
    /// at most `limit` of them (the first ones). A shared store answers in one read.
    fn reserved(
        &mut self,
        pool: &str,
        from: IpAddr,
        to: IpAddr,
        limit: usize,
    ) -> Result<Vec<IpAddr>, StoreError> {
        let (from, to) = (crate::range::to_u128(from), crate::range::to_u128(to));
        Ok(self
            .list(pool)?
            .into_iter()
            .map(|(ip, _)| ip)
            .filter(|ip| (from..=to).contains(&crate::range::to_u128(*ip)))
            .take(limit)
            .collect())
    }

    /// Claims the first of `candidates` (in their order) that no one holds for `record`, and
    /// moves the pool's hint to the candidate after it (after the last: the address after it):
    /// which one it took, `None` when every one is held. One transaction on etcd, however many
    /// candidates, so that processes claiming from the same candidates at once each take the
    /// next instead of losing to each other. A hint that could not be set is no failure: the
    /// address is held, and the next search merely starts earlier.
    fn claim_first(
        &mut self,
        pool: &str,
        candidates: &[IpAddr],
        record: &Record,
    ) -> Result<Option<IpAddr>, StoreError> {
        for (i, ip) in candidates.iter().enumerate() {
            if self.claim(pool, *ip, record)? {
                let _ = self.set_next(pool, next_after(candidates, i));
                return Ok(Some(*ip));
            }
        }
        Ok(None)
    }
}

/// Where a pool's hint goes once `candidates[i]` is claimed: the next candidate, or the address
/// after the last one (itself at the very end of the address space).
pub fn next_after(candidates: &[IpAddr], i: usize) -> IpAddr {
    let ip = candidates[i];
    candidates.get(i + 1).copied().unwrap_or_else(|| {
        crate::range::to_u128(ip)
            .checked_add(1)
            .and_then(|n| crate::range::from_u128(n, ip))
            .unwrap_or(ip)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_bad_ones_are_named() {
        let r = Record {
            owner: "key".into(),
            names: vec!["a".into(), "b".into()],
            ..Record::default()
        };
        assert_eq!(Record::decode(&r.encode()).unwrap(), r);
        assert_eq!(Record::owned_by("x").holders(), ["x"]);
        let e = Record::decode(b"{").unwrap_err();
        assert!(matches!(e, RecordError::NotRecord(_)), "{e:?}");
        assert!(e.to_string().contains("not a reservation record"), "{e}");
        let e = Record::decode(br#"{"owner":""}"#).unwrap_err();
        assert_eq!(e, RecordError::NoOwner);
        assert!(e.to_string().contains("no owner"), "{e}");
    }
}
