//! vrrpd beside keepalived, in the same lab, one run each, ratios printed (vrrpd / keepalived;
//! below 1.0 is better for times and resources).
//!
//! - Failover after the master's link is cut, at advert_int 1 s (v2) and 0.1 s (v3): measured
//!   on the wire, from the master's last advert to the backup's first, against the backup's
//!   Master_Down_Interval. The master is keepalived; the backup under test is each program.
//! - Failover after SIGTERM: from the resigning master's priority-0 advert to the backup's
//!   first, against the backup's Skew_Time.
//! - A track script starts failing on the master: how long until the other node holds the VIP.
//! - Idle CPU time and RSS of master and backup running two instances for 20 s.
//!
//! `cargo bench -p vrrpd --bench vs_keepalived` as root (it builds network namespaces).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use ipi_lab::{wait_for, Lab};
use ipi_net_tests::failover::{self, Fault, Outcome};
use ipi_net_tests::vrrp::{Group, Router, Speaker};

const SPEAKERS: [Speaker; 2] = [Speaker::Keepalived, Speaker::Vrrpd];

fn main() {
    if !ipi_lab::has_net_admin() {
        eprintln!("vs_keepalived: needs CAP_NET_ADMIN (run as root)");
        return;
    }
    let vrrpd = PathBuf::from(env!("CARGO_BIN_EXE_vrrpd"));
    let mut rows: Vec<(String, [f64; 2], String, &str)> = Vec::new();

    for (label, group) in [
        ("link cut, v2 1 s", Group::v2_pass()),
        ("link cut, v3 0.1 s", Group::v3_dual(10)),
    ] {
        let mut got = [0.0; 2];
        let mut mdi = Duration::ZERO;
        for (n, backup) in SPEAKERS.into_iter().enumerate() {
            let o = scenario(&group, backup, Fault::Partition, &vrrpd);
            got[n] = seconds(o.silence);
            mdi = o.master_down_interval;
        }
        rows.push((
            label.to_string(),
            got,
            format!("MDI {:.3} s", mdi.as_secs_f64()),
            "s",
        ));
    }
    {
        let group = Group::v2_pass();
        let mut got = [0.0; 2];
        for (n, backup) in SPEAKERS.into_iter().enumerate() {
            got[n] = seconds(scenario(&group, backup, Fault::Terminate, &vrrpd).silence);
        }
        rows.push((
            "SIGTERM (priority 0), v2 1 s".into(),
            got,
            "Skew_Time 0.609 s".into(),
            "s",
        ));
    }
    {
        let mut got = [0.0; 2];
        for (n, speaker) in SPEAKERS.into_iter().enumerate() {
            got[n] = track_script_move(speaker, &vrrpd).as_secs_f64();
        }
        rows.push((
            "track script fails -> VIP moves".into(),
            got,
            "interval 1 s, fall 1".into(),
            "s",
        ));
    }
    {
        let mut cpu = [0.0; 2];
        let mut rss = [0.0; 2];
        for (n, speaker) in SPEAKERS.into_iter().enumerate() {
            let (c, r) = idle(speaker, &vrrpd);
            cpu[n] = c;
            rss[n] = r;
        }
        rows.push((
            "idle CPU, 2 instances x 2 nodes, 20 s".into(),
            cpu,
            "advert_int 1 s".into(),
            "ms",
        ));
        rows.push((
            "RSS, master + backup".into(),
            rss,
            "all processes".into(),
            "KiB",
        ));
    }

    println!("\n| benchmark | keepalived | vrrpd | ratio | reference |");
    println!("| --- | --- | --- | --- | --- |");
    for (label, [k, v], reference, unit) in rows {
        let ratio = if k > 0.0 { v / k } else { f64::NAN };
        println!("| {label} | {k:.3} {unit} | {v:.3} {unit} | {ratio:.2} | {reference} |");
    }
}

fn seconds(d: Option<Duration>) -> f64 {
    d.map_or(f64::NAN, |d| d.as_secs_f64())
}

/// keepalived master at 150, `backup` at 100.
fn scenario(group: &Group, backup: Speaker, fault: Fault, vrrpd: &PathBuf) -> Outcome {
    failover::run(
        group,
        [Speaker::Keepalived, backup],
        fault,
        Some(vrrpd),
        &mut |_, _| {},
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

/// Both nodes run `speaker`; the master (150) tracks a script (weight -60) that starts failing:
/// from the moment it fails to the other node (120) holding the VIP.
fn track_script_move(speaker: Speaker, vrrpd: &PathBuf) -> Duration {
    let group = Group::v2_pass();
    let mut lab = Lab::new().unwrap_or_else(|e| panic!("{e}"));
    let (a, b) = (
        lab.host("a").unwrap_or_else(|e| panic!("{e}")),
        lab.host("b").unwrap_or_else(|e| panic!("{e}")),
    );
    let flag = a.dir().join("healthy");
    std::fs::write(&flag, "").unwrap_or_else(|e| panic!("{e}"));
    let tracked = group.config("a", 150).replacen(
        "vrrp_instance VI_4 {",
        &format!(
            "vrrp_script chk {{\n    script \"/usr/bin/test -f {}\"\n    interval 1\n    weight -60\n}}\n\n\
             vrrp_instance VI_4 {{\n    track_script {{\n        chk\n    }}",
            flag.display()
        ),
        1,
    );
    let ra = Router::start_with(&a, speaker, &tracked, 150, Some(vrrpd))
        .unwrap_or_else(|e| panic!("{e}"));
    let rb = Router::start(&b, speaker, &group, 120, Some(vrrpd)).unwrap_or_else(|e| panic!("{e}"));
    wait_for(Duration::from_secs(20), Duration::from_millis(10), || {
        ra.holds(&group) && !rb.holds_any(&group)
    })
    .unwrap_or_else(|| panic!("no master\n{}\n{}", ra.daemon.log(), rb.daemon.log()));
    std::thread::sleep(Duration::from_secs(2));
    std::fs::remove_file(&flag).unwrap_or_else(|e| panic!("{e}"));
    let start = Instant::now();
    wait_for(Duration::from_secs(20), Duration::from_millis(5), || {
        rb.holds(&group)
    })
    .unwrap_or_else(|| {
        panic!(
            "the VIP did not move\n{}\n{}",
            ra.daemon.log(),
            rb.daemon.log()
        )
    });
    start.elapsed()
}

/// CPU milliseconds and RSS (KiB) of master and backup together, two instances each (IPv4 and
/// IPv6), 20 s at 1 s adverts after they settled.
fn idle(speaker: Speaker, vrrpd: &PathBuf) -> (f64, f64) {
    let group = Group::v3_dual(100);
    let mut lab = Lab::new().unwrap_or_else(|e| panic!("{e}"));
    let (a, b) = (
        lab.host("a").unwrap_or_else(|e| panic!("{e}")),
        lab.host("b").unwrap_or_else(|e| panic!("{e}")),
    );
    let ra = Router::start(&a, speaker, &group, 150, Some(vrrpd)).unwrap_or_else(|e| panic!("{e}"));
    let rb = Router::start(&b, speaker, &group, 100, Some(vrrpd)).unwrap_or_else(|e| panic!("{e}"));
    wait_for(Duration::from_secs(20), Duration::from_millis(10), || {
        ra.holds(&group)
    })
    .unwrap_or_else(|| panic!("no master"));
    std::thread::sleep(Duration::from_secs(2));
    let before = ra.daemon.usage().cpu + rb.daemon.usage().cpu;
    std::thread::sleep(Duration::from_secs(20));
    let (ua, ub) = (ra.daemon.usage(), rb.daemon.usage());
    let cpu = (ua.cpu + ub.cpu).saturating_sub(before);
    (cpu.as_secs_f64() * 1000.0, (ua.rss_kib + ub.rss_kib) as f64)
}
