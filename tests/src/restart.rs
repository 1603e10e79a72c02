//! systemd's `Restart=` for the lab's supervisor, without IO: a unit's restart settings as
//! systemd.service(5) and systemd.unit(5) define them (`Restart=`, `RestartSec=`,
//! `RestartForceExitStatus=`, `RestartPreventExitStatus=`, `SuccessExitStatus=`,
//! `StartLimitIntervalSec=`, `StartLimitBurst=`), whether a main process that ended the way it
//! did is started again ([`Restart::shall_restart`], systemd's `service_shall_restart`), and the
//! start limit ([`StartLimit`], systemd's `unit_test_start_limit`: more than `burst` starts in
//! `interval` and the unit fails for good).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

/// How a unit's main process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// It exited with this status.
    Code(i32),
    /// A signal killed it.
    Signal(Signal),
}

impl Exit {
    /// From the status `wait` gave (a process that neither exited nor was killed, which
    /// cannot be, reads as exit status 255).
    pub fn of(status: std::process::ExitStatus) -> Exit {
        use std::os::unix::process::ExitStatusExt;
        match (status.code(), status.signal()) {
            (Some(c), _) => Exit::Code(c),
            (None, Some(s)) => Signal::try_from(s).map_or(Exit::Code(255), Exit::Signal),
            (None, None) => Exit::Code(255),
        }
    }
}

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exit::Code(c) => write!(f, "status={c}"),
            Exit::Signal(s) => write!(f, "signal={}", s.as_str()),
        }
    }
}

/// `Restart=`'s values (systemd.service(5)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Policy {
    /// `no`: never (systemd's default).
    #[default]
    No,
    /// `on-success`: a clean exit status or signal.
    OnSuccess,
    /// `on-failure`: an unclean exit status or signal (or a timeout or watchdog).
    OnFailure,
    /// `on-abnormal`: an unclean signal (or a timeout or watchdog).
    OnAbnormal,
    /// `on-watchdog`: the watchdog only (never in the lab: no watchdog).
    OnWatchdog,
    /// `on-abort`: an unclean signal.
    OnAbort,
    /// `always`.
    Always,
}

impl Policy {
    fn parse(value: &str) -> Option<Policy> {
        Some(match value {
            "no" => Policy::No,
            "on-success" => Policy::OnSuccess,
            "on-failure" => Policy::OnFailure,
            "on-abnormal" => Policy::OnAbnormal,
            "on-watchdog" => Policy::OnWatchdog,
            "on-abort" => Policy::OnAbort,
            "always" => Policy::Always,
            _ => return None,
        })
    }
}

/// One entry of an exit status list: a status or a signal.
pub type Status = Exit;

/// A unit's restart settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restart {
    /// `Restart=`.
    pub policy: Policy,
    /// `RestartSec=` (100 ms when unset).
    pub delay: Duration,
    /// `RestartForceExitStatus=`: restarted whatever the policy.
    pub force: Vec<Status>,
    /// `RestartPreventExitStatus=`: never restarted.
    pub prevent: Vec<Status>,
    /// `SuccessExitStatus=`: clean, beside status 0 and SIGHUP, SIGINT, SIGTERM, SIGPIPE.
    pub success: Vec<Status>,
    /// `StartLimitIntervalSec=` (10 s when unset; zero: no limit).
    pub limit_interval: Duration,
    /// `StartLimitBurst=` (5 when unset).
    pub limit_burst: usize,
}

impl Default for Restart {
    fn default() -> Restart {
        Restart {
            policy: Policy::No,
            delay: Duration::from_millis(100),
            force: Vec::new(),
            prevent: Vec::new(),
            success: Vec::new(),
            limit_interval: Duration::from_secs(10),
            limit_burst: 5,
        }
    }
}

/// The settings [`Restart::set`] reads: (section, key).
pub const KEYS: [(&str, &str); 7] = [
    ("Service", "Restart"),
    ("Service", "RestartSec"),
    ("Service", "RestartForceExitStatus"),
    ("Service", "RestartPreventExitStatus"),
    ("Service", "SuccessExitStatus"),
    ("Unit", "StartLimitIntervalSec"),
    ("Unit", "StartLimitBurst"),
];

impl Restart {
    /// Takes one of the [`KEYS`]; what systemd would refuse is an error saying what is wrong.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        match key {
            "Restart" => {
                self.policy = Policy::parse(value).ok_or_else(|| {
                    format!(
                        "Restart={value}: not no, on-success, on-failure, on-abnormal, \
                         on-watchdog, on-abort or always"
                    )
                })?;
            }
            "RestartSec" => self.delay = timespan(value)?,
            "StartLimitIntervalSec" => self.limit_interval = timespan(value)?,
            "StartLimitBurst" => {
                self.limit_burst = value
                    .parse()
                    .map_err(|_| format!("StartLimitBurst={value}: not a count"))?;
            }
            // An empty assignment resets the list, as systemd's.
            "RestartForceExitStatus" if value.is_empty() => self.force.clear(),
            "RestartPreventExitStatus" if value.is_empty() => self.prevent.clear(),
            "SuccessExitStatus" if value.is_empty() => self.success.clear(),
            "RestartForceExitStatus" => self.force.extend(statuses(key, value)?),
            "RestartPreventExitStatus" => self.prevent.extend(statuses(key, value)?),
            "SuccessExitStatus" => self.success.extend(statuses(key, value)?),
            other => return Err(format!("{other}= is no restart setting")),
        }
        Ok(())
    }

    /// Whether a clean ending: status 0, SIGHUP, SIGINT, SIGTERM, SIGPIPE, or one of
    /// `SuccessExitStatus=` (systemd's `is_clean_exit`, EXIT_CLEAN_DAEMON).
    pub fn clean(&self, exit: Exit) -> bool {
        matches!(
            exit,
            Exit::Code(0)
                | Exit::Signal(Signal::SIGHUP | Signal::SIGINT | Signal::SIGTERM | Signal::SIGPIPE)
        ) || self.success.contains(&exit)
    }

    /// Whether a main process that ended with `exit`, not stopped by a stop job, is started
    /// again: systemd's `service_shall_restart` (prevent, then force, then the policy's
    /// column of systemd.service(5)'s table).
    pub fn shall_restart(&self, exit: Exit) -> bool {
        if self.prevent.contains(&exit) {
            return false;
        }
        if self.force.contains(&exit) {
            return true;
        }
        let clean = self.clean(exit);
        let signal = matches!(exit, Exit::Signal(_));
        match self.policy {
            Policy::No | Policy::OnWatchdog => false,
            Policy::Always => true,
            Policy::OnSuccess => clean,
            Policy::OnFailure => !clean,
            Policy::OnAbnormal | Policy::OnAbort => !clean && signal,
        }
    }
}

/// A systemd time span with one unit or none (seconds): `5s`, `100ms`, `2`, `1min`, `infinity`
/// is refused (the lab has no use for it).
fn timespan(value: &str) -> Result<Duration, String> {
    let at = value
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(value.len());
    let (number, unit) = value.split_at(at);
    let n: u64 = number
        .parse()
        .map_err(|_| format!("{value}: not a time span (`5s`, `100ms`, `2`)"))?;
    let too_long = || format!("{value}: too long a time span");
    Ok(match unit.trim() {
        "" | "s" | "sec" | "second" | "seconds" => Duration::from_secs(n),
        "ms" | "msec" => Duration::from_millis(n),
        "us" | "usec" => Duration::from_micros(n),
        "m" | "min" | "minute" | "minutes" => {
            Duration::from_secs(n.checked_mul(60).ok_or_else(too_long)?)
        }
        "h" | "hr" | "hour" | "hours" => {
            Duration::from_secs(n.checked_mul(3600).ok_or_else(too_long)?)
        }
        other => return Err(format!("{value}: unit {other} is not s, ms, us, min or h")),
    })
    .and_then(|span| {
        // Added to an Instant later: beyond a day (the lab has no use for it) is refused
        // rather than overflowing there.
        if span > Duration::from_secs(86_400) {
            Err(format!("{value}: longer than a day"))
        } else {
            Ok(span)
        }
    })
}

/// An exit status list: numbers and signal names (`SIGHUP` or `HUP`), space-separated.
fn statuses(key: &str, value: &str) -> Result<Vec<Status>, String> {
    value
        .split_whitespace()
        .map(|w| {
            if let Ok(n) = w.parse::<u8>() {
                return Ok(Exit::Code(i32::from(n)));
            }
            let name = if w.starts_with("SIG") {
                w.to_string()
            } else {
                format!("SIG{w}")
            };
            name.parse::<Signal>()
                .map(Exit::Signal)
                .map_err(|_| format!("{key}={value}: {w} is neither a status 0-255 nor a signal"))
        })
        .collect()
}

/// A unit's starts in the last interval: systemd's start rate limit.
#[derive(Debug, Clone, Default)]
pub struct StartLimit {
    starts: VecDeque<Instant>,
}

impl StartLimit {
    /// Counts a start at `now`; false when it is over the limit (more than `burst` starts
    /// within `interval`): systemd refuses it and the unit fails with start-limit-hit.
    pub fn allow(&mut self, now: Instant, r: &Restart) -> bool {
        if r.limit_interval.is_zero() || r.limit_burst == 0 {
            return true;
        }
        while self
            .starts
            .front()
            .is_some_and(|t| now.duration_since(*t) >= r.limit_interval)
        {
            self.starts.pop_front();
        }
        if self.starts.len() >= r.limit_burst {
            return false;
        }
        self.starts.push_back(now);
        true
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn policy(p: &str) -> Restart {
        let mut r = Restart::default();
        r.set("Restart", p).unwrap();
        r
    }

    const KILL: Exit = Exit::Signal(Signal::SIGKILL);
    const SEGV: Exit = Exit::Signal(Signal::SIGSEGV);
    const TERM: Exit = Exit::Signal(Signal::SIGTERM);
    const HUP: Exit = Exit::Signal(Signal::SIGHUP);

    #[test]
    fn time_spans_too_long_are_refused_not_overflowed() {
        assert_eq!(timespan("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(timespan("2min"), Ok(Duration::from_secs(120)));
        assert!(
            timespan("307445734561825861min").is_err(),
            "u64 seconds overflow"
        );
        assert!(timespan("5124095576030432h").is_err());
        assert!(timespan("25h").is_err(), "longer than a day");
    }

    /// systemd.service(5)'s table: clean exit, unclean exit status, unclean signal.
    #[test]
    fn the_policy_table() {
        let rows = [
            ("no", [false, false, false]),
            ("always", [true, true, true]),
            ("on-success", [true, false, false]),
            ("on-failure", [false, true, true]),
            ("on-abnormal", [false, false, true]),
            ("on-abort", [false, false, true]),
            ("on-watchdog", [false, false, false]),
        ];
        for (p, want) in rows {
            let r = policy(p);
            for (exit, want) in [Exit::Code(0), Exit::Code(1), KILL].into_iter().zip(want) {
                assert_eq!(r.shall_restart(exit), want, "Restart={p}, {exit}");
            }
            assert_eq!(r.shall_restart(TERM), r.shall_restart(Exit::Code(0)), "{p}");
            assert_eq!(r.shall_restart(SEGV), r.shall_restart(KILL), "{p}");
        }
    }

    #[test]
    fn force_prevent_and_success_statuses() {
        // lb-proxy's unit: SIGHUP before its handler is clean, and still restarted.
        let mut r = policy("on-failure");
        assert!(!r.shall_restart(HUP));
        r.set("RestartForceExitStatus", "SIGHUP").unwrap();
        assert!(r.shall_restart(HUP));
        r.set("RestartPreventExitStatus", "2 USR1").unwrap();
        assert!(!r.shall_restart(Exit::Code(2)));
        assert!(!r.shall_restart(Exit::Signal(Signal::SIGUSR1)));
        assert!(r.shall_restart(Exit::Code(3)));
        r.set("SuccessExitStatus", "3").unwrap();
        assert!(!r.shall_restart(Exit::Code(3)), "3 is clean now");
        r.set("RestartForceExitStatus", "").unwrap();
        assert!(!r.shall_restart(HUP), "an empty assignment resets the list");
    }

    #[test]
    fn settings_and_their_errors() {
        let mut r = Restart::default();
        assert_eq!(r.delay, Duration::from_millis(100));
        r.set("RestartSec", "5s").unwrap();
        assert_eq!(r.delay, Duration::from_secs(5));
        r.set("RestartSec", "250ms").unwrap();
        assert_eq!(r.delay, Duration::from_millis(250));
        r.set("StartLimitIntervalSec", "1min").unwrap();
        assert_eq!(r.limit_interval, Duration::from_secs(60));
        assert!(r
            .set("Restart", "on-failur")
            .unwrap_err()
            .contains("on-failur"));
        assert!(r.set("RestartSec", "5x").unwrap_err().contains("unit x"));
        assert!(r.set("StartLimitBurst", "-1").is_err());
        assert!(r
            .set("RestartForceExitStatus", "SIGNOPE")
            .unwrap_err()
            .contains("SIGNOPE"));
    }

    #[test]
    fn the_start_limit_refuses_the_sixth_start_in_ten_seconds() {
        let r = Restart::default();
        let mut l = StartLimit::default();
        let t0 = Instant::now();
        for i in 0..5 {
            assert!(l.allow(t0 + Duration::from_secs(i), &r), "start {i}");
        }
        assert!(!l.allow(t0 + Duration::from_secs(5), &r));
        // Ten seconds after the first, it has left the window.
        assert!(l.allow(t0 + Duration::from_secs(10), &r));
        let off = Restart {
            limit_interval: Duration::ZERO,
            ..Restart::default()
        };
        assert!((0..100).all(|_| l.allow(t0, &off)));
    }
}
