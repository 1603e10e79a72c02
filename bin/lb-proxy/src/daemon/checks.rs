//! The health-check task of each checked server.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use tokio::task::JoinSet;
use tokio::time::Instant;

use super::table::{lock, Backend, Server, Table};
use crate::health::{first_delay, spread, Change};

/// Starts a check task for every checked server of `table` in `tasks` (which the caller
/// replaces on reload; the servers keep their counters).
pub fn start(table: &Table, tasks: &mut JoinSet<()>) {
    let percent = table.config.global.spread_checks;
    for backend in &table.backends {
        let checked: Vec<_> = backend.servers.iter().filter(|s| s.cfg.check).collect();
        let count = checked.len();
        for (index, server) in checked.into_iter().enumerate() {
            let backend = Arc::clone(backend);
            let server = Arc::clone(server);
            tasks.spawn(async move {
                tokio::time::sleep(first_delay(index, count, server.cfg.inter)).await;
                let mut random = Random::seeded(index);
                loop {
                    check_once(&backend, &server).await;
                    wait_next(&server, percent, &mut random).await;
                }
            });
        }
    }
}

/// The time to the next check, as the counter says; brought forward to `fastinter` from now
/// when passive health asks (haproxy wakes the check task then).
async fn wait_next(server: &Server, percent: u32, random: &mut Random) {
    let r = random.next();
    let interval = || {
        let h = lock(&server.health);
        let i = h.interval(server.cfg.inter, server.cfg.fastinter, server.cfg.downinter);
        spread(i, percent, r)
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

/// A small xorshift generator for `spread-checks`: the spread only has to differ from one
/// check to the next and one server to another, not to be unpredictable.
struct Random(u32);

impl Random {
    fn seeded(index: usize) -> Random {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let mixed = nanos ^ u32::try_from(index).unwrap_or(0).wrapping_mul(0x9e37_79b9);
        Random(mixed | 1)
    }

    fn next(&mut self) -> u32 {
        // Marsaglia's xorshift32 (13, 17, 5).
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 17;
        self.0 ^= self.0 << 5;
        self.0
    }
}

async fn check_once(backend: &Backend, server: &Server) {
    // A name without an address yet (or any more) is not checked, as haproxy's servers in
    // maintenance.
    let Some(address) = server.address() else {
        return;
    };
    let inter = server.cfg.inter;
    // haproxy: with `timeout check`, connecting may take min(timeout connect, inter) and
    // the answer `timeout check`; without it, `inter` bounds the whole check.
    let connect = match backend.check_timeout {
        Some(_) => backend.connect.min(inter),
        None => inter,
    };
    let result = (backend.probe)
        .run(address, connect, backend.check_timeout)
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
