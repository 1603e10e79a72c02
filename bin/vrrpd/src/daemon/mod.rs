//! The daemon: the sans-IO state machines ([`crate::fsm`]) driven by the real clock, the
//! network ([`crate::net`]), track scripts and signals, on one tokio thread. One thread is
//! enough (VRRP is a few packets a second per instance) and keeps every decision in one
//! order: no locks, no races between a timer and an advert.
//!
//! - `engine`: the daemon's state, its start, and the state machines' actions carried out
//!   (`host`: on this host's addresses, routes and links); this module's loop hands it what
//!   comes, `inputs` (one typed channel from the tasks of `tasks`), timers and signals.
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
mod engine;
mod error;
mod fifo;
mod files;
mod host;
mod inputs;
pub mod plan;
mod processes;
mod reload;
pub mod rx;
pub mod sched;
pub mod script_security;
pub mod scripts;
pub mod setup;
pub mod status;
mod tasks;
pub mod track_files;

pub mod clash;
pub mod conflict;
mod http;
pub mod metrics;
mod telemetry;

use std::path::Path;
use std::time::Duration;

use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::mpsc;

use crate::fsm::Event;

pub use engine::Loader;
use engine::{tracks_interface, tracks_script, Daemon, AT_MOST_PENDING};
pub use error::Error;
use inputs::{Input, Queue};

/// How soon a state change shows in the status file, at the latest (unless the 1 s tick
/// comes first): changes within it share one write.
const STATUS_DELAY: Duration = Duration::from_millis(100);

/// How old the advert counters in the status file (sent and received) may get. States,
/// priorities, masters, tracked scripts and interfaces and rejected adverts show within
/// STATUS_DELAY.
const STATUS_REFRESH: Duration = Duration::from_secs(5);

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
    config: crate::config::Config,
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
        let (mut d, queue) = Daemon::start(config, state_dir.to_path_buf(), reload, probe).await?;
        if let Some(listener) = metrics {
            let scrapes = d.telemetry.scrape_tx.clone();
            http::spawn(listener, scrapes).map_err(Error::Metrics)?;
        }
        serve(&mut d, queue, changes).await;
        Ok(())
    })
}

/// The event loop, until SIGTERM or SIGINT: timers, inputs, reloads, scrapes, and the status
/// file kept fresh.
async fn serve(d: &mut Daemon, mut queue: Queue, mut changes: Option<mpsc::UnboundedReceiver<()>>) {
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
        d.start_probes();
        let deadline = d.deadline();
        tokio::select! {
            () = sleep_until(deadline) => {
                take_pending(d, &mut queue).await;
                d.telemetry.cause(telemetry::Cause::Timer);
                d.timers().await;
            }
            Some(input) = queue.recv() => {
                take(d, input).await;
                take_queued(d, &mut queue).await;
            }
            _ = term.recv() => break,
            _ = int.recv() => break,
            _ = hup.recv() => {
                d.telemetry.cause(telemetry::Cause::Reload);
                d.reload().await;
            }
            Some(()) = changed(&mut changes) => {
                // Changes that came meanwhile are in the one reload.
                while changes.as_mut().is_some_and(|c| c.try_recv().is_ok()) {}
                d.telemetry.cause(telemetry::Cause::Reload);
                d.reload().await;
            }
            Some(scrape) = d.telemetry.scrapes.recv() => d.scrape(scrape),
            _ = status_tick.tick() => {
                // Counters alone refresh every STATUS_REFRESH: the status file of 1,000
                // instances is ~400 KB of JSON and a write flushes it to disk.
                if d.state_dir.older_than(STATUS_REFRESH) {
                    d.state_dir.changed();
                }
            }
        }
        // A change shows within STATUS_DELAY; a burst of changes costs one write.
        if d.state_dir.due(STATUS_DELAY) {
            d.write_status();
        }
    }
    d.telemetry.cause(telemetry::Cause::Shutdown);
    d.shutdown().await;
}

/// One input from the tasks, handed to the state machines it concerns.
async fn take(d: &mut Daemon, input: Input) {
    match input {
        Input::Datagram {
            epoch,
            socket,
            received,
        } => {
            if d.inputs.current(epoch) {
                d.received(socket, received).await;
            }
        }
        Input::Script { name, ok } => {
            let event = Event::ScriptResult {
                name: name.clone(),
                ok,
            };
            d.each_tracking(|vr| tracks_script(vr, &name), event).await;
        }
        Input::FileValue { name, value } => {
            let event = Event::FileValue {
                name: name.clone(),
                value,
            };
            let tracks = |vr: &setup::Vr| vr.cfg.track_files.iter().any(|t| t.name == name);
            d.each_tracking(tracks, event).await;
        }
        Input::Link { name, up } => {
            tracing::info!("interface {name} is {}", if up { "up" } else { "down" });
            let event = Event::InterfaceChanged {
                name: name.clone(),
                up,
            };
            d.each_tracking(|vr| tracks_interface(vr, &name), event)
                .await;
            d.interface_seen(&name).await;
        }
        Input::Probed(batch) => d.probed(&batch),
    }
}

/// What the tasks queued meanwhile, handled in one go (bounded, so that a flood cannot hold
/// the timers back).
async fn take_queued(d: &mut Daemon, queue: &mut Queue) {
    for _ in 0..AT_MOST_PENDING {
        let Some(input) = queue.try_recv() else {
            break;
        };
        take(d, input).await;
    }
    let dropped = queue.dropped();
    if dropped > 0 {
        tracing::debug!("the receive queue was full: {dropped} datagrams dropped");
        d.count_many("", "queue_full", dropped);
    }
}

/// Adverts that arrived before a timer fired are heard before it: after a stall (a busy
/// machine, a stopped process) the timer and queued adverts are ready at once, and a backup
/// that took the timer first would declare a live master down (RFC 5798 6.4.2: an advert
/// resets Master_Down_Timer). Bounded, so that a flood cannot hold the timers back.
async fn take_pending(d: &mut Daemon, queue: &mut Queue) {
    take_queued(d, queue).await;
    for socket in 0..d.parts.sockets.len() {
        for _ in 0..AT_MOST_PENDING {
            let Some(r) = d.parts.sockets[socket].try_recv() else {
                break;
            };
            d.received(socket, r).await;
        }
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
