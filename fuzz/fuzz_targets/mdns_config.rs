//! Fuzz mdns-publish's reader of mdns-publisher configs (YAML or JSON, mdns-publish.conf(5)):
//! arbitrary text gives a config or an error that names the file, never a panic; a config that
//! reads gives a publication whose records either go on the wire or are refused with a name.

#![no_main]

use libfuzzer_sys::fuzz_target;
use mdns_publish::config::Config;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let config = match Config::parse(text, "fuzz.yaml") {
        Ok(c) => c,
        Err(e) => {
            assert!(e.to_string().contains("fuzz.yaml"), "{e}");
            return;
        }
    };
    let addresses = ["192.0.2.10".parse().expect("an address"), "2001:db8::10".parse().expect("an address")];
    let publication = config.publication(&addresses, "master-0.example.com");
    if let Ok(records) = publication.records() {
        for o in records {
            let _ = hickory_proto::serialize::binary::BinEncodable::to_bytes(&o.record);
        }
    }
});
