//! What keepalived's AH buys against a host on the LAN that records the group's adverts and
//! sends them again: the master dies, the recorder keeps replaying its last adverts, and the
//! backup must take over anyway, judged by a client connecting through the VIP. With PASS the
//! same replay (the positive control) keeps the backup silent, so the replayed datagrams were
//! well formed and the attack is real; with AH the backup refuses them (`replay`) and serves
//! the client within its Master_Down_Interval. A forged advert with a higher priority and a
//! made-up ICV moves nothing either (`password`).

// Helpers outside #[test] functions unwrap too: a panic there is a test failure.
#![allow(clippy::unwrap_used)]

use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use ipi_lab::{Host, Lab};
use nix::sys::signal::Signal;
use support::{answers, state, status, until, vrrpd};

#[allow(
    dead_code,
    reason = "each test binary uses a part of the shared helpers"
)]
mod support;

const VIP: &str = "192.0.2.201";

/// RFC 3768 6.1, priority 100, 1 s: 3 * 1 + (256 - 100) / 256 = 3.609 s.
const MASTER_DOWN: Duration = Duration::from_millis(3609);

/// A VRRPv2 instance with 1 s adverts and `auth` (`AH` or `PASS`).
fn instance(priority: u8, auth: &str) -> String {
    format!(
        "vrrp_instance VI_1 {{\n    interface eth0\n    virtual_router_id 61\n    \
         priority {priority}\n    advert_int 1\n    authentication {{\n        auth_type {auth}\n        \
         auth_pass s3cret\n    }}\n    virtual_ipaddress {{\n        {VIP}/32\n    }}\n}}\n"
    )
}

/// Sends whole IPv4 datagrams (their IP header as recorded, the sender's address included)
/// from inside `host`'s namespace, `gap` apart: what a recorder on the LAN can replay.
fn replay(host: &Host, datagrams: &[Vec<u8>], gap: Duration) {
    let netns = format!("/run/netns/{}", host.netns());
    let datagrams = datagrams.to_vec();
    std::thread::spawn(move || {
        let ns = std::fs::File::open(&netns).unwrap();
        nix::sched::setns(ns, nix::sched::CloneFlags::CLONE_NEWNET).unwrap();
        let socket = socket2::Socket::new(
            socket2::Domain::IPV4,
            socket2::Type::RAW,
            Some(socket2::Protocol::from(255)),
        )
        .unwrap();
        socket.bind_device(Some(b"eth0")).unwrap();
        for d in datagrams {
            let dst = IpAddr::from([d[16], d[17], d[18], d[19]]);
            socket.send_to(&d, &SocketAddr::new(dst, 0).into()).unwrap();
            std::thread::sleep(gap);
        }
    })
    .join()
    .unwrap();
}

/// The instance's receive-check counter `reason` on `host`.
fn invalid(host: &Host, reason: &str) -> u64 {
    status(host)["instances"][0]["invalid"][reason]
        .as_u64()
        .unwrap_or(0)
}

/// a (150) master, b (100) backup; x records a's adverts for a few seconds, then a is
/// SIGKILLed and x replays what it recorded for 8 s. How long until the client was answered
/// through the VIP by b, if it was within those 8 s, and the replays b counted.
fn after_the_master_dies(auth: &str) -> (Option<Duration>, u64) {
    let mut lab = Lab::new().unwrap();
    let (a, b, client, _answer) = support::two_routers(&mut lab);
    let x = lab.host("x").unwrap();
    let vip: IpAddr = VIP.parse().unwrap();
    let da = vrrpd(&a, &instance(150, auth));
    let db = vrrpd(&b, &instance(100, auth));
    until(
        "a serves the VIP",
        Duration::from_secs(15),
        &[&da, &db],
        || answers(&client, vip).as_deref() == Some("a"),
    );
    let protocol = if auth == "AH" { 51 } else { 112 };
    let capture = lab
        .capture(&format!("recorded-{auth}"), &format!("ip proto {protocol}"))
        .unwrap();
    std::thread::sleep(Duration::from_millis(4500));
    let file = capture.stop().unwrap();
    let recorded: Vec<Vec<u8>> = ipi_core::capture::read(&file)
        .unwrap()
        .iter()
        .map(|f| f.ip().unwrap().to_vec())
        .filter(|d| d[12..16] == a.ipv4().octets())
        .collect();
    assert!(
        recorded.len() >= 3,
        "{} of a's adverts recorded",
        recorded.len()
    );

    da.signal(Signal::SIGKILL).unwrap();
    let killed = Instant::now();
    let replayer = {
        let x = x.clone();
        // The recorded adverts over and over, 0.5 s apart (more often than a sent them), for
        // 10 s: longer than the 8 s watched.
        let again: Vec<Vec<u8>> = recorded.iter().cycle().take(20).cloned().collect();
        std::thread::spawn(move || replay(&x, &again, Duration::from_millis(500)))
    };
    let mut served = None;
    while killed.elapsed() < Duration::from_secs(8) {
        if answers(&client, vip).as_deref() == Some("b") {
            served = Some(killed.elapsed());
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    replayer.join().unwrap();
    eprintln!(
        "{auth}: {} recorded adverts of a replayed 20 times; the client served by b after \
         {served:?}; b: {}",
        recorded.len(),
        status(&b)["instances"][0]["invalid"]
    );
    let replays = invalid(&b, "replay");
    drop(db);
    (served, replays)
}

#[test]
fn a_replayed_advert_of_a_dead_master_holds_a_pass_backup_back_and_not_an_ah_one() {
    if !ipi_lab::available() {
        return;
    }
    // The control: under PASS the recorded adverts are as good as new, and b waits.
    let (served, _) = after_the_master_dies("PASS");
    assert_eq!(served, None, "the PASS replay did not hold b back");

    let (served, replays) = after_the_master_dies("AH");
    let served = served.expect("under AH the client was not served by b within 8 s");
    // Master_Down_Interval after a's last advert, which came up to one interval before the
    // kill, and the client's connection attempts on top.
    assert!(
        served <= MASTER_DOWN + Duration::from_millis(1500),
        "b served the client {served:?} after a died"
    );
    assert!(replays >= 2, "b counted {replays} replays");
}

#[test]
fn a_forged_ah_advert_with_a_higher_priority_moves_nothing() {
    if !ipi_lab::available() {
        return;
    }
    let mut lab = Lab::new().unwrap();
    let (a, b, client, _answer) = support::two_routers(&mut lab);
    let x = lab.host("x").unwrap();
    let vip: IpAddr = VIP.parse().unwrap();
    let da = vrrpd(&a, &instance(150, "AH"));
    let db = vrrpd(&b, &instance(100, "AH"));
    until(
        "a serves the VIP",
        Duration::from_secs(15),
        &[&da, &db],
        || answers(&client, vip).as_deref() == Some("a"),
    );
    // x's own advert at priority 254, sealed with a key it guessed, numbered far ahead.
    let repr = ipi_core::vrrp::Repr {
        version: ipi_core::vrrp::Version::V2,
        vrid: 61,
        priority: 254,
        advert_int: 100,
        auth: ipi_core::vrrp::Auth::Ah,
        addresses: vec![vip],
    };
    let group = std::net::Ipv4Addr::new(224, 0, 0, 18);
    let message = repr
        .to_bytes(
            IpAddr::V4(x.ipv4()),
            IpAddr::V4(group),
            ipi_core::vrrp::ChecksumMode::PseudoHeader,
        )
        .unwrap();
    let forged: Vec<Vec<u8>> = (0..10)
        .map(|n| {
            let seal = ipi_core::vrrp::ah::Seal {
                src: x.ipv4(),
                dst: group,
                id: n + 1,
                seq: 1_000_000 + u32::from(n),
                unicast: false,
            };
            let key = ipi_core::vrrp::ah::Key::from_password("guessed");
            ipi_core::vrrp::ah::seal(&message, &seal, &key).unwrap()
        })
        .collect();
    replay(&x, &forged, Duration::from_millis(100));
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(answers(&client, vip).as_deref(), Some("a"));
    assert_eq!(state(&a), "MASTER");
    assert!(invalid(&a, "password") >= 10, "{}", status(&a));
    assert!(invalid(&b, "password") >= 10, "{}", status(&b));
}
