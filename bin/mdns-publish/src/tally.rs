//! What `browse` heard and refused, added up over its rounds, as a metrics file in Prometheus'
//! text format (`browse --metrics FILE`, for node_exporter's textfile collector): the nodes it
//! holds, the nodes it left out, and the responses and records it refused, by why.

use std::fmt::Write as _;

use crate::browse::Refusals;

/// The counts of a browse so far.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Tally {
    /// Rounds done.
    pub rounds: u64,
    /// Nodes in the inventory after the last round.
    pub nodes: u64,
    /// Nodes heard in the last round but left out of the inventory (a bad name, a second
    /// name for an address, no valid signature).
    pub left_out: u64,
    /// Responses refused for not coming from the link.
    pub off_link: u64,
    /// Records and responses refused, by why.
    pub refused: Refusals,
    /// Responses past a round's cap.
    pub overflow: u64,
}

/// What one round heard and refused.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Round {
    /// Nodes in the inventory.
    pub nodes: usize,
    /// Nodes left out of it.
    pub left_out: usize,
    /// Responses not from the link.
    pub off_link: u64,
    /// Records refused.
    pub refused: Refusals,
    /// Responses past the round's cap.
    pub overflow: u64,
}

impl Tally {
    /// Adds round `r`.
    pub fn add(&mut self, r: Round) {
        self.rounds += 1;
        self.nodes = r.nodes as u64;
        self.left_out = r.left_out as u64;
        self.off_link += r.off_link;
        self.refused.not_owner += r.refused.not_owner;
        self.refused.full += r.refused.full;
        self.overflow += r.overflow;
    }

    /// The metrics file.
    pub fn text(&self) -> String {
        let mut out = String::new();
        let mut metric = |name: &str, kind: &str, help: &str, samples: &[(&str, u64)]| {
            let _ = writeln!(out, "# HELP ipi_mdns_browse_{name} {help}");
            let _ = writeln!(out, "# TYPE ipi_mdns_browse_{name} {kind}");
            for (labels, value) in samples {
                let _ = writeln!(out, "ipi_mdns_browse_{name}{labels} {value}");
            }
        };
        metric(
            "rounds_total",
            "counter",
            "Browse rounds done.",
            &[("", self.rounds)],
        );
        metric(
            "nodes",
            "gauge",
            "Nodes in the inventory after the last round.",
            &[("", self.nodes)],
        );
        metric(
            "left_out",
            "gauge",
            "Nodes heard in the last round but left out of the inventory (see the log).",
            &[("", self.left_out)],
        );
        metric(
            "refused_total",
            "counter",
            "Responses and records not taken in, by why.",
            &[
                ("{reason=\"off_link\"}", self.off_link),
                ("{reason=\"not_owner\"}", self.refused.not_owner),
                ("{reason=\"full\"}", self.refused.full),
                ("{reason=\"overflow\"}", self.overflow),
            ],
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_add_up_and_the_gauges_are_the_last_rounds() {
        let mut t = Tally::default();
        let refused = Refusals {
            not_owner: 2,
            full: 0,
        };
        t.add(Round {
            nodes: 3,
            left_out: 1,
            off_link: 4,
            refused,
            overflow: 0,
        });
        t.add(Round {
            nodes: 2,
            left_out: 0,
            off_link: 1,
            refused,
            overflow: 5,
        });
        let text = t.text();
        for line in [
            "ipi_mdns_browse_rounds_total 2",
            "ipi_mdns_browse_nodes 2",
            "ipi_mdns_browse_left_out 0",
            "ipi_mdns_browse_refused_total{reason=\"off_link\"} 5",
            "ipi_mdns_browse_refused_total{reason=\"not_owner\"} 4",
            "ipi_mdns_browse_refused_total{reason=\"overflow\"} 5",
            "# TYPE ipi_mdns_browse_refused_total counter",
        ] {
            assert!(text.lines().any(|l| l == line), "{line:?} not in:\n{text}");
        }
    }
}
