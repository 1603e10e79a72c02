//! mdns-publish beside the real avahi-daemon (Debian's package) on one link: avahi-browse and
//! avahi-resolve see what we publish, and our browse sees what avahi publishes.

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use ipi_lab::avahi::Avahi;
use ipi_lab::{wait_for, Host, Lab};

const BIN: &str = env!("CARGO_BIN_EXE_mdns-publish");

fn cluster(host: &Host) -> String {
    let path = ipi_lab::install_config(
        host.dir(),
        &["192.0.2.0/24"],
        &["192.0.2.100"],
        &["192.0.2.101"],
    );
    path.display().to_string()
}

#[test]
#[allow(clippy::too_many_lines)] // one lab, both directions checked in it
fn avahi_and_mdns_publish_see_each_other() {
    if !ipi_lab::available()
        || !ipi_lab::tool("avahi-daemon", "avahi-daemon")
        || !ipi_lab::tool("avahi-browse", "avahi-utils")
    {
        return;
    }
    let mut lab = Lab::new().unwrap();
    let (ours, theirs) = (lab.host("master-0").unwrap(), lab.host("worker-9").unwrap());
    let cluster = cluster(&ours);
    let bind = ours.ipv4().to_string();
    let d = ours
        .spawn(
            "mdns-publish",
            BIN,
            [
                "run",
                "--cluster",
                &cluster,
                "--hostname",
                "master-0",
                "--role",
                "master",
                "--bind",
                &bind,
            ],
        )
        .unwrap();
    let avahi = Avahi::start(&theirs, "worker-9").unwrap();
    wait_for(Duration::from_secs(10), Duration::from_millis(100), || {
        d.log().contains("published")
    })
    .unwrap_or_else(|| panic!("{}", d.log()));

    // avahi-browse resolves our instance: its host, address, port and TXT.
    let mut lines = String::new();
    let seen = wait_for(Duration::from_secs(10), Duration::from_millis(300), || {
        lines = avahi
            .run("avahi-browse", ["-rtp", "_workstation._tcp"])
            .map(|o| o.stdout)
            .unwrap_or_default();
        lines.lines().any(|l| {
            let f: Vec<&str> = l.split(';').collect();
            f.len() >= 10
                && f[0] == "="
                && f[2] == "IPv4"
                && f[3] == "lab\\032master-0"
                && f[6] == "master-0.local"
                && f[7] == bind
                && f[8] == "42424"
                && f[9].contains("role=master")
        })
    });
    assert!(seen.is_some(), "avahi-browse saw:\n{lines}\n{}", d.log());
    let out = avahi
        .run("avahi-resolve", ["-4", "-n", "master-0.local"])
        .unwrap();
    assert_eq!(
        out.stdout.split_whitespace().collect::<Vec<_>>(),
        ["master-0.local", bind.as_str()]
    );
    let out = avahi
        .run("avahi-resolve", ["-6", "-n", "master-0.local"])
        .unwrap();
    assert!(
        out.stdout.contains(&ours.ipv6().to_string()),
        "{}",
        out.stdout
    );

    // avahi publishes a node; our browse finds it with its addresses.
    let _publisher = avahi
        .spawn(
            "avahi-publish",
            "avahi-publish",
            [
                "-s",
                "lab worker-9",
                "_workstation._tcp",
                "42424",
                "role=worker",
            ],
        )
        .unwrap();
    let mut text = String::new();
    let found = wait_for(Duration::from_secs(15), Duration::from_millis(300), || {
        let out = ours
            .command(
                BIN,
                [
                    "browse",
                    "--filter",
                    "lab",
                    "--timeout",
                    "1s",
                    "--bind",
                    &bind,
                ],
            )
            .output()
            .unwrap();
        text = String::from_utf8_lossy(&out.stdout).into_owned();
        text.lines()
            .any(|l| l.starts_with(&format!("worker-9 worker {}", theirs.ipv4())))
            && text
                .lines()
                .any(|l| l.starts_with(&format!("master-0 master {bind}")))
    });
    assert!(found.is_some(), "our browse found:\n{text}");
}
