//! A reload applied to a running instance in place: new parameters, the same state.
//!
//! A reload that restarted a changed instance would move its VIPs twice (the master resigns,
//! a backup takes over, the restarted router preempts back), for changes that do not concern
//! the election at all: a unicast peer added when a node joins, a notify command, a VIP. So the
//! running state machine takes the new parameters and keeps its state and timers; only what
//! the new parameters change is acted on at once, and a VIP moves only when the protocol then
//! says so (our priority now below a peer's: the peer preempts as usual, RFC 5798 6.4.2).

use super::{Action, Instance, State};
use crate::fsm::clock::{Duration, Instant};
use crate::fsm::params::{InstanceParams, ParamsError};
use crate::fsm::track::{ScriptStatus, Tracking};

impl Instance {
    /// Takes `params` in place of the running parameters at `now`, keeping the state, the
    /// master heard and every script's and interface's last result (by name); returns what
    /// to do. `addresses_changed` says the VIPs changed (the shell knows them, the core does
    /// not): a master adds them and announces them with a burst of gratuitous ARPs /
    /// unsolicited NAs (and the delayed second burst), as when it became master; the shell
    /// withdraws the removed ones itself.
    ///
    /// - The effective priority is recomputed from the new base and weights; a change is
    ///   acted on as a tracking change is (a master advertises it at once, a backup's
    ///   Master_Down_Timer shrinks with its skew), and tracking that now says Fault puts the
    ///   instance in Fault.
    /// - A master advertises at once (what its adverts carry may have changed: priority,
    ///   interval, addresses, the peers they go to) and runs its Adver_Timer on the new
    ///   interval from now; a v2 backup times the master on the new interval (RFC 3768 has no
    ///   Master_Adver_Interval to learn), a v3 backup keeps what it learned from the master.
    /// - A master's garp_master_refresh timer follows the new period.
    ///
    /// Parameters that make another virtual router (VRID, version, family) are the caller's to
    /// refuse: it restarts such an instance instead. Fails, changing nothing, on parameters
    /// [`InstanceParams::validate`] refuses.
    pub fn reconfigure(
        &mut self,
        now: Instant,
        params: InstanceParams,
        addresses_changed: bool,
    ) -> Result<Vec<Action>, ParamsError> {
        params.validate()?;
        let mut out = Vec::new();
        self.advance(now, &mut out);
        let now = self.now;
        let tracking = carried(&self.tracking, &params);
        let old = std::mem::replace(&mut self.params, params);
        self.tracking = tracking;
        if old.advert_int_cs != self.params.advert_int_cs
            && (self.state == State::Master || self.params.version == super::Version::V2)
        {
            self.master_adver_int_cs = self.params.advert_int_cs;
        }
        if self.state == State::Master && old.garp != self.params.garp {
            self.garp_refresh_timer = self.garp_refresh_interval().map(|d| now + d);
        }
        let sent = out.len();
        let was_master = self.state == State::Master;
        self.tracking_changed(now, &mut out);
        if was_master && self.state == State::Master {
            if addresses_changed {
                // As become_master: the addresses first, so that the announcements are for
                // addresses we answer.
                out.push(Action::AddVips);
                out.push(Action::SendGarp {
                    repeat: self.params.garp.master_repeat,
                });
                let delay = self.params.garp.master_delay_cs;
                self.garp_timer =
                    (delay > 0).then(|| now + Duration::from_centis(u64::from(delay)));
            }
            let advertised = out[sent..]
                .iter()
                .any(|a| matches!(a, Action::SendAdvert { .. }));
            if !advertised {
                self.send_advert(self.priority, &mut out);
            }
            self.adver_timer = Some(now + self.advert_interval());
        }
        Ok(out)
    }
}

/// The tracking `params` configure, with each script's status and each interface's state
/// carried over from `old` by name: a script whose runner goes on keeps its last result until
/// the next (a new counter is brought to the old status by results that reach it: `rise`
/// successes, or one failure). A script or interface new to the instance starts as
/// [`Tracking::new`] starts it.
fn carried(old: &Tracking, params: &InstanceParams) -> Tracking {
    let mut t = Tracking::new(params);
    for s in &params.track_scripts {
        match old.script_status(&s.name) {
            Some(ScriptStatus::Ok) => {
                for _ in 0..s.rise.max(1) {
                    t.script_result(&s.name, true);
                }
            }
            Some(ScriptStatus::Failing) => {
                t.script_result(&s.name, false);
            }
            Some(ScriptStatus::Init) | None => {}
        }
    }
    for i in &params.track_interfaces {
        if let Some(up) = old.interface_up(&i.name) {
            t.interface_changed(&i.name, up);
        }
    }
    for f in &params.track_files {
        if let Some(value) = old.file(&f.name) {
            t.file_value(&f.name, value);
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use std::net::{IpAddr, Ipv4Addr};

    use super::*;
    use crate::fsm::{Event, TrackScript, Version};

    fn ip(last: u8) -> IpAddr {
        IpAddr::V4(Ipv4Addr::new(192, 0, 2, last))
    }

    fn params(priority: u8) -> InstanceParams {
        let mut p = InstanceParams::new(51, priority, ip(1));
        p.version = Version::V3;
        p
    }

    fn at(ms: u64) -> Instant {
        Instant::from_millis(ms)
    }

    fn advert(from: u8, priority: u8) -> Event {
        Event::Advert {
            from: ip(from),
            priority,
            advert_int_cs: 100,
        }
    }

    /// A master at `priority` (its down timer fired: no one else was heard).
    fn master(p: InstanceParams) -> Instance {
        let mut i = Instance::new(p).unwrap();
        i.handle(Instant::ZERO, Event::Startup);
        let due = i.poll_timeout().unwrap();
        i.handle_timeout(due);
        assert_eq!(i.state(), State::Master);
        i
    }

    /// A backup that heard a master at 200 (address .2) at 5 s.
    fn backup(p: InstanceParams) -> Instance {
        let mut i = Instance::new(p).unwrap();
        i.handle(Instant::ZERO, Event::Startup);
        i.handle(at(1000), advert(2, 200));
        assert_eq!(i.state(), State::Backup);
        i
    }

    /// `i` at `t` with every timer due by then fired, so that what a call at `t` returns is
    /// its own.
    fn rest(i: &mut Instance, t: Instant) -> Instant {
        i.handle_timeout(t);
        t
    }

    fn no_state_change(out: &[Action]) -> bool {
        !out.iter().any(|a| {
            matches!(
                a,
                Action::StateChanged { .. }
                    | Action::RemoveVips
                    | Action::SendAdvert { priority: 0 }
            )
        })
    }

    #[test]
    fn an_unchanged_master_stays_and_advertises_at_once() {
        let mut i = master(params(100));
        let t = rest(&mut i, at(5000));
        let out = i.reconfigure(t, params(100), false).unwrap();
        assert_eq!(out, [Action::SendAdvert { priority: 100 }]);
        assert_eq!(i.state(), State::Master);
        assert_eq!(i.poll_timeout(), Some(at(6000)));
        assert_eq!(i.counters().transitions, 2);
    }

    #[test]
    fn a_master_with_new_vips_adds_and_announces_them() {
        let mut i = master(params(100));
        let t = rest(&mut i, at(20_000));
        let out = i.reconfigure(t, params(100), true).unwrap();
        assert_eq!(
            out,
            [
                Action::AddVips,
                Action::SendGarp { repeat: 5 },
                Action::SendAdvert { priority: 100 },
            ]
        );
        // The delayed second burst, as after a takeover (garp_master_delay 5 s).
        let mut fired = Vec::new();
        for ms in (20_000..=26_000).step_by(10) {
            fired.extend(i.handle_timeout(at(ms)));
        }
        assert_eq!(
            fired
                .iter()
                .filter(|a| matches!(a, Action::SendGarp { .. }))
                .count(),
            1,
            "{fired:?}"
        );
        // A backup with new VIPs has nothing to add.
        let mut b = backup(params(100));
        let out = b.reconfigure(at(1500), params(100), true).unwrap();
        assert!(out.is_empty(), "{out:?}");
    }

    #[test]
    fn a_lower_priority_is_advertised_and_a_higher_backup_takes_over_by_the_protocol() {
        let mut i = master(params(150));
        let t = rest(&mut i, at(5000));
        let out = i.reconfigure(t, params(50), false).unwrap();
        assert_eq!(
            out,
            [
                Action::PriorityChanged { from: 150, to: 50 },
                Action::SendAdvert { priority: 50 },
            ]
        );
        assert_eq!(i.state(), State::Master);
        // The preempting backup at 100 then takes over (RFC 5798 6.4.2) and we yield to its
        // advert (6.4.3): the required move, made by the protocol.
        let out = i.handle(at(8000), advert(2, 100));
        assert!(out.contains(&Action::RemoveVips));
        assert_eq!(i.state(), State::Backup);
    }

    #[test]
    fn a_backup_raised_above_the_master_preempts_sooner() {
        let mut i = backup(params(100));
        // v3, 1 s, priority 100: the down timer at 1000 + 3609 ms.
        assert_eq!(i.poll_timeout(), Some(at(4609)));
        let out = i.reconfigure(at(1500), params(250), false).unwrap();
        assert_eq!(out, [Action::PriorityChanged { from: 100, to: 250 }]);
        assert_eq!(i.state(), State::Backup);
        // The skew shrank from 609 to 23 ms.
        assert_eq!(i.poll_timeout(), Some(at(4023)));
        // A master at 200 is now below us: discarded (preempt), and we take over.
        i.handle(at(2000), advert(2, 200));
        let out = i.handle_timeout(at(4023));
        assert!(out.contains(&Action::AddVips));
        assert_eq!(i.state(), State::Master);
    }

    #[test]
    fn a_new_interval_runs_from_now() {
        let mut i = master(params(100));
        let mut p = params(100);
        p.advert_int_cs = 50;
        i.reconfigure(at(5200), p, false).unwrap();
        assert_eq!(i.poll_timeout(), Some(at(5700)));
        assert_eq!(i.master_adver_int_cs(), 50);
        // A v3 backup keeps the master's interval it learned.
        let mut b = backup(params(100));
        let mut p = params(100);
        p.advert_int_cs = 50;
        b.reconfigure(at(1500), p, false).unwrap();
        assert_eq!(b.master_adver_int_cs(), 100);
    }

    #[test]
    fn scripts_keep_their_last_result_and_weights_apply_at_once() {
        let mut p = params(100);
        let mut chk = TrackScript::new("chk", 20);
        chk.rise = 3;
        p.track_scripts.push(chk.clone());
        let mut i = master(p.clone());
        rest(&mut i, at(5000));
        let out = i.handle(
            at(5000),
            Event::ScriptResult {
                name: "chk".into(),
                ok: true,
            },
        );
        assert!(out.contains(&Action::PriorityChanged { from: 100, to: 120 }));
        // A new weight for the same script: the result stays OK, the priority follows.
        let mut q = params(100);
        q.track_scripts.push(TrackScript { weight: 30, ..chk });
        let out = i.reconfigure(at(5100), q.clone(), false).unwrap();
        assert_eq!(
            out,
            [
                Action::PriorityChanged { from: 120, to: 130 },
                Action::SendAdvert { priority: 130 },
            ]
        );
        assert_eq!(i.script_status("chk"), Some(ScriptStatus::Ok));
        // The same again: nothing changes but the advert.
        let out = i.reconfigure(at(5200), q, false).unwrap();
        assert_eq!(out, [Action::SendAdvert { priority: 130 }]);
        // The script untracked: its weight goes.
        let out = i.reconfigure(at(5300), params(100), false).unwrap();
        assert_eq!(out[0], Action::PriorityChanged { from: 130, to: 100 });
        assert_eq!(i.script_status("chk"), None);
    }

    #[test]
    fn a_failing_weight_zero_script_added_in_place_means_fault() {
        let mut i = master(params(100));
        let mut p = params(100);
        let mut chk = TrackScript::new("chk", 0);
        chk.init_fail = true;
        p.track_scripts.push(chk);
        let out = i.reconfigure(at(5000), p, false).unwrap();
        assert_eq!(i.state(), State::Fault);
        assert!(out.contains(&Action::SendAdvert { priority: 0 }));
        assert!(out.contains(&Action::RemoveVips));
        assert!(!no_state_change(&out));
    }

    #[test]
    fn interfaces_keep_their_state() {
        let mut p = params(100);
        p.track_interfaces
            .push(crate::fsm::TrackInterface::new("eth1", -30));
        let mut i = backup(p.clone());
        i.handle(
            at(1200),
            Event::InterfaceChanged {
                name: "eth1".into(),
                up: false,
            },
        );
        assert_eq!(i.priority(), 70);
        let out = i.reconfigure(at(1300), p, false).unwrap();
        assert!(out.is_empty(), "{out:?}");
        assert_eq!(i.priority(), 70);
        assert_eq!(i.interface_up("eth1"), Some(false));
    }

    #[test]
    fn refused_parameters_change_nothing() {
        let mut i = master(params(100));
        let mut p = params(100);
        p.advert_int_cs = 0;
        assert!(i.reconfigure(at(5000), p, false).is_err());
        assert_eq!(i.params(), &params(100));
        assert_eq!(i.state(), State::Master);
    }

    #[test]
    fn nothing_in_place_changes_the_state_of_a_backup() {
        let mut i = backup(params(100));
        let mut p = params(90);
        p.preempt = false;
        p.garp.master_repeat = 2;
        p.lower_prio_no_advert = true;
        let out = i.reconfigure(at(2000), p, true).unwrap();
        assert!(no_state_change(&out), "{out:?}");
        assert_eq!(i.state(), State::Backup);
        assert_eq!(i.master(), Some((ip(2), 200)));
    }
}
