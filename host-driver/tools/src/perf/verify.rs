//! How `rnic perf` checks a run: every byte of every QP's buffer against the patterns sent,
//! and every original an atomic returned.

use serde::Serialize;

use super::{fill_pattern, gather_pieces, slot_stride, AtomicType, ATOMIC_BYTES, ATOMIC_INIT, GAP_BYTE};

/// The first byte of a checked buffer (the server's for WRITE and SEND, the client's for READ
/// and atomics) that differs from what was expected.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Mismatch {
    /// The QP whose buffer holds it (0 ..= qps − 1; 0 with one QP).
    pub qp: u32,
    /// Offset in that QP's buffer, bytes (message `offset / size` of that QP; for READ with
    /// `sges` > 1, message `offset / slot_stride(size, sges)`, see [`check_qp_slots`]).
    pub offset: u64,
    /// Iteration (over all QPs) whose message (or message slot) covers it.
    pub iteration: u64,
    /// The byte sent ([`GAP_BYTE`] for a byte between a READ's pieces, which no message
    /// carries).
    pub expected: u8,
    /// The byte found.
    pub found: u8,
    /// Bytes that differ in total.
    pub count: u64,
}

/// Checks an atomic run of `iters` operations of type `t`: `client` holds the original each
/// operation returned (8 bytes, little-endian, per operation) and `target` the server's u64
/// afterwards. Fetch-and-add: the originals must be exactly the set {[`ATOMIC_INIT`] + k ×
/// [`ATOMIC_ADD`] : k < iters} (each sum seen once: no operation lost or executed twice) and
/// the target [`ATOMIC_INIT`] + iters × [`ATOMIC_ADD`], mod 2^64. Compare-and-swap (chained):
/// operation `i` must have returned [`ATOMIC_INIT`] + i and the target must be
/// [`ATOMIC_INIT`] + iters. Returns the first wrong byte of the originals against the in-order
/// expectation (`None` if they are right) and a message if the target is wrong.
pub fn check_atomics(t: AtomicType, client: &[u8], target: u64, iters: u64) -> (Option<Mismatch>, Option<String>) {
    check_atomics_from(t, ATOMIC_INIT, client, target, iters)
}

/// [`check_atomics`] for a target that started at `init` (QP `q`'s word starts at
/// [`atomic_init`]`(q)`). The mismatch's `iteration` is the operation's index in `client`.
pub fn check_atomics_from(
    t: AtomicType,
    init: u64,
    client: &[u8],
    target: u64,
    iters: u64,
) -> (Option<Mismatch>, Option<String>) {
    let got: Vec<u64> = client.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8]))).collect();
    let want: Vec<u64> = (0..iters).map(|i| t.original_from(init, i)).collect();
    let originals_ok = match t {
        AtomicType::FetchAndAdd => {
            let (mut g, mut w) = (got.clone(), want.clone());
            g.sort_unstable();
            w.sort_unstable();
            g == w
        }
        AtomicType::CmpAndSwap => got == want,
    };
    let mismatch = if originals_ok {
        None
    } else {
        let image: Vec<u8> = want.iter().flat_map(|v| v.to_le_bytes()).collect();
        let mut first: Option<Mismatch> = None;
        let mut count = 0u64;
        for (k, (&g, &e)) in client.iter().zip(&image).enumerate() {
            if g != e {
                count += 1;
                first.get_or_insert(Mismatch {
                    qp: 0,
                    offset: k as u64,
                    iteration: k as u64 / ATOMIC_BYTES,
                    expected: e,
                    found: g,
                    count: 0,
                });
            }
        }
        first.map(|m| Mismatch { count, ..m })
    };
    let final_want = t.original_from(init, iters);
    let wrong = (target != final_want).then(|| {
        format!(
            "the target holds {target:#018x} after {iters} {} operations, expected {final_want:#018x} (an operation was lost or executed twice)",
            t.name()
        )
    });
    (mismatch, wrong)
}

/// Compares the buffer of a one-QP run (message `i` at `i × size`) with the patterns sent; the
/// first difference and the count.
pub fn check_buffer(buf: &[u8], size: u64) -> Option<Mismatch> {
    check_qp_buffer(buf, size, 0, 1)
}

/// Counts the bytes of `got` (at `offset` in the buffer checked) that differ from `expect`,
/// keeping the first as a [`Mismatch`] of QP `qp`'s iteration `iter`.
fn tally(got: &[u8], expect: &[u8], qp: u32, offset: u64, iter: u64, first: &mut Option<Mismatch>, count: &mut u64) {
    if got == &expect[..got.len()] {
        return;
    }
    for (b, (&g, &e)) in got.iter().zip(expect).enumerate() {
        if g != e {
            *count += 1;
            first.get_or_insert(Mismatch {
                qp,
                offset: offset + b as u64,
                iteration: iter,
                expected: e,
                found: g,
                count: 0,
            });
        }
    }
}

/// Compares QP `qp`'s buffer of a run over `qps` QPs with the patterns sent: its message `k`,
/// at `k × size`, is iteration `qp + k × qps` and must hold that iteration's pattern. A message
/// of another QP (another iteration) found there is a mismatch. Returns the first difference
/// (offset in this buffer) and the count.
pub fn check_qp_buffer(buf: &[u8], size: u64, qp: u32, qps: u32) -> Option<Mismatch> {
    let mut first: Option<Mismatch> = None;
    let mut count = 0u64;
    let mut expect = vec![0u8; size as usize];
    for (k, got) in buf.chunks(size as usize).enumerate() {
        let iter = u64::from(qp) + k as u64 * u64::from(qps);
        fill_pattern(iter, &mut expect);
        tally(got, &expect, qp, k as u64 * size, iter, &mut first, &mut count);
    }
    first.map(|m| Mismatch { count, ..m })
}

/// Compares QP `qp`'s client buffer of a READ run over `qps` QPs, posted with `sges` SGEs per
/// READ, with the patterns read: its message `k` is iteration `qp + k × qps` and occupies slot
/// `k`, bytes `k × s ..` with `s` = [`slot_stride`]`(size, sges)`; each piece of
/// [`gather_pieces`]`(size, sges)` of that slot must hold its part of the iteration's pattern
/// and every other byte of the slot (the gaps between and after the pieces) must still be
/// [`GAP_BYTE`]. So a byte that landed in the wrong piece, a piece written out of order, a gap
/// written over or a message of another QP is a mismatch. With `sges` = 1 the slots are the
/// messages and this is [`check_qp_buffer`]. Returns the first difference (offset in this
/// buffer) and the count.
pub fn check_qp_slots(buf: &[u8], size: u64, sges: u32, qp: u32, qps: u32) -> Option<Mismatch> {
    if sges <= 1 {
        return check_qp_buffer(buf, size, qp, qps);
    }
    let stride = slot_stride(size, sges) as usize;
    let pieces = gather_pieces(size, sges);
    let mut msg = vec![0u8; size as usize];
    let mut expect = vec![GAP_BYTE; stride];
    let mut first: Option<Mismatch> = None;
    let mut count = 0u64;
    for (k, got) in buf.chunks(stride).enumerate() {
        let iter = u64::from(qp) + k as u64 * u64::from(qps);
        fill_pattern(iter, &mut msg);
        for p in &pieces {
            expect[p.offset as usize..][..p.len as usize]
                .copy_from_slice(&msg[p.msg_offset as usize..][..p.len as usize]);
        }
        tally(got, &expect, qp, (k * stride) as u64, iter, &mut first, &mut count);
    }
    first.map(|m| Mismatch { count, ..m })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perf::ATOMIC_ADD;

    #[test]
    fn check_buffer_finds_the_first_wrong_byte() {
        let size = 10u64;
        let mut buf = vec![0u8; 30];
        for i in 0..3 {
            fill_pattern(i, &mut buf[i as usize * 10..][..10]);
        }
        assert_eq!(check_buffer(&buf, size), None);
        buf[17] ^= 1;
        buf[25] ^= 2;
        let m = check_buffer(&buf, size).unwrap();
        assert_eq!((m.offset, m.iteration, m.count), (17, 1, 2));
        assert_eq!(m.found, m.expected ^ 1);
    }

    #[test]
    fn check_atomics_wants_every_original_once_and_the_final_value() {
        let n = 20u64;
        for t in [AtomicType::FetchAndAdd, AtomicType::CmpAndSwap] {
            let mut buf: Vec<u8> = (0..n).flat_map(|i| t.original(i).to_le_bytes()).collect();
            assert_eq!(check_atomics(t, &buf, t.original(n), n), (None, None), "{t:?}");
            assert!(check_atomics(t, &buf, t.original(n + 1), n).1.unwrap().contains("lost or executed twice"));
            // Operation 3 seeing operation 2's original: one executed twice.
            let two = t.original(2).to_le_bytes();
            buf[24..32].copy_from_slice(&two);
            let m = check_atomics(t, &buf, t.original(n), n).0.unwrap();
            assert_eq!(m.iteration, 3, "{t:?}");
        }
        // Fetch-and-add accepts the set in any order; compare-and-swap does not.
        let mut swapped: Vec<u64> = (0..n).map(|i| AtomicType::FetchAndAdd.original(i)).collect();
        swapped.swap(4, 5);
        let b: Vec<u8> = swapped.iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(check_atomics(AtomicType::FetchAndAdd, &b, AtomicType::FetchAndAdd.original(n), n).0, None);
        assert_eq!(AtomicType::FetchAndAdd.original(16), ATOMIC_INIT.wrapping_add(16 * ATOMIC_ADD), "wraps");
        assert!(ATOMIC_INIT.checked_add(16 * ATOMIC_ADD).is_none(), "the sum passes 2^64 within 16 operations");
        let c: Vec<u8> = (0..n)
            .map(|i| {
                AtomicType::CmpAndSwap.original(if i == 4 {
                    5
                } else if i == 5 {
                    4
                } else {
                    i
                })
            })
            .flat_map(u64::to_le_bytes)
            .collect();
        assert!(check_atomics(AtomicType::CmpAndSwap, &c, AtomicType::CmpAndSwap.original(n), n).0.is_some());
    }

    /// The image a correct READ run with `sges` leaves in QP `qp`'s buffer.
    fn read_image(size: u64, sges: u32, qp: u32, qps: u32, msgs: u64) -> Vec<u8> {
        let stride = slot_stride(size, sges) as usize;
        let mut buf = vec![GAP_BYTE; stride * msgs as usize];
        let mut msg = vec![0u8; size as usize];
        for k in 0..msgs as usize {
            fill_pattern(u64::from(qp) + k as u64 * u64::from(qps), &mut msg);
            for p in gather_pieces(size, sges) {
                buf[k * stride + p.offset as usize..][..p.len as usize]
                    .copy_from_slice(&msg[p.msg_offset as usize..][..p.len as usize]);
            }
        }
        buf
    }

    #[test]
    fn check_qp_slots_wants_each_piece_in_place_and_the_gaps_untouched() {
        // 100 bytes in 4 SGEs: pieces of 14, 29, 42 and 15 bytes (1 + a share of 96 by
        // 1:2:3:1), gaps of 1, 3, 5, 7; slots of 116 bytes. QP 1 of 2 carries iterations 1, 3, 5.
        let (size, sges) = (100u64, 4u32);
        let p = gather_pieces(size, sges);
        assert_eq!(p.iter().map(|x| x.len).collect::<Vec<_>>(), [14, 29, 42, 15]);
        let stride = slot_stride(size, sges) as usize;
        assert_eq!(stride, 116);
        let good = read_image(size, sges, 1, 2, 3);
        assert_eq!(check_qp_slots(&good, size, sges, 1, 2), None);
        assert!(check_qp_slots(&good, size, sges, 0, 2).is_some(), "QP 0's iterations are 0, 2, 4");
        // A byte of piece 2 of message 1 wrong.
        let mut b = good.clone();
        let at = stride + p[2].offset as usize + 3;
        b[at] ^= 0x10;
        let m = check_qp_slots(&b, size, sges, 1, 2).unwrap();
        assert_eq!((m.offset, m.iteration, m.count, m.found), (at as u64, 3, 1, good[at] ^ 0x10));
        // The gap after piece 1 of message 2 written over: expected GAP_BYTE.
        let mut b = good.clone();
        let gap = 2 * stride + (p[1].offset + p[1].len) as usize;
        b[gap] = 0;
        let m = check_qp_slots(&b, size, sges, 1, 2).unwrap();
        assert_eq!((m.offset, m.iteration, m.expected, m.found), (gap as u64, 5, GAP_BYTE, 0));
        // The trailing gap of the last slot counts too.
        let mut b = good.clone();
        *b.last_mut().unwrap() = 1;
        assert_eq!(check_qp_slots(&b, size, sges, 1, 2).unwrap().offset, b.len() as u64 - 1);
        // The response written contiguously from piece 0 (no scatter): caught.
        let mut b = good.clone();
        let mut msg = vec![0u8; size as usize];
        fill_pattern(1, &mut msg);
        b[..size as usize].copy_from_slice(&msg);
        assert!(check_qp_slots(&b, size, sges, 1, 2).unwrap().count > 0);
        // With one SGE it is check_qp_buffer.
        let one = read_image(64, 1, 0, 1, 3);
        assert_eq!(one.len(), 192);
        assert_eq!(check_qp_slots(&one, 64, 1, 0, 1), None);
        let mut b = one.clone();
        b[70] ^= 1;
        assert_eq!(check_qp_slots(&b, 64, 1, 0, 1), check_buffer(&b, 64));
        // A message shorter than its SGEs: 16 SGEs over 7 bytes, zero-length pieces among them.
        let tiny = read_image(7, 16, 0, 1, 2);
        assert_eq!(check_qp_slots(&tiny, 7, 16, 0, 1), None);
    }

    #[test]
    fn check_qp_buffer_catches_a_message_of_another_qp() {
        // QP 1 of 3 carries iterations 1, 4, 7.
        let size = 16u64;
        let mut buf = vec![0u8; 48];
        for (k, j) in [1u64, 4, 7].into_iter().enumerate() {
            fill_pattern(j, &mut buf[k * 16..][..16]);
        }
        assert_eq!(check_qp_buffer(&buf, size, 1, 3), None);
        assert!(check_qp_buffer(&buf, size, 0, 3).is_some(), "QP 0's iterations are 0, 3, 6");
        // QP 2's iteration 5 where QP 1's iteration 4 belongs.
        fill_pattern(5, &mut buf[16..32]);
        let m = check_qp_buffer(&buf, size, 1, 3).unwrap();
        assert_eq!((m.qp, m.iteration, m.offset / size), (1, 4, 1));
    }
}
