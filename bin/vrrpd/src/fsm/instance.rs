//! One VRRP instance: the state machine of RFC 5798 6.4 (and RFC 3768 6.4 for v2), with
//! keepalived's Fault state, tracking and preempt delay.
//!
//! Receive handling (`receive`) is written as the RFC's state table; `reconfigure` takes a
//! reload's parameters in place. Adverts arrive validated (TTL, authentication, checksum,
//! VRID, address list are the IO layer's job).

use std::net::IpAddr;

use super::clock::{master_down_interval, skew_time, Duration, Instant};
use super::params::{InitialState, InstanceParams, ParamsError, Version};
use super::track::{ScriptStatus, Tracking};

mod receive;
mod reconfigure;

/// Where an instance stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum State {
    /// Not started yet, or waiting for the first result of a weight-0 track script
    /// (RFC 5798 6.4.1).
    Initialize,
    /// Watching the master (RFC 5798 6.4.2).
    Backup,
    /// Holding the addresses and advertising (RFC 5798 6.4.3).
    Master,
    /// keepalived's FAULT: a weight-0 tracked interface is down or a weight-0 script is failing
    /// (or, in a sync group, another member's is). Silent; adverts are ignored.
    Fault,
    /// Shut down.
    Stopped,
}

impl State {
    /// The name keepalived writes in state files and passes to notify scripts.
    pub fn as_str(self) -> &'static str {
        match self {
            State::Initialize => "INIT",
            State::Backup => "BACKUP",
            State::Master => "MASTER",
            State::Fault => "FAULT",
            State::Stopped => "STOP",
        }
    }
}

impl std::fmt::Display for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What happens to an instance. Timers are not events: see [`Instance::handle_timeout`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// RFC 5798 6.4.1's Startup event (also a restart after [`Event::Shutdown`]).
    Startup,
    /// RFC 5798's Shutdown event: a master resigns with priority 0.
    Shutdown,
    /// A validated advertisement for this VRID from another router.
    Advert {
        /// The sender's (primary) address: the IP source.
        from: IpAddr,
        /// Its priority; 0 means the master is resigning.
        priority: u8,
        /// Its Max Adver Int in centiseconds (a v2 interval converted from seconds).
        advert_int_cs: u16,
    },
    /// A track script finished: `ok` is exit status 0; a timeout or a failure to run is not ok.
    ScriptResult {
        /// The script's name.
        name: String,
        /// Whether it succeeded.
        ok: bool,
    },
    /// A tracked file was read (keepalived's `track_file`).
    FileValue {
        /// The `track_file` block's name.
        name: String,
        /// The integer it holds (0 when it is missing or holds none).
        value: i64,
    },
    /// A tracked interface went up or down.
    InterfaceChanged {
        /// The interface's name.
        name: String,
        /// Whether it is up (and running) now.
        up: bool,
    },
}

/// What the IO shell must do, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// Send one advertisement with this priority (0: resigning) and the configured interval.
    SendAdvert {
        /// The priority to put in it.
        priority: u8,
    },
    /// Add the virtual addresses to the interface.
    AddVips,
    /// Remove the virtual addresses.
    RemoveVips,
    /// Send a burst of gratuitous ARPs (IPv4) or unsolicited neighbour advertisements (IPv6):
    /// `repeat` for each virtual address. The core times the bursts; the shell only sends.
    SendGarp {
        /// Messages per address.
        repeat: u32,
    },
    /// The state changed: run notify scripts, write the state file.
    StateChanged {
        /// The old state.
        from: State,
        /// The new state.
        to: State,
        /// The effective priority at the change.
        priority: u8,
    },
    /// The effective priority changed (keepalived's `notify_priority_changes`).
    PriorityChanged {
        /// The old priority.
        from: u8,
        /// The new priority.
        to: u8,
    },
}

/// Per-instance statistics (the counters of RFC 6527's VRRPv3 MIB that the state machine sees).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counters {
    /// Advertisements sent, priority 0 included.
    pub adverts_sent: u64,
    /// Advertisements received (validated ones, in any state).
    pub adverts_received: u64,
    /// Advertisements sent with priority 0.
    pub priority_zero_sent: u64,
    /// Advertisements received with priority 0.
    pub priority_zero_received: u64,
    /// State changes.
    pub transitions: u64,
    /// Times this instance became master.
    pub became_master: u64,
    /// Times it stopped being master.
    pub released_master: u64,
    /// v2 adverts dropped because their interval differs from ours (RFC 3768 7.1).
    pub interval_errors: u64,
}

/// How a sync group sees a member (see [`super::SyncGroup`]).
#[derive(Debug, Clone, Copy, Default)]
struct SyncLink {
    /// In a sync group: a fired Master_Down_Timer only makes the instance ready.
    member: bool,
    /// In a sync group, not its first member: an equal-priority advert from a greater address
    /// does not make it yield; the first member's tie-break decides for the group.
    tie_follower: bool,
    /// Another member is in Fault.
    group_fault: bool,
    /// As master, this member heard a lower-priority advert since the group last asked:
    /// keepalived then re-announces every member's addresses, not only this one's.
    heard_lower: bool,
    /// The Master_Down_Timer fired (or the owner started) and no advert has held us back since:
    /// keepalived's `wantstate == MASTER`.
    ready: bool,
}

/// The timers, in the order they fire when due at the same instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Timer {
    MasterDown,
    Adver,
    Garp,
    GarpRefresh,
    GarpLowerPrio,
}

/// One VRRP instance as a sans-IO state machine.
///
/// Feed it [`Event`]s with [`handle`](Self::handle) and call
/// [`handle_timeout`](Self::handle_timeout) once [`poll_timeout`](Self::poll_timeout) has
/// passed; both return the [`Action`]s to carry out. Every call first fires the timers that are
/// due at `now`, so a late call never loses one. A `now` earlier than one already seen is read
/// as the latest seen.
#[derive(Debug, Clone)]
pub struct Instance {
    params: InstanceParams,
    tracking: Tracking,
    state: State,
    started: bool,
    priority: u8,
    master_adver_int_cs: u16,
    adver_timer: Option<Instant>,
    master_down_timer: Option<Instant>,
    garp_timer: Option<Instant>,
    garp_refresh_timer: Option<Instant>,
    garp_lower_prio_timer: Option<Instant>,
    /// A lower-priority advert was heard: re-announce once more with the next advert.
    garp_with_next_advert: bool,
    /// When this master last answered a lower-priority advert (see `master_rx`).
    lower_answered: Option<Instant>,
    preempt_until: Option<Instant>,
    master: Option<(IpAddr, u8)>,
    now: Instant,
    sync: SyncLink,
    counters: Counters,
}

impl Instance {
    /// An instance in Initialize; it starts on [`Event::Startup`].
    pub fn new(params: InstanceParams) -> Result<Self, ParamsError> {
        params.validate()?;
        let tracking = Tracking::new(&params);
        let priority = tracking.effective_priority();
        let master_adver_int_cs = params.advert_int_cs;
        Ok(Instance {
            params,
            tracking,
            state: State::Initialize,
            started: false,
            priority,
            master_adver_int_cs,
            adver_timer: None,
            master_down_timer: None,
            garp_timer: None,
            garp_refresh_timer: None,
            garp_lower_prio_timer: None,
            garp_with_next_advert: false,
            lower_answered: None,
            preempt_until: None,
            master: None,
            now: Instant::ZERO,
            sync: SyncLink::default(),
            counters: Counters::default(),
        })
    }

    /// The parameters.
    pub fn params(&self) -> &InstanceParams {
        &self.params
    }

    /// The current state.
    pub fn state(&self) -> State {
        self.state
    }

    /// The effective priority.
    pub fn priority(&self) -> u8 {
        self.priority
    }

    /// The statistics.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// The master last heard while Backup: address and priority.
    pub fn master(&self) -> Option<(IpAddr, u8)> {
        self.master
    }

    /// Master_Adver_Interval in centiseconds: our own interval, or (v3, Backup) the master's.
    pub fn master_adver_int_cs(&self) -> u16 {
        self.master_adver_int_cs
    }

    /// The current Skew_Time.
    pub fn skew_time(&self) -> Duration {
        skew_time(self.params.version, self.priority, self.master_adver_int_cs)
    }

    /// The current Master_Down_Interval.
    pub fn master_down_interval(&self) -> Duration {
        master_down_interval(self.params.version, self.priority, self.master_adver_int_cs)
    }

    /// The status of track script `name`, if tracked.
    pub fn script_status(&self, name: &str) -> Option<ScriptStatus> {
        self.tracking.script_status(name)
    }

    /// Whether tracked interface `name` is up, if tracked.
    pub fn interface_up(&self, name: &str) -> Option<bool> {
        self.tracking.interface_up(name)
    }

    /// When [`handle_timeout`](Self::handle_timeout) must be called next, if at all.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.next_timer().map(|(_, at)| at)
    }

    /// Fires every timer due at `now`.
    pub fn handle_timeout(&mut self, now: Instant) -> Vec<Action> {
        let mut out = Vec::new();
        self.advance(now, &mut out);
        out
    }

    /// Handles one event at `now` (after firing the timers due by then).
    pub fn handle(&mut self, now: Instant, event: Event) -> Vec<Action> {
        let mut out = Vec::new();
        self.advance(now, &mut out);
        let now = self.now;
        match event {
            Event::Startup => self.startup(now, &mut out),
            Event::Shutdown => self.shutdown(&mut out),
            Event::Advert {
                from,
                priority,
                advert_int_cs,
            } => self.advert(now, from, priority, advert_int_cs, &mut out),
            Event::ScriptResult { name, ok } => {
                if self.tracking.script_result(&name, ok) {
                    self.tracking_changed(now, &mut out);
                }
            }
            Event::InterfaceChanged { name, up } => {
                if self.tracking.interface_changed(&name, up) {
                    self.tracking_changed(now, &mut out);
                }
            }
            Event::FileValue { name, value } => {
                if self.tracking.file_value(&name, value) {
                    self.tracking_changed(now, &mut out);
                }
            }
        }
        // The event may have moved a timer to now or before (a backup whose priority rose
        // shortens its Master_Down_Timer): fire it now rather than at the next call.
        self.advance(now, &mut out);
        out
    }

    // ---- timers ----------------------------------------------------------------------------

    fn next_timer(&self) -> Option<(Timer, Instant)> {
        [
            (Timer::MasterDown, self.master_down_timer),
            (Timer::Adver, self.adver_timer),
            (Timer::Garp, self.garp_timer),
            (Timer::GarpRefresh, self.garp_refresh_timer),
            (Timer::GarpLowerPrio, self.garp_lower_prio_timer),
        ]
        .into_iter()
        .filter_map(|(t, at)| at.map(|at| (t, at)))
        // min_by_key keeps the first of equal keys: the order above breaks ties.
        .min_by_key(|&(_, at)| at)
    }

    fn advance(&mut self, now: Instant, out: &mut Vec<Action>) {
        self.now = self.now.max(now);
        let now = self.now;
        // Each firing disarms its timer or re-arms it strictly later (every interval is at
        // least 1 cs), so this ends.
        while let Some((timer, at)) = self.next_timer() {
            if at > now {
                break;
            }
            self.fire(timer, now, out);
        }
    }

    fn fire(&mut self, timer: Timer, now: Instant, out: &mut Vec<Action>) {
        match timer {
            Timer::MasterDown => {
                self.master_down_timer = None;
                if self.state != State::Backup {
                    return;
                }
                if self.sync.member {
                    // keepalived 2.x vrrp_sync_can_goto_master: a group member only says it is
                    // ready; the group moves when every member is.
                    self.sync.ready = true;
                } else {
                    // RFC 5798 6.4.2: "If the Master_Down_Timer fires".
                    self.become_master(now, out);
                }
            }
            Timer::Adver => {
                // RFC 5798 6.4.3: "If the Adver_Timer fires": send, reset.
                self.send_advert(self.priority, out);
                self.adver_timer = Some(now + self.advert_interval());
                if std::mem::take(&mut self.garp_with_next_advert) {
                    out.push(Action::SendGarp {
                        repeat: self.params.garp.lower_prio_repeat,
                    });
                }
            }
            Timer::Garp => {
                // keepalived's garp_master_delay: the second burst after becoming master.
                self.garp_timer = None;
                out.push(Action::SendGarp {
                    repeat: self.params.garp.master_repeat,
                });
            }
            Timer::GarpRefresh => {
                // keepalived's garp_master_refresh.
                out.push(Action::SendGarp {
                    repeat: self.params.garp.master_refresh_repeat,
                });
                self.garp_refresh_timer = self.garp_refresh_interval().map(|d| now + d);
            }
            Timer::GarpLowerPrio => {
                // keepalived's garp_lower_prio_delay: the second burst after a lower-priority
                // advert.
                self.garp_lower_prio_timer = None;
                out.push(Action::SendGarp {
                    repeat: self.params.garp.lower_prio_repeat,
                });
            }
        }
    }

    fn advert_interval(&self) -> Duration {
        Duration::from_centis(u64::from(self.params.advert_int_cs))
    }

    fn garp_refresh_interval(&self) -> Option<Duration> {
        let cs = self.params.garp.master_refresh_cs;
        (cs > 0).then(|| Duration::from_centis(u64::from(cs)))
    }

    fn arm_master_down(&mut self, now: Instant) {
        self.master_down_timer = Some(now + self.master_down_interval());
    }

    // ---- transitions -----------------------------------------------------------------------

    fn set_state(&mut self, to: State, out: &mut Vec<Action>) {
        let from = self.state;
        if from == to {
            return;
        }
        self.state = to;
        self.counters.transitions += 1;
        if to == State::Master {
            self.counters.became_master += 1;
        }
        if from == State::Master {
            self.counters.released_master += 1;
        }
        out.push(Action::StateChanged {
            from,
            to,
            priority: self.priority,
        });
    }

    fn send_advert(&mut self, priority: u8, out: &mut Vec<Action>) {
        self.counters.adverts_sent += 1;
        if priority == 0 {
            self.counters.priority_zero_sent += 1;
        }
        out.push(Action::SendAdvert { priority });
    }

    /// RFC 5798 6.4.2 "If the Master_Down_Timer fires" and 6.4.1 for the owner: send an
    /// advert, announce the addresses, start the Adver_Timer, become Master. The addresses are
    /// added first so that the gratuitous ARPs announce addresses we answer for.
    fn become_master(&mut self, now: Instant, out: &mut Vec<Action>) {
        self.master_down_timer = None;
        self.preempt_until = None;
        self.master = None;
        self.sync.ready = false;
        self.master_adver_int_cs = self.params.advert_int_cs;
        out.push(Action::AddVips);
        self.send_advert(self.priority, out);
        out.push(Action::SendGarp {
            repeat: self.params.garp.master_repeat,
        });
        let delay = self.params.garp.master_delay_cs;
        self.garp_timer = (delay > 0).then(|| now + Duration::from_centis(u64::from(delay)));
        self.garp_refresh_timer = self.garp_refresh_interval().map(|d| now + d);
        self.adver_timer = Some(now + self.advert_interval());
        self.set_state(State::Master, out);
    }

    /// Leaves Master: stop advertising and announcing, give the addresses back.
    fn release_master(&mut self, out: &mut Vec<Action>) {
        self.adver_timer = None;
        self.garp_timer = None;
        self.garp_refresh_timer = None;
        self.garp_lower_prio_timer = None;
        self.garp_with_next_advert = false;
        self.sync.heard_lower = false;
        out.push(Action::RemoveVips);
    }

    /// Backup with a fresh Master_Down_Timer on our own interval (RFC 5798 6.4.1 "else"
    /// branch; keepalived does the same when leaving Fault or being pulled down by a group).
    fn enter_backup(&mut self, now: Instant, out: &mut Vec<Action>) {
        self.master_adver_int_cs = self.params.advert_int_cs;
        self.preempt_until = None;
        self.sync.ready = false;
        self.arm_master_down(now);
        self.set_state(State::Backup, out);
    }

    /// RFC 5798 6.4.1: the owner becomes Master at once, anyone else Backup. keepalived: only an
    /// owner whose `state` is MASTER, and inside a sync group only with the group.
    fn come_up(&mut self, now: Instant, out: &mut Vec<Action>) {
        let owner_first =
            self.params.is_owner() && self.params.initial_state == InitialState::Master;
        if owner_first && !self.sync.member {
            self.become_master(now, out);
            return;
        }
        self.enter_backup(now, out);
        if owner_first {
            self.master_down_timer = None;
            self.sync.ready = true;
        }
    }

    fn startup(&mut self, now: Instant, out: &mut Vec<Action>) {
        if self.started {
            return;
        }
        self.started = true;
        if self.state == State::Stopped {
            self.set_state(State::Initialize, out);
        }
        self.reconcile(now, out);
    }

    /// RFC 5798 6.4.2 / 6.4.3 "If a Shutdown event is received": a master cancels the
    /// Adver_Timer and resigns with priority 0 so that a backup takes over after Skew_Time
    /// instead of Master_Down_Interval; a backup cancels its timer.
    fn shutdown(&mut self, out: &mut Vec<Action>) {
        if !self.started {
            return;
        }
        self.started = false;
        self.resign(State::Stopped, out);
    }

    /// Puts the state in line with tracking (and the group's fault): Fault while something
    /// tracked with weight 0 fails, Initialize while a weight-0 script has not reported.
    fn reconcile(&mut self, now: Instant, out: &mut Vec<Action>) {
        if !self.started {
            return;
        }
        let fault = self.tracking.in_fault() || self.sync.group_fault;
        let pending = self.tracking.init_pending();
        match self.state {
            State::Initialize if fault => self.set_state(State::Fault, out),
            State::Initialize if !pending => self.come_up(now, out),
            State::Backup | State::Master if fault => self.enter_fault(out),
            State::Fault if !fault && !pending => {
                // keepalived vrrp_state_leave_fault: Backup with the full down timer (or the
                // owner straight to Master).
                self.come_up(now, out);
            }
            _ => {}
        }
    }

    /// keepalived's FAULT: a master resigns with priority 0 (so a backup takes over after
    /// Skew_Time) and gives the addresses back; nothing runs until the fault clears.
    fn enter_fault(&mut self, out: &mut Vec<Action>) {
        self.resign(State::Fault, out);
    }

    /// Leaves the election for `to` (Stopped or Fault): a master sends priority 0 (RFC 5798
    /// 6.4.3 "If a Shutdown event is received", keepalived's FAULT alike) and gives the
    /// addresses back; no timer runs and no master is remembered.
    fn resign(&mut self, to: State, out: &mut Vec<Action>) {
        if self.state == State::Master {
            self.adver_timer = None;
            self.send_advert(0, out);
            self.release_master(out);
        }
        self.master_down_timer = None;
        self.preempt_until = None;
        self.master = None;
        self.sync.ready = false;
        self.set_state(to, out);
    }

    fn tracking_changed(&mut self, now: Instant, out: &mut Vec<Action>) {
        let new = self.tracking.effective_priority();
        let old = self.priority;
        if new != old {
            let old_skew = self.skew_time();
            self.priority = new;
            out.push(Action::PriorityChanged { from: old, to: new });
            match self.state {
                State::Master => {
                    // Advertise the new priority at once, so that backups compare against it
                    // now rather than at the next advert (keepalived waits for the next one).
                    // RFC 5798 has no rule against an extra advert: a backup only restarts
                    // its Master_Down_Timer, or with preempt_on_lower_priority takes over
                    // after Skew_Time.
                    self.send_advert(new, out);
                    self.adver_timer = Some(now + self.advert_interval());
                }
                State::Backup if new > old => {
                    // keepalived vrrp_set_effective_priority: a higher priority has a shorter
                    // skew, and the running Master_Down_Timer shrinks by the difference.
                    let shorter = old_skew.saturating_sub(self.skew_time());
                    if let Some(at) = self.master_down_timer {
                        self.master_down_timer = Some(at.saturating_sub(shorter).max(now));
                    }
                }
                _ => {}
            }
        }
        self.reconcile(now, out);
    }

    // ---- sync groups -----------------------------------------------------------------------

    pub(super) fn set_sync_member(&mut self, member: bool) {
        self.sync.member = member;
    }

    /// In a sync group, a member after the first: see [`SyncLink::tie_follower`].
    pub(super) fn set_tie_follower(&mut self, follower: bool) {
        self.sync.tie_follower = follower;
    }

    /// Whether, as master, this member heard a lower-priority advert since the last call.
    pub(super) fn take_heard_lower(&mut self) -> bool {
        std::mem::take(&mut self.sync.heard_lower)
    }

    /// keepalived vrrp_state_master_rx, for the other members of a group: another member heard
    /// a lower-priority advert, so this master re-announces its addresses too (the peer's
    /// members stepped down with it and will not be heard).
    pub(super) fn group_lower_prio_garp(&mut self, now: Instant, out: &mut Vec<Action>) {
        self.advance(now, out);
        if self.state == State::Master {
            self.lower_prio_garp(self.now, out);
            self.sync.heard_lower = false;
        }
    }

    /// Backup, and the Master_Down_Timer fired with no advert since.
    pub(super) fn ready_for_master(&self) -> bool {
        self.state == State::Backup && self.sync.ready
    }

    /// Whether this member's own tracking puts it in Fault.
    pub(super) fn own_fault(&self) -> bool {
        self.started && self.tracking.in_fault()
    }

    /// The group moves to Master: a ready member becomes master.
    pub(super) fn promote(&mut self, now: Instant, out: &mut Vec<Action>) {
        self.advance(now, out);
        if self.ready_for_master() {
            self.become_master(self.now, out);
        }
    }

    /// keepalived vrrp_sync_backup: another member left Master, so this one does too, silently
    /// (no priority 0: the member that left decides what the peers hear).
    pub(super) fn demote(&mut self, now: Instant, out: &mut Vec<Action>) {
        self.advance(now, out);
        if self.state == State::Master {
            self.release_master(out);
            self.enter_backup(self.now, out);
        }
    }

    /// keepalived vrrp_sync_fault: while any member is in Fault, every member is.
    pub(super) fn set_group_fault(&mut self, now: Instant, fault: bool, out: &mut Vec<Action>) {
        self.advance(now, out);
        if self.sync.group_fault != fault {
            self.sync.group_fault = fault;
            self.reconcile(self.now, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    fn v4(last: u8) -> IpAddr {
        IpAddr::V4(Ipv4Addr::new(192, 0, 2, last))
    }

    #[test]
    fn owner_starts_as_master_and_resigns_with_priority_zero() {
        let mut i = Instance::new(InstanceParams::new(7, 255, v4(1))).unwrap();
        let t0 = Instant::from_millis(5);
        let out = i.handle(t0, Event::Startup);
        assert_eq!(
            out,
            [
                Action::AddVips,
                Action::SendAdvert { priority: 255 },
                Action::SendGarp { repeat: 5 },
                Action::StateChanged {
                    from: State::Initialize,
                    to: State::Master,
                    priority: 255
                },
            ]
        );
        assert_eq!(i.poll_timeout(), Some(Instant::from_millis(1005)));
        let out = i.handle(Instant::from_millis(10), Event::Shutdown);
        assert_eq!(
            out,
            [
                Action::SendAdvert { priority: 0 },
                Action::RemoveVips,
                Action::StateChanged {
                    from: State::Master,
                    to: State::Stopped,
                    priority: 255
                },
            ]
        );
        assert_eq!(i.poll_timeout(), None);
        assert_eq!(i.counters().priority_zero_sent, 1);
    }

    #[test]
    fn a_late_call_fires_the_overdue_timer_first() {
        let mut p = InstanceParams::new(7, 100, v4(1));
        p.version = Version::V3;
        let mut i = Instance::new(p).unwrap();
        i.handle(Instant::ZERO, Event::Startup);
        assert_eq!(i.poll_timeout(), Some(Instant::from_millis(3609)));
        // An advert arriving after the timer should have fired finds us Master already.
        let out = i.handle(
            Instant::from_millis(4000),
            Event::Advert {
                from: v4(2),
                priority: 50,
                advert_int_cs: 100,
            },
        );
        assert_eq!(i.state(), State::Master);
        assert!(out.contains(&Action::AddVips));
        // And answers the lower-priority advert and re-announces its addresses (keepalived).
        assert_eq!(
            out[out.len() - 2..],
            [
                Action::SendAdvert { priority: 100 },
                Action::SendGarp { repeat: 5 }
            ]
        );
        // Time never runs backwards.
        i.handle_timeout(Instant::from_millis(1));
        // The Adver_Timer runs from the call that fired the down timer.
        assert_eq!(i.poll_timeout(), Some(Instant::from_millis(5000)));
    }
}
