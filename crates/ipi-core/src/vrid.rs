//! VRRP router ids derived from the cluster name, exactly as OpenShift's baremetal-runtimecfg
//! derives them, so that our vrrpd and a keepalived rendered by OpenShift land in the same group.
//!
//! The id is a Fletcher-8 checksum (both sums modulo 15, in 8-bit arithmetic) of
//! `<cluster>-api`, `<cluster>-ingress` or `<cluster>-dns`, plus one so that it is never 0
//! (RFC 5798 5.2.3: VRID 0 is not valid). Two services whose ids collide would be one VRRP
//! group, so the Ingress id moves up by one when it equals the API id.

/// Fletcher-8 as OpenShift computes it: 4-bit sums modulo 15, the 8-bit additions wrapping.
pub fn fletcher8(input: &str) -> u8 {
    let (mut sum_a, mut sum_b) = (0u8, 0u8);
    for byte in input.bytes() {
        sum_a = sum_a.wrapping_add(byte) % 15;
        sum_b = sum_b.wrapping_add(sum_a) % 15;
    }
    (sum_b << 4) | sum_a
}

/// The VRRP router ids of one cluster's virtual IPs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Vrids {
    /// The API VIP's group.
    pub api: u8,
    /// The Ingress VIP's group; never equal to `api`.
    pub ingress: u8,
    /// The DNS VIP's group, for the clusters that have one.
    pub dns: u8,
}

impl Vrids {
    /// The ids for the cluster called `cluster_name` (`metadata.name`, not the domain).
    pub fn for_cluster(cluster_name: &str) -> Self {
        // Fletcher-8 here is at most 0xEE, so adding one cannot overflow.
        let id = |service: &str| fletcher8(&format!("{cluster_name}-{service}")) + 1;
        let api = id("api");
        let mut ingress = id("ingress");
        if ingress == api {
            ingress += 1;
        }
        Self {
            api,
            ingress,
            dns: id("dns"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_answers() {
        // managed-keepalived-master.conf: virtual_router_id 124 (API) and 75 (Ingress).
        let managed = Vrids::for_cluster("managed");
        assert_eq!((managed.api, managed.ingress), (124, 75));
        let ostest = Vrids::for_cluster("ostest");
        assert_eq!((ostest.api, ostest.ingress), (14, 93));
    }

    #[test]
    fn ingress_never_equals_api_and_ids_are_never_zero() {
        for len in 1..6usize {
            for seed in 0..400u32 {
                let name: String = (0..len)
                    .map(|i| char::from(b'a' + ((seed >> (i * 2)) as u8 + i as u8) % 26))
                    .collect();
                let v = Vrids::for_cluster(&name);
                assert_ne!(v.api, v.ingress, "{name}");
                assert!(v.api > 0 && v.ingress > 0 && v.dns > 0, "{name}");
            }
        }
    }

    #[test]
    fn sums_wrap_in_eight_bits() {
        // Go's uint8 additions (baremetal-runtimecfg's FletcherChecksum8) wrap before the
        // modulo. "h" leaves sum_a at 104 % 15 = 14 and sum_b at 14; U+10FFFF is the bytes
        // F4 8F BF BF, and 14 + 0xF4 = 258 wraps to 2 (not 258 % 15 = 3). By hand, wrapping:
        //   F4: a = 2,  b = (14 + 2) % 15 = 1
        //   8F: a = (2 + 143) % 15 = 10,  b = 11
        //   BF: a = (10 + 191) % 15 = 6,  b = 17 % 15 = 2
        //   BF: a = (6 + 191) % 15 = 2,   b = 4          -> 0x42
        // Without the wrap the same steps end at a = 3, b = 8: 0x83.
        assert_eq!(fletcher8("h\u{10FFFF}"), 0x42);
    }
}
