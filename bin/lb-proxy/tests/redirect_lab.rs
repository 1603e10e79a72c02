//! The VIP redirect in the lab: lb-proxy on a master sends API-VIP:6443 to its frontend (from
//! another host through prerouting, from the master itself through output on lo) once its
//! servers are healthy, touches the flag file keepalived's chk_ocp_lb tests for, and takes
//! both away when every server is DOWN and when it stops.

#![allow(clippy::unwrap_used)]

use std::io::ErrorKind;
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::time::Duration;

use ipi_lab::api::ApiServer;
use ipi_lab::{wait_for, Host, Lab};

const VIP: &str = "192.0.2.100";

/// `lb-proxy check URL` run in `host`: its exit status (0 healthy, 1 unhealthy, 2 usage), so
/// that a check that could not run is told from one that ran and failed.
fn check_status(host: &Host, url: &str) -> i32 {
    let out = host
        .run(
            env!("CARGO_BIN_EXE_lb-proxy"),
            ["check", url, "--timeout", "1s"],
        )
        .unwrap();
    out.code
        .unwrap_or_else(|| panic!("lb-proxy check {url} killed: {}", out.stderr))
}

/// `lb-proxy check http://VIP:6443/` from `host`: 0 when the API answers through the VIP.
fn api_check(host: &Host) -> i32 {
    check_status(host, &format!("http://{VIP}:6443/"))
}

/// A TCP connection to VIP:6443 from `host`, opened in its namespace: without the redirect
/// nothing listens there (the API servers bind the master's own address), so the master's
/// kernel answers with a reset — refused, not a timeout (which would mean dropped packets).
fn connect_to_the_vip(host: &Host) -> std::io::Result<()> {
    let vip = SocketAddr::new(VIP.parse().unwrap(), 6443);
    host.within(|| TcpStream::connect_timeout(&vip, Duration::from_secs(2)).map(drop))
}

/// Whether lb-proxy's nftables table is in `host`: nft lists it (0), or says there is no such
/// table (1, ENOENT); anything else (nft missing, no permission) is no answer and fails.
fn table_exists(host: &Host) -> bool {
    let out = host
        .run("nft", ["list", "table", "inet", "ipi_lb_proxy"])
        .unwrap();
    match out.code {
        Some(0) => true,
        Some(1) if out.stderr.contains("No such file or directory") => false,
        _ => panic!("nft list table: {:?} {}", out.code, out.stderr),
    }
}

/// A master called `name` holding the API VIP (as keepalived would), and a client host.
fn master_with_the_vip(lab: &mut Lab, name: &str) -> (Host, Host) {
    let (master, client) = (lab.host(name).unwrap(), lab.host("client").unwrap());
    let added = master.run("ip", ["addr", "add", &format!("{VIP}/32"), "dev", "eth0"]);
    assert!(added.unwrap().success);
    (master, client)
}

#[test]
// One scenario read top to bottom: on while healthy, off when every server fails, gone on stop.
#[allow(clippy::too_many_lines)]
fn the_redirect_follows_the_servers_health() {
    if !ipi_lab::available() {
        return;
    }
    let mut lab = Lab::new().unwrap();
    let (master, client) = master_with_the_vip(&mut lab, "m0");
    let ip = IpAddr::V4(master.ipv4());
    let servers: Vec<ApiServer> = (0..2)
        .map(|i| {
            ApiServer::start_in(&master, SocketAddr::new(ip, 6443 + i), &format!("m{i}")).unwrap()
        })
        .collect();
    let mut cfg = String::from(
        "defaults\n  mode tcp\n  timeout connect 1s\n  timeout client 10s\n  timeout server 10s\n\
         frontend main\n  bind :::9445 v4v6\n  default_backend masters\n\
         frontend monitor\n  bind :::9444 v4v6\n  mode http\n  monitor-uri /haproxy_ready\n  \
         monitor fail if { nbsrv(masters) lt 1 }\n\
         backend masters\n  option httpchk GET /readyz HTTP/1.0\n",
    );
    for s in &servers {
        cfg.push_str(&format!(
            "  server {} {} verify none check check-ssl inter 100ms fall 2 rise 2\n",
            s.address().port(),
            s.address()
        ));
    }
    let path = master.dir().join("haproxy.cfg");
    std::fs::write(&path, cfg).unwrap();
    // Its directory is not there yet: lb-proxy makes it (as OpenShift's /var/run/keepalived).
    let flag = master.dir().join("run/keepalived/iptables-rule-exists");
    let mut proxy = master
        .spawn(
            "lb-proxy",
            env!("CARGO_BIN_EXE_lb-proxy"),
            [
                "run",
                "-f",
                path.to_str().unwrap(),
                "--redirect-vip",
                VIP,
                "--flag-file",
                flag.to_str().unwrap(),
                "--redirect-interval",
                "100ms",
            ],
        )
        .unwrap();
    let wait = |what: &str, f: &mut dyn FnMut() -> bool| {
        wait_for(Duration::from_secs(10), Duration::from_millis(50), f)
            .unwrap_or_else(|| panic!("timed out waiting for {what}"))
    };
    // Healthy: after three good rounds the rules and the flag are there.
    let on = wait("the redirect", &mut || flag.exists());
    eprintln!("redirect on after {on:?}");
    assert!(table_exists(&master));
    assert_eq!(
        api_check(&client),
        0,
        "VIP:6443 from another host (prerouting)"
    );
    assert_eq!(
        api_check(&master),
        0,
        "VIP:6443 from the master itself (output on lo)"
    );

    // Every server fails /readyz: the monitor says 503 at once, the redirect goes after 11
    // bad rounds.
    for s in &servers {
        s.set_ready(false);
    }
    let monitor = "http://127.0.0.1:9444/haproxy_ready";
    // 1: the check ran and the monitor said no (503), not a usage error (2) or a crash.
    wait("the monitor to fail", &mut || {
        check_status(&master, monitor) == 1
    });
    let off = wait("the redirect to go", &mut || !flag.exists());
    eprintln!("redirect off {off:?} after the monitor failed (11 rounds of 100 ms)");
    assert!(off >= Duration::from_millis(800), "debounced: {off:?}");
    assert!(!table_exists(&master));
    assert_eq!(api_check(&client), 1, "the check ran and found no API");
    let refused = connect_to_the_vip(&client).map_err(|e| e.kind());
    assert_eq!(
        refused,
        Err(ErrorKind::ConnectionRefused),
        "VIP:6443 without the redirect"
    );

    // Healthy again, then stopped: the rules and the flag go with lb-proxy.
    for s in &servers {
        s.set_ready(true);
    }
    wait("the redirect again", &mut || {
        flag.exists() && table_exists(&master)
    });
    proxy.stop();
    assert!(
        !flag.exists() && !table_exists(&master),
        "left behind on exit"
    );
    let refused = connect_to_the_vip(&client).map_err(|e| e.kind());
    assert_eq!(
        refused,
        Err(ErrorKind::ConnectionRefused),
        "VIP:6443 after the stop"
    );
}

#[test]
fn run_cluster_is_what_openshift_runs_with_the_redirect_on() {
    if !ipi_lab::available() {
        return;
    }
    let mut lab = Lab::new().unwrap();
    let (master, client) = master_with_the_vip(&mut lab, "master-0");
    let ip = master.ipv4();
    let api =
        ApiServer::start_in(&master, SocketAddr::new(IpAddr::V4(ip), 6443), "master-0").unwrap();
    let dir = master.dir();
    let cluster = ipi_lab::install_config(dir, &["192.0.2.0/24"], &[VIP], &["192.0.2.101"]);
    let nodes = dir.join("nodes");
    std::fs::write(&nodes, format!("master-0 master {ip}\n")).unwrap();
    let flag = dir.join("flag");
    let mut proxy = master
        .spawn(
            "lb-proxy",
            env!("CARGO_BIN_EXE_lb-proxy"),
            [
                "run",
                "--cluster",
                cluster.to_str().unwrap(),
                "--nodes",
                nodes.to_str().unwrap(),
                "--flag-file",
                flag.to_str().unwrap(),
                "--redirect-interval",
                "100ms",
            ],
        )
        .unwrap();
    // The checks are /readyz over TLS every second, rise 3 after the first fall: the server
    // starts UP, so the redirect comes after three rounds.
    wait_for(Duration::from_secs(10), Duration::from_millis(50), || {
        flag.exists()
    })
    .unwrap_or_else(|| panic!("no redirect:\n{}", proxy.log()));
    assert_eq!(api_check(&client), 0, "{}", proxy.log());
    let ready = check_status(&master, "http://127.0.0.1:9444/haproxy_ready");
    assert_eq!(ready, 0);
    assert!(api.readyz_requests() > 0, "checked over TLS");
    proxy.stop();
    assert!(!flag.exists() && !table_exists(&master));
}
