//! Completion-queue entry (CQE): 32 bytes in the CQ ring in host memory, written by the NIC.
//!
//! Mirrors `struct ibv_wc` (ibv_poll_cq(3)). On an error status only [`WR_ID`], [`STATUS`] and
//! [`QP_NUM`] are meaningful.
use crate::field::{check_disjoint, Field};

/// Size of a CQE in bytes.
pub const BYTES: usize = 32;
/// log2 of [`BYTES`].
pub const LOG_BYTES: usize = 5;

/// wr_id of the completed work request.
pub const WR_ID: Field = Field::at_byte(0, 64);
/// Bytes transferred.
pub const BYTE_LEN: Field = Field::at_byte(8, 32);
/// Immediate data, valid when `WC_FLAGS` has `IBV_WC_WITH_IMM`.
pub const IMM_DATA: Field = Field::at_byte(12, 32);
/// Local QP number.
pub const QP_NUM: Field = Field::at_byte(16, 24);
/// ibv_wc_opcode ([`crate::verbs::wc_opcode`]).
pub const OPCODE: Field = Field::at_byte(19, 8);
/// ibv_wc_status ([`crate::verbs::wc_status`]).
pub const STATUS: Field = Field::at_byte(20, 8);
/// ibv_wc_flags.
pub const WC_FLAGS: Field = Field::at_byte(21, 8);
/// UD receive completions: the sender's QPN (`ibv_wc.src_qp`, the DETH's source QP); 0 on
/// every other CQE.
pub const SRC_QP: Field = Field::at_byte(24, 24);
/// Owner bit: equals `!(n >> log_size) & 1` for the n-th CQE written, so a fresh (zeroed) ring
/// reads as empty and each lap flips the meaning.
pub const OWNER: Field = Field::at_byte(31, 1);

const _: () =
    assert!(check_disjoint(&[WR_ID, BYTE_LEN, IMM_DATA, QP_NUM, OPCODE, STATUS, WC_FLAGS, SRC_QP, OWNER], BYTES * 8));
