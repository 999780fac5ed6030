//! The rnic hardware/software contract, defined once.
//!
//! Everything the NIC RTL (`rnic-hdl`) and the host driver (`rnic`) must agree on lives here:
//! the BAR0 register map ([`regs`]), the layouts of the records exchanged through host memory
//! ([`wqe`], [`cqe`]) and through the context-command registers ([`qp_context`], [`mr_entry`],
//! [`cq_context`], [`srq_context`]), and the numeric opcode/status tables ([`verbs`], [`bth`]).
//!
//! A record is a little-endian bit vector: bit `8*k + i` is bit `i` of byte `k` in host memory,
//! which is also how a 512-bit AXI beat carries bytes (byte 0 in `tdata[7:0]`). A [`Field`] names
//! a bit range of such a record; the HDL extracts it with `get_bits::<W>(lsb)` and the driver
//! packs it with [`Field::put`]. No crate dependencies, so both sides can use it cheaply.
#![forbid(unsafe_code)]

pub mod bth;
pub mod cq_context;
pub mod cqe;
pub mod doc;
pub mod field;
pub mod mr_entry;
pub mod qp_context;
pub mod recv_wqe;
pub mod regs;
pub mod srq_context;
pub mod verbs;
pub mod wqe;

pub use field::Field;

/// Core clock of the NIC model and of the target board, in MHz.
pub const CORE_CLOCK_MHZ: u64 = 250;
/// Width of the DMA and MAC datapaths, in bits (one beat).
pub const DATAPATH_BITS: usize = 512;
/// Width of the DMA and MAC datapaths, in bytes (one beat).
pub const DATAPATH_BYTES: usize = DATAPATH_BITS / 8;
/// log2 of the number of QP contexts in the NIC's tables.
pub const LOG_NUM_QPS: usize = 6;
/// log2 of the number of memory-region key table entries.
pub const LOG_NUM_MRS: usize = 6;
/// log2 of the number of CQ contexts.
pub const LOG_NUM_CQS: usize = 6;
/// log2 of the number of WQEs a QP may have sent and not yet acknowledged by the responder
/// (the size of the per-QP in-flight table used by the completer): the requester's send
/// window. 64 WQEs cover a round trip of a 64-byte WRITE stream on one QP (about 1.3 µs of
/// wire and NIC at 20 M messages/s needs 26 in flight).
pub const LOG_MAX_INFLIGHT_WQES: usize = 6;
/// log2 of the WQEs a QP may have in flight when it starts a SEND or SEND_WITH_IMM (32): a
/// SEND waits until fewer are unacknowledged. The responder spends a visit of about 20 cycles
/// on every SEND (its receive WQE, scatter-entry check and receive CQE) and falls behind the
/// wire for SENDs shorter than about 1 KiB, so the full 64-WQE window of 64- to 512-byte SENDs
/// from 8 QPs overran its 64 KiB receive buffer on a perfect wire (thousands of
/// `drop_rx_overflow`); 32 covers the round trip of 1 KiB SENDs on one QP (about 500 cycles
/// over a 500 ns wire: 23 SENDs of 22.4 cycles), which 16 did not (65 Gb/s of 92.6). RDMA
/// WRITEs and READs use the whole window.
pub const LOG_MAX_INFLIGHT_SENDS: usize = 5;
/// The largest message, in bytes (`ibv_device_attr.max_msg_sz`; IBTA Vol 1 allows up to 2^31):
/// a send WQE whose SGEs add up to more completes with IBV_WC_LOC_LEN_ERR.
pub const MAX_MSG_SZ: u32 = 1 << 31;
/// UDP destination port of RoCEv2 (IANA, Annex A17.2.1).
pub const ROCEV2_UDP_PORT: u16 = 4791;
