//! `ipam`: command-line wiring only; the logic lives in the library.
//!
//! Exit status: 0 success; 1 a check failed (`vip validate`, `netconfig validate`) or a request
//! cannot be met (no free address, a fixed address taken or refused); 2 bad input or usage;
//! 3 the store could not be used (nothing was done). In CNI mode, CNI's own rules.

use std::net::IpAddr;
use std::process::ExitCode;

use clap::Parser;
use ipam::alloc::{self, AllocError};
use ipam::cli::{Cli, ClusterArgs, Command, NetconfigCommand, PoolCommand, VipCommand};
use ipam::netconfig::{self, IpSet, NetConfig};
use ipam::pool::{AddressPool, Answer};
use ipam::store::{self, Record, Store, StoreError};
use ipi_core::exit::Status;
use ipi_core::{Cluster, ClusterError, Inventory};

fn main() -> ExitCode {
    if std::env::var_os("CNI_COMMAND").is_some() {
        return ipam::cni::main();
    }
    let result = match Cli::parse().command {
        Command::Vip { command } => match command {
            VipCommand::Validate { cluster } => validate(&cluster),
            VipCommand::Suggest {
                cluster,
                store,
                json,
            } => suggest(&cluster, store.as_deref(), json),
        },
        Command::Netconfig {
            command: NetconfigCommand::Validate { file },
        } => NetConfig::load(&file)
            .map(|n| {
                println!("{}: valid: {} subnet(s)", file.display(), n.subnets.len());
                Status::Success
            })
            .map_err(|p| (Status::Failed, p.to_string())),
        Command::Reserve {
            netconfig,
            ipset,
            store,
            json,
        } => reserve(&netconfig, &ipset, &store.store, json),
        Command::Release { name, store } => release(&name, &store.store),
        Command::List { store, json } => list(&store.store, json),
        Command::Pool {
            command:
                PoolCommand::Reserve {
                    pool,
                    name,
                    sharing_key,
                    store,
                    json,
                },
        } => pool_reserve(&pool, &name, sharing_key.as_deref(), &store.store, json),
        Command::Cni => return ipam::cni::main(),
    };
    match result {
        Ok(status) => status.into(),
        Err((status, message)) => {
            eprintln!("ipam: {message}");
            status.into()
        }
    }
}

/// A failed command: its status and the message for stderr.
type Failure = (Status, String);

/// What a command ends with.
type Outcome = Result<Status, Failure>;

fn usage(message: impl ToString) -> Failure {
    (Status::Usage, message.to_string())
}

fn store_failed(e: StoreError) -> Failure {
    match e {
        StoreError::Url { .. } => usage(e),
        _ => (Status::Unavailable, e.to_string()),
    }
}

fn alloc_failed(e: AllocError) -> Failure {
    match e {
        AllocError::Store(e) => store_failed(e),
        AllocError::Contended { .. } => (Status::Unavailable, e.to_string()),
        _ => (Status::Failed, e.to_string()),
    }
}

fn open(url: &str) -> Result<Box<dyn Store>, Failure> {
    store::open(url).map_err(store_failed)
}

/// Every reservation of the store at `url`, by pool; none when there is no store there yet
/// (which a listing does not create).
fn all_reservations(url: &str) -> Result<Vec<(String, IpAddr, Record)>, Failure> {
    let Some(mut store) = store::open_existing(url).map_err(store_failed)? else {
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

fn validate(args: &ClusterArgs) -> Outcome {
    let nodes = nodes(args)?;
    match Cluster::load(&args.cluster, nodes.as_ref()) {
        Ok(c) => {
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
        Err(e @ ClusterError::Invalid { .. }) => Err((Status::Failed, e.to_string())),
        Err(e) => Err(usage(e)),
    }
}

fn suggest(args: &ClusterArgs, store: Option<&str>, json: bool) -> Outcome {
    let nodes = nodes(args)?;
    let networks = Cluster::load_machine_networks(&args.cluster).map_err(usage)?;
    let mut reserved = Vec::new();
    if let Some(url) = store {
        reserved.extend(all_reservations(url)?.into_iter().map(|(_, ip, _)| ip));
    }
    let s = ipam::vip::suggest(&networks, nodes.as_ref(), &reserved)
        .map_err(|e| (Status::Failed, e))?;
    print!("{}", if json { s.json() } else { s.yaml() });
    Ok(Status::Success)
}

fn reserve(netconfig: &std::path::Path, ipset: &std::path::Path, url: &str, json: bool) -> Outcome {
    let netconfig = NetConfig::load(netconfig).map_err(usage)?;
    let ipset = IpSet::load(ipset, &netconfig).map_err(usage)?;
    let mut store = open(url)?;
    let reservations = ipset
        .reserve(store.as_mut(), &netconfig)
        .map_err(alloc_failed)?;
    print!("{}", netconfig::render(&reservations, json));
    Ok(Status::Success)
}

fn release(name: &str, url: &str) -> Outcome {
    let released = match store::open_existing(url).map_err(store_failed)? {
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
}

fn list(url: &str, json: bool) -> Outcome {
    let all = all_reservations(url)?;
    if json {
        let listed: Vec<Listed> = all
            .iter()
            .map(|(pool, address, r)| Listed {
                pool,
                address: *address,
                owner: &r.owner,
                names: &r.names,
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

fn pool_reserve(
    path: &std::path::Path,
    name: &str,
    key: Option<&str>,
    url: &str,
    json: bool,
) -> Outcome {
    let pool = AddressPool::load(path).map_err(usage)?;
    if name.is_empty() || key.is_some_and(str::is_empty) {
        return Err(usage("--name and --sharing-key must not be empty"));
    }
    let mut store = open(url)?;
    let held = match key {
        Some(key) => alloc::share(store.as_mut(), &pool.pool, key, name),
        None => alloc::reserve(store.as_mut(), &pool.pool, name, None),
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
