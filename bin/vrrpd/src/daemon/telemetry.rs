//! What the daemon remembers for `vrrpd status` and the metrics beyond the state machines'
//! own counters: foreign routers ([`super::clash`]), state transitions with their reason, and
//! the scrapes the metrics endpoint ([`super::http`]) asks for.
//!
//! The state machine says what changed, not why, so the reason is derived here, honestly,
//! from what the daemon handed it: the event being handled ([`Cause`]) and, for a backup that
//! takes over on its timer, the last advert it heard (priority 0: the master resigned; lower
//! than ours: we preempt it; otherwise the master went silent).

use std::collections::BTreeMap;
use std::sync::Arc;

use tokio::sync::mpsc;

use super::clash::Clashes;
use super::conflict::Conflicts;
use super::http::Scrape;
use crate::fsm::{Event, Instant, State};

/// The event the daemon is handing to the state machines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// Startup of the daemon.
    Startup,
    /// A timer (Master_Down_Timer, Adver_Timer).
    Timer,
    /// A validated advert with this priority.
    Advert(u8),
    /// A track script's result.
    TrackScript,
    /// A tracked interface went up or down.
    Interface,
    /// SIGHUP.
    Reload,
    /// SIGTERM / SIGINT.
    Shutdown,
}

impl Cause {
    /// The cause of handing `event` in.
    pub fn of(event: &Event) -> Cause {
        match event {
            Event::Startup => Cause::Startup,
            Event::Shutdown => Cause::Shutdown,
            Event::Advert { priority, .. } => Cause::Advert(*priority),
            Event::ScriptResult { .. } | Event::FileValue { .. } => Cause::TrackScript,
            Event::InterfaceChanged { .. } => Cause::Interface,
        }
    }
}

/// Why a state changed: the `reason` label of `vrrpd_transitions_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Reason {
    /// The daemon started.
    Startup,
    /// The Master_Down_Timer fired: the master went silent (RFC 5798 6.4.2).
    MasterDownTimer,
    /// The master resigned with priority 0 and we took over after Skew_Time (RFC 5798 6.4.2).
    PriorityZero,
    /// We preempted a lower-priority master (RFC 5798 6.4.2, Preempt_Mode).
    Preempt,
    /// A master heard a higher priority (or an equal one from a greater address) and stepped
    /// down (RFC 5798 6.4.3).
    HigherPriorityAdvert,
    /// An advert led to it otherwise.
    Advert,
    /// A track script's result (a weight-0 script failing or recovering; a sync group member's
    /// script taking the group along).
    TrackScript,
    /// A tracked interface went down or came back.
    Interface,
    /// A reload (SIGHUP) started, stopped or restarted the instance.
    Reload,
    /// The daemon shut down.
    Shutdown,
}

impl Reason {
    /// The label value.
    pub fn name(self) -> &'static str {
        match self {
            Reason::Startup => "startup",
            Reason::MasterDownTimer => "master_down_timer",
            Reason::PriorityZero => "priority_zero",
            Reason::Preempt => "preempt",
            Reason::HigherPriorityAdvert => "higher_priority_advert",
            Reason::Advert => "advert",
            Reason::TrackScript => "track_script",
            Reason::Interface => "interface",
            Reason::Reload => "reload",
            Reason::Shutdown => "shutdown",
        }
    }

    /// The reason of a change `from` -> `to` made while handling `cause`. `heard` is the
    /// priority of the last advert handed to this instance, `ours` its priority at the change.
    pub fn of(cause: Cause, from: State, to: State, heard: Option<u8>, ours: u8) -> Reason {
        // Backup -> Master only ever happens on the Master_Down_Timer (it may fire inside the
        // handling of any event, when it is due): what was last heard says why it fired.
        if from == State::Backup && to == State::Master {
            return match heard {
                Some(0) => Reason::PriorityZero,
                Some(p) if p < ours => Reason::Preempt,
                _ => Reason::MasterDownTimer,
            };
        }
        match cause {
            Cause::Advert(p) if p > 0 && from == State::Master && to == State::Backup => {
                Reason::HigherPriorityAdvert
            }
            Cause::Advert(_) => Reason::Advert,
            Cause::Timer => Reason::MasterDownTimer,
            Cause::Startup => Reason::Startup,
            Cause::TrackScript => Reason::TrackScript,
            Cause::Interface => Reason::Interface,
            Cause::Reload => Reason::Reload,
            Cause::Shutdown => Reason::Shutdown,
        }
    }
}

/// One transition's labels: instance, from, to (as [`State::as_str`] names them), reason.
pub type TransitionKey = (String, &'static str, &'static str, Reason);

/// The daemon's memory for status and metrics.
#[derive(Debug)]
pub struct Telemetry {
    /// Foreign routers.
    pub clashes: Clashes,
    /// VIPs answered on the wire by other hosts.
    pub conflicts: Conflicts,
    /// Transitions counted by instance, from, to and reason.
    pub transitions: BTreeMap<TransitionKey, u64>,
    cause: Cause,
    heard: BTreeMap<String, u8>,
    /// Scrapes asked for by the metrics endpoint.
    pub scrapes: mpsc::Receiver<Scrape>,
    /// Kept so that `scrapes` never closes when no endpoint runs.
    pub scrape_tx: mpsc::Sender<Scrape>,
    /// The last exposition and when it was made, reused by scrapes close together.
    pub rendered: Option<(Instant, Arc<str>)>,
}

impl Default for Telemetry {
    fn default() -> Self {
        // A few scrapes may wait; more are refused with 503 by the endpoint.
        let (scrape_tx, scrapes) = mpsc::channel(8);
        Telemetry {
            clashes: Clashes::default(),
            conflicts: Conflicts::default(),
            transitions: BTreeMap::new(),
            cause: Cause::Startup,
            heard: BTreeMap::new(),
            scrapes,
            scrape_tx,
            rendered: None,
        }
    }
}

impl Telemetry {
    /// What the daemon is handing to the state machines now.
    pub fn cause(&mut self, cause: Cause) {
        self.cause = cause;
    }

    /// A validated advert with `priority` is handed to `instance` (the cause too).
    pub fn advert(&mut self, instance: &str, priority: u8) {
        self.cause = Cause::Advert(priority);
        match self.heard.get_mut(instance) {
            Some(p) => *p = priority,
            None => {
                self.heard.insert(instance.to_string(), priority);
            }
        }
    }

    /// `instance` changed state; returns the reason it is counted under.
    pub fn transition(&mut self, instance: &str, from: State, to: State, ours: u8) -> Reason {
        let heard = self.heard.get(instance).copied();
        let reason = Reason::of(self.cause, from, to, heard, ours);
        if to == State::Master {
            // Heard before this mastership: not a reason for the next one.
            self.heard.remove(instance);
        }
        *self
            .transitions
            .entry((instance.to_string(), from.as_str(), to.as_str(), reason))
            .or_default() += 1;
        reason
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use State::{Backup, Fault, Initialize, Master, Stopped};

    #[test]
    fn a_backup_takes_over_for_what_it_last_heard() {
        let r = |heard| Reason::of(Cause::Timer, Backup, Master, heard, 100);
        assert_eq!(r(None), Reason::MasterDownTimer);
        assert_eq!(r(Some(150)), Reason::MasterDownTimer);
        assert_eq!(r(Some(100)), Reason::MasterDownTimer);
        assert_eq!(r(Some(0)), Reason::PriorityZero);
        assert_eq!(r(Some(50)), Reason::Preempt);
        // The timer fired inside the handling of another event: the same.
        let during = Reason::of(Cause::Advert(150), Backup, Master, Some(0), 100);
        assert_eq!(during, Reason::PriorityZero);
    }

    #[test]
    fn other_changes_take_the_event_handled() {
        let higher = Reason::of(Cause::Advert(200), Master, Backup, Some(200), 100);
        assert_eq!(higher, Reason::HigherPriorityAdvert);
        let cases = [
            (Cause::Startup, Initialize, Backup, Reason::Startup),
            (Cause::TrackScript, Master, Fault, Reason::TrackScript),
            (Cause::TrackScript, Fault, Backup, Reason::TrackScript),
            (Cause::Interface, Backup, Fault, Reason::Interface),
            (Cause::Reload, Master, Stopped, Reason::Reload),
            (Cause::Reload, Initialize, Backup, Reason::Reload),
            (Cause::Shutdown, Master, Stopped, Reason::Shutdown),
            (Cause::Advert(0), Initialize, Backup, Reason::Advert),
        ];
        for (cause, from, to, want) in cases {
            assert_eq!(Reason::of(cause, from, to, None, 100), want, "{cause:?}");
        }
    }

    #[test]
    fn transitions_are_counted_with_their_reason() {
        let mut t = Telemetry::default();
        t.cause(Cause::Startup);
        t.transition("VI_1", Initialize, Backup, 100);
        t.advert("VI_1", 0);
        t.cause(Cause::Timer);
        assert_eq!(
            t.transition("VI_1", Backup, Master, 100),
            Reason::PriorityZero
        );
        t.cause(Cause::Timer);
        t.transition("VI_1", Master, Backup, 100);
        // What was heard before the last mastership does not explain the next one.
        assert_eq!(
            t.transition("VI_1", Backup, Master, 100),
            Reason::MasterDownTimer
        );
        let key = ("VI_1".to_string(), "BACKUP", "MASTER", Reason::PriorityZero);
        assert_eq!(t.transitions[&key], 1);
        assert_eq!(t.transitions.len(), 4);
    }
}
