//! Receiving an advert, written as the RFC's state table: [`Instance::backup_rx`] is RFC 5798
//! 6.4.2's "If an ADVERTISEMENT is received" and [`Instance::master_rx`] is 6.4.3's, with
//! keepalived's preempt delay, its answer to a lower priority and its gratuitous ARPs then.

use std::net::IpAddr;

use super::{Action, Instance, State};
use crate::fsm::clock::{Duration, Instant};
use crate::fsm::params::Version;

impl Instance {
    /// A validated advert, counted, then handled as the state's row of the RFC's table says.
    pub(super) fn advert(
        &mut self,
        now: Instant,
        from: IpAddr,
        priority: u8,
        advert_int_cs: u16,
        out: &mut Vec<Action>,
    ) {
        self.counters.adverts_received += 1;
        if priority == 0 {
            self.counters.priority_zero_received += 1;
        }
        // RFC 3768 7.1: a v2 router MUST discard an advert whose interval differs from its own
        // (v2 has no Master_Adver_Interval to learn).
        if self.params.version == Version::V2 && advert_int_cs != self.params.advert_int_cs {
            self.counters.interval_errors += 1;
            return;
        }
        match self.state {
            State::Backup => self.backup_rx(now, from, priority, advert_int_cs),
            State::Master => self.master_rx(now, from, priority, advert_int_cs, out),
            // Initialize, Fault and Stopped do not take part.
            State::Initialize | State::Fault | State::Stopped => {}
        }
    }

    /// RFC 5798 6.4.2 (RFC 3768 6.4.2): Backup, "If an ADVERTISEMENT is received".
    fn backup_rx(&mut self, now: Instant, from: IpAddr, priority: u8, advert_int_cs: u16) {
        if priority == 0 {
            // The master resigned: take over after Skew_Time, the highest-priority backup
            // first.
            self.master_down_timer = Some(now + self.skew_time());
            return;
        }
        // keepalived's preempt_delay: a lower-priority master is still accepted until the
        // delay, counted from the first lower-priority advert heard in Backup, has passed.
        let delay = self.params.preempt_delay_cs;
        let delaying = delay > 0 && self.preempt_until.is_none_or(|until| until > now);
        if !self.params.preempt || priority >= self.priority || delaying {
            // RFC 5798: learn Master_Adver_Interval (v3 only; 0 carries no information),
            // recompute Master_Down_Interval and reset the Master_Down_Timer.
            if self.params.version == Version::V3 && advert_int_cs != 0 {
                self.master_adver_int_cs = advert_int_cs;
            }
            self.arm_master_down(now);
            self.master = Some((from, priority));
            self.sync.ready = false;
            if delay > 0 {
                if priority >= self.priority {
                    self.preempt_until = None;
                } else if self.preempt_until.is_none() {
                    self.preempt_until = Some(now + Duration::from_centis(u64::from(delay)));
                }
            }
        } else {
            // Preempt_Mode and a lower priority: discard. The Master_Down_Timer keeps running
            // and we take over when it fires, or (preempt_on_lower_priority) after Skew_Time
            // as if the master had resigned: it will step down when it hears us.
            self.master = Some((from, priority));
            if self.params.preempt_on_lower_priority {
                let soon = now + self.skew_time();
                self.master_down_timer =
                    Some(self.master_down_timer.map_or(soon, |at| at.min(soon)));
            }
        }
    }

    /// RFC 5798 6.4.3 (RFC 3768 6.4.3): Master, "If an ADVERTISEMENT is received".
    fn master_rx(
        &mut self,
        now: Instant,
        from: IpAddr,
        priority: u8,
        advert_int_cs: u16,
        out: &mut Vec<Action>,
    ) {
        if priority == 0 {
            // Another router resigned as master: re-assert at once so that no backup takes
            // over after its Skew_Time.
            self.send_advert(self.priority, out);
            self.adver_timer = Some(now + self.advert_interval());
            return;
        }
        let local = self.priority;
        // A group follower keeps Master on a tie: its group's first member breaks ties for
        // every member, so two routers whose addresses sort differently in two families (a
        // dual-stack group) cannot each win one family and pull each other down.
        let tie_lost = priority == local
            && !self.sync.tie_follower
            && address_greater(from, self.params.primary_address);
        if priority > local || tie_lost {
            // Higher priority, or equal priority and the greater primary address: step down
            // and time the new master with its own interval.
            //
            // A tie lost means two masters at once (a backup never preempts an equal
            // priority): a two-way partition healing, or two that took over together. Then
            // one advert of ours on the way out (RFC 5798 sends none; neither does
            // keepalived): when the other's advert crossed first, it has never heard us, so it
            // would not re-announce the VIPs (it does on the advert it hears, see below) and
            // the neighbours that took our announcements would keep our MAC for a VIP we no
            // longer hold until their entries go stale (15-45 s). A higher priority is a
            // preemption as often as a heal, and a preempting master announces itself: no
            // advert then, as keepalived.
            if tie_lost {
                self.send_advert(local, out);
            }
            self.release_master(out);
            self.master_adver_int_cs = if self.params.version == Version::V3 && advert_int_cs != 0 {
                advert_int_cs
            } else {
                self.params.advert_int_cs
            };
            self.arm_master_down(now);
            self.preempt_until = None;
            self.master = Some((from, priority));
            self.sync.ready = false;
            self.set_state(State::Backup, out);
            return;
        }
        // Otherwise discard. An advert with our own priority and address is our own, looped
        // back. For a lower one keepalived (unless lower_prio_no_advert) answers at once, so
        // that a router which took over while it could not hear us steps down now.
        if from == self.params.primary_address {
            return;
        }
        // At most one answer per Advertisement_Interval: a router of the group sends one
        // advert an interval, so one answer heals a split brain as soon, while a host that
        // sends lower-priority adverts as fast as it can makes us send no more than our own
        // rhythm (without this, each one cost an advert and a gratuitous ARP burst).
        if self
            .lower_answered
            .is_some_and(|at| now < at + self.advert_interval())
        {
            return;
        }
        self.lower_answered = Some(now);
        if !self.params.lower_prio_no_advert {
            self.send_advert(local, out);
        }
        self.lower_prio_garp(now, out);
    }

    /// keepalived vrrp_state_master_rx: a master that hears a lower-priority advert (a split
    /// brain healing) re-announces its addresses, `garp_lower_prio_repeat` each, and again
    /// `garp_lower_prio_delay` later, so that every neighbour's cache points at us, not at the
    /// router that stepped down. keepalived starts one delayed burst per advert heard; here a
    /// delayed burst already due is not pushed back or doubled.
    ///
    /// vrrpd also re-announces once more with its next advert: when the lower router had just
    /// taken over (two candidates at once, equal priorities), its own burst went out with the
    /// advert we answer, and the two bursts race on the wire; the client keeps whichever came
    /// last. By our next advert the other router has heard our answer and stopped.
    pub(super) fn lower_prio_garp(&mut self, now: Instant, out: &mut Vec<Action>) {
        let g = self.params.garp;
        if g.lower_prio_repeat == 0 {
            return;
        }
        self.sync.heard_lower = true;
        out.push(Action::SendGarp {
            repeat: g.lower_prio_repeat,
        });
        self.garp_with_next_advert = true;
        if g.lower_prio_delay_cs > 0 && self.garp_lower_prio_timer.is_none() {
            self.garp_lower_prio_timer =
                Some(now + Duration::from_centis(u64::from(g.lower_prio_delay_cs)));
        }
    }
}

/// RFC 5798 6.4.3: primary addresses compare as unsigned integers in network byte order. Two
/// families never meet on one instance; if they did, neither would count as greater.
fn address_greater(a: IpAddr, b: IpAddr) -> bool {
    match (a, b) {
        (IpAddr::V4(a), IpAddr::V4(b)) => u32::from(a) > u32::from(b),
        (IpAddr::V6(a), IpAddr::V6(b)) => u128::from(a) > u128::from(b),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    fn v4(last: u8) -> IpAddr {
        IpAddr::V4(Ipv4Addr::new(192, 0, 2, last))
    }

    #[test]
    fn addresses_compare_as_unsigned_integers() {
        assert!(address_greater(v4(10), v4(9)));
        assert!(!address_greater(v4(9), v4(10)));
        assert!(address_greater(
            IpAddr::V4(Ipv4Addr::new(203, 0, 113, 1)),
            IpAddr::V4(Ipv4Addr::new(192, 0, 2, 255))
        ));
        let lo: IpAddr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0xffff).into();
        let hi: IpAddr = Ipv6Addr::new(0x2001, 0xdb8, 0, 1, 0, 0, 0, 0).into();
        assert!(address_greater(hi, lo));
        assert!(!address_greater(hi, v4(1)) && !address_greater(v4(1), hi));
    }
}
