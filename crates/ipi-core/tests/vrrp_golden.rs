//! Golden tests: every advertisement in `tests/fixtures/vrrp/*.pcap` (real keepalived 2.2.7
//! traffic and tcpdump's test captures) parses to what the fixtures' README and tshark say,
//! its checksum verifies, and emitting the parsed [`Repr`] gives back the very same bytes.
//!
//! Expectations come from `tshark -r FILE -V`. Where the README and the capture disagree the
//! capture wins, and the test says so: the tcpdump capture's priority is 191 to 197 by sender,
//! not "191 throughout", and `tcpdump-vrrp-truncated-1.pcap` is Frame Relay, not Ethernet.

// Helpers outside #[test] functions too: in a test, a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]
// A golden test reads best as one table of expectations per capture.
#![allow(clippy::too_many_lines)]

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::Command;

use ipi_core::capture;
use ipi_core::vrrp::{
    parse_datagram, split_datagram, Auth, ChecksumMode, Datagram, Error, Packet, Repr, Version,
};
use pcap_file::DataLink;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/vrrp");

fn fixture(name: &str) -> PathBuf {
    Path::new(FIXTURES).join(name)
}

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

/// The datagrams of a capture, one per frame, in order.
fn datagrams(name: &str) -> Vec<Vec<u8>> {
    capture::read(&fixture(name))
        .unwrap()
        .iter()
        .map(|f| f.ip().unwrap_or_else(|e| panic!("{name}: {e}")).to_vec())
        .collect()
}

#[allow(clippy::too_many_arguments)]
fn datagram(
    version: Version,
    vrid: u8,
    priority: u8,
    advert_int: u16,
    auth: Auth,
    addresses: &[&str],
    src: &str,
    dst: &str,
) -> Datagram {
    Datagram {
        src: ip(src),
        dst: ip(dst),
        hop_limit: 255,
        repr: Repr {
            version,
            vrid,
            priority,
            advert_int,
            auth,
            addresses: addresses.iter().map(|a| ip(a)).collect(),
        },
    }
}

/// Everything a well-formed captured advertisement must satisfy, whatever its fields: it
/// parses to `want`, its checksum verifies on the view too, and emit reproduces the VRRP
/// message byte for byte (checksum included).
fn check_golden(name: &str, number: usize, datagram_bytes: &[u8], want: &Datagram) {
    let mode = ChecksumMode::PseudoHeader;
    let got = parse_datagram(datagram_bytes, mode)
        .unwrap_or_else(|e| panic!("{name} frame {number}: {e}"));
    assert_eq!(&got, want, "{name} frame {number}");

    let raw = split_datagram(datagram_bytes).unwrap();
    let packet = Packet::new_checked(raw.payload).unwrap();
    assert!(
        packet.verify_checksum(raw.src, raw.dst, mode).unwrap(),
        "{name} frame {number}: checksum"
    );
    assert_eq!(
        packet.compute_checksum(raw.src, raw.dst, mode).unwrap(),
        packet.checksum(),
        "{name} frame {number}: the sender's checksum is the one we compute"
    );

    let emitted = got.repr.to_bytes(got.src, got.dst, mode).unwrap();
    assert_eq!(
        emitted, raw.payload,
        "{name} frame {number}: emit is byte-identical"
    );
    assert_eq!(got.repr.buffer_len(), raw.payload.len());

    // The other checksum mode: only VRRPv3 over IPv4 depends on it. Every v3 IPv4 frame in
    // these captures includes the pseudo-header (keepalived's and tcpdump's senders' default),
    // so the RFC 9568 reading rejects them.
    let other = parse_datagram(datagram_bytes, ChecksumMode::NoPseudoHeader);
    if want.repr.version == Version::V3 && want.src.is_ipv4() {
        assert!(
            matches!(other, Err(Error::BadChecksum { .. })),
            "{name} frame {number}: {other:?}"
        );
    } else {
        assert_eq!(other.as_ref(), Ok(want), "{name} frame {number}");
    }
}

#[test]
fn keepalived_v2_pass() {
    let name = "keepalived-2.2.7-v2-pass.pcap";
    let all = datagrams(name);
    assert_eq!(all.len(), 2);
    let want = datagram(
        Version::V2,
        51,
        120,
        100,
        Auth::Pass(*b"secret\0\0"),
        &["192.0.2.100"],
        "192.0.2.12",
        "224.0.0.18",
    );
    assert_eq!(want.repr.auth, Auth::pass("secret"));
    for (i, d) in all.iter().enumerate() {
        check_golden(name, i + 1, d, &want);
        // tshark: "Checksum: 0x6719 [correct]".
        let raw = split_datagram(d).unwrap();
        assert_eq!(Packet::new_checked(raw.payload).unwrap().checksum(), 0x6719);
    }
}

#[test]
fn keepalived_v3_v4_v6_and_v2_unicast() {
    let name = "keepalived-2.2.7-v3-v4-v6-unicast.pcap";
    let v3_ipv4 = datagram(
        Version::V3,
        14,
        40,
        100,
        Auth::None,
        &["192.0.2.5"],
        "192.0.2.11",
        "224.0.0.18",
    );
    let v3_ipv6 = datagram(
        Version::V3,
        93,
        20,
        50,
        Auth::None,
        &["2001:db8::7"],
        "fe80::9849:19ff:fec4:26d5",
        "ff02::12",
    );
    // keepalived sends only the first 8 bytes of "ocp4_api_vip".
    let v2_unicast = datagram(
        Version::V2,
        29,
        70,
        100,
        Auth::Pass(*b"ocp4_api"),
        &["192.0.2.9"],
        "192.0.2.11",
        "192.0.2.12",
    );
    assert_eq!(v2_unicast.repr.auth, Auth::pass("ocp4_api_vip"));
    // tshark's checksums, one per instance: every frame of an instance is identical.
    let expected: BTreeMap<u8, (&Datagram, u16)> = [
        (14, (&v3_ipv4, 0x41ec)),
        (93, (&v3_ipv6, 0xb6ae)),
        (29, (&v2_unicast, 0x2674)),
    ]
    .into_iter()
    .collect();

    let mut seen: BTreeMap<u8, usize> = BTreeMap::new();
    for (i, d) in datagrams(name).iter().enumerate() {
        let vrid = parse_datagram(d, ChecksumMode::PseudoHeader)
            .unwrap()
            .repr
            .vrid;
        let (want, checksum) = expected[&vrid];
        check_golden(name, i + 1, d, want);
        let raw = split_datagram(d).unwrap();
        assert_eq!(
            Packet::new_checked(raw.payload).unwrap().checksum(),
            checksum
        );
        *seen.entry(vrid).or_default() += 1;
    }
    // tshark: 4 v3 IPv4, 12 v3 IPv6 (twice the rate: 50 cs), 5 v2 unicast.
    assert_eq!(seen, BTreeMap::from([(14, 4), (29, 5), (93, 12)]));
}

#[test]
fn tcpdump_vrrp() {
    let name = "tcpdump-vrrp.pcap";
    // The README says priority 191 throughout; the capture has seven senders, 191 to 197.
    let priority_of: BTreeMap<IpAddr, u8> = [
        ("10.0.0.91", 191),
        ("10.0.0.92", 192),
        ("10.0.0.93", 193),
        ("10.0.0.94", 194),
        ("10.0.0.95", 195),
        ("10.0.0.96", 196),
        ("10.0.0.97", 197),
        ("fe80::d6ca:6dff:fe66:cf60", 191),
        ("fe80::d6ca:6dff:fe72:b1da", 192),
        ("fe80::d6ca:6dff:fe66:cf65", 193),
        ("fe80::d6ca:6dff:fe65:d45c", 194),
        ("fe80::d6ca:6dff:fe65:d46b", 195),
        ("fe80::d6ca:6dff:fe72:b1e4", 196),
        ("fe80::20c:42ff:fe5e:c2dc", 197),
    ]
    .into_iter()
    .map(|(a, p)| (ip(a), p))
    .collect();

    type Group = (Version, Auth, &'static [&'static str]);
    let groups: BTreeMap<u8, Group> = BTreeMap::from([
        (
            42,
            (
                Version::V2,
                Auth::Pass(*b"abcdefgh"),
                &["10.4.42.1", "10.4.42.2", "10.4.42.3"][..],
            ),
        ),
        (43, (Version::V2, Auth::None, &["10.4.43.150"][..])),
        (
            44,
            (Version::V3, Auth::None, &["10.4.44.100", "10.4.44.200"][..]),
        ),
        (
            45,
            (
                Version::V3,
                Auth::None,
                &["fe80::200:5eff:fe00:22d", "2001::abcd:a"][..],
            ),
        ),
        (
            46,
            (
                Version::V3,
                Auth::None,
                &[
                    "fe80::200:5eff:fe00:22e",
                    "2001::eeff:a",
                    "2001::eeff:b",
                    "2001::eeff:c",
                    "2001::eeff:d",
                ][..],
            ),
        ),
    ]);

    let mut seen: BTreeMap<u8, usize> = BTreeMap::new();
    for (i, d) in datagrams(name).iter().enumerate() {
        let raw = split_datagram(d).unwrap();
        let vrid = Packet::new_checked(raw.payload).unwrap().vrid();
        let (version, auth, addresses) = groups[&vrid];
        let dst = if raw.src.is_ipv4() {
            "224.0.0.18"
        } else {
            "ff02::12"
        };
        let mut want = datagram(
            version,
            vrid,
            priority_of[&raw.src],
            // v2 sends 10 s, v3 1000 cs: the same interval.
            1000,
            auth,
            addresses,
            &raw.src.to_string(),
            dst,
        );
        want.src = raw.src;
        check_golden(name, i + 1, d, &want);
        *seen.entry(vrid).or_default() += 1;
    }
    // tshark -T fields -e vrrp.virt_rtr_id | sort | uniq -c
    assert_eq!(
        seen,
        BTreeMap::from([(42, 34), (43, 34), (44, 33), (45, 32), (46, 32)])
    );
}

/// Recomputes an IPv4 header checksum in place, so that a test can look past a header whose
/// only fault is its checksum.
fn repair_ipv4_checksum(datagram: &mut [u8]) {
    let header_len = usize::from(datagram[0] & 0x0F) * 4;
    if datagram.len() < header_len || header_len < 20 {
        return;
    }
    datagram[10] = 0;
    datagram[11] = 0;
    let mut sum = 0u32;
    for word in datagram[..header_len].chunks(2) {
        sum += u32::from(u16::from_be_bytes([word[0], *word.get(1).unwrap_or(&0)]));
    }
    while sum > 0xFFFF {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    let checksum = !(sum as u16);
    datagram[10..12].copy_from_slice(&checksum.to_be_bytes());
}

/// The VRRP bytes of an IPv4 datagram as tshark dissects them (IHL to total length, cut at the
/// capture's end), with no judgement about fragments or checksums.
fn lenient_ipv4_payload(datagram: &[u8]) -> (&[u8], IpAddr, IpAddr) {
    let header_len = usize::from(datagram[0] & 0x0F) * 4;
    let total = usize::from(u16::from_be_bytes([datagram[2], datagram[3]]));
    let src = IpAddr::from(<[u8; 4]>::try_from(&datagram[12..16]).unwrap());
    let dst = IpAddr::from(<[u8; 4]>::try_from(&datagram[16..20]).unwrap());
    let end = total.min(datagram.len()).max(header_len);
    (&datagram[header_len.min(end)..end], src, dst)
}

/// Both VRRP-level entry points reject `payload`, in both modes.
fn vrrp_layer_rejects(payload: &[u8], src: IpAddr, dst: IpAddr) -> Vec<Error> {
    let mut errors = Vec::new();
    for mode in [ChecksumMode::PseudoHeader, ChecksumMode::NoPseudoHeader] {
        match Packet::new_checked(payload) {
            Err(e) => errors.push(e),
            Ok(p) => errors.push(Repr::parse(&p, src, dst, mode).unwrap_err()),
        }
        // A view without the length check must not panic either.
        let p = Packet::new_unchecked(payload);
        let _ = (
            p.addr_field(),
            p.auth_data(),
            p.advert_int_cs(),
            p.checksum(),
        );
        assert!(Repr::parse(&p, src, dst, mode).is_err());
    }
    errors
}

#[test]
fn tcpdump_truncated_1_every_frame_is_rejected() {
    let name = "tcpdump-vrrp-truncated-1.pcap";
    let frames = capture::read(&fixture(name)).unwrap();
    // The README calls every fixture Ethernet; this one is Frame Relay (LINKTYPE_FRELAY, 107).
    assert!(frames.iter().all(|f| f.link == DataLink::FRELAY));
    assert_eq!(frames.len(), 3);
    for frame in &frames {
        let number = frame.number;
        let datagram = frame.ip().unwrap();
        // tshark: "Header checksum ... [Header checksum status: Bad]" on all three.
        for mode in [ChecksumMode::PseudoHeader, ChecksumMode::NoPseudoHeader] {
            let e = parse_datagram(datagram, mode).unwrap_err();
            assert!(
                matches!(e, Error::BadIpChecksum { .. }),
                "{name} frame {number}: {e}"
            );
        }
        // With the IP header checksum repaired, the VRRP layer still rejects each frame:
        // IHL 7 (28 bytes) and total length 34 leave 6 bytes of VRRP in frame 1; total
        // length 40 leaves 12 bytes in frames 2 and 3, where a v2 message with one address
        // needs 20 (8 header + 4 address + 8 authentication data).
        let mut repaired = datagram.to_vec();
        repair_ipv4_checksum(&mut repaired);
        let e = parse_datagram(&repaired, ChecksumMode::PseudoHeader).unwrap_err();
        let needed = if number == 1 { 8 } else { 20 };
        assert!(
            matches!(e, Error::Truncated { needed: n, .. } if n == needed),
            "{name} frame {number}: {e}"
        );
        let (payload, src, dst) = lenient_ipv4_payload(datagram);
        for e in vrrp_layer_rejects(payload, src, dst) {
            assert!(
                matches!(e, Error::Truncated { .. }),
                "{name} frame {number}: {e}"
            );
        }
    }
}

#[test]
fn tcpdump_truncated_2_every_frame_is_rejected() {
    let name = "tcpdump-vrrp-truncated-2.pcap";
    let frames = capture::read(&fixture(name)).unwrap();
    assert!(frames.iter().all(|f| f.link == DataLink::ETHERNET));
    assert_eq!(frames.len(), 10);
    for frame in &frames {
        let number = frame.number;
        let datagram = frame.ip().unwrap();
        // tshark: "Fragmented IP protocol (proto=VRRP 112, off=0)", More Fragments set on all
        // ten, and a bad header checksum: a fragment is refused whatever its checksum says.
        let mut repaired = datagram.to_vec();
        repair_ipv4_checksum(&mut repaired);
        for d in [datagram, &repaired[..]] {
            for mode in [ChecksumMode::PseudoHeader, ChecksumMode::NoPseudoHeader] {
                let e = parse_datagram(d, mode).unwrap_err();
                assert!(
                    matches!(
                        e,
                        Error::BadIpChecksum { .. }
                            | Error::Fragment {
                                more_fragments: true,
                                ..
                            }
                    ),
                    "{name} frame {number}: {e}"
                );
            }
        }
        assert!(matches!(
            parse_datagram(&repaired, ChecksumMode::PseudoHeader),
            Err(Error::Fragment { .. })
        ));
        // Had it been whole, the VRRP in it is malformed too: 19 bytes (7 in frame 8) of a v3
        // message counting 3 addresses (needs 20) or 0 addresses (needs exactly 8), and in
        // frame 10 a version nibble of 15 (the payload is all 0xF2).
        let (payload, src, dst) = lenient_ipv4_payload(datagram);
        for e in vrrp_layer_rejects(payload, src, dst) {
            if number == 10 {
                assert_eq!(e, Error::BadVersion(15), "{name} frame {number}");
                continue;
            }
            assert!(
                matches!(
                    e,
                    Error::Truncated { .. } | Error::AddressCountMismatch { .. }
                ),
                "{name} frame {number}: {e}"
            );
        }
    }
}

#[test]
fn an_802_1q_tag_is_stripped() {
    let frames = capture::read(&fixture("keepalived-2.2.7-v2-pass.pcap")).unwrap();
    let (link, untagged) = (frames[0].link, &frames[0].data);
    let mut tagged = untagged[..12].to_vec();
    tagged.extend_from_slice(&[0x81, 0x00, 0x00, 0x2A]); // VLAN 42
    tagged.extend_from_slice(&untagged[12..]);
    let a = parse_datagram(
        capture::ip_payload(link, untagged).unwrap(),
        ChecksumMode::default(),
    );
    let b = parse_datagram(
        capture::ip_payload(link, &tagged).unwrap(),
        ChecksumMode::default(),
    );
    assert!(a.is_ok());
    assert_eq!(a, b);
}

/// One frame as tshark dissects it.
#[derive(Debug, PartialEq)]
struct Dissected {
    version: u8,
    vrid: u8,
    priority: u8,
    advert_int_cs: u16,
    addresses: Vec<IpAddr>,
    password: Option<String>,
    src: IpAddr,
    dst: IpAddr,
    hop_limit: u8,
    checksum: u16,
}

/// Independent oracle: every frame of every well-formed capture, compared field by field with
/// tshark's dissection. Skipped (with a note) where tshark is not installed; under CI that is a
/// failure, as the test command installs it.
#[test]
fn agrees_with_tshark_on_every_frame() {
    if !ipi_lab::tool("tshark", "tshark") {
        return;
    }
    let fields = [
        "vrrp.version",
        "vrrp.virt_rtr_id",
        "vrrp.prio",
        "vrrp.adver_int",
        "vrrp.short_adver_int",
        "vrrp.ip_addr",
        "vrrp.ipv6_addr",
        "vrrp.auth_string",
        "ip.src",
        "ipv6.src",
        "ip.dst",
        "ipv6.dst",
        "ip.ttl",
        "ipv6.hlim",
        "vrrp.checksum",
        "vrrp.checksum.status",
    ];
    for name in [
        "keepalived-2.2.7-v2-pass.pcap",
        "keepalived-2.2.7-v3-v4-v6-unicast.pcap",
        "tcpdump-vrrp.pcap",
    ] {
        let mut command = Command::new("tshark");
        command.arg("-r").arg(fixture(name)).args(["-T", "fields"]);
        command.args([
            "-E",
            "separator=\t",
            "-E",
            "occurrence=a",
            "-E",
            "aggregator=,",
        ]);
        for f in fields {
            command.args(["-e", f]);
        }
        let output = command.output().unwrap();
        assert!(
            output.status.success(),
            "tshark failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let text = String::from_utf8(output.stdout).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let ours = datagrams(name);
        assert_eq!(lines.len(), ours.len(), "{name}: frame count");

        for (i, (line, d)) in lines.iter().zip(&ours).enumerate() {
            let c: Vec<&str> = line.split('\t').collect();
            assert_eq!(c.len(), fields.len(), "{name} frame {}: {line}", i + 1);
            let either = |a: &str, b: &str| {
                if a.is_empty() {
                    b.to_string()
                } else {
                    a.to_string()
                }
            };
            let addrs = either(c[5], c[6]);
            let number = |s: &str| -> u64 {
                match s.strip_prefix("0x") {
                    Some(hex) => u64::from_str_radix(hex, 16).unwrap(),
                    None => s.parse().unwrap(),
                }
            };
            let version = number(c[0]) as u8;
            let theirs = Dissected {
                version,
                vrid: number(c[1]) as u8,
                priority: number(c[2]) as u8,
                advert_int_cs: if version == 2 {
                    number(c[3]) as u16 * 100
                } else {
                    number(c[4]) as u16
                },
                addresses: addrs.split(',').map(ip).collect(),
                password: (!c[7].is_empty()).then(|| c[7].to_string()),
                src: ip(&either(c[8], c[9])),
                dst: ip(&either(c[10], c[11])),
                hop_limit: number(&either(c[12], c[13])) as u8,
                checksum: number(c[14]) as u16,
            };
            // tshark: 1 is "Good".
            assert_eq!(
                c[15],
                "1",
                "{name} frame {}: tshark's checksum status",
                i + 1
            );

            let got = parse_datagram(d, ChecksumMode::PseudoHeader).unwrap();
            let raw = split_datagram(d).unwrap();
            let ours = Dissected {
                version: got.repr.version.number(),
                vrid: got.repr.vrid,
                priority: got.repr.priority,
                advert_int_cs: got.repr.advert_int,
                addresses: got.repr.addresses.clone(),
                password: match got.repr.auth {
                    Auth::None | Auth::Ah => None,
                    Auth::Pass(p) => Some(
                        String::from_utf8(p.iter().copied().take_while(|&b| b != 0).collect())
                            .unwrap(),
                    ),
                },
                src: got.src,
                dst: got.dst,
                hop_limit: got.hop_limit,
                checksum: Packet::new_checked(raw.payload).unwrap().checksum(),
            };
            assert_eq!(ours, theirs, "{name} frame {}", i + 1);
        }
    }
}
