//! `vrrpd watch --pcap`: the fixture captures, decoded line by line, as a user sees them.

// Helpers outside #[test] functions unwrap too: a panic there is a test failure.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::process::Command;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/vrrp")
        .join(name)
}

fn watch(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_vrrpd"))
        .arg("watch")
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn keepalived_v2_pass_as_text() {
    let path = fixture("keepalived-2.2.7-v2-pass.pcap");
    let (code, out, err) = watch(&["--pcap", path.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let first = out.lines().next().unwrap();
    assert_eq!(
        first,
        "2026-11-22T11:05:35.187436Z 192.0.2.12 > 224.0.0.18 VRRPv2 vrid 51 prio 120 int 1s \
         hop 255 auth PASS \"secret\" addrs 192.0.2.100"
    );
    assert!(out.lines().all(|l| l.contains("VRRPv2 vrid 51")), "{out}");
}

#[test]
fn keepalived_v3_as_json_lines() {
    let path = fixture("keepalived-2.2.7-v3-v4-v6-unicast.pcap");
    let (code, out, err) = watch(&["--pcap", path.to_str().unwrap(), "--json"]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(!lines.is_empty());
    let v6 = lines
        .iter()
        .find(|v| v["dst"] == "ff02::12")
        .expect("an IPv6 advert");
    assert_eq!(v6["version"], 3);
    assert_eq!(v6["vrid"], 93);
    assert_eq!(v6["advert_int_cs"], 50);
    assert_eq!(v6["addresses"][0], "2001:db8::7");
    assert_eq!(v6["hop_limit"], 255);
    assert!(lines.iter().all(|v| v.get("error").is_none()), "{out}");
}

#[test]
fn damaged_frames_are_reported_with_the_reason() {
    let path = fixture("tcpdump-vrrp-truncated-1.pcap");
    let (code, out, _) = watch(&["--pcap", path.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert_eq!(out.lines().count(), 3);
    assert!(
        out.lines()
            .all(|l| l.contains("rejected: bad IPv4 header checksum")),
        "{out}"
    );
}

#[test]
fn a_file_that_is_not_a_capture_is_refused_by_name() {
    let path = fixture("README.md");
    let (code, out, err) = watch(&["--pcap", path.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(out.is_empty());
    assert!(
        err.contains("README.md") && err.contains("not a readable pcap"),
        "{err}"
    );
}
