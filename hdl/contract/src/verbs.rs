//! Numeric values of the ibverbs enums the NIC and driver exchange (values as in rdma-core's
//! `<infiniband/verbs.h>`, documented in ibv_post_send(3), ibv_poll_cq(3), ibv_modify_qp(3)).

/// `enum ibv_wr_opcode`.
pub mod wr_opcode {
    pub const RDMA_WRITE: u8 = 0;
    pub const RDMA_WRITE_WITH_IMM: u8 = 1;
    pub const SEND: u8 = 2;
    pub const SEND_WITH_IMM: u8 = 3;
    pub const RDMA_READ: u8 = 4;
    pub const ATOMIC_CMP_AND_SWP: u8 = 5;
    pub const ATOMIC_FETCH_AND_ADD: u8 = 6;
}

/// `enum ibv_send_flags`.
pub mod send_flags {
    pub const FENCE: u8 = 1;
    pub const SIGNALED: u8 = 2;
    pub const SOLICITED: u8 = 4;
    pub const INLINE: u8 = 8;
}

/// `enum ibv_wc_status`.
pub mod wc_status {
    pub const SUCCESS: u8 = 0;
    pub const LOC_LEN_ERR: u8 = 1;
    pub const LOC_QP_OP_ERR: u8 = 2;
    pub const LOC_PROT_ERR: u8 = 4;
    pub const WR_FLUSH_ERR: u8 = 5;
    pub const BAD_RESP_ERR: u8 = 7;
    pub const LOC_ACCESS_ERR: u8 = 8;
    pub const REM_INV_REQ_ERR: u8 = 9;
    pub const REM_ACCESS_ERR: u8 = 10;
    pub const REM_OP_ERR: u8 = 11;
    pub const RETRY_EXC_ERR: u8 = 12;
    pub const RNR_RETRY_EXC_ERR: u8 = 13;
    pub const FATAL_ERR: u8 = 19;
    pub const GENERAL_ERR: u8 = 21;
}

/// `enum ibv_wc_opcode`.
pub mod wc_opcode {
    pub const SEND: u8 = 0;
    pub const RDMA_WRITE: u8 = 1;
    pub const RDMA_READ: u8 = 2;
    pub const COMP_SWAP: u8 = 3;
    pub const FETCH_ADD: u8 = 4;
    pub const RECV: u8 = 128;
    pub const RECV_RDMA_WITH_IMM: u8 = 129;
    /// Not an ibverbs opcode: an asynchronous event written by the NIC to an event CQ
    /// ([`crate::srq_context`]); the CQE's STATUS holds the [`super::event_type`].
    pub const ASYNC_EVENT: u8 = 255;
}

/// `enum ibv_event_type` (ibv_get_async_event(3)), the events the NIC reports (see
/// [`crate::regs::ASYNC_EVENT_CQ`] and [`crate::srq_context`]).
pub mod event_type {
    /// `IBV_EVENT_CQ_ERR`: a CQ overran (see [`crate::regs::CQ_CI`]); the event names the CQ.
    pub const CQ_ERR: u8 = 0;
    pub const QP_FATAL: u8 = 1;
    pub const QP_REQ_ERR: u8 = 2;
    pub const QP_ACCESS_ERR: u8 = 3;
    pub const COMM_EST: u8 = 4;
    /// `IBV_EVENT_SQ_DRAINED`: a QP in SQD with [`crate::qp_context::SQD_NOTIFY`] has
    /// completed every work request it started.
    pub const SQ_DRAINED: u8 = 5;
    pub const SRQ_LIMIT_REACHED: u8 = 15;
    pub const QP_LAST_WQE_REACHED: u8 = 16;
}

/// `enum ibv_wc_flags`.
pub mod wc_flags {
    pub const GRH: u8 = 1;
    pub const WITH_IMM: u8 = 2;
}

/// `enum ibv_access_flags` (low bits).
pub mod access {
    pub const LOCAL_WRITE: u8 = 1;
    pub const REMOTE_WRITE: u8 = 2;
    pub const REMOTE_READ: u8 = 4;
    pub const REMOTE_ATOMIC: u8 = 8;
}

/// The transport service a QP context holds ([`crate::qp_context::QP_TYPE`]); not
/// `enum ibv_qp_type`'s numbering (IBV_QPT_RC = 2, IBV_QPT_UD = 4), which the driver maps.
pub mod qp_type {
    /// Reliable connection (IBTA Vol 1 9.7).
    pub const RC: u8 = 0;
    /// Unreliable datagram (IBTA Vol 1 9.8).
    pub const UD: u8 = 1;
}

/// `enum ibv_qp_state`.
pub mod qp_state {
    pub const RESET: u8 = 0;
    pub const INIT: u8 = 1;
    pub const RTR: u8 = 2;
    pub const RTS: u8 = 3;
    pub const SQD: u8 = 4;
    pub const SQE: u8 = 5;
    pub const ERR: u8 = 6;
}

/// `enum ibv_mtu`: path MTU code → bytes is `128 << code` (1 = 256 … 5 = 4096).
pub mod mtu {
    pub const MTU_256: u8 = 1;
    pub const MTU_512: u8 = 2;
    pub const MTU_1024: u8 = 3;
    pub const MTU_2048: u8 = 4;
    pub const MTU_4096: u8 = 5;

    /// Bytes of payload per packet for an ibv_mtu code, or `None` for an invalid code.
    pub const fn bytes(code: u8) -> Option<u32> {
        match code {
            1..=5 => Some(128u32 << code),
            _ => None,
        }
    }
}
