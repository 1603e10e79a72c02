//! Routes and rules held with an instance's state (keepalived's `virtual_routes` and
//! `virtual_rules`) over rtnetlink, added
//! and removed as addresses are ([`super::address`]): idempotently, with keepalived's routing
//! protocol number (`RTPROT_KEEPALIVED`, 18, so `ip route show proto 18` lists them).

use std::fmt;
use std::net::IpAddr;

use rtnetlink::packet_route::route::{
    RouteMessage, RouteProtocol, RouteScope, RouteType as NlRouteType,
};
use rtnetlink::packet_route::rule::{RuleAction, RuleAttribute, RuleMessage};
use rtnetlink::packet_route::AddressFamily;
use rtnetlink::RouteMessageBuilder;

use super::address::{Netlink, Outcome};
use super::error::{netlink_errno, Error};
use crate::config::{RouteType, VirtualRule};

/// keepalived's routing protocol number (rtnetlink.h's `RTPROT_KEEPALIVED`).
const RTPROT_KEEPALIVED: u8 = 18;

/// A route as the kernel takes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// The destination prefix.
    pub destination: IpAddr,
    /// Its length.
    pub prefix_len: u8,
    /// `via`: the next hop.
    pub gateway: Option<IpAddr>,
    /// `src`: the preferred source address.
    pub source: Option<IpAddr>,
    /// `dev`: the output interface's index and name.
    pub interface: Option<(u32, String)>,
    /// `metric`.
    pub metric: Option<u32>,
    /// `table` (the main table when absent).
    pub table: Option<u32>,
    /// `scope` (rtnetlink's number); absent, iproute2's default.
    pub scope: Option<u8>,
    /// Its type.
    pub kind: RouteType,
}

impl fmt::Display for Route {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            RouteType::Unicast => {}
            RouteType::Blackhole => f.write_str("blackhole ")?,
            RouteType::Unreachable => f.write_str("unreachable ")?,
            RouteType::Prohibit => f.write_str("prohibit ")?,
        }
        write!(f, "{}/{}", self.destination, self.prefix_len)?;
        if let Some(g) = self.gateway {
            write!(f, " via {g}")?;
        }
        if let Some((_, name)) = &self.interface {
            write!(f, " dev {name}")?;
        }
        if let Some(s) = self.source {
            write!(f, " src {s}")?;
        }
        if let Some(m) = self.metric {
            write!(f, " metric {m}")?;
        }
        if let Some(t) = self.table {
            write!(f, " table {t}")?;
        }
        if let Some(s) = self.scope {
            write!(f, " scope {s}")?;
        }
        Ok(())
    }
}

impl Route {
    /// The interface name errors are reported under.
    fn on(&self) -> &str {
        self.interface
            .as_ref()
            .map_or("(routes)", |(_, n)| n.as_str())
    }

    /// The rtnetlink message: the scope given, else iproute2's defaults (a unicast route
    /// without a gateway is link-scoped), keepalived's protocol.
    fn message(&self) -> Result<RouteMessage, Error> {
        let wrong = |address: IpAddr, operation| Error::WrongFamily {
            interface: self.on().to_string(),
            address,
            expected: if self.destination.is_ipv4() {
                "IPv4"
            } else {
                "IPv6"
            },
            operation,
        };
        let mut b = RouteMessageBuilder::<IpAddr>::new()
            .destination_prefix(self.destination, self.prefix_len)
            .map_err(|_| wrong(self.destination, "route destination"))?;
        if let Some(g) = self.gateway {
            b = b.gateway(g).map_err(|_| wrong(g, "route via"))?;
        }
        if let Some(s) = self.source {
            b = b.pref_source(s).map_err(|_| wrong(s, "route src"))?;
        }
        if let Some((index, _)) = &self.interface {
            b = b.output_interface(*index);
        }
        if let Some(m) = self.metric {
            b = b.priority(m);
        }
        if let Some(t) = self.table {
            b = b.table_id(t);
        }
        let (kind, scope) = match self.kind {
            RouteType::Unicast if self.gateway.is_none() => {
                (NlRouteType::Unicast, RouteScope::Link)
            }
            RouteType::Unicast => (NlRouteType::Unicast, RouteScope::Universe),
            RouteType::Blackhole => (NlRouteType::BlackHole, RouteScope::Universe),
            RouteType::Unreachable => (NlRouteType::Unreachable, RouteScope::Universe),
            RouteType::Prohibit => (NlRouteType::Prohibit, RouteScope::Universe),
        };
        let scope = self.scope.map_or(scope, RouteScope::from);
        Ok(b.kind(kind)
            .scope(scope)
            .protocol(RouteProtocol::Other(RTPROT_KEEPALIVED))
            .build())
    }
}

impl Netlink {
    /// Adds `route`. Already there: [`Outcome::Unchanged`].
    pub async fn add_route(&self, route: &Route) -> Result<Outcome, Error> {
        let message = route.message()?;
        match self.handle.route().add(message).execute().await {
            Ok(()) => Ok(Outcome::Changed),
            Err(e) if netlink_errno(&e) == Some(libc::EEXIST) => Ok(Outcome::Unchanged),
            Err(e) => Err(Error::netlink(route.on(), format!("add route {route}"))(e)),
        }
    }

    /// Removes `route`. Already gone: [`Outcome::Unchanged`].
    pub async fn remove_route(&self, route: &Route) -> Result<Outcome, Error> {
        let message = route.message()?;
        match self.handle.route().del(message).execute().await {
            Ok(()) => Ok(Outcome::Changed),
            Err(e) if netlink_errno(&e) == Some(libc::ESRCH) => Ok(Outcome::Unchanged),
            Err(e) => Err(Error::netlink(route.on(), format!("remove route {route}"))(
                e,
            )),
        }
    }
}

/// A policy routing rule held with an instance's state: keepalived's `virtual_rules` entry as
/// read, which names nothing the kernel must resolve first.
pub use crate::config::VirtualRule as Rule;

impl fmt::Display for VirtualRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.ipv6 { "inet6" } else { "inet" })?;
        for (kw, p) in [("from", self.from), ("to", self.to)] {
            if let Some((a, len)) = p {
                write!(f, " {kw} {a}/{len}")?;
            }
        }
        for (kw, v) in [("iif", &self.iif), ("oif", &self.oif)] {
            if let Some(v) = v {
                write!(f, " {kw} {v}")?;
            }
        }
        if let Some(m) = self.fwmark {
            write!(f, " fwmark {m}")?;
        }
        if let Some(p) = self.priority {
            write!(f, " priority {p}")?;
        }
        write!(f, " table {}", self.table)
    }
}

impl VirtualRule {
    /// The rtnetlink message: a lookup of `table`, keepalived's protocol.
    fn message(&self) -> RuleMessage {
        let mut m = RuleMessage::default();
        m.header.family = if self.ipv6 {
            AddressFamily::Inet6
        } else {
            AddressFamily::Inet
        };
        m.header.action = RuleAction::ToTable;
        // The table goes in FRA_TABLE; the header's 8 bits say "see the attribute".
        m.header.table = 0;
        let a = &mut m.attributes;
        if let Some((address, len)) = self.from {
            m.header.src_len = len;
            a.push(RuleAttribute::Source(address));
        }
        if let Some((address, len)) = self.to {
            m.header.dst_len = len;
            a.push(RuleAttribute::Destination(address));
        }
        a.extend(self.iif.clone().map(RuleAttribute::Iifname));
        a.extend(self.oif.clone().map(RuleAttribute::Oifname));
        a.extend(self.fwmark.map(RuleAttribute::FwMark));
        a.extend(self.priority.map(RuleAttribute::Priority));
        a.push(RuleAttribute::Table(self.table));
        a.push(RuleAttribute::Protocol(RouteProtocol::Other(
            RTPROT_KEEPALIVED,
        )));
        m
    }
}

impl Netlink {
    /// Adds `rule`. Already there: [`Outcome::Unchanged`].
    pub async fn add_rule(&self, rule: &Rule) -> Result<Outcome, Error> {
        let mut request = self.handle.rule().add();
        *request.message_mut() = rule.message();
        match request.execute().await {
            Ok(()) => Ok(Outcome::Changed),
            Err(e) if netlink_errno(&e) == Some(libc::EEXIST) => Ok(Outcome::Unchanged),
            Err(e) => Err(Error::netlink("(rules)", format!("add rule {rule}"))(e)),
        }
    }

    /// Removes `rule`. Already gone: [`Outcome::Unchanged`].
    pub async fn remove_rule(&self, rule: &Rule) -> Result<Outcome, Error> {
        match self.handle.rule().del(rule.message()).execute().await {
            Ok(()) => Ok(Outcome::Changed),
            Err(e) if netlink_errno(&e) == Some(libc::ENOENT) => Ok(Outcome::Unchanged),
            Err(e) => Err(Error::netlink("(rules)", format!("remove rule {rule}"))(e)),
        }
    }
}
