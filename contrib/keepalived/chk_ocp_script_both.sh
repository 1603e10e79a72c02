#!/bin/sh
# keepalived / vrrpd track script chk_ocp_both: the load balancer check above, or else this
# node's own API server is ready, so a node with a working API can still take the VIP when every
# load balancer is down. OpenShift's /etc/keepalived/chk_ocp_script_both.sh on `lb-proxy check`
# instead of curl; lb-proxy is found on PATH. Each check gets 0.9 s: vrrpd gives the script 1.9.
{ lb-proxy check --timeout 900ms http://localhost:9444/haproxy_ready && [ -e /var/run/keepalived/iptables-rule-exists ]; } ||
    lb-proxy check --timeout 900ms https://localhost:6443/readyz
