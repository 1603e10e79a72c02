//! Which node leads which address: rendezvous (highest random weight) hashing. Every node
//! scores every address; the address's nodes in score order are its priorities. Each node
//! leads about its share, and a node that leaves takes only its own addresses with it, spread
//! over the others by their next scores; an address added or released moves no other.
//!
//! The score must be the same on every node and in every version of vrrpd (the nodes decide
//! alone, from the same store): FNV-1a over the node's name and the key, then SplitMix64's
//! finaliser so that names differing in one byte score independently. Never `std`'s hasher,
//! whose output may change between Rust releases.

/// FNV-1a, 64 bits.
fn fnv1a(bytes: impl IntoIterator<Item = u8>) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// SplitMix64's finaliser: every input bit reaches every output bit.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The score of `node` for `key`.
pub fn score(node: &str, key: &str) -> u64 {
    // The separator keeps ("ab", "c") and ("a", "bc") apart: a name has no NUL.
    let bytes = node.bytes().chain([0]).chain(key.bytes());
    mix(fnv1a(bytes))
}

/// `nodes` in the order they lead `key`: highest score first, ties by name.
pub fn rank<'a, T>(nodes: &'a [T], name: impl Fn(&T) -> &str, key: &str) -> Vec<&'a T> {
    let mut ranked: Vec<(u64, &T)> = nodes.iter().map(|n| (score(name(n), key), n)).collect();
    ranked.sort_by(|(a, x), (b, y)| b.cmp(a).then_with(|| name(x).cmp(name(y))));
    ranked.into_iter().map(|(_, n)| n).collect()
}

/// The base priority of the node at `rank` (0 leads): 250, 249, ... and never below 1, under
/// 255 (the address owner's, RFC 5798 5.2.4) so that every node starts as a backup.
pub fn priority(rank: usize) -> u8 {
    u8::try_from(250usize.saturating_sub(rank))
        .unwrap_or(1)
        .max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaders<'a>(nodes: &'a [&'a str], keys: &[String]) -> Vec<&'a str> {
        keys.iter().map(|k| *rank(nodes, |n| n, k)[0]).collect()
    }

    #[test]
    fn scores_are_fixed_forever() {
        // Another node, another version: the same numbers, or addresses would move.
        assert_eq!(
            score("master-0", "192.0.2.10"),
            score("master-0", "192.0.2.10")
        );
        assert_eq!(fnv1a(*b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(mix(0), 0);
        assert_ne!(score("ab", "c"), score("a", "bc"));
    }

    #[test]
    fn a_node_that_leaves_moves_only_its_own_addresses_and_spreads_them() {
        let keys: Vec<String> = (0..600).map(|i| format!("198.51.100.{i}")).collect();
        let all = ["node-a", "node-b", "node-c"];
        let before = leaders(&all, &keys);
        for n in all {
            let share = before.iter().filter(|l| **l == n).count();
            assert!((170..=230).contains(&share), "{n} leads {share} of 600");
        }
        let rest = ["node-a", "node-c"];
        let after = leaders(&rest, &keys);
        let mut to = std::collections::BTreeMap::new();
        for (b, a) in before.iter().zip(&after) {
            if *b == "node-b" {
                *to.entry(*a).or_insert(0) += 1;
            } else {
                assert_eq!(b, a, "an address of a node that stayed moved");
            }
        }
        assert!(to.values().all(|n| *n > 60), "spread: {to:?}");
    }

    #[test]
    fn priorities_follow_the_rank_and_stay_a_backups() {
        assert_eq!(priority(0), 250);
        assert_eq!(priority(2), 248);
        assert_eq!(priority(1000), 1);
    }
}
