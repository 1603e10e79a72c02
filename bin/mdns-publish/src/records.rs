//! What a node publishes: its host name's addresses and DNS-SD service instances, as the
//! records RFC 6762 / 6763 put on the wire. Host records and an instance's SRV and TXT are
//! unique (ours alone: probed, sent with the cache-flush bit); PTR records are shared.

use std::net::IpAddr;

use hickory_proto::rr::rdata::{PTR, SRV, TXT};
use hickory_proto::rr::{Name, RData, Record, RecordType};
use hickory_proto::ProtoError;

/// TTL of the records about a host: A, AAAA, SRV (RFC 6762 10: 120 s).
pub const HOST_TTL: u32 = 120;
/// TTL of the other records: PTR, TXT (RFC 6762 10: 75 minutes).
pub const OTHER_TTL: u32 = 4500;

/// One DNS-SD service instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Service {
    /// The instance name (`master-0 Workstation`), one label.
    pub instance: String,
    /// The service type, `_workstation._tcp`.
    pub kind: String,
    /// The domain, `local.`.
    pub domain: String,
    /// The port.
    pub port: u16,
    /// The host the SRV points at (a name in `.local.`).
    pub target: String,
    /// TXT strings (`key=value`).
    pub txt: Vec<String>,
    /// The TTL of its PTR and TXT records (the config's `ttl`; SRV keeps [`HOST_TTL`]).
    pub ttl: u32,
}

/// A host name and its addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Host {
    /// The host name, fully qualified in `.local.` (`master-0.local.`).
    pub name: String,
    /// Its addresses.
    pub addresses: Vec<IpAddr>,
}

/// Everything one node publishes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Publication {
    /// Host names (the node's, and `etcd-N` on a control-plane node).
    pub hosts: Vec<Host>,
    /// Service instances.
    pub services: Vec<Service>,
}

/// A record we publish, and whether it is unique.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owned {
    /// The record (TTL as published).
    pub record: Record,
    /// Unique: probed, cache-flush bit set.
    pub unique: bool,
}

/// A name that cannot be put on the wire; the message names it.
#[derive(Debug, thiserror::Error)]
pub enum NameError {
    /// Not a DNS name.
    #[error("`{text}`: not a DNS name: {why}")]
    Name {
        /// The text.
        text: String,
        /// Why.
        why: ProtoError,
    },
    /// Not one label (too long, say).
    #[error("`{instance}`: not a service instance name: {why}")]
    Instance {
        /// The instance name.
        instance: String,
        /// Why.
        why: ProtoError,
    },
    /// The instance and its type together are not a DNS name (too long, say).
    #[error("`{instance}`: {why}")]
    Append {
        /// The instance name.
        instance: String,
        /// Why.
        why: ProtoError,
    },
}

/// `text` as a fully qualified DNS name; the error names it.
pub fn name(text: &str) -> Result<Name, NameError> {
    let mut n = Name::from_utf8(text).map_err(|why| NameError::Name {
        text: text.to_owned(),
        why,
    })?;
    n.set_fqdn(true);
    Ok(n)
}

impl Service {
    /// `_workstation._tcp.local.`
    pub fn type_name(&self) -> Result<Name, NameError> {
        name(&format!("{}.{}", self.kind, self.domain))
    }

    /// `master-0 Workstation._workstation._tcp.local.` (the instance label may hold spaces
    /// and dots: it is one label).
    pub fn instance_name(&self) -> Result<Name, NameError> {
        let label = Name::from_labels(vec![self.instance.as_bytes()]).map_err(|why| {
            NameError::Instance {
                instance: self.instance.clone(),
                why,
            }
        })?;
        label
            .append_domain(&self.type_name()?)
            .map_err(|why| NameError::Append {
                instance: self.instance.clone(),
                why,
            })
    }
}

/// `_services._dns-sd._udp.local.`: the meta-query every DNS-SD browser asks.
pub fn services_name() -> Name {
    Name::from_ascii("_services._dns-sd._udp.local.").unwrap_or_default()
}

impl Publication {
    /// The records, in a fixed order: hosts' addresses, then per service PTR (meta), PTR,
    /// SRV, TXT.
    pub fn records(&self) -> Result<Vec<Owned>, NameError> {
        let mut out = Vec::new();
        for h in &self.hosts {
            let n = name(&h.name)?;
            for a in &h.addresses {
                out.push(Owned {
                    record: Record::from_rdata(n.clone(), HOST_TTL, RData::from(*a)),
                    unique: true,
                });
            }
        }
        for s in &self.services {
            let (kind, instance) = (s.type_name()?, s.instance_name()?);
            let mut push = |owner: Name, ttl, rdata, unique| {
                let record = Record::from_rdata(owner, ttl, rdata);
                if !out.iter().any(|o: &Owned| o.record == record) {
                    out.push(Owned { record, unique });
                }
            };
            push(services_name(), s.ttl, RData::PTR(PTR(kind.clone())), false);
            push(kind, s.ttl, RData::PTR(PTR(instance.clone())), false);
            let srv = SRV::new(0, 0, s.port, name(&s.target)?);
            push(instance.clone(), HOST_TTL, RData::SRV(srv), true);
            // RFC 6763 6.1: a TXT record with nothing to say holds one empty string.
            let txt = if s.txt.is_empty() {
                vec![String::new()]
            } else {
                s.txt.clone()
            };
            push(instance, s.ttl, RData::TXT(TXT::new(txt)), true);
        }
        Ok(out)
    }
}

/// The names we must own alone (probed before use).
pub fn unique_names(records: &[Owned]) -> Vec<Name> {
    let mut names: Vec<Name> = Vec::new();
    for o in records.iter().filter(|o| o.unique) {
        if !names.contains(o.record.name()) {
            names.push(o.record.name().clone());
        }
    }
    names
}

/// Whether `record` answers a question for `qname` of type `qtype`.
pub fn answers(record: &Record, qname: &Name, qtype: RecordType) -> bool {
    record.name() == qname && (qtype == RecordType::ANY || qtype == record.record_type())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node() -> Publication {
        Publication {
            hosts: vec![Host {
                name: "master-0.local.".into(),
                addresses: vec![
                    "192.0.2.10".parse().unwrap(),
                    "2001:db8::10".parse().unwrap(),
                ],
            }],
            services: vec![Service {
                instance: "lab master-0".into(),
                kind: "_workstation._tcp".into(),
                domain: "local.".into(),
                port: 42424,
                target: "master-0.local.".into(),
                txt: vec!["role=master".into()],
                ttl: OTHER_TTL,
            }],
        }
    }

    #[test]
    fn a_node_publishes_its_addresses_and_its_instance() {
        let r = node().records().unwrap();
        let show: Vec<String> = r
            .iter()
            .map(|o| {
                format!(
                    "{} {} {} {}",
                    o.record.name(),
                    o.record.ttl(),
                    o.record.record_type(),
                    o.unique
                )
            })
            .collect();
        assert_eq!(
            show,
            [
                "master-0.local. 120 A true",
                "master-0.local. 120 AAAA true",
                "_services._dns-sd._udp.local. 4500 PTR false",
                "_workstation._tcp.local. 4500 PTR false",
                "lab\\040master-0._workstation._tcp.local. 120 SRV true",
                "lab\\040master-0._workstation._tcp.local. 4500 TXT true",
            ]
        );
        assert_eq!(unique_names(&r).len(), 2);
    }

    #[test]
    fn bad_names_are_refused_by_name() {
        let mut p = node();
        p.hosts[0].name = "a..b".into();
        assert!(p.records().unwrap_err().to_string().contains("`a..b`"));
    }
}
