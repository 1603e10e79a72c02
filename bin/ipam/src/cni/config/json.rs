//! The small readers every part of the config uses: a JSON object with its path for messages,
//! CIDRs, address families.

use std::net::IpAddr;

use ipnetwork::IpNetwork;
use serde_json::{Map, Value};

use super::model::{invalid, ConfigError};

/// A JSON object being read, with its path for messages.
pub(super) struct Obj<'a> {
    pub(super) map: &'a Map<String, Value>,
    pub(super) path: String,
}

impl<'a> Obj<'a> {
    pub(super) fn field(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_owned()
        } else {
            format!("{}.{key}", self.path)
        }
    }

    pub(super) fn str(&self, key: &str) -> Result<Option<&'a str>, ConfigError> {
        match self.map.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(invalid(self.field(key), "not a string")),
        }
    }

    pub(super) fn ip(&self, key: &str) -> Result<Option<IpAddr>, ConfigError> {
        self.str(key)?
            .map(|s| {
                s.trim()
                    .parse()
                    .map_err(|_| invalid(self.field(key), format!("{s:?} is not an IP address")))
            })
            .transpose()
    }

    pub(super) fn array(&self, key: &str) -> Result<Option<&'a Vec<Value>>, ConfigError> {
        match self.map.get(key) {
            None => Ok(None),
            Some(Value::Array(a)) => Ok(Some(a)),
            Some(_) => Err(invalid(self.field(key), "not a list")),
        }
    }

    pub(super) fn number(&self, key: &str) -> Result<Option<u64>, ConfigError> {
        match self.map.get(key) {
            None => Ok(None),
            Some(v) => v
                .as_u64()
                .map(Some)
                .ok_or_else(|| invalid(self.field(key), "not a whole number 0 or more")),
        }
    }

    /// Every key is one of `known`.
    pub(super) fn only(&self, known: &[&str]) -> Result<(), ConfigError> {
        match self.map.keys().find(|k| !known.contains(&k.as_str())) {
            Some(k) => Err(invalid(
                self.field(k),
                format!("unknown key (known here: {})", known.join(", ")),
            )),
            None => Ok(()),
        }
    }
}

/// `v` as an object, named `path` in messages.
pub(super) fn object<'a>(v: &'a Value, path: String) -> Result<Obj<'a>, ConfigError> {
    match v {
        Value::Object(map) => Ok(Obj { map, path }),
        _ => Err(invalid(path, "not an object")),
    }
}

/// A CIDR, named `field` in messages.
pub(super) fn parse_net(field: &str, text: &str) -> Result<IpNetwork, ConfigError> {
    text.trim()
        .parse()
        .map_err(|_| invalid(field, format!("{text:?} is not a CIDR (address/length)")))
}

/// The network a CIDR is in (host bits cleared).
pub(super) fn masked(net: IpNetwork) -> IpNetwork {
    IpNetwork::new(net.network(), net.prefix()).unwrap_or(net)
}

/// Whether two addresses are of one family.
pub(super) fn same_family(a: IpAddr, b: IpAddr) -> bool {
    a.is_ipv4() == b.is_ipv4()
}
