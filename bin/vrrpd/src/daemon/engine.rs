//! The daemon's state and what it does with it: the configuration running as [`Parts`]
//! (sockets, interfaces, state machines), the timers, the tasks beside the loop, the state
//! directory, and the actions the state machines ask for carried out on the wire and the host.
//! [`super::reload`] changes it in place; the event loop (`super::run`) hands it what comes.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use ipi_core::vrrp::{ChecksumMode, RawDatagram, Repr};

use super::error::Error;
use super::files::StateDir;
use super::host::Host;
use super::inputs::{self, Inputs, Queue};
use super::setup::{self, Parts, Unit, Vr};
use super::tasks::Tasks;
use super::{
    clash, conflict, fifo, http, metrics, processes, rx, sched, scripts, status, telemetry,
};
use crate::config::{Config, Notify};
use crate::fsm::{Action, Event, Instant, State};
use crate::net::{Netlink, Received};

/// Loads the configuration again on SIGHUP.
pub type Loader = Box<dyn Fn() -> Result<Config, crate::config::SourceError>>;

/// How many waiting datagrams are handled in one go: a burst of 1,000 instances' adverts
/// within a few rounds, and a flood cannot hold the timers back for long.
pub(super) const AT_MOST_PENDING: usize = 1024;

/// How many datagrams the socket readers queue for the event loop at most: four rounds of
/// 1,000 instances' adverts. A flood beyond it is dropped at the reader and counted
/// (`queue_full`), instead of growing the daemon's memory without bound.
const RX_QUEUE: usize = 4 * AT_MOST_PENDING;

/// The running daemon.
pub(super) struct Daemon {
    pub(super) config: Config,
    pub(super) reload: Loader,
    /// Where the state machines' clock starts ([`Daemon::now`]).
    start: tokio::time::Instant,
    pub(super) parts: Parts,
    /// The rtnetlink connection and the announcements being sent.
    pub(super) host: Host,
    /// The tasks' side of the loop's inputs.
    pub(super) inputs: Inputs,
    /// Per instance: rejected adverts by reason. Index "" holds what no instance could claim.
    pub(super) invalid: BTreeMap<String, BTreeMap<&'static str, u64>>,
    /// Foreign routers, transitions with their reason, metrics scrapes, VIP conflicts.
    pub(super) telemetry: telemetry::Telemetry,
    /// When each unit is due; which instance a datagram or a member is.
    pub(super) timers: sched::Timers,
    pub(super) index: sched::Index,
    /// State and status files, written off the event loop.
    pub(super) state_dir: StateDir,
    /// The notify FIFOs, open from start to exit (opened again when a reload changes them).
    pub(super) fifos: fifo::Fifos,
    /// Socket readers, script runners, watchers.
    pub(super) tasks: Tasks,
    /// How the VIPs are probed ([`conflict`]); `None`: not at all.
    pub(super) probe: Option<ipi_core::acd::Timing>,
}

impl Daemon {
    /// Builds `config` on this host and starts it: the tasks beside the loop, every unit,
    /// systemd told. The loop's side of the inputs is returned beside the daemon.
    pub(super) async fn start(
        config: Config,
        state_dir: PathBuf,
        reload: Loader,
        probe: Option<ipi_core::acd::Timing>,
    ) -> Result<(Daemon, Queue), Error> {
        let netlink = Netlink::connect()?;
        let parts = setup::build(&config, &netlink, BTreeMap::new()).await?;
        let fifos = fifo::Fifos::open(&config.global.notify_fifos, &parts.readers);
        let (inputs, queue) = inputs::channel(RX_QUEUE);
        let mut d = Daemon {
            config,
            reload,
            start: tokio::time::Instant::now(),
            parts,
            host: Host::new(netlink),
            inputs,
            invalid: BTreeMap::new(),
            telemetry: telemetry::Telemetry::default(),
            timers: sched::Timers::default(),
            index: sched::Index::default(),
            state_dir: StateDir::new(state_dir),
            fifos,
            tasks: Tasks::default(),
            probe,
        };
        d.spawn_tasks().await?;
        d.parts_changed();
        d.host.clear_leftovers(&d.parts.vrs).await;
        d.start_units().await;
        ipi_core::service::notify_systemd("READY=1");
        d.write_status();
        Ok((d, queue))
    }

    /// The tasks beside the loop started for the parts as they are now
    /// ([`Tasks::start`]); the instances that wait for an interface said again.
    pub(super) async fn spawn_tasks(&mut self) -> Result<(), Error> {
        self.tasks
            .start(&self.config, &self.parts, &self.inputs)
            .await?;
        self.report_waiting();
        Ok(())
    }

    /// Says in the log, the state files and the status which instances wait for an
    /// interface.
    fn report_waiting(&self) {
        for w in &self.parts.waiting {
            tracing::error!("{}: FAULT: {}", w.name, w.reason);
            self.write_state(&w.name, State::Fault);
        }
    }

    /// When the first unit is due, on tokio's clock.
    pub(super) fn deadline(&mut self) -> Option<tokio::time::Instant> {
        let next = self.timers.earliest()?;
        Some(self.start + Duration::from_millis(next.as_millis()))
    }

    pub(super) fn now(&self) -> Instant {
        Instant::from_millis(u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX))
    }

    /// Answers a metrics scrape; scrapes within 100 ms of each other share one exposition.
    pub(super) fn scrape(&mut self, scrape: http::Scrape) {
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
    pub(super) async fn start_units(&mut self) {
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
    pub(super) fn parts_changed(&mut self) {
        self.index = sched::Index::new(&self.parts.vrs);
        self.timers.clear();
        for u in 0..self.parts.units.len() {
            self.timers.arm(u, unit_timeout(&self.parts.units[u]));
        }
    }

    /// The units that are due (only those: a wake-up costs the same with 1,000 instances).
    pub(super) async fn timers(&mut self) {
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

    pub(super) async fn each_tracking(&mut self, tracks: impl Fn(&Vr) -> bool, event: Event) {
        self.telemetry.cause(telemetry::Cause::of(&event));
        let now = self.now();
        let targets: Vec<(usize, usize)> = self
            .parts
            .vrs
            .iter()
            .filter(|v| tracks(v))
            .map(|v| (v.unit, v.member))
            .collect();
        self.state_dir.changed();
        for (u, m) in targets {
            let actions = handle(&mut self.parts.units[u], now, m, event.clone());
            self.carry_out(u, actions).await;
        }
    }

    pub(super) async fn received(&mut self, socket: usize, r: Result<Received, crate::net::Error>) {
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
                    self.state_dir.changed(); // `vrrpd status` names the master
                }
                self.carry_out(u, actions).await;
            }
            Err(reject) => self.rejected(vr, &d, &repr, reject),
        }
    }

    /// An advert of instance `vr` that its checks refused: counted, and told to the clash
    /// watch (a foreign router on our VRID), which may ask for the VIPs to be probed.
    fn rejected(&mut self, vr: usize, d: &RawDatagram<'_>, repr: &Repr, reject: rx::Reject) {
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
            repr,
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

    pub(super) fn count_many(&mut self, instance: &str, reason: &'static str, n: u64) {
        // Rejected adverts show at once (a clash, a misconfiguration); a flood of them costs
        // one status write per STATUS_DELAY.
        self.state_dir.changed();
        *self
            .invalid
            .entry(instance.to_string())
            .or_default()
            .entry(reason)
            .or_default() += n;
    }

    pub(super) async fn carry_out(&mut self, unit: usize, actions: Vec<(usize, Action)>) {
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

    pub(super) async fn act(&mut self, vr: usize, action: Action) {
        match action {
            Action::SendAdvert { priority } => self.send_advert(vr, priority).await,
            Action::AddVips => self.host.vips(&self.parts.vrs[vr], true).await,
            Action::RemoveVips => self.host.vips(&self.parts.vrs[vr], false).await,
            Action::SendGarp { repeat } => {
                self.host
                    .garp(&self.parts.vrs[vr], repeat, &self.config.global);
            }
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
                self.state_dir.changed();
                if from == State::Initialize {
                    // Started (or started again by a reload): ask the wire before it can be
                    // MASTER (see `conflict` for the timing).
                    self.probe_vips(vr);
                }
            }
            Action::PriorityChanged { from, to } => {
                tracing::info!("{}: priority {from} -> {to}", self.parts.vrs[vr].cfg.name);
                self.state_dir.changed();
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

    fn notify_group(&self, group: &str, state: State) {
        let Some(g) = self.config.sync_groups.iter().find(|g| g.name == group) else {
            return;
        };
        self.fifos.write("GROUP", group, state, 0);
        run_notify(&self.parts, &g.notify, "GROUP", group, state, 0);
    }

    /// Writes `STATE_DIR/INSTANCE` (off the event loop, see `files`).
    pub(super) fn write_state(&self, instance: &str, state: State) {
        self.state_dir.state(instance, status::state_file(state));
    }

    /// Writes the status file (off the event loop, see `files`).
    pub(super) fn write_status(&self) {
        let clashes = (
            &self.telemetry.clashes,
            &self.telemetry.conflicts,
            self.now(),
        );
        let mut text = status::snapshot(&self.parts, &self.invalid, clashes, &self.config.services);
        text.push('\n');
        self.state_dir.status(text);
    }

    /// Asks for a probe of instance `vr`'s VIPs (unless probing is off).
    pub(super) fn probe_vips(&mut self, vr: usize) {
        if self.probe.is_some() {
            self.telemetry.conflicts.ask(&self.parts.vrs[vr].cfg.name);
        }
    }

    /// Starts the next batch of probes, if one is due ([`conflict::spawn`]).
    pub(super) fn start_probes(&mut self) {
        let Some(timing) = self.probe else {
            return;
        };
        let Some(names) = self.telemetry.conflicts.next_batch() else {
            return;
        };
        // Each instance's VIPs, by the interface they are probed on; the listening lasts at
        // least two of the slowest advert intervals.
        let mut instances = Vec::new();
        let mut by_interface: BTreeMap<String, BTreeSet<IpAddr>> = BTreeMap::new();
        let mut advert = Duration::ZERO;
        for v in self
            .parts
            .vrs
            .iter()
            .filter(|v| names.contains(&v.cfg.name))
        {
            for (interface, vip) in &v.vips {
                // A use_vmac macvlan is down but on a master: probed from the interface.
                let on = match &v.vmac {
                    Some((vmac, _)) if vmac.index == interface.index => &v.interface,
                    _ => interface,
                };
                let on = by_interface.entry(on.name.clone()).or_default();
                on.insert(vip.address);
            }
            let vips = v.vips.iter().map(|(_, vip)| vip.address).collect();
            instances.push((v.cfg.name.clone(), vips));
            advert = advert.max(Duration::from_millis(u64::from(v.cfg.advert_int_cs) * 10));
        }
        let by_interface = (by_interface.into_iter())
            .map(|(i, set)| (i, set.into_iter().collect()))
            .collect();
        let inputs = self.inputs.clone();
        conflict::spawn(instances, by_interface, timing, advert, move |batch| {
            inputs.probed(batch);
        });
    }

    /// What a batch of probes found, taken in: status and metrics show it from now on.
    pub(super) fn probed(&mut self, batch: &conflict::Batch) {
        let (now, t, vrs) = (self.now(), &mut self.telemetry, &self.parts.vrs);
        let vrid = |name: &str| vrs.iter().find(|v| v.cfg.name == name).map(|v| v.cfg.vrid);
        (t.conflicts).took(batch, vrid, &t.clashes, now);
        self.state_dir.changed();
    }

    /// The index in `parts.vrs` of member `member` of unit `unit`.
    pub(super) fn vr_of(&self, unit: usize, member: usize) -> Option<usize> {
        self.index.by_member(unit, member)
    }

    /// SIGTERM: every master resigns with priority 0 (RFC 5798 6.4.3: a backup takes over
    /// after its Skew_Time) and removes its VIPs; notify_stop runs.
    pub(super) async fn shutdown(&mut self) {
        tracing::info!("shutting down");
        let now = self.now();
        for u in 0..self.parts.units.len() {
            let actions = handle_all(&mut self.parts.units[u], now, Event::Shutdown);
            self.carry_out(u, actions).await;
        }
        self.write_status();
        self.state_dir.flush();
        std::mem::take(&mut self.fifos).close().await;
        self.tasks.stop();
        // keepalived deletes its macvlans at exit: the VIPs are gone from them already.
        self.host.netlink.remove_vmacs(|_| false).await;
        // Let notify_stop scripts start before the runtime goes.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `event` for every member of `unit`.
pub(super) fn handle_all(unit: &mut Unit, now: Instant, event: Event) -> Vec<(usize, Action)> {
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
pub(super) fn tracks_script(vr: &Vr, name: &str) -> bool {
    vr.cfg.track_scripts.iter().any(|t| t.name == name)
        || vr
            .cfg
            .track_processes
            .iter()
            .any(|t| processes::key(&t.name) == name)
}

pub(super) fn tracks_interface(vr: &Vr, name: &str) -> bool {
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
