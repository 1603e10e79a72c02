//! `vrrpd run --metrics`, scraped with curl in the lab through a failover: the state gauges and
//! the transition counters (with their reason) change exactly as the state machine did, as the
//! state files and logs say; a foreign router (the real keepalived on our VRID with another
//! VIP) shows in the invalid and clash counters; track script runs are counted; a request
//! other than GET /metrics is refused; a non-loopback address is refused unless allowed.

// Helpers outside #[test] functions unwrap too: a panic there is a test failure.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{IpAddr, TcpStream};
use std::time::Duration;

use ipi_lab::{wait_for, Daemon, Host, Lab};
use ipi_net_tests::vrrp::{Router, Speaker};
use nix::sys::signal::Signal;
use support::{answers, state, wall_clock, Responder, Wire};

#[allow(
    dead_code,
    reason = "each test binary uses a part of the shared helpers"
)]
mod support;

const VIP: &str = "192.0.2.200";
const POLL: Duration = Duration::from_millis(20);
const METRICS: &str = "127.0.0.1:9650";

/// VRRPv3, 0.1 s adverts, VRID 61, a track script that always succeeds (weight -10: with
/// weight 0 the instance would wait in Initialize for its first result, and leave it for the
/// reason `track_script`).
fn conf(priority: u8, vip: &str, instance: &str) -> String {
    format!(
        "global_defs {{\n    vrrp_version 3\n}}\nvrrp_script chk {{\n    script \"/bin/true\"\n    \
         interval 1\n    weight -10\n}}\nvrrp_instance {instance} {{\n    interface eth0\n    virtual_router_id 61\n    \
         priority {priority}\n    advert_int 0.1\n    virtual_ipaddress {{\n        {vip}/32\n    }}\n    \
         track_script {{\n        chk\n    }}\n}}\n"
    )
}

fn vrrpd(host: &Host, priority: u8) -> Daemon {
    support::vrrpd_with(host, &conf(priority, VIP, "VI_1"), &["--metrics", METRICS])
}

/// Waits until `host`'s state file says `want` (it is written a moment after the change the
/// metrics already show).
fn until_state(host: &Host, want: &str) {
    let seen = wait_for(Duration::from_secs(2), POLL, || state(host) == want);
    assert!(
        seen.is_some(),
        "{}: state file {:?}, not {want}",
        host.name(),
        state(host)
    );
}

/// b's transitions once a has crashed, come back and shut down.
const B_AT_THE_END: &[(&str, f64)] = &[
    ("init>backup:startup", 1.0),
    ("backup>master:master_down_timer", 1.0),
    ("master>backup:higher_priority_advert", 1.0),
    ("backup>master:priority_zero", 1.0),
];

type Labels = BTreeMap<String, String>;

/// One scrape, parsed: (name, labels, value) per sample; None when curl fails.
fn scrape(host: &Host) -> Option<Vec<(String, Labels, f64)>> {
    let out = host
        .run(
            "curl",
            [
                "-sf",
                "--max-time",
                "2",
                &format!("http://{METRICS}/metrics"),
            ],
        )
        .unwrap();
    out.success.then(|| parse(&out.stdout))
}

/// The text format read back (label values here have no escapes or commas).
fn parse(text: &str) -> Vec<(String, Labels, f64)> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|line| {
            let (series, value) = line.rsplit_once(' ').unwrap();
            let (name, labels) = match series.split_once('{') {
                Some((name, rest)) => {
                    let labels = rest
                        .trim_end_matches('}')
                        .split(',')
                        .map(|kv| {
                            let (k, v) = kv.split_once('=').unwrap();
                            (k.to_string(), v.trim_matches('"').to_string())
                        })
                        .collect();
                    (name.to_string(), labels)
                }
                None => (series.to_string(), Labels::new()),
            };
            (name, labels, value.parse().unwrap())
        })
        .collect()
}

/// The value of the sample `name` whose labels include `want`; 0 when there is none.
fn value(samples: &[(String, Labels, f64)], name: &str, want: &[(&str, &str)]) -> f64 {
    samples
        .iter()
        .find(|(n, l, _)| {
            n == name
                && want
                    .iter()
                    .all(|(k, v)| l.get(*k).map(String::as_str) == Some(v))
        })
        .map_or(0.0, |(_, _, v)| *v)
}

/// The transitions counted, as "from>to:reason" -> count.
fn transitions(samples: &[(String, Labels, f64)]) -> BTreeMap<String, f64> {
    samples
        .iter()
        .filter(|(n, _, _)| n == "vrrpd_transitions_total")
        .map(|(_, l, v)| (format!("{}>{}:{}", l["from"], l["to"], l["reason"]), *v))
        .collect()
}

fn expect(pairs: &[(&str, f64)]) -> BTreeMap<String, f64> {
    pairs.iter().map(|(k, v)| ((*k).to_string(), *v)).collect()
}

/// Waits until `host`'s scrape shows `state` as the one state and the transitions `want`.
fn until_scraped(host: &Host, state: &str, want: &[(&str, f64)], logs: &[&Daemon]) {
    let want = expect(want);
    let mut last = Vec::new();
    let ok = wait_for(Duration::from_secs(8), POLL, || {
        let Some(s) = scrape(host) else { return false };
        last = s;
        value(&last, "vrrpd_instance_state", &[("state", state)]) == 1.0
            && ["init", "backup", "master", "fault", "stop"]
                .iter()
                .filter(|s| **s != state)
                .all(|s| value(&last, "vrrpd_instance_state", &[("state", s)]) == 0.0)
            && transitions(&last) == want
    });
    let logs: Vec<String> = logs.iter().map(|d| d.log()).collect();
    assert!(
        ok.is_some(),
        "{}: want {state} and {want:?}, scraped {:?}\n{last:#?}\n{}",
        host.name(),
        transitions(&last),
        logs.join("\n")
    );
}

#[test]
// One scenario read top to bottom: a failover and a clash as the metrics tell them.
#[allow(clippy::too_many_lines)]
fn metrics_follow_a_failover_and_a_clash() {
    if !ipi_lab::available()
        || !ipi_lab::tool("curl", "curl")
        || !ipi_lab::tool("tshark", "tshark")
        || !ipi_lab::tool("keepalived", "keepalived")
    {
        return;
    }
    let mut lab = Lab::new().unwrap();
    let (a, b, k, client) = (
        lab.host("a").unwrap(),
        lab.host("b").unwrap(),
        lab.host("k").unwrap(),
        lab.host("client").unwrap(),
    );
    let _answer = [&a, &b].map(Responder::start);
    let vip: IpAddr = VIP.parse().unwrap();
    let reach = |name: &str, logs: &[&Daemon]| {
        let took = wait_for(Duration::from_secs(5), POLL, || {
            answers(&client, vip).as_deref() == Some(name)
        });
        let logs: Vec<String> = logs.iter().map(|d| d.log()).collect();
        assert!(
            took.is_some(),
            "the client never reached {name}\n{}",
            logs.join("\n")
        );
    };

    // a (150) alone: Initialize -> Backup at startup, Backup -> Master on its timer.
    let mut da = vrrpd(&a, 150);
    until_scraped(
        &a,
        "master",
        &[
            ("init>backup:startup", 1.0),
            ("backup>master:master_down_timer", 1.0),
        ],
        &[&da],
    );
    until_state(&a, "MASTER");
    reach("a", &[&da]);
    let s = scrape(&a).unwrap();
    assert_eq!(value(&s, "vrrpd_priority", &[("instance", "VI_1")]), 150.0);
    assert_eq!(
        value(&s, "vrrpd_base_priority", &[("instance", "VI_1")]),
        150.0
    );
    assert_eq!(
        value(
            &s,
            "vrrpd_instance_info",
            &[("vrid", "61"), ("version", "3"), ("interface", "eth0")]
        ),
        1.0
    );
    assert!(value(&s, "vrrpd_adverts_sent_total", &[("instance", "VI_1")]) > 0.0);

    // b (100) joins as backup and hears a.
    let db = vrrpd(&b, 100);
    until_scraped(&b, "backup", &[("init>backup:startup", 1.0)], &[&da, &db]);
    wait_for(Duration::from_secs(3), POLL, || {
        scrape(&b).is_some_and(|s| value(&s, "vrrpd_adverts_received_total", &[]) >= 5.0)
    })
    .unwrap();

    // a crashes: b takes over on its Master_Down_Timer.
    da.signal(Signal::SIGKILL).unwrap();
    da.wait(Duration::from_secs(5)).unwrap();
    // The VIP a left behind (no process removed it) would answer too: take it away.
    a.run("ip", ["addr", "del", &format!("{VIP}/32"), "dev", "eth0"])
        .unwrap();
    until_scraped(
        &b,
        "master",
        &[
            ("init>backup:startup", 1.0),
            ("backup>master:master_down_timer", 1.0),
        ],
        &[&db],
    );
    until_state(&b, "MASTER");
    reach("b", &[&db]);

    // a comes back and preempts b: b steps down for a higher priority advert.
    let mut da = vrrpd(&a, 150);
    until_scraped(
        &a,
        "master",
        &[("init>backup:startup", 1.0), ("backup>master:preempt", 1.0)],
        &[&da, &db],
    );
    until_scraped(
        &b,
        "backup",
        &[
            ("init>backup:startup", 1.0),
            ("backup>master:master_down_timer", 1.0),
            ("master>backup:higher_priority_advert", 1.0),
        ],
        &[&da, &db],
    );
    reach("a", &[&da, &db]);

    // a shuts down: it resigns with priority 0 and b takes over after Skew_Time.
    da.signal(Signal::SIGTERM).unwrap();
    assert_eq!(da.wait(Duration::from_secs(5)).unwrap(), Some(0));
    until_scraped(&b, "master", B_AT_THE_END, &[&db]);
    reach("b", &[&db]);
    let log = db.log();
    for line in [
        "VI_1: BACKUP -> MASTER (priority 100, master_down_timer)",
        "VI_1: MASTER -> BACKUP (priority 100, higher_priority_advert)",
        "VI_1: BACKUP -> MASTER (priority 100, priority_zero)",
    ] {
        assert!(log.contains(line), "{line:?} missing from b's log\n{log}");
    }
    let s = scrape(&b).unwrap();
    assert_eq!(value(&s, "vrrpd_priority_zero_received_total", &[]), 1.0);
    assert_eq!(value(&s, "vrrpd_became_master_total", &[]), 2.0);
    assert_eq!(
        value(&s, "vrrpd_foreign_routers", &[("instance", "VI_1")]),
        0.0
    );
    // The track script ran about once a second, every run ok, each in the histogram.
    let runs = value(
        &s,
        "vrrpd_script_runs_total",
        &[("script", "chk"), ("result", "ok")],
    );
    assert!(runs >= 2.0, "{s:?}");
    assert_eq!(
        value(
            &s,
            "vrrpd_script_duration_seconds_count",
            &[("script", "chk")]
        ),
        runs
    );
    assert_eq!(
        value(
            &s,
            "vrrpd_script_duration_seconds_bucket",
            &[("script", "chk"), ("le", "+Inf")]
        ),
        runs
    );

    // A foreign router: keepalived on VRID 61 with another VIP. It advertises every 50 ms:
    // at vrrpd's 100 ms it fell silent after a few adverts (each of vrrpd's, which it
    // rejects, seems to push its own advert timer back; lab_clash saw the same).
    let kk = Router::start_with(
        &k,
        Speaker::Keepalived,
        &conf(100, "192.0.2.201", "OTHER")
            .replace("track_script {\n        chk\n    }\n", "")
            .replace("advert_int 0.1", "advert_int 0.05"),
        100,
        None,
    )
    .unwrap();
    let k_ip = k.ipv4().to_string();
    let mut last = Vec::new();
    let seen = wait_for(Duration::from_secs(5), POLL, || {
        let Some(s) = scrape(&b) else { return false };
        last = s;
        value(&last, "vrrpd_foreign_routers", &[("instance", "VI_1")]) == 1.0
            && value(&last, "vrrpd_clashes_total", &[("instance", "VI_1")]) == 1.0
            && value(
                &last,
                "vrrpd_foreign_router_info",
                &[
                    ("source", &k_ip),
                    ("vrid", "61"),
                    ("reason", "addresses"),
                    ("interface", "eth0"),
                ],
            ) == 1.0
            && value(
                &last,
                "vrrpd_adverts_invalid_total",
                &[("reason", "addresses")],
            ) >= 5.0
    });
    assert!(
        seen.is_some(),
        "{last:#?}\n{}\n{}",
        db.log(),
        kk.daemon.log()
    );
    // Nothing moved: b still master, the client still reaches b.
    until_scraped(&b, "master", B_AT_THE_END, &[&db]);
    reach("b", &[&db]);

    // Only GET /metrics.
    let code = |args: &[&str]| {
        let mut all = vec![
            "-s",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            "--max-time",
            "2",
        ];
        all.extend_from_slice(args);
        b.run("curl", all).unwrap().stdout
    };
    assert_eq!(code(&[&format!("http://{METRICS}/")]), "404");
    assert_eq!(
        code(&["-X", "POST", &format!("http://{METRICS}/metrics")]),
        "405"
    );
    assert_eq!(code(&[&format!("http://{METRICS}/metrics?x")]), "200");

    // 100 clients that connect and never send, one that sends half a request: the VRRP loop
    // does not notice (b keeps advertising every 0.1 s), and the endpoint cuts them at its
    // 5 s deadline and serves scrapes again.
    let wire = Wire::start(&lab, "idle-clients");
    let started = wall_clock();
    let idle: Vec<TcpStream> = b
        .within(|| (0..100).map(|_| TcpStream::connect(METRICS)).collect())
        .unwrap();
    let mut half = b.within(|| TcpStream::connect(METRICS)).unwrap();
    half.write_all(b"GET /metr").unwrap();
    std::thread::sleep(Duration::from_secs(3));
    let ended = wall_clock();
    let seen = wire.stop();
    let b_ip = b.ipv4().to_string();
    let times: Vec<Duration> = seen
        .adverts_from(&b_ip)
        .map(|a| a.at)
        .filter(|at| *at >= started && *at <= ended)
        .collect();
    let gap = times
        .windows(2)
        .map(|w| w[1] - w[0])
        .max()
        .unwrap_or(Duration::MAX);
    // 30 adverts in 3 s, each 100 ms after the last; a loaded 2-core box may be late by
    // 600 ms at most (as interop_keepalived allows), never silent.
    assert!(
        times.len() >= 15 && gap <= Duration::from_millis(100 + 600),
        "b advertised {} times in 3 s, largest gap {gap:?}\n{seen}\n{}",
        times.len(),
        db.log()
    );
    let during = times.len();
    until_state(&b, "MASTER");
    reach("b", &[&db]);
    let back = wait_for(Duration::from_secs(8), POLL, || scrape(&b).is_some());
    assert!(
        back.is_some(),
        "the endpoint never served again\n{}",
        db.log()
    );
    // The server, not the client, closed the idle connections: end of file.
    let mut first = &idle[0];
    first
        .set_read_timeout(Some(Duration::from_secs(1)))
        .unwrap();
    assert_eq!(first.read(&mut [0u8; 16]).unwrap_or(usize::MAX), 0);
    eprintln!(
        "b sent {during} adverts in 3 s with 101 idle clients (largest gap {gap:?}); \
         scrapes again after {back:?}"
    );
}

#[test]
fn a_non_loopback_metrics_address_is_refused_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("k.conf");
    std::fs::write(&path, conf(100, VIP, "VI_1")).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_vrrpd"))
        .args([
            "run",
            "-f",
            path.to_str().unwrap(),
            "--metrics",
            "192.0.2.1:9650",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--metrics 192.0.2.1:9650: not a loopback address")
            && err.contains("--metrics-allow-remote"),
        "{err}"
    );
}
