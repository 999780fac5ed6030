//! Send work-queue element (WQE): 64 bytes in the SQ ring in host memory, one DMA beat.
//!
//! Built by `post_send` from an `ibv_send_wr` (ibv_post_send(3)); fetched by the NIC on a
//! doorbell. Integers are little-endian.
use crate::field::{check_disjoint, Field};

/// Size of a WQE in bytes.
pub const BYTES: usize = 64;
/// log2 of [`BYTES`].
pub const LOG_BYTES: usize = 6;

/// Caller's work-request ID, returned unchanged in the CQE.
pub const WR_ID: Field = Field::at_byte(0, 64);
/// ibv_wr_opcode ([`crate::verbs::wr_opcode`]).
pub const OPCODE: Field = Field::at_byte(8, 8);
/// ibv_send_flags ([`crate::verbs::send_flags`]).
pub const SEND_FLAGS: Field = Field::at_byte(9, 8);
/// Number of valid SGEs.
pub const NUM_SGE: Field = Field::at_byte(10, 8);
/// Immediate data (network order as delivered in ImmDt).
pub const IMM_DATA: Field = Field::at_byte(12, 32);
/// RDMA: remote virtual address (RETH.VA).
pub const REMOTE_ADDR: Field = Field::at_byte(16, 64);
/// RDMA: remote key (RETH.R_Key).
pub const RKEY: Field = Field::at_byte(24, 32);
/// SGE 0: local virtual address.
pub const SGE0_ADDR: Field = Field::at_byte(32, 64);
/// SGE 0: length in bytes.
pub const SGE0_LENGTH: Field = Field::at_byte(40, 32);
/// SGE 0: local key.
pub const SGE0_LKEY: Field = Field::at_byte(44, 32);
/// Atomics: `compare_add` of `ibv_send_wr.wr.atomic` — the value compared by
/// IBV_WR_ATOMIC_CMP_AND_SWP, or added by IBV_WR_ATOMIC_FETCH_AND_ADD (AtomicETH Compare Data /
/// Add Data, IBTA Vol 1 9.3.4).
pub const COMPARE_ADD: Field = Field::at_byte(48, 64);
/// Atomics: `swap` of `ibv_send_wr.wr.atomic`, written by IBV_WR_ATOMIC_CMP_AND_SWP when the
/// compare matched (AtomicETH Swap Data).
pub const SWAP: Field = Field::at_byte(56, 64);

const _: () = assert!(check_disjoint(
    &[WR_ID, OPCODE, SEND_FLAGS, NUM_SGE, IMM_DATA, REMOTE_ADDR, RKEY, SGE0_ADDR, SGE0_LENGTH, SGE0_LKEY,
      COMPARE_ADD, SWAP],
    BYTES * 8
));
