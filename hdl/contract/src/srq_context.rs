//! Shared receive queue (SRQ) context, written through [`crate::regs::CMD`] with
//! [`crate::regs::cmd_op::WRITE_SRQ`] (ibv_create_srq(3), ibv_modify_srq(3); IBTA Vol 1 10.2.9).
//!
//! An SRQ is a ring of receive WQEs ([`crate::recv_wqe`]) shared by the QPs whose context has
//! [`crate::qp_context::USE_SRQ`] set and names it in [`crate::qp_context::SRQN`]; each such
//! QP's context also carries the ring's RQ_BASE / RQ_LOG_SIZE / RQ_LOG_STRIDE. SRQ numbers
//! share the QP-number space of the NIC's tables (the driver takes one from the QP numbers it
//! hands out), and the SRQ's producer index is rung on [`crate::regs::RQ_DOORBELL`] with the
//! SRQ number. The NIC keeps the SRQ's consumer index and its limit.
//!
//! **Limit event.** While LIMIT is not 0 the SRQ is armed: when a receive WQE taken from it
//! leaves fewer than LIMIT WQEs posted, the NIC disarms it (its LIMIT becomes 0) and writes an
//! event CQE ([`crate::verbs::wc_opcode::ASYNC_EVENT`], status
//! [`crate::verbs::event_type::SRQ_LIMIT_REACHED`], QP_NUM = the SRQ number, BYTE_LEN = the
//! WQEs left) to the CQ EVENT_CQ: the driver's `IBV_EVENT_SRQ_LIMIT_REACHED`.
use crate::field::{check_disjoint, Field};

/// Limit in WQEs (0 = disarmed), `ibv_srq_attr.srq_limit`.
pub const LIMIT: Field = Field::at_bit(0, 16);
/// CQ the limit event is written to.
pub const EVENT_CQ: Field = Field::at_bit(16, 8);
/// 1: the SRQ is new: its producer and consumer indices start at 0 (ibv_create_srq); 0 only
/// changes LIMIT and EVENT_CQ (ibv_modify_srq).
pub const INIT: Field = Field::at_bit(24, 1);

const _: () = assert!(check_disjoint(&[LIMIT, EVENT_CQ, INIT], 512));
