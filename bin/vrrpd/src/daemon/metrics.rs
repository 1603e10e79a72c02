//! The metrics, in Prometheus' text exposition format 0.0.4, made from the state machines and
//! the daemon's own counts when a scrape asks (so they are exactly what the daemon knows at
//! that moment). Every name is documented in vrrpd(1), section METRICS.

use std::collections::BTreeMap;
use std::fmt::{Display, Write as _};

use super::scripts::{self, ScriptStats, DURATION_BUCKETS_MS};
use super::setup::{Parts, Vr};
use super::telemetry::Telemetry;
use crate::fsm::{Instance, Instant, State};

/// Per instance: rejected adverts by reason ("" for those no instance claimed).
pub type Invalid = BTreeMap<String, BTreeMap<&'static str, u64>>;

/// The states an instance can be in, as the `state` label spells them.
const STATES: [State; 5] = [
    State::Initialize,
    State::Backup,
    State::Master,
    State::Fault,
    State::Stopped,
];

/// A metric family's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Goes up and down.
    Gauge,
    /// Only goes up (resets when the daemon restarts).
    Counter,
    /// Buckets, sum and count.
    Histogram,
}

/// Text exposition being written.
#[derive(Debug, Default)]
pub struct Exposition {
    out: String,
}

impl Exposition {
    /// Starts a family: its HELP and TYPE lines.
    pub fn family(&mut self, name: &str, kind: Kind, help: &str) {
        let kind = match kind {
            Kind::Gauge => "gauge",
            Kind::Counter => "counter",
            Kind::Histogram => "histogram",
        };
        let _ = writeln!(self.out, "# HELP {name} {}", escape_help(help));
        let _ = writeln!(self.out, "# TYPE {name} {kind}");
    }

    /// One sample.
    pub fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: impl Display) {
        self.out.push_str(name);
        if !labels.is_empty() {
            self.out.push('{');
            for (n, (label, value)) in labels.iter().enumerate() {
                if n > 0 {
                    self.out.push(',');
                }
                let _ = write!(self.out, "{label}=\"{}\"", escape_label(value));
            }
            self.out.push('}');
        }
        let _ = writeln!(self.out, " {value}");
    }

    /// The text.
    pub fn finish(self) -> String {
        self.out
    }
}

/// A label value escaped as the format says: backslash, double quote and line feed.
pub fn escape_label(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// HELP text escaped: backslash and line feed.
fn escape_help(text: &str) -> String {
    text.replace('\\', "\\\\").replace('\n', "\\n")
}

/// The state label of a state.
pub fn state_label(state: &str) -> String {
    state.to_ascii_lowercase()
}

/// Everything a scrape shows.
pub fn render(parts: &Parts, invalid: &Invalid, t: &Telemetry, now: Instant) -> String {
    let mut e = Exposition::default();
    instances(&mut e, parts);
    counters(&mut e, parts);
    transitions(&mut e, t);
    invalid_adverts(&mut e, invalid);
    clashes(&mut e, parts, t, now);
    conflicts(&mut e, parts, t);
    script_runs(&mut e, &scripts::stats());
    e.finish()
}

/// Every instance with its state machine.
fn members(parts: &Parts) -> impl Iterator<Item = (&Vr, &Instance)> {
    parts.vrs.iter().filter_map(|vr| {
        let i = parts.units.get(vr.unit)?.member(vr.member)?;
        Some((vr, i))
    })
}

/// A family with one sample per instance, labelled `instance` only.
fn per_instance(
    e: &mut Exposition,
    parts: &Parts,
    (name, kind, help): (&str, Kind, &str),
    value: impl Fn(&Vr, &Instance) -> u64,
) {
    e.family(name, kind, help);
    for (vr, i) in members(parts) {
        e.sample(name, &[("instance", &vr.cfg.name)], value(vr, i));
    }
}

fn instances(e: &mut Exposition, parts: &Parts) {
    let members = || members(parts);
    e.family(
        "vrrpd_instance_info",
        Kind::Gauge,
        "Always 1: an instance with its interface, VRID and VRRP version.",
    );
    for (vr, _) in members() {
        let (vrid, version) = (
            vr.cfg.vrid.to_string(),
            vr.expect.version.number().to_string(),
        );
        let labels = [
            ("instance", vr.cfg.name.as_str()),
            ("interface", vr.interface.name.as_str()),
            ("vrid", vrid.as_str()),
            ("version", version.as_str()),
        ];
        e.sample("vrrpd_instance_info", &labels, 1);
    }
    e.family(
        "vrrpd_instance_state",
        Kind::Gauge,
        "1 for the state the instance is in (init, backup, master, fault, stop), 0 for the others.",
    );
    for (vr, i) in members() {
        for s in STATES {
            let label = state_label(s.as_str());
            let labels = [("instance", vr.cfg.name.as_str()), ("state", &label)];
            e.sample("vrrpd_instance_state", &labels, u8::from(i.state() == s));
        }
    }
    let help =
        "Effective priority: the configured one moved by track script and interface weights.";
    per_instance(e, parts, ("vrrpd_priority", Kind::Gauge, help), |_, i| {
        i.priority().into()
    });
    let family = ("vrrpd_base_priority", Kind::Gauge, "Configured priority.");
    per_instance(e, parts, family, |_, i| i.params().priority.into());
}

fn counters(e: &mut Exposition, parts: &Parts) {
    type Pick = fn(&crate::fsm::Counters) -> u64;
    let all: [(&str, &str, Pick); 6] = [
        (
            "vrrpd_adverts_sent_total",
            "Adverts sent, priority 0 included.",
            |c| c.adverts_sent,
        ),
        (
            "vrrpd_adverts_received_total",
            "Valid adverts of the instance's group received.",
            |c| c.adverts_received,
        ),
        (
            "vrrpd_priority_zero_sent_total",
            "Adverts sent with priority 0 (resigning).",
            |c| c.priority_zero_sent,
        ),
        (
            "vrrpd_priority_zero_received_total",
            "Adverts received with priority 0.",
            |c| c.priority_zero_received,
        ),
        (
            "vrrpd_became_master_total",
            "Times the instance became master.",
            |c| c.became_master,
        ),
        (
            "vrrpd_interval_errors_total",
            "VRRPv2 adverts dropped for an interval other than ours (RFC 3768 7.1).",
            |c| c.interval_errors,
        ),
    ];
    for (name, help, pick) in all {
        per_instance(e, parts, (name, Kind::Counter, help), |_, i| {
            pick(i.counters())
        });
    }
}

fn transitions(e: &mut Exposition, t: &Telemetry) {
    e.family(
        "vrrpd_transitions_total",
        Kind::Counter,
        "State changes by instance, old state, new state and reason.",
    );
    for ((instance, from, to, reason), n) in &t.transitions {
        let (from, to) = (state_label(from), state_label(to));
        let labels = [
            ("instance", instance.as_str()),
            ("from", &from),
            ("to", &to),
            ("reason", reason.name()),
        ];
        e.sample("vrrpd_transitions_total", &labels, n);
    }
}

fn invalid_adverts(e: &mut Exposition, invalid: &Invalid) {
    e.family(
        "vrrpd_adverts_invalid_total",
        Kind::Counter,
        "Adverts dropped by the receive checks, by instance and reason.",
    );
    for (instance, reasons) in invalid.iter().filter(|(i, _)| !i.is_empty()) {
        for (reason, n) in reasons {
            let labels = [("instance", instance.as_str()), ("reason", reason)];
            e.sample("vrrpd_adverts_invalid_total", &labels, n);
        }
    }
    e.family(
        "vrrpd_adverts_unclaimed_total",
        Kind::Counter,
        "Datagrams no instance could claim (malformed, or a VRID not run here), by reason.",
    );
    for (reason, n) in invalid.get("").into_iter().flatten() {
        e.sample("vrrpd_adverts_unclaimed_total", &[("reason", reason)], n);
    }
}

fn clashes(e: &mut Exposition, parts: &Parts, t: &Telemetry, now: Instant) {
    let help = "Routers outside the instance's group heard on its VRID in the last 60 s.";
    per_instance(
        e,
        parts,
        ("vrrpd_foreign_routers", Kind::Gauge, help),
        |vr, _| {
            let name = vr.cfg.name.as_str();
            let n = t.clashes.active(now).filter(|f| f.instance == name).count();
            u64::try_from(n).unwrap_or(u64::MAX)
        },
    );
    e.family(
        "vrrpd_foreign_router_info",
        Kind::Gauge,
        "Always 1: a router outside the group on the instance's VRID, with why it is foreign.",
    );
    for f in t.clashes.active(now) {
        let (source, vrid) = (f.source.to_string(), f.vrid.to_string());
        let labels = [
            ("instance", f.instance.as_str()),
            ("interface", &f.interface),
            ("vrid", &vrid),
            ("source", &source),
            ("reason", f.reason),
        ];
        e.sample("vrrpd_foreign_router_info", &labels, 1);
    }
    let help = "Appearances of routers outside the group on the instance's VRID (each one logged).";
    per_instance(
        e,
        parts,
        ("vrrpd_clashes_total", Kind::Counter, help),
        |vr, _| t.clashes.appearances(&vr.cfg.name),
    );
}

fn conflicts(e: &mut Exposition, parts: &Parts, t: &Telemetry) {
    let c = &t.conflicts;
    let help = "VIPs of the instance that a host outside its group answers for on the wire now.";
    per_instance(
        e,
        parts,
        ("vrrpd_vip_conflicts", Kind::Gauge, help),
        |vr, _| u64::try_from(c.of(&vr.cfg.name).count()).unwrap_or(u64::MAX),
    );
    e.family(
        "vrrpd_vip_conflict_info",
        Kind::Gauge,
        "Always 1: a VIP answered on the wire by a host outside the group, with its MAC.",
    );
    for conflict in c.all() {
        let (vip, mac) = (
            conflict.vip.to_string(),
            ipi_core::acd::mac_string(conflict.mac),
        );
        let labels = [
            ("instance", conflict.instance.as_str()),
            ("interface", &conflict.interface),
            ("vip", &vip),
            ("mac", &mac),
        ];
        e.sample("vrrpd_vip_conflict_info", &labels, 1);
    }
    let help = "Probes of the instance's VIPs on the wire (at start and on a clash).";
    per_instance(
        e,
        parts,
        ("vrrpd_vip_probes_total", Kind::Counter, help),
        |vr, _| c.probes(&vr.cfg.name),
    );
}

fn script_runs(e: &mut Exposition, stats: &BTreeMap<String, ScriptStats>) {
    e.family(
        "vrrpd_script_runs_total",
        Kind::Counter,
        "Track script runs by script and result (ok, failed, timeout, error: could not run).",
    );
    for (name, s) in stats {
        for (outcome, n) in &s.outcomes {
            let labels = [("script", name.as_str()), ("result", outcome.name())];
            e.sample("vrrpd_script_runs_total", &labels, n);
        }
    }
    let family = "vrrpd_script_duration_seconds";
    e.family(family, Kind::Histogram, "How long track script runs took.");
    for (name, s) in stats {
        let mut cumulative = 0;
        for (bound, n) in DURATION_BUCKETS_MS.iter().zip(s.buckets) {
            cumulative += n;
            let le = seconds(bound * 1000);
            let labels = [("script", name.as_str()), ("le", &le)];
            e.sample("vrrpd_script_duration_seconds_bucket", &labels, cumulative);
        }
        let labels = [("script", name.as_str()), ("le", "+Inf")];
        e.sample("vrrpd_script_duration_seconds_bucket", &labels, s.runs());
        let sum = seconds(s.total_us);
        e.sample(
            "vrrpd_script_duration_seconds_sum",
            &[("script", name)],
            sum,
        );
        e.sample(
            "vrrpd_script_duration_seconds_count",
            &[("script", name)],
            s.runs(),
        );
    }
}

/// Microseconds as decimal seconds, exactly (no float rounding): 1500 -> "0.0015".
fn seconds(us: u64) -> String {
    let (s, frac) = (us / 1_000_000, us % 1_000_000);
    if frac == 0 {
        return s.to_string();
    }
    let digits = format!("{frac:06}");
    format!("{s}.{}", digits.trim_end_matches('0'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::daemon::scripts::Outcome;

    /// A small parser of the text format, written from its description (not from the writer):
    /// families with their TYPE, samples with labels unescaped, values as numbers.
    fn parse(text: &str) -> Vec<(String, BTreeMap<String, String>, f64)> {
        let mut samples = Vec::new();
        let mut typed = std::collections::BTreeSet::new();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let (name, kind) = rest.split_once(' ').unwrap();
                assert!(["gauge", "counter", "histogram"].contains(&kind), "{line}");
                assert!(typed.insert(name.to_string()), "TYPE twice: {line}");
                continue;
            }
            if line.starts_with('#') {
                assert!(line.starts_with("# HELP "), "{line}");
                continue;
            }
            let name_end = line.find(['{', ' ']).unwrap();
            let name = &line[..name_end];
            assert!(
                name.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':'),
                "{line}"
            );
            assert!(
                typed
                    .iter()
                    .any(|t| name == t || name.starts_with(&format!("{t}_"))),
                "{name} has no TYPE before it"
            );
            let mut rest = &line[name_end..];
            let mut labels = BTreeMap::new();
            if let Some(inner) = rest.strip_prefix('{') {
                let mut chars = inner.char_indices();
                let mut key = String::new();
                loop {
                    let (_, c) = chars.next().unwrap();
                    match c {
                        '}' => break,
                        ',' => {}
                        '=' => {
                            assert_eq!(chars.next().unwrap().1, '"');
                            let mut value = String::new();
                            loop {
                                match chars.next().unwrap().1 {
                                    '\\' => match chars.next().unwrap().1 {
                                        'n' => value.push('\n'),
                                        c @ ('\\' | '"') => value.push(c),
                                        other => panic!("escape \\{other} in {line}"),
                                    },
                                    '"' => break,
                                    '\n' => panic!("raw newline"),
                                    c => value.push(c),
                                }
                            }
                            labels.insert(std::mem::take(&mut key), value);
                        }
                        c => key.push(c),
                    }
                }
                let used = chars.next().map_or(inner.len(), |(i, _)| i);
                rest = &inner[used..];
            }
            let value = rest.trim();
            let value = if value == "+Inf" {
                f64::INFINITY
            } else {
                value.parse().unwrap()
            };
            samples.push((name.to_string(), labels, value));
        }
        samples
    }

    #[test]
    fn label_values_are_escaped_and_read_back() {
        let mut e = Exposition::default();
        e.family("x_total", Kind::Counter, "Help with a \\ and a\nline.");
        let odd = "a \"quoted\" \\ back\nslash, {brace}=x";
        e.sample("x_total", &[("instance", odd), ("b", "")], 7);
        let text = e.finish();
        assert!(
            text.contains("# HELP x_total Help with a \\\\ and a\\nline.\n"),
            "{text}"
        );
        let samples = parse(&text);
        assert_eq!(samples.len(), 1, "{text}");
        assert_eq!(samples[0].1["instance"], odd);
        assert_eq!(samples[0].1["b"], "");
        assert_eq!(samples[0].2, 7.0);
    }

    #[test]
    fn script_histograms_are_cumulative() {
        let mut stats = BTreeMap::new();
        let mut s = ScriptStats::default();
        s.outcomes.insert(Outcome::Ok, 3);
        s.outcomes.insert(Outcome::Timeout, 1);
        s.buckets[0] = 1; // <= 5 ms
        s.buckets[4] = 2; // <= 100 ms
        s.over = 1;
        s.total_us = 5_201_500;
        stats.insert("chk \"x\"".to_string(), s);
        let mut e = Exposition::default();
        script_runs(&mut e, &stats);
        let samples = parse(&e.finish());
        let value = |name: &str, le: Option<&str>| {
            samples
                .iter()
                .find(|(n, l, _)| n == name && le.is_none_or(|le| l["le"] == le))
                .map(|(_, l, v)| {
                    assert_eq!(l["script"], "chk \"x\"");
                    *v
                })
                .unwrap()
        };
        let bucket = "vrrpd_script_duration_seconds_bucket";
        assert_eq!(value(bucket, Some("0.005")), 1.0);
        assert_eq!(value(bucket, Some("0.05")), 1.0);
        assert_eq!(value(bucket, Some("0.1")), 3.0);
        assert_eq!(value(bucket, Some("5")), 3.0);
        assert_eq!(value(bucket, Some("+Inf")), 4.0);
        assert_eq!(value("vrrpd_script_duration_seconds_count", None), 4.0);
        assert_eq!(value("vrrpd_script_duration_seconds_sum", None), 5.2015);
        let runs: f64 = samples
            .iter()
            .filter(|(n, _, _)| n == "vrrpd_script_runs_total")
            .map(|(_, _, v)| v)
            .sum();
        assert_eq!(runs, 4.0);
    }

    #[test]
    fn seconds_are_exact() {
        assert_eq!(seconds(0), "0");
        assert_eq!(seconds(1_500), "0.0015");
        assert_eq!(seconds(5_000_000), "5");
        assert_eq!(seconds(10_000), "0.01");
    }

    #[test]
    fn an_empty_daemon_is_a_valid_exposition() {
        let t = Telemetry::default();
        let mut invalid = Invalid::new();
        invalid.entry(String::new()).or_default().insert("vrid", 3);
        invalid
            .entry("VI_1".into())
            .or_default()
            .insert("addresses", 2);
        let mut e = Exposition::default();
        transitions(&mut e, &t);
        invalid_adverts(&mut e, &invalid);
        let samples = parse(&e.finish());
        assert_eq!(samples.len(), 2);
        assert_eq!(samples[0].0, "vrrpd_adverts_invalid_total");
        assert_eq!(samples[0].1["reason"], "addresses");
        assert_eq!(samples[1].0, "vrrpd_adverts_unclaimed_total");
        assert_eq!(samples[1].2, 3.0);
    }
}
