//! Reloads that move no VIP unless the new configuration requires it, judged by a client that
//! connects to the VIP over and over (each router's [`Responder`] answers with its name):
//! a unicast peer added on both routers when a third joins (vrrpd and keepalived 2.2.7 in the
//! same test), VIPs added and removed by a reload, and priorities changed (lowered below the
//! backup's: the VIP moves; raised on the master: it does not). A broken file refused with
//! nothing changed is daemon_lab's.

// Helpers outside #[test] functions unwrap too: a panic there is a test failure.
#![allow(clippy::unwrap_used)]

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use ipi_lab::{wait_for, Host, Lab};
use ipi_net_tests::vrrp::{Router, Speaker};
use nix::sys::signal::Signal;
use support::{answers, connections, logs, status, until, wall_clock, Sampler, Wire};

#[allow(
    dead_code,
    reason = "support is shared by the lab tests; each uses a part"
)]
mod support;

const VIP: &str = "192.0.2.210";
const POLL: Duration = Duration::from_millis(10);

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn vrrpd() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_vrrpd"))
}

fn start(host: &Host, speaker: Speaker, text: &str) -> Router {
    Router::start_with(host, speaker, text, 0, Some(&vrrpd())).unwrap()
}

/// Writes `text` as the router's configuration and sends it SIGHUP.
fn reload(r: &Router, text: &str) {
    std::fs::write(r.host.dir().join("keepalived.conf"), text).unwrap();
    r.daemon.signal(Signal::SIGHUP).unwrap();
}

fn holds(host: &Host, vip: &str) -> bool {
    support::holds(host, ip(vip))
}

/// The transitions a vrrpd master has made so far, once its status file says MASTER (it is
/// written at most once a second); null for keepalived.
fn settled(host: &Host, speaker: Speaker) -> serde_json::Value {
    if speaker != Speaker::Vrrpd {
        return serde_json::Value::Null;
    }
    let master = wait_for(Duration::from_secs(3), POLL, || {
        status(host)["instances"][0]["state"] == "MASTER"
    });
    assert!(master.is_some(), "{}", status(host));
    status(host)["instances"][0]["transitions"].clone()
}

/// Changes of who answered, an unanswered attempt counting as a holder of its own.
fn moves(seen: &[(Instant, Option<String>)]) -> usize {
    seen.windows(2).filter(|w| w[0].1 != w[1].1).count()
}

/// Unicast VRRPv2 with PASS, 1 s adverts, as OpenShift renders it: `me` sends to `peers`.
fn unicast(priority: u8, me: &Host, peers: &[&Host]) -> String {
    let peers: String = peers
        .iter()
        .map(|p| format!("        {}\n", p.ipv4()))
        .collect();
    format!(
        "vrrp_instance VI_1 {{\n    state BACKUP\n    interface eth0\n    virtual_router_id 71\n    \
         priority {priority}\n    advert_int 1\n    authentication {{\n        auth_type PASS\n        \
         auth_pass ipi_vip\n    }}\n    unicast_src_ip {}\n    unicast_peer {{\n{peers}    }}\n    \
         virtual_ipaddress {{\n        {VIP}/32\n    }}\n}}\n",
        me.ipv4()
    )
}

/// What the client saw while the peer list grew.
struct Joined {
    attempts: usize,
    unanswered: usize,
    moves: usize,
    /// Whether b (the backup) or c (the router that joined) held the VIP at any sample.
    others_held: bool,
}

/// a (150) master and b (100) backup, unicast to each other; both get c added to their peers
/// and SIGHUP (a first, then b, as a rollout does), then c (50) starts with both as peers. The
/// client connects throughout; b's and c's addresses are sampled throughout.
fn a_router_joins(speaker: Speaker) -> Joined {
    let mut lab = Lab::new().unwrap();
    let (a, b, c, client, _answer) = support::three_routers(&mut lab);
    let ra = start(&a, speaker, &unicast(150, &a, &[&b]));
    let rb = start(&b, speaker, &unicast(100, &b, &[&a]));
    let all = [&ra, &rb];
    until("a master, b backup", Duration::from_secs(15), &all, || {
        holds(&a, VIP) && !holds(&b, VIP) && answers(&client, ip(VIP)).as_deref() == Some("a")
    });
    let before = settled(&a, speaker);
    let seen = connections(&client, ip(VIP));
    let (bh, ch) = (b.clone(), c.clone());
    let others = Sampler::start(move || holds(&bh, VIP) || holds(&ch, VIP));
    until("the first attempt", Duration::from_secs(3), &all, || {
        seen.count() > 0
    });
    reload(&ra, &unicast(150, &a, &[&b, &c]));
    std::thread::sleep(Duration::from_millis(300));
    reload(&rb, &unicast(100, &b, &[&a, &c]));
    std::thread::sleep(Duration::from_millis(300));
    let rc = start(&c, speaker, &unicast(50, &c, &[&a, &b]));
    // c's Master_Down_Interval is 3 + (256 - 50) / 256 = 3.8 s: had it not heard a, it would
    // have taken over within this.
    std::thread::sleep(Duration::from_secs(5));
    let held = others.stop();
    let seen = seen.stop();
    if speaker == Speaker::Vrrpd {
        // a never changed state: the reload applied the peers in place.
        assert!(before.is_u64(), "{before}");
        assert_eq!(
            status(&a)["instances"][0]["transitions"],
            before,
            "{}",
            logs(&[&ra, &rb, &rc])
        );
        assert!(
            ra.daemon.log().contains("changes in place"),
            "{}",
            ra.daemon.log()
        );
    }
    assert!(holds(&a, VIP), "{}", logs(&[&ra, &rb, &rc]));
    Joined {
        attempts: seen.len(),
        unanswered: seen.iter().filter(|(_, who)| who.is_none()).count(),
        moves: moves(&seen),
        others_held: held.iter().any(|(_, h)| *h),
    }
}

#[test]
fn a_unicast_peer_added_by_sighup_moves_nothing_as_with_keepalived() {
    if !ipi_lab::available() {
        return;
    }
    for speaker in [Speaker::Vrrpd, Speaker::Keepalived] {
        let j = a_router_joins(speaker);
        eprintln!(
            "{}: a peer added on both routers, then the third started: {} attempts, {} \
             unanswered, {} moves, b or c held the VIP: {}",
            speaker.name(),
            j.attempts,
            j.unanswered,
            j.moves,
            j.others_held
        );
        assert!(
            j.attempts >= 5,
            "{}: {} attempts",
            speaker.name(),
            j.attempts
        );
        assert_eq!(
            (j.unanswered, j.moves, j.others_held),
            (0, 0, false),
            "{}",
            speaker.name()
        );
    }
}

/// Multicast VRRPv3, 1 s adverts, with the VIPs `vips` (the first is VIP).
fn multicast(priority: u8, vips: &[&str]) -> String {
    let vips: String = vips.iter().map(|v| format!("        {v}/32\n")).collect();
    format!(
        "global_defs {{\n    vrrp_version 3\n}}\nvrrp_instance VI_1 {{\n    interface eth0\n    \
         virtual_router_id 72\n    priority {priority}\n    advert_int 1\n    \
         virtual_ipaddress {{\n{vips}    }}\n}}\n"
    )
}

const REMOVED: &str = "192.0.2.212";
const ADDED: &str = "192.0.2.213";

#[test]
// One scenario read top to bottom: the VIPs before, the reload, what the client and the wire saw.
#[allow(clippy::too_many_lines)]
fn vips_added_by_sighup_are_announced_and_removed_ones_withdrawn() {
    if !ipi_lab::available() || !ipi_lab::tool("tshark", "tshark") {
        return;
    }
    let mut lab = Lab::new().unwrap();
    let (a, b, client, _answer) = support::two_routers(&mut lab);
    let ra = start(&a, Speaker::Vrrpd, &multicast(150, &[VIP, REMOVED]));
    let rb = start(&b, Speaker::Vrrpd, &multicast(100, &[VIP, REMOVED]));
    let all = [&ra, &rb];
    until("a master of both", Duration::from_secs(15), &all, || {
        holds(&a, VIP) && holds(&a, REMOVED) && !holds(&b, VIP)
    });
    until("the client at a", Duration::from_secs(3), &all, || {
        answers(&client, ip(REMOVED)).as_deref() == Some("a")
    });
    let before = settled(&a, Speaker::Vrrpd);
    let seen = connections(&client, ip(VIP));
    until("the first attempt", Duration::from_secs(3), &all, || {
        seen.count() > 0
    });
    let wire = Wire::start(&lab, "reload");
    let sighup = wall_clock();
    let at = Instant::now();
    reload(&ra, &multicast(150, &[VIP, ADDED]));
    reload(&rb, &multicast(100, &[VIP, ADDED]));
    // The added VIP reaches the client within a second: the gratuitous ARPs told it where.
    let took = until("the added VIP at a", Duration::from_secs(1), &all, || {
        answers(&client, ip(ADDED)).as_deref() == Some("a")
    });
    eprintln!("the added VIP answered by a {took:?} after SIGHUP");
    until(
        "the removed VIP gone from a",
        Duration::from_secs(1),
        &all,
        || !holds(&a, REMOVED),
    );
    std::thread::sleep(Duration::from_secs(2));
    let wire = wire.stop();
    let seen = seen.stop();
    // One burst of garp_master_repeat (5) for the added VIP from a, within a second of SIGHUP.
    let first = wire.garp_burst(ip(ADDED), &support::mac(&a), sighup, 5);
    eprintln!(
        "the first gratuitous ARP for {ADDED} {:?} after SIGHUP",
        first.saturating_sub(sighup)
    );
    // a's adverts after the reload carry the new list.
    let a_ip = a.ipv4().to_string();
    let last = wire.adverts_from(&a_ip).last().unwrap();
    let mut listed = last.addresses.clone();
    listed.sort();
    assert_eq!(listed, [VIP, ADDED], "{wire}");
    // Nobody answers for the removed VIP, nobody else holds either, b stayed silent.
    assert_eq!(answers(&client, ip(REMOVED)), None);
    assert!(!holds(&b, REMOVED) && !holds(&b, ADDED) && !holds(&b, VIP));
    let b_ip = b.ipv4().to_string();
    assert_eq!(wire.adverts_from(&b_ip).count(), 0, "{wire}");
    // The VIP that stayed was answered by a throughout, and a never changed state.
    assert!(
        seen.iter().all(|(_, who)| who.as_deref() == Some("a")),
        "{:?}",
        seen.iter()
            .map(|(t, w)| (t.duration_since(at), w))
            .collect::<Vec<_>>()
    );
    assert_eq!(status(&a)["instances"][0]["transitions"], before);
    assert_eq!(status(&b)["instances"][0]["state"], "BACKUP");
}

#[test]
// One scenario read top to bottom: a lowered below b (a move), then b raised (none).
#[allow(clippy::too_many_lines)]
fn a_priority_lowered_below_the_backup_moves_the_vip_and_raised_on_the_master_does_not() {
    if !ipi_lab::available() {
        return;
    }
    let mut lab = Lab::new().unwrap();
    let (a, b, client, _answer) = support::two_routers(&mut lab);
    let ra = start(&a, Speaker::Vrrpd, &multicast(150, &[VIP]));
    let rb = start(&b, Speaker::Vrrpd, &multicast(100, &[VIP]));
    let all = [&ra, &rb];
    until("a master", Duration::from_secs(15), &all, || {
        holds(&a, VIP) && !holds(&b, VIP) && answers(&client, ip(VIP)).as_deref() == Some("a")
    });
    // a at 50, below b's 100: b (preempting) discards a's adverts and takes over when its
    // Master_Down_Timer fires (RFC 5798 6.4.2): 3 * 1 s + (256 - 100) / 256 s = 3.61 s from
    // a's last advert at 150, the one before the reload at most.
    reload(&ra, &multicast(50, &[VIP]));
    let took = until("the client at b", Duration::from_secs(6), &all, || {
        answers(&client, ip(VIP)).as_deref() == Some("b")
    });
    eprintln!("a lowered to 50: the client reached b after {took:?}");
    // b's Master_Down_Timer runs from a's last advert at 150, one interval before the reload
    // at most (plus up to 1.1 s when that advert was late on a loaded box): so not before
    // 3.61 - 1 - 1.1 = 1.5 s (a restart moves it at once, with priority 0, RFC 5798 6.4.3:
    // 0.68 s seen), and not after 3.61 s plus 1.5 s for a loaded box and the client's connect.
    assert!(
        took >= Duration::from_millis(1500),
        "{took:?}\n{}",
        logs(&all)
    );
    assert!(
        took <= Duration::from_millis(3610 + 1500),
        "{took:?}\n{}",
        logs(&all)
    );
    until("a backup", Duration::from_secs(3), &all, || !holds(&a, VIP));
    assert_eq!(status(&a)["instances"][0]["priority"], 50);
    // b raised to 200 while master: nothing moves.
    let before = settled(&b, Speaker::Vrrpd);
    let seen = connections(&client, ip(VIP));
    until("the first attempt", Duration::from_secs(3), &all, || {
        seen.count() > 0
    });
    reload(&rb, &multicast(200, &[VIP]));
    until("b at 200", Duration::from_secs(3), &all, || {
        status(&b)["instances"][0]["priority"] == 200
    });
    std::thread::sleep(Duration::from_secs(2));
    let seen = seen.stop();
    assert!(
        seen.iter().all(|(_, who)| who.as_deref() == Some("b")),
        "{seen:?}\n{}",
        logs(&all)
    );
    assert_eq!(status(&b)["instances"][0]["transitions"], before);
    assert!(!holds(&a, VIP));
}

#[test]
fn a_reload_keeps_a_track_script_running_on_its_rhythm_with_its_last_result() {
    if !ipi_lab::available() {
        return;
    }
    let mut lab = Lab::new().unwrap();
    let a = lab.host("a").unwrap();
    let runs = a.dir().join("runs");
    let script = a.dir().join("chk.sh");
    std::fs::write(
        &script,
        format!("#!/bin/sh\ndate +%s.%N >> {}\n", runs.display()),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let conf = |priority: u8| {
        format!(
            "vrrp_script chk {{\n    script \"{}\"\n    interval 2\n    weight 10\n}}\n{}",
            script.display(),
            multicast(priority, &[VIP]).replace(
                "    advert_int 1\n",
                "    advert_int 1\n    track_script {\n        chk\n    }\n"
            )
        )
    };
    let ra = start(&a, Speaker::Vrrpd, &conf(100));
    let all = [&ra];
    let times = || -> Vec<f64> {
        std::fs::read_to_string(&runs)
            .unwrap_or_default()
            .lines()
            .map(|l| l.parse().unwrap())
            .collect()
    };
    until(
        "two runs and priority 110",
        Duration::from_secs(10),
        &all,
        || times().len() >= 2 && status(&a)["instances"][0]["priority"] == 110,
    );
    // Just after a run: a runner started again would run at once, 2 s early.
    let n = times().len();
    until("the next run", Duration::from_secs(3), &all, || {
        times().len() > n
    });
    std::thread::sleep(Duration::from_millis(300));
    reload(&ra, &conf(90));
    until("base priority 90", Duration::from_secs(3), &all, || {
        status(&a)["instances"][0]["base_priority"] == 90
    });
    // The script's OK is kept: 90 + 10 at once, not 90 until its next run.
    assert_eq!(status(&a)["instances"][0]["priority"], 100);
    let m = times().len();
    until("two more runs", Duration::from_secs(6), &all, || {
        times().len() >= m + 2
    });
    let t = times();
    let gaps: Vec<f64> = t.windows(2).map(|w| w[1] - w[0]).collect();
    eprintln!("gaps between the script's runs across the reload: {gaps:?}");
    // interval 2 s: no gap under 1.8 s (a run started again by the reload would make one).
    assert!(gaps.iter().all(|g| *g >= 1.8), "{gaps:?}\n{}", logs(&all));
}

#[test]
fn a_file_that_parses_but_cannot_run_here_is_refused_and_nothing_changes() {
    if !ipi_lab::available() {
        return;
    }
    let mut lab = Lab::new().unwrap();
    let (a, b, client, _answer) = support::two_routers(&mut lab);
    let ra = start(&a, Speaker::Vrrpd, &multicast(150, &[VIP]));
    let rb = start(&b, Speaker::Vrrpd, &multicast(100, &[VIP]));
    let all = [&ra, &rb];
    until("a master", Duration::from_secs(15), &all, || {
        holds(&a, VIP) && !holds(&b, VIP)
    });
    let before = settled(&a, Speaker::Vrrpd);
    let seen = connections(&client, ip(VIP));
    until("the first attempt", Duration::from_secs(3), &all, || {
        seen.count() > 0
    });
    // It parses (check-config has no way to know the users of this host), but the scripts'
    // user does not exist here: starting it fails, so the running configuration stays, whole.
    let unknown_user = multicast(150, &[VIP, ADDED]).replacen(
        "vrrp_version 3\n",
        "vrrp_version 3\n    script_user no-such-user-ipi-net\n",
        1,
    );
    let at = Instant::now();
    reload(&ra, &unknown_user);
    // Longer than b's Master_Down_Interval (3 x 1 s + Skew_Time): a master that stopped
    // advertising would have lost the VIP to b by then.
    std::thread::sleep(Duration::from_secs(5));
    let seen = seen.stop();
    assert!(
        seen.iter().all(|(_, who)| who.as_deref() == Some("a")),
        "{:?}\n{}",
        seen.iter()
            .map(|(t, w)| (t.duration_since(at), w))
            .collect::<Vec<_>>(),
        logs(&all)
    );
    assert!(!holds(&b, VIP) && !holds(&a, ADDED), "{}", logs(&all));
    assert_eq!(status(&a)["instances"][0]["transitions"], before);
    assert!(ra.daemon.log().contains("reload refused"), "{}", logs(&all));
    // And it still takes a good file.
    reload(&ra, &multicast(150, &[VIP, ADDED]));
    until("the added VIP at a", Duration::from_secs(3), &all, || {
        answers(&client, ip(ADDED)).as_deref() == Some("a")
    });
}
