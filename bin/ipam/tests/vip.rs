//! `ipam vip validate` and `ipam vip suggest` on the fixtures and on made-up clusters.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_ipam");

fn seeds(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/seeds")
        .join(name)
}

fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(BIN).args(args).output().unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

/// The lab cluster on 192.0.2.0/24 with these VIPs (none: not chosen yet).
fn cluster(dir: &Path, network: &str, api: &[&str], ingress: &[&str]) -> String {
    let path = ipi_lab::install_config(dir, &[network], api, ingress);
    path.display().to_string()
}

#[test]
fn the_managed_cluster_is_valid() {
    let (code, out, err) = run(&[
        "vip",
        "validate",
        "--cluster",
        seeds("managed-install-config.yaml").to_str().unwrap(),
        "--nodes",
        seeds("managed-nodes.kubectl.json").to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("valid: API 10.0.0.5, Ingress 10.0.0.7"),
        "{out}"
    );
}

#[test]
fn every_problem_is_listed_in_the_installers_words_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let c = cluster(
        dir.path(),
        "192.0.2.0/24",
        &["198.51.100.5"],
        &["192.0.2.10"],
    );
    let n = write(dir.path(), "nodes", "master-0 master 192.0.2.10\n");
    let (code, _, err) = run(&["vip", "validate", "--cluster", &c, "--nodes", &n]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("platform.baremetal.apiVIPs[0]")
            && err.contains("IP expected to be in one of the machine networks: 192.0.2.0/24"),
        "{err}"
    );
    assert!(
        err.contains("VIP must not be the address of node master-0"),
        "{err}"
    );
    // An unreadable inventory is a usage error, not a VIP problem.
    let (code, _, err) = run(&[
        "vip",
        "validate",
        "--cluster",
        &c,
        "--nodes",
        "/nonexistent",
    ]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn suggestions_before_there_are_vips() {
    let dir = tempfile::tempdir().unwrap();
    let c = cluster(dir.path(), "192.0.2.0/24", &[], &[]);
    let (code, out, err) = run(&["vip", "suggest", "--cluster", &c]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "apiVIPs:\n- 192.0.2.5\ningressVIPs:\n- 192.0.2.7\n");
    let n = write(dir.path(), "nodes", "master-0 master 192.0.2.5\n");
    let (_, out, _) = run(&["vip", "suggest", "--cluster", &c, "--nodes", &n, "--json"]);
    assert_eq!(
        out,
        "{\"apiVIPs\": [\"192.0.2.6\"], \"ingressVIPs\": [\"192.0.2.7\"]}\n"
    );
    let other = tempfile::tempdir().unwrap();
    let bad = cluster(other.path(), "192.0.2.0/33", &[], &[]);
    let (code, _, err) = run(&["vip", "suggest", "--cluster", &bad]);
    assert_eq!(code, 2);
    assert!(err.contains("networking.machineNetwork[0].cidr"), "{err}");
}
