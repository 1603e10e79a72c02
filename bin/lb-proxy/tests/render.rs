//! `lb-proxy render`: what OpenShift configures for the API load balancer, from
//! install-config.yaml and the inventory; the real haproxy accepts it (`haproxy -c`), and what
//! render writes reads back to the same model.

// Helpers outside #[test] functions unwrap too: a panic there is a test failure.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use std::time::Duration;

use lb_proxy::config::model::{OnError, Race};
use lb_proxy::config::{self, Config, Location};

fn seeds(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/seeds")
        .join(name)
}

fn render(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_lb-proxy"))
        .arg("render")
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn placeless(mut c: Config) -> Config {
    for p in &mut c.proxies {
        p.location = Location::default();
        for s in &mut p.servers {
            s.location = Location::default();
        }
    }
    c
}

fn managed() -> String {
    let (cluster, nodes) = (
        seeds("managed-install-config.yaml"),
        seeds("managed-nodes.kubectl.json"),
    );
    let (code, out, err) = render(&[
        "--cluster",
        cluster.to_str().unwrap(),
        "--nodes",
        nodes.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    out
}

#[test]
fn the_managed_cluster() {
    let c = config::parse_str(&managed(), "rendered").unwrap();
    let main = c.proxy("main").unwrap();
    assert_eq!(main.binds[0].address, "[::]:9445".parse().unwrap());
    assert!(main.binds[0].v4v6 && main.redispatch == Some(1));
    let masters = c.proxy("masters").unwrap();
    let servers: Vec<String> = masters
        .servers
        .iter()
        .map(|s| s.address.to_string())
        .collect();
    // The fixture's three masters, on :6443, sorted by name.
    assert_eq!(
        servers,
        ["10.0.3.211:6443", "10.0.3.51:6443", "10.0.3.229:6443"]
    );
    assert!(masters.servers.iter().all(|s| s.check
        && s.check_ssl
        && s.verify_none
        && s.rise == 3
        && s.fall == 2));
    assert_eq!(masters.httpchk.as_ref().unwrap().uri, "/readyz");
    // What --cluster adds so that a failing master costs the clients nothing (issue 16).
    assert!(masters.servers.iter().all(|s| s.observe
        && s.error_limit == 1
        && s.on_error == OnError::MarkDown
        && s.slowstart == Some(Duration::from_secs(10))));
    assert_eq!(masters.redispatch, Some(1));
    assert!(masters.retry_on.conn_failure && masters.retry_on.empty_response);
    assert_eq!(
        masters.race,
        Some(Race {
            delay: Duration::from_millis(150),
            losses: 3
        })
    );
    assert!(masters.replay_unanswered);
    assert_eq!(masters.timeouts.connect, Some(Duration::from_secs(2)));
    let ready = c.proxy("health_check_http_url").unwrap();
    assert_eq!(
        (ready.binds[0].address.port(), ready.monitor_uri.as_deref()),
        (9444, Some("/haproxy_ready"))
    );
    let monitor = c.proxy("health_check_http_monitor").unwrap();
    assert_eq!(monitor.binds[0].address.port(), 9454);
    assert_eq!(monitor.monitor_fail.as_ref().unwrap().backend, "masters");
    let stats = c.proxy("stats").unwrap();
    assert_eq!(stats.binds[0].address, "127.0.0.1:29445".parse().unwrap());
}

#[test]
fn what_render_writes_reads_back_the_same() {
    let path = seeds("managed-haproxy.cfg");
    let (code, out, err) = render(&["-f", path.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        placeless(config::load(&path).unwrap()),
        placeless(config::parse_str(&out, "rendered").unwrap())
    );
}

#[test]
fn an_inventory_without_masters_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let nodes = dir.path().join("nodes");
    std::fs::write(&nodes, "worker-0 worker 10.0.3.23\n").unwrap();
    let cluster = seeds("managed-install-config.yaml");
    let (code, _, err) = render(&[
        "--cluster",
        cluster.to_str().unwrap(),
        "--nodes",
        nodes.to_str().unwrap(),
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("no master"), "{err}");
}

#[test]
fn haproxy_accepts_what_render_writes() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("haproxy.cfg");
    std::fs::write(&file, managed()).unwrap();
    check_with_haproxy(&file);
    let (_, again, _) = render(&["-f", seeds("managed-haproxy.cfg").to_str().unwrap()]);
    std::fs::write(&file, again).unwrap();
    check_with_haproxy(&file);
}

fn check_with_haproxy(file: &Path) {
    if !ipi_lab::tool("haproxy", "haproxy") {
        return;
    }
    let out = Command::new("haproxy")
        .arg("-c")
        .arg("-f")
        .arg(file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
