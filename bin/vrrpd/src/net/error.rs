//! The one error type of [`crate::net`]: every variant names the interface and what was being
//! done, so a log line alone says where to look.

use std::net::IpAddr;

/// What went wrong in a network operation, and where.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A socket call failed: `operation` says which one and with what (group, address, option).
    #[error("{interface}: {operation}: {source}")]
    Io {
        /// The interface the socket serves.
        interface: String,
        /// What was being done, e.g. `join 224.0.0.18` or `send to 198.51.100.7`.
        operation: String,
        /// The error the kernel returned.
        #[source]
        source: std::io::Error,
    },

    /// An rtnetlink request failed.
    #[error("{interface}: {operation}: {source}")]
    Netlink {
        /// The interface concerned.
        interface: String,
        /// What was being done, e.g. `add address 192.0.2.5/32`.
        operation: String,
        /// The kernel's answer as an OS error where it gave an errno, otherwise rtnetlink's.
        #[source]
        source: std::io::Error,
    },

    /// No interface has this name in the caller's network namespace.
    #[error("no interface named {interface:?} in this network namespace (see `ip link`)")]
    NoSuchInterface {
        /// The name looked up.
        interface: String,
    },

    /// The interface lacks an address that the operation needs.
    #[error("{interface}: has no {what}")]
    NoAddress {
        /// The interface.
        interface: String,
        /// What kind of address was wanted, e.g. `usable IPv6 link-local address`.
        what: String,
    },

    /// The interface has no Ethernet (6-byte) hardware address, so no ARP or NA can be sent.
    #[error("{interface}: has no Ethernet MAC address; gratuitous ARP and NA need one")]
    NoMac {
        /// The interface.
        interface: String,
    },

    /// An address of the wrong family was given, e.g. an IPv6 peer for an IPv4 socket.
    #[error("{interface}: {address} is not an {expected} address ({operation})")]
    WrongFamily {
        /// The interface.
        interface: String,
        /// The offending address.
        address: IpAddr,
        /// `IPv4` or `IPv6`.
        expected: &'static str,
        /// What it was given for.
        operation: &'static str,
    },

    /// A datagram arrived that is not a well-formed IP datagram carrying VRRP (or was cut
    /// short). The receive loop should count it and carry on: it is the network's fault, not the
    /// socket's.
    #[error("{interface}: dropped a malformed datagram: {source}")]
    Malformed {
        /// The interface it arrived on.
        interface: String,
        /// Why it was rejected.
        #[source]
        source: ipi_core::vrrp::Error,
    },

    /// An advertisement could not be encoded for a destination (the codec refused it).
    #[error("{interface}: cannot encode the advertisement for {dst}: {source}")]
    Encode {
        /// The interface.
        interface: String,
        /// The destination it was encoded for.
        dst: IpAddr,
        /// The codec's reason.
        #[source]
        source: ipi_core::vrrp::Error,
    },

    /// The kernel left out receive metadata this socket asked for (a kernel or setup bug).
    #[error("{interface}: received a datagram without the {what} control message")]
    MissingControl {
        /// The interface.
        interface: String,
        /// `IPV6_PKTINFO` or `IPV6_HOPLIMIT`.
        what: &'static str,
    },

    /// The netlink connection behind a link watcher closed.
    #[error("{interface}: link watch ended: the rtnetlink connection closed")]
    WatchClosed {
        /// The watched interface.
        interface: String,
    },
}

impl Error {
    /// True for the errors that concern one received datagram only ([`Error::Malformed`]): the
    /// socket is fine and the caller should count the datagram and receive again.
    pub fn is_per_datagram(&self) -> bool {
        matches!(self, Error::Malformed { .. })
    }

    pub(crate) fn io(
        interface: &str,
        operation: impl Into<String>,
    ) -> impl FnOnce(std::io::Error) -> Error {
        let interface = interface.to_owned();
        let operation = operation.into();
        move |source| Error::Io {
            interface,
            operation,
            source,
        }
    }

    pub(crate) fn netlink(
        interface: &str,
        operation: impl Into<String>,
    ) -> impl FnOnce(rtnetlink::Error) -> Error {
        let interface = interface.to_owned();
        let operation = operation.into();
        move |source| Error::Netlink {
            interface,
            operation,
            source: netlink_to_io(source),
        }
    }
}

/// The errno in a netlink error message, if it carries one (negative in the message).
pub(crate) fn netlink_errno(error: &rtnetlink::Error) -> Option<i32> {
    match error {
        rtnetlink::Error::NetlinkError(message) => message.code.map(|code| -code.get()),
        _ => None,
    }
}

/// rtnetlink's error as an `io::Error`: the OS error when the kernel sent an errno (so
/// `Display` reads "File exists (os error 17)"), otherwise rtnetlink's own text.
pub(crate) fn netlink_to_io(error: rtnetlink::Error) -> std::io::Error {
    match netlink_errno(&error) {
        Some(errno) => std::io::Error::from_raw_os_error(errno),
        None => std::io::Error::other(error.to_string()),
    }
}
