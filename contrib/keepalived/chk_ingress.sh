#!/bin/sh
# keepalived / vrrpd track script chk_ingress: the router on this node answers its health check.
# OpenShift runs `curl -o /dev/null -Lfs http://localhost:1936/healthz/ready`; this is the same on
# `lb-proxy check` (found on PATH).
exec lb-proxy check --timeout 800ms http://localhost:1936/healthz/ready
