//! VRRP advertisements (RFC 3768 v2, RFC 5798 v3): the wire codec and the protocol's timer
//! arithmetic.
