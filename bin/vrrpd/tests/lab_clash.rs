//! A foreign router on our VRID, in the lab: vrrpd (VI_1, VRID 60, VIP .200) and, on another
//! host, the real keepalived on the same VRID with another VIP (.201), as a second cluster
//! whose name gives the same VRID would be. vrrpd names it once in its log, shows it in
//! `vrrpd status`, keeps counting its adverts as invalid `addresses`, and keeps its VIP; `vrrpd
//! watch -f` marks its adverts; `vrrpd survey` from a third host lists VRID 60 with both
//! routers, says a cluster name whose API VRID is 60 is taken (exit 1) with free alternatives,
//! and that a name whose pair avoids 60 is free (exit 0).

// Helpers outside #[test] functions unwrap too: a panic there is a test failure.
#![allow(clippy::unwrap_used)]

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use ipi_core::vrid::Vrids;
use ipi_lab::{wait_for, Daemon, Host, Lab};
use ipi_net_tests::vrrp::{Router, Speaker};
use support::{answers, status, Responder, Wire};

#[allow(
    dead_code,
    reason = "each test binary uses a part of the shared helpers"
)]
mod support;

const VIP: &str = "192.0.2.200";
const FOREIGN_VIP: &str = "192.0.2.201";
const VRID: u8 = 60;
const POLL: Duration = Duration::from_millis(20);
/// A second group on keepalived's side, over IPv6, for the survey to find.
const IPV6_INSTANCE: &str = "vrrp_instance OTHER6 {\n    interface eth0\n    \
    virtual_router_id 70\n    priority 90\n    advert_int 0.1\n    virtual_ipaddress {\n        \
    2001:db8::70/128\n    }\n}\n";

/// VRRPv3, one VIP, for vrrpd and keepalived alike. vrrpd advertises every 0.5 s, keepalived
/// every 0.1 s: at the same rate keepalived's master fell silent after three adverts (each of
/// vrrpd's, which it rejects, seems to push its advert timer back).
fn conf(instance: &str, priority: u8, vip: &str, advert_int: &str) -> String {
    format!(
        "global_defs {{\n    vrrp_version 3\n}}\nvrrp_instance {instance} {{\n    \
         interface eth0\n    virtual_router_id {VRID}\n    priority {priority}\n    \
         advert_int {advert_int}\n    virtual_ipaddress {{\n        {vip}/32\n    }}\n}}\n"
    )
}

fn vrrpd(host: &Host, conf_text: &str) -> (Daemon, PathBuf) {
    (support::vrrpd(host, conf_text), support::conf_path(host))
}

/// `vrrpd status` as text.
fn status_text(host: &Host) -> Option<String> {
    let state = support::state_dir(host);
    let args = vec!["status", "--state-dir", state.to_str().unwrap()];
    let out = host.run(env!("CARGO_BIN_EXE_vrrpd"), args).unwrap();
    out.success.then_some(out.stdout)
}

/// The first name of the form `{prefix}{n}` whose VRIDs satisfy `ok`.
fn cluster_name(prefix: &str, ok: impl Fn(Vrids) -> bool) -> String {
    (0..100_000)
        .map(|n| format!("{prefix}{n}"))
        .find(|name| ok(Vrids::for_cluster(name)))
        .unwrap()
}

#[test]
// One scenario read top to bottom: the clash from the log, status, watch and survey.
#[allow(clippy::too_many_lines)]
fn a_foreign_router_on_our_vrid_is_named_once_and_surveyed() {
    if !ipi_lab::available()
        || !ipi_lab::tool("keepalived", "keepalived")
        || !ipi_lab::tool("tshark", "tshark")
    {
        return;
    }
    let mut lab = Lab::new().unwrap();
    let (a, k, client) = (
        lab.host("a").unwrap(),
        lab.host("k").unwrap(),
        lab.host("client").unwrap(),
    );
    let _answer = [&a, &k].map(Responder::start);
    let vip: IpAddr = VIP.parse().unwrap();
    let foreign_vip: IpAddr = FOREIGN_VIP.parse().unwrap();
    let (da, conf_path) = vrrpd(&a, &conf("VI_1", 100, VIP, "0.5"));
    wait_for(Duration::from_secs(8), POLL, || {
        status(&a)["instances"][0]["state"] == "MASTER"
    })
    .unwrap_or_else(|| panic!("a never became master\n{}", da.log()));

    // The second "cluster": keepalived on the same VRID with its own VIP.
    let kk = Router::start_with(
        &k,
        Speaker::Keepalived,
        &format!(
            "{}{}",
            conf("OTHER", 100, FOREIGN_VIP, "0.1"),
            IPV6_INSTANCE
        ),
        100,
        None,
    )
    .unwrap();
    let (a_ip, k_ip) = (a.ipv4().to_string(), k.ipv4().to_string());
    let took = wait_for(Duration::from_secs(5), POLL, || {
        let s = status(&a);
        let f = &s["instances"][0]["foreign_routers"][0];
        f["source"] == k_ip.as_str()
            && f["vrid"] == VRID
            && f["interface"] == "eth0"
            && f["reason"] == "addresses"
            && f["addresses"][0] == FOREIGN_VIP
            && f["version"] == 3
            && s["instances"][0]["clashes"] == 1
    })
    .unwrap_or_else(|| {
        panic!(
            "a's status never named k\n{}\n{}\n{}",
            status(&a),
            da.log(),
            kk.daemon.log()
        )
    });
    eprintln!("a named the foreign router {took:?} after keepalived started");

    // Two seconds later (keepalived advertised several times): still one warning, every
    // advert counted; and a master all along, judged on the wire: its adverts (0.5 s) without
    // a gap a step down would leave, and no announcement of its VIP, which taking it back
    // after one would send.
    let wire = Wire::start(&lab, "clash");
    std::thread::sleep(Duration::from_secs(2));
    let seen = wire.stop();
    let ours: Vec<Duration> = seen
        .adverts_from(&a_ip)
        .filter(|x| x.vrid == VRID && x.priority == 100)
        .map(|x| x.at)
        .collect();
    assert!(ours.len() >= 3, "a's adverts:\n{seen}");
    let gap = ours.windows(2).map(|w| w[1] - w[0]).max().unwrap();
    assert!(
        gap < Duration::from_millis(1100),
        "a's adverts paused {gap:?}:\n{seen}"
    );
    assert!(
        seen.garps(vip).is_empty(),
        "a announced its VIP again:\n{seen}"
    );
    let s = status(&a);
    let i = &s["instances"][0];
    let adverts = i["foreign_routers"][0]["adverts"].as_u64().unwrap();
    let invalid = i["invalid"]["addresses"].as_u64().unwrap();
    assert!(adverts >= 10, "{s}\n{}", kk.daemon.log());
    assert!(invalid >= adverts, "{s}");
    assert_eq!(i["clashes"], 1, "{s}");
    assert_eq!(i["state"], "MASTER", "the clash moved nothing: {s}");
    let log = da.log();
    let warnings: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("is outside this group"))
        .collect();
    assert_eq!(warnings.len(), 1, "one warning per foreign router:\n{log}");
    let w = warnings[0];
    for part in [
        "VI_1",
        "VRID 60",
        "eth0",
        &k_ip,
        "addresses 192.0.2.201",
        "its addresses 192.0.2.201 differ from ours 192.0.2.200",
    ] {
        assert!(w.contains(part), "{part:?} missing from {w}");
    }
    // keepalived, on its side, logs every one of vrrpd's adverts ("(OTHER) ip address
    // associated with VRID 60 not present in MASTER advert: 192.0.2.201").
    let klog = kk.daemon.log();
    let k_lines = klog
        .lines()
        .filter(|l| l.contains("associated with VRID 60 not present"))
        .count();
    let ours_sent = i["adverts_sent"].as_u64().unwrap();
    eprintln!(
        "log lines about the clash: vrrpd 1 (for {adverts} foreign adverts), keepalived {k_lines} \
         (vrrpd had sent {ours_sent} adverts)"
    );
    assert!(k_lines >= 1, "keepalived names the clash too\n{klog}");
    let text = status_text(&a).unwrap();
    assert!(
        text.contains(&format!("FOREIGN router {k_ip} on vrid 60 (eth0)")),
        "{text}"
    );

    // What a client sees: each side keeps its own VIP.
    assert_eq!(answers(&client, vip).as_deref(), Some("a"));
    assert_eq!(answers(&client, foreign_vip).as_deref(), Some("k"));

    // `vrrpd watch -f` on the client marks k's adverts, not a's.
    let out = client
        .run(
            "timeout",
            [
                "2",
                env!("CARGO_BIN_EXE_vrrpd"),
                "watch",
                "--interface",
                "eth0",
                "-f",
                conf_path.to_str().unwrap(),
            ],
        )
        .unwrap();
    assert_eq!(
        out.code,
        Some(124),
        "watch ran until timeout: {}",
        out.stderr
    );
    let from = |ip: &str| {
        let prefix = format!(" {ip} > 224.0.0.18 VRRPv3 vrid 60");
        out.stdout
            .lines()
            .filter(|l| l.contains(&prefix))
            .collect::<Vec<_>>()
    };
    let (ours, theirs) = (from(&a_ip), from(&k_ip));
    assert!(ours.len() >= 2 && theirs.len() >= 5, "{}", out.stdout);
    assert!(
        ours.iter().all(|l| !l.contains("FOREIGN")),
        "{}",
        out.stdout
    );
    assert!(
        theirs.iter().all(|l| l
            .ends_with("FOREIGN to VI_1: its addresses 192.0.2.201 differ from ours 192.0.2.200")),
        "{}",
        out.stdout
    );

    // `vrrpd survey` from the client: a cluster whose API VRID is 60 clashes.
    let taken = cluster_name("clash", |v| v.api == VRID);
    let survey = |name: &str, json: bool| {
        let mut args = vec!["survey", "--interface", "eth0", "--for", "1500ms"];
        args.extend(["--cluster-name", name]);
        if json {
            args.push("--json");
        }
        client.run(env!("CARGO_BIN_EXE_vrrpd"), args).unwrap()
    };
    let out = survey(&taken, false);
    assert_eq!(out.code, Some(1), "{}\n{}", out.stdout, out.stderr);
    let ingress = Vrids::for_cluster(&taken).ingress;
    assert!(
        out.stdout.contains(&format!(
            "cluster {taken}: API vrid 60 TAKEN by {a_ip},{k_ip}, Ingress vrid {ingress} free"
        )),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("vrid 60:\n"), "{}", out.stdout);
    // The IPv6 group too, from k's link-local address (RFC 5798 5.1.2.1).
    assert!(
        out.stdout.contains(&format!(
            "vrid 70:\n  {} VRRPv3 priority 90 interval 10 cs addresses 2001:db8::70 (",
            k.link_local()
        )),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains(&format!(
            "  {k_ip} VRRPv3 priority 100 interval 10 cs addresses 192.0.2.201"
        )),
        "{}",
        out.stdout
    );
    let out = survey(&taken, true);
    assert_eq!(out.code, Some(1));
    let j: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let alternatives = j["cluster"]["alternatives"].as_array().unwrap();
    assert_eq!(alternatives.len(), 3, "{j}");
    for alt in alternatives {
        let v = Vrids::for_cluster(alt["name"].as_str().unwrap());
        assert!(v.api != VRID && v.ingress != VRID, "{alt}");
        assert_eq!(
            (alt["api"].as_u64(), alt["ingress"].as_u64()),
            (Some(v.api.into()), Some(v.ingress.into()))
        );
    }
    // A name whose pair avoids 60 is free.
    let free = cluster_name("free", |v| v.api != VRID && v.ingress != VRID);
    let out = survey(&free, false);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains(&format!("cluster {free}: API vrid")),
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains("TAKEN"), "{}", out.stdout);
}
