//! SIGHUP: the new configuration read, compared with the running one ([`super::plan`]) and
//! carried out; the track script runners, which a reload leaves running unless how a script
//! runs changed; and the interfaces that come late or whose address moves: an instance whose
//! interface does not exist waits in FAULT until it appears, and one whose configured source
//! address leaves its interface is FAULT until the address is back.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::path::PathBuf;

use tokio::task::JoinHandle;

use super::plan::{self, Plan, Step, UnitKey};
use super::scripts::{self, Identity};
use super::setup::{self, Unit, VipKey};
use super::{fifo, handle_all, Daemon};
use crate::config::{Config, VrrpScript};
use crate::fsm::{Action, Event, State};
use crate::net::{AddressWatcher, Netlink};

/// A track script's runner, kept across reloads while [`plan::same_run`] holds. Dropping it
/// stops the runner.
#[derive(Debug)]
pub(super) struct Runner {
    script: VrrpScript,
    program: PathBuf,
    who: Option<Identity>,
    task: JoinHandle<()>,
}

impl Drop for Runner {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Daemon {
    /// SIGHUP: a bad configuration is refused and nothing changes; a good one replaces the
    /// running one as [`plan::plan`] decides: an unchanged unit keeps its state, a changed one
    /// takes its new parameters in place (no state change; added VIPs added and announced by a
    /// master, removed ones withdrawn), and only one that becomes another virtual router
    /// resigns and starts again.
    pub(super) async fn reload(&mut self) {
        let new = match (self.reload)() {
            Ok(c) => c,
            Err(e) => {
                tracing::error!("reload refused, the running configuration stays:\n{e}");
                return;
            }
        };
        if new == self.config {
            tracing::info!("reload: the configuration did not change");
        } else if let Err(e) = self.apply(new).await {
            tracing::error!("reload refused, the running configuration stays: {e}");
            return;
        }
        if self.config.global.fifo_states_on_reload {
            self.fifo_states();
        }
    }

    /// Every lone instance's state and every sync group's written to the notify FIFOs
    /// (`fifo_write_vrrp_states_on_reload`): a group's members are not written on their own,
    /// as keepalived 2.2.7 writes them (seen in the lab test beside it).
    fn fifo_states(&self) {
        for (u, unit) in self.parts.units.iter().enumerate() {
            match unit {
                Unit::One(i) => {
                    if let Some(vr) = self.vr_of(u, 0) {
                        let name = &self.parts.vrs[vr].cfg.name;
                        self.fifos.write("INSTANCE", name, i.state(), i.priority());
                    }
                }
                Unit::Group(g, name) => self.fifos.write("GROUP", name, g.state(), 0),
            }
        }
    }

    /// Replaces the running configuration by `new` as [`plan::plan`] decides. With the running
    /// configuration itself, every unit goes on as it is while sockets and interfaces are
    /// looked up again (an interface created again under its name has another index).
    ///
    /// A trial build comes first: a configuration that cannot run here (a socket that will not
    /// open, a script user gone) is refused before anything running is touched, rather than
    /// after the units were taken out (which left a daemon without state machines).
    async fn apply(&mut self, new: Config) -> Result<(), setup::SetupError> {
        if let Err(e) = setup::build(&new, &self.netlink, BTreeMap::new()).await {
            // The trial may have made macvlans the running configuration does not have.
            let running = setup::vmac_names(&self.config);
            self.netlink.remove_vmacs(|n| running.contains(n)).await;
            return Err(e);
        }
        let plan = plan::plan(&self.config, &new);
        log_plan(&plan);
        let old_vips: BTreeMap<String, BTreeSet<VipKey>> = self
            .config
            .instances
            .iter()
            .map(|i| (i.name.clone(), setup::vip_keys(i)))
            .collect();
        self.withdraw_vips(&plan, &new, &old_vips).await;
        let carried = self.take_units(&plan).await;
        for t in self.tasks.drain(..) {
            t.abort();
        }
        // What the old sockets read is numbered by them: dropped, as a lost advert is.
        while self.rx.try_recv().is_ok() {}
        match setup::build(&new, &self.netlink, carried).await {
            Ok(parts) => {
                carry_ah(&self.parts, &parts);
                self.parts = parts;
                if fifo::changed(&self.config.global.notify_fifos, &new.global.notify_fifos) {
                    std::mem::take(&mut self.fifos).close().await;
                    self.fifos = fifo::Fifos::open(&new.global.notify_fifos, &self.parts.readers);
                }
                self.config = new;
                // The macvlans of instances gone or changed (use_vmac is on every VIP's
                // interface: their VIPs were withdrawn with them).
                let wanted = setup::vmac_names(&self.config);
                self.netlink.remove_vmacs(|n| wanted.contains(n)).await;
                self.parts_changed();
                tracing::info!("reloaded");
            }
            Err(e) => {
                // The trial build passed a moment ago: the host changed in between.
                tracing::error!("reload failed while starting the new configuration: {e}");
                self.parts.units.clear();
                self.parts.vrs.clear();
                self.parts_changed();
                return Ok(());
            }
        }
        self.reconfigure_units(&plan, &old_vips).await;
        if let Err(e) = self.spawn_tasks().await {
            tracing::error!("reload: {e}");
        }
        self.start_units().await;
        self.write_status();
        Ok(())
    }

    /// Takes the running units out: those `plan` keeps are returned by key, the others resign
    /// (RFC 5798 6.4.3: a master sends priority 0 and removes its VIPs) while the old parts are
    /// still in place, so that they resign as configured before.
    async fn take_units(&mut self, plan: &Plan) -> BTreeMap<UnitKey, Unit> {
        let now = self.now();
        let keys: Vec<Option<UnitKey>> = (0..self.parts.units.len())
            .map(|u| {
                let first = self.parts.vrs.iter().find(|v| v.unit == u)?;
                Some(UnitKey::of(&self.config, &first.cfg.name))
            })
            .collect();
        let mut keep = BTreeMap::new();
        let mut stop = Vec::new();
        let units = std::mem::take(&mut self.parts.units);
        for ((u, unit), key) in units.into_iter().enumerate().zip(keys) {
            match key {
                Some(key) if plan.keeps(&key) => {
                    keep.insert(key, unit);
                }
                _ => stop.push((u, unit)),
            }
        }
        for (u, mut unit) in stop {
            for (member, action) in handle_all(&mut unit, now, Event::Shutdown) {
                match self.vr_of(u, member) {
                    Some(vr) if !self.withdrawn_quietly(vr, &action) => self.act(vr, action).await,
                    _ => {}
                }
            }
        }
        keep
    }

    /// Whether `action` of a stopping instance is a pool address's priority 0, left unsent.
    /// Every node reads the same store and withdraws a released address itself; priority 0
    /// (RFC 5798 6.4.3, for a router leaving a group that goes on) would make a node that has
    /// not reloaded yet take the address for a moment.
    fn withdrawn_quietly(&self, vr: usize, action: &Action) -> bool {
        matches!(action, Action::SendAdvert { priority: 0 })
            && (self.parts.vrs.get(vr))
                .is_some_and(|v| self.config.services.contains_key(&v.cfg.name))
    }

    /// A master reconfigured in place gives back the VIPs the new configuration no longer
    /// has, from the interfaces it holds them on (the old parts, before they are replaced).
    async fn withdraw_vips(
        &self,
        plan: &Plan,
        new: &Config,
        old_vips: &BTreeMap<String, BTreeSet<VipKey>>,
    ) {
        for vr in &self.parts.vrs {
            let master = self
                .parts
                .units
                .get(vr.unit)
                .and_then(|u| u.member(vr.member))
                .is_some_and(|i| i.state() == State::Master);
            let (Some(kept), Some(held)) = (new.instance(&vr.cfg.name), old_vips.get(&vr.cfg.name))
            else {
                continue;
            };
            if !master || !plan.reconfigures(&vr.cfg.name) {
                continue;
            }
            let kept = setup::vip_keys(kept);
            for (interface, vip) in &vr.vips {
                let key = (
                    interface.name.clone(),
                    vip.address,
                    vip.prefix_len,
                    vip.label.clone(),
                );
                if held.contains(&key) && !kept.contains(&key) {
                    tracing::info!("{}: {vip} withdrawn from {}", vr.cfg.name, interface.name);
                    if let Err(e) = self.netlink.remove_address(interface, vip).await {
                        tracing::error!("{}: {vip} on {}: {e}", vr.cfg.name, interface.name);
                    }
                }
            }
        }
    }

    /// Every instance the plan reconfigures takes its new parameters in place (after
    /// [`setup::build`], so that what it does goes out with the new configuration: adverts
    /// to the new peers, the new VIPs added and announced).
    async fn reconfigure_units(
        &mut self,
        plan: &Plan,
        old_vips: &BTreeMap<String, BTreeSet<VipKey>>,
    ) {
        let now = self.now();
        for vr in 0..self.parts.vrs.len() {
            let v = &self.parts.vrs[vr];
            let name = v.cfg.name.clone();
            if !plan.reconfigures(&name) {
                continue;
            }
            let changed = old_vips.get(&name) != Some(&setup::vip_keys(&v.cfg));
            let params = match setup::params(
                &self.config,
                &v.cfg,
                self.parts.source(v),
                &self.parts.scripts,
            ) {
                Ok(p) => p,
                Err(e) => {
                    tracing::error!("{name}: not reconfigured: {e}");
                    continue;
                }
            };
            let (u, m) = (v.unit, v.member);
            let actions = match &mut self.parts.units[u] {
                Unit::One(i) => i
                    .reconfigure(now, params, changed)
                    .map(|a| a.into_iter().map(|a| (0, a)).collect()),
                Unit::Group(g, _) => g.reconfigure(now, m, params, changed),
            };
            match actions {
                Ok(actions) => {
                    if let Some(Step::Reconfigure(d)) = plan.instances.get(&name) {
                        tracing::info!("{name}: reconfigured in place ({d:?})");
                    }
                    self.carry_out(u, actions).await;
                }
                Err(e) => tracing::error!("{name}: not reconfigured: {e}"),
            }
        }
    }

    /// Runs every track script an instance tracks. A runner already running for a script that
    /// runs the same way ([`plan::same_run`], the same program and user) goes on, so that a
    /// reload neither runs it early nor loses its rhythm; the others stop.
    pub(super) fn start_runners(&mut self) {
        let mut old = std::mem::take(&mut self.runners);
        for s in &self.config.scripts {
            let Some((program, who)) = self.parts.scripts.get(&s.name).cloned() else {
                continue;
            };
            let used = self
                .config
                .instances
                .iter()
                .any(|i| i.track_scripts.iter().any(|t| t.name == s.name));
            if !used {
                continue;
            }
            if let Some(mut r) = old.remove(&s.name) {
                if r.program == program && r.who == who && plan::same_run(&r.script, s) {
                    r.script = s.clone();
                    self.runners.insert(s.name.clone(), r);
                    continue;
                }
            }
            let task = scripts::track(program.clone(), s.clone(), who, self.results_tx.clone());
            let runner = Runner {
                script: s.clone(),
                program,
                who,
                task: tokio::spawn(task),
            };
            self.runners.insert(s.name.clone(), runner);
        }
    }
}

impl Daemon {
    /// (Re)starts the `vrrp_track_process` watcher for the processes instances track: it
    /// reports each one's state at once, which a kept instance already has (no change).
    pub(super) fn watch_processes(&mut self) {
        let tracked = self
            .config
            .tracked(&self.config.processes, |i| &i.track_processes);
        let task = (!tracked.is_empty())
            .then(|| super::processes::watch(tracked, self.results_tx.clone()));
        restart(&mut self.process_watch, task);
    }

    /// (Re)starts the `track_file` reader for the files instances track, after writing their
    /// `init_file` values; it reports each file's value at once.
    pub(super) fn watch_files(&mut self) {
        let tracked = self.config.tracked(&self.config.files, |i| &i.track_files);
        for f in &tracked {
            super::track_files::init(f);
        }
        let task = (!tracked.is_empty())
            .then(|| super::track_files::watch(tracked, self.values_tx.clone()));
        restart(&mut self.file_watch, task);
    }

    /// Every configured source address (`unicast_src_ip`, `mcast_src_ip`) is followed: while
    /// it is not on its instance's interface (a bridge such as br-ex took it, or it is gone),
    /// the instance is FAULT ([`setup::source_track`]), so that it never advertises from an
    /// address the interface lost; the other routers take over.
    pub(super) fn watch_sources(&mut self) {
        let sources = setup::sources(&self.config);
        if sources.is_empty() {
            return;
        }
        let watch = AddressWatcher::new().and_then(|w| Ok((w, Netlink::connect()?)));
        match watch {
            Ok((watcher, netlink)) => {
                let tx = self.links_tx.clone();
                let task = follow_sources(watcher, netlink, sources, tx);
                self.tasks.push(tokio::spawn(task));
            }
            Err(e) => tracing::error!("source addresses cannot be followed: {e}"),
        }
    }

    /// Address changes retry what an interface's link events could not finish: a waiting
    /// instance, or one whose interface was created again, whose interface has no address yet
    /// (the link came up first, DHCP later). For each such interface, its link state now is
    /// sent as a link event, which [`Daemon::interface_seen`] takes.
    pub(super) fn watch_unfinished(&mut self) {
        let mut known: BTreeMap<String, Option<u32>> = self
            .parts
            .vrs
            .iter()
            .flat_map(|v| std::iter::once(&v.interface).chain(v.vips.iter().map(|(i, _)| i)))
            .map(|i| (i.name.clone(), Some(i.index)))
            .collect();
        for w in &self.parts.waiting {
            known.insert(w.interface.clone(), None);
        }
        let watch = AddressWatcher::new().and_then(|w| Ok((w, Netlink::connect()?)));
        let (mut watcher, netlink) = match watch {
            Ok(w) => w,
            Err(e) => {
                tracing::error!("address changes cannot be followed: {e}");
                return;
            }
        };
        // Our own VIPs coming and going tell nothing about an interface's readiness.
        let vips: BTreeSet<IpAddr> = self
            .parts
            .vrs
            .iter()
            .flat_map(|v| v.vips.iter().map(|(_, vip)| vip.address))
            .collect();
        let tx = self.links_tx.clone();
        self.tasks.push(tokio::spawn(async move {
            while let Ok(changed) = watcher.changed().await {
                if changed.iter().all(|c| c.is_some_and(|c| vips.contains(&c))) {
                    continue;
                }
                for (name, index) in &known {
                    let Ok(now) = netlink.interface(name).await else {
                        continue;
                    };
                    if Some(now.index) != *index
                        && tx
                            .send((name.clone(), now.admin_up && now.running))
                            .is_err()
                    {
                        return;
                    }
                }
            }
        }));
    }

    /// Says in the log, the state files and the status which instances wait for an
    /// interface.
    pub(super) fn report_waiting(&self) {
        for w in &self.parts.waiting {
            tracing::error!("{}: FAULT: {}", w.name, w.reason);
            self.write_state(&w.name, State::Fault);
        }
    }

    /// An interface changed (appeared, went up or down): the units that waited for it start
    /// if it exists now, beside the running ones, which go on untouched.
    pub(super) async fn interface_seen(&mut self, name: &str) {
        let Ok(now) = self.netlink.interface(name).await else {
            return;
        };
        let stale = self.parts.vrs.iter().any(|v| {
            std::iter::once(&v.interface)
                .chain(v.vips.iter().map(|(i, _)| i))
                .any(|i| i.name == name && i.index != now.index)
        });
        if stale {
            // Deleted and created again: the sockets and addresses of its instances name the
            // old index. They are built again on the new one, every unit keeping its state,
            // once the configuration can be built there (a new interface may have no address
            // yet: then at its next change); `apply` builds on trial first, so that a failure
            // leaves everything running as it is.
            if let Err(e) = self.apply(self.config.clone()).await {
                tracing::info!("interface {name} was created again, not usable yet: {e}");
                return;
            }
            tracing::info!("interface {name} was created again: its instances follow it");
            self.reclaim(name).await;
            return;
        }
        if !self.parts.waiting.iter().any(|w| w.interface == name) {
            return;
        }
        // Only appends: the running parts go on. Tasks are started again only when a unit did
        // start (a unit that still cannot start, say up before its address, would otherwise
        // have every task restarted, which reports the interface's state again, for ever).
        let started = setup::start_waiting(&self.config, &self.netlink, &mut self.parts).await;
        if started.is_empty() {
            return;
        }
        self.parts_changed();
        tracing::info!("interface {name} appeared: {} start", started.join(", "));
        for t in self.tasks.drain(..) {
            t.abort();
        }
        if let Err(e) = self.spawn_tasks().await {
            tracing::error!("interface {name}: {e}");
        }
        self.start_units().await;
        self.write_status();
    }
}

impl Daemon {
    /// A master on an interface created again adds its VIPs there and announces them: what
    /// it added before went to the old index, or nowhere.
    async fn reclaim(&mut self, name: &str) {
        let masters: Vec<(usize, u32)> = (0..self.parts.vrs.len())
            .filter_map(|vr| {
                let v = &self.parts.vrs[vr];
                let i = self.parts.units.get(v.unit)?.member(v.member)?;
                let on = v.interface.name == name || v.vips.iter().any(|(i, _)| i.name == name);
                (on && i.state() == State::Master).then_some((vr, i.params().garp.master_repeat))
            })
            .collect();
        for (vr, repeat) in masters {
            self.act(vr, crate::fsm::Action::AddVips).await;
            self.act(vr, crate::fsm::Action::SendGarp { repeat }).await;
        }
    }
}

/// Reports on `tx`, under its track name, whether each source address is on its interface:
/// once at start, then after every address change.
async fn follow_sources(
    mut watcher: AddressWatcher,
    netlink: Netlink,
    sources: BTreeSet<(String, String, IpAddr)>,
    tx: tokio::sync::mpsc::UnboundedSender<(String, bool)>,
) {
    let mut last: BTreeMap<String, bool> = BTreeMap::new();
    let mut changed = vec![None];
    loop {
        // Only a change of a source address (or one that could not be read) is looked into:
        // the VIPs coming and going are not.
        let ours = |c: &Option<IpAddr>| c.is_none_or(|c| sources.iter().any(|s| s.2 == c));
        if changed.iter().any(ours) && !look_at_sources(&netlink, &sources, &mut last, &tx).await {
            return;
        }
        match watcher.changed().await {
            Ok(c) => changed = c,
            Err(_) => return,
        }
    }
}

/// Sends each source whose presence on its interface changed since `last`; false once nobody
/// listens.
async fn look_at_sources(
    netlink: &Netlink,
    sources: &BTreeSet<(String, String, IpAddr)>,
    last: &mut BTreeMap<String, bool>,
    tx: &tokio::sync::mpsc::UnboundedSender<(String, bool)>,
) -> bool {
    for (track, interface, address) in sources {
        let on = match netlink.interface(interface).await {
            Ok(i) => netlink
                .addresses(&i)
                .await
                .is_ok_and(|all| all.iter().any(|a| a.address == *address)),
            Err(_) => false,
        };
        if last.get(track) == Some(&on) {
            continue;
        }
        if on {
            tracing::info!("{track}: the address is there");
        } else {
            tracing::error!(
                "{track}: the address is no longer on {interface}: FAULT, no advert from it \
                 until it is back"
            );
        }
        last.insert(track.clone(), on);
        if tx.send((track.clone(), on)).is_err() {
            return false;
        }
    }
    true
}

/// What the reload does to each unit, in the log.
/// An AH instance goes on numbering where it was before the reload (see `ah`).
fn carry_ah(old: &setup::Parts, new: &setup::Parts) {
    for v in &new.vrs {
        let before = old.vrs.iter().find(|o| o.cfg.name == v.cfg.name);
        if let (Some(ah), Some(was)) = (&v.ah, before.and_then(|o| o.ah.as_ref())) {
            ah.carry(was);
        }
    }
}

fn log_plan(plan: &Plan) {
    for (key, step) in &plan.units {
        match step {
            Step::Keep => {}
            Step::Reconfigure(d) => tracing::info!("reload: {key} changes in place: {d:?}"),
            Step::Change(d) => tracing::info!("reload: {key} restarts: {d:?}"),
            Step::Start => tracing::info!("reload: {key} starts"),
            Step::Stop => tracing::info!("reload: {key} stops"),
        }
    }
    tracing::debug!("reload: {plan:?}");
}

/// Puts `task` (if any) in `slot`, stopping the one there.
fn restart<F>(slot: &mut Option<JoinHandle<()>>, task: Option<F>)
where
    F: std::future::Future<Output = ()> + Send + 'static,
{
    if let Some(old) = slot.take() {
        old.abort();
    }
    *slot = task.map(tokio::spawn);
}
