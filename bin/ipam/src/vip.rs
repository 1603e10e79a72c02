//! VIPs: validation with ipi-core's rules, and OpenStack's default suggestion.

use std::net::IpAddr;

use ipi_core::vip::address_problems;
use ipi_core::Inventory;
use ipi_store::range::{from_u128, to_u128, Span};
use ipnetwork::IpNetwork;

/// The host number OpenStack's installer gives the API VIP by default.
pub const API_HOST: u128 = 5;
/// ... and the Ingress VIP.
pub const INGRESS_HOST: u128 = 7;

/// Suggested VIPs: one API and one Ingress VIP per family, the primary family first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Suggestion {
    /// API VIPs.
    pub api: Vec<IpAddr>,
    /// Ingress VIPs.
    pub ingress: Vec<IpAddr>,
}

/// Host `n` of `network`, if the network is that large.
fn host(network: &IpNetwork, n: u128) -> Option<IpAddr> {
    let all = Span::of_network(*network);
    to_u128(all.first)
        .checked_add(n)
        .filter(|a| *a <= to_u128(all.last))
        .and_then(|a| from_u128(a, all.first))
}

/// The first address from host `from` of `network` that can be a VIP and is not in `taken`.
fn first_free(
    network: &IpNetwork,
    from: u128,
    networks: &[IpNetwork],
    nodes: Option<&Inventory>,
    taken: &[IpAddr],
) -> Option<IpAddr> {
    (from..)
        .map_while(|n| host(network, n))
        .find(|a| !taken.contains(a) && address_problems(*a, networks, nodes).is_empty())
}

/// A network with no free address left for a VIP.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{network}: no free address for the {vip} VIP")]
pub struct NoRoom {
    /// The machine network.
    pub network: IpNetwork,
    /// Which VIP: `API` or `Ingress`.
    pub vip: &'static str,
}

/// OpenStack's defaults for `networks` (the first of each family), each moved on to the next
/// free address while it is a node's or in `reserved`. Err names the network that has no room.
pub fn suggest(
    networks: &[IpNetwork],
    nodes: Option<&Inventory>,
    reserved: &[IpAddr],
) -> Result<Suggestion, NoRoom> {
    let mut s = Suggestion {
        api: Vec::new(),
        ingress: Vec::new(),
    };
    let mut families: Vec<bool> = Vec::new();
    for n in networks {
        if families.contains(&n.is_ipv4()) {
            continue;
        }
        families.push(n.is_ipv4());
        let mut taken: Vec<IpAddr> = reserved.to_vec();
        let api = first_free(n, API_HOST, networks, nodes, &taken).ok_or(NoRoom {
            network: *n,
            vip: "API",
        })?;
        taken.push(api);
        let ingress = first_free(n, INGRESS_HOST, networks, nodes, &taken).ok_or(NoRoom {
            network: *n,
            vip: "Ingress",
        })?;
        s.api.push(api);
        s.ingress.push(ingress);
    }
    Ok(s)
}

impl Suggestion {
    /// As the install-config fields (under `platform.<name>:`).
    pub fn yaml(&self) -> String {
        let list = |v: &[IpAddr]| v.iter().map(|a| format!("- {a}\n")).collect::<String>();
        format!(
            "apiVIPs:\n{}ingressVIPs:\n{}",
            list(&self.api),
            list(&self.ingress)
        )
    }

    /// As JSON.
    pub fn json(&self) -> String {
        let list = |v: &[IpAddr]| {
            v.iter()
                .map(|a| format!("\"{a}\""))
                .collect::<Vec<_>>()
                .join(", ")
        };
        format!(
            "{{\"apiVIPs\": [{}], \"ingressVIPs\": [{}]}}\n",
            list(&self.api),
            list(&self.ingress)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nets(v: &[&str]) -> Vec<IpNetwork> {
        v.iter().map(|n| n.parse().unwrap()).collect()
    }

    #[test]
    fn hosts_five_and_seven_of_the_first_network_of_each_family() {
        let s = suggest(
            &nets(&["192.0.2.0/24", "2001:db8::/64", "198.51.100.0/24"]),
            None,
            &[],
        )
        .unwrap();
        assert_eq!(
            s.api,
            [
                "192.0.2.5".parse::<IpAddr>().unwrap(),
                "2001:db8::5".parse().unwrap()
            ]
        );
        assert_eq!(
            s.ingress,
            [
                "192.0.2.7".parse::<IpAddr>().unwrap(),
                "2001:db8::7".parse().unwrap()
            ]
        );
        assert_eq!(
            s.yaml(),
            "apiVIPs:\n- 192.0.2.5\n- 2001:db8::5\ningressVIPs:\n- 192.0.2.7\n- 2001:db8::7\n"
        );
    }

    #[test]
    fn a_node_on_a_default_moves_it_on() {
        let nodes = Inventory::parse(
            "m0 master 192.0.2.5\nm1 master 192.0.2.6\nm2 master 192.0.2.7\n",
            "n",
        )
        .unwrap();
        let s = suggest(&nets(&["192.0.2.0/24"]), Some(&nodes), &[]).unwrap();
        assert_eq!(s.api, ["192.0.2.8".parse::<IpAddr>().unwrap()]);
        assert_eq!(s.ingress, ["192.0.2.9".parse::<IpAddr>().unwrap()]);
    }

    #[test]
    fn a_reserved_address_moves_it_on_too() {
        let reserved: Vec<IpAddr> =
            vec!["192.0.2.5".parse().unwrap(), "192.0.2.7".parse().unwrap()];
        let s = suggest(&nets(&["192.0.2.0/24"]), None, &reserved).unwrap();
        assert_eq!(s.api, ["192.0.2.6".parse::<IpAddr>().unwrap()]);
        assert_eq!(s.ingress, ["192.0.2.8".parse::<IpAddr>().unwrap()]);
    }

    #[test]
    fn a_network_too_small_says_so() {
        let e = suggest(&nets(&["192.0.2.0/30"]), None, &[])
            .unwrap_err()
            .to_string();
        assert!(e.contains("192.0.2.0/30") && e.contains("API"), "{e}");
        // A /29 has hosts 1-6: the API VIP fits at 5, the Ingress VIP has no host 7 (broadcast).
        let e = suggest(&nets(&["192.0.2.0/29"]), None, &[])
            .unwrap_err()
            .to_string();
        assert!(e.contains("Ingress"), "{e}");
    }
}
