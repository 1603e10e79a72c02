//! A simulated LAN for the protocol core: routers whose adverts are delivered to each other on a
//! virtual clock, with links that can be cut. Deterministic: the same calls give the same trace,
//! to the millisecond. Tests use it to check elections end to end without sockets or sleeps.
//!
//! Within one instant the order is fixed: every router's due timers (in the order the routers
//! were added), then the adverts due (in the order they were sent), repeated until nothing is
//! left at that instant. Adverts go to every other router that has an instance of the VRID and
//! that the link reaches, after [`Lan::latency`].

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use super::clock::{Duration, Instant};
use super::instance::{Action, Event, Instance, State};
use super::sync::SyncGroup;

/// What one router runs: a single instance or a sync group.
#[derive(Debug, Clone)]
pub enum Node {
    /// One instance.
    Solo(Box<Instance>),
    /// A sync group.
    Group(SyncGroup),
}

impl From<Instance> for Node {
    fn from(i: Instance) -> Self {
        Node::Solo(Box::new(i))
    }
}

impl From<SyncGroup> for Node {
    fn from(g: SyncGroup) -> Self {
        Node::Group(g)
    }
}

impl Node {
    /// The instances.
    pub fn instances(&self) -> &[Instance] {
        match self {
            Node::Solo(i) => std::slice::from_ref(&**i),
            Node::Group(g) => g.members(),
        }
    }

    /// The instance for `vrid`.
    pub fn instance(&self, vrid: u8) -> Option<&Instance> {
        self.instances().iter().find(|i| i.params().vrid == vrid)
    }

    fn index(&self, vrid: u8) -> Option<usize> {
        self.instances()
            .iter()
            .position(|i| i.params().vrid == vrid)
    }

    fn vrid_of(&self, index: usize) -> u8 {
        self.instances().get(index).map_or(0, |i| i.params().vrid)
    }

    fn poll_timeout(&self) -> Option<Instant> {
        match self {
            Node::Solo(i) => i.poll_timeout(),
            Node::Group(g) => g.poll_timeout(),
        }
    }

    fn handle_timeout(&mut self, now: Instant) -> Vec<(u8, Action)> {
        let tagged = match self {
            Node::Solo(i) => return tag(i.params().vrid, i.handle_timeout(now)),
            Node::Group(g) => g.handle_timeout(now),
        };
        self.untag(tagged)
    }

    fn handle(&mut self, now: Instant, vrid: u8, event: Event) -> Vec<(u8, Action)> {
        let Some(index) = self.index(vrid) else {
            return Vec::new();
        };
        let tagged = match self {
            Node::Solo(i) => return tag(vrid, i.handle(now, event)),
            Node::Group(g) => g.handle(now, index, event),
        };
        self.untag(tagged)
    }

    fn handle_all(&mut self, now: Instant, event: Event) -> Vec<(u8, Action)> {
        let tagged = match self {
            Node::Solo(i) => return tag(i.params().vrid, i.handle(now, event)),
            Node::Group(g) => g.handle_all(now, event),
        };
        self.untag(tagged)
    }

    fn untag(&self, tagged: Vec<(usize, Action)>) -> Vec<(u8, Action)> {
        tagged
            .into_iter()
            .map(|(i, a)| (self.vrid_of(i), a))
            .collect()
    }
}

fn tag(vrid: u8, actions: Vec<Action>) -> Vec<(u8, Action)> {
    actions.into_iter().map(|a| (vrid, a)).collect()
}

/// One action a router took, and when.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record {
    /// When.
    pub at: Instant,
    /// Which router (its index in the LAN).
    pub node: usize,
    /// Which instance.
    pub vrid: u8,
    /// What.
    pub action: Action,
}

#[derive(Debug, Clone)]
struct Router {
    addr: IpAddr,
    node: Node,
    crashed: bool,
}

#[derive(Debug, Clone, Copy)]
struct Delivery {
    to: usize,
    vrid: u8,
    from: IpAddr,
    priority: u8,
    advert_int_cs: u16,
}

/// A LAN of simulated routers.
#[derive(Debug, Clone, Default)]
pub struct Lan {
    now: Instant,
    latency: Duration,
    routers: Vec<Router>,
    cut: BTreeSet<(usize, usize)>,
    queue: BTreeMap<(Instant, u64), Delivery>,
    seq: u64,
    trace: Vec<Record>,
    stalled: bool,
}

/// How many rounds one instant may take before the LAN gives up on it (a livelock guard that a
/// correct state machine never reaches).
const MAX_ROUNDS_PER_INSTANT: u32 = 10_000;

impl Lan {
    /// An empty LAN at time zero, delivering instantly.
    pub fn new() -> Self {
        Lan::default()
    }

    /// Delivers every advert this long after it is sent.
    pub fn with_latency(mut self, latency: Duration) -> Self {
        self.latency = latency;
        self
    }

    /// The delivery delay.
    pub fn latency(&self) -> Duration {
        self.latency
    }

    /// Adds a router with this source address; returns its index.
    pub fn add(&mut self, addr: IpAddr, node: impl Into<Node>) -> usize {
        self.routers.push(Router {
            addr,
            node: node.into(),
            crashed: false,
        });
        self.routers.len() - 1
    }

    /// The current time.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// Everything every router did, in order.
    pub fn trace(&self) -> &[Record] {
        &self.trace
    }

    /// Whether an instant ever needed more than the livelock guard allows.
    pub fn stalled(&self) -> bool {
        self.stalled
    }

    /// Router `node`.
    pub fn node(&self, node: usize) -> Option<&Node> {
        self.routers.get(node).map(|r| &r.node)
    }

    /// The instance for `vrid` on router `node`.
    pub fn instance(&self, node: usize, vrid: u8) -> Option<&Instance> {
        self.node(node).and_then(|n| n.instance(vrid))
    }

    /// The state of `vrid` on router `node`.
    pub fn state(&self, node: usize, vrid: u8) -> Option<State> {
        self.instance(node, vrid).map(Instance::state)
    }

    /// The routers that are master of `vrid` (a crashed router is not).
    pub fn masters(&self, vrid: u8) -> Vec<usize> {
        self.routers
            .iter()
            .enumerate()
            .filter(|(_, r)| {
                !r.crashed && r.node.instance(vrid).map(Instance::state) == Some(State::Master)
            })
            .map(|(i, _)| i)
            .collect()
    }

    /// The state changes of `vrid` on `node`: (when, from, to).
    pub fn transitions(&self, node: usize, vrid: u8) -> Vec<(Instant, State, State)> {
        self.trace
            .iter()
            .filter(|r| r.node == node && r.vrid == vrid)
            .filter_map(|r| match r.action {
                Action::StateChanged { from, to, .. } => Some((r.at, from, to)),
                _ => None,
            })
            .collect()
    }

    /// When the adverts of `vrid` from `node` were sent, with their priorities.
    pub fn adverts(&self, node: usize, vrid: u8) -> Vec<(Instant, u8)> {
        self.trace
            .iter()
            .filter(|r| r.node == node && r.vrid == vrid)
            .filter_map(|r| match r.action {
                Action::SendAdvert { priority } => Some((r.at, priority)),
                _ => None,
            })
            .collect()
    }

    /// Starts every instance of router `node` now.
    pub fn start(&mut self, node: usize) {
        self.inject_all(node, Event::Startup);
    }

    /// Shuts every instance of router `node` down now.
    pub fn shutdown(&mut self, node: usize) {
        self.inject_all(node, Event::Shutdown);
    }

    /// Gives an event to instance `vrid` of router `node` now.
    pub fn inject(&mut self, node: usize, vrid: u8, event: Event) {
        let now = self.now;
        let Some(r) = self.routers.get_mut(node) else {
            return;
        };
        if r.crashed {
            return;
        }
        let actions = r.node.handle(now, vrid, event);
        self.route(node, actions);
        self.settle_now();
    }

    /// Gives an event to every instance of router `node` now.
    pub fn inject_all(&mut self, node: usize, event: Event) {
        let now = self.now;
        let Some(r) = self.routers.get_mut(node) else {
            return;
        };
        if r.crashed {
            return;
        }
        let actions = r.node.handle_all(now, event);
        self.route(node, actions);
        self.settle_now();
    }

    /// Silences router `node` for good: it neither sends nor receives, as if powered off
    /// without resigning.
    pub fn crash(&mut self, node: usize) {
        if let Some(r) = self.routers.get_mut(node) {
            r.crashed = true;
        }
    }

    /// Cuts the link between `a` and `b` (both directions).
    pub fn cut(&mut self, a: usize, b: usize) {
        self.cut.insert((a.min(b), a.max(b)));
    }

    /// Restores the link between `a` and `b`.
    pub fn heal(&mut self, a: usize, b: usize) {
        self.cut.remove(&(a.min(b), a.max(b)));
    }

    /// Restores every link.
    pub fn heal_all(&mut self) {
        self.cut.clear();
    }

    /// Whether `a` and `b` hear each other.
    pub fn linked(&self, a: usize, b: usize) -> bool {
        !self.cut.contains(&(a.min(b), a.max(b)))
    }

    /// Runs until `d` from now.
    pub fn run_for(&mut self, d: Duration) {
        self.run_until(self.now + d);
    }

    /// Runs every timer and delivery up to and including `until`, then sets the clock to it.
    pub fn run_until(&mut self, until: Instant) {
        while let Some(next) = self.next_event() {
            if next > until {
                break;
            }
            self.now = self.now.max(next);
            self.settle_now();
        }
        self.now = self.now.max(until);
    }

    /// Runs to the next instant at which anything happens (at most `until`); returns it.
    pub fn step(&mut self, until: Instant) -> Option<Instant> {
        let next = self.next_event().filter(|&t| t <= until)?;
        self.now = self.now.max(next);
        self.settle_now();
        Some(self.now)
    }

    fn next_event(&self) -> Option<Instant> {
        let timers = self
            .routers
            .iter()
            .filter(|r| !r.crashed)
            .filter_map(|r| r.node.poll_timeout());
        let deliveries = self.queue.keys().next().map(|&(at, _)| at);
        timers.chain(deliveries).min()
    }

    /// Processes everything due at the current instant.
    fn settle_now(&mut self) {
        let now = self.now;
        for _ in 0..MAX_ROUNDS_PER_INSTANT {
            let mut busy = false;
            for i in 0..self.routers.len() {
                let r = &mut self.routers[i];
                if r.crashed || r.node.poll_timeout().is_none_or(|at| at > now) {
                    continue;
                }
                busy = true;
                let actions = r.node.handle_timeout(now);
                self.route(i, actions);
            }
            while let Some(entry) = self.queue.first_entry() {
                if entry.key().0 > now {
                    break;
                }
                let d = entry.remove();
                busy = true;
                let Some(r) = self.routers.get_mut(d.to) else {
                    continue;
                };
                if r.crashed {
                    continue;
                }
                let event = Event::Advert {
                    from: d.from,
                    priority: d.priority,
                    advert_int_cs: d.advert_int_cs,
                };
                let actions = r.node.handle(now, d.vrid, event);
                self.route(d.to, actions);
            }
            if !busy {
                return;
            }
        }
        self.stalled = true;
    }

    /// Records `node`'s actions and puts its adverts on the wire.
    fn route(&mut self, node: usize, actions: Vec<(u8, Action)>) {
        let Some(sender) = self.routers.get(node) else {
            return;
        };
        let mut deliveries = Vec::new();
        for &(vrid, action) in &actions {
            self.trace.push(Record {
                at: self.now,
                node,
                vrid,
                action,
            });
            let Action::SendAdvert { priority } = action else {
                continue;
            };
            let advert_int_cs = sender
                .node
                .instance(vrid)
                .map_or(0, |i| i.params().advert_int_cs);
            // The instance's own primary address: a group's members may send from different
            // ones (one per family in a dual-stack group).
            let from = sender
                .node
                .instance(vrid)
                .map_or(sender.addr, |i| i.params().primary_address);
            for (to, r) in self.routers.iter().enumerate() {
                if to == node || !self.linked(node, to) || r.node.instance(vrid).is_none() {
                    continue;
                }
                deliveries.push(Delivery {
                    to,
                    vrid,
                    from,
                    priority,
                    advert_int_cs,
                });
            }
        }
        let at = self.now + self.latency;
        for d in deliveries {
            self.seq += 1;
            self.queue.insert((at, self.seq), d);
        }
    }
}
