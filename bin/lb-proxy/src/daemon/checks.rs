//! The health-check task of each checked server.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use tokio::task::JoinSet;
use tokio::time::Instant;

use super::table::{lock, Backend, Server, Table};
use crate::health::{first_delay, Change};

/// Starts a check task for every checked server of `table` in `tasks` (which the caller
/// replaces on reload; the servers keep their counters).
pub fn start(table: &Table, tasks: &mut JoinSet<()>) {
    for backend in &table.backends {
        let checked: Vec<_> = backend.servers.iter().filter(|s| s.cfg.check).collect();
        let count = checked.len();
        for (index, server) in checked.into_iter().enumerate() {
            let backend = Arc::clone(backend);
            let server = Arc::clone(server);
            tasks.spawn(async move {
                tokio::time::sleep(first_delay(index, count, server.cfg.inter)).await;
                loop {
                    check_once(&backend, &server).await;
                    wait_next(&server).await;
                }
            });
        }
    }
}

/// The time to the next check, as the counter says; brought forward to `fastinter` from now
/// when passive health asks (haproxy wakes the check task then).
async fn wait_next(server: &Server) {
    let interval = || {
        let h = lock(&server.health);
        h.interval(server.cfg.inter, server.cfg.fastinter, server.cfg.downinter)
    };
    let mut deadline = Instant::now() + interval();
    loop {
        tokio::select! {
            () = tokio::time::sleep_until(deadline) => return,
            () = server.hurry.notified() => {
                deadline = deadline.min(Instant::now() + interval());
            }
        }
    }
}

async fn check_once(backend: &Backend, server: &Server) {
    let inter = server.cfg.inter;
    // haproxy: with `timeout check`, connecting may take min(timeout connect, inter) and
    // the answer `timeout check`; without it, `inter` bounds the whole check.
    let connect = match backend.check_timeout {
        Some(_) => backend.connect.min(inter),
        None => inter,
    };
    let result = (backend.probe)
        .run(server.cfg.address, connect, backend.check_timeout)
        .await;
    let change = {
        let mut health = lock(&server.health);
        if result.is_ok() {
            lock(&server.passive).check_passed();
        }
        health.record(result.is_ok())
    };
    let name = format!("{}/{}", backend.name, server.cfg.name);
    match &result {
        Ok(()) => lock(&server.last_check).clear(),
        Err(why) => {
            server.failed_checks.fetch_add(1, Ordering::Relaxed);
            *lock(&server.last_check) = why.to_string();
        }
    }
    match change {
        Change::Up => {
            server.set_up(true);
            tracing::warn!("server {name} is UP");
        }
        Change::Down => {
            server.set_up(false);
            let why = result.err().map(|e| e.to_string()).unwrap_or_default();
            tracing::warn!(
                "server {name} is DOWN: {why}; {} server(s) left UP",
                backend.up_count()
            );
        }
        Change::None => {}
    }
}
