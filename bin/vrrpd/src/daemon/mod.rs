//! The daemon: the sans-IO state machines ([`crate::fsm`]) driven by the real clock, the
//! network ([`crate::net`]), track scripts and signals, on one tokio thread. One thread is
//! enough (VRRP is a few packets a second per instance) and keeps every decision in one
//! order: no locks, no races between a timer and an advert.
//!
//! - [`setup`]: configuration to sockets, interfaces and state machines.
//! - [`plan`]: what a reload keeps, changes, starts and stops, decided without IO.
//! - `reload`: SIGHUP, carrying out the plan.
//! - [`rx`]: the receive checks, with a counter per reason; `ah`: keepalived's AH sequence
//!   numbers of an instance.
//! - [`scripts`]: track scripts and notify scripts, without a shell.
//! - [`status`]: state files and the status file `vrrpd status` reads; `files` writes them
//!   off the event loop.
//! - [`sched`]: one heap of timers and the advert dispatch map (1,000 instances).
//! - [`clash`]: foreign routers on our VRIDs; [`conflict`]: VIPs that another host answers
//!   for on the wire; `telemetry`: transitions with their reason;
//!   [`metrics`] and `http`: the Prometheus endpoint (`--metrics`).

mod ah;
mod fifo;
mod files;
pub mod plan;
mod processes;
mod reload;
pub mod rx;
pub mod sched;
pub mod script_security;
pub mod scripts;
pub mod setup;
pub mod status;
pub mod track_files;

pub mod clash;
pub mod conflict;
mod http;
pub mod metrics;
mod telemetry;

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ipi_core::vrrp::{ChecksumMode, RawDatagram, Repr};
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::config::{Config, Notify};
use crate::fsm::{Action, Event, Instant, State};
use crate::net::{LinkWatcher, Netlink, Outcome, Received};

use setup::{Parts, SetupError, Unit, Vr};

/// Why the daemon cannot start. Each names what failed and where.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The state directory cannot be made.
    #[error("state directory {}: {source}", path.display())]
    StateDir {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// No tokio runtime.
    #[error("cannot start the event loop: {0}")]
    Runtime(std::io::Error),
    /// The ambient capabilities (a unit's `AmbientCapabilities=`) cannot be kept from scripts.
    #[error("cannot clear the ambient capabilities, which every script would get: {0}")]
    Ambient(std::io::Error),
    /// No rtnetlink connection.
    #[error(transparent)]
    Netlink(#[from] crate::net::Error),
    /// The configuration cannot run here.
    #[error(transparent)]
    Setup(#[from] SetupError),
    /// The metrics endpoint cannot be served.
    #[error("metrics endpoint: {0}")]
    Metrics(std::io::Error),
    /// A tracked interface cannot be watched.
    #[error("track_interface {name}: {source}")]
    TrackInterface {
        /// The interface.
        name: String,
        /// Why.
        source: crate::net::Error,
    },
}

/// Loads the configuration again on SIGHUP.
pub type Loader = Box<dyn Fn() -> Result<Config, crate::config::SourceError>>;

/// The daemon's runtime, made once this thread's ambient capabilities (a unit's
/// `AmbientCapabilities=`, vrrpd's and not its scripts') are cleared: every thread started
/// from here on (the runtime's blocking threads, which the store's follower uses too) starts
/// without them.
pub fn runtime() -> Result<tokio::runtime::Runtime, Error> {
    let cleared = ipi_core::service::clear_ambient_capabilities().map_err(Error::Ambient)?;
    if cleared > 0 {
        tracing::debug!("{cleared} ambient capabilities cleared: scripts start without them");
    }
    ipi_core::service::runtime().map_err(Error::Runtime)
}

/// Runs `config` on `runtime` (from [`runtime`]) until SIGTERM or SIGINT, serving the metrics
/// on `metrics` if given. Errors at start name the instance and the reason.
pub fn run(
    runtime: tokio::runtime::Runtime,
    config: Config,
    state_dir: &Path,
    reload: Loader,
    changes: Option<mpsc::UnboundedReceiver<()>>,
    metrics: Option<std::net::TcpListener>,
    probe: Option<ipi_core::acd::Timing>,
) -> Result<(), Error> {
    ipi_core::atomic::create_dir(state_dir).map_err(|source| Error::StateDir {
        path: state_dir.to_path_buf(),
        source,
    })?;
    runtime.block_on(async move {
        // keepalived's vrrp_startup_delay: nothing runs until it has passed (a network slow to
        // come up after a boot must not make this router master of a VRID it cannot hear).
        let delay = Duration::from_millis(u64::from(config.global.startup_delay_cs) * 10);
        if !delay.is_zero() {
            tracing::info!("vrrp_startup_delay: the instances start in {delay:?}");
            tokio::time::sleep(delay).await;
        }
        let mut d = Daemon::start(config, state_dir.to_path_buf(), reload, probe).await?;
        d.changes = changes;
        if let Some(listener) = metrics {
            let scrapes = d.telemetry.scrape_tx.clone();
            http::spawn(listener, scrapes).map_err(Error::Metrics)?;
        }
        d.run().await;
        Ok(())
    })
}

type Rx = (usize, Result<Received, crate::net::Error>);

struct Daemon {
    config: Config,
    state_dir: PathBuf,
    reload: Loader,
    netlink: Netlink,
    start: tokio::time::Instant,
    parts: Parts,
    tasks: Vec<JoinHandle<()>>,
    rx_tx: mpsc::Sender<Rx>,
    rx: mpsc::Receiver<Rx>,
    /// Datagrams the socket readers dropped because [`RX_QUEUE`] was full.
    rx_overflow: Arc<AtomicU64>,
    results_tx: mpsc::UnboundedSender<(String, bool)>,
    results: mpsc::UnboundedReceiver<(String, bool)>,
    links_tx: mpsc::UnboundedSender<(String, bool)>,
    links: mpsc::UnboundedReceiver<(String, bool)>,
    /// Per instance: rejected adverts by reason. Index "" holds what no instance could claim.
    invalid: BTreeMap<String, BTreeMap<&'static str, u64>>,
    /// Foreign routers, transitions with their reason, metrics scrapes.
    telemetry: telemetry::Telemetry,
    /// Track script runners by script, kept across reloads ([`reload::Runner`]).
    runners: BTreeMap<String, reload::Runner>,
    /// When each unit is due; which instance a datagram or a member is.
    timers: sched::Timers,
    index: sched::Index,
    /// State and status files, written off the event loop.
    files: files::Files,
    /// The notify FIFOs, open from start to exit (opened again when a reload changes them).
    fifos: fifo::Fifos,
    /// A state or priority changed since the status file was last written.
    status_dirty: Cell<bool>,
    /// When the status file was last written.
    status_written: Cell<tokio::time::Instant>,
    /// Spaced GARP / NA bursts still sending, by instance (`vrrp_garp_interval`).
    paced: RefCell<BTreeMap<String, JoinHandle<()>>>,
    /// The `vrrp_track_process` watcher, when an instance tracks a process.
    process_watch: Option<JoinHandle<()>>,
    /// The `track_file` reader, when an instance tracks a file, and its values.
    file_watch: Option<JoinHandle<()>>,
    values_tx: mpsc::UnboundedSender<(String, i64)>,
    values: mpsc::UnboundedReceiver<(String, i64)>,
    /// The source changed (the pool mode's store): load the configuration again.
    changes: Option<mpsc::UnboundedReceiver<()>>,
    /// How the VIPs are probed ([`conflict`]); `None`: not at all.
    probe: Option<ipi_core::acd::Timing>,
    probes_tx: mpsc::UnboundedSender<conflict::Batch>,
    probes: mpsc::UnboundedReceiver<conflict::Batch>,
}

/// How soon a state change shows in the status file, at the latest (unless the 1 s tick
/// comes first): changes within it share one write.
const STATUS_DELAY: Duration = Duration::from_millis(100);

/// How old the advert counters in the status file (sent and received) may get. States,
/// priorities, masters, tracked scripts and interfaces and rejected adverts show within
/// STATUS_DELAY.
const STATUS_REFRESH: Duration = Duration::from_secs(5);

/// How many waiting datagrams are handled in one go, per queue: a burst of 1,000 instances'
/// adverts within a few rounds, and a flood cannot hold the timers back for long.
const AT_MOST_PENDING: usize = 1024;

/// How many datagrams the socket readers queue for the event loop at most: four rounds of
/// 1,000 instances' adverts. A flood beyond it is dropped at the reader and counted
/// (`queue_full`), instead of growing the daemon's memory without bound.
const RX_QUEUE: usize = 4 * AT_MOST_PENDING;

impl Daemon {
    async fn start(
        config: Config,
        state_dir: PathBuf,
        reload: Loader,
        probe: Option<ipi_core::acd::Timing>,
    ) -> Result<Daemon, Error> {
        let netlink = Netlink::connect()?;
        let parts = setup::build(&config, &netlink, BTreeMap::new()).await?;
        let fifos = fifo::Fifos::open(&config.global.notify_fifos, &parts.readers);
        let (rx_tx, rx) = mpsc::channel(RX_QUEUE);
        let (probes_tx, probes) = mpsc::unbounded_channel();
        let (results_tx, results) = mpsc::unbounded_channel();
        let (links_tx, links) = mpsc::unbounded_channel();
        let (values_tx, values) = mpsc::unbounded_channel();
        let mut d = Daemon {
            config,
            state_dir,
            reload,
            netlink,
            start: tokio::time::Instant::now(),
            parts,
            tasks: Vec::new(),
            rx_tx,
            rx,
            rx_overflow: Arc::new(AtomicU64::new(0)),
            results_tx,
            results,
            links_tx,
            links,
            invalid: BTreeMap::new(),
            telemetry: telemetry::Telemetry::default(),
            runners: BTreeMap::new(),
            timers: sched::Timers::default(),
            index: sched::Index::default(),
            files: files::Files::start(),
            fifos,
            status_dirty: Cell::new(false),
            status_written: Cell::new(tokio::time::Instant::now()),
            paced: RefCell::new(BTreeMap::new()),
            process_watch: None,
            file_watch: None,
            values_tx,
            values,
            changes: None,
            probe,
            probes_tx,
            probes,
        };
        d.spawn_tasks().await?;
        d.parts_changed();
        d.clear_leftovers().await;
        d.start_units().await;
        ipi_core::service::notify_systemd("READY=1");
        d.write_status();
        Ok(d)
    }

    fn now(&self) -> Instant {
        Instant::from_millis(u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX))
    }

    /// Socket readers, script runners and link watchers.
    async fn spawn_tasks(&mut self) -> Result<(), Error> {
        for (n, socket) in self.parts.sockets.iter().enumerate() {
            let (socket, tx) = (Arc::clone(socket), self.rx_tx.clone());
            let overflow = Arc::clone(&self.rx_overflow);
            self.tasks.push(tokio::spawn(async move {
                loop {
                    let r = socket.recv().await;
                    if matches!(&r, Err(e) if !e.is_per_datagram()) {
                        // The socket's end: said to the loop whatever the queue holds.
                        let _ = tx.send((n, r)).await;
                        return;
                    }
                    match tx.try_send((n, r)) {
                        Ok(()) => {}
                        Err(mpsc::error::TrySendError::Full(_)) => {
                            overflow.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(mpsc::error::TrySendError::Closed(_)) => return,
                    }
                }
            }));
        }
        self.start_runners();
        self.watch_processes();
        self.watch_files();
        for name in self.parts.tracked_interfaces.clone() {
            let mut watcher = LinkWatcher::new_or_absent(&name).await.map_err(|source| {
                Error::TrackInterface {
                    name: name.clone(),
                    source,
                }
            })?;
            let tx = self.links_tx.clone();
            let _ = tx.send((name.clone(), watcher.current().up));
            self.tasks.push(tokio::spawn(async move {
                while let Ok(state) = watcher.changed().await {
                    if tx.send((name.clone(), state.up && state.present)).is_err() {
                        return;
                    }
                }
            }));
        }
        self.watch_sources();
        self.watch_unfinished();
        self.report_waiting();
        Ok(())
    }

    async fn run(&mut self) {
        let (Ok(mut term), Ok(mut int), Ok(mut hup)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
            signal(SignalKind::hangup()),
        ) else {
            tracing::error!("cannot install signal handlers");
            return;
        };
        let mut status_tick = tokio::time::interval(Duration::from_secs(1));
        // After a stall, one write rather than one per missed second.
        status_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            self.start_probes();
            let next = self.timers.earliest();
            let deadline = next.map(|at| self.start + Duration::from_millis(at.as_millis()));
            tokio::select! {
                () = sleep_until(deadline) => {
                    self.take_pending().await;
                    self.telemetry.cause(telemetry::Cause::Timer);
                    self.timers().await;
                }
                Some((socket, r)) = self.rx.recv() => {
                    self.received(socket, r).await;
                    self.take_queued().await;
                }
                Some((name, ok)) = self.results.recv() => {
                    self.each_tracking(|vr| tracks_script(vr, &name),
                        Event::ScriptResult { name: name.clone(), ok }).await;
                }
                Some((name, value)) = self.values.recv() => {
                    self.each_tracking(|vr| vr.cfg.track_files.iter().any(|t| t.name == name),
                        Event::FileValue { name: name.clone(), value }).await;
                }
                Some((name, up)) = self.links.recv() => {
                    tracing::info!("interface {name} is {}", if up { "up" } else { "down" });
                    self.each_tracking(|vr| tracks_interface(vr, &name),
                        Event::InterfaceChanged { name: name.clone(), up }).await;
                    self.interface_seen(&name).await;
                }
                _ = term.recv() => break,
                _ = int.recv() => break,
                _ = hup.recv() => {
                    self.telemetry.cause(telemetry::Cause::Reload);
                    self.reload().await;
                }
                Some(()) = changed(&mut self.changes) => {
                    // Changes that came meanwhile are in the one reload.
                    while self.changes.as_mut().is_some_and(|c| c.try_recv().is_ok()) {}
                    self.telemetry.cause(telemetry::Cause::Reload);
                    self.reload().await;
                }
                Some(scrape) = self.telemetry.scrapes.recv() => self.scrape(scrape),
                Some(found) = self.probes.recv() => self.probed(&found),
                _ = status_tick.tick() => {
                    // Counters alone refresh every STATUS_REFRESH: the status file of 1,000
                    // instances is ~400 KB of JSON and a write flushes it to disk.
                    if self.status_written.get().elapsed() >= STATUS_REFRESH {
                        self.status_dirty.set(true);
                    }
                }
            }
            // A change shows within STATUS_DELAY; a burst of changes costs one write.
            if self.status_dirty.get() && self.status_written.get().elapsed() >= STATUS_DELAY {
                self.write_status();
            }
        }
        self.telemetry.cause(telemetry::Cause::Shutdown);
        self.shutdown().await;
    }

    /// Answers a metrics scrape; scrapes within 100 ms of each other share one exposition.
    fn scrape(&mut self, scrape: http::Scrape) {
        let now = self.now();
        let fresh = match &self.telemetry.rendered {
            Some((at, text)) if now.saturating_duration_since(*at).as_millis() < 100 => {
                Arc::clone(text)
            }
            _ => {
                let text = metrics::render(&self.parts, &self.invalid, &self.telemetry, now);
                let text: Arc<str> = Arc::from(text);
                self.telemetry.rendered = Some((now, Arc::clone(&text)));
                text
            }
        };
        let _ = scrape.send(fresh);
    }

    /// Starts every unit that has not started yet (all at start; new ones after a reload).
    async fn start_units(&mut self) {
        let now = self.now();
        for u in 0..self.parts.units.len() {
            let unit = &mut self.parts.units[u];
            let fresh = match unit {
                Unit::One(i) => i.state() == State::Initialize,
                Unit::Group(g, _) => g.state() == State::Initialize,
            };
            if fresh {
                let actions = handle_all(unit, now, Event::Startup);
                self.carry_out(u, actions).await;
            }
        }
    }

    /// The instances or units were built anew or added to (start, reload, an interface that
    /// appeared or was created again): the dispatch maps are rebuilt and every unit armed with
    /// its next deadline.
    fn parts_changed(&mut self) {
        self.index = sched::Index::new(&self.parts.vrs);
        self.timers.clear();
        for u in 0..self.parts.units.len() {
            self.timers.arm(u, unit_timeout(&self.parts.units[u]));
        }
    }

    /// The datagrams the socket readers queued meanwhile, handled in one go (bounded, so that
    /// a flood cannot hold the timers back).
    async fn take_queued(&mut self) {
        for _ in 0..AT_MOST_PENDING {
            let Ok((socket, r)) = self.rx.try_recv() else {
                break;
            };
            self.received(socket, r).await;
        }
        let dropped = self.rx_overflow.swap(0, Ordering::Relaxed);
        if dropped > 0 {
            tracing::debug!("the receive queue was full: {dropped} datagrams dropped");
            self.count_many("", "queue_full", dropped);
        }
    }

    /// Adverts that arrived before a timer fired are heard before it: after a stall (a busy
    /// machine, a stopped process) the timer and queued adverts are ready at once, and a backup
    /// that took the timer first would declare a live master down (RFC 5798 6.4.2: an advert
    /// resets Master_Down_Timer). Bounded, so that a flood cannot hold the timers back.
    async fn take_pending(&mut self) {
        self.take_queued().await;
        for socket in 0..self.parts.sockets.len() {
            for _ in 0..AT_MOST_PENDING {
                let Some(r) = self.parts.sockets[socket].try_recv() else {
                    break;
                };
                self.received(socket, r).await;
            }
        }
    }

    /// The units that are due (only those: a wake-up costs the same with 1,000 instances).
    async fn timers(&mut self) {
        let now = self.now();
        for u in self.timers.due(now) {
            let Some(unit) = self.parts.units.get_mut(u) else {
                continue;
            };
            let actions = match unit {
                Unit::One(i) => i.handle_timeout(now).into_iter().map(|a| (0, a)).collect(),
                Unit::Group(g, _) => g.handle_timeout(now),
            };
            self.carry_out(u, actions).await;
        }
    }

    async fn each_tracking(&mut self, tracks: impl Fn(&Vr) -> bool, event: Event) {
        self.telemetry.cause(telemetry::Cause::of(&event));
        let now = self.now();
        let targets: Vec<(usize, usize)> = self
            .parts
            .vrs
            .iter()
            .filter(|v| tracks(v))
            .map(|v| (v.unit, v.member))
            .collect();
        self.status_dirty.set(true);
        for (u, m) in targets {
            let actions = handle(&mut self.parts.units[u], now, m, event.clone());
            self.carry_out(u, actions).await;
        }
    }

    async fn received(&mut self, socket: usize, r: Result<Received, crate::net::Error>) {
        let received = match r {
            Ok(r) => r,
            Err(e) if e.is_per_datagram() => {
                self.count("", "malformed");
                return;
            }
            Err(e) => {
                tracing::error!("VRRP socket: {e}");
                return;
            }
        };
        // A datagram read before a reload rebuilt the sockets may name one that is gone; our
        // own come back looped.
        let on = self.parts.sockets.get(socket);
        if on.is_none_or(|on| received.src == on.source()) {
            return;
        }
        let d = received.raw();
        let repr = match rx::parse(&d) {
            Ok(repr) => repr,
            Err(reject) => {
                tracing::debug!("dropped an advert from {}: {}", d.src, reject.name());
                self.count("", reject.name());
                return;
            }
        };
        let Some(vr) = self.index.by_vrid(socket, repr.vrid) else {
            if rx::addressed(d.dst, self.parts.is_unicast(socket)) {
                self.count("", rx::Reject::Vrid.name());
            }
            return;
        };
        if !rx::addressed(d.dst, self.parts.vrs[vr].cfg.is_unicast()) && self.parts.has_twin(vr) {
            return; // for the instance of this VRID in the other mode, on its own socket
        }
        if self.parts.heard_on_vmac(vr, socket) {
            return; // heard on the macvlan's socket too (net::vmac)
        }
        let checked = rx::check(&d, &repr, &self.parts.vrs[vr].expect)
            .and_then(|event| self.ah_fresh(vr, &d, repr.priority).map(|()| event));
        match checked {
            Ok(event) => {
                let (u, m) = (self.parts.vrs[vr].unit, self.parts.vrs[vr].member);
                let now = self.now();
                self.telemetry
                    .advert(&self.parts.vrs[vr].cfg.name, repr.priority);
                let master = |unit: &Unit| unit.member(m).and_then(crate::fsm::Instance::master);
                let before = master(&self.parts.units[u]);
                let actions = handle(&mut self.parts.units[u], now, m, event);
                if master(&self.parts.units[u]) != before {
                    self.status_dirty.set(true); // `vrrpd status` names the master
                }
                self.carry_out(u, actions).await;
            }
            Err(reject) => {
                let name = self.parts.vrs[vr].cfg.name.clone();
                tracing::debug!(
                    "{name}: dropped an advert from {}: {}",
                    d.src,
                    reject.name()
                );
                self.count(&name, reject.name());
                let v = &self.parts.vrs[vr];
                let heard = clash::Heard {
                    instance: &name,
                    interface: &v.interface.name,
                    source: d.src,
                    repr: &repr,
                    expect: &v.expect,
                };
                if self
                    .telemetry
                    .clashes
                    .heard(self.now(), heard, reject)
                    .is_some()
                {
                    // A second cluster on our VRID may hold our VIPs too.
                    self.probe_vips(vr);
                }
            }
        }
    }

    /// keepalived's anti-replay check of an AH advert that passed the others: its sequence
    /// number must be new to the instance. A master that hears a lower priority goes on past
    /// the number it heard, as keepalived's does.
    fn ah_fresh(&self, vr: usize, d: &RawDatagram<'_>, priority: u8) -> Result<(), rx::Reject> {
        let v = &self.parts.vrs[vr];
        let (Some(ah), Some(header)) = (&v.ah, &d.ah) else {
            return Ok(());
        };
        if !ah.accept(header.seq()) {
            return Err(rx::Reject::Replay);
        }
        let me = self.parts.units[v.unit].member(v.member);
        if me.is_some_and(|i| i.state() == State::Master && priority < i.priority()) {
            ah.past(header.seq());
        }
        Ok(())
    }

    fn count(&mut self, instance: &str, reason: &'static str) {
        self.count_many(instance, reason, 1);
    }

    fn count_many(&mut self, instance: &str, reason: &'static str, n: u64) {
        // Rejected adverts show at once (a clash, a misconfiguration); a flood of them costs
        // one status write per STATUS_DELAY.
        self.status_dirty.set(true);
        *self
            .invalid
            .entry(instance.to_string())
            .or_default()
            .entry(reason)
            .or_default() += n;
    }

    async fn carry_out(&mut self, unit: usize, actions: Vec<(usize, Action)>) {
        // The members changed state as they handled what came: the group was in the state
        // their first `from` gives (the last written first, so that the first one stays).
        let was: Vec<(usize, State)> = (actions.iter().rev())
            .filter_map(|(m, a)| match a {
                Action::StateChanged { from, .. } => Some((*m, *from)),
                _ => None,
            })
            .collect();
        let group_before = match &self.parts.units[unit] {
            Unit::Group(g, name) => Some((name.clone(), g.state_with(&was))),
            Unit::One(_) => None,
        };
        for (member, action) in actions {
            if let Some(vr) = self.vr_of(unit, member) {
                self.act(vr, action).await;
            }
        }
        let group_after = group_state(&self.parts.units[unit]);
        if let (Some((name, before)), Some((_, after))) = (group_before, group_after) {
            if before != after {
                self.notify_group(&name, after);
            }
        }
        // Whatever the unit handled may have moved its deadline.
        self.timers.arm(unit, unit_timeout(&self.parts.units[unit]));
    }

    async fn act(&mut self, vr: usize, action: Action) {
        match action {
            Action::SendAdvert { priority } => self.send_advert(vr, priority).await,
            Action::AddVips => self.vips(vr, true).await,
            Action::RemoveVips => self.vips(vr, false).await,
            Action::SendGarp { repeat } => self.garp(vr, repeat),
            Action::StateChanged { from, to, priority } => {
                let name = &self.parts.vrs[vr].cfg.name;
                let reason = self.telemetry.transition(name, from, to, priority);
                tracing::info!(
                    "{name}: {} -> {} (priority {priority}, {})",
                    from.as_str(),
                    to.as_str(),
                    reason.name()
                );
                self.write_state(name, to);
                if let (State::Master, Some(ah)) = (to, &self.parts.vrs[vr].ah) {
                    ah.on_master();
                }
                let notify = &self.parts.vrs[vr].cfg.notify;
                self.fifos.write("INSTANCE", name, to, priority);
                run_notify(&self.parts, notify, "INSTANCE", name, to, priority);
                self.status_dirty.set(true);
                if from == State::Initialize {
                    // Started (or started again by a reload): ask the wire before it can be
                    // MASTER (see `conflict` for the timing).
                    self.probe_vips(vr);
                }
            }
            Action::PriorityChanged { from, to } => {
                tracing::info!("{}: priority {from} -> {to}", self.parts.vrs[vr].cfg.name);
                self.status_dirty.set(true);
            }
        }
    }

    /// An advert of the instance's group (RFC 5798 5.1: from its primary address, TTL 255).
    async fn send_advert(&self, vr: usize, priority: u8) {
        let v = &self.parts.vrs[vr];
        let repr = Repr {
            version: v.expect.version,
            vrid: v.cfg.vrid,
            priority,
            advert_int: v.cfg.advert_int_cs,
            // RFC 5798 removed authentication; only VRRPv2 carries it.
            auth: if v.expect.version == ipi_core::vrrp::Version::V2 {
                v.cfg.auth()
            } else {
                ipi_core::vrrp::Auth::None
            },
            addresses: v.expect.addresses.clone(),
        };
        let socket = Arc::clone(&self.parts.sockets[v.send_socket]);
        let sent = match &v.ah {
            Some(ah) => (socket.send_advert_ah(&repr, &v.destinations, &ah.key, ah.next())).await,
            None => (socket.send_advert(&repr, &v.destinations, ChecksumMode::PseudoHeader)).await,
        };
        if let Err(e) = sent {
            tracing::warn!("{}: advert not sent: {e}", v.cfg.name);
        }
    }

    /// A spaced burst of instance `name` still sending, stopped.
    fn stop_paced(&self, name: &str) {
        if let Some(task) = self.paced.borrow_mut().remove(name) {
            task.abort();
        }
    }

    /// Adds (`add`) or removes the instance's VIPs, and its `virtual_routes` after them (a
    /// route's `src` may be a VIP) or before them; a failure is logged and the others go on.
    async fn vips(&self, vr: usize, add: bool) {
        let v = &self.parts.vrs[vr];
        if !add {
            // No more announcements for addresses this router gives up.
            self.stop_paced(&v.cfg.name);
            self.routes(vr, false).await;
        }
        if add {
            self.vmac_up(vr, true).await;
        }
        for (interface, vip) in &v.vips {
            let r = if add {
                self.netlink.add_address(interface, vip).await
            } else {
                self.netlink.remove_address(interface, vip).await
            };
            if let Err(e) = r {
                tracing::error!("{}: {vip} on {}: {e}", v.cfg.name, interface.name);
            }
        }
        if add {
            self.routes(vr, true).await;
        } else {
            self.vmac_up(vr, false).await;
        }
    }

    /// A `use_vmac` instance's macvlan set up before its VIPs are added, down after they are
    /// removed: only a master's is up ([`crate::net::vmac`]).
    async fn vmac_up(&self, vr: usize, up: bool) {
        let v = &self.parts.vrs[vr];
        let Some((vmac, _)) = &v.vmac else { return };
        match self.netlink.set_vmac_up(vmac, up).await {
            Ok(()) => v.vmac_up.set(up),
            Err(e) => tracing::error!("{}: {e}", v.cfg.name),
        }
    }

    /// Removes the VIPs that an earlier run left on the interfaces (one killed with SIGKILL
    /// or that crashed could not give them back), before any instance starts: every instance
    /// starts in Backup (or becomes Master and adds them again), and a Backup must not hold
    /// its addresses (RFC 5798 6.4.2: it MUST NOT answer ARP for them nor accept packets for
    /// them). Left in place, the node holds the VIP beside the new master for good (seen by
    /// the chaos schedule: two holders after SIGKILL of the holder's vrrpd).
    async fn clear_leftovers(&self) {
        // An address owner's VIPs are its own addresses (RFC 5798 3): never taken away.
        for (n, v) in self.parts.vrs.iter().enumerate() {
            // A macvlan left up by an earlier run: down until the instance is master.
            if v.vmac.as_ref().is_some_and(|(on, _)| on.admin_up) {
                self.vmac_up(n, false).await;
            }
        }
        for v in self.parts.vrs.iter().filter(|v| v.cfg.priority != 255) {
            for (interface, vip) in &v.vips {
                match self.netlink.remove_address(interface, vip).await {
                    Ok(Outcome::Changed) => tracing::warn!(
                        "{}: {vip} was on {} at start (left by an earlier run): removed",
                        v.cfg.name,
                        interface.name
                    ),
                    Ok(Outcome::Unchanged) => {}
                    Err(e) => tracing::error!("{}: {vip} on {}: {e}", v.cfg.name, interface.name),
                }
            }
        }
    }

    /// Adds the instance's `virtual_routes` then its `virtual_rules`, or removes them in the
    /// other order; a failure is logged.
    async fn routes(&self, vr: usize, add: bool) {
        let v = &self.parts.vrs[vr];
        if !add {
            for rule in &v.rules {
                if let Err(e) = self.netlink.remove_rule(rule).await {
                    tracing::error!("{}: {e}", v.cfg.name);
                }
            }
        }
        for route in &v.routes {
            let r = if add {
                self.netlink.add_route(route).await
            } else {
                self.netlink.remove_route(route).await
            };
            if let Err(e) = r {
                tracing::error!("{}: {e}", v.cfg.name);
            }
        }
        if add {
            for rule in &v.rules {
                if let Err(e) = self.netlink.add_rule(rule).await {
                    tracing::error!("{}: {e}", v.cfg.name);
                }
            }
        }
    }

    /// `repeat` gratuitous ARPs / unsolicited NAs for every address held (VIPs and excluded
    /// ones, as keepalived), stopping at the first failure. With `vrrp_garp_interval` or
    /// `vrrp_gna_interval`, the messages are spaced by a task of their own, which a later burst
    /// or the VIPs' removal stops.
    fn garp(&self, vr: usize, repeat: u32) {
        let v = &self.parts.vrs[vr];
        let Some(a) = &v.announcer else {
            return;
        };
        let held: Vec<std::net::IpAddr> = v.vips.iter().map(|(_, vip)| vip.address).collect();
        let g = &self.config.global;
        let (garp, gna) = (
            Duration::from_micros(u64::from(g.garp_interval_us)),
            Duration::from_micros(u64::from(g.gna_interval_us)),
        );
        self.stop_paced(&v.cfg.name);
        if !garp.is_zero() || !gna.is_zero() {
            let (a, name) = (a.clone(), v.cfg.name.clone());
            let task = tokio::spawn(async move {
                let pause = |address: &std::net::IpAddr| if address.is_ipv4() { garp } else { gna };
                if let Err(e) = a.paced(&held, repeat, pause).await {
                    tracing::warn!("{name}: gratuitous ARP / NA: {e}");
                }
            });
            self.paced.borrow_mut().insert(v.cfg.name.clone(), task);
            return;
        }
        for _ in 0..repeat {
            if let Err(e) = a.announce(&held) {
                tracing::warn!("{}: gratuitous ARP / NA: {e}", v.cfg.name);
                break;
            }
        }
    }

    fn notify_group(&self, group: &str, state: State) {
        let Some(g) = self.config.sync_groups.iter().find(|g| g.name == group) else {
            return;
        };
        self.fifos.write("GROUP", group, state, 0);
        run_notify(&self.parts, &g.notify, "GROUP", group, state, 0);
    }

    /// Writes `STATE_DIR/INSTANCE` (off the event loop, see `files`: the writes to one file keep
    /// their order, so every state file is written this way).
    fn write_state(&self, instance: &str, state: State) {
        let path = self.state_dir.join(instance);
        self.files.write(path, status::state_file(state));
    }

    /// Writes the status file (off the event loop, see `files`).
    fn write_status(&self) {
        self.status_dirty.set(false);
        self.status_written.set(tokio::time::Instant::now());
        let clashes = (
            &self.telemetry.clashes,
            &self.telemetry.conflicts,
            self.now(),
        );
        let mut text = status::snapshot(&self.parts, &self.invalid, clashes, &self.config.services);
        text.push('\n');
        self.files
            .write(self.state_dir.join(status::STATUS_FILE), text.into_bytes());
    }

    /// The index in `parts.vrs` of member `member` of unit `unit`.
    fn vr_of(&self, unit: usize, member: usize) -> Option<usize> {
        self.index.by_member(unit, member)
    }

    /// SIGTERM: every master resigns with priority 0 (RFC 5798 6.4.3: a backup takes over
    /// after its Skew_Time) and removes its VIPs; notify_stop runs.
    async fn shutdown(&mut self) {
        tracing::info!("shutting down");
        let now = self.now();
        for u in 0..self.parts.units.len() {
            let actions = handle_all(&mut self.parts.units[u], now, Event::Shutdown);
            self.carry_out(u, actions).await;
        }
        self.write_status();
        self.files.flush();
        std::mem::take(&mut self.fifos).close().await;
        for t in self.tasks.drain(..) {
            t.abort();
        }
        self.runners.clear();
        // keepalived deletes its macvlans at exit: the VIPs are gone from them already.
        self.netlink.remove_vmacs(|_| false).await;
        // Let notify_stop scripts start before the runtime goes.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `event` for every member of `unit`.
fn handle_all(unit: &mut Unit, now: Instant, event: Event) -> Vec<(usize, Action)> {
    match unit {
        Unit::One(i) => i.handle(now, event).into_iter().map(|a| (0, a)).collect(),
        Unit::Group(g, _) => g.handle_all(now, event),
    }
}

fn handle(unit: &mut Unit, now: Instant, member: usize, event: Event) -> Vec<(usize, Action)> {
    match unit {
        Unit::One(i) => i.handle(now, event).into_iter().map(|a| (0, a)).collect(),
        Unit::Group(g, _) => g.handle(now, member, event),
    }
}

fn unit_timeout(unit: &Unit) -> Option<Instant> {
    match unit {
        Unit::One(i) => i.poll_timeout(),
        Unit::Group(g, _) => g.poll_timeout(),
    }
}

fn group_state(unit: &Unit) -> Option<(String, State)> {
    match unit {
        Unit::Group(g, name) => Some((name.clone(), g.state())),
        Unit::One(_) => None,
    }
}

/// Whether `vr` tracks the script, or the process ([`processes::key`]), results come for.
fn tracks_script(vr: &Vr, name: &str) -> bool {
    vr.cfg.track_scripts.iter().any(|t| t.name == name)
        || vr
            .cfg
            .track_processes
            .iter()
            .any(|t| processes::key(&t.name) == name)
}

fn tracks_interface(vr: &Vr, name: &str) -> bool {
    vr.cfg.track_interfaces.iter().any(|t| t.name == name)
        || (vr.cfg.interface == name && !vr.cfg.dont_track_primary)
        || setup::source_track(&vr.cfg).as_deref() == Some(name)
}

/// Runs the notify scripts of an instance or a sync group (`kind` INSTANCE or GROUP) that
/// entered `state`: the state's own (`notify_master`...), then `notify` with keepalived's
/// arguments: KIND NAME STATE PRIORITY. Those setup disabled (not found, or refused by script
/// security) are not run; setup said why.
fn run_notify(parts: &Parts, notify: &Notify, kind: &str, name: &str, state: State, priority: u8) {
    let specific = match state {
        State::Master => &notify.master,
        State::Backup => &notify.backup,
        State::Fault => &notify.fault,
        State::Stopped => &notify.stop,
        State::Initialize => &None,
    };
    let run = |c: &crate::config::Command, args: &[String]| {
        if let Some(program) = parts.notifiers.get(&c.words) {
            scripts::notify(program, c, args, parts.notify_as);
        }
    };
    if let Some(c) = specific {
        run(c, &[]);
    }
    if let Some(c) = &notify.any {
        let args = [
            kind.to_string(),
            name.to_string(),
            status::keepalived_state(state).to_string(),
            priority.to_string(),
        ];
        run(c, &args);
    }
}

/// The next change of the source; never, when nothing announces changes.
async fn changed(changes: &mut Option<mpsc::UnboundedReceiver<()>>) -> Option<()> {
    match changes {
        Some(c) => c.recv().await,
        None => std::future::pending().await,
    }
}

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}
