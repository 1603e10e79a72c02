//! `vrrpd survey`: which VRIDs are in use on a link, by which routers, and whether the API and
//! Ingress VRIDs OpenShift derives from a cluster name ([`ipi_core::vrid`]) are free. Two
//! clusters on one link whose names give the same VRID fight over it (each side drops the
//! other's adverts, both hold their VIP); OpenShift's documented way out is another cluster
//! name, so a taken pair comes with close names whose pair is free.
//!
//! Only multicast adverts reach a listener: routers that advertise by unicast to each other
//! are invisible here, and a link where VRRP is filtered looks empty.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::path::Path;
use std::time::Duration;

use ipi_core::capture::CaptureError;
use ipi_core::vrid::Vrids;
use serde_json::{json, Value};

use crate::watch::{self, Advert};

/// One router heard on a VRID.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Router {
    /// Its address (the IP source).
    pub source: IpAddr,
    /// VRRP version.
    pub version: u8,
    /// Its priority in its last advert (0: it resigned).
    pub priority: u8,
    /// Its advert interval in centiseconds.
    pub advert_int_cs: u16,
    /// The addresses of its last advert.
    pub addresses: Vec<IpAddr>,
    /// Adverts heard.
    pub adverts: u64,
}

/// What a survey heard.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Survey {
    /// The routers heard, by VRID and source. A VRID is counted as used whatever the family:
    /// IPv4 and IPv6 VRIDs are separate in VRRP, but a dual-stack cluster uses both.
    pub vrids: BTreeMap<u8, BTreeMap<IpAddr, Router>>,
    /// Datagrams that did not decode as adverts.
    pub rejected: u64,
}

impl Survey {
    /// Takes in one advert.
    pub fn add(&mut self, advert: &Advert) {
        let d = &advert.datagram;
        let router = self
            .vrids
            .entry(d.repr.vrid)
            .or_default()
            .entry(d.src)
            .or_insert_with(|| Router {
                source: d.src,
                version: 0,
                priority: 0,
                advert_int_cs: 0,
                addresses: Vec::new(),
                adverts: 0,
            });
        router.version = d.repr.version.number();
        router.priority = d.repr.priority;
        router.advert_int_cs = d.repr.advert_int;
        router.addresses.clone_from(&d.repr.addresses);
        router.adverts += 1;
    }

    /// Takes in one line of `watch`.
    pub fn add_seen(&mut self, seen: &watch::Seen) {
        match &seen.outcome {
            Ok(advert) => self.add(advert),
            Err(_) => self.rejected += 1,
        }
    }

    /// The VRIDs heard.
    pub fn used(&self) -> BTreeSet<u8> {
        self.vrids.keys().copied().collect()
    }

    /// Who uses `vrid`.
    pub fn users(&self, vrid: u8) -> Vec<IpAddr> {
        self.vrids
            .get(&vrid)
            .map(|r| r.keys().copied().collect())
            .unwrap_or_default()
    }
}

/// A cluster name's VRIDs against a survey.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// The cluster name.
    pub cluster: String,
    /// Its VRIDs.
    pub vrids: Vrids,
    /// The routers heard on its API VRID.
    pub api_taken_by: Vec<IpAddr>,
    /// The routers heard on its Ingress VRID.
    pub ingress_taken_by: Vec<IpAddr>,
    /// Close names whose pair is free, closest first (empty when the pair is free).
    pub alternatives: Vec<(String, Vrids)>,
}

impl Verdict {
    /// Whether both VRIDs are free.
    pub fn free(&self) -> bool {
        self.api_taken_by.is_empty() && self.ingress_taken_by.is_empty()
    }
}

/// How many alternatives a taken pair comes with.
pub const ALTERNATIVES: usize = 3;

/// The verdict on `cluster` given the VRIDs `survey` heard.
pub fn verdict(cluster: &str, survey: &Survey) -> Verdict {
    let vrids = Vrids::for_cluster(cluster);
    let mut v = Verdict {
        cluster: cluster.to_string(),
        vrids,
        api_taken_by: survey.users(vrids.api),
        ingress_taken_by: survey.users(vrids.ingress),
        alternatives: Vec::new(),
    };
    if !v.free() {
        v.alternatives = alternatives(cluster, &survey.used(), ALTERNATIVES);
    }
    v
}

/// Up to `count` names close to `cluster` whose API and Ingress VRIDs are both outside `used`.
pub fn alternatives(cluster: &str, used: &BTreeSet<u8>, count: usize) -> Vec<(String, Vrids)> {
    candidates(cluster)
        .map(|name| {
            let v = Vrids::for_cluster(&name);
            (name, v)
        })
        .filter(|(_, v)| !used.contains(&v.api) && !used.contains(&v.ingress))
        .take(count)
        .collect()
}

/// Names close to `cluster`, closest first, each a valid DNS label (RFC 1035 2.3.4: lower-case
/// letters, digits and inner hyphens, at most 63 characters) and other than `cluster`: a digit
/// appended (`ostest2`), `-` and a number (`ostest-2`), the last character changed.
pub fn candidates(cluster: &str) -> impl Iterator<Item = String> + '_ {
    const CHARS: &str = "0123456789abcdefghijklmnopqrstuvwxyz";
    let appended = (1..10).map(move |d| format!("{cluster}{d}"));
    let numbered = (2..100).map(move |n| format!("{cluster}-{n}"));
    let stem = cluster
        .char_indices()
        .last()
        .map_or("", |(at, _)| &cluster[..at]);
    let changed = CHARS.chars().map(move |c| format!("{stem}{c}"));
    appended
        .chain(numbered)
        .chain(changed)
        .filter(move |name| name != cluster && dns_label(name))
}

fn dns_label(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 63
        && !name.starts_with('-')
        && !name.ends_with('-')
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// Listens on `interface` for `listen_for`.
pub async fn listen(interface: &str, listen_for: Duration) -> Result<Survey, crate::net::Error> {
    let sockets = watch::open(interface).await?;
    let mut survey = Survey::default();
    // A duration past the clock's range listens until stopped.
    let now = tokio::time::Instant::now();
    let deadline = now
        .checked_add(listen_for)
        .unwrap_or_else(|| now + Duration::from_secs(100 * 365 * 86_400));
    loop {
        match tokio::time::timeout_at(deadline, watch::next(&sockets)).await {
            Ok(seen) => survey.add_seen(&seen?),
            Err(_) => return Ok(survey),
        }
    }
}

/// The adverts of a capture file.
pub fn read_capture(path: &Path) -> Result<Survey, CaptureError> {
    let mut survey = Survey::default();
    for seen in watch::read_capture(path)? {
        survey.add_seen(&seen);
    }
    Ok(survey)
}

fn list(addresses: &[IpAddr]) -> String {
    let words: Vec<String> = addresses.iter().map(IpAddr::to_string).collect();
    words.join(",")
}

/// The survey (and verdict) as text.
pub fn to_text(survey: &Survey, verdict: Option<&Verdict>) -> String {
    let mut out = String::new();
    if survey.vrids.is_empty() {
        out.push_str("no VRRP adverts heard\n");
    }
    for (vrid, routers) in &survey.vrids {
        out.push_str(&format!("vrid {vrid}:\n"));
        for r in routers.values() {
            out.push_str(&format!(
                "  {} VRRPv{} priority {} interval {} cs addresses {} ({} adverts)\n",
                r.source,
                r.version,
                r.priority,
                r.advert_int_cs,
                list(&r.addresses),
                r.adverts
            ));
        }
    }
    if survey.rejected > 0 {
        out.push_str(&format!(
            "{} datagram(s) did not decode (see vrrpd watch)\n",
            survey.rejected
        ));
    }
    out.push_str(
        "(only multicast adverts can be heard: routers advertising by unicast to each other \
         do not show here)\n",
    );
    if let Some(v) = verdict {
        out.push_str(&verdict_text(v));
    }
    out
}

fn verdict_text(v: &Verdict) -> String {
    let side = |name: &str, vrid: u8, by: &[IpAddr]| {
        if by.is_empty() {
            format!("{name} vrid {vrid} free")
        } else {
            format!("{name} vrid {vrid} TAKEN by {}", list(by))
        }
    };
    let mut out = format!(
        "cluster {}: {}, {}\n",
        v.cluster,
        side("API", v.vrids.api, &v.api_taken_by),
        side("Ingress", v.vrids.ingress, &v.ingress_taken_by)
    );
    if !v.free() {
        if v.alternatives.is_empty() {
            out.push_str("no close cluster name has a free pair\n");
        }
        for (name, ids) in &v.alternatives {
            out.push_str(&format!(
                "  free pair with cluster name {name}: API vrid {}, Ingress vrid {}\n",
                ids.api, ids.ingress
            ));
        }
    }
    out
}

/// The survey (and verdict) as JSON.
pub fn to_json(survey: &Survey, verdict: Option<&Verdict>) -> Value {
    let vrids: Vec<Value> = survey
        .vrids
        .iter()
        .map(|(vrid, routers)| {
            let routers: Vec<Value> = routers
                .values()
                .map(|r| {
                    json!({
                        "source": r.source, "version": r.version, "priority": r.priority,
                        "advert_int_cs": r.advert_int_cs, "addresses": r.addresses,
                        "adverts": r.adverts,
                    })
                })
                .collect();
            json!({ "vrid": vrid, "routers": routers })
        })
        .collect();
    let cluster = verdict.map(|v| {
        json!({
            "name": v.cluster,
            "api": { "vrid": v.vrids.api, "taken_by": v.api_taken_by },
            "ingress": { "vrid": v.vrids.ingress, "taken_by": v.ingress_taken_by },
            "free": v.free(),
            "alternatives": v.alternatives.iter().map(|(name, ids)| json!({
                "name": name, "api": ids.api, "ingress": ids.ingress,
            })).collect::<Vec<_>>(),
        })
    });
    json!({ "vrids": vrids, "rejected": survey.rejected, "cluster": cluster })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ipi_core::vrrp::{Auth, Datagram, Repr, Version};

    fn advert(src: &str, vrid: u8, priority: u8) -> Advert {
        Advert {
            datagram: Datagram {
                src: src.parse().unwrap(),
                dst: "224.0.0.18".parse().unwrap(),
                hop_limit: 255,
                repr: Repr {
                    version: Version::V3,
                    vrid,
                    priority,
                    advert_int: 100,
                    auth: Auth::None,
                    addresses: vec!["192.0.2.100".parse().unwrap()],
                },
            },
            checksum_without_pseudo_header: false,
        }
    }

    #[test]
    fn a_free_pair_is_free() {
        // ostest: API 14, Ingress 93 (ipi_core::vrid's known answers).
        let mut s = Survey::default();
        s.add(&advert("192.0.2.1", 13, 100));
        s.add(&advert("192.0.2.1", 94, 100));
        let v = verdict("ostest", &s);
        assert_eq!((v.vrids.api, v.vrids.ingress), (14, 93));
        assert!(v.free());
        assert!(v.alternatives.is_empty());
    }

    #[test]
    fn a_taken_side_names_its_routers_and_close_free_names() {
        let mut s = Survey::default();
        for _ in 0..3 {
            s.add(&advert("192.0.2.1", 93, 100));
        }
        s.add(&advert("192.0.2.2", 93, 50));
        let v = verdict("ostest", &s);
        assert!(!v.free());
        assert!(v.api_taken_by.is_empty());
        assert_eq!(
            v.ingress_taken_by,
            vec![
                "192.0.2.1".parse::<IpAddr>().unwrap(),
                "192.0.2.2".parse().unwrap()
            ]
        );
        assert_eq!(
            s.vrids[&93][&"192.0.2.1".parse::<IpAddr>().unwrap()].adverts,
            3
        );
        assert_eq!(v.alternatives.len(), ALTERNATIVES);
        for (name, ids) in &v.alternatives {
            assert!(
                name.starts_with("ostest") || name.starts_with("ostes"),
                "{name}"
            );
            assert_eq!(*ids, Vrids::for_cluster(name));
            assert!(ids.api != 93 && ids.ingress != 93, "{name}: {ids:?}");
        }
        let text = to_text(&s, Some(&v));
        assert!(
            text.contains(
                "cluster ostest: API vrid 14 free, Ingress vrid 93 TAKEN by 192.0.2.1,192.0.2.2"
            ),
            "{text}"
        );
    }

    #[test]
    fn alternatives_avoid_every_used_vrid() {
        // Every VRID but a handful in use: whatever is suggested fits in what is left.
        let used: BTreeSet<u8> = (1..=255).filter(|v| v % 17 != 0).collect();
        for (name, ids) in alternatives("managed", &used, 3) {
            assert!(
                !used.contains(&ids.api) && !used.contains(&ids.ingress),
                "{name}"
            );
        }
        // All in use: nothing to suggest, and the search ends.
        let all: BTreeSet<u8> = (1..=255).collect();
        assert!(alternatives("managed", &all, 3).is_empty());
    }

    #[test]
    fn candidates_are_close_valid_names() {
        let names: Vec<String> = candidates("ostest").collect();
        assert_eq!(names[0], "ostest1");
        assert!(names.contains(&"ostest-2".to_string()));
        assert!(names.contains(&"ostesa".to_string()));
        assert!(!names.contains(&"ostest".to_string()));
        assert!(names.iter().all(|n| dns_label(n)), "{names:?}");
        let long = "a".repeat(63);
        assert!(candidates(&long).all(|n| n.len() <= 63));
        assert!(candidates(&long).next().is_some());
    }

    #[test]
    fn json_says_free_and_why_not() {
        let mut s = Survey::default();
        s.add(&advert("192.0.2.1", 14, 100));
        let v = verdict("ostest", &s);
        let j = to_json(&s, Some(&v));
        assert_eq!(j["cluster"]["free"], false);
        assert_eq!(j["cluster"]["api"]["taken_by"][0], "192.0.2.1");
        assert_eq!(j["vrids"][0]["vrid"], 14);
        assert_eq!(j["vrids"][0]["routers"][0]["priority"], 100);
    }
}
