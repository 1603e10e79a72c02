//! `lb-proxy run`: the proxies of a configuration at work.
//!
//! - [`table`]: what is served, rebuilt on reload with the servers' live state kept.
//! - [`admit`]: a connection is accepted only once it has its slots, the process's keeping
//!   descriptors in reserve; [`session`]: TCP frontends: accept, connect, forward;
//!   [`connect`]: retries, redispatch, connect races; [`replay`]: the client's first bytes again to another server when a
//!   server closes without answering.
//! - [`pulse`]: the heartbeat that spares each new connection a wake-up of its event loop.
//! - [`checks`]: one health-check task per checked server, its [`probe`] the IO that feeds
//!   [`crate::health`]'s sans-IO counters; [`resolve`]: one DNS task per
//!   server written with a name and `resolvers`.
//! - [`web`] and [`stats`]: monitor URIs and the stats page.
//! - [`redirect`]: VIP:6443 to the frontend while a server is UP.
//!
//! Signals: SIGHUP reloads (listeners stay open, established connections go on, a bad file
//! is refused and the old one keeps serving); SIGTERM and SIGINT stop at once; SIGUSR1 stops
//! accepting and exits when the last connection has ended (haproxy's soft stop).

pub mod admit;
pub mod checks;
pub mod connect;
pub mod inspect;
pub mod probe;
pub mod pulse;
pub mod redirect;
pub mod replay;
pub mod resolve;
pub mod session;
pub mod stats;
pub mod table;
pub mod web;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use ipi_core::service::notify_systemd;
use tokio::runtime::Handle;
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::watch;
use tokio::task::{AbortHandle, JoinSet};

use admit::{Gate, Listener};

use crate::config::model::Bind;
use crate::config::{Config, SourceError};
use crate::forward::Transfer;
use pulse::Pulse;
use redirect::{Debounce, Redirect};
use table::{ListenerKey, Table};

/// Reads the configuration again (for SIGHUP).
pub type Loader = Box<dyn Fn() -> Result<Config, SourceError> + Send>;

/// Why `run` could not start, or a reload was refused.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An event loop, its thread or a signal handler could not be set up.
    #[error("{0}")]
    Setup(#[from] std::io::Error),
    /// The thread of an event loop ended before it started.
    #[error("{0}")]
    CoreGone(#[from] std::sync::mpsc::RecvError),
    /// A listening socket could not be opened.
    #[error("{proxy}: cannot bind {address}: {source}")]
    Bind {
        /// The proxy it was for.
        proxy: String,
        /// Its address.
        address: std::net::SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The configuration could not be read again.
    #[error(transparent)]
    Reload(#[from] SourceError),
}

/// How `run` runs.
#[derive(Debug, Clone)]
pub struct Options {
    /// How bytes are moved.
    pub copy: Transfer,
    /// The VIP redirect, when on.
    pub redirect: Option<Redirect>,
    /// Threads that forward (0: one per core).
    pub threads: usize,
    /// How connections are spread over them.
    pub runtime: Runtime,
}

/// How connections are spread over the cores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runtime {
    /// One event loop per thread, each with its own listening sockets (SO_REUSEPORT: the
    /// kernel spreads new connections), a connection never leaves its thread; checks, monitor
    /// and stats run on the main thread. The default.
    PerCore,
    /// One work-stealing runtime for everything.
    WorkStealing,
}

/// Runs until a signal stops it.
pub fn run(config: Config, options: Options, reload: Loader) -> Result<(), Error> {
    use tokio::runtime::Builder;
    raise_fd_limit();
    let threads = match options.threads {
        0 => std::thread::available_parallelism().map_or(1, usize::from),
        n => n,
    };
    match options.runtime {
        Runtime::WorkStealing => {
            let runtime = Builder::new_multi_thread()
                .worker_threads(threads)
                .enable_all()
                .build()?;
            // One listening socket: maxconn's excess stays in the kernel's backlog.
            let pulse = Arc::new(Pulse::default());
            runtime.spawn({
                let pulse = Arc::clone(&pulse);
                async move { pulse.run().await }
            });
            let workers = vec![(runtime.handle().clone(), pulse)];
            runtime.block_on(serve(config, options, reload, workers))
        }
        Runtime::PerCore => {
            let workers = (0..threads).map(core).collect::<Result<Vec<_>, _>>()?;
            let runtime = ipi_core::service::runtime()?;
            runtime.block_on(serve(config, options, reload, workers))
        }
    }
}

/// An event loop that forwards, and its heartbeat.
type Worker = (Handle, Arc<Pulse>);

/// Starts the event loop of core `index` on a thread of its own; returns its handle.
fn core(index: usize) -> Result<Worker, Error> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name(format!("lb-proxy-{index}"))
        .spawn(move || match ipi_core::service::runtime() {
            Ok(runtime) => {
                let pulse = Arc::new(Pulse::default());
                let _ = tx.send(Ok((runtime.handle().clone(), Arc::clone(&pulse))));
                runtime.block_on(pulse.run());
            }
            Err(e) => {
                let _ = tx.send(Err(e));
            }
        })?;
    Ok(rx.recv()??)
}

/// Every connection takes two descriptors and a spliced one four more: raise the soft limit
/// on open files to the hard limit, as haproxy does.
fn raise_fd_limit() {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    if let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) {
        if soft < hard {
            if let Err(e) = setrlimit(Resource::RLIMIT_NOFILE, hard, hard) {
                tracing::warn!("cannot raise the open-file limit from {soft} to {hard}: {e}");
            }
        }
    }
}

/// The process's descriptors for forwarded connections ([`crate::fds`]'s budget, set here),
/// from the open-file limit (raised to the hard limit by then) less a reserve for what `table`
/// needs beside them: its listening sockets (one per worker for a TCP frontend), a check socket
/// per checked server and the web listeners' caps. Set at start: a reload's `global maxconn`
/// applies at the next start.
fn gate(table: &Table, workers: usize) {
    let listeners = table.listeners().len() * workers;
    let checks = table
        .backends
        .iter()
        .flat_map(|b| &b.servers)
        .filter(|s| s.cfg.check)
        .count();
    let webs: u64 = table
        .webs
        .values()
        .map(|w| w.slots.available_permits() as u64)
        .sum();
    let reserve = admit::RESERVE_BASE + (listeners + 2 * checks) as u64 + webs;
    let files = admit::open_files();
    let gate = Gate::new(files, reserve, table.config.global.maxconn);
    crate::fds::set(usize::try_from(gate.descriptors()).unwrap_or(usize::MAX));
    let by_files = format!(
        "{files} open files less {reserve} in reserve, {} each; pipes and connect races only \
         from what is left",
        crate::fds::PER_CONNECTION
    );
    match table.config.global.maxconn {
        Some(m) if u64::from(m) <= gate.size() => {
            tracing::info!("at most {m} forwarded connections at once (global maxconn)");
        }
        Some(m) => tracing::warn!(
            "at most {} forwarded connections at once, not global maxconn {m}: {by_files}; \
             raise LimitNOFILE",
            gate.size()
        ),
        None => tracing::info!(
            "at most {} forwarded connections at once ({by_files})",
            gate.size()
        ),
    }
}

/// A listening socket as haproxy opens it: SO_REUSEADDR and SO_REUSEPORT, IP_FREEBIND (a VIP
/// need not be here yet), `v4v6` / `v6only` as written, a backlog of `backlog`; TCP_NODELAY,
/// which accepted sockets inherit (one system call less per connection).
pub fn bind(b: &Bind, backlog: u32) -> std::io::Result<std::net::TcpListener> {
    use socket2::{Domain, Socket, Type};
    let domain = Domain::for_address(b.address);
    let socket = Socket::new(domain, Type::STREAM, Some(socket2::Protocol::TCP))?;
    socket.set_reuse_address(true)?;
    socket.set_reuse_port(true)?;
    socket.set_tcp_nodelay(true)?;
    if b.address.is_ipv6() {
        if b.v4v6 {
            socket.set_only_v6(false)?;
        } else if b.v6only {
            socket.set_only_v6(true)?;
        }
        let _ = socket.set_freebind_v6(true);
    } else {
        let _ = socket.set_freebind_v4(true);
    }
    socket.set_nonblocking(true)?;
    socket.bind(&b.address.into())?;
    socket.listen(i32::try_from(backlog).unwrap_or(i32::MAX))?;
    Ok(socket.into())
}

struct Running {
    table: watch::Sender<Arc<Table>>,
    listeners: HashMap<ListenerKey, Vec<AbortHandle>>,
    checks: JoinSet<()>,
    copy: Transfer,
    /// The event loops that forward: one per core, or the one work-stealing runtime.
    workers: Vec<Worker>,
}

/// Listening sockets opened for a listener: one per worker for a TCP frontend, one for a web
/// listener.
type Opened = Vec<(ListenerKey, Vec<std::net::TcpListener>)>;

impl Running {
    /// Opens the listeners `table` needs that are not open yet: all of them or none.
    fn open(&self, table: &Table) -> Result<Opened, Error> {
        let mut opened = Vec::new();
        for key in table.listeners() {
            if self.listeners.contains_key(&key) {
                continue;
            }
            let (count, backlog) = match table.frontends.get(&key.0) {
                Some(f) => (self.workers.len(), f.maxconn),
                None => (1, table::DEFAULT_MAXCONN),
            };
            let sockets = (0..count)
                .map(|_| bind(&key.1, backlog))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|source| Error::Bind {
                    proxy: key.0.clone(),
                    address: key.1.address,
                    source,
                })?;
            opened.push((key, sockets));
        }
        Ok(opened)
    }

    /// Makes `table` the one served: new listeners start, removed ones close, checks restart
    /// (the servers keep their counters).
    fn install(&mut self, table: Table, opened: Opened) {
        let keys = table.listeners();
        let table = Arc::new(table);
        self.table.send_replace(Arc::clone(&table));
        self.listeners.retain(|k, handles| {
            let keep = keys.contains(k);
            if !keep {
                handles.iter().for_each(AbortHandle::abort);
                tracing::info!("{}: stopped listening on {}", k.0, k.1.address);
            }
            keep
        });
        for (key, sockets) in opened {
            tracing::info!("{}: listening on {}", key.0, key.1.address);
            let tcp = table.frontends.contains_key(&key.0);
            let control = Handle::current();
            let handles = sockets
                .into_iter()
                .zip(if tcp {
                    self.workers.clone()
                } else {
                    vec![(control, Arc::default())]
                })
                .map(|(socket, (worker, pulse))| {
                    let (name, rx, copy) = (key.0.clone(), self.table.subscribe(), self.copy);
                    let gate = Arc::clone(crate::fds::budget());
                    worker
                        .spawn(async move {
                            let listener = match Listener::new(socket) {
                                Ok(l) => l,
                                Err(e) => return tracing::error!("{name}: {e}"),
                            };
                            if tcp {
                                session::accept_loop(listener, name, rx, copy, gate, pulse).await;
                            } else {
                                web::accept_loop(listener, name, rx).await;
                            }
                        })
                        .abort_handle()
                })
                .collect();
            self.listeners.insert(key, handles);
        }
        self.checks.abort_all();
        self.checks = JoinSet::new();
        checks::start(&table, &mut self.checks);
        resolve::start(&table, &mut self.checks);
    }
}

async fn serve(
    config: Config,
    options: Options,
    reload: Loader,
    workers: Vec<Worker>,
) -> Result<(), Error> {
    stats::started();
    let table = Table::build(config, None);
    gate(&table, workers.len());
    let mut running = Running {
        table: watch::Sender::new(Arc::new(Table::build(Config::default(), None))),
        listeners: HashMap::new(),
        checks: JoinSet::new(),
        copy: options.copy,
        workers,
    };
    let opened = running.open(&table)?;
    running.install(table, opened);
    let mut hup = signal(SignalKind::hangup())?;
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    let mut usr1 = signal(SignalKind::user_defined1())?;
    let redirect = options.redirect.clone();
    let redirect_task = redirect
        .clone()
        .map(|r| tokio::spawn(keep_redirect(r, running.table.subscribe())));
    notify_systemd("READY=1");
    let soft = loop {
        tokio::select! {
            _ = hup.recv() => {
                notify_systemd("RELOADING=1");
                match reload().map_err(Error::from).and_then(|c| {
                    let t = Table::build(c, Some(&running.table.borrow()));
                    running.open(&t).map(|o| (t, o))
                }) {
                    Ok((t, opened)) => {
                        if t.config.global.maxconn != running.table.borrow().config.global.maxconn {
                            tracing::warn!("global maxconn changed: it applies at the next start");
                        }
                        running.install(t, opened);
                        tracing::info!("reloaded");
                    }
                    Err(e) => tracing::error!("reload refused, the running configuration stays: {e}"),
                }
                notify_systemd("READY=1");
            }
            _ = term.recv() => break false,
            _ = int.recv() => break false,
            _ = usr1.recv() => break true,
        }
    };
    notify_systemd("STOPPING=1");
    for (_, handles) in running.listeners.drain() {
        handles.iter().for_each(AbortHandle::abort);
    }
    if soft {
        tracing::info!(
            "soft stop: listeners closed, waiting for {} connection(s)",
            session::live()
        );
        while session::live() > 0 {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    if let (Some(task), Some(r)) = (redirect_task, redirect) {
        task.abort();
        if let Err(e) = redirect::set(&r, None).await {
            tracing::warn!("redirect: {e}");
        }
    }
    tracing::info!("stopped");
    Ok(())
}

/// Keeps the VIP redirect on while the redirect target's backend has a server UP.
async fn keep_redirect(r: Redirect, table: watch::Receiver<Arc<Table>>) {
    // Whatever an earlier run left behind goes first.
    if let Err(e) = redirect::set(&r, None).await {
        tracing::warn!("redirect: {e}");
    }
    let mut debounce = Debounce::default();
    let mut tick = tokio::time::interval(r.interval);
    loop {
        tick.tick().await;
        let target = table.borrow().redirect_target();
        let healthy = target.as_ref().is_some_and(|(_, b)| b.up_count() > 0);
        if let Some(on) = debounce.round(healthy) {
            let port = target.filter(|_| on).map(|(p, _)| p);
            match redirect::set(&r, port).await {
                Ok(()) => tracing::warn!(
                    "redirect of the API VIP to lb-proxy {}",
                    if on { "on" } else { "off" }
                ),
                Err(e) => tracing::error!("redirect: {e}"),
            }
        }
    }
}
