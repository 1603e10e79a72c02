//! The keepalived.conf corpus (`tests/fixtures/keepalived-corpus`, real files from public
//! projects): keepalived 2.2 (`keepalived -t`, in a lab host holding every interface a file
//! names) and `vrrpd check-config` judge each file. Where keepalived accepts a file, vrrpd must
//! accept it too (warnings allowed); the exceptions are exactly those the corpus README lists
//! under "Exceptions", so a file that regresses, or one that starts to pass, fails the test.
//! The ratio is printed (`--no-capture` to see it when the test passes).

// Helpers outside #[test] functions unwrap too: a panic there is a test failure.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;

use ipi_lab::corpus::{name, Corpus};
use std::path::Path;

/// What keepalived prints with `-t` that says nothing against the file, only about the
/// machine the check runs on (a script or a user this test machine lacks), or what vrrpd does
/// alike (only the first 8 bytes of a password count). A file whose every message is one of
/// these counts as accepted, whatever keepalived's exit status.
const NOT_AGAINST_THE_FILE: &[&str] = &[
    "SECURITY VIOLATION - scripts are being executed but script_security not enabled",
    "since not found/accessible",
    "Truncating auth_pass to 8 characters",
    "Error setting global script uid/gid",
    "Unable to set default user for vrrp script",
];

fn corpus() -> Corpus {
    Corpus::new("keepalived-corpus", "conf")
}

/// The interfaces a file names (after `interface`, `dev`, `lvs_sync_daemon_interface`,
/// `default_interface`, and in `track_interface` blocks), read plainly rather than with
/// vrrpd's reader, which is under test.
fn interfaces(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut in_track = false;
    for raw in text.lines() {
        let line = raw.split(['#', '!']).next().unwrap_or("");
        let spaced = line.replace(['{', '}'], " ");
        let words: Vec<&str> = spaced.split_whitespace().collect();
        if in_track {
            out.extend(words.first().map(|w| w.to_string()));
        }
        for pair in words.windows(2) {
            if matches!(
                pair[0],
                "interface"
                    | "dev"
                    | "lvs_sync_daemon_interface"
                    | "default_interface"
                    | "track_interface"
            ) {
                out.insert(pair[1].to_string());
            }
        }
        if line.contains('}') {
            in_track = false;
        } else if words.first() == Some(&"track_interface") {
            in_track = true;
        }
    }
    out.retain(|name| {
        name.len() <= 15
            && name.starts_with(|c: char| c.is_ascii_alphabetic())
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
    });
    out
}

/// keepalived's verdict and what it said.
fn keepalived(host: &ipi_lab::Host, file: &Path, made: &mut BTreeSet<String>) -> (bool, String) {
    let text = std::fs::read_to_string(file).unwrap();
    for interface in interfaces(&text) {
        if made.insert(interface.clone()) && interface != "eth0" && interface != "lo" {
            let peer = format!("kc{}", made.len());
            host.run(
                "ip",
                [
                    "link", "add", &interface, "type", "veth", "peer", "name", &peer,
                ],
            )
            .unwrap();
        }
    }
    let out = host
        .run("keepalived", ["-t", "-f", &file.display().to_string()])
        .unwrap();
    let said = format!("{}{}", out.stdout, out.stderr);
    let harmless = said
        .lines()
        .filter(|l| !l.trim().is_empty())
        .all(|l| NOT_AGAINST_THE_FILE.iter().any(|n| l.contains(n)));
    (out.success || harmless, said)
}

fn vrrpd(file: &Path) -> (bool, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_vrrpd"))
        .args(["check-config", "-f"])
        .arg(file)
        .output()
        .unwrap();
    (
        out.status.code() == Some(0),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn where_keepalived_accepts_a_file_vrrpd_accepts_it_too() {
    let (described, listed) = corpus().readme();
    let names: BTreeSet<String> = corpus().files().iter().map(|f| name(f)).collect();
    assert!(names.len() >= 40, "the corpus holds {} files", names.len());
    assert_eq!(
        described, names,
        "the README describes every file, no other"
    );
    if !ipi_lab::available() || !ipi_lab::tool("keepalived", "keepalived") {
        return;
    }
    let mut lab = ipi_lab::Lab::new().unwrap();
    let host = lab.host("corpus").unwrap();
    let (mut made, mut accepted, mut ours, mut exceptions) =
        (BTreeSet::new(), 0, 0, BTreeSet::new());
    for file in corpus().files() {
        let (k, k_said) = keepalived(&host, &file, &mut made);
        let (v, v_said) = vrrpd(&file);
        println!(
            "{:<48} keepalived {:<8} vrrpd {}",
            name(&file),
            if k { "accepts" } else { "refuses" },
            if v { "accepts" } else { "refuses" }
        );
        if !k {
            continue;
        }
        accepted += 1;
        if v {
            ours += 1;
        } else {
            println!("  keepalived said: {k_said}\n  vrrpd said: {v_said}");
            exceptions.insert(name(&file));
        }
    }
    println!(
        "keepalived accepts {accepted} of {} files; vrrpd accepts {ours} of those {accepted} \
         ({} exceptions)",
        names.len(),
        exceptions.len()
    );
    assert_eq!(
        exceptions, listed,
        "the files keepalived accepts and vrrpd refuses are the README's exceptions"
    );
}

#[test]
fn interfaces_are_read_from_every_place_a_file_names_one() {
    let text = "vrrp_instance A {\n  interface ens3 # the link\n  virtual_ipaddress {\n    \
                192.0.2.1 dev eth1 label eth1:0\n  }\n  track_interface {\n    bond0\n    \
                eth2 weight 5\n  }\n  virtual_router_id 1\n}\n";
    let found: Vec<String> = interfaces(text).into_iter().collect();
    assert_eq!(found, ["bond0", "ens3", "eth1", "eth2"]);
}
