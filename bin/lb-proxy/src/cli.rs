//! The command line of lb-proxy.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// The API load balancer: TCP round robin over healthy API servers (a stand-in for haproxy).
#[derive(Debug, Parser)]
#[command(name = "lb-proxy", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the proxies of a haproxy.cfg, or what OpenShift runs on a control-plane node.
    /// SIGHUP reloads, SIGTERM stops, SIGUSR1 stops once the last connection has ended.
    #[command(after_long_help = FAILING_SERVERS)]
    Run(Run),
    /// Print, as haproxy.cfg, the configuration `run` would use.
    Render {
        /// Where the proxies come from.
        #[command(flatten)]
        source: Source,
    },
    /// Check a haproxy.cfg: exit 0 if it is valid, 2 with every error otherwise (like haproxy -c);
    /// warnings (what lb-proxy accepts without effect, see lb-proxy.cfg(5)) either way.
    CheckConfig {
        /// The file to check (`-` for standard input).
        #[arg(short = 'f', long = "config", value_name = "FILE")]
        config: PathBuf,
    },
    /// Exit 0 when URL answers 2xx or 3xx, 1 otherwise, like `curl -kLfs URL` (2: a bad URL or
    /// timeout).
    Check {
        /// The URL (http or https; certificates are not verified).
        url: String,
        /// How long to wait for the answer.
        #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = ipi_core::duration::parse)]
        timeout: std::time::Duration,
        /// URL is lb-proxy's stats page (--cluster: http://127.0.0.1:29445/haproxy_stats):
        /// print each backend's servers UP, and every server that is not UP with why (its last
        /// check, passive health's marks-down and their reason); exit 0 when every backend has a
        /// server UP, 1 when one has none, 2 when the page cannot be read.
        #[arg(long)]
        servers: bool,
    },
}

/// The keywords about failing servers, for `run --help` and lb-proxy-run(1).
const FAILING_SERVERS: &str = "\
Failing servers: haproxy.cfg keywords, with haproxy 2.6's semantics
  retries N: after a failed connection, N more attempts, each within `timeout connect`.
  retry-on WORD...: conn-failure (the default), empty-response, junk-response,
    response-timeout, 0rtt-rejected, all-retryable-errors, none. In mode tcp only
    conn-failure acts, as in haproxy (the others need mode http); none: no retries.
  option redispatch [N]: a retry goes to another server when its server is DOWN, on every
    Nth retry (N > 0), on the Nth before the last (N < 0; the bare option is -1, the last),
    and, balancing round robin, whenever more than one server is UP (also with N = 0, as
    haproxy's code does). A retry to the same server after a refusal waits
    min(timeout connect, 1s). `no option redispatch` turns it off.
  observe layer4 (server, default-server): failed connections of client traffic count
    against the server (needs `check`: only checks bring a server back).
  error-limit N: consecutive failed connections before on-error acts (default 10).
  on-error fastinter|fail-check|sudden-death|mark-down: check sooner; count a failed check
    (the default); a failed check that leaves one more before DOWN; DOWN at once. Each also
    brings the next check forward to fastinter.
  timeout check T: a check connects within min(timeout connect, inter), then has T for the
    rest; without it, inter bounds the whole check.
  default-server OPTIONS (defaults, backend, listen): what each server line starts from.

lb-proxy's own keywords, on lines that haproxy reads as comments (`#lb-proxy: ...`):
  race-connect DELAY [losses N] | off (defaults, backend, listen): a connection attempt
    with no answer after DELAY races a second attempt to the next server; the first to
    connect wins, the other is closed. A checked server that loses N races in a row
    (default 3; 0: never) is marked DOWN; its checks bring it back after rise.
  replay-unanswered on|off (defaults, backend, listen): the client's first bytes are kept
    until the server answers; a server that closes or resets without a byte of answer
    counts as a failed connection and the bytes go to another server (haproxy's retry-on
    empty-response, which haproxy does in mode http only). With TLS they are the
    ClientHello; with a plain protocol they may be a request the server acted on. A server
    that closes a client which sent nothing, or part of a TLS handshake message, is not
    at fault: the close goes to the client and counts nothing.

--cluster runs OpenShift's template with option redispatch 1, retry-on conn-failure
empty-response response-timeout, timeout connect 2s, observe layer4 error-limit 1
on-error mark-down, fastinter 200ms, slowstart 10s, race-connect 150ms losses 3 and
replay-unanswered on. With -f the file decides.

The stats page (text, ;json, /metrics) shows each server's passive actions, passive DOWNs,
races lost and the last passive reason; `lb-proxy check --servers URL` prints them.
`stats auth USER:PASS` guards all three (compared in constant time); as in haproxy, `stats`
lines in defaults are those of each section without `stats` lines of its own, and the
monitor URI answers anyone.

Connections are accepted only once admitted: within the frontend's maxconn and the process's
own descriptors, which are what the open-file limit holds less a reserve for the listening
sockets, the checks, the monitor and stats listeners (256 connections each at most, their
maxconn when lower) and 128 more, and at most 2 x global maxconn. A connection takes 2 when
admitted (client and server); a splice pipe pair or a connect race's second socket only from
what is left (else it copies through user space, or waits on its one attempt). The rest wait
in the kernel's backlog, as with haproxy, holding nothing of the process: a flood of clients
cannot take the descriptors the checks and the monitor need. The log says the limit at start;
a global maxconn the open-file limit cannot hold is lowered with a warning (raise LimitNOFILE).";

/// The options of `run`.
#[derive(Debug, Args)]
pub struct Run {
    /// Where the proxies come from.
    #[command(flatten)]
    pub source: Source,
    /// Redirect VIP:6443 to the first frontend while one of its servers is UP (repeatable;
    /// with --cluster, the cluster's API VIPs unless --no-redirect).
    #[arg(long = "redirect-vip", value_name = "VIP")]
    pub redirect_vips: Vec<std::net::IpAddr>,
    /// With --cluster: no VIP redirect.
    #[arg(long, conflicts_with = "redirect_vips")]
    pub no_redirect: bool,
    /// The file that exists while the redirect is on (with --cluster, keepalived's
    /// /var/run/keepalived/iptables-rule-exists).
    #[arg(long, value_name = "FILE")]
    pub flag_file: Option<PathBuf>,
    /// How often the redirect looks at the servers (on after 3 healthy rounds, off after 11
    /// unhealthy ones).
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = ipi_core::duration::parse)]
    pub redirect_interval: std::time::Duration,
    /// Move bytes through a buffer rather than with splice(2).
    #[arg(long)]
    pub copy: bool,
    /// Threads that forward (default: one per core).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub threads: usize,
    /// How connections are spread over the threads: per-core (a listening socket and an event
    /// loop per thread, connections stay on their thread) costs less CPU per request than
    /// work-stealing (README).
    #[arg(long, value_enum, default_value = "per-core")]
    pub runtime: Runtime,
    /// More log lines (-v debug, -vv trace).
    #[arg(short, long, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Warnings and errors only.
    #[arg(short, long)]
    pub quiet: bool,
}

/// How connections are spread over the cores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Runtime {
    /// One event loop per thread, each with its own listening sockets (SO_REUSEPORT: the
    /// kernel spreads new connections), a connection never leaves its thread; checks, monitor
    /// and stats run on the main thread.
    PerCore,
    /// One work-stealing runtime for everything.
    WorkStealing,
}

/// A haproxy.cfg, or the cluster description OpenShift would render one from.
#[derive(Debug, Clone, Args)]
pub struct Source {
    /// A haproxy.cfg (`-` for standard input).
    #[arg(
        short = 'f',
        long = "config",
        value_name = "FILE",
        conflicts_with = "cluster",
        required_unless_present = "cluster"
    )]
    pub config: Option<PathBuf>,
    /// The cluster's install-config.yaml.
    #[arg(long, value_name = "FILE", requires = "nodes")]
    pub cluster: Option<PathBuf>,
    /// The node inventory (ipi-nodes(5)): the masters are the API servers.
    #[arg(long, value_name = "FILE", requires = "cluster")]
    pub nodes: Option<PathBuf>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
