//! The node inventory: every node's name, roles and addresses.
//!
//! Read from `kubectl get nodes -o json` (roles from the `node-role.kubernetes.io/*` labels,
//! addresses from `InternalIP`), from our own text format (ipi-nodes(5), which mdns-publish and
//! ipam write and a person can write by hand) or from its JSON form. The format is recognised
//! from the content. Every problem is reported with its place, not just the first one.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::name;
use crate::role::Role;

/// One node.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Node {
    /// The node's name: a DNS name, usually its host name.
    pub name: String,
    /// What it does; empty when nobody knows (a node discovered without a role).
    #[serde(default)]
    pub roles: BTreeSet<Role>,
    /// Its addresses, both families, in order of preference (the first is the primary one).
    pub addresses: Vec<IpAddr>,
}

impl Node {
    /// Whether the node has this role.
    pub fn has_role(&self, role: Role) -> bool {
        self.roles.contains(&role)
    }
}

/// Every known node, sorted by name, names and addresses unique.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct Inventory {
    nodes: Vec<Node>,
}

/// One problem in an inventory, with its place (`12` for a line, `items[2].metadata.name`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Where: a line number, or a path into the JSON document.
    pub place: String,
    /// What was wrong, and what would be right.
    pub message: String,
}

/// An inventory that could not be read.
#[derive(Debug, thiserror::Error)]
pub enum InventoryError {
    /// The file could not be read at all.
    #[error("{origin}: cannot read: {source}")]
    Read {
        /// The file.
        origin: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The content has problems; every one is listed.
    #[error("{}", display_problems(origin, problems))]
    Invalid {
        /// The file, or `<stdin>`.
        origin: String,
        /// What was wrong, where.
        problems: Vec<Problem>,
    },
}

fn display_problems(origin: &str, problems: &[Problem]) -> String {
    let lines: Vec<String> = problems
        .iter()
        .map(|p| format!("{origin}:{}: {}", p.place, p.message))
        .collect();
    lines.join("\n")
}

impl Inventory {
    /// An inventory of these nodes; the same checks as for a file (unique names and addresses,
    /// valid names, at least one address each). Problems are placed by the node's index.
    pub fn new(nodes: Vec<Node>) -> Result<Self, Vec<Problem>> {
        let places = (0..nodes.len()).map(|i| format!("node {i}")).collect();
        Self::checked(nodes, places)
    }

    /// Read an inventory file in any of the formats (see the module documentation).
    pub fn load(path: &Path) -> Result<Self, InventoryError> {
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| InventoryError::Read {
            origin: origin.clone(),
            source,
        })?;
        Self::parse(&text, &origin)
    }

    /// Parse an inventory from text; `origin` names it in errors (a file name, `<stdin>`).
    pub fn parse(text: &str, origin: &str) -> Result<Self, InventoryError> {
        let invalid = |problems| InventoryError::Invalid {
            origin: origin.to_owned(),
            problems,
        };
        let trimmed = text.trim_start();
        let (nodes, places) = if trimmed.starts_with('{') || trimmed.starts_with('[') {
            parse_json(text).map_err(invalid)?
        } else {
            parse_text(text).map_err(invalid)?
        };
        Self::checked(nodes, places).map_err(invalid)
    }

    fn checked(mut nodes: Vec<Node>, places: Vec<String>) -> Result<Self, Vec<Problem>> {
        let mut problems = Vec::new();
        let mut names: BTreeMap<String, &str> = BTreeMap::new();
        let mut owners: BTreeMap<IpAddr, &str> = BTreeMap::new();
        for (node, place) in nodes.iter().zip(&places) {
            let mut problem = |message: String| {
                problems.push(Problem {
                    place: place.clone(),
                    message,
                });
            };
            if let Err(e) = name::check_name(&node.name) {
                problem(format!(
                    "node name {:?} is not a valid DNS name: {e}",
                    node.name
                ));
            }
            if node.addresses.is_empty() {
                problem(format!("node {:?} has no address", node.name));
            }
            if let Some(first) = names.insert(node.name.to_ascii_lowercase(), place) {
                problem(format!(
                    "node {:?} is listed twice (first at {first})",
                    node.name
                ));
            }
            for address in &node.addresses {
                if let Some(other) = owners.insert(*address, place) {
                    if other != place {
                        problem(format!(
                            "address {address} is also given to the node at {other}"
                        ));
                    }
                }
            }
        }
        if !problems.is_empty() {
            return Err(problems);
        }
        for node in &mut nodes {
            let mut seen = BTreeSet::new();
            node.addresses.retain(|a| seen.insert(*a));
        }
        nodes.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(Self { nodes })
    }

    /// The nodes, sorted by name.
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// The node of this name (DNS names compare without regard to case).
    pub fn get(&self, name: &str) -> Option<&Node> {
        self.nodes
            .iter()
            .find(|n| n.name.eq_ignore_ascii_case(name))
    }

    /// The node that has this address.
    pub fn owner_of(&self, address: IpAddr) -> Option<&Node> {
        self.nodes.iter().find(|n| n.addresses.contains(&address))
    }

    /// The nodes that have this role.
    pub fn with_role(&self, role: Role) -> impl Iterator<Item = &Node> {
        self.nodes.iter().filter(move |n| n.has_role(role))
    }

    /// The inventory in our text format (ipi-nodes(5)): deterministic, so an unchanged inventory
    /// gives byte-identical text.
    pub fn to_text(&self) -> String {
        let mut out = String::from("# ipi-net node inventory: name roles addresses...\n");
        for node in &self.nodes {
            let roles = if node.roles.is_empty() {
                "-".to_owned()
            } else {
                node.roles
                    .iter()
                    .map(|r| r.as_str())
                    .collect::<Vec<_>>()
                    .join(",")
            };
            out.push_str(&node.name);
            out.push(' ');
            out.push_str(&roles);
            for address in &node.addresses {
                out.push(' ');
                out.push_str(&address.to_string());
            }
            out.push('\n');
        }
        out
    }

    /// The inventory as JSON (`{"nodes": [...]}`), pretty-printed, ending in a newline.
    pub fn to_json(&self) -> String {
        // Serializing plain strings, sets and addresses cannot fail.
        let mut out = serde_json::to_string_pretty(self).unwrap_or_default();
        out.push('\n');
        out
    }
}

/// Our text format: `NAME ROLES ADDRESS...` per line, `#` comments, roles comma-separated or `-`.
fn parse_text(text: &str) -> Result<(Vec<Node>, Vec<String>), Vec<Problem>> {
    let mut nodes = Vec::new();
    let mut places = Vec::new();
    let mut problems = Vec::new();
    for (index, raw) in text.lines().enumerate() {
        let place = format!("{}", index + 1);
        let line = raw.split('#').next().unwrap_or_default();
        let mut words = line.split_whitespace();
        let Some(name) = words.next() else { continue };
        let mut problem = |message: String| {
            problems.push(Problem {
                place: place.clone(),
                message,
            });
        };
        let mut roles = BTreeSet::new();
        match words.next() {
            None => problem(format!(
                "node {name:?}: expected roles and addresses after the name (NAME ROLES ADDRESS...)"
            )),
            Some("-") => {}
            Some(list) => {
                for role in list.split(',') {
                    match Role::from_name(role) {
                        Some(role) => {
                            roles.insert(role);
                        }
                        None => problem(format!(
                            "node {name:?}: unknown role {role:?} (bootstrap, master, control-plane, worker, or - for none)"
                        )),
                    }
                }
            }
        }
        let mut addresses = Vec::new();
        for word in words {
            match word.parse::<IpAddr>() {
                Ok(address) => addresses.push(address),
                Err(_) => problem(format!("node {name:?}: {word:?} is not a valid IP")),
            }
        }
        nodes.push(Node {
            name: name.to_owned(),
            roles,
            addresses,
        });
        places.push(place);
    }
    if problems.is_empty() {
        Ok((nodes, places))
    } else {
        Err(problems)
    }
}

#[derive(Deserialize)]
#[serde(untagged)]
enum JsonDocument {
    /// `kubectl get nodes -o json`: a `List` of `Node` objects.
    Kubectl { items: Vec<KubeNode> },
    /// Our JSON form.
    Ours { nodes: Vec<Node> },
}

#[derive(Deserialize)]
struct KubeNode {
    metadata: KubeMetadata,
    #[serde(default)]
    status: KubeStatus,
}

#[derive(Deserialize)]
struct KubeMetadata {
    name: String,
    #[serde(default)]
    labels: BTreeMap<String, String>,
}

#[derive(Deserialize, Default)]
struct KubeStatus {
    #[serde(default)]
    addresses: Vec<KubeAddress>,
}

#[derive(Deserialize)]
struct KubeAddress {
    #[serde(rename = "type")]
    kind: String,
    address: String,
}

/// The label prefix Kubernetes gives node roles (`node-role.kubernetes.io/master: ""`).
const ROLE_LABEL: &str = "node-role.kubernetes.io/";

fn parse_json(text: &str) -> Result<(Vec<Node>, Vec<String>), Vec<Problem>> {
    let document: JsonDocument = serde_json::from_str(text).map_err(|e| {
        vec![Problem {
            place: format!("{}:{}", e.line(), e.column()),
            message: format!(
                "{e} (expected `kubectl get nodes -o json` output or {{\"nodes\": [...]}})"
            ),
        }]
    })?;
    match document {
        JsonDocument::Ours { nodes } => {
            let places = (0..nodes.len()).map(|i| format!("nodes[{i}]")).collect();
            Ok((nodes, places))
        }
        JsonDocument::Kubectl { items } => {
            let mut problems = Vec::new();
            let mut nodes = Vec::new();
            let mut places = Vec::new();
            for (i, item) in items.into_iter().enumerate() {
                let roles = item
                    .metadata
                    .labels
                    .keys()
                    .filter_map(|label| label.strip_prefix(ROLE_LABEL))
                    .filter_map(Role::from_name)
                    .collect();
                let mut addresses = Vec::new();
                for (j, a) in item.status.addresses.iter().enumerate() {
                    if a.kind != "InternalIP" {
                        continue;
                    }
                    match a.address.parse::<IpAddr>() {
                        Ok(address) => addresses.push(address),
                        Err(_) => problems.push(Problem {
                            place: format!("items[{i}].status.addresses[{j}].address"),
                            message: format!("{:?} is not a valid IP", a.address),
                        }),
                    }
                }
                nodes.push(Node {
                    name: item.metadata.name,
                    roles,
                    addresses,
                });
                places.push(format!("items[{i}]"));
            }
            if problems.is_empty() {
                Ok((nodes, places))
            } else {
                Err(problems)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KUBECTL: &str = include_str!("../../../tests/fixtures/seeds/managed-nodes.kubectl.json");

    #[test]
    fn reads_kubectl_json() {
        let inv = Inventory::parse(KUBECTL, "nodes.json").unwrap();
        assert_eq!(inv.nodes().len(), 6);
        let m0 = inv.get("managed-mbggk-master-0").unwrap();
        assert_eq!(m0.addresses, vec!["10.0.3.211".parse::<IpAddr>().unwrap()]);
        assert_eq!(m0.roles, BTreeSet::from([Role::Master]));
        assert_eq!(inv.with_role(Role::Master).count(), 3);
        assert_eq!(inv.with_role(Role::Worker).count(), 3);
        let w = inv.owner_of("10.0.3.23".parse().unwrap()).unwrap();
        assert_eq!(w.name, "managed-mbggk-worker-0-fgmk7");
    }

    #[test]
    fn text_round_trips_and_is_sorted() {
        let text = "\
# hand-written
worker-0  worker  192.0.2.21
bootstrap bootstrap 192.0.2.10 2001:db8::10   # dual-stack
master-0 control-plane,worker 192.0.2.11
mystery - 192.0.2.99
";
        let inv = Inventory::parse(text, "nodes").unwrap();
        let names: Vec<_> = inv.nodes().iter().map(|n| n.name.as_str()).collect();
        assert_eq!(names, ["bootstrap", "master-0", "mystery", "worker-0"]);
        assert_eq!(
            inv.get("master-0").unwrap().roles,
            BTreeSet::from([Role::Master, Role::Worker])
        );
        assert!(inv.get("mystery").unwrap().roles.is_empty());
        let out = inv.to_text();
        assert!(
            out.contains("bootstrap bootstrap 192.0.2.10 2001:db8::10\n"),
            "{out}"
        );
        assert!(out.contains("master-0 master,worker 192.0.2.11\n"), "{out}");
        assert_eq!(Inventory::parse(&out, "again").unwrap(), inv);
        assert_eq!(Inventory::parse(&inv.to_json(), "json").unwrap(), inv);
        // The kubectl form gives the same text as our own form of it.
        let kube = Inventory::parse(KUBECTL, "k").unwrap();
        assert_eq!(Inventory::parse(&kube.to_text(), "t").unwrap(), kube);
    }

    #[test]
    fn every_problem_is_reported_with_its_line() {
        let text = "\
a master 192.0.2.1
b leader 192.0.2.300
a worker 192.0.2.3
c worker 192.0.2.1
d_e worker 192.0.2.4
lonely
";
        let err = Inventory::parse(text, "nodes.txt").unwrap_err().to_string();
        let expected = [
            "nodes.txt:2: node \"b\": unknown role \"leader\"",
            "nodes.txt:2: node \"b\": \"192.0.2.300\" is not a valid IP",
            "nodes.txt:6: node \"lonely\": expected roles and addresses",
        ];
        for e in expected {
            assert!(err.contains(e), "missing {e:?} in:\n{err}");
        }
        // Semantic checks run once the syntax is right.
        let text = "a master 192.0.2.1\na worker 192.0.2.3\nc worker 192.0.2.1\nd_e worker 192.0.2.4\nf worker\n";
        let err = Inventory::parse(text, "nodes.txt").unwrap_err().to_string();
        for e in [
            "nodes.txt:2: node \"a\" is listed twice (first at 1)",
            "nodes.txt:3: address 192.0.2.1 is also given to the node at 1",
            "nodes.txt:4: node name \"d_e\" is not a valid DNS name",
            "nodes.txt:5: node \"f\" has no address",
        ] {
            assert!(err.contains(e), "missing {e:?} in:\n{err}");
        }
    }

    #[test]
    fn kubectl_problems_name_the_json_path() {
        let bad = KUBECTL.replace("10.0.3.51", "10.0.3.510");
        let err = Inventory::parse(&bad, "nodes.json")
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "nodes.json:items[1].status.addresses[0].address: \"10.0.3.510\" is not a valid IP"
        );
        let err = Inventory::parse("{\"items\": [{]}", "n.json")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("n.json:1:"), "{err}");
    }

    #[test]
    fn the_same_address_twice_on_one_node_is_kept_once() {
        let inv = Inventory::parse("a worker 192.0.2.1 192.0.2.1\n", "n").unwrap();
        assert_eq!(inv.nodes()[0].addresses.len(), 1);
    }
}
