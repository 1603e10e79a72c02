//! A stand-in for the OpenShift router (an ingress controller) on a lab host: HTTP on port
//! 1936 answering `/healthz` and `/healthz/ready` (what keepalived's chk_ingress asks with
//! curl on localhost) with 200, or 503 when told it is not ready. It is the
//! [`ApiServer`](crate::api::ApiServer)'s server on the router's port, listening on every
//! address of the host (IPv4 and IPv6, so `localhost` reaches it either way); stopping it
//! closes the port as a killed router would.

use std::io;
use std::net::{Ipv6Addr, SocketAddr};

use crate::api::ApiServer;
use crate::Host;

/// The router's stats and health port.
pub const PORT: u16 = 1936;

/// One stand-in router.
#[derive(Debug)]
pub struct Router {
    server: ApiServer,
}

impl Router {
    /// Starts on `[::]:1936` inside `host`'s network namespace.
    pub fn start_in(host: &Host) -> io::Result<Router> {
        let address = SocketAddr::from((Ipv6Addr::UNSPECIFIED, PORT));
        let name = format!("router on {}", host.name());
        Ok(Router {
            server: ApiServer::start_in(host, address, &name)?,
        })
    }

    /// Stops: the port is closed, so the health checks fail.
    pub fn stop(&mut self) {
        self.server.stop();
    }

    /// Starts again on the same port after [`stop`](Self::stop).
    pub fn start(&mut self) -> io::Result<()> {
        self.server.restart()
    }
}
