#!/bin/sh
# keepalived / vrrpd track script chk_ocp_lb on a control-plane node: this node's API load
# balancer answers /haproxy_ready and its VIP:6443 redirect is in place (the flag file lb-proxy
# keeps while the redirect is on). On the bootstrap node (chk_ocp), which runs no load balancer:
# its own API server is ready. OpenShift's two /etc/keepalived/chk_ocp_script.sh on
# `lb-proxy check` instead of curl; lb-proxy is found on PATH. The role is IPI_ROLE, from the
# environment (ipi-vrrpd.service's EnvironmentFile) or else /etc/ipi-net/node.env.
if [ -z "${IPI_ROLE:-}" ] && [ -r /etc/ipi-net/node.env ]; then
    # shellcheck source=/dev/null
    . /etc/ipi-net/node.env
fi
if [ "${IPI_ROLE:-}" = bootstrap ]; then
    exec lb-proxy check --timeout 1500ms https://localhost:6443/readyz
fi
lb-proxy check --timeout 1500ms http://localhost:9444/haproxy_ready && [ -e /var/run/keepalived/iptables-rule-exists ]
