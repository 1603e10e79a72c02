//! Fuzz what ipam's etcd store reads back from etcd, where any client with access may have
//! written anything: the same bytes as a record's value (JSON), a record's key, a key under
//! the pools, and an owner's index value or a next hint. Each reads back or is refused, never
//! a panic, and what reads back is what the store writes: a record re-encoded decodes to
//! itself, an address key is the one `address_key` writes, a pool's segment is its escape.

#![no_main]

use ipi_store::store::etcd_keys::{address_key, address_of, address_value, index_value, pool_of};
use ipi_store::store::{escape, Record};
use libfuzzer_sys::fuzz_target;

const POOLS: &str = "/ipi-net/ipam/pools/";
const IPS: &str = "/ipi-net/ipam/pools/p/ips/";

fuzz_target!(|data: &[u8]| {
    if let Ok(record) = Record::decode(data) {
        assert_eq!(Record::decode(&record.encode()).as_ref(), Ok(&record));
    }
    if let Some(ip) = address_of(IPS, data) {
        assert_eq!(format!("{IPS}{}", address_key(ip)).as_bytes(), data);
    }
    if let Some((pool, segment)) = pool_of(POOLS, data) {
        assert_eq!(escape(&pool), segment);
    }
    if let Ok(ip) = address_value(data) {
        assert_eq!(address_value(index_value(ip).as_bytes()), Ok(ip));
    }
});
