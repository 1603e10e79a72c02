//! A file of the keepalived.conf corpus run by keepalived and vrrpd side by side, unchanged:
//! kubeadm's HA guide (tests/fixtures/keepalived-corpus/kubeadm-ha-considerations.conf: both
//! routers `state MASTER`, priority 101, a track script that does not exist on the machine).
//! keepalived disables a track script it cannot find; so must vrrpd, or its priority drops by the
//! script's weight and the routers no longer tie. b starts first and becomes master; a, started
//! then with an equal priority, stays backup (RFC 3768 6.4.2: an advert of equal priority is not
//! preempted), whichever program runs where; when b stops, a takes over.

// Helpers outside #[test] functions unwrap too: a panic there is a test failure.
#![allow(clippy::unwrap_used)]

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use ipi_lab::wait_for;
use ipi_net_tests::vrrp::{Router, Speaker};
use support::Wire;

#[allow(dead_code, reason = "this test uses a few of the shared helpers")]
mod support;

fn corpus_file(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/keepalived-corpus")
        .join(name);
    std::fs::read_to_string(path).unwrap()
}

#[test]
fn kubeadms_file_behaves_the_same_under_keepalived_and_vrrpd() {
    if !ipi_lab::available()
        || !ipi_lab::tool("keepalived", "keepalived")
        || !ipi_lab::tool("tshark", "tshark")
    {
        return;
    }
    let text = corpus_file("kubeadm-ha-considerations.conf");
    let vip: IpAddr = "192.0.2.10".parse().unwrap();
    let vrrpd = PathBuf::from(env!("CARGO_BIN_EXE_vrrpd"));
    for [on_a, on_b] in [
        [Speaker::Keepalived, Speaker::Vrrpd],
        [Speaker::Vrrpd, Speaker::Keepalived],
    ] {
        let mut lab = ipi_lab::Lab::new().unwrap();
        let (a, b) = (lab.host("a").unwrap(), lab.host("b").unwrap());
        let mut rb = Router::start_with(&b, on_b, &text, 101, Some(&vrrpd)).unwrap();
        let case = format!("{} on a, {} on b", on_a.name(), on_b.name());
        wait_for(Duration::from_secs(10), Duration::from_millis(20), || {
            b.has_address(vip)
        })
        .unwrap_or_else(|| panic!("{case}: b never held the VIP\n{}", rb.daemon.log()));
        let ra = Router::start_with(&a, on_a, &text, 101, Some(&vrrpd)).unwrap();
        let logs = || format!("{}\n{}", ra.daemon.log(), rb.daemon.log());
        // a waits its Master_Down_Interval (3.6 s) hearing b's adverts of its own priority,
        // and stays backup all along: judged on the wire, where a backup sends nothing. A
        // takeover undone at once would still have sent an advert and gratuitous ARPs from a.
        let wire = Wire::start(&lab, "stays");
        std::thread::sleep(Duration::from_secs(5));
        let seen = wire.stop();
        let a_ip = a.ipv4().to_string();
        let a_mac = a.mac().unwrap();
        assert!(
            seen.adverts_from(&a_ip).next().is_none()
                && seen.garps(vip).iter().all(|g| g.eth_src != a_mac),
            "{case}: a advertised or announced the VIP\n{seen}\n{}",
            logs()
        );
        assert!(
            seen.adverts_from(&b.ipv4().to_string()).count() >= 4,
            "{case}: b's adverts (1 s) not on the wire\n{seen}"
        );
        assert!(
            b.has_address(vip) && !a.has_address(vip),
            "{case}: the VIP moved\n{}",
            logs()
        );
        rb.daemon.stop();
        wait_for(Duration::from_secs(6), Duration::from_millis(20), || {
            a.has_address(vip)
        })
        .unwrap_or_else(|| panic!("{case}: a did not take over\n{}", ra.daemon.log()));
        eprintln!("{case}: b held the VIP, a took it over when b stopped");
    }
}
