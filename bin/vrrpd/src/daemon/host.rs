//! What the daemon does to this host for its instances: their VIPs, `virtual_routes` and
//! `virtual_rules` added and removed, `use_vmac` macvlans up and down, gratuitous ARPs and
//! unsolicited NAs, and the VIPs an earlier run left behind. A failure is logged and the rest
//! goes on: one address that will not go must not keep the others.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::time::Duration;

use tokio::task::JoinHandle;

use super::setup::Vr;
use crate::config::GlobalDefs;
use crate::net::{Netlink, Outcome};

/// The rtnetlink connection, and the announcements still being sent.
#[derive(Debug)]
pub struct Host {
    /// Addresses, routes, rules and links, for the daemon's setup and reloads too.
    pub netlink: Netlink,
    /// Spaced GARP / NA bursts still sending, by instance (`vrrp_garp_interval`).
    paced: RefCell<BTreeMap<String, JoinHandle<()>>>,
}

impl Host {
    /// The host reached through `netlink`.
    pub fn new(netlink: Netlink) -> Host {
        Host {
            netlink,
            paced: RefCell::new(BTreeMap::new()),
        }
    }

    /// A spaced burst of instance `name` still sending, stopped.
    fn stop_paced(&self, name: &str) {
        if let Some(task) = self.paced.borrow_mut().remove(name) {
            task.abort();
        }
    }

    /// Adds (`add`) or removes the instance's VIPs, and its `virtual_routes` after them (a
    /// route's `src` may be a VIP) or before them.
    pub async fn vips(&self, v: &Vr, add: bool) {
        if !add {
            // No more announcements for addresses this router gives up.
            self.stop_paced(&v.cfg.name);
            self.routes(v, false).await;
        }
        if add {
            self.vmac_up(v, true).await;
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
            self.routes(v, true).await;
        } else {
            self.vmac_up(v, false).await;
        }
    }

    /// A `use_vmac` instance's macvlan set up before its VIPs are added, down after they are
    /// removed: only a master's is up ([`crate::net::vmac`]).
    async fn vmac_up(&self, v: &Vr, up: bool) {
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
    pub async fn clear_leftovers(&self, vrs: &[Vr]) {
        for v in vrs {
            // A macvlan left up by an earlier run: down until the instance is master.
            if v.vmac.as_ref().is_some_and(|(on, _)| on.admin_up) {
                self.vmac_up(v, false).await;
            }
        }
        // An address owner's VIPs are its own addresses (RFC 5798 3): never taken away.
        for v in vrs.iter().filter(|v| v.cfg.priority != 255) {
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
    /// other order.
    async fn routes(&self, v: &Vr, add: bool) {
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
    pub fn garp(&self, v: &Vr, repeat: u32, global: &GlobalDefs) {
        let Some(a) = &v.announcer else {
            return;
        };
        let held: Vec<std::net::IpAddr> = v.vips.iter().map(|(_, vip)| vip.address).collect();
        let (garp, gna) = (
            Duration::from_micros(u64::from(global.garp_interval_us)),
            Duration::from_micros(u64::from(global.gna_interval_us)),
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
}
