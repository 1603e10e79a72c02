//! The store for many machines: etcd v3, every change one compare-and-swap transaction.
//!
//! ```text
//! PREFIX/pools/POOL/ips/ADDRESS    the address's record (JSON, as Record::encode), the truth
//! PREFIX/pools/POOL/owners/OWNER   the owner's address (text): an index, checked against the record
//! PREFIX/pools/POOL/next           where the next search starts (a hint)
//! ```
//!
//! PREFIX is `/ipi-net/ipam` unless the URL names another; POOL and OWNER are escaped by
//! [`super::escape`]. ADDRESS is the address as fixed-width lower-case hex behind its family,
//! `4-c0000201` for 192.0.2.1 and `6-20010db8000000000000000000000001` for 2001:db8::1, so that
//! etcd's key order is address order.
//!
//! Each change is one transaction whose comparison is what the caller saw: a claim succeeds only
//! if the address key was never created (`create_revision == 0`) and writes the record and the
//! owner's index entry together; a replace or a release succeeds only if the record is still
//! byte for byte the one read, and moves or removes the owner's index entry in the same
//! transaction (only when it still points at that address). Two machines can never both claim
//! one address: etcd orders the transactions and the second one's comparison fails. A request
//! that times out may or may not have been applied; either way the store is consistent, and the
//! same request again finds the holding in place. A value this store never writes is reported as
//! corruption naming the key, and never overwritten.
//!
//! `etcd+https://` is TLS (rustls, through etcd-client's `tls`) trusting only the CA bundle it
//! is given, with a client certificate and a user when [`EtcdAccess`] has them; the files are
//! read, and a PEM file without its marker named, before anything is sent. A password is read
//! from its file as it is needed and is in no message.

use std::fmt;
use std::future::Future;
use std::net::IpAddr;
use std::time::Duration;

use etcd_client::{Compare, CompareOp, GetOptions, KeyValue, KvClient, Txn, TxnOp, TxnOpResponse};
use tokio::runtime::Runtime;

use super::access::EtcdAccess;
use super::etcd_keys::{address_key, address_of, address_value, index_value, pool_of, prefix_end};
use super::etcd_options::connect_options;
use super::names::escape;
use super::record::{next_after, Record, Store, StoreError};

/// The key prefix when the URL names none.
pub const DEFAULT_PREFIX: &str = "/ipi-net/ipam";

/// How long one request may take, waiting for a connection included.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// How many keys one page of a listing reads (each page well under gRPC's 4 MiB message limit).
const PAGE: i64 = 2_000;

/// A connection to etcd whose requests are futures on the caller's runtime (its background
/// tasks live there too): what [`EtcdStore`] runs on a runtime of its own, and what a follower
/// ([`super::follow`]) runs on a daemon's.
pub struct EtcdClient {
    /// The endpoints as given, for messages, and what to add to a failure to reach them.
    peer: Peer,
    /// Every key starts with this (no trailing `/`).
    prefix: String,
    kv: KvClient,
    watch: etcd_client::WatchClient,
}

impl fmt::Debug for EtcdClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EtcdClient")
            .field("endpoint", &self.peer.endpoint)
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

/// A connection to etcd. Calls block: the store owns a single-threaded runtime, and so must
/// not be used inside another one (a follower uses an [`EtcdClient`]).
pub struct EtcdStore {
    client: EtcdClient,
    // Dropped last: the client's background tasks live on it.
    runtime: Runtime,
}

impl fmt::Debug for EtcdStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EtcdStore")
            .field("endpoint", &self.client.peer.endpoint)
            .field("prefix", &self.client.prefix)
            .finish_non_exhaustive()
    }
}

/// The parts of `HOST:PORT[,HOST:PORT...][/PREFIX]`: the endpoints and the prefix.
fn parse_rest(url: &str, rest: &str) -> Result<(Vec<String>, String), StoreError> {
    let bad = |why: String| StoreError::Url {
        url: url.to_owned(),
        why,
    };
    let (hosts, prefix) = match rest.find('/') {
        Some(i) => (&rest[..i], rest[i..].trim_end_matches('/')),
        None => (rest, DEFAULT_PREFIX),
    };
    if prefix.is_empty() {
        return Err(bad(format!(
            "an empty key prefix (leave it out for the default {DEFAULT_PREFIX})"
        )));
    }
    let mut endpoints = Vec::new();
    for host in hosts.split(',') {
        let port = host
            .rsplit_once(':')
            .filter(|(name, _)| !name.is_empty())
            .and_then(|(_, port)| port.parse::<u16>().ok())
            .filter(|port| *port != 0);
        if port.is_none() {
            return Err(bad(format!(
                "{host:?} is not HOST:PORT (etcd[+https]://HOST:PORT[,HOST:PORT...][/PREFIX])"
            )));
        }
        endpoints.push(host.to_owned());
    }
    Ok((endpoints, prefix.to_owned()))
}

/// Why a request failed, in words: the gRPC status and its causes ("tcp connect error:
/// Connection refused (os error 111)").
fn describe(e: &etcd_client::Error) -> String {
    let (mut text, mut cause, code) = match e {
        etcd_client::Error::GRpcStatus(s) => (
            s.message().to_owned(),
            std::error::Error::source(s),
            Some(s.code()),
        ),
        other => (other.to_string(), std::error::Error::source(other), None),
    };
    while let Some(c) = cause {
        let more = c.to_string();
        if !text.contains(&more) {
            text = if text.is_empty() {
                more
            } else {
                format!("{text}: {more}")
            };
        }
        cause = c.source();
    }
    match code {
        Some(code) => format!("{text} ({code:?})"),
        None => text,
    }
}

/// The endpoints of a store, for messages, and a hint for a connection that fails.
struct Peer {
    endpoint: String,
    /// Added to a transport error: over TLS with no client certificate, etcd closes the
    /// connection of a client that presents none once the handshake is done, with no more said.
    hint: Option<String>,
}

/// One request, within [`REQUEST_TIMEOUT`].
async fn run<T>(
    peer: &Peer,
    what: impl FnOnce() -> String,
    request: impl Future<Output = Result<T, etcd_client::Error>>,
) -> Result<T, StoreError> {
    let fail = |why: String| StoreError::Etcd {
        endpoint: peer.endpoint.clone(),
        why,
    };
    match tokio::time::timeout(REQUEST_TIMEOUT, request).await {
        Ok(Ok(answer)) => Ok(answer),
        Ok(Err(e)) => {
            let mut why = format!("{}: {}", what(), describe(&e));
            if let Some(hint) = peer
                .hint
                .as_ref()
                .filter(|_| why.contains("transport error"))
            {
                why = format!("{why}; {hint}");
            }
            Err(fail(why))
        }
        Err(_) => Err(fail(format!(
            "{}: no answer within {} s (is etcd running and reachable?)",
            what(),
            REQUEST_TIMEOUT.as_secs()
        ))),
    }
}

impl EtcdStore {
    /// [`EtcdClient::connect`], on a runtime of the store's own.
    pub fn connect(
        url: &str,
        rest: &str,
        tls: bool,
        access: &EtcdAccess,
    ) -> Result<Self, StoreError> {
        let runtime = ipi_core::service::runtime().map_err(|e| StoreError::Etcd {
            endpoint: rest.split('/').next().unwrap_or(rest).to_owned(),
            why: format!("cannot start the client's runtime: {e}"),
        })?;
        let client = runtime.block_on(EtcdClient::connect(url, rest, tls, access))?;
        Ok(Self { client, runtime })
    }
}

impl EtcdClient {
    /// Connects to the endpoints in `rest` (`HOST:PORT[,HOST:PORT...][/PREFIX]`), over TLS
    /// when `tls` (`etcd+https://`), with the files and credentials of `access` (checked by the
    /// caller against the scheme: [`super::check`]); `url` is the whole store URL for messages.
    /// With a user, the connection is made (and the user authenticated) here; otherwise by the
    /// first request.
    pub async fn connect(
        url: &str,
        rest: &str,
        tls: bool,
        access: &EtcdAccess,
    ) -> Result<Self, StoreError> {
        let (endpoints, prefix) = parse_rest(url, rest)?;
        let peer = Peer {
            endpoint: endpoints.join(","),
            hint: (tls && access.cert.is_none()).then(|| {
                format!(
                    "etcd may want a client certificate, and none was given ({}, {})",
                    access.names.cert, access.names.key
                )
            }),
        };
        let options = connect_options(access)?;
        let scheme = if tls { "https" } else { "http" };
        let urls: Vec<String> = endpoints
            .iter()
            .map(|e| format!("{scheme}://{e}"))
            .collect();
        let client = run(
            &peer,
            || "connecting".to_owned(),
            etcd_client::Client::connect(&urls, Some(options)),
        )
        .await?;
        Ok(Self {
            peer,
            prefix,
            kv: client.kv_client(),
            watch: client.watch_client(),
        })
    }

    fn pools_prefix(&self) -> String {
        format!("{}/pools/", self.prefix)
    }

    fn pool_prefix(&self, pool: &str) -> String {
        format!("{}/pools/{}/", self.prefix, escape(pool))
    }

    /// Starts watching the records of `pool`: every change after this call is seen by
    /// [`Self::wait_change`].
    pub async fn watch_pool(&mut self, pool: &str) -> Result<etcd_client::WatchStream, StoreError> {
        let prefix = self.ips_prefix(pool);
        let options = etcd_client::WatchOptions::new().with_prefix();
        run(
            &self.peer,
            || format!("watching pool {pool:?}"),
            self.watch.watch(prefix, Some(options)),
        )
        .await
    }

    /// Waits up to `timeout` for a change seen by `stream`: `true` for one, `false` for none.
    pub async fn wait_change(
        &self,
        stream: &mut etcd_client::WatchStream,
        timeout: Duration,
    ) -> Result<bool, StoreError> {
        let fail = |why: String| StoreError::Etcd {
            endpoint: self.peer.endpoint.clone(),
            why,
        };
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let message = tokio::time::timeout_at(deadline, stream.message()).await;
            match message {
                Err(_) => return Ok(false),
                Ok(Err(e)) => return Err(fail(format!("watching: {}", describe(&e)))),
                Ok(Ok(None)) => return Err(fail("the watch was closed".into())),
                Ok(Ok(Some(r))) if r.canceled() => {
                    return Err(fail(format!(
                        "the watch was cancelled: {}",
                        r.cancel_reason()
                    )))
                }
                // The first answer says the watch was created, with no events.
                Ok(Ok(Some(r))) if r.events().is_empty() => {}
                Ok(Ok(Some(_))) => return Ok(true),
            }
        }
    }

    fn ips_prefix(&self, pool: &str) -> String {
        format!("{}ips/", self.pool_prefix(pool))
    }

    fn ip_key(&self, pool: &str, ip: IpAddr) -> String {
        format!("{}{}", self.ips_prefix(pool), address_key(ip))
    }

    fn owner_key(&self, pool: &str, owner: &str) -> String {
        format!("{}owners/{}", self.pool_prefix(pool), escape(owner))
    }

    fn next_key(&self, pool: &str) -> String {
        format!("{}next", self.pool_prefix(pool))
    }

    fn corrupt(&self, key: &[u8], why: impl std::fmt::Display) -> StoreError {
        StoreError::Corrupt {
            place: format!(
                "etcd {} key {}",
                self.peer.endpoint,
                String::from_utf8_lossy(key)
            ),
            why: why.to_string(),
        }
    }

    /// The record an address key holds; corruption names the key and the address.
    /// The address of record key `kv` under `prefix` (`.../ips/`); corruption when it names none.
    fn address_in(&self, prefix: &str, kv: &KeyValue) -> Result<IpAddr, StoreError> {
        address_of(prefix, kv.key())
            .ok_or_else(|| self.corrupt(kv.key(), "not an address key (4-HEX8 or 6-HEX32)"))
    }

    fn decode(&self, ip: IpAddr, kv: &KeyValue) -> Result<Record, StoreError> {
        Record::decode(kv.value()).map_err(|why| StoreError::Corrupt {
            place: format!(
                "etcd {} key {} ({ip})",
                self.peer.endpoint,
                String::from_utf8_lossy(kv.key())
            ),
            why: why.to_string(),
        })
    }

    /// The value of one key, if it exists.
    async fn get(
        &mut self,
        key: &str,
        what: impl FnOnce() -> String,
    ) -> Result<Option<KeyValue>, StoreError> {
        let mut answer = run(&self.peer, what, self.kv.get(key, None)).await?;
        Ok(answer.take_kvs().into_iter().next())
    }

    /// Runs a transaction whose failure branch reads the address key of `ip`: `Ok(true)` when
    /// the comparison held; `Ok(false)` when it did not and the key holds a record (or nothing);
    /// corruption when it holds something else.
    async fn change(
        &mut self,
        ip: IpAddr,
        txn: Txn,
        what: impl FnOnce() -> String,
    ) -> Result<bool, StoreError> {
        let answer = run(&self.peer, what, self.kv.txn(txn)).await?;
        if answer.succeeded() {
            return Ok(true);
        }
        for response in answer.op_responses() {
            if let TxnOpResponse::Get(get) = response {
                if let Some(kv) = get.kvs().first() {
                    self.decode(ip, kv)?;
                }
            }
        }
        Ok(false)
    }

    /// A nested transaction removing `owner`'s index entry if it still points at `ip` (it
    /// may point at another address the owner took since).
    fn drop_index(&self, pool: &str, owner: &str, ip: IpAddr) -> TxnOp {
        let key = self.owner_key(pool, owner);
        TxnOp::txn(
            Txn::new()
                .when([Compare::value(
                    key.clone(),
                    CompareOp::Equal,
                    index_value(ip),
                )])
                .and_then([TxnOp::delete(key, None)]),
        )
    }

    /// Every key-value in `[from, end)`, read page by page at one revision (one consistent
    /// view, however many pages).
    async fn range(
        &mut self,
        from: &str,
        end: Vec<u8>,
        keys_only: bool,
        limit: Option<i64>,
        what: &(dyn Fn() -> String + Sync),
    ) -> Result<Vec<KeyValue>, StoreError> {
        let mut out = Vec::new();
        let mut start = from.as_bytes().to_vec();
        let mut revision = 0;
        loop {
            let page = limit.map_or(PAGE, |l| l.min(PAGE));
            let mut options = GetOptions::new()
                .with_range(end.clone())
                .with_limit(page)
                .with_revision(revision);
            if keys_only {
                options = options.with_keys_only();
            }
            let mut answer =
                run(&self.peer, what, self.kv.get(start.clone(), Some(options))).await?;
            if revision == 0 {
                revision = answer.header().map_or(0, |h| h.revision());
            }
            let more = answer.more();
            let kvs = answer.take_kvs();
            let Some(last) = kvs.last() else {
                return Ok(out);
            };
            start = last.key().to_vec();
            start.push(0);
            out.extend(kvs);
            if !more || limit.is_some_and(|l| out.len() >= usize::try_from(l).unwrap_or(0)) {
                return Ok(out);
            }
        }
    }
}

/// The [`Store`] calls, as futures.
impl EtcdClient {
    pub async fn owned(
        &mut self,
        pool: &str,
        owner: &str,
    ) -> Result<Option<(IpAddr, Record)>, StoreError> {
        let key = self.owner_key(pool, owner);
        let Some(kv) = self
            .get(&key, || {
                format!("reading what {owner:?} holds in pool {pool:?}")
            })
            .await?
        else {
            return Ok(None);
        };
        let ip = address_value(kv.value()).map_err(|why| self.corrupt(kv.key(), why))?;
        Ok(self
            .record(pool, ip)
            .await?
            .filter(|r| r.owner == owner)
            .map(|r| (ip, r)))
    }

    pub async fn record(&mut self, pool: &str, ip: IpAddr) -> Result<Option<Record>, StoreError> {
        let key = self.ip_key(pool, ip);
        self.get(&key, || format!("reading {ip} in pool {pool:?}"))
            .await?
            .map(|kv| self.decode(ip, &kv))
            .transpose()
    }

    pub async fn claim(
        &mut self,
        pool: &str,
        ip: IpAddr,
        record: &Record,
    ) -> Result<bool, StoreError> {
        let key = self.ip_key(pool, ip);
        let txn = Txn::new()
            .when([Compare::create_revision(key.clone(), CompareOp::Equal, 0)])
            .and_then([
                TxnOp::put(key.clone(), record.encode(), None),
                TxnOp::put(self.owner_key(pool, &record.owner), index_value(ip), None),
            ])
            .or_else([TxnOp::get(key, None)]);
        self.change(ip, txn, || format!("claiming {ip} in pool {pool:?}"))
            .await
    }

    /// Claims the first free one of `candidates` in one transaction: for each in turn, if no
    /// one holds it, its record, the owner's index entry and the hint; else (reading what holds
    /// it) the same for the next, as a transaction nested in the failure branch.
    pub async fn claim_first(
        &mut self,
        pool: &str,
        candidates: &[IpAddr],
        record: &Record,
    ) -> Result<Option<IpAddr>, StoreError> {
        let mut chain: Option<Txn> = None;
        for (i, ip) in candidates.iter().enumerate().rev() {
            let key = self.ip_key(pool, *ip);
            let next = next_after(candidates, i);
            let mut otherwise = vec![TxnOp::get(key.clone(), None)];
            otherwise.extend(chain.take().map(TxnOp::txn));
            chain = Some(
                Txn::new()
                    .when([Compare::create_revision(key.clone(), CompareOp::Equal, 0)])
                    .and_then([
                        TxnOp::put(key, record.encode(), None),
                        TxnOp::put(self.owner_key(pool, &record.owner), index_value(*ip), None),
                        TxnOp::put(self.next_key(pool), index_value(next), None),
                    ])
                    .or_else(otherwise),
            );
        }
        let Some(txn) = chain else {
            return Ok(None);
        };
        let first = candidates[0];
        let mut answer = run(
            &self.peer,
            || {
                format!(
                    "claiming one of {} addresses from {first} in pool {pool:?}",
                    candidates.len()
                )
            },
            self.kv.txn(txn),
        )
        .await?;
        for ip in candidates {
            if answer.succeeded() {
                return Ok(Some(*ip));
            }
            let mut nested = None;
            for response in answer.op_responses() {
                match response {
                    TxnOpResponse::Get(get) => {
                        if let Some(kv) = get.kvs().first() {
                            self.decode(*ip, kv)?;
                        }
                    }
                    TxnOpResponse::Txn(inner) => nested = Some(inner),
                    _ => {}
                }
            }
            match nested {
                Some(inner) => answer = inner,
                None => break,
            }
        }
        Ok(None)
    }

    /// The reserved addresses from `from` to `to`, at most `limit`: one keys-only read, and a
    /// serializable one (no round of the cluster: what it says is only where a claim is tried,
    /// and the claim's transaction decides).
    pub async fn reserved(
        &mut self,
        pool: &str,
        from: IpAddr,
        to: IpAddr,
        limit: usize,
    ) -> Result<Vec<IpAddr>, StoreError> {
        let prefix = self.ips_prefix(pool);
        let mut end = self.ip_key(pool, to).into_bytes();
        end.push(0);
        let options = GetOptions::new()
            .with_range(end)
            .with_limit(i64::try_from(limit).unwrap_or(i64::MAX))
            .with_keys_only()
            .with_serializable();
        let what = || format!("reading what is reserved from {from} in pool {pool:?}");
        let answer = run(
            &self.peer,
            what,
            self.kv.get(self.ip_key(pool, from), Some(options)),
        )
        .await?;
        answer
            .kvs()
            .iter()
            .map(|kv| self.address_in(&prefix, kv))
            .collect()
    }

    pub async fn replace(
        &mut self,
        pool: &str,
        ip: IpAddr,
        old: &Record,
        new: &Record,
    ) -> Result<bool, StoreError> {
        let key = self.ip_key(pool, ip);
        let mut then = vec![
            TxnOp::put(key.clone(), new.encode(), None),
            TxnOp::put(self.owner_key(pool, &new.owner), index_value(ip), None),
        ];
        if old.owner != new.owner {
            then.push(self.drop_index(pool, &old.owner, ip));
        }
        let txn = Txn::new()
            .when([Compare::value(key.clone(), CompareOp::Equal, old.encode())])
            .and_then(then)
            .or_else([TxnOp::get(key, None)]);
        self.change(ip, txn, || format!("changing {ip} in pool {pool:?}"))
            .await
    }

    pub async fn free(&mut self, pool: &str, ip: IpAddr, old: &Record) -> Result<bool, StoreError> {
        let key = self.ip_key(pool, ip);
        let txn = Txn::new()
            .when([Compare::value(key.clone(), CompareOp::Equal, old.encode())])
            .and_then([
                TxnOp::delete(key.clone(), None),
                self.drop_index(pool, &old.owner, ip),
            ])
            .or_else([TxnOp::get(key, None)]);
        self.change(ip, txn, || format!("freeing {ip} in pool {pool:?}"))
            .await
    }

    pub async fn list(&mut self, pool: &str) -> Result<Vec<(IpAddr, Record)>, StoreError> {
        let prefix = self.ips_prefix(pool);
        let kvs = self
            .range(&prefix, prefix_end(&prefix), false, None, &|| {
                format!("listing pool {pool:?}")
            })
            .await?;
        let mut out = Vec::with_capacity(kvs.len());
        for kv in &kvs {
            let ip = self.address_in(&prefix, kv)?;
            out.push((ip, self.decode(ip, kv)?));
        }
        // etcd's key order puts every IPv4 address first; the file store orders by number.
        out.sort_by_key(|(ip, _)| crate::range::to_u128(*ip));
        Ok(out)
    }

    pub async fn pools(&mut self) -> Result<Vec<String>, StoreError> {
        // One key per pool: read the first key, then skip past that pool's keys, instead of
        // reading every key of every pool.
        let prefix = self.pools_prefix();
        let end = prefix_end(&prefix);
        let mut out = Vec::new();
        let mut from = prefix.clone();
        loop {
            let kvs = self
                .range(&from, end.clone(), true, Some(1), &|| {
                    "listing pools".to_owned()
                })
                .await?;
            let Some(kv) = kvs.first() else {
                // Escaping changes the order ('%' sorts before '/').
                out.sort();
                return Ok(out);
            };
            let (pool, segment) = pool_of(&prefix, kv.key()).ok_or_else(|| {
                self.corrupt(kv.key(), "not under a pool (PREFIX/pools/POOL/...)")
            })?;
            out.push(pool);
            // '0' follows '/': the first key after every key of this pool.
            from = format!("{prefix}{segment}0");
        }
    }

    pub async fn next(&mut self, pool: &str) -> Result<Option<IpAddr>, StoreError> {
        let key = self.next_key(pool);
        // Serializable: a hint need not be the latest.
        let options = GetOptions::new().with_serializable();
        let what = || format!("reading the next hint of pool {pool:?}");
        let mut answer = run(&self.peer, what, self.kv.get(key, Some(options))).await?;
        let Some(kv) = answer.take_kvs().into_iter().next() else {
            return Ok(None);
        };
        address_value(kv.value())
            .map(Some)
            .map_err(|why| self.corrupt(kv.key(), why))
    }

    pub async fn set_next(&mut self, pool: &str, ip: IpAddr) -> Result<(), StoreError> {
        let key = self.next_key(pool);
        run(
            &self.peer,
            || format!("setting the next hint of pool {pool:?}"),
            self.kv.put(key, index_value(ip), None),
        )
        .await
        .map(drop)
    }
}

impl Store for EtcdStore {
    fn owned(&mut self, pool: &str, owner: &str) -> Result<Option<(IpAddr, Record)>, StoreError> {
        self.runtime.block_on(self.client.owned(pool, owner))
    }

    fn record(&mut self, pool: &str, ip: IpAddr) -> Result<Option<Record>, StoreError> {
        self.runtime.block_on(self.client.record(pool, ip))
    }

    fn claim(&mut self, pool: &str, ip: IpAddr, record: &Record) -> Result<bool, StoreError> {
        self.runtime.block_on(self.client.claim(pool, ip, record))
    }

    fn shared(&self) -> bool {
        true
    }

    fn reserved(
        &mut self,
        pool: &str,
        from: IpAddr,
        to: IpAddr,
        limit: usize,
    ) -> Result<Vec<IpAddr>, StoreError> {
        self.runtime
            .block_on(self.client.reserved(pool, from, to, limit))
    }

    fn claim_first(
        &mut self,
        pool: &str,
        candidates: &[IpAddr],
        record: &Record,
    ) -> Result<Option<IpAddr>, StoreError> {
        self.runtime
            .block_on(self.client.claim_first(pool, candidates, record))
    }

    fn replace(
        &mut self,
        pool: &str,
        ip: IpAddr,
        old: &Record,
        new: &Record,
    ) -> Result<bool, StoreError> {
        self.runtime
            .block_on(self.client.replace(pool, ip, old, new))
    }

    fn free(&mut self, pool: &str, ip: IpAddr, old: &Record) -> Result<bool, StoreError> {
        self.runtime.block_on(self.client.free(pool, ip, old))
    }

    fn list(&mut self, pool: &str) -> Result<Vec<(IpAddr, Record)>, StoreError> {
        self.runtime.block_on(self.client.list(pool))
    }

    fn pools(&mut self) -> Result<Vec<String>, StoreError> {
        self.runtime.block_on(self.client.pools())
    }

    fn next(&mut self, pool: &str) -> Result<Option<IpAddr>, StoreError> {
        self.runtime.block_on(self.client.next(pool))
    }

    fn set_next(&mut self, pool: &str, ip: IpAddr) -> Result<(), StoreError> {
        self.runtime.block_on(self.client.set_next(pool, ip))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_endpoints_and_a_prefix() {
        let ok = |rest: &str| parse_rest("etcd://x", rest).unwrap();
        assert_eq!(
            ok("127.0.0.1:2379"),
            (vec!["127.0.0.1:2379".into()], DEFAULT_PREFIX.into())
        );
        assert_eq!(
            ok("a:1,[::1]:2/my/ipam/"),
            (vec!["a:1".into(), "[::1]:2".into()], "/my/ipam".into())
        );
        for bad in ["", "host", ":1", "a:1,", "a:x", "a:0", "a:1/", "a:99999"] {
            let e = parse_rest("etcd://bad", bad).unwrap_err().to_string();
            assert!(e.contains("etcd://bad"), "{bad}: {e}");
        }
    }
}
