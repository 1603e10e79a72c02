#!/bin/sh
# Seed fuzz/corpus/vrrp_parse/ from the fixture captures: for every frame, the IP datagram
# (what parse_datagram takes) and the bare VRRP message (what Packet::new_checked takes); and
# fuzz/corpus/acd_frame/ with every whole Ethernet frame (what acd::frame::parse takes).
# tshark does the dissecting; needs tshark and jq. The corpus is not committed (.gitignore).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
fixtures="$here/../tests/fixtures/vrrp"
out="$here/corpus/vrrp_parse"
frames="$here/corpus/acd_frame"
mkdir -p "$out" "$frames"
for pcap in "$fixtures"/*.pcap; do
    base=$(basename "$pcap" .pcap)
    # One line per frame: the IPv4 or IPv6 header bytes, a tab, the VRRP bytes (hex).
    tshark -r "$pcap" -T json -x 2>/dev/null |
        jq -r '.[]._source.layers | [(.ip_raw // .ipv6_raw // [""])[0], (.vrrp_raw // [""])[0]] | @tsv' |
        awk -v out="$out" -v base="$base" -F '\t' '
            {
                n++
                if ($1 != "") printf "%s%s", $1, $2 > (out "/" base "-" n "-ip.hex")
                if ($2 != "") printf "%s", $2 > (out "/" base "-" n "-vrrp.hex")
            }'
    tshark -r "$pcap" -T json -x 2>/dev/null |
        jq -r '.[]._source.layers | (.frame_raw // [""])[0]' |
        awk -v out="$frames" -v base="$base" '$1 != "" { n++; printf "%s", $1 > (out "/" base "-" n ".hex") }'
done
# Hex to binary, dropping duplicates (many frames are identical).
for hex in "$out"/*.hex "$frames"/*.hex; do
    [ -e "$hex" ] || continue
    bin="${hex%.hex}"
    xxd -r -p "$hex" > "$bin"
    rm "$hex"
done
for dir in "$out" "$frames"; do
    (cd "$dir" && for f in *; do
        sum=$(sha1sum "$f" | cut -c1-40)
        [ "$f" = "$sum" ] || mv -f "$f" "$sum"
    done)
    echo "$(ls "$dir" | wc -l) seeds in $dir"
done
# Seed fuzz/corpus/haproxy_cfg/ with the real haproxy.cfg files of
# tests/fixtures/haproxy-corpus (lb-proxy's reader: sections, checks, resolvers).
hout="$here/corpus/haproxy_cfg"
mkdir -p "$hout"
for cfg in "$here"/../tests/fixtures/haproxy-corpus/*.cfg; do
    cp "$cfg" "$hout/$(sha1sum "$cfg" | cut -c1-40)"
done
echo "$(ls "$hout" | wc -l) seeds in $hout"
# Seed fuzz/corpus/cni_config/ with the whereabouts NAD of tests/fixtures/seeds, and the same
# with each way of naming its store: whereabouts' etcd keys (TLS, credentials), our etcd+https
# store with them, node_local, and the keys refused by name.
cout="$here/corpus/cni_config"
mkdir -p "$cout"
nad="$here/../tests/fixtures/seeds/nad-internalapi-whereabouts.json"
for extra in \
    '{}' \
    '{"node_local":true}' \
    '{"datastore":"etcd","etcd_host":"https://192.0.2.10:2379","etcd_ca_cert_file":"/etc/ca.pem","etcd_cert_file":"/etc/c.pem","etcd_key_file":"/etc/c.key","etcd_username":"ipam","etcd_password":"x"}' \
    '{"etcd_host":"192.0.2.10:2379,192.0.2.11:2379","etcd_ca_cert_file":"/etc/ca.pem","etcd_cert_file":"/etc/c.pem","etcd_key_file":"/etc/c.key"}' \
    '{"etcd_host":"http://192.0.2.10:2379"}' \
    '{"store":"etcd+https://192.0.2.10:2379/p","etcd_ca_cert_file":"/etc/ca.pem"}' \
    '{"datastore":"kubernetes","kubernetes":{"kubeconfig":"/etc/k"}}' \
    '{"configuration_path":"/etc/cni/net.d/whereabouts.d/whereabouts.conf"}'; do
    seed=$(jq -c --argjson extra "$extra" '.ipam += $extra' "$nad")
    printf '%s' "$seed" > "$cout/$(printf '%s' "$seed" | sha1sum | cut -c1-40)"
done
echo "$(ls "$cout" | wc -l) seeds in $cout"
