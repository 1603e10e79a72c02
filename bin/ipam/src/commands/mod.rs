//! One function per subcommand: each loads what it needs, prints its answer on stdout and
//! ends in a [`Status`] or a [`Failure`] that `main` reports (0 success; 1 a check failed or a
//! request cannot be met; 2 bad input or usage; 3 the store could not be used).
//!
//! - [`validate`] and [`suggest`]: the cluster's VIPs.
//! - [`netconfig_validate`] and [`reserve`]: NetConfig networks and IPSet requests.
//! - [`release`] and [`list`]: what the store holds.
//! - [`pool_reserve`]: MetalLB pools.
//! - `gc` ([`gc`]): what a CNI network holds that the runtime no longer does.

use std::net::IpAddr;
use std::path::Path;

use ipi_core::exit::Status;
use ipi_core::{Cluster, ClusterError, Inventory};
use ipi_store::pool::{AddressPool, Answer};
use ipi_store::store::{self, Record, Store, StoreSpec};

mod failure;
mod gc;
mod probe;

use crate::alloc::{self, AllocError};
use crate::answered;
use crate::cli::{
    ClusterArgs, Command, EtcdArgs, NetconfigCommand, PoolCommand, ProbeArgs, VipCommand,
};
use crate::netconfig::{self, IpSet, NetConfig};
use failure::{failed, store_failed, usage};
pub use failure::{Failure, Outcome};

fn alloc_failed(e: AllocError) -> Failure {
    match e {
        AllocError::Store(e) => store_failed(e),
        AllocError::Contended { .. } => failed(Status::Unavailable, e),
        AllocError::Probe(e) => probe::probe_failed(e),
        _ => failed(Status::Failed, e),
    }
}

fn open(spec: &StoreSpec) -> Result<Box<dyn Store>, Failure> {
    store::open_spec(spec).map_err(store_failed)
}

/// Every reservation of the store `spec` names, by pool; none when there is no store there yet
/// (which a listing does not create).
fn all_reservations(spec: &StoreSpec) -> Result<Vec<(String, IpAddr, Record)>, Failure> {
    let Some(mut store) = store::open_existing_spec(spec).map_err(store_failed)? else {
        return Ok(Vec::new());
    };
    let mut all = Vec::new();
    for pool in store.pools().map_err(store_failed)? {
        let held = store.list(&pool).map_err(store_failed)?;
        all.extend(held.into_iter().map(|(ip, r)| (pool.clone(), ip, r)));
    }
    Ok(all)
}

fn nodes(args: &ClusterArgs) -> Result<Option<Inventory>, Failure> {
    args.nodes
        .as_ref()
        .map(|p| Inventory::load(p).map_err(usage))
        .transpose()
}

/// `ipam vip validate`: 0 when the VIPs are valid, 1 with every problem when not (with
/// `--probe`, a VIP another host answers for is one, once the other rules pass).
pub fn validate(args: &ClusterArgs, wire: &ProbeArgs) -> Outcome {
    let nodes = nodes(args)?;
    match Cluster::load(&args.cluster, nodes.as_ref()) {
        Ok(c) => {
            probe::vips_in_use(wire, &c, &args.cluster.display().to_string())?;
            let list = |v: &[IpAddr]| {
                v.iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            println!(
                "{}: valid: API {}, Ingress {}",
                args.cluster.display(),
                list(&c.api_vips),
                list(&c.ingress_vips)
            );
            Ok(Status::Success)
        }
        Err(e @ ClusterError::Invalid { .. }) => Err(failed(Status::Failed, e)),
        Err(e) => Err(usage(e)),
    }
}

/// `ipam vip suggest`: VIPs clear of the nodes, of the reservations of the store `store`
/// (with `etcd`'s settings; settings without a store are refused, not ignored) and (with
/// `--probe`) of addresses another host answers for.
pub fn suggest(
    args: &ClusterArgs,
    store: Option<&str>,
    etcd: &EtcdArgs,
    wire: &ProbeArgs,
    json: bool,
) -> Outcome {
    let store = match store {
        Some(url) => Some(etcd.spec(url)),
        None => match etcd.spec("").etcd.first_given() {
            Some(setting) => return Err(usage(format!("{setting}: given without --store"))),
            None => None,
        },
    };
    let nodes = nodes(args)?;
    let networks = Cluster::load_machine_networks(&args.cluster).map_err(usage)?;
    let mut reserved = Vec::new();
    if let Some(spec) = &store {
        reserved.extend(all_reservations(spec)?.into_iter().map(|(_, ip, _)| ip));
    }
    let s = loop {
        let s = crate::vip::suggest(&networks, nodes.as_ref(), &reserved)
            .map_err(|e| failed(Status::Failed, e))?;
        let chosen: Vec<IpAddr> = s.api.iter().chain(&s.ingress).copied().collect();
        let answered = probe::answered(wire, &chosen).map_err(probe::probe_failed)?;
        if answered.is_empty() {
            break s;
        }
        // Each round passes over at least one more address, so the search ends: on a free
        // suggestion, or when a network has no room left.
        reserved.extend(answered.into_iter().map(|(ip, _)| ip));
    };
    print!("{}", if json { s.json() } else { s.yaml() });
    Ok(Status::Success)
}

/// `ipam netconfig validate FILE`: 0 when valid, 1 with every problem when not.
pub fn netconfig_validate(file: &Path) -> Outcome {
    let n = NetConfig::load(file).map_err(|p| failed(Status::Failed, p))?;
    println!("{}: valid: {} subnet(s)", file.display(), n.subnets.len());
    Ok(Status::Success)
}

/// `ipam reserve`: an address on every network the IPSet asks for, as its status.
pub fn reserve(
    netconfig: &Path,
    ipset: &Path,
    store: &StoreSpec,
    wire: &ProbeArgs,
    json: bool,
) -> Outcome {
    let netconfig = NetConfig::load(netconfig).map_err(usage)?;
    let ipset = IpSet::load(ipset, &netconfig).map_err(usage)?;
    let mut store = open(store)?;
    let mut check = probe::check(wire);
    let reservations = ipset
        .reserve(store.as_mut(), &netconfig, &mut check)
        .map_err(alloc_failed)?;
    print!("{}", netconfig::render(&reservations, json));
    Ok(Status::Success)
}

/// `ipam release NAME`: every address NAME holds, in every pool.
pub fn release(name: &str, store: &StoreSpec) -> Outcome {
    let released = match store::open_existing_spec(store).map_err(store_failed)? {
        Some(mut store) => alloc::release_name(store.as_mut(), name).map_err(alloc_failed)?,
        None => Vec::new(),
    };
    if released.is_empty() {
        eprintln!("ipam: {name} held nothing");
    }
    for (pool, ip) in released {
        println!("released {ip} in {pool}");
    }
    Ok(Status::Success)
}

/// One reservation as `ipam list --json` prints it.
#[derive(Debug, serde::Serialize)]
struct Listed<'a> {
    pool: &'a str,
    address: IpAddr,
    owner: &'a str,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    names: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    node: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pod: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    since: Option<u64>,
}

/// `ipam list`: every reservation, by pool and address.
pub fn list(store: &StoreSpec, json: bool) -> Outcome {
    let all = all_reservations(store)?;
    if json {
        let listed: Vec<Listed> = all
            .iter()
            .map(|(pool, address, r)| Listed {
                pool,
                address: *address,
                owner: &r.owner,
                names: &r.names,
                node: r.node.as_deref(),
                pod: r.pod.as_deref(),
                since: r.since,
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&listed).map_err(usage)?);
    } else {
        for (pool, ip, record) in &all {
            println!("{pool}\t{ip}\t{}", record.holders().join(","));
        }
    }
    Ok(Status::Success)
}

/// Who a pool address is for: the request's name and its sharing key.
#[derive(Debug, Clone, Copy)]
pub struct PoolRequest<'a> {
    /// The request.
    pub name: &'a str,
    /// The sharing key, if any.
    pub key: Option<&'a str>,
}

/// `ipam pool reserve`: an address of a MetalLB pool for the request.
pub fn pool_reserve(
    path: &Path,
    request: &PoolRequest,
    store: &StoreSpec,
    wire: &ProbeArgs,
    json: bool,
) -> Outcome {
    let PoolRequest { name, key } = *request;
    let pool = AddressPool::load(path).map_err(usage)?;
    if name.is_empty() || key.is_some_and(str::is_empty) {
        return Err(usage("--name and --sharing-key must not be empty"));
    }
    let mut store = open(store)?;
    let mut check = probe::check(wire);
    let held = match key {
        Some(key) => answered::share(store.as_mut(), &pool.pool, key, name, &mut check),
        None => answered::reserve(store.as_mut(), &pool.pool, name, None, &mut check),
    }
    .map_err(alloc_failed)?;
    if json {
        let answer = Answer {
            pool: pool.name,
            name: name.to_owned(),
            sharing_key: key.map(str::to_owned),
            address: held.ip,
            new: held.new,
        };
        println!("{}", serde_json::to_string(&answer).map_err(usage)?);
    } else {
        println!("{}", held.ip);
    }
    Ok(Status::Success)
}

/// Runs one subcommand of the command line and says how it ended (`ipam cni` answers in CNI's
/// own terms; the others print a failure on stderr, prefixed `ipam:`).
pub fn run(command: Command) -> std::process::ExitCode {
    let result = match command {
        Command::Vip {
            command: VipCommand::Validate { cluster, probe },
        } => validate(&cluster, &probe),
        Command::Vip {
            command:
                VipCommand::Suggest {
                    cluster,
                    store,
                    etcd,
                    probe,
                    json,
                },
        } => suggest(&cluster, store.as_deref(), &etcd, &probe, json),
        Command::Netconfig {
            command: NetconfigCommand::Validate { file },
        } => netconfig_validate(&file),
        Command::Reserve {
            netconfig,
            ipset,
            store,
            probe,
            json,
        } => reserve(&netconfig, &ipset, &store.spec(), &probe, json),
        Command::Release { name, store } => release(&name, &store.spec()),
        Command::List { store, json } => list(&store.spec(), json),
        Command::Gc {
            config,
            keep,
            node,
            free,
            json,
        } => gc::gc(&config, &keep, node, free, json),
        Command::Pool {
            command:
                PoolCommand::Reserve {
                    pool,
                    name,
                    sharing_key,
                    store,
                    probe,
                    json,
                },
        } => {
            let request = PoolRequest {
                name: &name,
                key: sharing_key.as_deref(),
            };
            pool_reserve(&pool, &request, &store.spec(), &probe, json)
        }
        Command::Cni => return crate::cni::main(),
    };
    match result {
        Ok(status) => status.into(),
        Err(failure) => {
            eprintln!("ipam: {failure}");
            failure.status.into()
        }
    }
}
