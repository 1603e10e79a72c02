//! What vrrpd tells the outside: one state file per instance (`MASTER`, `BACKUP`, `FAULT` or
//! `STOP`), a status file for `vrrpd status`, and systemd's readiness notification.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;
use serde_json::Value;

use super::clash::Clashes;
use super::conflict::Conflicts;
use super::setup::Parts;
use crate::config::Service;
use crate::fsm::{Instant, ScriptStatus, State};

/// The foreign routers remembered, the VIPs answered by other hosts, and now (for which
/// routers are still heard).
pub type Foreign<'a> = (&'a Clashes, &'a Conflicts, Instant);

/// The status file's name in the state directory.
pub const STATUS_FILE: &str = "status.json";

/// keepalived's name of a state, as notify scripts and state files carry it.
pub fn keepalived_state(state: State) -> &'static str {
    match state {
        State::Master => "MASTER",
        State::Backup | State::Initialize => "BACKUP",
        State::Fault => "FAULT",
        State::Stopped => "STOP",
    }
}

/// What `STATE_DIR/INSTANCE` holds in `state`: keepalived's name and a newline.
pub fn state_file(state: State) -> Vec<u8> {
    format!("{}\n", keepalived_state(state)).into_bytes()
}

/// The status of every instance, as the status file's JSON. Typed and borrowed, serialised
/// straight to text: a `serde_json::Value` of 1,000 instances took ~7 MB at its peak (a map
/// node per field), which the allocator then kept. Fields are in alphabetical order, as a
/// `Value` printed them.
pub fn snapshot(
    parts: &Parts,
    invalid: &BTreeMap<String, BTreeMap<&'static str, u64>>,
    (clashes, conflicts, now): Foreign<'_>,
    services: &BTreeMap<String, Service>,
) -> String {
    static NONE: BTreeMap<&'static str, u64> = BTreeMap::new();
    let running = parts.vrs.iter().filter_map(|vr| {
        let i = parts.units.get(vr.unit)?.member(vr.member)?;
        let c = i.counters();
        let p = i.params();
        let master = i.master();
        let holder = match i.state() {
            State::Master => Some(parts.source(vr)),
            _ => master.map(|(address, _)| address),
        };
        Some(Entry::Running(Box::new(Running {
            adverts_received: c.adverts_received,
            adverts_sent: c.adverts_sent,
            base_priority: p.priority,
            became_master: c.became_master,
            clashes: clashes.appearances(&vr.cfg.name),
            foreign_routers: clashes.to_json(now, &vr.cfg.name),
            interface: &vr.interface.name,
            interfaces: (p.track_interfaces.iter())
                .map(|t| TrackedInterface {
                    name: &t.name,
                    up: i.interface_up(&t.name),
                    weight: t.weight,
                })
                .collect(),
            invalid: invalid.get(&vr.cfg.name).unwrap_or(&NONE),
            master: master.map(|(address, priority)| Master { address, priority }),
            name: &vr.cfg.name,
            priority: i.priority(),
            priority_zero_received: c.priority_zero_received,
            priority_zero_sent: c.priority_zero_sent,
            scripts: (p.track_scripts.iter())
                .map(|s| TrackedScript {
                    name: &s.name,
                    status: i.script_status(&s.name).map_or("unknown", script_status),
                    weight: s.weight,
                })
                .collect(),
            service: services
                .get(&vr.cfg.name)
                .map(|s| ServiceStatus::of(s, holder)),
            source: parts.source(vr),
            state: keepalived_state(i.state()),
            transitions: c.transitions,
            version: vr.expect.version.number(),
            vip_conflicts: conflicts.to_json(now, &vr.cfg.name),
            vip_probes: conflicts.probes(&vr.cfg.name),
            vips: &vr.expect.addresses,
            vrid: vr.cfg.vrid,
        })))
    });
    // Instances that wait for an interface: FAULT, with the reason.
    let waiting = parts.waiting.iter().map(|w| {
        Entry::Waiting(Waiting {
            interface: &w.interface,
            name: &w.name,
            reason: &w.reason,
            state: "FAULT",
            vrid: w.vrid,
        })
    });
    let updated = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let status = Status {
        instances: running.chain(waiting).collect(),
        invalid_unclaimed: invalid.get("").unwrap_or(&NONE),
        pid: std::process::id(),
        updated,
    };
    serde_json::to_string(&status).unwrap_or_default()
}

/// The status file (fields in alphabetical order, see [`snapshot`]).
#[derive(Serialize)]
struct Status<'a> {
    instances: Vec<Entry<'a>>,
    invalid_unclaimed: &'a BTreeMap<&'static str, u64>,
    pid: u32,
    updated: u64,
}

#[derive(Serialize)]
#[serde(untagged)]
enum Entry<'a> {
    Running(Box<Running<'a>>),
    Waiting(Waiting<'a>),
}

#[derive(Serialize)]
struct Running<'a> {
    adverts_received: u64,
    adverts_sent: u64,
    base_priority: u8,
    became_master: u64,
    clashes: u64,
    foreign_routers: Value,
    interface: &'a str,
    interfaces: Vec<TrackedInterface<'a>>,
    invalid: &'a BTreeMap<&'static str, u64>,
    master: Option<Master>,
    name: &'a str,
    priority: u8,
    priority_zero_received: u64,
    priority_zero_sent: u64,
    scripts: Vec<TrackedScript<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    service: Option<ServiceStatus<'a>>,
    source: IpAddr,
    state: &'static str,
    transitions: u64,
    version: u8,
    vip_conflicts: Value,
    vip_probes: u64,
    vips: &'a [IpAddr],
    vrid: u8,
}

/// A pool address's instance: where the address comes from and who holds it.
#[derive(Serialize)]
struct ServiceStatus<'a> {
    address: IpAddr,
    /// The node that holds the address now, as this node sees it (itself when master, else
    /// the master it hears); `None` while no master is known.
    holder: Option<&'a str>,
    /// The eligible nodes in the order they lead the address.
    nodes: Vec<&'a str>,
    owner: &'a str,
    pool: &'a str,
    sharers: &'a [String],
}

impl<'a> ServiceStatus<'a> {
    fn of(s: &'a Service, holder: Option<IpAddr>) -> Self {
        ServiceStatus {
            address: s.address,
            holder: holder.and_then(|h| {
                s.nodes
                    .iter()
                    .find(|(_, a)| *a == h)
                    .map(|(n, _)| n.as_str())
            }),
            nodes: s.nodes.iter().map(|(n, _)| n.as_str()).collect(),
            owner: &s.owner,
            pool: &s.pool,
            sharers: &s.sharers,
        }
    }
}

#[derive(Serialize)]
struct TrackedScript<'a> {
    name: &'a str,
    status: &'static str,
    weight: i32,
}

#[derive(Serialize)]
struct TrackedInterface<'a> {
    name: &'a str,
    up: Option<bool>,
    weight: i32,
}

#[derive(Serialize)]
struct Master {
    address: IpAddr,
    priority: u8,
}

#[derive(Serialize)]
struct Waiting<'a> {
    interface: &'a str,
    name: &'a str,
    reason: &'a str,
    state: &'static str,
    vrid: u8,
}

fn script_status(s: ScriptStatus) -> &'static str {
    match s {
        ScriptStatus::Init => "init",
        ScriptStatus::Ok => "ok",
        ScriptStatus::Failing => "failing",
    }
}

/// Why there is no status to show.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// No status file (no vrrpd runs there, or another state directory).
    #[error("{}: {source} (is vrrpd running with --state-dir {}?)", path.display(), dir.display())]
    Missing {
        /// The status file.
        path: PathBuf,
        /// The state directory asked.
        dir: PathBuf,
        /// Why it cannot be read.
        source: std::io::Error,
    },
    /// A status file that is not JSON.
    #[error("{}: {source}", path.display())]
    Json {
        /// The status file.
        path: PathBuf,
        /// What the JSON parser said.
        source: serde_json::Error,
    },
    /// The vrrpd that wrote it is gone.
    #[error("{}: vrrpd (pid {pid}) is not running any more", path.display())]
    NotRunning {
        /// The status file.
        path: PathBuf,
        /// The pid it names.
        pid: u64,
    },
}

/// Reads the status a running vrrpd wrote into `dir`; an error says why there is none.
pub fn read(dir: &Path) -> Result<Value, ReadError> {
    let path = dir.join(STATUS_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(source) => {
            let dir = dir.to_path_buf();
            return Err(ReadError::Missing { path, dir, source });
        }
    };
    let value: Value = match serde_json::from_str(&text) {
        Ok(value) => value,
        Err(source) => return Err(ReadError::Json { path, source }),
    };
    let pid = value["pid"].as_u64().unwrap_or(0);
    if !Path::new(&format!("/proc/{pid}")).exists() {
        return Err(ReadError::NotRunning { path, pid });
    }
    Ok(value)
}

/// The status as text, one block per instance.
pub fn to_text(v: &Value) -> String {
    let mut out = String::new();
    for i in v["instances"].as_array().into_iter().flatten() {
        let master = match &i["master"] {
            Value::Null => "-".to_string(),
            m => format!(
                "{} (priority {})",
                m["address"].as_str().unwrap_or("?"),
                m["priority"]
            ),
        };
        out.push_str(&format!(
            "{} {} on {} vrid {} v{}: priority {} (base {}), master {}\n",
            i["name"].as_str().unwrap_or("?"),
            i["state"].as_str().unwrap_or("?"),
            i["interface"].as_str().unwrap_or("?"),
            i["vrid"],
            i["version"],
            i["priority"],
            i["base_priority"],
            master
        ));
        if let Some(service) = i["service"].as_object() {
            out.push_str(&service_text(service));
        }
        for s in i["scripts"].as_array().into_iter().flatten() {
            out.push_str(&format!(
                "  script {} weight {}: {}\n",
                s["name"].as_str().unwrap_or("?"),
                s["weight"],
                s["status"].as_str().unwrap_or("?")
            ));
        }
        for t in i["interfaces"].as_array().into_iter().flatten() {
            let up = match t["up"].as_bool() {
                Some(true) => "up",
                Some(false) => "down",
                None => "unknown",
            };
            out.push_str(&format!(
                "  interface {} weight {}: {up}\n",
                t["name"].as_str().unwrap_or("?"),
                t["weight"]
            ));
        }
        out.push_str(&format!(
            "  adverts sent {} received {}, transitions {}, invalid {}\n",
            i["adverts_sent"], i["adverts_received"], i["transitions"], i["invalid"]
        ));
        for f in i["foreign_routers"].as_array().into_iter().flatten() {
            out.push_str(&foreign_text(f));
        }
        for c in i["vip_conflicts"].as_array().into_iter().flatten() {
            out.push_str(&format!(
                "  VIP {} in use on {} by {}, a host outside the group\n",
                c["vip"].as_str().unwrap_or("?"),
                c["interface"].as_str().unwrap_or("?"),
                c["mac"].as_str().unwrap_or("?")
            ));
        }
    }
    out
}

/// A pool address's line of text status: pool, holder, owner and sharers.
fn service_text(s: &serde_json::Map<String, Value>) -> String {
    let list = |key: &str| -> String {
        let items: Vec<&str> = (s.get(key).and_then(Value::as_array).into_iter().flatten())
            .filter_map(Value::as_str)
            .collect();
        if items.is_empty() {
            "-".into()
        } else {
            items.join(",")
        }
    };
    let text = |key: &str| s.get(key).and_then(Value::as_str).unwrap_or("-").to_owned();
    format!(
        "  address {} of pool {}: holder {}, owner {}, sharers {}, nodes {}\n",
        text("address"),
        text("pool"),
        text("holder"),
        text("owner"),
        list("sharers"),
        list("nodes")
    )
}

/// One foreign router as a line of text status.
fn foreign_text(f: &Value) -> String {
    let addresses: Vec<&str> = f["addresses"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    format!(
        "  FOREIGN router {} on vrid {} ({}): VRRPv{} priority {} addresses {}: {}; {} adverts, \
         last {} ms ago\n",
        f["source"].as_str().unwrap_or("?"),
        f["vrid"],
        f["interface"].as_str().unwrap_or("?"),
        f["version"],
        f["priority"],
        addresses.join(","),
        f["why"].as_str().unwrap_or("?"),
        f["adverts"],
        f["last_heard_ms_ago"]
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_pool_address_shows_its_pool_holder_and_sharers() {
        let v = json!({ "instances": [{
            "name": "internalapi_192.0.2.100", "state": "BACKUP", "interface": "eth0",
            "vrid": 1, "version": 3, "priority": 249, "base_priority": 249,
            "master": { "address": "203.0.113.1", "priority": 250 }, "scripts": [],
            "interfaces": [], "adverts_sent": 0, "adverts_received": 9, "transitions": 1,
            "invalid": {}, "foreign_routers": [],
            "service": { "address": "192.0.2.100", "pool": "internalapi", "holder": "node-a",
                "owner": "key", "sharers": ["svc1", "svc2"], "nodes": ["node-a", "node-b"] },
        }]});
        let text = to_text(&v);
        assert!(
            text.contains(
                "  address 192.0.2.100 of pool internalapi: holder node-a, owner key, sharers \
                 svc1,svc2, nodes node-a,node-b\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn foreign_routers_are_shown_in_the_text() {
        let v = json!({ "instances": [{
            "name": "VI_1", "state": "MASTER", "interface": "eth0", "vrid": 51, "version": 3,
            "priority": 100, "base_priority": 100, "master": null, "scripts": [],
            "interfaces": [], "adverts_sent": 1, "adverts_received": 0, "transitions": 2,
            "invalid": { "addresses": 4 },
            "foreign_routers": [{ "source": "192.0.2.9", "vrid": 51, "interface": "eth0",
                "version": 2, "priority": 100, "addresses": ["192.0.2.99", "192.0.2.98"],
                "why": "its addresses differ", "adverts": 4, "last_heard_ms_ago": 300 }],
        }]});
        let text = to_text(&v);
        assert!(
            text.contains(
                "  FOREIGN router 192.0.2.9 on vrid 51 (eth0): VRRPv2 priority 100 addresses \
                 192.0.2.99,192.0.2.98: its addresses differ; 4 adverts, last 300 ms ago\n"
            ),
            "{text}"
        );
    }
}
