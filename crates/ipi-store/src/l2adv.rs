//! MetalLB's L2Advertisement (metallb.io/v1beta1): which pools are announced at layer 2, on
//! which nodes (`nodeSelectors`) and on which interfaces (`interfaces`).
//!
//! The selectors are Kubernetes label selectors. Pools are matched on their labels; nodes, which
//! ipi-net knows from its inventory rather than from the API server, on the labels a node of
//! that inventory would carry: `kubernetes.io/hostname=NAME` and `node-role.kubernetes.io/ROLE`
//! (empty value) for each of its roles ([`node_labels`]).

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use crate::object::{parse_object, read, Problems};
use crate::pool::AddressPool;

/// An L2Advertisement's spec, as MetalLB defines it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Spec {
    #[serde(default)]
    ip_address_pools: Vec<String>,
    #[serde(default)]
    ip_address_pool_selectors: Vec<LabelSelector>,
    #[serde(default)]
    node_selectors: Vec<LabelSelector>,
    #[serde(default)]
    interfaces: Vec<String>,
}

/// A Kubernetes label selector: every label of `match_labels` and every expression must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LabelSelector {
    /// Labels that must be present with these values.
    #[serde(default)]
    pub match_labels: BTreeMap<String, String>,
    /// Requirements on labels.
    #[serde(default)]
    pub match_expressions: Vec<Requirement>,
}

/// One requirement of a label selector.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Requirement {
    /// The label.
    pub key: String,
    /// How its value is compared.
    pub operator: Operator,
    /// The values (`In`, `NotIn`); none for `Exists`, `DoesNotExist`.
    #[serde(default)]
    pub values: Vec<String>,
}

/// A requirement's operator (Kubernetes' set-based selectors).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum Operator {
    /// The label is present with one of the values.
    In,
    /// The label is absent, or present with none of the values.
    NotIn,
    /// The label is present.
    Exists,
    /// The label is absent.
    DoesNotExist,
}

impl LabelSelector {
    /// Whether `labels` satisfy every part of the selector (an empty selector matches all).
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.match_labels
            .iter()
            .all(|(k, v)| labels.get(k) == Some(v))
            && self.match_expressions.iter().all(|r| r.matches(labels))
    }

    /// What is wrong with the selector at `place`, as Kubernetes would refuse it.
    fn problems(&self, place: &str, out: &mut Vec<String>) {
        for (j, r) in self.match_expressions.iter().enumerate() {
            let at = format!("{place}.matchExpressions[{j}]");
            if r.key.is_empty() {
                out.push(format!("{at}.key is empty"));
            }
            let wants_values = matches!(r.operator, Operator::In | Operator::NotIn);
            if wants_values && r.values.is_empty() {
                out.push(format!("{at}.values: {:?} needs values", r.operator));
            } else if !wants_values && !r.values.is_empty() {
                out.push(format!("{at}.values: {:?} takes no values", r.operator));
            }
        }
    }
}

impl Requirement {
    fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let value = labels.get(&self.key);
        match self.operator {
            Operator::In => value.is_some_and(|v| self.values.contains(v)),
            Operator::NotIn => value.is_none_or(|v| !self.values.contains(v)),
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
        }
    }
}

/// An L2Advertisement read and checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct L2Advertisement {
    /// Its name (metadata.name).
    pub name: String,
    /// `spec.ipAddressPools`: pools by name.
    pub pools: Vec<String>,
    /// `spec.ipAddressPoolSelectors`: pools by label.
    pub pool_selectors: Vec<LabelSelector>,
    /// `spec.nodeSelectors`: the nodes that announce (any of them matching; none: every node).
    pub node_selectors: Vec<LabelSelector>,
    /// `spec.interfaces`: where to announce (none: anywhere).
    pub interfaces: Vec<String>,
}

/// Whether `name` can be a Linux interface name (IFNAMSIZ less the NUL, no `/`, no space).
fn interface_name(name: &str) -> Result<(), &'static str> {
    if name.is_empty() || name.len() > 15 {
        return Err("is not 1 to 15 bytes long");
    }
    if name == "." || name == ".." || name.contains(['/', ':']) {
        return Err("cannot name an interface");
    }
    if name.chars().any(char::is_whitespace) {
        return Err("holds white space");
    }
    Ok(())
}

impl L2Advertisement {
    /// Reads and checks an L2Advertisement; Err lists every problem.
    pub fn load(path: &Path) -> Result<Self, Problems> {
        Self::parse(&read(path)?, &path.display().to_string())
    }

    /// Reads and checks an L2Advertisement from `text`, named `file` in errors.
    pub fn parse(text: &str, file: &str) -> Result<Self, Problems> {
        let (meta, spec): (_, Spec) = parse_object(text, file, "L2Advertisement")?;
        let mut problems = Vec::new();
        for (i, s) in spec.ip_address_pool_selectors.iter().enumerate() {
            s.problems(&format!("spec.ipAddressPoolSelectors[{i}]"), &mut problems);
        }
        for (i, s) in spec.node_selectors.iter().enumerate() {
            s.problems(&format!("spec.nodeSelectors[{i}]"), &mut problems);
        }
        for (i, p) in spec.ip_address_pools.iter().enumerate() {
            if p.is_empty() {
                problems.push(format!("spec.ipAddressPools[{i}] is empty"));
            }
        }
        for (i, name) in spec.interfaces.iter().enumerate() {
            if let Err(why) = interface_name(name) {
                problems.push(format!("spec.interfaces[{i}] {name:?} {why}"));
            }
        }
        if !problems.is_empty() {
            return Err(Problems(
                problems
                    .into_iter()
                    .map(|p| format!("{file}: {p}"))
                    .collect(),
            ));
        }
        Ok(Self {
            name: meta.name,
            pools: spec.ip_address_pools,
            pool_selectors: spec.ip_address_pool_selectors,
            node_selectors: spec.node_selectors,
            interfaces: spec.interfaces,
        })
    }

    /// Whether the advertisement announces `pool`: named, or selected by its labels; every pool
    /// when it names and selects none (MetalLB's rule).
    pub fn covers(&self, pool: &AddressPool) -> bool {
        if self.pools.is_empty() && self.pool_selectors.is_empty() {
            return true;
        }
        self.pools.contains(&pool.name)
            || self.pool_selectors.iter().any(|s| s.matches(&pool.labels))
    }

    /// Whether the node with these labels announces (any selector matches; no selector: all).
    pub fn selects_node(&self, labels: &BTreeMap<String, String>) -> bool {
        self.node_selectors.is_empty() || self.node_selectors.iter().any(|s| s.matches(labels))
    }
}

/// The labels Kubernetes would give an inventory node: its host name and one role label per
/// role.
pub fn node_labels(node: &ipi_core::inventory::Node) -> BTreeMap<String, String> {
    let mut labels = BTreeMap::new();
    labels.insert("kubernetes.io/hostname".to_owned(), node.name.clone());
    for role in &node.roles {
        labels.insert(
            format!("node-role.kubernetes.io/{}", role.as_str()),
            String::new(),
        );
    }
    labels
}

#[cfg(test)]
mod tests {
    use super::*;

    const FULL: &str = "apiVersion: metallb.io/v1beta1
kind: L2Advertisement
metadata:
  name: internalapi
  namespace: metallb-system
spec:
  ipAddressPools:
  - internalapi
  ipAddressPoolSelectors:
  - matchLabels:
      tier: control
  nodeSelectors:
  - matchExpressions:
    - key: node-role.kubernetes.io/master
      operator: Exists
  interfaces:
  - enp6s0.20
";

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn reads_every_field() {
        let a = L2Advertisement::parse(FULL, "l2.yaml").unwrap();
        assert_eq!(a.name, "internalapi");
        assert_eq!(a.pools, ["internalapi"]);
        assert_eq!(a.interfaces, ["enp6s0.20"]);
        assert!(a.selects_node(&labels(&[("node-role.kubernetes.io/master", "")])));
        assert!(!a.selects_node(&labels(&[("node-role.kubernetes.io/worker", "")])));
        let pool = AddressPool::parse(
            "kind: IPAddressPool\nmetadata:\n  name: other\n  labels:\n    tier: control\n\
             spec:\n  addresses: [192.0.2.0/28]\n",
            "p.yaml",
        )
        .unwrap();
        assert!(a.covers(&pool), "selected by its labels");
    }

    #[test]
    fn operators_follow_kubernetes() {
        let r = |op, values: &[&str]| Requirement {
            key: "k".into(),
            operator: op,
            values: values.iter().map(|v| (*v).to_owned()).collect(),
        };
        let with = labels(&[("k", "a")]);
        let without = labels(&[]);
        assert!(r(Operator::In, &["a", "b"]).matches(&with));
        assert!(!r(Operator::In, &["a"]).matches(&without));
        assert!(r(Operator::NotIn, &["b"]).matches(&with));
        assert!(r(Operator::NotIn, &["a"]).matches(&without));
        assert!(!r(Operator::NotIn, &["a"]).matches(&with));
        assert!(r(Operator::Exists, &[]).matches(&with));
        assert!(r(Operator::DoesNotExist, &[]).matches(&without));
    }

    #[test]
    fn every_problem_names_its_field() {
        let text = "kind: L2Advertisement
metadata: {name: x}
spec:
  ipAddressPools: ['']
  nodeSelectors:
  - matchExpressions:
    - {key: a, operator: In}
    - {key: '', operator: Exists, values: [x]}
  interfaces: [a-very-long-interface-name, 'x/y']
";
        let p = L2Advertisement::parse(text, "l2.yaml").unwrap_err().0;
        let want = [
            "l2.yaml: spec.nodeSelectors[0].matchExpressions[0].values: In needs values",
            "l2.yaml: spec.nodeSelectors[0].matchExpressions[1].key is empty",
            "l2.yaml: spec.nodeSelectors[0].matchExpressions[1].values: Exists takes no values",
            "l2.yaml: spec.ipAddressPools[0] is empty",
            "l2.yaml: spec.interfaces[0] \"a-very-long-interface-name\" is not 1 to 15 bytes long",
            "l2.yaml: spec.interfaces[1] \"x/y\" cannot name an interface",
        ];
        assert_eq!(p, want);
        let e = L2Advertisement::parse("kind: L2Advertisement\nspec: {interfacez: [a]}\n", "f")
            .unwrap_err();
        assert!(e.to_string().contains("interfacez"), "{e}");
        let e = L2Advertisement::parse("kind: IPAddressPool\nspec: {}\n", "f").unwrap_err();
        assert!(e.to_string().contains("expected L2Advertisement"), "{e}");
    }

    #[test]
    fn nothing_named_covers_every_pool_and_node() {
        let a = L2Advertisement::parse("kind: L2Advertisement\nspec: {}\n", "f").unwrap();
        let pool = AddressPool::parse(
            "metadata: {name: p}\nspec: {addresses: [192.0.2.1-192.0.2.2]}\n",
            "p",
        )
        .unwrap();
        assert!(a.covers(&pool));
        assert!(a.selects_node(&labels(&[])));
    }
}
