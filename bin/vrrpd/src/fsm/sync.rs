//! Sync groups (keepalived's `vrrp_sync_group`): instances that must change state together,
//! such as the inside and outside addresses of a router, written as a small coordinator over
//! [`Instance`]s.
//!
//! The rules, keepalived 2.x's (vrrp_sync.c):
//!
//! - **Fault**: while any member's own tracking puts it in Fault, every member is in Fault
//!   (masters resign with priority 0). When none is, they all come up as Backup together.
//! - **Backup**: a member that leaves Master (a higher-priority advert, shutdown) takes every
//!   other master member to Backup with it.
//! - **Master**: a member whose Master_Down_Timer fires only becomes *ready*; the group goes to
//!   Master, every member at once, when every member is ready or already master
//!   (`vrrp_sync_can_goto_master`). An advert that a member accepts makes it unready again. So
//!   the group prefers Backup to thrashing: if another router is still master of any one of the
//!   VRIDs, this group stays Backup for all of them.
//!
//! - **Ties** (vrrpd's): between equal priorities only the first member compares addresses
//!   (RFC 5798 6.4.3); the others keep Master on a tie. Two routers whose addresses sort one
//!   way in IPv4 and the other in IPv6 would otherwise each win one family, each pull its own
//!   group down, and start again after Master_Down_Interval, for ever.
//!
//! Weighted tracking should therefore be the same on every member, so that priorities move
//! together (keepalived's advice, and what `track_script` on the group gives).

use super::clock::Instant;
use super::instance::{Action, Event, Instance, State};

/// Instances that change state together. Actions come back tagged with the member's index.
#[derive(Debug, Clone)]
pub struct SyncGroup {
    members: Vec<Instance>,
}

/// Bounds the settle loop in [`SyncGroup::settle`]; one pass normally settles everything.
const MAX_PASSES: usize = 16;

impl SyncGroup {
    /// A group of these instances (in Initialize; send them [`Event::Startup`]).
    pub fn new(members: Vec<Instance>) -> Self {
        let mut members = members;
        for (i, m) in members.iter_mut().enumerate() {
            m.set_sync_member(true);
            m.set_tie_follower(i > 0);
        }
        SyncGroup { members }
    }

    /// The members, in the order given.
    pub fn members(&self) -> &[Instance] {
        &self.members
    }

    /// Member `index`.
    pub fn member(&self, index: usize) -> Option<&Instance> {
        self.members.get(index)
    }

    /// Takes the members back out (they stay marked as group members).
    pub fn into_members(self) -> Vec<Instance> {
        self.members
    }

    /// The group's state as keepalived reports it ([`combined`]).
    pub fn state(&self) -> State {
        combined(&self.states())
    }

    /// The group's state had its members been in `states` (by member index).
    pub fn state_with(&self, states: &[(usize, State)]) -> State {
        let mut now = self.states();
        for &(member, state) in states {
            if let Some(s) = now.get_mut(member) {
                *s = state;
            }
        }
        combined(&now)
    }

    /// The earliest timer of any member.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.members.iter().filter_map(Instance::poll_timeout).min()
    }

    /// Fires every member's due timers and lets the group follow.
    pub fn handle_timeout(&mut self, now: Instant) -> Vec<(usize, Action)> {
        let mut out = Vec::new();
        self.settle(now, &mut out);
        out
    }

    /// Member `member` takes new parameters in place (a reload: [`Instance::reconfigure`]),
    /// then the group follows as after an event (a member now in Fault takes the others).
    pub fn reconfigure(
        &mut self,
        now: Instant,
        member: usize,
        params: super::InstanceParams,
        addresses_changed: bool,
    ) -> Result<Vec<(usize, Action)>, super::ParamsError> {
        params.validate()?;
        let mut out = Vec::new();
        self.settle(now, &mut out);
        let before = self.states();
        if let Some(m) = self.members.get_mut(member) {
            let actions = m.reconfigure(now, params, addresses_changed)?;
            out.extend(actions.into_iter().map(|a| (member, a)));
        }
        self.coordinate(now, &before, &mut out);
        Ok(out)
    }

    /// An event for one member (an advert for its VRID). An index out of range is ignored.
    pub fn handle(&mut self, now: Instant, member: usize, event: Event) -> Vec<(usize, Action)> {
        let mut out = Vec::new();
        self.settle(now, &mut out);
        let before = self.states();
        let mut heard_lower = false;
        if let Some(m) = self.members.get_mut(member) {
            let actions = m.handle(now, event);
            out.extend(actions.into_iter().map(|a| (member, a)));
            heard_lower = m.take_heard_lower();
        }
        if heard_lower {
            // keepalived vrrp_state_master_rx: the peer's other members stepped down with the
            // one we heard, so every member re-announces its addresses.
            for (i, m) in self
                .members
                .iter_mut()
                .enumerate()
                .filter(|(i, _)| *i != member)
            {
                let mut actions = Vec::new();
                m.group_lower_prio_garp(now, &mut actions);
                out.extend(actions.into_iter().map(|a| (i, a)));
            }
        }
        self.coordinate(now, &before, &mut out);
        out
    }

    /// An event for every member: Startup, Shutdown, and script and interface results (each
    /// member ignores names it does not track).
    pub fn handle_all(&mut self, now: Instant, event: Event) -> Vec<(usize, Action)> {
        let mut out = Vec::new();
        self.settle(now, &mut out);
        let before = self.states();
        for (i, m) in self.members.iter_mut().enumerate() {
            let actions = m.handle(now, event.clone());
            out.extend(actions.into_iter().map(|a| (i, a)));
        }
        self.coordinate(now, &before, &mut out);
        out
    }

    fn states(&self) -> Vec<State> {
        self.members.iter().map(Instance::state).collect()
    }

    /// Fires due timers member by member, coordinating after each.
    fn settle(&mut self, now: Instant, out: &mut Vec<(usize, Action)>) {
        for _ in 0..MAX_PASSES {
            if self.poll_timeout().is_none_or(|at| at > now) {
                return;
            }
            for i in 0..self.members.len() {
                let before = self.states();
                let actions = self.members[i].handle_timeout(now);
                out.extend(actions.into_iter().map(|a| (i, a)));
                self.coordinate(now, &before, out);
            }
        }
    }

    /// Applies the group rules after members moved from `before`.
    fn coordinate(&mut self, now: Instant, before: &[State], out: &mut Vec<(usize, Action)>) {
        // Fault: one member's fault is everyone's (keepalived vrrp_sync_fault), and the group
        // comes back up only when no member has one.
        let fault = self.members.iter().any(Instance::own_fault);
        for (i, m) in self.members.iter_mut().enumerate() {
            let mut actions = Vec::new();
            m.set_group_fault(now, fault, &mut actions);
            out.extend(actions.into_iter().map(|a| (i, a)));
        }
        // Backup: a member that left Master takes the other masters with it
        // (keepalived vrrp_sync_backup).
        let left_master = before
            .iter()
            .zip(&self.members)
            .any(|(&was, m)| was == State::Master && m.state() != State::Master);
        if left_master {
            for (i, m) in self.members.iter_mut().enumerate() {
                let mut actions = Vec::new();
                m.demote(now, &mut actions);
                out.extend(actions.into_iter().map(|a| (i, a)));
            }
        }
        // Master: only when every member is ready or already master
        // (keepalived vrrp_sync_can_goto_master), and then all of them.
        let any_ready = self.members.iter().any(Instance::ready_for_master);
        let all_ready = self
            .members
            .iter()
            .all(|m| m.state() == State::Master || m.ready_for_master());
        if any_ready && all_ready {
            for (i, m) in self.members.iter_mut().enumerate() {
                let mut actions = Vec::new();
                m.promote(now, &mut actions);
                out.extend(actions.into_iter().map(|a| (i, a)));
            }
        }
    }
}

/// A group's state from its members' as keepalived reports it: Fault if any member is, Master
/// if all are, otherwise the state of the members that are neither (Backup, normally).
fn combined(states: &[State]) -> State {
    if states.contains(&State::Fault) {
        return State::Fault;
    }
    if !states.is_empty() && states.iter().all(|&s| s == State::Master) {
        return State::Master;
    }
    (states.iter().copied())
        .find(|&s| s != State::Master)
        .unwrap_or(State::Initialize)
}
