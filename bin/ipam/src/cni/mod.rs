//! ipam as a CNI IPAM plugin (CNI spec 1.1.0; configs and results of 0.3.0 to 1.1.0).
//!
//! The runtime (or the main plugin delegating to us) sets `CNI_COMMAND` and friends and writes
//! the network config on stdin ([`config`]). Each range set of the config is a pool of the
//! store, `cni/NETWORK/INDEX`, handing out addresses round-robin as host-local does; the owner of
//! an address is the attachment, `CONTAINERID/IFNAME`. ADD prints the result, DEL, CHECK, GC and
//! STATUS print nothing on success; every failure prints a CNI error object on stdout and exits 1
//! (codes in [`CniError`]).
//!
//! Everything that can be wrong with the environment or the config is found before the store
//! is opened, so a bad call never changes the store (nor creates it).

pub mod config;
pub mod gc;

use std::collections::HashSet;
use std::io::{Read, Write};
use std::net::IpAddr;
use std::process::ExitCode;

use ipi_store::store::{self, Record, Store, StoreError};
use serde::Serialize;

use crate::alloc::{self, AllocError, Held, Pool};
use config::{ConfigError, Dns, NetConf, Route};

/// CNI error codes (spec "Error codes"), and the one host-local uses for everything else.
pub mod code {
    /// Incompatible CNI version.
    pub const INCOMPATIBLE_VERSION: u32 = 1;
    /// Invalid necessary environment variables.
    pub const INVALID_ENV: u32 = 4;
    /// I/O failure.
    pub const IO: u32 = 5;
    /// Failed to decode content.
    pub const DECODE: u32 = 6;
    /// Invalid network config.
    pub const INVALID_CONFIG: u32 = 7;
    /// Try again later.
    pub const TRY_AGAIN: u32 = 11;
    /// What the CNI library (and so host-local and whereabouts) reports for any other error:
    /// an exhausted range, a missing attachment on CHECK, a requested address taken.
    pub const INTERNAL: u32 = 999;
}

/// A failed command: the CNI error object.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("CNI error {code}: {msg}")]
pub struct CniError {
    /// The CNI error code ([`code`]).
    pub code: u32,
    /// What went wrong, and where.
    pub msg: String,
    /// More about it (may be empty).
    pub details: String,
}

impl CniError {
    fn new(code: u32, msg: impl Into<String>) -> Self {
        Self {
            code,
            msg: msg.into(),
            details: String::new(),
        }
    }
}

impl From<ConfigError> for CniError {
    fn from(e: ConfigError) -> Self {
        Self {
            code: e.code(),
            details: e.details().to_owned(),
            msg: e.to_string(),
        }
    }
}

impl From<StoreError> for CniError {
    fn from(e: StoreError) -> Self {
        let code = match e {
            // Another machine or a restarting etcd: the runtime's retry may well succeed.
            StoreError::Etcd { .. } => code::TRY_AGAIN,
            StoreError::Url { .. } | StoreError::Setting { .. } => code::INVALID_CONFIG,
            StoreError::Io { .. } | StoreError::Corrupt { .. } => code::IO,
        };
        Self::new(code, format!("store: {e}"))
    }
}

impl From<AllocError> for CniError {
    fn from(e: AllocError) -> Self {
        match e {
            AllocError::Store(s) => s.into(),
            AllocError::Contended { .. } => Self::new(code::TRY_AGAIN, e.to_string()),
            AllocError::Exhausted { .. }
            | AllocError::Refused { .. }
            | AllocError::Taken { .. }
            // The plugin never probes (a CNI ADD has no interface to probe from yet).
            | AllocError::Probe(_) => Self::new(code::INTERNAL, e.to_string()),
        }
    }
}

/// The commands of CNI 1.1.0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// Hand out addresses.
    Add,
    /// Release them.
    Del,
    /// Verify they are still held.
    Check,
    /// Release every attachment not in the valid list.
    Gc,
    /// Whether the plugin is ready.
    Status,
    /// Which versions the plugin speaks.
    Version,
}

impl Command {
    fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "ADD" => Self::Add,
            "DEL" => Self::Del,
            "CHECK" => Self::Check,
            "GC" => Self::Gc,
            "STATUS" => Self::Status,
            "VERSION" => Self::Version,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            Self::Add => "ADD",
            Self::Del => "DEL",
            Self::Check => "CHECK",
            Self::Gc => "GC",
            Self::Status => "STATUS",
            Self::Version => "VERSION",
        }
    }

    /// The oldest config version that allows the command (the CNI library's gates).
    fn needs(self) -> &'static str {
        match self {
            Self::Check => "0.4.0",
            Self::Gc | Self::Status => "1.1.0",
            _ => "0.3.0",
        }
    }

    /// The variables the command needs, as the CNI library requires them.
    fn required(self) -> &'static [&'static str] {
        match self {
            Self::Add | Self::Check => &["CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME", "CNI_PATH"],
            Self::Del => &["CNI_CONTAINERID", "CNI_IFNAME", "CNI_PATH"],
            Self::Gc | Self::Status => &["CNI_PATH"],
            Self::Version => &[],
        }
    }
}

/// What a call is about, from the environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    /// `CNI_COMMAND`.
    pub command: Command,
    /// `CNI_CONTAINERID/CNI_IFNAME`: the owner of the attachment's addresses.
    pub owner: String,
    /// Addresses asked for with `CNI_ARGS` `IP=A[,B]`.
    pub requested: Vec<IpAddr>,
    /// The pod, `NAMESPACE/NAME`, from `CNI_ARGS` `K8S_POD_NAMESPACE` and `K8S_POD_NAME`
    /// (`NAME` alone when no namespace is given, as podman gives its container's name).
    pub pod: Option<String>,
    /// This node: `IPAM_NODE_NAME`, else the host name. Its reservations are the ones its GC
    /// may free.
    pub node: String,
}

/// What `CNI_ARGS` says that ipam reads.
#[derive(Debug, Default)]
struct Args {
    ips: Vec<IpAddr>,
    namespace: Option<String>,
    pod: Option<String>,
}

/// Reads the call from environment variables (`get` is `std::env::var` outside tests).
pub fn call_from(get: impl Fn(&str) -> Option<String>) -> Result<Call, CniError> {
    let invalid = |msg: String| CniError::new(code::INVALID_ENV, msg);
    let text = get("CNI_COMMAND").unwrap_or_default();
    let command = match Command::parse(&text) {
        Some(c) => c,
        None if text.is_empty() => return Err(invalid("CNI_COMMAND is not set".into())),
        None => {
            return Err(invalid(format!(
                "CNI_COMMAND={text:?}: not ADD, DEL, CHECK, GC, STATUS or VERSION"
            )))
        }
    };
    let missing: Vec<&str> = command
        .required()
        .iter()
        .copied()
        .filter(|v| get(v).is_none_or(|s| s.is_empty()))
        .collect();
    if !missing.is_empty() {
        return Err(invalid(format!(
            "{} needs {} in the environment",
            command.name(),
            missing.join(", ")
        )));
    }
    let mut owner = String::new();
    if matches!(command, Command::Add | Command::Check | Command::Del) {
        let id = get("CNI_CONTAINERID").unwrap_or_default();
        let ifname = get("CNI_IFNAME").unwrap_or_default();
        check_container_id(&id).map_err(|why| invalid(format!("CNI_CONTAINERID={id:?}: {why}")))?;
        check_ifname(&ifname).map_err(|why| invalid(format!("CNI_IFNAME={ifname:?}: {why}")))?;
        owner = format!("{id}/{ifname}");
    }
    let args = cni_args(&get("CNI_ARGS").unwrap_or_default()).map_err(invalid)?;
    let node = gc::this_node(get("IPAM_NODE_NAME"));
    Ok(Call {
        command,
        owner,
        requested: args.ips,
        pod: match (args.namespace, args.pod) {
            (Some(ns), Some(name)) => Some(format!("{ns}/{name}")),
            // podman passes the container's name alone.
            (None, name) => name,
            (Some(_), None) => None,
        },
        node,
    })
}

/// libcni's rule: letters, digits, `_ . -`, a letter or digit first.
fn check_container_id(id: &str) -> Result<(), &'static str> {
    let ok = id
        .bytes()
        .enumerate()
        .all(|(i, b)| b.is_ascii_alphanumeric() || (i > 0 && matches!(b, b'_' | b'.' | b'-')));
    if ok {
        Ok(())
    } else {
        Err("not a container id (letters, digits, _ . - and a letter or digit first)")
    }
}

/// The kernel's rule for interface names (what libcni checks).
fn check_ifname(name: &str) -> Result<(), &'static str> {
    if name.len() > 15 {
        return Err("longer than 15 bytes");
    }
    if name == "." || name == ".." {
        return Err("not an interface name");
    }
    if name
        .bytes()
        .any(|b| b == b'/' || b == b':' || b.is_ascii_whitespace())
    {
        return Err("holds a '/', ':' or white space");
    }
    Ok(())
}

/// `CNI_ARGS`: `KEY=VALUE` pairs separated by `;`. `IP=A[,B]` asks for addresses (host-local's
/// key, CIDRs read too); any other key is refused unless `IgnoreUnknown` is 1 or true, as the
/// CNI library does (Kubernetes runtimes always set it).
fn cni_args(args: &str) -> Result<Args, String> {
    let pairs: Vec<(&str, &str)> = args
        .split(';')
        .filter(|p| !p.is_empty())
        .map(|p| {
            p.split_once('=')
                .ok_or_else(|| format!("CNI_ARGS: {p:?} is not KEY=VALUE"))
        })
        .collect::<Result<_, _>>()?;
    let ignore_unknown = pairs.iter().any(|(k, v)| {
        *k == "IgnoreUnknown" && matches!(v.to_ascii_lowercase().as_str(), "1" | "true")
    });
    let mut out = Args::default();
    for (key, value) in pairs {
        match key {
            "IP" => {
                for item in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                    let text = item.split_once('/').map_or(item, |(a, _)| a);
                    let ip = text
                        .parse()
                        .map_err(|_| format!("CNI_ARGS: IP={item:?} is not an IP address"))?;
                    out.ips.push(ip);
                }
            }
            // Unknown to host-local, as to every plugin: read only once IgnoreUnknown lets
            // them by (kubelet and CRI-O always send it with them).
            "K8S_POD_NAMESPACE" if ignore_unknown => out.namespace = Some(value.to_owned()),
            "K8S_POD_NAME" if ignore_unknown => out.pod = Some(value.to_owned()),
            "IgnoreUnknown" => {}
            _ if ignore_unknown => {}
            _ => {
                return Err(format!(
                    "CNI_ARGS: unknown key {key:?} (add IgnoreUnknown=1 to pass it by)"
                ))
            }
        }
    }
    Ok(out)
}

/// Runs one CNI command from the environment and stdin; prints the result or error object.
pub fn main() -> ExitCode {
    let out = run(|v| std::env::var(v).ok(), &mut std::io::stdin().lock());
    let mut stdout = std::io::stdout().lock();
    let text = match &out {
        Ok(text) => text.clone(),
        Err((version, e)) => error_json(version, e),
    };
    // A runtime that closed our stdout can read no answer: the exit status is all it gets.
    let _ = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush());
    if out.is_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// The error object, in the config's version when it was read (else ours).
pub fn error_json(version: &str, e: &CniError) -> String {
    #[derive(Serialize)]
    struct Obj<'a> {
        #[serde(rename = "cniVersion")]
        cni_version: &'a str,
        code: u32,
        msg: &'a str,
        details: &'a str,
    }
    let obj = Obj {
        cni_version: version,
        code: e.code,
        msg: &e.msg,
        details: &e.details,
    };
    let mut text = serde_json::to_string(&obj).unwrap_or_default();
    text.push('\n');
    text
}

/// The largest network config read from stdin (a real one is a few KiB).
const MAX_CONFIG: u64 = 1 << 20;

/// One call: what to print on success, or the version to answer in and the error.
pub fn run(
    get: impl Fn(&str) -> Option<String>,
    stdin: &mut dyn Read,
) -> Result<String, (String, CniError)> {
    let ours = |e: CniError| (config::CURRENT.to_owned(), e);
    let call = call_from(&get).map_err(ours)?;
    if call.command == Command::Version {
        return Ok(version_json());
    }
    let mut bytes = Vec::new();
    stdin
        .take(MAX_CONFIG + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| {
            ours(CniError::new(
                code::IO,
                format!("reading the network config from stdin: {e}"),
            ))
        })?;
    if bytes.len() as u64 > MAX_CONFIG {
        return Err(ours(CniError::new(
            code::DECODE,
            format!("the network config on stdin is larger than {MAX_CONFIG} bytes"),
        )));
    }
    let conf = config::parse(&bytes, call.command.name(), call.command.needs())
        .map_err(|e| ours(e.into()))?;
    let version = conf.cni_version.clone();
    execute(&call, &conf).map_err(|e| (version, e))
}

/// VERSION's answer.
pub fn version_json() -> String {
    let mut text = serde_json::json!({
        "cniVersion": config::CURRENT,
        "supportedVersions": config::SUPPORTED,
    })
    .to_string();
    text.push('\n');
    text
}

/// Runs a checked call against the store the config names.
pub fn execute(call: &Call, conf: &NetConf) -> Result<String, CniError> {
    let pools = conf.ipam.pools();
    match call.command {
        Command::Add => {
            let mut requested = call.requested.clone();
            requested.extend(
                conf.requested
                    .iter()
                    .filter(|ip| !call.requested.contains(ip)),
            );
            let fixed = assign_requested(conf, &requested)?;
            let dns = dns(conf)?;
            let mut store = store::open_spec(&conf.ipam.store)?;
            let holder = Record {
                owner: call.owner.clone(),
                node: Some(call.node.clone()).filter(|n| !n.is_empty()),
                pod: call.pod.clone(),
                since: Some(gc::now()),
                ..Record::default()
            };
            let held = add(store.as_mut(), &pools, &holder, &fixed)?;
            Ok(result_json(conf, &held, dns.as_ref()))
        }
        Command::Del => {
            let Some(mut store) = store::open_existing_spec(&conf.ipam.store)? else {
                return Ok(String::new());
            };
            for pool in gc::network_pools(store.as_mut(), conf)? {
                alloc::release(store.as_mut(), &pool, &call.owner)?;
            }
            Ok(String::new())
        }
        Command::Check => {
            let Some(mut store) = store::open_existing_spec(&conf.ipam.store)? else {
                return Err(not_held(&call.owner, &pools[0], None));
            };
            check(store.as_mut(), conf, &pools, &call.owner)?;
            Ok(String::new())
        }
        Command::Gc => {
            let valid = conf.valid_attachments.as_ref().ok_or_else(|| {
                CniError::new(
                    code::INVALID_CONFIG,
                    "network config on stdin: cni.dev/valid-attachments: missing: GC needs the list of attachments to keep",
                )
            })?;
            let keep: HashSet<String> = valid.iter().map(|(c, i)| format!("{c}/{i}")).collect();
            if let Some(mut store) = store::open_existing_spec(&conf.ipam.store)? {
                let judged = gc::judge(store.as_mut(), conf, &keep, &call.node, gc::now())?;
                gc::free_leaked(store.as_mut(), &judged)?;
            }
            Ok(String::new())
        }
        Command::Status | Command::Version => Ok(String::new()),
    }
}

/// Which range set each requested address (`CNI_ARGS` `IP=`, the `ips` capability,
/// `args.cni.ips`) goes to (one at most per set).
fn assign_requested(conf: &NetConf, requested: &[IpAddr]) -> Result<Vec<Option<IpAddr>>, CniError> {
    let mut fixed = vec![None; conf.ipam.sets.len()];
    for ip in requested {
        let i = conf
            .ipam
            .sets
            .iter()
            .position(|s| s.range_of(*ip).is_some())
            .ok_or_else(|| {
                CniError::new(
                    code::INVALID_ENV,
                    format!("requested address {ip} is in no range of the network"),
                )
            })?;
        // Refused before the store is opened: a bad call changes (and creates) nothing.
        if let Some(why) = conf.ipam.sets[i].space().refusal(*ip) {
            return Err(CniError::new(
                code::INVALID_ENV,
                format!("requested address {ip}: {why}"),
            ));
        }
        if let Some(other) = fixed[i].replace(*ip) {
            return Err(CniError::new(
                code::INVALID_ENV,
                format!("requested addresses {other} and {ip} are both of range set {i}: one address per set"),
            ));
        }
    }
    Ok(fixed)
}

/// Reserves one address per pool for `owner`: what it holds already (the same answer again),
/// else a new one. When a pool cannot give one, what this call took is given back.
fn add(
    store: &mut dyn Store,
    pools: &[Pool],
    holder: &Record,
    fixed: &[Option<IpAddr>],
) -> Result<Vec<IpAddr>, CniError> {
    let owner = holder.owner.as_str();
    let mut held: Vec<(usize, Held)> = Vec::with_capacity(pools.len());
    for (i, pool) in pools.iter().enumerate() {
        let got = reserve_one(store, pool, holder, fixed.get(i).copied().flatten());
        match got {
            Ok(h) => held.push((i, h)),
            Err(e) => {
                for (j, h) in &held {
                    if h.new {
                        // Best effort: the error that stopped us is the one to report. The
                        // hint goes back to the address, as if this call had never been.
                        if let Ok(Some(ip)) = alloc::release(store, &pools[*j], owner) {
                            let _ = store.set_next(&pools[*j].name, ip);
                        }
                    }
                }
                return Err(e);
            }
        }
    }
    Ok(held.into_iter().map(|(_, h)| h.ip).collect())
}

fn reserve_one(
    store: &mut dyn Store,
    pool: &Pool,
    holder: &Record,
    fixed: Option<IpAddr>,
) -> Result<Held, CniError> {
    match alloc::reserve_as(store, pool, holder, fixed) {
        // The ranges changed since the address was handed out: it is given back for one of
        // the ranges as they are now.
        Ok(h) if !h.new && pool.space.refusal(h.ip).is_some() => {
            alloc::release(store, pool, &holder.owner)?;
            Ok(alloc::reserve_as(store, pool, holder, fixed)?)
        }
        other => Ok(other?),
    }
}

fn not_held(owner: &str, pool: &Pool, ip: Option<IpAddr>) -> CniError {
    let msg = match ip {
        None => format!("{}: {owner} holds no address", pool.name),
        Some(ip) => format!(
            "{}: {owner} holds {ip}, which the config no longer hands out ({})",
            pool.name,
            pool.space.describe()
        ),
    };
    CniError::new(code::INTERNAL, msg)
}

fn check(
    store: &mut dyn Store,
    conf: &NetConf,
    pools: &[Pool],
    owner: &str,
) -> Result<(), CniError> {
    for pool in pools {
        let ip = match store.owned(&pool.name, owner)? {
            None => return Err(not_held(owner, pool, None)),
            Some((ip, _)) if pool.space.refusal(ip).is_some() => {
                return Err(not_held(owner, pool, Some(ip)))
            }
            Some((ip, _)) => ip,
        };
        if let Some(prev) = &conf.prev_ips {
            if !prev.contains(&ip) {
                return Err(CniError::new(
                    code::INTERNAL,
                    format!(
                        "{}: {owner} holds {ip}, which prevResult does not list",
                        pool.name
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// The result's DNS: the ipam section's, else the network config's, else host-local's
/// `resolvConf` file.
fn dns(conf: &NetConf) -> Result<Option<Dns>, CniError> {
    if let Some(d) = conf.ipam.dns.as_ref().or(conf.dns.as_ref()) {
        return Ok(Some(d.clone()).filter(|d| !d.is_empty()));
    }
    let Some(path) = &conf.ipam.resolv_conf else {
        return Ok(None);
    };
    let text = std::fs::read_to_string(path)
        .map_err(|e| CniError::new(code::IO, format!("ipam.resolvConf: {path}: {e}")))?;
    let mut d = Dns::default();
    for line in text.lines() {
        let mut words = line.split_whitespace();
        match words.next() {
            Some("nameserver") => d.nameservers.extend(words.next().map(str::to_owned)),
            Some("domain") => d.domain = words.next().map(str::to_owned),
            Some("search") => d.search = words.map(str::to_owned).collect(),
            Some("options") => d.options.extend(words.map(str::to_owned)),
            _ => {}
        }
    }
    Ok(Some(d).filter(|d| !d.is_empty()))
}

/// ADD's result in the config's version: `ips` (with `version` before 1.0.0), `routes`, `dns`.
pub fn result_json(conf: &NetConf, held: &[IpAddr], dns: Option<&Dns>) -> String {
    #[derive(Serialize)]
    struct Ip {
        #[serde(skip_serializing_if = "Option::is_none")]
        version: Option<&'static str>,
        address: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        gateway: Option<IpAddr>,
    }
    #[derive(Serialize)]
    struct Result<'a> {
        #[serde(rename = "cniVersion")]
        cni_version: &'a str,
        ips: Vec<Ip>,
        #[serde(skip_serializing_if = "<[Route]>::is_empty")]
        routes: &'a [Route],
        #[serde(skip_serializing_if = "Option::is_none")]
        dns: Option<&'a Dns>,
    }
    let versioned = conf.cni_version.starts_with("0.");
    let ips = held
        .iter()
        .zip(&conf.ipam.sets)
        .map(|(ip, set)| {
            let range = set.range_of(*ip);
            let prefix = range.map_or(if ip.is_ipv4() { 32 } else { 128 }, |r| r.subnet.prefix());
            Ip {
                version: versioned.then_some(if ip.is_ipv4() { "4" } else { "6" }),
                address: format!("{ip}/{prefix}"),
                gateway: range.and_then(|r| r.gateway),
            }
        })
        .collect();
    let result = Result {
        cni_version: &conf.cni_version,
        ips,
        routes: &conf.ipam.routes,
        dns,
    };
    let mut text = serde_json::to_string(&result).unwrap_or_default();
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn the_environment_is_checked_as_the_cni_library_does() {
        let e = call_from(env(&[("CNI_COMMAND", "ADD"), ("CNI_PATH", "/x")])).unwrap_err();
        assert_eq!(e.code, code::INVALID_ENV);
        assert!(
            e.msg.contains("CNI_CONTAINERID, CNI_NETNS, CNI_IFNAME"),
            "{}",
            e.msg
        );
        let base = [
            ("CNI_COMMAND", "DEL"),
            ("CNI_PATH", "/x"),
            ("CNI_CONTAINERID", "c1"),
            ("CNI_IFNAME", "eth0"),
        ];
        assert_eq!(call_from(env(&base)).unwrap().owner, "c1/eth0");
        let mut bad = base;
        bad[2].1 = "a/b";
        assert!(call_from(env(&bad))
            .unwrap_err()
            .msg
            .contains("CNI_CONTAINERID"));
        assert_eq!(
            call_from(env(&[("CNI_COMMAND", "VERSION")]))
                .unwrap()
                .command,
            Command::Version
        );
        assert!(call_from(env(&[("CNI_COMMAND", "FOO")]))
            .unwrap_err()
            .msg
            .contains("FOO"));
    }

    #[test]
    fn cni_args_ask_for_addresses_and_refuse_unknown_keys() {
        assert_eq!(
            cni_args("IP=192.0.2.5,2001:db8::5/64").unwrap().ips.len(),
            2
        );
        assert!(cni_args("K8S_POD_NAME=x")
            .unwrap_err()
            .contains("IgnoreUnknown"));
        let args =
            cni_args("IgnoreUnknown=1;K8S_POD_NAMESPACE=ns;K8S_POD_NAME=x;IP=192.0.2.1").unwrap();
        assert_eq!(
            (args.namespace.as_deref(), args.pod.as_deref()),
            (Some("ns"), Some("x"))
        );
        let podman = call_from(|v| {
            Some(match v {
                "CNI_COMMAND" => "ADD".into(),
                "CNI_CONTAINERID" => "abc".into(),
                "CNI_NETNS" => "/run/netns/x".into(),
                "CNI_IFNAME" => "eth0".into(),
                "CNI_PATH" => "/opt/cni/bin".into(),
                "CNI_ARGS" => "IgnoreUnknown=1;K8S_POD_NAME=c1".into(),
                _ => return None,
            })
        })
        .unwrap();
        assert_eq!(podman.pod.as_deref(), Some("c1"));
        assert!(cni_args("junk").is_err());
        assert!(cni_args("").unwrap().ips.is_empty());
    }
}
