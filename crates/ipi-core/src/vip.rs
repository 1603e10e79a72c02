//! The rules a cluster's VIPs must follow: the OpenShift installer's, with its messages, and a
//! few of ours on top.
//!
//! The installer's: at least one API and one Ingress VIP, at most two of each, valid IPs, each in
//! one of the machine networks, no API VIP that is also an Ingress VIP, two VIPs of a kind are one
//! IPv4 and one IPv6, a single VIP on a dual-stack cluster has the primary (first machine
//! network's) family. Ours: a VIP is not the network or broadcast address of its machine network
//! (no host could hold it), nor the address of a node (ARP for it would have two answers).

use std::net::IpAddr;

use ipnetwork::IpNetwork;

use crate::family::Family;
use crate::field::{FieldError, FieldErrors, FieldPath};
use crate::inventory::Inventory;

/// One VIP as written, with the path of the field it came from.
#[derive(Debug, Clone, Default)]
pub(crate) struct VipItem {
    path: FieldPath,
    text: String,
}

/// The VIPs of one kind (`apiVIPs`) as written.
#[derive(Debug, Clone, Default)]
pub(crate) struct VipField {
    path: FieldPath,
    items: Vec<VipItem>,
}

/// Every VIP of a platform section, as written.
#[derive(Debug, Clone, Default)]
pub(crate) struct VipList {
    api: VipField,
    ingress: VipField,
    dns: Option<VipItem>,
}

/// VIPs that passed every rule.
#[derive(Debug, Clone, Default)]
pub(crate) struct CheckedVips {
    pub(crate) api: Vec<IpAddr>,
    pub(crate) ingress: Vec<IpAddr>,
    pub(crate) dns: Option<IpAddr>,
}

impl VipField {
    /// Merge the list field (`apiVIPs`) with the deprecated singular one (`apiVIP`), as the
    /// installer's conversion does: the singular one, when both are given, must be the first
    /// entry of the list.
    fn merge(
        platform: &FieldPath,
        (list_name, list): (&str, Option<Vec<String>>),
        (single_name, single): (&str, Option<String>),
        errors: &mut FieldErrors,
    ) -> Self {
        let list_path = platform.child(list_name);
        let single_path = platform.child(single_name);
        match (
            list.filter(|l| !l.is_empty()),
            single.filter(|s| !s.is_empty()),
        ) {
            (Some(list), single) => {
                if let Some(single) = single {
                    if list.first() != Some(&single) {
                        errors.push(FieldError::invalid(
                            single_path,
                            &single,
                            format!("{single_name} is deprecated; when {list_name} is given too, {single_name} must be its first entry"),
                        ));
                    }
                }
                let items = list
                    .into_iter()
                    .enumerate()
                    .map(|(i, text)| VipItem {
                        path: list_path.index(i),
                        text,
                    })
                    .collect();
                Self {
                    path: list_path,
                    items,
                }
            }
            (None, Some(text)) => Self {
                path: single_path.clone(),
                items: vec![VipItem {
                    path: single_path,
                    text,
                }],
            },
            (None, None) => Self {
                path: list_path,
                items: Vec::new(),
            },
        }
    }
}

impl VipList {
    /// The VIPs of the platform section at `platform` (`platform.baremetal`).
    pub(crate) fn from_fields(
        platform: &FieldPath,
        api_vips: Option<Vec<String>>,
        api_vip: Option<String>,
        ingress_vips: Option<Vec<String>>,
        ingress_vip: Option<String>,
        dns_vip: Option<String>,
        errors: &mut FieldErrors,
    ) -> Self {
        Self {
            api: VipField::merge(platform, ("apiVIPs", api_vips), ("apiVIP", api_vip), errors),
            ingress: VipField::merge(
                platform,
                ("ingressVIPs", ingress_vips),
                ("ingressVIP", ingress_vip),
                errors,
            ),
            dns: dns_vip.map(|text| VipItem {
                path: platform.child("dnsVIP"),
                text,
            }),
        }
    }
}

/// The two VIPs a cluster holds with VRRP: the API's and the Ingress'.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VipKind {
    /// The API (and api-int) VIP.
    Api,
    /// The Ingress (`*.apps`) VIP.
    Ingress,
}

impl VipKind {
    /// Both, the API's first.
    pub const ALL: [VipKind; 2] = [VipKind::Api, VipKind::Ingress];

    /// Its name in the installer's messages: `API`, `Ingress`.
    pub fn name(self) -> &'static str {
        match self {
            VipKind::Api => "API",
            VipKind::Ingress => "Ingress",
        }
    }
}

/// Check every VIP; push every violation to `errors`; return the VIPs that parsed.
pub(crate) fn validate(
    vips: &VipList,
    machine_networks: &[IpNetwork],
    nodes: Option<&Inventory>,
    errors: &mut FieldErrors,
) -> CheckedVips {
    let ingress: Vec<Option<IpAddr>> = vips
        .ingress
        .items
        .iter()
        .map(|v| v.text.parse().ok())
        .collect();
    let api = validate_kind(
        VipKind::Api,
        &vips.api,
        &ingress,
        machine_networks,
        nodes,
        errors,
    );
    let ingress = validate_kind(
        VipKind::Ingress,
        &vips.ingress,
        &[],
        machine_networks,
        nodes,
        errors,
    );
    let dns = vips.dns.as_ref().and_then(|item| {
        let address = check_one(item, machine_networks, nodes, errors)?;
        if api.contains(&address) || ingress.contains(&address) {
            errors.push(FieldError::invalid(
                item.path.clone(),
                &item.text,
                "the DNS VIP must differ from the API and Ingress VIPs",
            ));
        }
        Some(address)
    });
    CheckedVips { api, ingress, dns }
}

fn validate_kind(
    kind: VipKind,
    field: &VipField,
    ingress: &[Option<IpAddr>],
    machine_networks: &[IpNetwork],
    nodes: Option<&Inventory>,
    errors: &mut FieldErrors,
) -> Vec<IpAddr> {
    let name = kind.name();
    let count = field.items.len();
    if count == 0 {
        errors.push(FieldError::required(
            field.path.clone(),
            format!("must specify at least one VIP for the {name}"),
        ));
        return Vec::new();
    }
    if count > 2 {
        errors.push(FieldError::too_many(field.path.clone(), count, 2));
        return Vec::new();
    }
    let mut parsed = Vec::new();
    for item in &field.items {
        let address = check_one(item, machine_networks, nodes, errors);
        if let Some(address) = address {
            if ingress.contains(&Some(address)) {
                errors.push(FieldError::invalid(
                    item.path.clone(),
                    &item.text,
                    "VIP for API must not be one of the Ingress VIPs",
                ));
            }
            parsed.push(address);
        }
    }
    let families: Vec<Option<Family>> = field
        .items
        .iter()
        .map(|i| i.text.parse().ok().map(Family::of))
        .collect();
    match families.as_slice() {
        [Some(family)] => {
            if let Some(primary) = dual_stack_primary(machine_networks) {
                if *family != primary {
                    let item = &field.items[0];
                    errors.push(FieldError::invalid(
                        item.path.clone(),
                        &item.text,
                        format!("VIP for the {name} must be of the same IP family with machine network's primary IP Family for dual-stack IPv4/IPv6"),
                    ));
                }
            }
        }
        [Some(Family::V4), Some(Family::V6)] | [Some(Family::V6), Some(Family::V4)] | [None] => {}
        _ => {
            let texts: Vec<&str> = field.items.iter().map(|i| i.text.as_str()).collect();
            errors.push(FieldError::invalid_list(
                field.path.clone(),
                &texts,
                format!(
                    "If two {name} VIPs are given, one must be an IPv4 address, the other an IPv6"
                ),
            ));
        }
    }
    parsed
}

/// The primary family when the machine networks hold both families, `None` when single-stack.
fn dual_stack_primary(machine_networks: &[IpNetwork]) -> Option<Family> {
    let v4 = machine_networks.iter().any(|n| n.is_ipv4());
    let v6 = machine_networks.iter().any(|n| n.is_ipv6());
    (v4 && v6).then(|| Family::of(machine_networks[0].ip()))
}

/// The rules every single VIP follows; the address when it is one.
fn check_one(
    item: &VipItem,
    machine_networks: &[IpNetwork],
    nodes: Option<&Inventory>,
    errors: &mut FieldErrors,
) -> Option<IpAddr> {
    let address: Option<IpAddr> = item.text.parse().ok();
    let problems = match address {
        Some(address) => address_problems(address, machine_networks, nodes),
        None => {
            // The installer reports both: the text is no IP, so no machine network holds it.
            vec![
                format!("{:?} is not a valid IP", item.text),
                outside_message(machine_networks),
            ]
        }
    };
    for problem in problems {
        errors.push(FieldError::invalid(item.path.clone(), &item.text, problem));
    }
    address
}

fn outside_message(machine_networks: &[IpNetwork]) -> String {
    let list: Vec<String> = machine_networks.iter().map(|n| n.to_string()).collect();
    format!(
        "IP expected to be in one of the machine networks: {}",
        list.join(",")
    )
}

/// Why `address` cannot be a VIP of a cluster with these machine networks (and nodes); empty
/// when it can. One sentence per broken rule.
pub fn address_problems(
    address: IpAddr,
    machine_networks: &[IpNetwork],
    nodes: Option<&Inventory>,
) -> Vec<String> {
    let mut problems = Vec::new();
    match machine_networks.iter().find(|n| n.contains(address)) {
        None => problems.push(outside_message(machine_networks)),
        Some(network) => {
            // RFC 3021: /31 (and /127) links have no network or broadcast address to avoid.
            let has_reserved = match network {
                IpNetwork::V4(n) => n.prefix() < 31,
                IpNetwork::V6(n) => n.prefix() < 127,
            };
            if has_reserved && address == network.network() {
                problems.push(format!(
                    "VIP must not be the network address of machine network {network}"
                ));
            }
            if let IpNetwork::V4(n) = network {
                if has_reserved && address == IpAddr::V4(n.broadcast()) {
                    problems.push(format!(
                        "VIP must not be the broadcast address of machine network {network}"
                    ));
                }
            }
        }
    }
    if let Some(node) = nodes.and_then(|n| n.owner_of(address)) {
        problems.push(format!("VIP must not be the address of node {}", node.name));
    }
    problems
}

#[cfg(test)]
mod tests {
    use crate::cluster::Cluster;
    use crate::inventory::Inventory;

    /// An install-config with these machine networks and VIP lines under `platform.baremetal`.
    fn config(networks: &[&str], vips: &str) -> String {
        let mut text = String::from(
            "metadata:\n  name: lab\nbaseDomain: example.com\nnetworking:\n  machineNetwork:\n",
        );
        for n in networks {
            text.push_str(&format!("  - cidr: {n}\n"));
        }
        text.push_str("platform:\n  baremetal:\n");
        for line in vips.lines() {
            text.push_str(&format!("    {line}\n"));
        }
        text
    }

    fn errors(networks: &[&str], vips: &str, nodes: Option<&Inventory>) -> Vec<String> {
        match Cluster::parse(&config(networks, vips), "ic", nodes) {
            Ok(_) => Vec::new(),
            Err(e) => e
                .to_string()
                .lines()
                .map(|l| l.trim_start_matches("ic: ").to_owned())
                .collect(),
        }
    }

    const V4: &[&str] = &["192.0.2.0/24"];
    const DUAL: &[&str] = &["192.0.2.0/24", "2001:db8::/64"];

    #[test]
    fn valid_single_and_dual_stack() {
        assert!(errors(V4, "apiVIPs: [192.0.2.5]\ningressVIPs: [192.0.2.7]", None).is_empty());
        assert!(errors(
            DUAL,
            "apiVIPs: [192.0.2.5, 2001:db8::5]\ningressVIPs: [2001:db8::7, 192.0.2.7]",
            None
        )
        .is_empty());
    }

    #[test]
    fn the_installers_rules_every_violation_reported() {
        let got = errors(
            V4,
            "apiVIPs: [192.0.2.7, 198.51.100.1]\ningressVIPs: [192.0.2.7, bogus, 192.0.2.8]",
            None,
        );
        assert_eq!(
            got,
            [
                r#"platform.baremetal.apiVIPs[0]: Invalid value: "192.0.2.7": VIP for API must not be one of the Ingress VIPs"#,
                r#"platform.baremetal.apiVIPs[1]: Invalid value: "198.51.100.1": IP expected to be in one of the machine networks: 192.0.2.0/24"#,
                r#"platform.baremetal.apiVIPs: Invalid value: []string{"192.0.2.7", "198.51.100.1"}: If two API VIPs are given, one must be an IPv4 address, the other an IPv6"#,
                "platform.baremetal.ingressVIPs: Too many: 3: must have at most 2 items",
            ]
        );
        let got = errors(V4, "ingressVIP: 192.0.2.300", None);
        assert_eq!(
            got,
            [
                "platform.baremetal.apiVIPs: Required value: must specify at least one VIP for the API",
                r#"platform.baremetal.ingressVIP: Invalid value: "192.0.2.300": "192.0.2.300" is not a valid IP"#,
                r#"platform.baremetal.ingressVIP: Invalid value: "192.0.2.300": IP expected to be in one of the machine networks: 192.0.2.0/24"#,
            ]
        );
        assert!(errors(V4, "apiVIPs: [192.0.2.5]", None)
            .contains(&"platform.baremetal.ingressVIPs: Required value: must specify at least one VIP for the Ingress".to_owned()));
    }

    #[test]
    fn a_single_vip_on_dual_stack_has_the_primary_family() {
        let got = errors(
            DUAL,
            "apiVIPs: [2001:db8::5]\ningressVIPs: [192.0.2.7]",
            None,
        );
        assert_eq!(
            got,
            [
                r#"platform.baremetal.apiVIPs[0]: Invalid value: "2001:db8::5": VIP for the API must be of the same IP family with machine network's primary IP Family for dual-stack IPv4/IPv6"#
            ]
        );
        let v6_first = ["2001:db8::/64", "192.0.2.0/24"];
        assert!(errors(
            &v6_first,
            "apiVIPs: [2001:db8::5]\ningressVIPs: [2001:db8::7]",
            None
        )
        .is_empty());
    }

    #[test]
    fn ours_network_broadcast_and_node_addresses() {
        let nodes = Inventory::parse("master-0 master 192.0.2.11\n", "nodes").unwrap();
        let got = errors(
            V4,
            "apiVIPs: [192.0.2.0]\ningressVIPs: [192.0.2.255]\ndnsVIP: 192.0.2.11",
            Some(&nodes),
        );
        assert_eq!(
            got,
            [
                r#"platform.baremetal.apiVIPs[0]: Invalid value: "192.0.2.0": VIP must not be the network address of machine network 192.0.2.0/24"#,
                r#"platform.baremetal.ingressVIPs[0]: Invalid value: "192.0.2.255": VIP must not be the broadcast address of machine network 192.0.2.0/24"#,
                r#"platform.baremetal.dnsVIP: Invalid value: "192.0.2.11": VIP must not be the address of node master-0"#,
            ]
        );
        // A /31 has no network or broadcast address (RFC 3021).
        assert!(errors(
            &["192.0.2.0/31"],
            "apiVIPs: [192.0.2.0]\ningressVIPs: [192.0.2.1]",
            None
        )
        .is_empty());
        let got = errors(
            &["2001:db8::/64"],
            "apiVIPs: ['2001:db8::']\ningressVIPs: ['2001:db8::7']",
            None,
        );
        assert_eq!(got.len(), 1, "{got:?}");
    }

    #[test]
    fn deprecated_singular_must_agree_with_the_list() {
        let got = errors(
            V4,
            "apiVIP: 192.0.2.6\napiVIPs: [192.0.2.5]\ningressVIPs: [192.0.2.7]",
            None,
        );
        assert_eq!(
            got,
            [
                r#"platform.baremetal.apiVIP: Invalid value: "192.0.2.6": apiVIP is deprecated; when apiVIPs is given too, apiVIP must be its first entry"#
            ]
        );
        assert!(errors(
            V4,
            "apiVIP: 192.0.2.5\napiVIPs: [192.0.2.5]\ningressVIP: 192.0.2.7",
            None
        )
        .is_empty());
    }

    #[test]
    fn dns_vip_differs_from_the_others() {
        let got = errors(
            V4,
            "apiVIPs: [192.0.2.5]\ningressVIPs: [192.0.2.7]\ndnsVIP: 192.0.2.5",
            None,
        );
        assert_eq!(
            got,
            [
                r#"platform.baremetal.dnsVIP: Invalid value: "192.0.2.5": the DNS VIP must differ from the API and Ingress VIPs"#
            ]
        );
    }
}
