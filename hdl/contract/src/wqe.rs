//! Send work-queue element (WQE): 64 bytes in the SQ ring in host memory (one DMA beat),
//! followed, in QPs built for it, by more 64-byte slots holding SGEs 1.. or inline data.
//!
//! Built by `post_send` from an `ibv_send_wr` (ibv_post_send(3)); fetched by the NIC on a
//! doorbell. Integers are little-endian. Every WQE of a QP takes [`stride`]`(log)` bytes, `log`
//! being the QP context's `SQ_LOG_STRIDE`: the first slot as laid out below, then SGE `i ≥ 1`
//! at [`sge_offset`]`(i)` (16 bytes each, laid out like SGE 0), or, with `IBV_SEND_INLINE`,
//! [`INLINE_LENGTH`] bytes of data at [`INLINE_DATA`] (the caller's buffer is free once
//! `post_send` returns: the NIC sends up to 256 inline bytes from the WQE beats it fetched and
//! reads longer inline data from the ring).
use crate::field::{check_disjoint, Field};

/// Size of a WQE in bytes.
pub const BYTES: usize = 64;
/// log2 of [`BYTES`].
pub const LOG_BYTES: usize = 6;

/// Largest SQ_LOG_STRIDE: WQEs of up to 512 bytes.
pub const MAX_LOG_STRIDE: usize = 3;
/// SGEs a WQE can carry: the NIC's per-WQE gather list holds this many, and so does each of
/// its READ lists, over which an RDMA READ's responses are scattered.
pub const MAX_SGE: usize = 16;
/// Byte offset of inline data (the second slot).
pub const INLINE_DATA: usize = 64;
/// Inline bytes a WQE of the largest stride holds.
pub const MAX_INLINE: usize = (BYTES << MAX_LOG_STRIDE) - INLINE_DATA;

/// Size in bytes of a WQE of SQ_LOG_STRIDE `log`.
pub const fn stride(log: usize) -> usize {
    BYTES << log
}

/// Byte offset of SGE `i` (0 ≤ i < [`MAX_SGE`]): SGE 0 in the first slot, the others from the
/// second slot on, 16 bytes each (address 8, length 4, lkey 4).
pub const fn sge_offset(i: usize) -> usize {
    if i == 0 {
        32
    } else {
        48 + 16 * i
    }
}

/// Smallest SQ_LOG_STRIDE whose WQE holds `sges` SGEs and `inline` bytes of inline data.
pub const fn log_stride_for(sges: usize, inline: usize) -> usize {
    let need_sge = if sges <= 1 { BYTES } else { sge_offset(sges - 1) + 16 };
    let need_inline = if inline == 0 { BYTES } else { INLINE_DATA + inline };
    let need = if need_sge > need_inline { need_sge } else { need_inline };
    let mut log = 0;
    while stride(log) < need {
        log += 1;
    }
    log
}

/// Caller's work-request ID, returned unchanged in the CQE.
pub const WR_ID: Field = Field::at_byte(0, 64);
/// ibv_wr_opcode ([`crate::verbs::wr_opcode`]).
pub const OPCODE: Field = Field::at_byte(8, 8);
/// ibv_send_flags ([`crate::verbs::send_flags`]).
pub const SEND_FLAGS: Field = Field::at_byte(9, 8);
/// Number of valid SGEs (0..=[`MAX_SGE`]).
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
/// With `IBV_SEND_INLINE`: the inline data's length in bytes (SGE 0's length field; SGE 0's
/// address and key are unused and `NUM_SGE` is ignored).
pub const INLINE_LENGTH: Field = SGE0_LENGTH;
/// SGE 0: local key.
pub const SGE0_LKEY: Field = Field::at_byte(44, 32);
/// Atomics: `compare_add` of `ibv_send_wr.wr.atomic` — the value compared by
/// IBV_WR_ATOMIC_CMP_AND_SWP, or added by IBV_WR_ATOMIC_FETCH_AND_ADD (AtomicETH Compare Data /
/// Add Data, IBTA Vol 1 9.3.4).
pub const COMPARE_ADD: Field = Field::at_byte(48, 64);
/// Atomics: `swap` of `ibv_send_wr.wr.atomic`, written by IBV_WR_ATOMIC_CMP_AND_SWP when the
/// compare matched (AtomicETH Swap Data).
pub const SWAP: Field = Field::at_byte(56, 64);

/// UD SEND: the address handle and remote QP of `ibv_send_wr.wr.ud` (ibv_post_send(3);
/// IBTA Vol 1 9.8, Annex A17), in the bytes an RDMA or atomic WQE uses for its remote
/// address, key and operands. The destination QPN (DETH's peer, BTH.DestQP).
pub const UD_REMOTE_QPN: Field = Field::at_byte(16, 24);
/// UD SEND: the remote Q_Key, sent in the DETH; with bit 31 set the QP's own
/// [`crate::qp_context::QKEY`] is sent instead (IBTA Vol 1 10.2.5).
pub const UD_REMOTE_QKEY: Field = Field::at_byte(20, 32);
/// UD SEND: destination IPv4 address (first octet in bits 31:24), from the address handle's
/// GID (an IPv4-mapped IPv6 address for RoCEv2).
pub const UD_DEST_IP: Field = Field::at_byte(24, 32);
/// UD SEND: destination MAC address (byte 0 of the address in bits 7:0), resolved from the
/// address handle by the driver.
pub const UD_DEST_MAC: Field = Field::at_byte(48, 48);

const _: () = assert!(check_disjoint(
    &[
        WR_ID,
        OPCODE,
        SEND_FLAGS,
        NUM_SGE,
        IMM_DATA,
        UD_REMOTE_QPN,
        UD_REMOTE_QKEY,
        UD_DEST_IP,
        SGE0_ADDR,
        SGE0_LENGTH,
        SGE0_LKEY,
        UD_DEST_MAC,
    ],
    BYTES * 8
));

const _: () = assert!(check_disjoint(
    &[
        WR_ID,
        OPCODE,
        SEND_FLAGS,
        NUM_SGE,
        IMM_DATA,
        REMOTE_ADDR,
        RKEY,
        SGE0_ADDR,
        SGE0_LENGTH,
        SGE0_LKEY,
        COMPARE_ADD,
        SWAP
    ],
    BYTES * 8
));

const _: () = assert!(sge_offset(MAX_SGE - 1) + 16 <= stride(MAX_LOG_STRIDE));
const _: () = assert!(log_stride_for(1, 0) == 0 && log_stride_for(2, 0) == 1 && log_stride_for(16, 0) == 3);
const _: () = assert!(log_stride_for(1, 64) == 1 && log_stride_for(1, 256) == 3 && log_stride_for(1, MAX_INLINE) == 3);
