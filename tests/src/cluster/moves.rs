//! The faults that move a VIP (the bootstrap node removed, the API master's API server
//! killed, an Ingress router stopped), each timed from the client until it is served again.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use ipi_core::Role;
use ipi_lab::router;
use ipi_lab::{wait_for, Neighbour};

use super::layout::{API_PORT, API_VIP, INGRESS_VIP, MOVE_LIMIT, POLL};
use super::node::Node;
use super::observed::{Move, Watch};
use super::Cluster;
use crate::error::ClusterError;
use crate::probe::{first_answer, get};

impl Cluster {
    /// Removes the bootstrap node as the installer does once the masters run the API: its
    /// units are stopped (vrrpd resigns with priority 0), then it leaves the network. Returns
    /// the API VIP's move to a master, timed from the stop; the client, which talked to the
    /// bootstrap node's API server through the VIP just before, must be served by the masters.
    pub fn remove_bootstrap(&mut self) -> Result<Move, ClusterError> {
        let masters = self.up_names(Role::Master, "");
        let i = self.index("bootstrap")?;
        let before = self.talked_to("bootstrap", API_VIP, API_PORT)?;
        let start = Instant::now();
        {
            let node = &mut self.nodes[i];
            node.units().stop_all();
            if let Some(api) = node.api.as_mut() {
                api.stop();
            }
        }
        let watch = self.watch(
            "bootstrap",
            (API_VIP, API_PORT),
            masters.clone(),
            before,
            start,
        );
        let to = self.wait_vip(API_VIP, &masters, start, "the API VIP to move to a master")?;
        let m = self.moved(watch, to)?;
        let node = &mut self.nodes[i];
        self.lab.link_down(&node.host)?;
        node.up = false;
        Ok(m)
    }

    /// Kills the master that holds the API VIP as a power cut does: off the network, every
    /// process gone at once (SIGKILL). Returns the API VIP's move to another master, timed
    /// from the cut; the client, which talked through the VIP just before, must be served by
    /// the API servers left.
    pub fn kill_api_master(&mut self) -> Result<Move, ClusterError> {
        let from = self.single(&self.holders().api, "the API VIP")?;
        let i = self.index(&from)?;
        let before = self.talked_to(&from, API_VIP, API_PORT)?;
        let start = Instant::now();
        self.cut(i)?;
        let others = self.up_names(Role::Master, &from);
        let watch = self.watch(&from, (API_VIP, API_PORT), others.clone(), before, start);
        let to = self.wait_vip(API_VIP, &others, start, "the API VIP to fail over")?;
        self.moved(watch, to)
    }

    /// Stops the router on the worker that holds the Ingress VIP: its chk_ingress fails, the
    /// VIP moves to the other worker. Returns the move, timed from the stop; the client, which
    /// asked the router through the VIP just before, must be answered by the other's router.
    pub fn stop_ingress_router(&mut self) -> Result<Move, ClusterError> {
        let from = self.single(&self.holders().ingress, "the Ingress VIP")?;
        let i = self.index(&from)?;
        let before = self.talked_to(&from, INGRESS_VIP, router::PORT)?;
        let start = Instant::now();
        if let Some(r) = self.nodes[i].router.as_mut() {
            r.stop();
        }
        let others = self.up_names(Role::Worker, &from);
        let routers = others.iter().map(|w| format!("router on {w}")).collect();
        let watch = self.watch(&from, (INGRESS_VIP, router::PORT), routers, before, start);
        let to = self.wait_vip(INGRESS_VIP, &others, start, "the Ingress VIP to move")?;
        self.moved(watch, to)
    }

    /// Node `i` off the network, every process of its units killed at once (SIGKILL), its API
    /// server stand-in stopped: a power cut, as far as the network and the units see it.
    pub(super) fn cut(&mut self, i: usize) -> Result<(), ClusterError> {
        self.lab.link_down(&self.nodes[i].host)?;
        let node = &mut self.nodes[i];
        node.up = false;
        node.units().kill_all();
        if let Some(api) = node.api.as_mut() {
            api.stop();
        }
        Ok(())
    }

    /// Makes the client talk to `vip`:`port` (a request answered, within a few seconds) and
    /// checks that its ARP entry for the VIP now holds `holder`'s MAC: the entry a missing
    /// gratuitous ARP would leave in place after the move. Returns that entry.
    fn talked_to(&self, holder: &str, vip: Ipv4Addr, port: u16) -> Result<Neighbour, ClusterError> {
        let to = SocketAddr::from((vip, port));
        let answered = self.client.within(|| {
            Ok(wait_for(
                Duration::from_secs(10),
                Duration::from_millis(100),
                || get(to, Duration::from_secs(1)).is_ok(),
            ))
        });
        if !matches!(answered, Ok(Some(_))) {
            return Err(self.failed(&format!(
                "the client to be answered through {to} ({holder})"
            )));
        }
        let mac = self.host(holder)?.mac()?;
        match self.client.neighbour(IpAddr::V4(vip)) {
            Some(n) if n.lladdr.as_deref() == Some(mac.as_str()) => Ok(n),
            other => Err(ClusterError::Step(format!(
                "the client's ARP entry for {vip} after talking to it is {other:?}, not {holder}'s \
                 MAC {mac}"
            ))),
        }
    }

    /// From `start` (the fault), the client's requests to `service` until one is answered by
    /// a server in `accept`, on a thread of its own while the step watches the nodes.
    fn watch(
        &self,
        from: &str,
        service: (Ipv4Addr, u16),
        accept: Vec<String>,
        before: Neighbour,
        start: Instant,
    ) -> Watch {
        let client = self.client.clone();
        let to = SocketAddr::from(service);
        let names = accept.clone();
        Watch {
            from: from.to_string(),
            to,
            accept,
            before,
            start,
            first: std::thread::spawn(move || first_answer(&client, to, &names, start, MOVE_LIMIT)),
        }
    }

    /// The move from the watch's old holder to `to` (the holder and the time
    /// [`Cluster::wait_vip`] found): once the client has been served through the VIP, and
    /// then served with its ARP entry on `to`'s MAC.
    fn moved(&self, watch: Watch, (to, took): (String, Duration)) -> Result<Move, ClusterError> {
        let Watch {
            from,
            to: service,
            accept,
            before,
            start,
            first,
        } = watch;
        let vip = service.ip();
        let served = first.join().ok().flatten().ok_or_else(|| {
            self.failed(&format!(
                "the client to be served through {vip} again within {} s of the fault (its ARP \
                 entry: {:?})",
                MOVE_LIMIT.as_secs(),
                self.client.neighbour(vip)
            ))
        })?;
        let mac = served.neighbour.as_ref().and_then(|n| n.lladdr.clone());
        let via = self
            .nodes
            .iter()
            .find(|n| n.host.mac().ok() == mac)
            .map_or_else(|| format!("{mac:?} (no node's MAC)"), |n| n.name.clone());
        let settled = self.served_by(&to, service, &accept, start)?;
        Ok(Move {
            from,
            to,
            took,
            served: served.after,
            settled,
            answer: served.answer,
            via,
            before,
        })
    }

    /// Waits until the client's ARP entry for the VIP of `to` holds `holder`'s MAC and a
    /// request to `to` is answered by a server in `accept`: the time since `start`, the fault.
    fn served_by(
        &self,
        holder: &str,
        to: SocketAddr,
        accept: &[String],
        start: Instant,
    ) -> Result<Duration, ClusterError> {
        let mac = self.host(holder)?.mac()?;
        let left = MOVE_LIMIT.saturating_sub(start.elapsed());
        let served = wait_for(left, POLL, || {
            let on_holder = self
                .client
                .neighbour(to.ip())
                .is_some_and(|n| n.lladdr.as_deref() == Some(mac.as_str()));
            on_holder
                && self
                    .client
                    .within(|| get(to, Duration::from_millis(300)))
                    .is_ok_and(|name| accept.contains(&name))
        });
        served.map(|_| start.elapsed()).ok_or_else(|| {
            self.failed(&format!(
                "the client to be served through {to} by {holder} (its ARP entry: {:?})",
                self.client.neighbour(to.ip())
            ))
        })
    }

    /// Waits until one of `candidates` holds `vip` (the time since `start`), then until it
    /// is on one node only (candidates that became master together settle on the highest
    /// priority, then address): that node's name and the time.
    fn wait_vip(
        &self,
        vip: Ipv4Addr,
        candidates: &[String],
        start: Instant,
        what: &str,
    ) -> Result<(String, Duration), ClusterError> {
        let hosts: Vec<&Node> = self
            .nodes
            .iter()
            .filter(|n| candidates.contains(&n.name))
            .collect();
        let left = MOVE_LIMIT.saturating_sub(start.elapsed());
        wait_for(left, POLL, || {
            hosts.iter().any(|n| n.host.has_address(IpAddr::V4(vip)))
        })
        .ok_or_else(|| self.failed(&format!("{what} (to one of {candidates:?})")))?;
        let took = start.elapsed();
        let mut holder = Vec::new();
        let single = wait_for(Duration::from_secs(30), Duration::from_millis(100), || {
            let h = self.holders();
            holder = if vip == API_VIP { h.api } else { h.ingress };
            holder.len() == 1 && candidates.contains(&holder[0])
        });
        match (single, holder.pop()) {
            (Some(_), Some(name)) => Ok((name, took)),
            _ => Err(self.failed(&format!("{what}: {vip} on one of {candidates:?} only"))),
        }
    }
}
