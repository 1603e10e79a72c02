//! The VIP redirect in the lab: lb-proxy on a master sends API-VIP:6443 to its frontend (from
//! another host through prerouting, from the master itself through output on lo) once its
//! servers are healthy, touches the flag file keepalived's chk_ocp_lb tests for, and takes
//! both away when every server is DOWN and when it stops.

#![allow(clippy::unwrap_used)]

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use ipi_lab::api::ApiServer;
use ipi_lab::{wait_for, Host, Lab};

const VIP: &str = "192.0.2.100";

fn reaches_the_api(host: &Host) -> bool {
    let url = format!("http://{VIP}:6443/");
    host.run(
        env!("CARGO_BIN_EXE_lb-proxy"),
        ["check", url.as_str(), "--timeout", "1s"],
    )
    .is_ok_and(|o| o.success)
}

fn table_exists(host: &Host) -> bool {
    host.run("nft", ["list", "table", "inet", "ipi_lb_proxy"])
        .is_ok_and(|o| o.success)
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
    let flag = master.dir().join("iptables-rule-exists");
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
    assert!(
        reaches_the_api(&client),
        "VIP:6443 from another host (prerouting)"
    );
    assert!(
        reaches_the_api(&master),
        "VIP:6443 from the master itself (output on lo)"
    );

    // Every server fails /readyz: the monitor says 503 at once, the redirect goes after 11
    // bad rounds.
    for s in &servers {
        s.set_ready(false);
    }
    let monitor = "http://127.0.0.1:9444/haproxy_ready";
    wait("the monitor to fail", &mut || {
        !master
            .run(env!("CARGO_BIN_EXE_lb-proxy"), ["check", monitor])
            .unwrap()
            .success
    });
    let off = wait("the redirect to go", &mut || !flag.exists());
    eprintln!("redirect off {off:?} after the monitor failed (11 rounds of 100 ms)");
    assert!(off >= Duration::from_millis(800), "debounced: {off:?}");
    assert!(!table_exists(&master));
    assert!(!reaches_the_api(&client));

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
    assert!(reaches_the_api(&client), "{}", proxy.log());
    let ready = master
        .run(
            env!("CARGO_BIN_EXE_lb-proxy"),
            ["check", "http://127.0.0.1:9444/haproxy_ready"],
        )
        .unwrap();
    assert!(ready.success);
    assert!(api.readyz_requests() > 0, "checked over TLS");
    proxy.stop();
    assert!(!flag.exists() && !table_exists(&master));
}
