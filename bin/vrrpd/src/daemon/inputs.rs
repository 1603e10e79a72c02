//! What the event loop hears from the tasks beside it (socket readers, track script runners,
//! the process, file, interface and address watchers, VIP probes): one typed [`Input`] on one
//! channel, taken in the order it came.
//!
//! Datagrams are bounded: at most the queue's bound wait at any moment, and a flood beyond it
//! is dropped at the reader and counted ([`Queue::dropped`]) instead of growing the daemon's
//! memory. Every other input is few by nature (one per script run, link change, file change or
//! probe batch) and always delivered: a flood can neither drop one nor hold it back by more
//! than the datagrams queued ahead of it.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::mpsc;

use super::conflict::Batch;
use crate::net::Received;

/// One thing for the event loop.
#[derive(Debug)]
pub enum Input {
    /// What socket reader `socket` read (a datagram, or why it could not).
    Datagram {
        /// The sockets' generation the reader belongs to ([`Inputs::next_epoch`]).
        epoch: u64,
        /// The socket's index in the parts the reader was started for.
        socket: usize,
        /// The datagram, or the error the read gave.
        received: Result<Received, crate::net::Error>,
    },
    /// A track script's result, or a tracked process's (under [`super::processes::key`]).
    Script {
        /// The script (or process key).
        name: String,
        /// Whether it passed.
        ok: bool,
    },
    /// A tracked interface, or a source address's track ([`super::setup::source_track`]),
    /// went up or down, or is said again after a watcher started.
    Link {
        /// The interface or track.
        name: String,
        /// Up (and present).
        up: bool,
    },
    /// A `track_file`'s value.
    FileValue {
        /// The track file.
        name: String,
        /// Its value.
        value: i64,
    },
    /// What a batch of VIP probes found ([`super::conflict`]).
    Probed(Batch),
}

/// The datagrams waiting, and those dropped since the loop last asked.
#[derive(Debug)]
struct Datagrams {
    bound: usize,
    waiting: AtomicUsize,
    dropped: AtomicU64,
}

/// The sending side, cloned into every task. Each method says false once the loop is gone,
/// for the task to end.
#[derive(Debug, Clone)]
pub struct Inputs {
    tx: mpsc::UnboundedSender<Input>,
    datagrams: Arc<Datagrams>,
    epoch: u64,
}

/// The event loop's side.
#[derive(Debug)]
pub struct Queue {
    rx: mpsc::UnboundedReceiver<Input>,
    datagrams: Arc<Datagrams>,
}

/// A channel whose datagrams wait `bound` at most.
pub fn channel(bound: usize) -> (Inputs, Queue) {
    let (tx, rx) = mpsc::unbounded_channel();
    let datagrams = Arc::new(Datagrams {
        bound,
        waiting: AtomicUsize::new(0),
        dropped: AtomicU64::new(0),
    });
    let inputs = Inputs {
        tx,
        datagrams: Arc::clone(&datagrams),
        epoch: 0,
    };
    (inputs, Queue { rx, datagrams })
}

impl Inputs {
    /// What socket `socket` read. A datagram (or a per-datagram error) beyond the bound is
    /// dropped and counted; the error that ends a socket is always delivered, so the loop
    /// hears of it.
    pub fn datagram(&self, socket: usize, received: Result<Received, crate::net::Error>) -> bool {
        let ends = matches!(&received, Err(e) if !e.is_per_datagram());
        let d = &self.datagrams;
        if d.waiting.fetch_add(1, Ordering::Relaxed) >= d.bound && !ends {
            d.waiting.fetch_sub(1, Ordering::Relaxed);
            d.dropped.fetch_add(1, Ordering::Relaxed);
            return !self.tx.is_closed();
        }
        let input = Input::Datagram {
            epoch: self.epoch,
            socket,
            received,
        };
        self.tx.send(input).is_ok()
    }

    /// A track script's (or tracked process's) result.
    pub fn script(&self, name: String, ok: bool) -> bool {
        self.tx.send(Input::Script { name, ok }).is_ok()
    }

    /// A tracked interface's (or source address's) state.
    pub fn link(&self, name: String, up: bool) -> bool {
        self.tx.send(Input::Link { name, up }).is_ok()
    }

    /// A track file's value.
    pub fn file_value(&self, name: String, value: i64) -> bool {
        self.tx.send(Input::FileValue { name, value }).is_ok()
    }

    /// A probe batch's findings.
    pub fn probed(&self, batch: Batch) -> bool {
        self.tx.send(Input::Probed(batch)).is_ok()
    }

    /// The sockets were built anew: what the readers of the old ones read and the loop has not
    /// taken yet is numbered by them, and so dropped, as a lost advert is. Readers started
    /// from here on send in the new generation.
    pub fn next_epoch(&mut self) {
        self.epoch += 1;
    }

    /// Whether a datagram of generation `epoch` is of the sockets now.
    pub fn current(&self, epoch: u64) -> bool {
        epoch == self.epoch
    }
}

impl Queue {
    /// The next input, waiting for one.
    pub async fn recv(&mut self) -> Option<Input> {
        let input = self.rx.recv().await;
        self.took(input)
    }

    /// The next input, if one is there.
    pub fn try_recv(&mut self) -> Option<Input> {
        let input = self.rx.try_recv().ok();
        self.took(input)
    }

    /// The datagrams dropped for a full queue since the last call.
    pub fn dropped(&self) -> u64 {
        self.datagrams.dropped.swap(0, Ordering::Relaxed)
    }

    fn took(&self, input: Option<Input>) -> Option<Input> {
        if let Some(Input::Datagram { .. }) = &input {
            self.datagrams.waiting.fetch_sub(1, Ordering::Relaxed);
        }
        input
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn datagram() -> Result<Received, crate::net::Error> {
        Ok(Received {
            src: "192.0.2.1".parse().unwrap(),
            dst: "224.0.0.18".parse().unwrap(),
            hop_limit: 255,
            payload: vec![0x21],
            ah: None,
        })
    }

    fn drain(queue: &mut Queue) -> Vec<Input> {
        std::iter::from_fn(|| queue.try_recv()).collect()
    }

    #[test]
    fn datagrams_beyond_the_bound_are_dropped_and_counted_the_rest_always_comes() {
        let (inputs, mut queue) = channel(2);
        for _ in 0..5 {
            assert!(inputs.datagram(0, datagram()));
        }
        assert!(inputs.script("chk".into(), true));
        assert!(inputs.link("eth0".into(), false));
        assert!(inputs.file_value("f".into(), 7));
        let got = drain(&mut queue);
        let datagrams = got
            .iter()
            .filter(|i| matches!(i, Input::Datagram { .. }))
            .count();
        assert_eq!(datagrams, 2);
        assert_eq!(got.len(), 5, "{got:?}");
        assert_eq!(queue.dropped(), 3);
        assert_eq!(queue.dropped(), 0, "counted once");
        // Taken: room again.
        assert!(inputs.datagram(1, datagram()));
        assert!(matches!(
            queue.try_recv(),
            Some(Input::Datagram { socket: 1, .. })
        ));
    }

    #[test]
    fn inputs_come_in_the_order_sent() {
        let (inputs, mut queue) = channel(8);
        inputs.script("a".into(), false);
        inputs.datagram(3, datagram());
        inputs.link("b".into(), true);
        let got = drain(&mut queue);
        assert!(matches!(&got[0], Input::Script { name, ok: false } if name == "a"));
        assert!(matches!(&got[1], Input::Datagram { socket: 3, .. }));
        assert!(matches!(&got[2], Input::Link { name, up: true } if name == "b"));
    }

    #[test]
    fn a_socket_that_ends_is_heard_of_even_with_the_queue_full() {
        let (inputs, mut queue) = channel(1);
        inputs.datagram(0, datagram());
        let gone = Err(crate::net::Error::WatchClosed {
            interface: "eth0".into(),
        });
        assert!(inputs.datagram(0, gone));
        let got = drain(&mut queue);
        assert_eq!(got.len(), 2);
        assert!(matches!(
            &got[1],
            Input::Datagram {
                received: Err(_),
                ..
            }
        ));
        assert_eq!(queue.dropped(), 0);
    }

    #[test]
    fn datagrams_of_old_sockets_are_told_apart() {
        let (mut inputs, mut queue) = channel(8);
        let reader = inputs.clone();
        inputs.next_epoch();
        reader.datagram(0, datagram());
        inputs.clone().datagram(0, datagram());
        let epochs: Vec<u64> = drain(&mut queue)
            .iter()
            .filter_map(|i| match i {
                Input::Datagram { epoch, .. } => Some(*epoch),
                _ => None,
            })
            .collect();
        assert_eq!(epochs, [0, 1]);
        assert!(!inputs.current(0) && inputs.current(1));
    }

    #[test]
    fn a_gone_loop_ends_the_senders() {
        let (inputs, queue) = channel(1);
        drop(queue);
        assert!(!inputs.script("a".into(), true));
        assert!(!inputs.datagram(0, datagram()));
        assert!(!inputs.datagram(0, datagram()), "beyond the bound too");
    }
}
