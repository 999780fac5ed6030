//! How `rnic perf` lays out its messages: the byte pattern of every message, how a message
//! is split into SGEs, and how iterations are spread over QPs.

use super::ATOMIC_INIT;

/// What the client's buffer holds in the gaps between the pieces of a message posted as a
/// gather or scatter list ([`gather_pieces`]): bytes no message is supposed to carry, so a NIC
/// that sent them (WRITE, SEND) or wrote over them (READ) would fail the check.
pub const GAP_BYTE: u8 = 0xEE;

/// One SGE of a message posted as a gather list, or of a READ's scatter list
/// ([`gather_pieces`]): message bytes `msg_offset .. msg_offset + len`, stored (or, for a
/// READ, landing) at bytes `offset .. offset + len` of the message's slot in the client's
/// buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Piece {
    /// Offset of the piece in the message's slot of the source buffer.
    pub offset: u64,
    /// Offset of the piece's first byte in the message.
    pub msg_offset: u64,
    /// Length in bytes (0 only when the message is shorter than the number of SGEs).
    pub len: u64,
}

/// Odd gaps between consecutive pieces, cycled: pieces are never adjacent and start at every
/// alignment.
const GAPS: [u64; 4] = [1, 3, 5, 7];

/// Relative weights of the pieces, cycled, so consecutive pieces have unequal lengths.
fn piece_weight(i: u64) -> u64 {
    1 + i % 3
}

/// How a message of `size` bytes is split into `sges` SGEs (`--sges`), in message order, piece
/// `i` followed by a gap of 1, 3, 5, 7, 1, … bytes in the source slot, so the pieces are in
/// order but never adjacent and start at every alignment. When `size ≥ sges` each piece has
/// one byte plus a share of the other `size − sges` proportional to 1, 2, 3, 1, 2, 3, …
/// (rounded down; the last piece takes the remainder), so consecutive pieces have unequal
/// lengths. A message shorter than `sges` has `size` pieces of one byte spread evenly among
/// zero-length ones (which the NIC skips); the last piece is never empty. With `sges` = 1 it is
/// the whole message at offset 0, as without a gather list. `sges` must be 1 ..= [`MAX_SGES`]
/// (0 is taken as 1).
pub fn gather_pieces(size: u64, sges: u32) -> Vec<Piece> {
    let n = u64::from(sges.max(1));
    let long = size >= n;
    let weight = |i: u64| if long { piece_weight(i) } else { 1 };
    let base = u64::from(long);
    let extra = size - base * n;
    let total: u64 = (0..n).map(weight).sum();
    let mut cum = 0u64;
    let (mut offset, mut msg_offset) = (0u64, 0u64);
    let mut pieces = Vec::with_capacity(n as usize);
    for i in 0..n {
        let before = extra * cum / total;
        cum += weight(i);
        let len = base + extra * cum / total - before;
        pieces.push(Piece { offset, msg_offset, len });
        offset += len + GAPS[i as usize % GAPS.len()];
        msg_offset += len;
    }
    pieces
}

/// Bytes one message slot of the client's source buffer takes with `sges` SGEs: `size` with
/// one SGE, otherwise the pieces of [`gather_pieces`] and the gap after each.
pub fn slot_stride(size: u64, sges: u32) -> u64 {
    if sges <= 1 {
        return size;
    }
    let n = u64::from(sges);
    size + (0..n).map(|i| GAPS[i as usize % GAPS.len()]).sum::<u64>()
}

/// The initial value of QP `qp`'s target word in an atomic run: [`ATOMIC_INIT`] − qp × 2^28
/// (mod 2^64), so QP 0 starts at [`ATOMIC_INIT`] and the compare-and-swap chains of different
/// QPs (at most 2^27 operations each) never share a value.
pub fn atomic_init(qp: u32) -> u64 {
    ATOMIC_INIT.wrapping_sub(u64::from(qp) << 28)
}

/// Messages QP `qp` of `qps` carries when `iters` are spread round-robin (iteration `j` goes
/// to QP `j mod qps`, as its message `j / qps`).
pub fn qp_iters(iters: u64, qps: u32, qp: u32) -> u64 {
    let (qps, qp) = (u64::from(qps.max(1)), u64::from(qp));
    if iters > qp {
        (iters - qp).div_ceil(qps)
    } else {
        0
    }
}

/// The byte pattern of message `iter`: 8-byte chunks of a hash of `(iter, chunk index)`, so
/// every message and every offset differ.
pub fn pattern_byte(iter: u64, offset: u64) -> u8 {
    (mix((iter << 32) ^ (offset / 8)) >> (8 * (offset % 8))) as u8
}

/// Fills `out` with message `iter`'s pattern.
pub fn fill_pattern(iter: u64, out: &mut [u8]) {
    for (c, chunk) in out.chunks_mut(8).enumerate() {
        let v = mix((iter << 32) ^ c as u64).to_le_bytes();
        chunk.copy_from_slice(&v[..chunk.len()]);
    }
}

fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perf::{ATOMIC_BYTES, MAX_QPS, MAX_SGES, MAX_TOTAL_BYTES};

    #[test]
    fn pattern_is_consistent_and_distinct() {
        let mut a = vec![0u8; 37];
        fill_pattern(5, &mut a);
        for (k, &b) in a.iter().enumerate() {
            assert_eq!(b, pattern_byte(5, k as u64));
        }
        let mut b = vec![0u8; 37];
        fill_pattern(6, &mut b);
        assert_ne!(a, b);
    }

    #[test]
    fn gather_pieces_are_in_order_unequal_and_never_adjacent() {
        for size in [1u64, 2, 7, 15, 16, 17, 64, 999, 5001, 65536, 1 << 31] {
            for sges in 1..=MAX_SGES {
                let p = gather_pieces(size, sges);
                assert_eq!(p.len(), sges as usize);
                assert_eq!(p.iter().map(|x| x.len).sum::<u64>(), size, "{size} {sges}");
                assert!(p.last().unwrap().len > 0, "the last piece is never empty");
                let stride = slot_stride(size, sges);
                let end = p.last().map(|x| x.offset + x.len).unwrap();
                assert!(end <= stride, "{size} {sges}");
                if sges == 1 {
                    assert_eq!((p[0], stride), (Piece { offset: 0, msg_offset: 0, len: size }, size));
                    continue;
                }
                assert!(end < stride, "a gap before the next slot");
                for w in p.windows(2) {
                    assert_eq!(w[1].msg_offset, w[0].msg_offset + w[0].len, "in message order");
                    let gap = w[1].offset - (w[0].offset + w[0].len);
                    assert!(gap % 2 == 1, "odd gap {gap}");
                    if size >= u64::from(sges) * 8 {
                        assert_ne!(w[0].len, w[1].len, "{size} {sges}: {p:?}");
                    }
                }
                if size >= u64::from(sges) {
                    assert!(p.iter().all(|x| x.len > 0), "{size} {sges}: {p:?}");
                } else {
                    assert_eq!(p.iter().filter(|x| x.len > 0).count() as u64, size, "{size} {sges}: {p:?}");
                }
            }
        }
    }

    #[test]
    fn iterations_spread_round_robin() {
        assert_eq!((0..4).map(|q| qp_iters(10, 4, q)).collect::<Vec<_>>(), [3, 3, 2, 2]);
        assert_eq!(qp_iters(100, 1, 0), 100);
        assert_eq!(qp_iters(3, 4, 3), 0);
        for (iters, qps) in [(1u64, 1u32), (17, 16), (1000, 7)] {
            assert_eq!((0..qps).map(|q| qp_iters(iters, qps, q)).sum::<u64>(), iters);
        }
        // Distinct starting words whose compare-and-swap chains never meet.
        assert_eq!(atomic_init(0), ATOMIC_INIT);
        let inits: std::collections::BTreeSet<u64> = (0..MAX_QPS).map(atomic_init).collect();
        assert_eq!(inits.len(), MAX_QPS as usize);
        assert!((1..MAX_QPS).all(|q| atomic_init(q - 1).wrapping_sub(atomic_init(q)) > MAX_TOTAL_BYTES / ATOMIC_BYTES));
    }
}
