//! vrrpd and the real keepalived in one VRRP group, in the lab: the higher priority is master
//! whichever program it is, and the other takes over within its Master_Down_Interval when the
//! master is cut off (measured on the wire), in VRRPv2 with PASS authentication and in VRRPv3
//! over IPv4 and IPv6.

// Helpers outside #[test] functions unwrap too: a panic there is a test failure.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::time::Duration;

use ipi_net_tests::failover::{self, late, Fault, Outcome, CLIENT_COST, LATE};
use ipi_net_tests::vrrp::{dissect, Group, Speaker};

fn scenario(group: &Group, speakers: [Speaker; 2]) -> Option<Outcome> {
    run(group, speakers, Fault::Partition)
}

fn run(group: &Group, speakers: [Speaker; 2], fault: Fault) -> Option<Outcome> {
    if !ipi_lab::available() || !ipi_lab::tool("tshark", "tshark") {
        return None;
    }
    let vrrpd = PathBuf::from(env!("CARGO_BIN_EXE_vrrpd"));
    let outcome = failover::run(group, speakers, fault, Some(&vrrpd), &mut |at, line| {
        eprintln!("{:7.3} {line}", at.as_secs_f64());
    })
    .unwrap_or_else(|e| panic!("{e}"));
    Some(outcome)
}

/// What every advert of a group must say, written out (tshark's spelling).
struct Expect {
    version: &'static str,
    vrid: &'static str,
    /// The advertisement interval: seconds in v2, centiseconds in v3.
    interval: &'static str,
    v4: Option<&'static str>,
    v6: Option<&'static str>,
    /// vrrp.auth_type and vrrp.auth_string (v2 PASS: 1, the password).
    auth: Option<(&'static str, &'static str)>,
    /// The backup's Master_Down_Interval, from RFC 3768 / RFC 5798 6.1 by hand.
    master_down: Duration,
    /// The advertisement interval as a duration.
    advert: Duration,
}

const V2_PASS: Expect = Expect {
    version: "2",
    vrid: "51",
    interval: "1",
    v4: Some("192.0.2.100"),
    v6: None,
    auth: Some(("1", "ipi_vip")),
    // RFC 3768 6.1, priority 100, 1 s: Skew_Time = (256 - 100) / 256 = 0.609 s;
    // Master_Down_Interval = 3 * 1 + 0.609 = 3.609 s (vrrpd keeps centiseconds: 3.60 s).
    master_down: Duration::from_millis(3600),
    advert: Duration::from_secs(1),
};

const V2_AH: Expect = Expect {
    vrid: "54",
    // Auth Type 2 (RFC 2338's IP Authentication Header): no password in the advert.
    auth: Some(("2", "")),
    ..V2_PASS
};

const V2_PASS_UNICAST: Expect = Expect {
    vrid: "53",
    ..V2_PASS
};

const V3_DUAL: Expect = Expect {
    version: "3",
    vrid: "52",
    interval: "50",
    v4: Some("192.0.2.101"),
    v6: Some("2001:db8::101"),
    auth: None,
    // RFC 5798 6.1, priority 100, 50 cs: Skew_Time = ((256 - 100) * 50) / 256 = 30.47 cs;
    // Master_Down_Interval = 3 * 50 + 30.47 = 180.47 cs (vrrpd: 30 cs, 1.80 s).
    master_down: Duration::from_millis(1800),
    advert: Duration::from_millis(500),
};

fn check(o: &Outcome, expect: &Expect) {
    // The higher priority (a, 150) is master, the other takes over, a preempts back.
    assert_eq!(o.first_master, "a");
    assert_eq!(o.final_master, "a");
    // On the wire the backup stayed silent for its Master_Down_Interval after the master's
    // last advert: never less (10 ms for centiseconds), not much more.
    let silence = o.silence.unwrap();
    assert!(
        silence + Duration::from_millis(10) >= expect.master_down,
        "silence {silence:?} < Master_Down_Interval {:?}",
        expect.master_down
    );
    assert!(
        silence <= expect.master_down + late(expect.advert),
        "silence {silence:?}"
    );
    // The client follows: the new master's gratuitous ARP / unsolicited NA moved it.
    let bound = expect.master_down + late(expect.advert) + CLIENT_COST;
    o.client_within(bound).unwrap();
    check_on_the_wire(o, expect);
}

/// Every advert of the run as tshark dissects it (Wireshark's decoder, not ipi-core's):
/// version, VRID, interval, authentication, the VIP, a good checksum; priorities only 150,
/// 100 and 0, both routers heard. keepalived is the other router: had it refused vrrpd's
/// adverts, both would have held the VIPs and the run would have found no single master.
fn check_on_the_wire(o: &Outcome, expect: &Expect) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("adverts.pcap");
    std::fs::write(&file, &o.pcap).unwrap();
    let fields = [
        "vrrp.version",
        "vrrp.virt_rtr_id",
        "vrrp.prio",
        "vrrp.adver_int",
        "vrrp.auth_type",
        "vrrp.auth_string",
        "vrrp.ip_addr",
        "vrrp.ipv6_addr",
        "vrrp.checksum.status",
        "ip.src",
        "ipv6.src",
        "vrrp.short_adver_int",
    ];
    let rows = dissect(&file, "vrrp", &fields).unwrap();
    assert_eq!(
        rows.len(),
        o.adverts.len(),
        "tshark and the capture disagree"
    );
    let mut sources = std::collections::BTreeSet::new();
    let mut priorities = std::collections::BTreeSet::new();
    for r in &rows {
        let v6 = !r[10].is_empty();
        assert_eq!(r[0], expect.version, "{r:?}");
        assert_eq!(r[1], expect.vrid, "{r:?}");
        // v2's 8-bit interval is vrrp.adver_int, v3's 12-bit one vrrp.short_adver_int.
        assert_eq!(format!("{}{}", r[3], r[11]), expect.interval, "{r:?}");
        let (auth_type, auth_string) = expect.auth.filter(|_| !v6).unwrap_or(("", ""));
        assert_eq!(
            (r[4].as_str(), r[5].as_str()),
            (auth_type, auth_string),
            "{r:?}"
        );
        let (v4, v6_vip) = if v6 {
            ("", expect.v6.unwrap())
        } else {
            (expect.v4.unwrap(), "")
        };
        assert_eq!((r[6].as_str(), r[7].as_str()), (v4, v6_vip), "{r:?}");
        // Wireshark: 1 is "Good".
        assert_eq!(r[8], "1", "checksum {r:?}");
        assert!(["150", "100", "0"].contains(&r[2].as_str()), "{r:?}");
        priorities.insert(r[2].clone());
        sources.insert(format!("{}{}", r[9], r[10]));
    }
    assert!(
        priorities.contains("150") && priorities.contains("100"),
        "{priorities:?}"
    );
    let families = usize::from(expect.v4.is_some()) + usize::from(expect.v6.is_some());
    assert_eq!(
        sources.len(),
        2 * families,
        "both routers, each family: {sources:?}"
    );
}

#[test]
fn v2_pass_vrrpd_master_keepalived_backup() {
    let Some(o) = scenario(&Group::v2_pass(), [Speaker::Vrrpd, Speaker::Keepalived]) else {
        return;
    };
    check(&o, &V2_PASS);
}

#[test]
fn v2_pass_keepalived_master_vrrpd_backup() {
    let Some(o) = scenario(&Group::v2_pass(), [Speaker::Keepalived, Speaker::Vrrpd]) else {
        return;
    };
    check(&o, &V2_PASS);
}

/// keepalived's IPsec-AH, both ways: had either program refused the other's AH header (its
/// ICV, its SPI or its sequence numbers), both would have held the VIP and no single master
/// would have been found; after the partition heals, the two counters that ran apart meet
/// again and the higher priority takes the VIP back.
#[test]
fn v2_ah_vrrpd_master_keepalived_backup() {
    let Some(o) = scenario(&Group::v2_ah(), [Speaker::Vrrpd, Speaker::Keepalived]) else {
        return;
    };
    check(&o, &V2_AH);
    check_ah(&o);
}

#[test]
fn v2_ah_keepalived_master_vrrpd_backup() {
    let Some(o) = scenario(&Group::v2_ah(), [Speaker::Keepalived, Speaker::Vrrpd]) else {
        return;
    };
    check(&o, &V2_AH);
    check_ah(&o);
}

/// Every advert of an AH run carries an AH header (protocol 51) whose ICV verifies under the
/// password with ipi-core's HMAC-MD5-96, whichever program sent it, whose SPI is its sender,
/// and whose sequence numbers rise from each sender; tshark agrees on the SPI and sequence.
fn check_ah(o: &Outcome) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("adverts.pcap");
    std::fs::write(&file, &o.pcap).unwrap();
    let key = ipi_core::vrrp::ah::Key::from_password("ipi_vip");
    let mut last: std::collections::BTreeMap<std::net::IpAddr, u32> = Default::default();
    let frames = ipi_core::capture::read(&file).unwrap();
    assert!(frames.len() >= 5, "{} frames", frames.len());
    for f in &frames {
        let raw = ipi_core::vrrp::split_datagram(f.ip().unwrap()).unwrap();
        let ah = raw
            .ah
            .unwrap_or_else(|| panic!("no AH header from {}", raw.src));
        assert!(ah.verify(raw.payload, &key, false), "ICV from {}", raw.src);
        assert_eq!(std::net::IpAddr::V4(ah.spi()), raw.src);
        let before = last.insert(raw.src, ah.seq()).unwrap_or(0);
        assert!(
            ah.seq() > before,
            "{} sent {} after {before}",
            raw.src,
            ah.seq()
        );
    }
    assert_eq!(last.len(), 2, "both routers: {last:?}");
    let rows = dissect(&file, "ah", &["ah.spi", "ah.sequence", "ip.src"]).unwrap();
    assert_eq!(rows.len(), frames.len());
    for r in &rows {
        let spi = u32::from_str_radix(r[0].trim_start_matches("0x"), 16).unwrap();
        assert_eq!(std::net::Ipv4Addr::from(spi).to_string(), r[2], "{r:?}");
    }
}

#[test]
fn v3_ipv4_and_ipv6_vrrpd_master_keepalived_backup() {
    let Some(o) = scenario(&Group::v3_dual(50), [Speaker::Vrrpd, Speaker::Keepalived]) else {
        return;
    };
    check(&o, &V3_DUAL);
}

#[test]
fn v3_ipv4_and_ipv6_keepalived_master_vrrpd_backup() {
    let Some(o) = scenario(&Group::v3_dual(50), [Speaker::Keepalived, Speaker::Vrrpd]) else {
        return;
    };
    check(&o, &V3_DUAL);
}

/// SIGTERM: the master resigns with priority 0 and the backup takes over after its Skew_Time,
/// RFC 3768 6.1: (256 - 100) / 256 = 0.609 s (vrrpd: 0.60 s), not its Master_Down_Interval
/// (3.609 s).
fn check_resign(o: &Outcome) {
    assert_eq!(o.first_master, "a");
    assert_eq!(o.final_master, "a");
    let silence = o.silence.unwrap();
    assert!(
        silence + Duration::from_millis(10) >= Duration::from_millis(600)
            && silence <= Duration::from_millis(609) + LATE,
        "silence {silence:?}"
    );
    o.client_within(Duration::from_millis(609) + LATE + CLIENT_COST)
        .unwrap();
    check_on_the_wire(o, &V2_PASS);
    let rows = dissect_priorities(o);
    assert!(rows.contains(&"0".to_string()), "{rows:?}");
}

fn dissect_priorities(o: &Outcome) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("adverts.pcap");
    std::fs::write(&file, &o.pcap).unwrap();
    dissect(&file, "vrrp", &["vrrp.prio"])
        .unwrap()
        .into_iter()
        .map(|r| r[0].clone())
        .collect()
}

#[test]
fn v2_vrrpd_resigns_to_keepalived() {
    let Some(o) = run(
        &Group::v2_pass(),
        [Speaker::Vrrpd, Speaker::Keepalived],
        Fault::Terminate,
    ) else {
        return;
    };
    check_resign(&o);
}

#[test]
fn v2_keepalived_resigns_to_vrrpd() {
    let Some(o) = run(
        &Group::v2_pass(),
        [Speaker::Keepalived, Speaker::Vrrpd],
        Fault::Terminate,
    ) else {
        return;
    };
    check_resign(&o);
}

#[test]
fn v2_unicast_vrrpd_master_keepalived_backup() {
    let group = Group::v2_pass_unicast();
    let Some(o) = scenario(&group, [Speaker::Vrrpd, Speaker::Keepalived]) else {
        return;
    };
    check(&o, &V2_PASS_UNICAST);
}

#[test]
fn v2_unicast_keepalived_master_vrrpd_backup() {
    let group = Group::v2_pass_unicast();
    let Some(o) = scenario(&group, [Speaker::Keepalived, Speaker::Vrrpd]) else {
        return;
    };
    check(&o, &V2_PASS_UNICAST);
}
