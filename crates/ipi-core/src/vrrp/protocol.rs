//! VRRP's numbers and kinds: its protocol number, message type and hop limit, the version, the
//! authentication of VRRPv2 and the checksum's coverage of VRRPv3 over IPv4.

/// The IP protocol number (IPv4) and next-header value (IPv6) of VRRP (RFC 5798 5.1.1.4,
/// 5.1.2.4).
pub const PROTOCOL: u8 = 112;

/// The only VRRP message type: an advertisement (RFC 3768 5.3.2, RFC 5798 5.2.2).
pub const TYPE_ADVERTISEMENT: u8 = 1;

/// The TTL / hop limit every advertisement is sent with; receivers discard others
/// (RFC 3768 7.1, RFC 5798 7.1). The codec reports it, the receive checks enforce it.
pub const HOP_LIMIT: u8 = 255;

/// The VRRP protocol version, which fixes the message layout and the interval unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Version {
    /// VRRPv2 (RFC 3768): IPv4 only, interval in whole seconds, 8 bytes of authentication data.
    V2,
    /// VRRPv3 (RFC 5798): IPv4 and IPv6, interval in centiseconds, no authentication.
    V3,
}

impl Version {
    /// The number carried in the version field (2 or 3).
    pub const fn number(self) -> u8 {
        match self {
            Version::V2 => 2,
            Version::V3 => 3,
        }
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "VRRPv{}", self.number())
    }
}

/// The length of VRRPv2's simple-text password (RFC 2338 5.3.6, kept by RFC 3768 5.3.10).
pub const PASS_LEN: usize = 8;

/// VRRPv2 authentication (RFC 3768 5.3.6). VRRPv3 has none: RFC 5798 removed it, so a v3
/// [`Repr`](super::Repr) always carries [`Auth::None`]. `Debug` prints a PASS password redacted
/// ([`crate::secret::REDACTED`]), so no log line of a datagram or an expectation shows it.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub enum Auth {
    /// Auth Type 0. For v2 the 8 bytes of authentication data are sent as zero and ignored on
    /// receipt (RFC 3768 5.3.10).
    None,
    /// Auth Type 1, RFC 2338's simple text password: the 8 bytes of authentication data,
    /// zero-padded. RFC 3768 reserves the type only for compatibility, but keepalived still
    /// sends it (`auth_type PASS`), and OpenShift renders it.
    Pass([u8; PASS_LEN]),
    /// Auth Type 2, RFC 2338's IP Authentication Header, as keepalived sends it
    /// (`auth_type AH`): the 8 bytes of authentication data are zero, and the authentication
    /// is an AH header before the message (see [`ah`](super::ah)), keyed with the password.
    Ah,
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Auth::None => f.write_str("None"),
            Auth::Pass(_) => write!(f, "Pass({})", crate::secret::REDACTED),
            Auth::Ah => f.write_str("Ah"),
        }
    }
}

impl Auth {
    /// The [`Auth::Pass`] that keepalived sends for `auth_pass password`.
    ///
    /// keepalived copies the password with `strncpy` into an 8-byte field: only the first 8
    /// bytes go on the wire (it logs a warning and truncates, so `ocp4_api_vip` is sent as
    /// `ocp4_api`), a shorter password is zero-padded, and copying stops at a NUL byte. Callers
    /// that want to warn about truncation can compare `password.len()` with [`PASS_LEN`].
    pub fn pass(password: &str) -> Self {
        let mut data = [0u8; PASS_LEN];
        for (slot, byte) in data
            .iter_mut()
            .zip(password.bytes().take_while(|&b| b != 0))
        {
            *slot = byte;
        }
        Auth::Pass(data)
    }

    /// The Auth Type field value (RFC 3768 5.3.6).
    pub const fn auth_type(&self) -> u8 {
        match self {
            Auth::None => 0,
            Auth::Pass(_) => 1,
            Auth::Ah => 2,
        }
    }
}

/// Which bytes the VRRPv3 checksum covers over IPv4. VRRPv2 never uses a pseudo-header
/// (RFC 3768 5.3.8) and VRRPv3 over IPv6 always does (RFC 5798 5.2.8), so this only matters for
/// VRRPv3 over IPv4, where implementations disagree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ChecksumMode {
    /// Sum the IPv4 pseudo-header (source, destination, zero, protocol 112, VRRP length) and then
    /// the message: RFC 5798 5.2.8 read literally, and what keepalived and FRR send by default.
    #[default]
    PseudoHeader,
    /// Sum the message only, as for VRRPv2: the reading RFC 9568 5.2.8 made normative for IPv4,
    /// and what Cisco and others send (keepalived's `v3_checksum_as_v2`, FRR without
    /// `checksum-with-ipv4-pseudoheader`).
    NoPseudoHeader,
}
