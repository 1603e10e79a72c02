//! An IPv6 VIP is deprecated (`preferred_lft 0`, keepalived's default for IPv6) and so stays
//! out of the node's own source address selection (RFC 6724 rule 3 avoids deprecated
//! addresses), as a peer sees it: a TCP connection from the VIP holder to a client arrives
//! from the node's own address. With `preferred_lft forever` the same VIP, one bit closer to
//! the client than the node's address, is the source (rule 8, the longest matching prefix):
//! the control that shows the test can fail. vrrpd and keepalived on the same file.

// Helpers outside #[test] functions unwrap too: a panic there is a test failure.
#![allow(clippy::unwrap_used)]

use std::net::{IpAddr, Ipv6Addr, SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::time::Duration;

use ipi_lab::{wait_for, Host, Lab};
use ipi_net_tests::vrrp::{Router, Speaker};
use support::holds;

#[allow(dead_code, reason = "this test uses a few of the shared helpers")]
mod support;

/// The port the client listens on.
const PORT: u16 = 9077;

/// The source address of a TCP connection from `from` to `client`, as `client` accepts it.
fn source_seen_by(client: &Host, from: &Host) -> IpAddr {
    let to = SocketAddr::from((client.ipv6(), PORT));
    let listener = client
        .within(|| {
            let l = TcpListener::bind(SocketAddr::from((Ipv6Addr::UNSPECIFIED, PORT)))?;
            l.set_nonblocking(true)?;
            Ok(l)
        })
        .unwrap();
    let _stream = from
        .within(|| TcpStream::connect_timeout(&to, Duration::from_secs(2)))
        .unwrap();
    let mut peer = None;
    wait_for(Duration::from_secs(2), Duration::from_millis(10), || {
        peer = listener.accept().ok().map(|(_, at)| at.ip());
        peer.is_some()
    });
    peer.unwrap_or_else(|| panic!("no connection from {} reached {to}", from.name()))
}

/// What a client sees as the source of a connection from the holder of a VIP (given with
/// `options` in the configuration), the instance run by `speaker`: (the source, the VIP, the
/// holder's own address).
fn source_with(speaker: Speaker, options: &str) -> (IpAddr, IpAddr, IpAddr) {
    let mut lab = Lab::new().unwrap();
    let a = lab.host("a").unwrap();
    let client = lab.host("client").unwrap();
    // One bit from the client's address: closer to it than a's own (rule 8 would pick it).
    let vip = Ipv6Addr::from(u128::from(client.ipv6()) ^ 1);
    assert_ne!(vip, a.ipv6());
    let conf = format!(
        "vrrp_instance VI_6 {{\n    interface eth0\n    native_ipv6\n    version 3\n    \
         virtual_router_id 76\n    priority 150\n    advert_int 0.1\n    virtual_ipaddress {{\n        \
         {vip}/128 {options}\n    }}\n}}\n"
    );
    let program = PathBuf::from(env!("CARGO_BIN_EXE_vrrpd"));
    let router = Router::start_with(&a, speaker, &conf, 150, Some(&program)).unwrap();
    let held = wait_for(Duration::from_secs(5), Duration::from_millis(20), || {
        holds(&a, IpAddr::V6(vip))
    });
    assert!(held.is_some(), "{}: {vip} never held", speaker.name());
    let source = source_seen_by(&client, &a);
    drop(router);
    (source, IpAddr::V6(vip), IpAddr::V6(a.ipv6()))
}

#[test]
fn an_ipv6_vip_stays_out_of_source_selection_unless_preferred_lft_forever_as_with_keepalived() {
    if !ipi_lab::available() {
        return;
    }
    for speaker in [Speaker::Vrrpd, Speaker::Keepalived] {
        // (the VIP's options, whether the VIP is the source).
        for (options, vip_is_source) in [
            ("preferred_lft forever", true),
            ("", false),
            ("preferred_lft 0", false),
        ] {
            let (source, vip, own) = source_with(speaker, options);
            let want = if vip_is_source { vip } else { own };
            assert_eq!(
                source,
                want,
                "{}: `{vip}/128 {options}`: the source of the node's connection",
                speaker.name()
            );
            eprintln!("{}: `{vip}/128 {options}`: source {source}", speaker.name());
        }
    }
}
