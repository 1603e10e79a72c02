//! The receive checks (RFC 3768 7.1, RFC 5798 7.1, keepalived's vrrp_check_packet): what a
//! received datagram must pass before the state machine sees it. Every rejection has a reason,
//! counted by name in `vrrpd status`.

use std::net::IpAddr;

use ipi_core::vrrp::{
    self, ah, Auth, ChecksumMode, Packet, RawDatagram as Datagram, Repr, Version,
};

use crate::fsm::Event;

/// Why a datagram was dropped. The names are what `vrrpd status` counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Reject {
    /// Multicast with a TTL / hop limit other than 255: it crossed a router (RFC 5798 7.1).
    HopLimit,
    /// Not a VRRP message at all: too short, wrong length for its address count.
    Length,
    /// Not version 2 or 3, or not the instance's version.
    Version,
    /// Type other than ADVERTISEMENT.
    Type,
    /// A bad checksum.
    Checksum,
    /// A virtual router id that no instance here runs.
    Vrid,
    /// The authentication type differs from ours (v2).
    AuthType,
    /// The PASS password differs (its first 8 bytes, as keepalived compares), or an AH
    /// header's ICV does not verify under our key or its SPI is not its sender's address.
    Password,
    /// An AH header's sequence number not above the last one sent or accepted: a replay.
    Replay,
    /// The addresses differ from our virtual addresses (count or list).
    Addresses,
    /// In unicast mode, a sender that is not one of our peers.
    UnknownPeer,
    /// In multicast mode, an advert sent to one of our own addresses rather than to the group.
    Unicast,
    /// Anything else the codec refuses (mixed families, a v2 interval out of range...).
    Malformed,
}

impl Reject {
    /// The counter's name.
    pub fn name(self) -> &'static str {
        match self {
            Reject::HopLimit => "hop_limit",
            Reject::Length => "length",
            Reject::Version => "version",
            Reject::Type => "type",
            Reject::Checksum => "checksum",
            Reject::Vrid => "vrid",
            Reject::AuthType => "auth_type",
            Reject::Password => "password",
            Reject::Replay => "replay",
            Reject::Addresses => "addresses",
            Reject::UnknownPeer => "unknown_peer",
            Reject::Unicast => "unicast",
            Reject::Malformed => "malformed",
        }
    }

    /// Whether the advert, on one of our VRIDs, comes from a router outside our group: another
    /// version, authentication, address list, or (unicast) not a listed peer. keepalived logs
    /// these; they are usually a second cluster whose VRIDs collide with ours.
    pub fn is_foreign(self) -> bool {
        match self {
            Reject::Version
            | Reject::AuthType
            | Reject::Password
            | Reject::Addresses
            | Reject::UnknownPeer => true,
            // Not a router of another group: a group's routers all send to the group, and a
            // host that sends to our address alone is a peer misconfigured or a forger.
            Reject::Unicast
            | Reject::Replay
            | Reject::HopLimit
            | Reject::Length
            | Reject::Type
            | Reject::Checksum
            | Reject::Vrid
            | Reject::Malformed => false,
        }
    }

    /// Why a router is foreign, for people: what differs from our instance `expect`.
    pub fn why_foreign(self, repr: &Repr, expect: &Expect) -> String {
        let list = |a: &[IpAddr]| {
            a.iter()
                .map(IpAddr::to_string)
                .collect::<Vec<_>>()
                .join(",")
        };
        match self {
            Reject::Version => format!(
                "it runs VRRPv{}, this instance v{}",
                repr.version.number(),
                expect.version.number()
            ),
            Reject::AuthType => "its authentication type differs".to_string(),
            Reject::Password => "its password differs".to_string(),
            Reject::Addresses => format!(
                "its addresses {} differ from ours {}",
                list(&repr.addresses),
                list(&expect.addresses)
            ),
            Reject::UnknownPeer => format!("it is not a unicast peer ({})", list(&expect.peers)),
            other => other.name().to_string(),
        }
    }

    /// The counter of a codec error. Every variant is named, so that a new one is a choice
    /// made here rather than a silent `malformed`.
    fn of(e: &vrrp::Error) -> Reject {
        use vrrp::Error as E;
        match e {
            E::Truncated { .. } | E::AddressCountMismatch { .. } | E::BufferLength { .. } => {
                Reject::Length
            }
            E::BadVersion(_) | E::V2OverIpv6 => Reject::Version,
            E::BadType(_) => Reject::Type,
            E::BadChecksum { .. } => Reject::Checksum,
            E::ZeroVrid => Reject::Vrid,
            E::UnsupportedAuthType(_) | E::AuthInV3 => Reject::AuthType,
            E::MixedFamilies { .. }
            | E::AddressFamilyMismatch { .. }
            | E::IntervalNotWholeSeconds(_)
            | E::IntervalTooLong { .. }
            | E::TooManyAddresses(_)
            | E::BadIpVersion(_)
            | E::BadIhl(_)
            | E::BadTotalLength { .. }
            | E::BadIpChecksum { .. }
            | E::Fragment { .. }
            | E::NotVrrp(_)
            | E::BadAhLength(_)
            | E::Ipv6ExtensionHeader(_) => Reject::Malformed,
        }
    }
}

/// What an instance expects of the adverts of its group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expect {
    /// The VRID.
    pub vrid: u8,
    /// The version.
    pub version: Version,
    /// The authentication (v2).
    pub auth: Auth,
    /// The AH header's key (`auth_type AH`).
    pub ah_key: Option<ah::Key>,
    /// The virtual addresses, in any order.
    pub addresses: Vec<IpAddr>,
    /// Unicast peers; empty in multicast mode.
    pub peers: Vec<IpAddr>,
    /// The TTL / hop limit range of a peer's adverts, for the peers written with one.
    pub peer_ttl: std::collections::BTreeMap<IpAddr, (u8, u8)>,
}

impl Expect {
    /// What the adverts of instance `i` of configuration `c` must look like (as the daemon
    /// builds it, without opening anything).
    pub fn of(c: &crate::config::Config, i: &crate::config::VrrpInstance) -> Expect {
        Expect {
            vrid: i.vrid,
            version: i.effective_version(&c.global),
            auth: i.auth(),
            ah_key: i.ah_key(),
            addresses: i.vips.iter().map(|v| v.address).collect(),
            peers: i.unicast_peers.clone(),
            peer_ttl: i.peer_ttl.clone(),
        }
    }
}

/// Whether a datagram sent to `dst` is meant for a receiver in unicast mode (`unicast`) or in
/// multicast mode. A raw socket bound to the interface receives every VRRP datagram on it: the
/// multicast socket also sees the unicast adverts sent to us, a unicast socket the group's.
/// When an instance of the same VRID runs in the other mode (keepalived keeps unicast and
/// multicast apart the same way), they are its: dropped here silently, neither counted nor
/// taken for a foreign router. Without one, [`check`] refuses a unicast advert to a multicast
/// instance ([`Reject::Unicast`]) and takes a unicast instance's from its listed peers only.
pub fn addressed(dst: IpAddr, unicast: bool) -> bool {
    dst.is_multicast() != unicast
}

/// Parses the message (version, type, length, checksum) and returns its VRID, or why not.
pub fn parse(d: &Datagram<'_>) -> Result<Repr, Reject> {
    if d.dst.is_multicast() && d.hop_limit != vrrp::HOP_LIMIT {
        return Err(Reject::HopLimit);
    }
    let packet = Packet::new_checked(d.payload).map_err(|e| Reject::of(&e))?;
    Repr::parse(&packet, d.src, d.dst, ChecksumMode::PseudoHeader).map_err(|e| Reject::of(&e))
}

/// The checks against one instance; the event for the state machine when they pass.
pub fn check(d: &Datagram<'_>, repr: &Repr, expect: &Expect) -> Result<Event, Reject> {
    if expect.peers.is_empty() {
        // A multicast instance's group sends to 224.0.0.18 / ff02::12 (RFC 5798 5.1.1.2) with
        // TTL 255 (7.1, checked in `parse`); keepalived's multicast instance never hears a
        // unicast advert. One sent to our address could come from off the link, its TTL set
        // to anything: heard, a single forged packet with a higher priority made a master
        // give the VIP up.
        if !d.dst.is_multicast() {
            return Err(Reject::Unicast);
        }
    } else if !expect.peers.contains(&d.src) {
        return Err(Reject::UnknownPeer);
    } else if let Some((min, max)) = expect.peer_ttl.get(&d.src) {
        // keepalived's min_ttl / max_ttl: a peer's adverts come over a known number of hops.
        if !(*min..=*max).contains(&d.hop_limit) {
            return Err(Reject::HopLimit);
        }
    }
    if repr.vrid != expect.vrid {
        return Err(Reject::Vrid);
    }
    if repr.version != expect.version {
        return Err(Reject::Version);
    }
    if expect.version == Version::V2 {
        authenticated(d, expect)?;
        match (&repr.auth, &expect.auth) {
            (Auth::Pass(got), Auth::Pass(want)) if !ipi_core::secret::eq(got, want) => {
                return Err(Reject::Password)
            }
            (got, want) if got.auth_type() != want.auth_type() => return Err(Reject::AuthType),
            _ => {}
        }
    }
    // RFC 3768 7.1 / 5798 7.1: MAY verify the address list; keepalived does, and a mismatch
    // is a misconfiguration worth seeing rather than a master to follow. An advert with
    // priority 0 or from the address owner is checked the same way.
    let same = repr.addresses.len() == expect.addresses.len()
        && repr.addresses.iter().all(|a| expect.addresses.contains(a));
    if !same {
        return Err(Reject::Addresses);
    }
    Ok(Event::Advert {
        from: d.src,
        priority: repr.priority,
        advert_int_cs: repr.advert_int,
    })
}

/// keepalived's AH: an instance with a key takes only datagrams with an AH header whose ICV
/// verifies under it and whose SPI is their sender (keepalived's vrrp_in_chk_ipsecah); one
/// without a key takes none with a header. The sequence number is the daemon's to judge.
fn authenticated(d: &Datagram<'_>, expect: &Expect) -> Result<(), Reject> {
    match (&d.ah, &expect.ah_key) {
        (None, None) => Ok(()),
        (Some(_), None) | (None, Some(_)) => Err(Reject::AuthType),
        (Some(header), Some(key)) => {
            let unicast = !expect.peers.is_empty();
            let sender = d.src == std::net::IpAddr::V4(header.spi());
            if header.verify(d.payload, key, unicast) && sender {
                Ok(())
            } else {
                Err(Reject::Password)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn expect() -> Expect {
        Expect {
            vrid: 51,
            version: Version::V2,
            auth: Auth::pass("secret"),
            addresses: vec![ip("192.0.2.100")],
            peers: Vec::new(),
            peer_ttl: Default::default(),
            ah_key: None,
        }
    }

    fn advert() -> Repr {
        Repr {
            version: Version::V2,
            vrid: 51,
            priority: 100,
            advert_int: 100,
            auth: Auth::pass("secret"),
            addresses: vec![ip("192.0.2.100")],
        }
    }

    fn bytes(repr: &Repr, src: &str, dst: &str) -> Vec<u8> {
        repr.to_bytes(ip(src), ip(dst), ChecksumMode::PseudoHeader)
            .unwrap()
    }

    fn run(repr: &Repr, hop: u8, expect: &Expect) -> Result<Event, Reject> {
        let payload = bytes(repr, "192.0.2.2", "224.0.0.18");
        let d = Datagram {
            src: ip("192.0.2.2"),
            dst: ip("224.0.0.18"),
            hop_limit: hop,
            payload: &payload,
            ah: None,
        };
        let parsed = parse(&d)?;
        check(&d, &parsed, expect)
    }

    #[test]
    fn a_good_advert_becomes_an_event() {
        let e = run(&advert(), 255, &expect()).unwrap();
        assert_eq!(
            e,
            Event::Advert {
                from: ip("192.0.2.2"),
                priority: 100,
                advert_int_cs: 100
            }
        );
    }

    #[test]
    fn every_reason() {
        assert_eq!(run(&advert(), 254, &expect()), Err(Reject::HopLimit));
        let mut r = advert();
        r.vrid = 52;
        assert_eq!(run(&r, 255, &expect()), Err(Reject::Vrid));
        let mut r = advert();
        r.auth = Auth::pass("secreT");
        assert_eq!(run(&r, 255, &expect()), Err(Reject::Password));
        let mut r = advert();
        r.auth = Auth::None;
        assert_eq!(run(&r, 255, &expect()), Err(Reject::AuthType));
        let mut r = advert();
        r.addresses.push(ip("192.0.2.101"));
        assert_eq!(run(&r, 255, &expect()), Err(Reject::Addresses));
        let mut r = advert();
        r.addresses = vec![ip("192.0.2.99")];
        assert_eq!(run(&r, 255, &expect()), Err(Reject::Addresses));
        let mut e = expect();
        e.version = Version::V3;
        assert_eq!(run(&advert(), 255, &e), Err(Reject::Version));
        let mut e = expect();
        e.peers = vec![ip("192.0.2.3")];
        assert_eq!(run(&advert(), 255, &e), Err(Reject::UnknownPeer));
    }

    #[test]
    fn a_multicast_instance_refuses_unicast_adverts_and_a_unicast_one_takes_its_peers() {
        // A higher priority with TTL 255, sent to our address: a forger's best try.
        let mut r = advert();
        r.priority = 254;
        let payload = bytes(&r, "192.0.2.2", "192.0.2.1");
        let d = Datagram {
            src: ip("192.0.2.2"),
            dst: ip("192.0.2.1"),
            hop_limit: 255,
            payload: &payload,
            ah: None,
        };
        let parsed = parse(&d).unwrap();
        assert_eq!(check(&d, &parsed, &expect()), Err(Reject::Unicast));
        assert!(!Reject::Unicast.is_foreign());
        // The same datagram to a unicast instance that lists the sender is heard (the
        // positive control), and one from a sender it does not list is not.
        let mut e = expect();
        e.peers = vec![ip("192.0.2.2")];
        assert!(check(&d, &parsed, &e).is_ok());
        e.peers = vec![ip("192.0.2.3")];
        assert_eq!(check(&d, &parsed, &e), Err(Reject::UnknownPeer));
    }

    #[test]
    fn a_peer_with_a_ttl_range_is_heard_only_within_it() {
        // keepalived's `unicast_peer { 192.0.2.2 min_ttl 255 max_ttl 255 }`: the peer is on
        // the link, so an advert from its address that crossed a router is not its own.
        let payload = bytes(&advert(), "192.0.2.2", "192.0.2.1");
        let at = |hop_limit| Datagram {
            src: ip("192.0.2.2"),
            dst: ip("192.0.2.1"),
            hop_limit,
            payload: &payload,
            ah: None,
        };
        let mut e = expect();
        e.peers = vec![ip("192.0.2.2"), ip("192.0.2.3")];
        e.peer_ttl.insert(ip("192.0.2.2"), (255, 255));
        let parsed = parse(&at(64)).unwrap();
        assert_eq!(check(&at(64), &parsed, &e), Err(Reject::HopLimit));
        assert!(check(&at(255), &parsed, &e).is_ok(), "within the range");
        // A peer written without a range is heard with any TTL (keepalived's 0 to 255).
        e.peer_ttl.clear();
        assert!(check(&at(64), &parsed, &e).is_ok());
    }

    #[test]
    fn only_the_first_eight_bytes_of_a_password_count() {
        let mut e = expect();
        e.auth = Auth::pass("managed_api_vip");
        let mut r = advert();
        r.auth = Auth::pass("managed_ingress_vip");
        assert!(run(&r, 255, &e).is_ok());
    }

    #[test]
    fn damaged_messages_are_named() {
        let mut payload = bytes(&advert(), "192.0.2.2", "224.0.0.18");
        payload[6] ^= 0xff;
        let d = Datagram {
            src: ip("192.0.2.2"),
            dst: ip("224.0.0.18"),
            hop_limit: 255,
            payload: &payload,
            ah: None,
        };
        assert_eq!(parse(&d), Err(Reject::Checksum));
        let d = Datagram {
            payload: &payload[..5],
            ah: None,
            ..d
        };
        assert_eq!(parse(&d), Err(Reject::Length));
        let mut payload = bytes(&advert(), "192.0.2.2", "224.0.0.18");
        payload[0] = 0x51;
        assert_eq!(
            parse(&Datagram {
                payload: &payload,
                ah: None,
                ..d
            }),
            Err(Reject::Version)
        );
        payload[0] = 0x22;
        assert_eq!(
            parse(&Datagram {
                payload: &payload,
                ah: None,
                ..d
            }),
            Err(Reject::Type)
        );
        // Unicast: the hop limit is not checked (keepalived does the same).
        let payload = bytes(&advert(), "192.0.2.2", "192.0.2.1");
        let d = Datagram {
            src: ip("192.0.2.2"),
            dst: ip("192.0.2.1"),
            hop_limit: 64,
            payload: &payload,
            ah: None,
        };
        assert!(parse(&d).is_ok());
    }

    #[test]
    fn each_socket_takes_the_datagrams_of_its_mode() {
        for group in ["224.0.0.18", "ff02::12"] {
            assert!(
                addressed(ip(group), false),
                "{group} on the multicast socket"
            );
            assert!(!addressed(ip(group), true), "{group} on a unicast socket");
        }
        for us in ["192.0.2.1", "2001:db8::1", "fe80::1"] {
            assert!(addressed(ip(us), true), "{us} on a unicast socket");
            assert!(!addressed(ip(us), false), "{us} on the multicast socket");
        }
    }
}
