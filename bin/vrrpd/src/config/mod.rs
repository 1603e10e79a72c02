//! keepalived.conf: the configuration vrrpd reads.
