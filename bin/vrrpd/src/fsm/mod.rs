//! The VRRP router as a sans-IO state machine: events and the current time in, actions out.
