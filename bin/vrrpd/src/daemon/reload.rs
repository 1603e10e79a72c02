//! SIGHUP: the new configuration read, compared with the running one ([`super::plan`]) and
//! carried out in place; and the interfaces that come late or are created again: an instance
//! whose interface does not exist waits in FAULT until it appears (the track script runners a
//! reload leaves running and the watchers that tell of interfaces are `super::tasks`).

use std::collections::{BTreeMap, BTreeSet};

use super::engine::{handle_all, Daemon};
use super::fifo;
use super::plan::{self, Plan, Step, UnitKey};
use super::setup::{self, Unit, VipKey};
use crate::config::Config;
use crate::fsm::{Action, Event, State};

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
        if let Err(e) = setup::build(&new, &self.host.netlink, BTreeMap::new()).await {
            // The trial may have made macvlans the running configuration does not have.
            let running = setup::vmac_names(&self.config);
            self.host
                .netlink
                .remove_vmacs(|n| running.contains(n))
                .await;
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
        self.tasks.stop_watchers();
        // What the old sockets read is numbered by them: dropped, as a lost advert is.
        self.inputs.next_epoch();
        match setup::build(&new, &self.host.netlink, carried).await {
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
                self.host.netlink.remove_vmacs(|n| wanted.contains(n)).await;
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
                    if let Err(e) = self.host.netlink.remove_address(interface, vip).await {
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

    /// An interface changed (appeared, went up or down): the units that waited for it start
    /// if it exists now, beside the running ones, which go on untouched.
    pub(super) async fn interface_seen(&mut self, name: &str) {
        let Ok(now) = self.host.netlink.interface(name).await else {
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
        let started = setup::start_waiting(&self.config, &self.host.netlink, &mut self.parts).await;
        if started.is_empty() {
            return;
        }
        self.parts_changed();
        tracing::info!("interface {name} appeared: {} start", started.join(", "));
        self.tasks.stop_watchers();
        if let Err(e) = self.spawn_tasks().await {
            tracing::error!("interface {name}: {e}");
        }
        self.start_units().await;
        self.write_status();
    }

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
