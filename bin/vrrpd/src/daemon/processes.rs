//! keepalived's `vrrp_track_process`: how many running processes match each tracked one, and
//! whether that holds its quorum, as an instance's track scripts report OK or failing.
//!
//! keepalived learns of every fork and exit from the kernel's process connector; vrrpd reads
//! /proc every [`POLL`] instead (no netlink connector socket to keep, nothing to miss while it
//! was away), so a change shows within that time plus the configured delays. Matching is
//! keepalived's (track_process.c): the name as in /proc/PID/stat (15 bytes at most compared),
//! or with parameters or `full_command` the command line, exact, partial or initial; zombies do
//! not count.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::inputs::Inputs;

use crate::config::{ParamMatch, TrackProcess};

/// How often /proc is read.
pub const POLL: Duration = Duration::from_millis(500);

/// The longest process name the kernel keeps (TASK_COMM_LEN less its NUL).
const COMM_LEN: usize = 15;

/// The name a tracked process's results are reported under: it tracks like a script, and a
/// script's name has no blank, so the two never meet.
pub fn key(name: &str) -> String {
    format!("process {name}")
}

/// A running process as matching needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    /// Its name (`comm`).
    pub comm: String,
    /// Its command line, when some tracked process compares it.
    pub cmdline: Vec<String>,
}

/// Whether `seen` is a process `p` counts.
pub fn matches(p: &TrackProcess, seen: &Seen) -> bool {
    let Some((program, params)) = p.process.split_first() else {
        return false;
    };
    if !p.full_command {
        let wanted = program
            .get(..COMM_LEN.min(program.len()))
            .unwrap_or(program);
        return seen.comm == wanted;
    }
    let Some((argv0, args)) = seen.cmdline.split_first() else {
        return false;
    };
    if argv0 != program {
        return false;
    }
    match p.param_match {
        ParamMatch::Any => true,
        ParamMatch::Exact => args == params,
        ParamMatch::Partial => args.len() >= params.len() && args[..params.len()] == *params,
        ParamMatch::Initial => {
            let n = params.len();
            args.len() >= n
                && (n == 0
                    || args[..n - 1] == params[..n - 1] && args[n - 1].starts_with(&params[n - 1]))
        }
    }
}

/// Whether `count` matching processes hold `p`'s quorum.
pub fn quorate(p: &TrackProcess, count: usize) -> bool {
    let count = u32::try_from(count).unwrap_or(u32::MAX);
    p.quorum <= count && count <= p.quorum_max
}

/// One tracked process's reported state and a change waiting out its delay.
#[derive(Debug, Clone, Default)]
pub struct Debounce {
    reported: Option<bool>,
    pending: Option<(bool, Instant)>,
}

impl Debounce {
    /// What to report after seeing the quorum `ok` at `now`: the first observation at once, a
    /// change once it has lasted `fork_delay` (to up) or `terminate_delay` (to down).
    pub fn observe(&mut self, p: &TrackProcess, ok: bool, now: Instant) -> Option<bool> {
        if self.reported.is_none() || self.reported == Some(ok) {
            self.pending = None;
            if self.reported.is_none() {
                self.reported = Some(ok);
                return Some(ok);
            }
            return None;
        }
        let cs = if ok {
            p.fork_delay_cs
        } else {
            p.terminate_delay_cs
        };
        let since = match self.pending {
            Some((state, since)) if state == ok => since,
            _ => {
                self.pending = Some((ok, now));
                now
            }
        };
        if now.duration_since(since) >= Duration::from_millis(u64::from(cs) * 10) {
            self.pending = None;
            self.reported = Some(ok);
            return Some(ok);
        }
        None
    }
}

/// The running processes (not zombies), with command lines if `cmdlines`.
pub fn scan(cmdlines: bool) -> Vec<Seen> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(Result::ok)
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
        .filter_map(|e| {
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            let (comm, state) = comm_and_state(&stat)?;
            if state == 'Z' {
                return None;
            }
            let cmdline = if cmdlines {
                let raw = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
                raw.split(|&b| b == 0)
                    .filter(|w| !w.is_empty())
                    .map(|w| String::from_utf8_lossy(w).into_owned())
                    .collect()
            } else {
                Vec::new()
            };
            Some(Seen { comm, cmdline })
        })
        .collect()
}

/// `PID (COMM) STATE ...`: the name between the first `(` and the last `)` (a name may hold
/// either), and the state after it.
fn comm_and_state(stat: &str) -> Option<(String, char)> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let comm = stat.get(open + 1..close)?.to_string();
    let state = stat.get(close + 1..)?.trim_start().chars().next()?;
    Some((comm, state))
}

/// Watches every tracked process until the event loop is gone, reporting under its
/// [`key`] whether it is quorate, at once and on every change that outlasts its delay.
pub async fn watch(processes: Vec<TrackProcess>, inputs: Inputs) {
    let cmdlines = processes.iter().any(|p| p.full_command);
    let mut states: BTreeMap<String, Debounce> = BTreeMap::new();
    let mut tick = tokio::time::interval(POLL);
    loop {
        tick.tick().await;
        let Ok(seen) = tokio::task::spawn_blocking(move || scan(cmdlines)).await else {
            return;
        };
        let now = Instant::now();
        for p in &processes {
            let count = seen.iter().filter(|s| matches(p, s)).count();
            let ok = quorate(p, count);
            let state = states.entry(p.name.clone()).or_default();
            if let Some(report) = state.observe(p, ok, now) {
                tracing::info!(
                    "vrrp_track_process {}: {count} running, {}",
                    p.name,
                    if report { "up" } else { "down" }
                );
                if !inputs.script(key(&p.name), report) {
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn process(words: &[&str], full_command: bool, param_match: ParamMatch) -> TrackProcess {
        TrackProcess {
            name: "p".into(),
            process: words.iter().map(|w| w.to_string()).collect(),
            param_match,
            full_command: full_command || words.len() > 1,
            weight: 1,
            quorum: 1,
            quorum_max: u32::MAX,
            fork_delay_cs: 0,
            terminate_delay_cs: 0,
        }
    }

    fn seen(comm: &str, cmdline: &[&str]) -> Seen {
        Seen {
            comm: comm.into(),
            cmdline: cmdline.iter().map(|w| w.to_string()).collect(),
        }
    }

    #[test]
    fn names_match_exactly_up_to_fifteen_bytes() {
        let p = process(&["haproxy"], false, ParamMatch::Exact);
        assert!(matches(&p, &seen("haproxy", &[])));
        assert!(!matches(&p, &seen("haproxy-wrapper", &[])));
        assert!(!matches(&p, &seen("hapr", &[])));
        let long = process(&["kube-controller-manager"], false, ParamMatch::Exact);
        assert!(matches(&long, &seen("kube-controller", &[])));
    }

    #[test]
    fn command_lines_match_exact_partial_and_initial() {
        let line = seen("nginx", &["/usr/sbin/nginx", "-g", "daemon off;"]);
        let exact = process(
            &["/usr/sbin/nginx", "-g", "daemon off;"],
            false,
            ParamMatch::Exact,
        );
        assert!(matches(&exact, &line));
        let fewer = process(&["/usr/sbin/nginx", "-g"], false, ParamMatch::Exact);
        assert!(!matches(&fewer, &line));
        let partial = process(&["/usr/sbin/nginx", "-g"], false, ParamMatch::Partial);
        assert!(matches(&partial, &line));
        let initial = process(
            &["/usr/sbin/nginx", "-g", "daemon"],
            false,
            ParamMatch::Initial,
        );
        assert!(matches(&initial, &line));
        assert!(!matches(&partial, &seen("nginx", &["nginx", "-g"])));
        let any = process(&["/usr/sbin/nginx"], true, ParamMatch::Any);
        assert!(matches(&any, &line), "full_command alone: any parameters");
        let none = process(&["/usr/sbin/nginx"], true, ParamMatch::Exact);
        assert!(
            !matches(&none, &line),
            "param_match without parameters: none"
        );
    }

    #[test]
    fn quorum_between_its_bounds() {
        let mut p = process(&["x"], false, ParamMatch::Exact);
        (p.quorum, p.quorum_max) = (2, 3);
        assert_eq!(
            (0..5).map(|n| quorate(&p, n)).collect::<Vec<_>>(),
            [false, false, true, true, false]
        );
    }

    #[test]
    fn changes_wait_out_their_delay_the_first_state_does_not() {
        let mut p = process(&["x"], false, ParamMatch::Exact);
        (p.fork_delay_cs, p.terminate_delay_cs) = (100, 50);
        let t0 = Instant::now();
        let at = |ms| t0 + Duration::from_millis(ms);
        let mut d = Debounce::default();
        assert_eq!(d.observe(&p, true, at(0)), Some(true));
        assert_eq!(d.observe(&p, false, at(100)), None);
        // Back up before terminate_delay passed: nothing to report.
        assert_eq!(d.observe(&p, true, at(400)), None);
        assert_eq!(d.observe(&p, false, at(500)), None);
        assert_eq!(d.observe(&p, false, at(1000)), Some(false));
        assert_eq!(d.observe(&p, true, at(1100)), None);
        assert_eq!(d.observe(&p, true, at(2100)), Some(true));
    }

    #[test]
    fn stat_names_may_hold_parentheses() {
        assert_eq!(
            comm_and_state("42 (a (b)) S 1 2"),
            Some(("a (b)".to_string(), 'S'))
        );
        assert_eq!(comm_and_state("7 (sh) Z 1"), Some(("sh".to_string(), 'Z')));
    }
}
