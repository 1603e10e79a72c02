//! An interface's up/down state as a stream of changes, for keepalived's `track_interface`
//! (and for the Fault state of an instance whose own interface goes down).
//!
//! "Up" means what keepalived means: administratively up *and* running (`IFF_UP` and
//! `IFF_RUNNING`), so `ip link set dev X down`, a lost carrier and a veth whose peer went down
//! all count as down. The watcher subscribes to rtnetlink's link group (`RTNLGRP_LINK`) first
//! and only then asks for the current state, so no change can fall between the two.
//!
//! The kernel sends a link message for many reasons (statistics, MTU, addresses of the
//! hardware); only changes of "up" are reported. Deleting the interface reports it down with
//! [`LinkState::present`] false; an interface created again under the same name is followed
//! (under its new index).

use std::net::IpAddr;

use futures_util::{FutureExt, Stream, StreamExt, TryStreamExt};
use rtnetlink::packet_core::{NetlinkMessage, NetlinkPayload};
use rtnetlink::packet_route::link::{LinkAttribute, LinkFlags, LinkMessage, State};
use rtnetlink::packet_route::RouteNetlinkMessage;
use rtnetlink::sys::SocketAddr;
use rtnetlink::MulticastGroup;
use tokio::task::JoinHandle;

use super::error::{netlink_errno, Error};

/// The state of a watched interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkState {
    /// The interface name.
    pub name: String,
    /// Its index (0 once deleted).
    pub index: u32,
    /// Administratively up and running: what `track_interface` tracks.
    pub up: bool,
    /// `IFF_UP`: `ip link set dev X up`.
    pub admin_up: bool,
    /// `IFF_LOWER_UP`: carrier.
    pub lower_up: bool,
    /// The RFC 2863 operational state, as `ip link` shows it (`UP`, `DOWN`,
    /// `LOWERLAYERDOWN`, `UNKNOWN`, ...).
    pub oper_state: String,
    /// False once the interface has been deleted.
    pub present: bool,
}

type Messages =
    futures_util::stream::BoxStream<'static, (NetlinkMessage<RouteNetlinkMessage>, SocketAddr)>;

/// Watches one interface. Dropping it closes the netlink socket.
pub struct LinkWatcher {
    messages: Messages,
    task: JoinHandle<()>,
    current: LinkState,
}

impl std::fmt::Debug for LinkWatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LinkWatcher")
            .field("current", &self.current)
            .finish_non_exhaustive()
    }
}

impl Drop for LinkWatcher {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl LinkWatcher {
    /// Starts watching `interface` in the caller's network namespace; the connection runs on
    /// the current tokio runtime. Fails if there is no such interface now.
    pub async fn new(interface: &str) -> Result<Self, Error> {
        let w = Self::new_or_absent(interface).await?;
        if w.current.present {
            Ok(w)
        } else {
            Err(Error::NoSuchInterface {
                interface: interface.to_owned(),
            })
        }
    }

    /// Starts watching `interface`, which may not exist yet: then it is reported absent
    /// ([`LinkState::present`] false, down) and followed by name, so that its creation is the
    /// first change [`LinkWatcher::changed`] reports (an interface that comes late: a veth or
    /// a bridge that another service creates after vrrpd started).
    pub async fn new_or_absent(interface: &str) -> Result<Self, Error> {
        let (connection, handle, messages) =
            rtnetlink::new_multicast_connection(&[MulticastGroup::Link])
                .map_err(Error::io(interface, "subscribe to rtnetlink link events"))?;
        let task = tokio::spawn(connection);
        // Subscribed first, then asked: a change after the answer is in `messages`.
        let mut links = handle
            .link()
            .get()
            .match_name(interface.to_owned())
            .execute();
        let current = match links.try_next().await {
            Ok(Some(link)) => state_from(&link, interface),
            Ok(None) => absent(interface),
            Err(e) if netlink_errno(&e) == Some(libc::ENODEV) => absent(interface),
            Err(e) => {
                task.abort();
                return Err(Error::netlink(interface, "look up interface")(e));
            }
        };
        Ok(LinkWatcher {
            messages: messages.boxed(),
            task,
            current,
        })
    }

    /// The state now (as of the last message read).
    pub fn current(&self) -> &LinkState {
        &self.current
    }

    /// Waits for the next change of [`LinkState::up`] (or of [`LinkState::present`]) and
    /// returns the new state.
    pub async fn changed(&mut self) -> Result<LinkState, Error> {
        loop {
            let Some((message, _)) = self.messages.next().await else {
                return Err(Error::WatchClosed {
                    interface: self.current.name.clone(),
                });
            };
            let next = match message.payload {
                NetlinkPayload::InnerMessage(RouteNetlinkMessage::NewLink(link))
                    if self.concerns(&link) =>
                {
                    state_from(&link, &self.current.name)
                }
                NetlinkPayload::InnerMessage(RouteNetlinkMessage::DelLink(link))
                    if self.concerns(&link) =>
                {
                    absent(&self.current.name)
                }
                _ => continue,
            };
            let changed = next.up != self.current.up || next.present != self.current.present;
            self.current = next;
            if changed {
                tracing::debug!(?self.current, "link state changed");
                return Ok(self.current.clone());
            }
        }
    }

    /// The changes as a stream (see [`LinkWatcher::changed`]); it ends after an error.
    pub fn into_stream(self) -> impl Stream<Item = Result<LinkState, Error>> {
        futures_util::stream::unfold(Some(self), |watcher| async move {
            let mut watcher = watcher?;
            match watcher.changed().await {
                Ok(state) => Some((Ok(state), Some(watcher))),
                Err(e) => Some((Err(e), None)),
            }
        })
    }

    /// Is this message about the watched interface? By index while it exists; by name once it
    /// was deleted (or renamed away), so that an interface created again is followed.
    fn concerns(&self, link: &LinkMessage) -> bool {
        if self.current.present && link.header.index == self.current.index {
            return true;
        }
        link_name(link) == Some(self.current.name.as_str())
    }
}

/// An interface that does not exist (yet, or any more).
fn absent(name: &str) -> LinkState {
    LinkState {
        index: 0,
        up: false,
        admin_up: false,
        lower_up: false,
        oper_state: "NOTPRESENT".to_owned(),
        present: false,
        name: name.to_owned(),
    }
}

fn link_name(link: &LinkMessage) -> Option<&str> {
    link.attributes.iter().find_map(|a| match a {
        LinkAttribute::IfName(name) => Some(name.as_str()),
        _ => None,
    })
}

fn state_from(link: &LinkMessage, name: &str) -> LinkState {
    let flags = link.header.flags;
    let oper = link
        .attributes
        .iter()
        .find_map(|a| match a {
            LinkAttribute::OperState(state) => Some(*state),
            _ => None,
        })
        .unwrap_or(State::Unknown);
    let admin_up = flags.contains(LinkFlags::Up);
    LinkState {
        name: link_name(link).unwrap_or(name).to_owned(),
        index: link.header.index,
        up: admin_up && flags.contains(LinkFlags::Running),
        admin_up,
        lower_up: flags.contains(LinkFlags::LowerUp),
        oper_state: oper_state_name(oper),
        present: true,
    }
}

/// The names `ip link` prints (iproute2's `oper_states`).
fn oper_state_name(state: State) -> String {
    match state {
        State::Unknown => "UNKNOWN".to_owned(),
        State::NotPresent => "NOTPRESENT".to_owned(),
        State::Down => "DOWN".to_owned(),
        State::LowerLayerDown => "LOWERLAYERDOWN".to_owned(),
        State::Testing => "TESTING".to_owned(),
        State::Dormant => "DORMANT".to_owned(),
        State::Up => "UP".to_owned(),
        State::Other(n) => format!("{n}"),
        other => format!("{other:?}"),
    }
}

/// Address changes on any interface (rtnetlink's IPv4 and IPv6 address groups), reported as
/// the addresses that changed: the caller looks again at what it cares about, and only when a
/// change concerns it. For an address that moves from one interface to another (a bridge such
/// as br-ex taking the node's address from its port), so that a source address the interface
/// lost is noticed at once. Dropping it closes the netlink socket.
///
/// A master taking over 1,000 instances adds 1,000 VIPs, one event each: looking again at
/// every interface's addresses on each of them would be a million addresses parsed on the
/// daemon's one thread, holding its adverts and timers back (a backup that took over, a
/// master that missed its advert deadline).
pub struct AddressWatcher {
    messages: Messages,
    task: JoinHandle<()>,
}

impl std::fmt::Debug for AddressWatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AddressWatcher").finish_non_exhaustive()
    }
}

impl Drop for AddressWatcher {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl AddressWatcher {
    /// Subscribes to address changes in the caller's network namespace; the connection runs
    /// on the current tokio runtime. Subscribe first, then look: a change after the look is
    /// reported.
    pub fn new() -> Result<Self, Error> {
        let (connection, _handle, messages) = rtnetlink::new_multicast_connection(&[
            MulticastGroup::Ipv4Ifaddr,
            MulticastGroup::Ipv6Ifaddr,
        ])
        .map_err(Error::io("*", "subscribe to rtnetlink address events"))?;
        Ok(AddressWatcher {
            messages: messages.boxed(),
            task: tokio::spawn(connection),
        })
    }

    /// Waits until an address is added or removed anywhere; returns the addresses that changed
    /// (`None`: a change whose address could not be read; look at everything), with the ones
    /// already waiting behind the first.
    pub async fn changed(&mut self) -> Result<Vec<Option<IpAddr>>, Error> {
        let mut changed = Vec::new();
        loop {
            let next = if changed.is_empty() {
                self.messages.next().await
            } else {
                match self.messages.next().now_or_never() {
                    Some(next) => next,
                    None => return Ok(changed),
                }
            };
            let Some((message, _)) = next else {
                return if changed.is_empty() {
                    Err(Error::WatchClosed {
                        interface: "*".to_owned(),
                    })
                } else {
                    Ok(changed)
                };
            };
            if let NetlinkPayload::InnerMessage(
                RouteNetlinkMessage::NewAddress(m) | RouteNetlinkMessage::DelAddress(m),
            ) = &message.payload
            {
                changed.push(super::address::address_of(m));
            }
        }
    }
}
