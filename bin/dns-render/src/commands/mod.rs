//! The subcommands: each is one [`Job`] (what to render from what) and one [`Output`] (the
//! exit status and --watch), so one function runs them all and returns the exit status
//! (0 success; with --exit-changed 1 when nothing changed; 2 bad input or usage).

use std::process::ExitCode;

use ipi_core::exit::Status;

use crate::cli::{self, Command, Output};
use crate::job::{self, Job};
use crate::reload;

/// `dns-render SUBCOMMAND ...`: renders once and writes what changed, then tells the
/// --reload-pid processes if anything did; with --watch, again whenever an input changes, never
/// returning.
pub fn render(command: &Command) -> ExitCode {
    let (job, out) = job(command);
    let told = || reload::hup_all(&out.reload_pid, &out.reload_name);
    if out.watch {
        job::watch(&job, told);
    }
    match job::run(&job) {
        Ok(true) => {
            told();
            Status::Success.into()
        }
        Ok(false) if out.exit_changed => Status::Failed.into(),
        Ok(false) => Status::Success.into(),
        Err(e) => {
            eprintln!("dns-render: {e}");
            Status::Usage.into()
        }
    }
}

/// The library's job for `command`, and how its outcome is reported.
fn job(command: &Command) -> (Job, &Output) {
    match command {
        Command::Corefile {
            inputs,
            upstream,
            output,
            out,
        } => (
            Job::Corefile {
                inputs: self::inputs(inputs),
                upstream: self::upstream(upstream),
                output: output.clone(),
            },
            out,
        ),
        Command::Dnsmasq {
            inputs,
            upstream,
            out_dir,
            listen,
            out,
        } => (
            Job::Dnsmasq {
                inputs: self::inputs(inputs),
                upstream: self::upstream(upstream),
                out_dir: out_dir.clone(),
                listen: listen.clone(),
            },
            out,
        ),
        Command::Hosts {
            inputs,
            output,
            out,
        } => (
            Job::Hosts {
                inputs: self::inputs(inputs),
                output: output.clone(),
            },
            out,
        ),
        Command::Dnsdata { input, output, out } => (
            Job::Dnsdata {
                input: input.clone(),
                output: output.clone(),
            },
            out,
        ),
        Command::Resolv {
            nameserver,
            search,
            input,
            resolved,
            output,
            out,
        } => (
            Job::Resolv {
                nameserver: *nameserver,
                search: search.clone(),
                input: input.clone(),
                resolved: *resolved,
                output: output.clone(),
            },
            out,
        ),
    }
}

fn inputs(i: &cli::Inputs) -> job::Inputs {
    job::Inputs {
        cluster: i.cluster.clone(),
        nodes: i.nodes.clone(),
        templates: i.templates.clone(),
    }
}

fn upstream(u: &cli::Upstream) -> job::Upstream {
    job::Upstream {
        resolv: u.resolv.clone(),
        node_ip: u.node_ip.clone(),
    }
}
