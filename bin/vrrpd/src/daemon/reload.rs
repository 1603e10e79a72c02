//! SIGHUP: the new configuration read, compared with the running one ([`super::plan`]) and
//! carried out.

use std::collections::BTreeMap;

use super::plan::{self, Plan, UnitKey};
use super::setup::{self, Unit};
use super::{handle_all, Daemon};
use crate::fsm::Event;

impl Daemon {
    /// SIGHUP: a bad configuration is refused and nothing changes; a good one replaces the
    /// running one as [`plan::plan`] decides: every unit whose instances and scripts are
    /// unchanged keeps its state (no VIP moves), the others resign and start again.
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
            return;
        }
        let plan = plan::plan(&self.config, &new);
        tracing::debug!("reload: {plan:?}");
        let carried = self.take_units(&plan).await;
        for t in self.tasks.drain(..) {
            t.abort();
        }
        match setup::build(&new, &self.netlink, carried).await {
            Ok(parts) => {
                self.parts = parts;
                self.config = new;
                tracing::info!("reloaded");
            }
            Err(e) => {
                tracing::error!("reload failed while starting the new configuration: {e}");
                return;
            }
        }
        if let Err(e) = self.spawn_tasks().await {
            tracing::error!("reload: {e}");
        }
        self.start_units().await;
        self.write_status();
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
                if let Some(vr) = self.vr_of(u, member) {
                    self.act(vr, action).await;
                }
            }
        }
        keep
    }
}
