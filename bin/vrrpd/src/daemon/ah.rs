//! keepalived's AH for one instance as it runs: the key, the anti-replay counter that numbers
//! what it sends and judges what it hears ([`SeqCounter`]), and the IP identification of its
//! datagrams. Carried over a reload, so that a master reloaded does not start again at 1 and
//! have its group take its adverts for replays.

use std::cell::Cell;

use ipi_core::vrrp::ah::{Key, Seal, SeqCounter};
use std::net::Ipv4Addr;

/// One AH instance's numbers. Cells: adverts are sent from a shared borrow of the daemon,
/// on its one thread.
#[derive(Debug)]
pub struct AhState {
    /// The HMAC key.
    pub key: Key,
    counter: Cell<SeqCounter>,
    ip_id: Cell<u16>,
}

impl AhState {
    /// A new instance's: nothing sent or heard yet.
    pub fn new(key: Key) -> Self {
        AhState {
            key,
            counter: Cell::new(SeqCounter::default()),
            ip_id: Cell::new(0),
        }
    }

    /// The numbers of the next advert (its addresses are the socket's to fill in): a new
    /// sequence number, and an identification that skips 0, which the kernel would replace.
    pub fn next(&self) -> Seal {
        let mut counter = self.counter.get();
        let seq = counter.send();
        self.counter.set(counter);
        let id = match self.ip_id.get().wrapping_add(1) {
            0 => 1,
            id => id,
        };
        self.ip_id.set(id);
        Seal {
            src: Ipv4Addr::UNSPECIFIED,
            dst: Ipv4Addr::UNSPECIFIED,
            id,
            seq,
            unicast: false,
        }
    }

    /// Whether an advert numbered `seq` (its ICV verified) is new; it becomes the last one.
    pub fn accept(&self, seq: u32) -> bool {
        let mut counter = self.counter.get();
        let new = counter.accept(seq);
        self.counter.set(counter);
        new
    }

    /// A master heard a lower-priority advert numbered `seq`: it goes on past it.
    pub fn past(&self, seq: u32) {
        let mut counter = self.counter.get();
        counter.past(seq);
        self.counter.set(counter);
    }

    /// The instance became master.
    pub fn on_master(&self) {
        let mut counter = self.counter.get();
        counter.on_master();
        self.counter.set(counter);
    }

    /// Takes `old`'s numbers (the same instance before a reload).
    pub fn carry(&self, old: &AhState) {
        self.counter.set(old.counter.get());
        self.ip_id.set(old.ip_id.get());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_go_on_over_a_reload_and_skip_a_zero_identification() {
        let old = AhState::new(Key::from_password("secret"));
        assert_eq!(old.next().seq, 1);
        assert!(old.accept(41));
        old.ip_id.set(u16::MAX);
        let new = AhState::new(Key::from_password("secret"));
        new.carry(&old);
        let seal = new.next();
        assert_eq!((seal.seq, seal.id), (42, 1));
        assert!(!new.accept(42), "its own number comes back as a replay");
    }
}
