//! `vrrpd watch --pcap` and `vrrpd survey --pcap`: the fixture captures, decoded line by line (and
//! judged against a keepalived.conf or a cluster name), as a user sees them.

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
    vrrpd("watch", args)
}

/// `vrrpd SUBCOMMAND ARGS...`: exit status, stdout, stderr.
fn vrrpd(subcommand: &str, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_vrrpd"))
        .arg(subcommand)
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
    let (code, out, err) = watch(&["--pcap", path.to_str().unwrap(), "--show-secrets"]);
    assert_eq!(code, 0, "{err}");
    let first = out.lines().next().unwrap();
    assert_eq!(
        first,
        "2026-11-22T11:05:35.187436Z 192.0.2.12 > 224.0.0.18 VRRPv2 vrid 51 prio 120 int 1s \
         hop 255 auth PASS \"secret\" addrs 192.0.2.100"
    );
    assert!(out.lines().all(|l| l.contains("VRRPv2 vrid 51")), "{out}");
}

/// Without --show-secrets, neither the text nor the JSON lines carry the password.
#[test]
fn passwords_are_redacted_unless_asked_for() {
    let path = fixture("keepalived-2.2.7-v2-pass.pcap");
    for json in [false, true] {
        let mut args = vec!["--pcap", path.to_str().unwrap()];
        if json {
            args.push("--json");
        }
        let (code, out, err) = watch(&args);
        assert_eq!(code, 0, "{err}");
        assert!(!out.is_empty());
        assert!(
            !out.contains("secret") && !err.contains("secret"),
            "{out}{err}"
        );
        for line in out.lines() {
            if json {
                let v: serde_json::Value = serde_json::from_str(line).unwrap();
                assert_eq!(v["auth"], "<redacted>", "{line}");
            } else {
                assert!(line.contains(" auth PASS <redacted> "), "{line}");
            }
        }
    }
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

/// A keepalived.conf with one VRRPv2 instance on VRID 51 with PASS "secret" and `vip`.
fn config(dir: &std::path::Path, vip: &str) -> PathBuf {
    let path = dir.join("keepalived.conf");
    let text = format!(
        "vrrp_instance VI_1 {{\n    interface eth0\n    virtual_router_id 51\n    priority 100\n    \
         advert_int 1\n    authentication {{\n        auth_type PASS\n        auth_pass secret\n    }}\n    \
         virtual_ipaddress {{\n        {vip}/32\n    }}\n}}\n"
    );
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn adverts_of_another_group_on_our_vrid_are_marked_foreign() {
    let dir = tempfile::tempdir().unwrap();
    let pcap = fixture("keepalived-2.2.7-v2-pass.pcap");
    let pcap = pcap.to_str().unwrap();
    // Our group: the same VIP, password and version: nothing is marked.
    let ours = config(dir.path(), "192.0.2.100");
    let (code, out, err) = watch(&["--pcap", pcap, "-f", ours.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(!out.is_empty() && !out.contains("FOREIGN"), "{out}");
    // Another VIP on VRID 51: every advert is foreign, with what differs.
    let other = config(dir.path(), "192.0.2.99");
    let (code, out, err) = watch(&["--pcap", pcap, "-f", other.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.lines().all(|l| l
            .ends_with(" FOREIGN to VI_1: its addresses 192.0.2.100 differ from ours 192.0.2.99")),
        "{out}"
    );
    let (_, out, _) = watch(&["--pcap", pcap, "--json", "-f", other.to_str().unwrap()]);
    let first: serde_json::Value = serde_json::from_str(out.lines().next().unwrap()).unwrap();
    assert_eq!(first["foreign"]["instance"], "VI_1");
    assert_eq!(first["foreign"]["reason"], "addresses");
    // A configuration with errors is refused before anything is read.
    std::fs::write(&other, "vrrp_instance {\n").unwrap();
    let (code, out, _) = watch(&["--pcap", pcap, "-f", other.to_str().unwrap()]);
    assert_eq!((code, out.is_empty()), (2, true));
}

fn survey(args: &[&str]) -> (i32, String, String) {
    vrrpd("survey", args)
}

/// The first cluster name `{prefix}{n}` whose VRIDs satisfy `ok`.
fn cluster_name(prefix: &str, ok: impl Fn(ipi_core::vrid::Vrids) -> bool) -> String {
    (0..100_000)
        .map(|n| format!("{prefix}{n}"))
        .find(|name| ok(ipi_core::vrid::Vrids::for_cluster(name)))
        .unwrap()
}

#[test]
fn survey_of_a_capture_judges_cluster_names() {
    let pcap = fixture("keepalived-2.2.7-v2-pass.pcap");
    let pcap = pcap.to_str().unwrap();
    let (code, out, err) = survey(&["--pcap", pcap]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with(
            "vrid 51:\n  192.0.2.12 VRRPv2 priority 120 interval 100 cs addresses 192.0.2.100 ("
        ),
        "{out}"
    );
    // Ingress on 51: taken, exit 1, with free names close to it.
    let taken = cluster_name("c", |v| v.ingress == 51);
    let (code, out, _) = survey(&["--pcap", pcap, "--cluster-name", &taken, "--json"]);
    assert_eq!(code, 1, "{out}");
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(j["cluster"]["ingress"]["taken_by"][0], "192.0.2.12");
    assert_eq!(j["cluster"]["free"], false);
    let alternatives = j["cluster"]["alternatives"].as_array().unwrap();
    assert_eq!(alternatives.len(), 3);
    assert!(alternatives[0]["name"]
        .as_str()
        .unwrap()
        .starts_with(&taken[..taken.len() - 1]));
    // A pair that avoids 51: free, exit 0.
    let free = cluster_name("c", |v| v.api != 51 && v.ingress != 51);
    let (code, out, _) = survey(&["--pcap", pcap, "--cluster-name", &free]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains(&format!("cluster {free}: API vrid")) && !out.contains("TAKEN"));
    // Not a DNS label: a usage error.
    let (code, _, err) = survey(&["--pcap", pcap, "--cluster-name", "Not_A_Name"]);
    assert_eq!(code, 2, "{err}");
}
