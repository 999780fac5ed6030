//! QP context record, written through [`crate::regs::CMD`] with [`crate::regs::cmd_op::WRITE_QP`].
//!
//! The driver keeps the full context of each QP and rewrites it on every `modify_qp`; the NIC
//! keeps its dynamic transport state (next send PSN, expected receive PSN, MSN, SQ indices)
//! across rewrites unless an `INIT_*` flag asks to (re)load it, which is how `IBV_QP_SQ_PSN` and
//! `IBV_QP_RQ_PSN` take effect (ibv_modify_qp(3)). A transition to RESET clears it.
use crate::field::{check_disjoint, Field};

/// ibv_qp_state value (`IBV_QPS_RESET` = 0, INIT = 1, RTR = 2, RTS = 3, ERR = 6), see
/// [`crate::verbs::qp_state`]. `IBV_QPS_SQD` is written as RTS with [`SQ_DRAIN`] set: in SQD
/// the responder and the completer work as in RTS (IBTA Vol 1 10.3.1), only the requester
/// stops starting work requests.
pub const STATE: Field = Field::at_bit(0, 3);
/// 1: the send queue drains (`IBV_QPS_SQD`, IBTA Vol 1 10.3.1 "SQ Drain"; with [`STATE`] =
/// RTS). The requester finishes the work requests it had taken from the SQ (those up to the
/// last SQ doorbell it served before this context was written), resends them as often as
/// the transport needs, and starts no other one; work requests posted meanwhile wait for the
/// move back to RTS (this bit clear) and the SQ doorbell the driver rings after it (the NIC
/// keeps the index of a doorbell rung in SQD, but serves it only after the move). Writing a
/// context with this bit offers the QP to the requester, so the drain starts without a
/// doorbell.
pub const SQ_DRAIN: Field = Field::at_bit(5, 1);
/// 1 (with [`SQ_DRAIN`]): once every work request the requester started has completed, raise
/// `IBV_EVENT_SQ_DRAINED` on [`crate::regs::ASYNC_EVENT_CQ`], once per move to SQD
/// (ibv_modify_qp(3) `en_sqd_async_notify`; IBTA Vol 1 11.6.3.1).
pub const SQD_NOTIFY: Field = Field::at_bit(6, 1);
/// 1: load the requester's next PSN from [`SQ_PSN`] and reset the SQ indices.
pub const INIT_SQ_PSN: Field = Field::at_bit(3, 1);
/// 1: load the responder's expected PSN from [`RQ_PSN`] and reset the MSN.
pub const INIT_RQ_PSN: Field = Field::at_bit(4, 1);
/// Path MTU as the ibv_mtu enum (1 = 256 … 5 = 4096 bytes).
pub const PATH_MTU: Field = Field::at_bit(8, 3);
/// Remote access the QP grants (`IBV_ACCESS_REMOTE_WRITE` = 2, READ = 4, ATOMIC = 8).
pub const ACCESS: Field = Field::at_bit(12, 4);
/// Protection domain number; must equal the MR's for every key check.
pub const PD: Field = Field::at_bit(16, 24);
/// Destination QP number at the peer (BTH.DestQP of our requests and ACKs).
pub const DEST_QPN: Field = Field::at_bit(40, 24);
/// First PSN the requester sends (with [`INIT_SQ_PSN`]).
pub const SQ_PSN: Field = Field::at_bit(64, 24);
/// Local ACK timeout exponent: the requester retransmits after 4.096 µs × 2^TIMEOUT without
/// progress (0 = never; IBTA Vol 1 11.2.4.2, ibv_modify_qp(3) `timeout`).
pub const TIMEOUT: Field = Field::at_bit(88, 5);
/// Retransmissions allowed after timeouts or sequence NAKs before the WQE fails with
/// `IBV_WC_RETRY_EXC_ERR` (0..7; 7 is not infinite).
pub const RETRY_CNT: Field = Field::at_bit(93, 3);
/// First PSN the responder expects (with [`INIT_RQ_PSN`]).
pub const RQ_PSN: Field = Field::at_bit(96, 24);
/// RNR retries allowed (7 = infinite).
pub const RNR_RETRY: Field = Field::at_bit(120, 3);
/// Minimal RNR NAK timer code the responder advertises (PROTOCOL.md's table).
pub const MIN_RNR_TIMER: Field = Field::at_bit(123, 5);
/// Partition key sent in BTH.P_Key (0xFFFF default partition).
pub const PKEY: Field = Field::at_bit(128, 16);
/// UDP source port of this QP's packets (RoCEv2 flow entropy, Annex A17.4.5.1).
pub const UDP_SPORT: Field = Field::at_bit(144, 16);
/// Destination IPv4 address (first octet in bits 31:24). RC only: a UD QP has its
/// destination in each work request, and keeps its [`QKEY`] here instead.
pub const DEST_IP: Field = Field::at_bit(160, 32);
/// UD: the QP's Q_Key (ibv_modify_qp(3) `qkey`; IBTA Vol 1 10.2.5): sent in the DETH of a
/// work request whose own Q_Key has bit 31 set, and the Q_Key received datagrams must carry.
/// Shares its bits with [`DEST_IP`], which a UD QP does not use.
pub const QKEY: Field = DEST_IP;
/// The QP's transport service ([`crate::verbs::qp_type`]): 0 RC, 1 UD.
pub const QP_TYPE: Field = Field::at_bit(11, 1);
/// Destination MAC address (byte 0 of the address in bits 7:0).
pub const DEST_MAC: Field = Field::at_bit(192, 48);
/// Index of the CQ that receives this QP's send completions.
pub const SEND_CQ: Field = Field::at_bit(240, 8);
/// log2 of the SQ ring size in WQEs.
pub const SQ_LOG_SIZE: Field = Field::at_bit(248, 4);
/// log2 of the send WQE size in 64-byte slots (0..=3: 64, 128, 256 or 512 bytes; see
/// [`crate::wqe::stride`]). WQE `i` is at `SQ_BASE + (i mod 2^SQ_LOG_SIZE) << (6 + SQ_LOG_STRIDE)`.
pub const SQ_LOG_STRIDE: Field = Field::at_bit(252, 3);
/// IOVA of the SQ ring (aligned to the WQE size; one WQE per `64 << SQ_LOG_STRIDE` bytes).
pub const SQ_BASE: Field = Field::at_bit(256, 64);
/// Index of the CQ that receives this QP's receive completions (SEND, RDMA WRITE with
/// immediate).
pub const RECV_CQ: Field = Field::at_bit(320, 8);
/// log2 of the RQ ring size in receive WQEs ([`crate::recv_wqe`]).
pub const RQ_LOG_SIZE: Field = Field::at_bit(328, 4);
/// log2 of the receive WQE size in 64-byte slots (0..=2: 64, 128 or 256 bytes; see
/// [`crate::recv_wqe::stride`]).
pub const RQ_LOG_STRIDE: Field = Field::at_bit(332, 3);
/// IOVA of the RQ ring (aligned to the receive WQE size; one receive WQE per
/// `64 << RQ_LOG_STRIDE` bytes). With
/// [`INIT_RQ_PSN`] the NIC also resets its RQ consumer index to 0.
pub const RQ_BASE: Field = Field::at_bit(384, 64);
/// RDMA READs this QP may have outstanding as requester (ibv_modify_qp(3) `max_rd_atomic`,
/// IBTA Vol 1 11.2.4.2): the NIC sends no further READ REQUEST while that many READs await
/// their responses. Capped at 16 ([`crate::regs::MAX_RD_ATOMIC`]); 0 is taken as 1.
pub const MAX_RD_ATOMIC: Field = Field::at_bit(336, 8);

/// SRQ number (an index of the NIC's tables, see [`crate::srq_context`]) whose ring this QP
/// receives into when [`USE_SRQ`] is set.
pub const SRQN: Field = Field::at_bit(344, 8);
/// 1: incoming SENDs and RDMA WRITEs with immediate take their receive WQE from the SRQ
/// [`SRQN`] (whose ring RQ_BASE, RQ_LOG_SIZE and RQ_LOG_STRIDE then describe) instead of the
/// QP's own RQ; moving the QP to ERR flushes no SRQ WQE (ibv_create_qp(3) `srq`).
pub const USE_SRQ: Field = Field::at_bit(352, 1);

/// RDMA READs and atomics this QP takes outstanding as responder (ibv_modify_qp(3)
/// `max_dest_rd_atomic`, IBTA Vol 1 9.4.4, 11.2.4.2): a new READ or atomic that arrives while
/// that many earlier ones still have responses to send is answered with NAK invalid request
/// (a conforming requester, whose `max_rd_atomic` is at most this, never sees it). Taken as
/// 1..=16 (0 as 1).
pub const MAX_DEST_RD_ATOMIC: Field = Field::at_bit(360, 8);

const _: () = assert!(check_disjoint(
    &[
        STATE,
        INIT_SQ_PSN,
        INIT_RQ_PSN,
        SQ_DRAIN,
        SQD_NOTIFY,
        QP_TYPE,
        PATH_MTU,
        ACCESS,
        PD,
        DEST_QPN,
        SQ_PSN,
        TIMEOUT,
        RETRY_CNT,
        RQ_PSN,
        RNR_RETRY,
        MIN_RNR_TIMER,
        PKEY,
        UDP_SPORT,
        DEST_IP,
        DEST_MAC,
        SEND_CQ,
        SQ_LOG_SIZE,
        SQ_LOG_STRIDE,
        SQ_BASE,
        RECV_CQ,
        RQ_LOG_SIZE,
        RQ_LOG_STRIDE,
        RQ_BASE,
        MAX_RD_ATOMIC,
        SRQN,
        USE_SRQ,
        MAX_DEST_RD_ATOMIC
    ],
    512
));
