//! Receive work-queue element: 64, 128 or 256 bytes in the RQ ring in host memory ([`stride`]
//! of the QP context's `RQ_LOG_STRIDE`).
//!
//! Built by `post_recv` from an `ibv_recv_wr` (ibv_post_recv(3)); fetched by the responder when
//! a SEND arrives (IBTA Vol 1 9.7.4.1.3, 10.8.3). Integers are little-endian. A receive WQE
//! holds up to [`max_sge`]`(log)` scatter entries, at most [`MAX_SGE`].
use crate::field::{check_disjoint, Field};

/// Size of the smallest receive WQE in bytes (RQ_LOG_STRIDE 0).
pub const BYTES: usize = 64;
/// log2 of [`BYTES`].
pub const LOG_BYTES: usize = 6;
/// Largest RQ_LOG_STRIDE: receive WQEs of up to 256 bytes.
pub const MAX_LOG_STRIDE: usize = 2;
/// Scatter entries the largest receive WQE holds.
pub const MAX_SGE: usize = max_sge(MAX_LOG_STRIDE);

/// Size in bytes of a receive WQE of RQ_LOG_STRIDE `log`.
pub const fn stride(log: usize) -> usize {
    BYTES << log
}

/// Scatter entries a receive WQE of RQ_LOG_STRIDE `log` holds (3, 7, 15).
pub const fn max_sge(log: usize) -> usize {
    (stride(log) - 16) / 16
}

/// Smallest RQ_LOG_STRIDE whose receive WQE holds `sges` scatter entries.
pub const fn log_stride_for(sges: usize) -> usize {
    let mut log = 0;
    while max_sge(log) < sges {
        log += 1;
    }
    log
}

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
const _: () = assert!(MAX_SGE == 15 && log_stride_for(3) == 0 && log_stride_for(4) == 1 && log_stride_for(15) == 2);
