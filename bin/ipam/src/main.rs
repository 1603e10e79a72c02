//! `ipam`: command-line wiring only; the logic lives in the library.
//!
//! Exit status: 0 success; 1 a check failed (`vip validate`, `netconfig validate`) or a request
//! cannot be met (no free address, a fixed address taken or refused); 2 bad input or usage;
//! 3 the store could not be used (nothing was done). In CNI mode, CNI's own rules.

use std::process::ExitCode;

use clap::Parser;
use ipam::cli::{Cli, Command, NetconfigCommand, PoolCommand, VipCommand};
use ipam::commands;

fn main() -> ExitCode {
    if std::env::var_os("CNI_COMMAND").is_some() {
        return ipam::cni::main();
    }
    let result = match Cli::parse().command {
        Command::Vip {
            command: VipCommand::Validate { cluster, probe },
        } => commands::validate(&cluster, &probe),
        Command::Vip {
            command:
                VipCommand::Suggest {
                    cluster,
                    store,
                    etcd,
                    probe,
                    json,
                },
        } => commands::suggest(&cluster, store.as_deref(), &etcd, &probe, json),
        Command::Netconfig {
            command: NetconfigCommand::Validate { file },
        } => commands::netconfig_validate(&file),
        Command::Reserve {
            netconfig,
            ipset,
            store,
            probe,
            json,
        } => commands::reserve(&netconfig, &ipset, &store.spec(), &probe, json),
        Command::Release { name, store } => commands::release(&name, &store.spec()),
        Command::List { store, json } => commands::list(&store.spec(), json),
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
            let request = commands::PoolRequest {
                name: &name,
                key: sharing_key.as_deref(),
            };
            commands::pool_reserve(&pool, &request, &store.spec(), &probe, json)
        }
        Command::Cni => return ipam::cni::main(),
    };
    match result {
        Ok(status) => status.into(),
        Err(failure) => {
            eprintln!("ipam: {failure}");
            failure.status.into()
        }
    }
}
