//! VRRP's derived timers in integer centiseconds (RFC 3768 6.1, RFC 5798 6.1).
//!
//! Both functions take the same arguments for both versions so that callers need no `match`:
//! for VRRPv2 `advert_int_cs` is the Advertisement_Interval (whole seconds times 100); for
//! VRRPv3 it is the Master_Adver_Interval, the interval learned from the current master's
//! advertisements (RFC 5798 6.4.2), not necessarily our own.
//!
//! Rounding: the divisions by 256 are integer divisions, rounding towards zero, so a skew is
//! at most one centisecond shorter than the RFC's exact value. That keeps the arithmetic exact
//! and deterministic (no floats, docs/ARCHITECTURE.md), matches FRR's vrrpd, which also keeps integer
//! centiseconds and divides the same way, and keeps the ordering that matters: a higher priority never
//! gets a longer skew. keepalived computes in microseconds, so its timers can be up to 10 ms
//! longer than ours for the same configuration: far below the jitter of any real network.

use super::Version;

/// Centiseconds in a second: VRRPv2's Skew_Time is a fraction of one second.
const CS_PER_SECOND: u32 = 100;

/// Skew_Time in centiseconds: how much longer a backup of this `priority` waits than the
/// highest possible one before declaring the master down, so that the best backup wins.
///
/// - v2 (RFC 3768 6.1): `(256 - Priority) / 256` seconds; `advert_int_cs` is not used.
/// - v3 (RFC 5798 6.1): `((256 - Priority) * Master_Adver_Interval) / 256`.
///
/// Rounded down to a whole centisecond (see the module documentation).
pub fn skew_time(version: Version, priority: u8, advert_int_cs: u16) -> u32 {
    // 256 - 0 at most, times at most 65535: below 2^24, no overflow.
    let weight = 256 - u32::from(priority);
    match version {
        Version::V2 => weight * CS_PER_SECOND / 256,
        Version::V3 => weight * u32::from(advert_int_cs) / 256,
    }
}

/// Master_Down_Interval in centiseconds: how long a backup waits without hearing an
/// advertisement before it takes over.
///
/// - v2 (RFC 3768 6.1): `3 * Advertisement_Interval + Skew_Time`.
/// - v3 (RFC 5798 6.1): `3 * Master_Adver_Interval + Skew_Time`.
pub fn master_down_interval(version: Version, priority: u8, advert_int_cs: u16) -> u32 {
    3 * u32::from(advert_int_cs) + skew_time(version, priority, advert_int_cs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v2_known_values() {
        // Priority 100: 156/256 s = 60.9375 cs, rounded down.
        assert_eq!(skew_time(Version::V2, 100, 100), 60);
        assert_eq!(master_down_interval(Version::V2, 100, 100), 360);
        // The interval does not enter v2's skew.
        assert_eq!(skew_time(Version::V2, 100, 1000), 60);
        assert_eq!(master_down_interval(Version::V2, 100, 1000), 3060);
        // Owner: 1/256 s rounds to 0. Priority 1: 255/256 s = 99.6 cs -> 99.
        assert_eq!(skew_time(Version::V2, 255, 100), 0);
        assert_eq!(skew_time(Version::V2, 1, 100), 99);
        // keepalived-2.2.7-v2-pass: priority 120, 1 s: 136/256 s = 53.125 cs.
        assert_eq!(master_down_interval(Version::V2, 120, 100), 353);
    }

    #[test]
    fn v3_known_values() {
        // Priority 100, 1 s: same as v2 when the interval is one second.
        assert_eq!(skew_time(Version::V3, 100, 100), 60);
        assert_eq!(master_down_interval(Version::V3, 100, 100), 360);
        // Priority 20, 50 cs: 236 * 50 / 256 = 46.09 -> 46.
        assert_eq!(skew_time(Version::V3, 20, 50), 46);
        assert_eq!(master_down_interval(Version::V3, 20, 50), 196);
        // Priority 40, 100 cs: 216 * 100 / 256 = 84.375 -> 84.
        assert_eq!(master_down_interval(Version::V3, 40, 100), 384);
        // Priority 255 at the smallest interval: 1 * 1 / 256 -> 0.
        assert_eq!(skew_time(Version::V3, 255, 1), 0);
        // The skew scales with the interval in v3.
        assert_eq!(skew_time(Version::V3, 100, 1000), 609);
    }

    #[test]
    fn extremes_do_not_overflow() {
        for version in [Version::V2, Version::V3] {
            assert!(master_down_interval(version, 0, u16::MAX) <= 4 * u32::from(u16::MAX));
            assert_eq!(master_down_interval(version, 255, 0), 0);
        }
        // Priority 0 (a resigning master's value): a full interval of skew.
        assert_eq!(skew_time(Version::V3, 0, 4095), 4095);
        assert_eq!(skew_time(Version::V2, 0, 100), 100);
    }

    #[test]
    fn higher_priority_never_waits_longer() {
        for version in [Version::V2, Version::V3] {
            for interval in [1u16, 50, 100, 255, 1000, 4095] {
                for p in 1..=254u8 {
                    assert!(
                        master_down_interval(version, p + 1, interval)
                            <= master_down_interval(version, p, interval)
                    );
                }
            }
        }
    }
}
