//! SimBricks' shared-memory message queues: a ring of fixed-size slots in the pool both sides
//! map, each slot owned by the producer or the consumer as its `own_type` byte says.
//!
//! The producer fills a slot it owns, then sets `own_type` to `type | OWN_CONSUMER` with release
//! ordering; the consumer reads `own_type` with acquire ordering, reads the message, and hands the
//! slot back by clearing the owner bit with release ordering. Both sides walk the ring in order.
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use memmap2::MmapMut;

use super::proto::{HEADER_BYTES, OFF_LEN, OFF_OWN_TYPE, OFF_PORT, OFF_TIMESTAMP, OWN_CONSUMER, TYPE_MASK};

/// One direction's ring inside the shared pool.
pub(crate) struct Queue {
    /// Keeps the mapping alive while `base` points into it.
    _pool: Arc<MmapMut>,
    base: *mut u8,
    entry_bytes: usize,
    entries: usize,
    pos: usize,
}

// SAFETY: `base` points into the mapping `_pool` keeps alive; the queue is the only object of
// this process touching its slots (one `Queue` per direction per port), and every access to a
// slot shared with the peer goes through the owner byte's atomic handshake.
unsafe impl Send for Queue {}

/// A message read from an incoming queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct InMessage {
    /// Message type (`own_type` without the owner bit).
    pub kind: u8,
    /// Timestamp in ps.
    pub timestamp: u64,
    /// Packet bytes (packet messages; empty otherwise), or `Err(len)` when the length field does
    /// not fit the slot.
    pub data: Result<Vec<u8>, usize>,
}

impl Queue {
    /// The ring at `offset` in `pool`, `entries` slots of `entry_bytes`.
    ///
    /// Fails (with a message) when the ring does not lie inside the pool, or a slot is smaller
    /// than a header or not a multiple of 8 bytes.
    pub(crate) fn new(pool: Arc<MmapMut>, offset: u64, entry_bytes: u64, entries: u64) -> Result<Self, String> {
        let len = pool.len() as u64;
        let bytes = entry_bytes.checked_mul(entries).and_then(|b| b.checked_add(offset));
        if bytes.is_none_or(|end| end > len) || entries == 0 {
            return Err(format!(
                "queue of {entries} entries of {entry_bytes} bytes at offset {offset} does not fit the {len}-byte pool"
            ));
        }
        if (entry_bytes as usize) < HEADER_BYTES || !entry_bytes.is_multiple_of(8) {
            return Err(format!(
                "queue entries of {entry_bytes} bytes (need a multiple of 8, at least {HEADER_BYTES})"
            ));
        }
        // SAFETY: `offset + entry_bytes * entries <= pool.len()` was checked above.
        let base = unsafe { pool.as_ptr().cast_mut().add(offset as usize) };
        Ok(Self { _pool: pool, base, entry_bytes: entry_bytes as usize, entries: entries as usize, pos: 0 })
    }

    /// Largest packet a slot holds, in bytes.
    pub(crate) fn max_packet(&self) -> usize {
        (self.entry_bytes - HEADER_BYTES).min(usize::from(u16::MAX))
    }

    /// Slots in the ring.
    pub(crate) fn entries(&self) -> usize {
        self.entries
    }

    /// Bytes per slot.
    pub(crate) fn entry_bytes(&self) -> usize {
        self.entry_bytes
    }

    fn slot(&self, i: usize) -> *mut u8 {
        // SAFETY: `i < entries`, so the slot lies inside the ring (checked in `new`).
        unsafe { self.base.add(i * self.entry_bytes) }
    }

    fn own(&self, slot: *mut u8) -> &AtomicU8 {
        // SAFETY: the byte lies inside the slot, and `AtomicU8` has the layout of `u8`; the peer
        // accesses it only atomically too (C11 `atomic_load_explicit`/`atomic_store_explicit`).
        unsafe { &*slot.add(OFF_OWN_TYPE).cast::<AtomicU8>() }
    }

    /// Reads the next message if the peer has handed it over, and gives the slot back at once.
    pub(crate) fn poll(&mut self) -> Option<InMessage> {
        let slot = self.slot(self.pos);
        let own = self.own(slot).load(Ordering::Acquire);
        if own & OWN_CONSUMER == 0 {
            return None;
        }
        let kind = own & TYPE_MASK;
        // SAFETY: the consumer owns the slot (acquire above orders the producer's writes before
        // these reads); all offsets lie inside the slot.
        let (timestamp, len) = unsafe {
            let ts = std::ptr::read_unaligned(slot.add(OFF_TIMESTAMP).cast::<[u8; 8]>());
            let len = std::ptr::read_unaligned(slot.add(OFF_LEN).cast::<[u8; 2]>());
            (u64::from_le_bytes(ts), usize::from(u16::from_le_bytes(len)))
        };
        let data = if kind == super::proto::MSG_NET_PACKET {
            if len > self.entry_bytes - HEADER_BYTES {
                Err(len)
            } else {
                let mut v = vec![0u8; len];
                // SAFETY: `HEADER_BYTES + len <= entry_bytes` was checked just above.
                unsafe { std::ptr::copy_nonoverlapping(slot.add(HEADER_BYTES), v.as_mut_ptr(), len) };
                Ok(v)
            }
        } else {
            Ok(Vec::new())
        };
        self.own(slot).store(kind, Ordering::Release);
        self.pos = (self.pos + 1) % self.entries;
        Some(InMessage { kind, timestamp, data })
    }

    /// Writes a message into the next slot if the producer owns it; returns false when the ring
    /// is full (the peer has not consumed that slot yet). `data` must fit ([`max_packet`]).
    pub(crate) fn try_send(&mut self, kind: u8, timestamp: u64, data: &[u8]) -> bool {
        debug_assert!(data.len() <= self.max_packet());
        let slot = self.slot(self.pos);
        if self.own(slot).load(Ordering::Acquire) & OWN_CONSUMER != 0 {
            return false;
        }
        // SAFETY: the producer owns the slot; the header fields and `data` (checked by the
        // caller against `max_packet`) lie inside it.
        unsafe {
            std::ptr::write_bytes(slot, 0, OFF_TIMESTAMP);
            std::ptr::write_unaligned(slot.add(OFF_LEN).cast::<[u8; 2]>(), (data.len() as u16).to_le_bytes());
            *slot.add(OFF_PORT) = 0;
            std::ptr::write_unaligned(slot.add(OFF_TIMESTAMP).cast::<[u8; 8]>(), timestamp.to_le_bytes());
            std::ptr::copy_nonoverlapping(data.as_ptr(), slot.add(HEADER_BYTES), data.len());
        }
        self.own(slot).store(kind | OWN_CONSUMER, Ordering::Release);
        self.pos = (self.pos + 1) % self.entries;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::simbricks::proto::{MSG_NET_PACKET, MSG_SYNC};

    #[test]
    fn a_ring_passes_messages_in_order_and_reports_full() {
        let pool = Arc::new(MmapMut::map_anon(4 * 256).unwrap());
        let mut tx = Queue::new(Arc::clone(&pool), 0, 256, 4).unwrap();
        let mut rx = Queue::new(Arc::clone(&pool), 0, 256, 4).unwrap();
        assert_eq!(tx.max_packet(), 192);
        assert!(rx.poll().is_none());
        assert!(tx.try_send(MSG_SYNC, 10, &[]));
        for k in 0..3u8 {
            assert!(tx.try_send(MSG_NET_PACKET, 20 + u64::from(k), &[k; 100]));
        }
        assert!(!tx.try_send(MSG_SYNC, 99, &[]), "all four slots are the consumer's");
        assert_eq!(rx.poll(), Some(InMessage { kind: MSG_SYNC, timestamp: 10, data: Ok(vec![]) }));
        assert!(tx.try_send(MSG_SYNC, 30, &[]), "the consumed slot is free again");
        for k in 0..3u8 {
            let m = rx.poll().unwrap();
            assert_eq!((m.kind, m.timestamp, m.data), (MSG_NET_PACKET, 20 + u64::from(k), Ok(vec![k; 100])));
        }
        assert_eq!(rx.poll().unwrap().timestamp, 30);
        assert!(rx.poll().is_none());
    }

    #[test]
    fn a_length_past_the_slot_is_reported_not_read() {
        let pool = Arc::new(MmapMut::map_anon(2 * 128).unwrap());
        let mut rx = Queue::new(Arc::clone(&pool), 0, 128, 2).unwrap();
        // A hand-made slot claiming 1000 bytes.
        let p = pool.as_ptr().cast_mut();
        // SAFETY: offsets inside the 256-byte pool; nothing else uses it.
        unsafe {
            std::ptr::write_unaligned(p.cast::<[u8; 2]>(), 1000u16.to_le_bytes());
            *p.add(OFF_OWN_TYPE) = MSG_NET_PACKET | OWN_CONSUMER;
        }
        assert_eq!(rx.poll().unwrap().data, Err(1000));
        assert!(Queue::new(pool, 0, 128, 3).is_err(), "a ring past the pool's end");
    }
}
