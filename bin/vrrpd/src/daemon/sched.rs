//! The daemon's bookkeeping for many instances: which unit is due when (one heap of timers, so
//! that a wake-up touches only the units that are due) and which instance a datagram is for
//! (a map by socket and VRID, so that an advert costs the same with 1,000 instances as with
//! one).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use super::setup::Vr;
use crate::fsm::Instant;

/// When each unit is due. A unit is armed with its `poll_timeout` after every event it
/// handles; an entry whose unit has been armed again since is stale and skipped, so that a
/// backup whose Master_Down_Timer every advert restarts costs one push per advert and no
/// wake-up.
#[derive(Debug, Default)]
pub struct Timers {
    heap: BinaryHeap<Reverse<(Instant, usize)>>,
    /// Per unit: the deadline of its live entry.
    armed: Vec<Option<Instant>>,
}

impl Timers {
    /// Unit `unit` is next due at `at` (None: it waits for nothing).
    pub fn arm(&mut self, unit: usize, at: Option<Instant>) {
        if self.armed.len() <= unit {
            self.armed.resize(unit + 1, None);
        }
        if self.armed[unit] == at {
            return;
        }
        self.armed[unit] = at;
        if let Some(at) = at {
            self.heap.push(Reverse((at, unit)));
        }
        // Stale entries are dropped when they reach the top; keep the heap from growing
        // without bound when deadlines only ever move later.
        if self.heap.len() > 4 * self.armed.len() + 64 {
            self.compact();
        }
    }

    /// Forgets everything (the units were rebuilt: re-arm each).
    pub fn clear(&mut self) {
        self.heap.clear();
        self.armed.clear();
    }

    /// The earliest live deadline.
    pub fn earliest(&mut self) -> Option<Instant> {
        while let Some(&Reverse((at, unit))) = self.heap.peek() {
            if self.armed.get(unit).copied().flatten() == Some(at) {
                return Some(at);
            }
            self.heap.pop();
        }
        None
    }

    /// The units due at `now`, each once, disarmed (the caller re-arms them after handling).
    pub fn due(&mut self, now: Instant) -> Vec<usize> {
        let mut due = Vec::new();
        while let Some(at) = self.earliest() {
            if at > now {
                break;
            }
            if let Some(Reverse((_, unit))) = self.heap.pop() {
                self.armed[unit] = None;
                due.push(unit);
            }
        }
        due
    }

    fn compact(&mut self) {
        let live = self
            .armed
            .iter()
            .enumerate()
            .filter_map(|(u, at)| at.map(|at| Reverse((at, u))));
        self.heap = live.collect();
    }
}

/// Which instance a datagram or a unit's member is: maps built from `Parts::vrs`, built again
/// whenever the instances change (the daemon's `parts_changed`).
#[derive(Debug, Default)]
pub struct Index {
    by_vrid: HashMap<(usize, u8), usize>,
    by_member: HashMap<(usize, usize), usize>,
}

impl Index {
    /// The maps of `vrs`.
    pub fn new(vrs: &[Vr]) -> Index {
        Index {
            // A use_vmac instance hears its group on its macvlan's socket too.
            by_vrid: vrs
                .iter()
                .enumerate()
                .flat_map(|(n, v)| {
                    let vmac = v.vmac.as_ref().map(|(_, s)| ((*s, v.cfg.vrid), n));
                    std::iter::once(((v.socket, v.cfg.vrid), n)).chain(vmac)
                })
                .collect(),
            by_member: vrs
                .iter()
                .enumerate()
                .map(|(n, v)| ((v.unit, v.member), n))
                .collect(),
        }
    }

    /// The instance on socket `socket` with VRID `vrid`.
    pub fn by_vrid(&self, socket: usize, vrid: u8) -> Option<usize> {
        self.by_vrid.get(&(socket, vrid)).copied()
    }

    /// The instance that is member `member` of unit `unit`.
    pub fn by_member(&self, unit: usize, member: usize) -> Option<usize> {
        self.by_member.get(&(unit, member)).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> Instant {
        Instant::from_millis(ms)
    }

    #[test]
    fn only_live_deadlines_count() {
        let mut t = Timers::default();
        t.arm(0, Some(at(100)));
        t.arm(1, Some(at(50)));
        t.arm(1, Some(at(300))); // restarted: the entry at 50 is stale
        assert_eq!(t.earliest(), Some(at(100)));
        assert_eq!(t.due(at(200)), vec![0]);
        assert_eq!(t.earliest(), Some(at(300)));
        t.arm(1, None);
        assert_eq!(t.earliest(), None);
        assert!(t.due(at(1000)).is_empty());
    }

    #[test]
    fn a_unit_is_due_once() {
        let mut t = Timers::default();
        t.arm(2, Some(at(10)));
        t.arm(2, Some(at(20)));
        t.arm(2, Some(at(10)));
        assert_eq!(t.due(at(30)), vec![2]);
        assert!(t.due(at(30)).is_empty());
    }

    #[test]
    fn the_heap_stays_small() {
        let mut t = Timers::default();
        for n in 0..10_000 {
            t.arm(n % 3, Some(at(n as u64)));
        }
        assert!(t.heap.len() <= 4 * 3 + 64 + 1, "{}", t.heap.len());
        assert_eq!(t.earliest(), Some(at(9_997)));
    }
}
