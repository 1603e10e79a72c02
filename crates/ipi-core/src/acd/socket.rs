//! `AF_PACKET` sockets bound to one interface: whole Ethernet frames out (vrrpd's
//! announcements, the probes) and, for the probes, every frame of the link in.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Duration;

use super::frame::Mac;

/// How long a send may wait for room in the interface's queue before it is reported.
const SEND_TIMEOUT: Duration = Duration::from_millis(200);

/// `ETH_P_ALL` in network byte order, as `socket(2)` and `sockaddr_ll` want it.
fn all_protocols() -> u16 {
    u16::try_from(libc::ETH_P_ALL).unwrap_or(3).to_be()
}

/// `socket(AF_PACKET, SOCK_RAW, 0)` bound to interface `index`: it sends whole Ethernet frames
/// there and, with protocol 0, receives none.
pub fn open_sender(index: u32) -> std::io::Result<OwnedFd> {
    open(index, 0)
}

/// `socket(AF_PACKET, SOCK_RAW, ETH_P_ALL)` bound to interface `index`, in all-multicast mode
/// for as long as it is open (a solicitation goes to a solicited-node group that the
/// interface has not joined: RFC 4862 5.4.3's simultaneous probes would be filtered out on a
/// real NIC). It receives every frame of the link, its own sends too (see [`receive`]).
pub fn open_listener(index: u32) -> std::io::Result<OwnedFd> {
    let fd = open(index, all_protocols())?;
    let request = libc::packet_mreq {
        mr_ifindex: i32::try_from(index).unwrap_or(0),
        mr_type: u16::try_from(libc::PACKET_MR_ALLMULTI).unwrap_or(2),
        mr_alen: 0,
        mr_address: [0; 8],
    };
    setsockopt(&fd, libc::SOL_PACKET, libc::PACKET_ADD_MEMBERSHIP, &request)?;
    Ok(fd)
}

#[allow(unsafe_code)]
fn open(index: u32, protocol: u16) -> std::io::Result<OwnedFd> {
    // SAFETY: socket(2) with constant arguments; a non-negative result is a new descriptor
    // that nothing else owns, handed to OwnedFd at once.
    let raw = unsafe {
        libc::socket(
            libc::AF_PACKET,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC,
            i32::from(protocol),
        )
    };
    if raw < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `raw` is a valid descriptor returned above and owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    let timeout = libc::timeval {
        tv_sec: 0,
        tv_usec: libc::suseconds_t::try_from(SEND_TIMEOUT.as_micros()).unwrap_or(200_000),
    };
    setsockopt(&fd, libc::SOL_SOCKET, libc::SO_SNDTIMEO, &timeout)?;
    let address = link_address(index, protocol, [0; 6]);
    // SAFETY: bind(2) with a sockaddr_ll and its length.
    let r = unsafe {
        libc::bind(
            fd.as_raw_fd(),
            std::ptr::from_ref(&address).cast(),
            socklen_of::<libc::sockaddr_ll>(),
        )
    };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(fd)
}

#[allow(unsafe_code)]
fn setsockopt<T>(fd: &OwnedFd, level: i32, name: i32, value: &T) -> std::io::Result<()> {
    // SAFETY: the pointer and length describe `value`, which the option expects.
    let r = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            std::ptr::from_ref(value).cast(),
            socklen_of::<T>(),
        )
    };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// The hardware address of the interface a packet socket is bound to (the kernel fills
/// `sll_addr` from the device), or `None` when it has no 6-byte one.
#[allow(unsafe_code)]
pub fn bound_mac(fd: &OwnedFd) -> std::io::Result<Option<Mac>> {
    // SAFETY: sockaddr_ll is plain old data; all zeroes is a valid value.
    let mut address: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    let mut len = socklen_of::<libc::sockaddr_ll>();
    // SAFETY: getsockname(2) writes at most `len` bytes into `address`.
    let r = unsafe {
        libc::getsockname(
            fd.as_raw_fd(),
            std::ptr::from_mut(&mut address).cast(),
            &raw mut len,
        )
    };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    if address.sll_halen != 6 {
        return Ok(None);
    }
    let mut mac = [0u8; 6];
    mac.copy_from_slice(&address.sll_addr[..6]);
    Ok(Some(mac))
}

/// Sends one whole Ethernet frame out of interface `index`.
#[allow(unsafe_code)]
pub fn send_frame(fd: &OwnedFd, index: u32, frame: &[u8]) -> std::io::Result<()> {
    let mut destination = [0u8; 6];
    if let Some(d) = frame.get(..6) {
        destination.copy_from_slice(d);
    }
    let address = link_address(index, 0, destination);
    // SAFETY: sendto(2) with a buffer and its length, and a sockaddr_ll and its length.
    let sent = unsafe {
        libc::sendto(
            fd.as_raw_fd(),
            frame.as_ptr().cast(),
            frame.len(),
            0,
            std::ptr::from_ref(&address).cast(),
            socklen_of::<libc::sockaddr_ll>(),
        )
    };
    match usize::try_from(sent) {
        Ok(n) if n == frame.len() => Ok(()),
        Ok(n) => Err(std::io::Error::other(format!(
            "sent {n} of {} bytes",
            frame.len()
        ))),
        Err(_) => Err(std::io::Error::last_os_error()),
    }
}

/// Waits up to `timeout` for a frame and reads it into `buffer`: `Ok(Some(len))` for a frame
/// that came in from the link, `Ok(None)` when none came in time or it was one of this host's
/// own sends (`PACKET_OUTGOING`), which is never an answer.
#[allow(unsafe_code)]
pub fn receive(
    fd: &OwnedFd,
    buffer: &mut [u8],
    timeout: Duration,
) -> std::io::Result<Option<usize>> {
    let mut poll = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = i32::try_from(timeout.as_millis()).unwrap_or(i32::MAX);
    // SAFETY: poll(2) on one pollfd.
    let ready = unsafe { libc::poll(&raw mut poll, 1, ms) };
    if ready < 0 {
        let e = std::io::Error::last_os_error();
        return if e.kind() == std::io::ErrorKind::Interrupted {
            Ok(None)
        } else {
            Err(e)
        };
    }
    if ready == 0 {
        return Ok(None);
    }
    // SAFETY: sockaddr_ll is plain old data; all zeroes is a valid value.
    let mut from: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    let mut len = socklen_of::<libc::sockaddr_ll>();
    // SAFETY: recvfrom(2) writes at most buffer.len() bytes into buffer and at most `len`
    // into `from`.
    let n = unsafe {
        libc::recvfrom(
            fd.as_raw_fd(),
            buffer.as_mut_ptr().cast(),
            buffer.len(),
            libc::MSG_DONTWAIT,
            std::ptr::from_mut(&mut from).cast(),
            &raw mut len,
        )
    };
    let Ok(n) = usize::try_from(n) else {
        let e = std::io::Error::last_os_error();
        return if e.kind() == std::io::ErrorKind::WouldBlock {
            Ok(None)
        } else {
            Err(e)
        };
    };
    Ok((from.sll_pkttype != libc::PACKET_OUTGOING).then_some(n))
}

fn link_address(index: u32, protocol: u16, destination: [u8; 6]) -> libc::sockaddr_ll {
    let mut addr = [0u8; 8];
    addr[..6].copy_from_slice(&destination);
    libc::sockaddr_ll {
        sll_family: u16::try_from(libc::AF_PACKET).unwrap_or(17),
        // Protocol 0 for a sender: it receives nothing (the frames carry their own EtherType).
        sll_protocol: protocol,
        sll_ifindex: i32::try_from(index).unwrap_or(0),
        sll_hatype: 0,
        sll_pkttype: 0,
        sll_halen: 6,
        sll_addr: addr,
    }
}

fn socklen_of<T>() -> libc::socklen_t {
    libc::socklen_t::try_from(std::mem::size_of::<T>()).unwrap_or(0)
}

/// The index of interface `name` in the caller's network namespace; `None` when there is none.
#[allow(unsafe_code)]
pub fn index_of(name: &str) -> Option<u32> {
    let name = std::ffi::CString::new(name).ok()?;
    // SAFETY: if_nametoindex(3) reads a NUL-terminated string.
    let index = unsafe { libc::if_nametoindex(name.as_ptr()) };
    (index != 0).then_some(index)
}
