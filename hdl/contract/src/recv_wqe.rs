//! Receive work-queue element: 64 bytes in the RQ ring in host memory, one DMA beat.
//!
//! Built by `post_recv` from an `ibv_recv_wr` (ibv_post_recv(3)); fetched by the responder when
//! a SEND arrives (IBTA Vol 1 9.7.4.1.3, 10.8.3). Integers are little-endian. A receive WQE
//! holds up to [`MAX_SGE`] scatter entries.
use crate::field::{check_disjoint, Field};

/// Size of a receive WQE in bytes.
pub const BYTES: usize = 64;
/// log2 of [`BYTES`].
pub const LOG_BYTES: usize = 6;
/// Scatter entries a receive WQE can hold.
pub const MAX_SGE: usize = 3;

/// Caller's work-request ID, returned unchanged in the receive CQE.
pub const WR_ID: Field = Field::at_byte(0, 64);
/// Number of valid scatter entries (0..=[`MAX_SGE`]); 0 accepts only zero-length messages.
pub const NUM_SGE: Field = Field::at_byte(8, 8);
/// Scatter entry 0: address (in the MR's `va` space).
pub const SGE0_ADDR: Field = Field::at_byte(16, 64);
/// Scatter entry 0: length in bytes.
pub const SGE0_LENGTH: Field = Field::at_byte(24, 32);
/// Scatter entry 0: lkey of a region granting LOCAL_WRITE.
pub const SGE0_LKEY: Field = Field::at_byte(28, 32);

/// Byte offset of scatter entry `i` (16 bytes each: address, length, lkey).
pub const fn sge_offset(i: usize) -> usize {
    16 + 16 * i
}

const _: () = assert!(check_disjoint(&[WR_ID, NUM_SGE, SGE0_ADDR, SGE0_LENGTH, SGE0_LKEY], 512));
