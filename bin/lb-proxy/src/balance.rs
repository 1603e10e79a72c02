//! `balance roundrobin` with dynamic weights: each server is picked in turn, as often as its
//! weight says, the turns interleaved rather than in bursts (smooth weighted round robin).
//! Weights are given at every pick, so a server that goes DOWN, comes back in `slowstart`
//! or is given another weight takes effect at the next connection. `balance leastconn` and
//! `balance source` ([`SourceMap`], haproxy's map-based hashing) beside it.

use std::net::IpAddr;
use std::time::Duration;

/// haproxy scales user weights by 16 so that slow start can ramp them smoothly.
pub const WEIGHT_SCALE: u32 = 16;

/// The state of one backend's rotation.
#[derive(Debug, Clone, Default)]
pub struct RoundRobin {
    current: Vec<i64>,
    /// The last server `least_connections` picked (None: none yet, the first goes first).
    last: Option<usize>,
}

impl RoundRobin {
    /// Picks the next server given each server's effective weight (0: not eligible). None
    /// when no server is eligible.
    pub fn pick(&mut self, weights: &[u32]) -> Option<usize> {
        self.current.resize(weights.len(), 0);
        let total: i64 = weights.iter().map(|&w| i64::from(w)).sum();
        if total == 0 {
            return None;
        }
        let mut best: Option<usize> = None;
        for (i, &w) in weights.iter().enumerate() {
            if w == 0 {
                continue;
            }
            self.current[i] += i64::from(w);
            if best.is_none_or(|b| self.current[i] > self.current[b]) {
                best = Some(i);
            }
        }
        let b = best?;
        self.current[b] -= total;
        Some(b)
    }

    /// `balance leastconn` (haproxy's `fwlc_get_next_server`): the eligible server with the
    /// fewest connections for its weight, (connections + 1) / weight as haproxy keys its tree,
    /// so that a heavier server takes more; among equals, the next after the last picked, so
    /// that idle servers take turns. None when no server is eligible (weight 0).
    pub fn least_connections(&mut self, weights: &[u32], active: &[u64]) -> Option<usize> {
        let n = weights.len();
        let key = |i: usize| {
            (
                u128::from(active.get(i).copied().unwrap_or(0)) + 1,
                u128::from(weights[i]),
            )
        };
        let mut best: Option<usize> = None;
        let start = self.last.map_or(0, |l| l + 1);
        for step in 0..n {
            let i = (start + step) % n;
            if weights[i] == 0 {
                continue;
            }
            let better = best.is_none_or(|b| {
                let ((ai, wi), (ab, wb)) = (key(i), key(b));
                ai * wb < ab * wi
            });
            if better {
                best = Some(i);
            }
        }
        self.last = Some(best?);
        best
    }
}

/// `balance source` with `hash-type map-based`, as haproxy 2.6 picks (`get_server_sh` in
/// backend.c, `recalc_server_map` in lb_map.c): the client's address folded into 32 bits (its
/// 32-bit words XORed, in network order), optionally through haproxy's avalanche hash,
/// modulo the map's size, looked up in a map that holds each server as often as its weight
/// (the configured weights divided by their greatest common divisor, times 16) in
/// haproxy's order. The same client reaches the same server as haproxy's while the same
/// servers are UP; the map is built again when that set changes. Weights are static here as
/// in haproxy (no slow start).
///
/// With `hash-type consistent` the hash is looked up on haproxy's ring instead (`lb_chash.c`):
/// each server `weight * 16` points at `full_hash(id * 4096 + n)`, its id its place in the
/// backend from 1, the client's hash taken by the nearer of the points on either side; a
/// server going down moves only its own clients.
#[derive(Debug, Clone, Default)]
pub struct SourceMap {
    /// The eligibility it was built for, and the map (server indexes) or the ring (points
    /// and their servers, in key order).
    built: Option<(Vec<bool>, Lookup)>,
}

#[derive(Debug, Clone)]
enum Lookup {
    Map(Vec<usize>),
    Ring(Vec<(u32, usize)>),
}

impl SourceMap {
    /// The server for a client at `address`, given every server's configured weight and
    /// whether it may take the connection now (UP, and a backup only as [`backups`] says),
    /// hashed with `(avalanche, consistent)`. None when none may.
    pub fn pick(
        &mut self,
        address: IpAddr,
        weights: &[u32],
        eligible: &[bool],
        (avalanche, consistent): (bool, bool),
    ) -> Option<usize> {
        let stale = self.built.as_ref().is_none_or(|(e, _)| e != eligible);
        if stale {
            let lookup = if consistent {
                Lookup::Ring(ring(weights, eligible))
            } else {
                Lookup::Map(server_map(weights, eligible))
            };
            self.built = Some((eligible.to_vec(), lookup));
        }
        let usable = eligible.iter().zip(weights).filter(|(&e, &w)| e && w > 0);
        // haproxy does not hash when one server is left.
        let mut h = if usable.count() == 1 {
            0
        } else {
            fold(address)
        };
        // On the ring the hash always goes through the avalanche function: haproxy 2.6 picks
        // so (the lab test beside it spreads 40 neighbouring addresses as it does).
        if avalanche || consistent {
            h = full_hash(h);
        }
        match &self.built.as_ref()?.1 {
            Lookup::Map(map) => {
                let size = u32::try_from(map.len()).ok().filter(|&n| n > 0)?;
                map.get(usize::try_from(h % size).ok()?).copied()
            }
            Lookup::Ring(points) => nearest(points, h),
        }
    }
}

/// haproxy's consistent-hash ring: `weight * 16` points per eligible server, in key order.
fn ring(weights: &[u32], eligible: &[bool]) -> Vec<(u32, usize)> {
    let mut points = Vec::new();
    for (i, (&w, &e)) in weights.iter().zip(eligible).enumerate() {
        let Ok(id) = u32::try_from(i + 1) else { break };
        if e {
            points.extend((0..w * WEIGHT_SCALE).map(|n| (full_hash(id * 4096 + n), i)));
        }
    }
    points.sort_by_key(|&(key, _)| key);
    points
}

/// The server of the point nearer to `h` of the two around it on the ring (the one before on
/// a tie), as `chash_get_server_hash`.
fn nearest(points: &[(u32, usize)], h: u32) -> Option<usize> {
    let after = points.partition_point(|&(key, _)| key < h);
    let next = points.get(after).or(points.first())?;
    let prev = (after.checked_sub(1).and_then(|p| points.get(p))).or(points.last())?;
    let (dp, dn) = (h.wrapping_sub(prev.0), next.0.wrapping_sub(h));
    Some(if dp <= dn { prev.1 } else { next.1 })
}

/// The address's 32-bit words, each in network order, XORed.
fn fold(address: IpAddr) -> u32 {
    match address {
        IpAddr::V4(a) => u32::from(a),
        IpAddr::V6(a) => a
            .octets()
            .chunks_exact(4)
            .map(|w| u32::from_be_bytes([w[0], w[1], w[2], w[3]]))
            .fold(0, |h, w| h ^ w),
    }
}

/// haproxy's `full_hash`: one of Bob Jenkins' avalanching integer hashes, times a large prime.
pub fn full_hash(a: u32) -> u32 {
    let a = a.wrapping_add(0x7ed5_5d16).wrapping_add(a << 12);
    let a = (a ^ 0xc761_c23c) ^ (a >> 19);
    let a = a.wrapping_add(0x1656_67b1).wrapping_add(a << 5);
    let a = a.wrapping_add(0xd3a2_646c) ^ (a << 9);
    let a = a.wrapping_add(0xfd70_46c5).wrapping_add(a << 3);
    let a = (a ^ 0xb55a_4f09) ^ (a >> 16);
    a.wrapping_mul(3_221_225_473)
}

/// haproxy's server map: each eligible server `weight * 16 / gcd` times, the slots handed out
/// by the running scores `recalc_server_map` keeps (the first declared first among equals).
fn server_map(weights: &[u32], eligible: &[bool]) -> Vec<usize> {
    let gcd = weights
        .iter()
        .copied()
        .filter(|&w| w > 0)
        .reduce(|a, b| {
            let (mut a, mut b) = (a, b);
            while b != 0 {
                (a, b) = (b, a % b);
            }
            a
        })
        .unwrap_or(1);
    let eweight: Vec<i64> = (weights.iter().zip(eligible))
        .map(|(&w, &e)| {
            if e {
                i64::from((w * WEIGHT_SCALE).div_ceil(gcd))
            } else {
                0
            }
        })
        .collect();
    let total: i64 = eweight.iter().sum();
    let mut score = vec![0i64; weights.len()];
    let mut map = Vec::with_capacity(usize::try_from(total).unwrap_or(0));
    for _ in 0..total {
        let mut best: Option<(usize, i64)> = None;
        for (i, &e) in eweight.iter().enumerate().filter(|(_, &e)| e > 0) {
            if total == 1 {
                best = Some((i, 0));
                break;
            }
            score[i] += e;
            let v = (score[i] + total) / total;
            if best.is_none_or(|(_, max)| v > max) {
                best = Some((i, v));
            }
        }
        let Some((b, _)) = best else { break };
        map.push(b);
        score[b] -= total;
    }
    map
}

/// haproxy's backup servers: while any other server can take a connection, no backup does;
/// when none can, the first backup that can (in file order), or with `option allbackups`
/// every backup that can. `weights` are the effective weights, changed in place.
pub fn backups(weights: &mut [u32], backup: &[bool], all: bool) {
    let active = weights.iter().zip(backup).any(|(&w, &b)| w > 0 && !b);
    let mut first = true;
    for (w, &b) in weights.iter_mut().zip(backup) {
        if !b {
            continue;
        }
        if active || (!all && !first) {
            *w = 0;
        } else if *w > 0 {
            first = false;
        }
    }
}

/// A server's effective weight: its configured weight scaled, ramped up linearly over
/// `slowstart` since it came UP (at least 1 so that it gets some traffic at once), 0 when it
/// is not UP.
pub fn effective_weight(weight: u32, up_for: Option<Duration>, slowstart: Option<Duration>) -> u32 {
    let Some(up_for) = up_for else {
        return 0;
    };
    let full = weight * WEIGHT_SCALE;
    match slowstart {
        Some(s) if !s.is_zero() && up_for < s && full > 0 => {
            // Microseconds: whole milliseconds would hold the weight back by a step for up to
            // a millisecond past each boundary of the ramp.
            let ramped = (u128::from(full) * up_for.as_micros()).div_ceil(s.as_micros());
            u32::try_from(ramped).unwrap_or(full).clamp(1, full)
        }
        _ => full,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_source_map_holds_each_server_by_its_weight_in_haproxys_order() {
        // Equal weights: 16 slots each, taken in turns from the first declared.
        let map = server_map(&[1, 1], &[true, true]);
        assert_eq!(map.len(), 32);
        assert_eq!(map[..4], [0, 1, 0, 1]);
        // Weights are divided by their greatest common divisor first, as haproxy's wmult.
        assert_eq!(
            server_map(&[2, 4], &[true, true]),
            server_map(&[1, 2], &[true, true])
        );
        let map = server_map(&[1, 2], &[true, true]);
        assert_eq!(map.iter().filter(|&&i| i == 0).count(), 16);
        assert_eq!(map.iter().filter(|&&i| i == 1).count(), 32);
        // A server that may not take connections holds no slot.
        assert!(server_map(&[1, 1, 1], &[true, false, true])
            .iter()
            .all(|&i| i != 1));
        assert!(server_map(&[1], &[false]).is_empty());
    }

    #[test]
    fn on_the_ring_a_server_going_down_moves_only_its_own_clients() {
        let points = ring(&[1, 2, 1], &[true; 3]);
        assert_eq!(points.len(), 64);
        assert!(points.windows(2).all(|w| w[0].0 <= w[1].0));
        let mut m = SourceMap::default();
        let clients: Vec<IpAddr> = (1..=200u8)
            .map(|n| IpAddr::from([198, 51, 100, n]))
            .collect();
        let before: Vec<_> = (clients.iter())
            .map(|&c| m.pick(c, &[1, 2, 1], &[true; 3], (false, true)))
            .collect();
        for s in 0..3 {
            assert!(before.contains(&Some(s)), "server {s} got no client");
        }
        let after: Vec<_> = (clients.iter())
            .map(|&c| m.pick(c, &[1, 2, 1], &[true, false, true], (false, true)))
            .collect();
        for (b, a) in before.iter().zip(&after) {
            assert_ne!(*a, Some(1));
            if *b != Some(1) {
                assert_eq!(a, b, "a client of a server that stayed moved");
            }
        }
    }

    #[test]
    fn one_client_one_server_while_the_set_stays() {
        let mut m = SourceMap::default();
        let client: IpAddr = "192.0.2.77".parse().unwrap();
        let first = m.pick(client, &[1, 1, 1], &[true; 3], (false, false));
        for _ in 0..10 {
            assert_eq!(
                m.pick(client, &[1, 1, 1], &[true; 3], (false, false)),
                first
            );
        }
        // The address modulo the map: 192.0.2.77 is 0xc000024d, mod 48 is 13: slot 13.
        assert_eq!(first, Some(server_map(&[1, 1, 1], &[true; 3])[13]));
        // IPv6: the four words XORed.
        assert_eq!(fold("2001:db8::1".parse().unwrap()), 0x2001_0db8 ^ 1);
        assert_eq!(
            m.pick(client, &[1, 1], &[false, false], (false, false)),
            None
        );
        // One server left: it, unhashed.
        assert_eq!(
            m.pick(client, &[1, 1], &[false, true], (true, false)),
            Some(1)
        );
    }

    #[test]
    fn backups_take_over_only_when_no_other_server_can() {
        let backup = [false, true, true];
        let mut w = [16, 16, 16];
        backups(&mut w, &backup, false);
        assert_eq!(w, [16, 0, 0]);
        let mut w = [0, 16, 16];
        backups(&mut w, &backup, false);
        assert_eq!(w, [0, 16, 0], "the first backup only");
        let mut w = [0, 0, 16];
        backups(&mut w, &backup, false);
        assert_eq!(w, [0, 0, 16], "the first that can");
        let mut w = [0, 16, 16];
        backups(&mut w, &backup, true);
        assert_eq!(w, [0, 16, 16], "option allbackups");
    }

    #[test]
    fn least_connections_picks_the_least_loaded_and_rotates_ties() {
        let mut rr = RoundRobin::default();
        let w = [16, 16, 16];
        let picks: Vec<_> = (0..4)
            .map(|_| rr.least_connections(&w, &[0, 0, 0]).unwrap())
            .collect();
        assert_eq!(
            picks,
            [0, 1, 2, 0],
            "idle servers take turns, the first first"
        );
        assert_eq!(rr.least_connections(&w, &[3, 1, 2]), Some(1));
        assert_eq!(rr.least_connections(&[16, 0, 16], &[3, 0, 2]), Some(2));
        assert_eq!(
            rr.least_connections(&[16, 32], &[1, 2]),
            Some(1),
            "(2 + 1) / 32 < (1 + 1) / 16: weight counts"
        );
        assert_eq!(rr.least_connections(&[0, 0], &[0, 0]), None);
    }

    fn sequence(weights: &[u32], n: usize) -> Vec<usize> {
        let mut rr = RoundRobin::default();
        (0..n).map(|_| rr.pick(weights).unwrap()).collect()
    }

    #[test]
    fn equal_weights_take_turns() {
        assert_eq!(sequence(&[1, 1, 1], 6), [0, 1, 2, 0, 1, 2]);
    }

    #[test]
    fn weights_share_in_proportion_and_interleave() {
        let s = sequence(&[5, 1, 1], 7);
        assert_eq!(s, [0, 0, 1, 0, 2, 0, 0]);
        let s = sequence(&[3, 1], 400);
        assert_eq!(s.iter().filter(|&&i| i == 0).count(), 300);
    }

    #[test]
    fn ineligible_servers_are_skipped_and_none_means_none() {
        assert_eq!(sequence(&[1, 0, 1], 4), [0, 2, 0, 2]);
        assert_eq!(RoundRobin::default().pick(&[0, 0]), None);
        assert_eq!(RoundRobin::default().pick(&[]), None);
    }

    #[test]
    fn weights_can_change_between_picks() {
        let mut rr = RoundRobin::default();
        let mut counts = [0; 3];
        for _ in 0..30 {
            counts[rr.pick(&[1, 1, 1]).unwrap()] += 1;
        }
        for _ in 0..30 {
            counts[rr.pick(&[1, 0, 1]).unwrap()] += 1;
        }
        assert_eq!(counts, [25, 10, 25]);
        // A server that was away comes back into the rotation.
        let picks: Vec<_> = (0..3).map(|_| rr.pick(&[1, 1, 1]).unwrap()).collect();
        assert!(picks.contains(&1), "{picks:?}");
    }

    #[test]
    fn slowstart_ramps_the_weight() {
        let s = Some(Duration::from_secs(10));
        let at = |secs: u64| effective_weight(2, Some(Duration::from_secs(secs)), s);
        assert_eq!(effective_weight(2, None, s), 0);
        assert_eq!(effective_weight(2, Some(Duration::ZERO), s), 1);
        assert_eq!(at(5), 16);
        assert_eq!(at(10), 32);
        assert_eq!(at(100), 32);
        assert_eq!(effective_weight(2, Some(Duration::ZERO), None), 32);
        assert_eq!(effective_weight(0, Some(Duration::from_secs(1)), s), 0);
    }
}
