//! Fuzz what `vrrpd watch` does with a captured frame: arbitrary bytes as a frame of every link
//! type a capture may hold (Ethernet with VLAN tags, Linux cooked v1 and v2, raw IP, Frame
//! Relay) give the IP datagram inside or a reason, and the datagram an advert or a rejection
//! with a reason, never a panic; an advert that decodes prints as text and as JSON.

#![no_main]

use libfuzzer_sys::fuzz_target;
use pcap_file::DataLink;

fuzz_target!(|data: &[u8]| {
    for link in [DataLink::ETHERNET, DataLink::LINUX_SLL, DataLink::LINUX_SLL2, DataLink::RAW, DataLink::FRELAY] {
        let Ok(ip) = ipi_core::capture::ip_payload(link, data) else { continue };
        match vrrpd::watch::decode_ip(ip) {
            Ok(advert) => {
                let _ = format!("{advert:?}");
            }
            Err(rejected) => assert!(!rejected.reason.is_empty()),
        }
    }
});
