//! [`CompletionQueue`] (`ibv_create_cq(3)`, `ibv_poll_cq(3)`): a ring of CQEs in host memory
//! that the NIC fills by DMA and the driver polls by the owner bit, never by MMIO.
use std::cell::{Cell, RefCell};
use std::rc::{Rc, Weak};
use std::sync::atomic::{fence, Ordering};

use rnic_contract::{cqe, regs, regs::cmd_op, verbs};

use crate::channel::{ChanInner, CompletionChannel};
use crate::context::CtxInner;
use crate::device::DmaBuffer;
use crate::error::{Error, Refused, Result};
use crate::qp::QpShared;
use crate::records::{owner_for, write_context, CqContext, Cqe};

/// Largest CQ this driver creates, in entries (`cqe`; a 4 MiB ring, see [`CompletionQueue`]).
pub const MAX_CQE: usize = 1 << 16;

/// `enum ibv_wc_status` (ibv_poll_cq(3)), with the ibverbs numbering. `Display` gives
/// exactly `ibv_wc_status_str(3)`'s text (rdma-core 44, libibverbs/verbs.c).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum WcStatus {
    /// 0: the work request completed successfully.
    #[default]
    Success,
    /// 1: local length error.
    LocLenErr,
    /// 2: local QP operation error (e.g. an opcode the NIC does not implement).
    LocQpOpErr,
    /// 3: local EE context operation error (RD only; never reported by this NIC).
    LocEecOpErr,
    /// 4: local protection error (bad lkey, SGE outside its MR, PD mismatch).
    LocProtErr,
    /// 5: flushed because the QP is in the error state.
    WrFlushErr,
    /// 6: memory window bind error (never reported by this NIC).
    MwBindErr,
    /// 7: bad response from the responder.
    BadRespErr,
    /// 8: local access error.
    LocAccessErr,
    /// 9: the responder found the request invalid (NAK invalid request).
    RemInvReqErr,
    /// 10: remote access error (NAK: rkey, bounds or access refused).
    RemAccessErr,
    /// 11: remote operational error.
    RemOpErr,
    /// 12: transport retries exhausted.
    RetryExcErr,
    /// 13: RNR retries exhausted.
    RnrRetryExcErr,
    /// 14: local RDD violation (RD only).
    LocRddViolErr,
    /// 15: remote invalid RD request (RD only).
    RemInvRdReqErr,
    /// 16: remote abort.
    RemAbortErr,
    /// 17: invalid EE context number (RD only).
    InvEecnErr,
    /// 18: invalid EE context state (RD only).
    InvEecStateErr,
    /// 19: fatal error.
    FatalErr,
    /// 20: response timeout.
    RespTimeoutErr,
    /// 21: general error.
    GeneralErr,
    /// 22: tag matching error.
    TmErr,
    /// 23: tag matching rendezvous incomplete.
    TmRndvIncomplete,
    /// Any other value (`ibv_wc_status_str` calls it "unknown").
    Other(u8),
}

/// `(status, number, ibv_wc_status_str text)` for every status ibverbs names.
const WC_STATUS: [(WcStatus, u8, &str); 24] = [
    (WcStatus::Success, 0, "success"),
    (WcStatus::LocLenErr, 1, "local length error"),
    (WcStatus::LocQpOpErr, 2, "local QP operation error"),
    (WcStatus::LocEecOpErr, 3, "local EE context operation error"),
    (WcStatus::LocProtErr, 4, "local protection error"),
    (WcStatus::WrFlushErr, 5, "Work Request Flushed Error"),
    (WcStatus::MwBindErr, 6, "memory management operation error"),
    (WcStatus::BadRespErr, 7, "bad response error"),
    (WcStatus::LocAccessErr, 8, "local access error"),
    (WcStatus::RemInvReqErr, 9, "remote invalid request error"),
    (WcStatus::RemAccessErr, 10, "remote access error"),
    (WcStatus::RemOpErr, 11, "remote operation error"),
    (WcStatus::RetryExcErr, 12, "transport retry counter exceeded"),
    (WcStatus::RnrRetryExcErr, 13, "RNR retry counter exceeded"),
    (WcStatus::LocRddViolErr, 14, "local RDD violation error"),
    (WcStatus::RemInvRdReqErr, 15, "remote invalid RD request"),
    (WcStatus::RemAbortErr, 16, "aborted error"),
    (WcStatus::InvEecnErr, 17, "invalid EE context number"),
    (WcStatus::InvEecStateErr, 18, "invalid EE context state"),
    (WcStatus::FatalErr, 19, "fatal error"),
    (WcStatus::RespTimeoutErr, 20, "response timeout error"),
    (WcStatus::GeneralErr, 21, "general error"),
    (WcStatus::TmErr, 22, "TM error"),
    (WcStatus::TmRndvIncomplete, 23, "TM software rendezvous"),
];

// The NIC's statuses (rnic-contract) are ibverbs' numbers.
const _: () = {
    use verbs::wc_status as s;
    let n = [
        s::SUCCESS,
        s::LOC_LEN_ERR,
        s::LOC_QP_OP_ERR,
        s::LOC_PROT_ERR,
        s::WR_FLUSH_ERR,
        s::BAD_RESP_ERR,
        s::LOC_ACCESS_ERR,
        s::REM_INV_REQ_ERR,
        s::REM_ACCESS_ERR,
        s::REM_OP_ERR,
        s::RETRY_EXC_ERR,
        s::RNR_RETRY_EXC_ERR,
        s::FATAL_ERR,
        s::GENERAL_ERR,
    ];
    let want = [0u8, 1, 2, 4, 5, 7, 8, 9, 10, 11, 12, 13, 19, 21];
    let mut i = 0;
    while i < n.len() {
        assert!(n[i] == want[i]);
        i += 1;
    }
};

impl WcStatus {
    /// From the CQE's STATUS byte (the `ibv_wc_status` number).
    pub fn from_raw(v: u8) -> Self {
        WC_STATUS.get(usize::from(v)).map_or(Self::Other(v), |e| e.0)
    }

    /// The ibverbs number.
    pub fn as_raw(self) -> u8 {
        match self {
            Self::Other(v) => v,
            s => WC_STATUS.iter().find(|e| e.0 == s).map_or(0, |e| e.1),
        }
    }

    /// `ibv_wc_status_str(3)`: the text rdma-core prints for this status ("unknown" for
    /// numbers it does not name).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Other(v) => WC_STATUS.get(usize::from(v)).map_or("unknown", |e| e.2),
            s => WC_STATUS.iter().find(|e| e.0 == s).map_or("unknown", |e| e.2),
        }
    }

    /// True for [`WcStatus::Success`].
    pub fn is_success(self) -> bool {
        self == Self::Success
    }
}

impl std::fmt::Display for WcStatus {
    /// Exactly `ibv_wc_status_str(3)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `enum ibv_wc_opcode` (ibv_poll_cq(3)), with the ibverbs numbering: what a completion
/// completed. A send WR completes with the opcode [`crate::WrOpcode::wc_opcode`] gives; a
/// receive WR with [`WcOpcode::Recv`] (a SEND, with or without immediate) or
/// [`WcOpcode::RecvRdmaWithImm`] (an RDMA WRITE with immediate).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum WcOpcode {
    /// 0 `IBV_WC_SEND`.
    #[default]
    Send,
    /// 1 `IBV_WC_RDMA_WRITE`.
    RdmaWrite,
    /// 2 `IBV_WC_RDMA_READ`.
    RdmaRead,
    /// 3 `IBV_WC_COMP_SWAP`: atomic compare and swap.
    CompSwap,
    /// 4 `IBV_WC_FETCH_ADD`: atomic fetch and add.
    FetchAdd,
    /// 5 `IBV_WC_BIND_MW` (memory windows; not implemented by this NIC).
    BindMw,
    /// 6 `IBV_WC_LOCAL_INV` (not implemented by this NIC).
    LocalInv,
    /// 7 `IBV_WC_TSO` (raw packet QPs; not implemented by this NIC).
    Tso,
    /// 128 `IBV_WC_RECV`: a receive.
    Recv,
    /// 129 `IBV_WC_RECV_RDMA_WITH_IMM`: a receive consumed by RDMA WRITE with immediate.
    RecvRdmaWithImm,
    /// Any other value.
    Other(u8),
}

impl WcOpcode {
    /// From the CQE's OPCODE byte.
    pub fn from_raw(v: u8) -> Self {
        use verbs::wc_opcode as o;
        match v {
            o::SEND => Self::Send,
            o::RDMA_WRITE => Self::RdmaWrite,
            o::RDMA_READ => Self::RdmaRead,
            o::COMP_SWAP => Self::CompSwap,
            o::FETCH_ADD => Self::FetchAdd,
            5 => Self::BindMw,
            6 => Self::LocalInv,
            7 => Self::Tso,
            o::RECV => Self::Recv,
            o::RECV_RDMA_WITH_IMM => Self::RecvRdmaWithImm,
            other => Self::Other(other),
        }
    }

    /// True for the completions of receive work requests (`IBV_WC_RECV` = 128 and the values
    /// above it, ibverbs' `opcode & IBV_WC_RECV`).
    pub fn is_recv(self) -> bool {
        self.as_raw() & verbs::wc_opcode::RECV != 0
    }

    /// The ibverbs number.
    pub fn as_raw(self) -> u8 {
        use verbs::wc_opcode as o;
        match self {
            Self::Send => o::SEND,
            Self::RdmaWrite => o::RDMA_WRITE,
            Self::RdmaRead => o::RDMA_READ,
            Self::CompSwap => o::COMP_SWAP,
            Self::FetchAdd => o::FETCH_ADD,
            Self::BindMw => 5,
            Self::LocalInv => 6,
            Self::Tso => 7,
            Self::Recv => o::RECV,
            Self::RecvRdmaWithImm => o::RECV_RDMA_WITH_IMM,
            Self::Other(v) => v,
        }
    }
}

bitflags::bitflags! {
    /// `enum ibv_wc_flags`.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
    pub struct WcFlags: u8 {
        /// `IBV_WC_GRH`: a GRH is present (UD receives).
        const GRH = 1;
        /// `IBV_WC_WITH_IMM`: `imm_data` is valid.
        const WITH_IMM = 2;
    }
}

/// A work completion (`struct ibv_wc`), decoded from a CQE. On an error status only `wr_id`,
/// `status` and `qp_num` are meaningful (ibv_poll_cq(3)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct WorkCompletion {
    /// The `wr_id` of the completed work request.
    pub wr_id: u64,
    /// Completion status.
    pub status: WcStatus,
    /// What completed.
    pub opcode: WcOpcode,
    /// Bytes transferred.
    pub byte_len: u32,
    /// Immediate data (valid with [`WcFlags::WITH_IMM`]).
    pub imm_data: u32,
    /// Local QP number.
    pub qp_num: u32,
    /// Flags.
    pub wc_flags: WcFlags,
    /// UD receives: the sender's QPN (`ibv_wc.src_qp`, from the DETH); 0 otherwise.
    pub src_qp: u32,
}

impl From<&Cqe> for WorkCompletion {
    fn from(c: &Cqe) -> Self {
        Self {
            wr_id: c.wr_id,
            status: WcStatus::from_raw(c.status),
            opcode: WcOpcode::from_raw(c.opcode),
            byte_len: c.byte_len,
            imm_data: c.imm_data,
            qp_num: c.qp_num,
            wc_flags: WcFlags::from_bits_truncate(c.wc_flags),
            src_qp: c.src_qp,
        }
    }
}

/// A QP whose completions a CQ delivers: its number, its shared state and which of its
/// completions come here.
type AttachedQp = (u32, Weak<RefCell<QpShared>>, Roles);

/// Which completions of an attached QP a CQ delivers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Roles {
    /// Its send completions (this is its send CQ).
    pub(crate) send: bool,
    /// Its receive completions (this is its receive CQ).
    pub(crate) recv: bool,
}

pub(crate) struct CqInner {
    pub(crate) ctx: Rc<CtxInner>,
    pub(crate) cqn: u32,
    ring: RefCell<DmaBuffer>,
    /// log2 of the ring's entries: twice [`capacity`](Self::capacity) (see
    /// [`CompletionQueue`] on overruns).
    log_size: Cell<u8>,
    /// Consumer index: CQEs consumed since creation.
    ci: Cell<u64>,
    /// The consumer index the NIC was last told ([`regs::CQ_CI`] or [`regs::CQ_ARM`]).
    reported: Cell<u64>,
    /// QPs whose send or receive completions arrive here, to retire their SQ / RQ entries,
    /// and which of their completions come here.
    qps: RefCell<Vec<AttachedQp>>,
    /// The completion channel its events go to, and the interrupt vector it has for them.
    pub(crate) channel: Option<(Rc<ChanInner>, u8)>,
    /// Events delivered by [`CompletionChannel::get_cq_event`] and not yet acknowledged.
    pub(crate) events_unacked: Cell<u32>,
}

impl CqInner {
    /// The CQ's `cqe`: half the ring (the other half is the slack that lets the driver report
    /// its consumer index only once per `cqe` completions).
    pub(crate) fn capacity(&self) -> usize {
        1 << (self.log_size.get() - 1)
    }

    /// Delivers the completions of QP `qpn` named by `roles` here. Nothing is reserved or
    /// checked: as in ibverbs, keeping the completions within the CQ's `cqe` is the program's
    /// job, and the NIC reports an overrun (see [`CompletionQueue`]).
    pub(crate) fn attach(&self, qpn: u32, qp: &Rc<RefCell<QpShared>>, roles: Roles) {
        self.qps.borrow_mut().push((qpn, Rc::downgrade(qp), roles));
    }

    /// Tells the NIC the consumer index ([`regs::CQ_CI`]) once `capacity` CQEs were consumed
    /// since it was last told (see [`CompletionQueue`] on overruns).
    ///
    /// # Errors
    /// Backend MMIO errors (then it is tried again at the next poll).
    fn report_ci(&self) -> Result<()> {
        let ci = self.ci.get();
        if ci - self.reported.get() < self.capacity() as u64 {
            return Ok(());
        }
        // The slots are read before the NIC may reuse them.
        fence(Ordering::SeqCst);
        let word = self.cqn << regs::cq_arm::CQN_SHIFT | (ci as u32 & ((1 << regs::cq_arm::CI_BITS) - 1));
        self.ctx.dev.mmio_write32(regs::CQ_CI, word)?;
        self.reported.set(ci);
        Ok(())
    }

    /// Forgets QP `qpn`.
    pub(crate) fn detach(&self, qpn: u32) {
        self.qps.borrow_mut().retain(|(n, ..)| *n != qpn);
    }

    fn poll(&self, wcs: &mut [WorkCompletion]) -> Result<usize> {
        let log_size = self.log_size.get();
        let ring = self.ring.borrow();
        let mask = (1u64 << log_size) - 1;
        let mut n = 0;
        while n < wcs.len() {
            let ci = self.ci.get();
            let off = ((ci & mask) as usize) * cqe::BYTES;
            // Owner byte first; the rest only after it says the NIC is done with the entry.
            let mut owner = [0u8; 1];
            ring.read(off + cqe::BYTES - 1, &mut owner)?;
            if (owner[0] & 1 == 1) != owner_for(ci, log_size) {
                break;
            }
            fence(Ordering::Acquire);
            let mut b = [0u8; cqe::BYTES];
            ring.read(off, &mut b)?;
            let c = Cqe::unpack(&b);
            self.ci.set(ci + 1);
            let wc = WorkCompletion::from(&c);
            self.retire(&wc);
            wcs[n] = wc;
            n += 1;
        }
        // A failed report loses no completion: it is tried again at the next poll.
        match self.report_ci() {
            Err(e) if n == 0 => Err(e),
            _ => Ok(n),
        }
    }

    /// Tells the QP that owns `wc` which of its work requests are finished: a receive
    /// completion (OPCODE with bit 7 set, `IBV_WC_RECV`; the NIC sets it on receive errors too)
    /// retires receive WRs, any other completion send WRs.
    fn retire(&self, wc: &WorkCompletion) {
        let qp = self.qps.borrow().iter().find(|(n, ..)| *n == wc.qp_num).and_then(|(_, w, _)| w.upgrade());
        if let Some(qp) = qp {
            if wc.opcode.is_recv() {
                qp.borrow_mut().complete_recv(wc.wr_id, wc.status);
            } else {
                qp.borrow_mut().complete(wc.wr_id, wc.status);
            }
        }
    }
}

impl Drop for CqInner {
    fn drop(&mut self) {
        // Invalidate before the ring is freed (field drop order: the ring goes after this).
        let _ = write_context(&*self.ctx.dev, cmd_op::WRITE_CQ, self.cqn as u8, &CqContext::default().pack());
        self.ctx.tables.borrow_mut().free_cqn(self.cqn);
        if let Some((ch, vector)) = &self.channel {
            ch.detach(*vector);
            self.ctx.tables.borrow_mut().free_vector(*vector);
        }
    }
}

/// A completion queue: a ring of `capacity()` 32-byte CQEs in DMA memory, written by the NIC
/// with an owner (phase) bit that flips on every lap, polled by the driver without MMIO.
///
/// **Overruns** (IBTA Vol 1 11.4.2.1; ibv_create_cq(3)): as in ibverbs, the program keeps the
/// completions it has not polled within the CQ's `cqe` ([`capacity`](Self::capacity)); posts
/// are not refused for CQ room. The NIC detects an overrun ([`regs::CQ_CI`]): a CQE that finds
/// the ring full is not written (no unpolled CQE is overwritten), the CQ stops taking CQEs,
/// and [`crate::Context::poll_async_event`] delivers [`crate::AsyncEvent::CqErr`] with the CQ's
/// number (`IBV_EVENT_CQ_ERR`); the CQ is then unusable (destroy it).
///
/// The NIC judges fullness by the consumer index the driver last reported, not by this
/// handle's own. The ring holds `2 * cqe` entries and the driver writes [`regs::CQ_CI`] at the
/// end of a poll once `cqe` or more CQEs were consumed since the last report (an arm reports
/// too), so one MMIO write per `cqe` completions. The bound: after every poll the reported
/// index `r` trails the consumer index `c` by at most `cqe - 1`, and the NIC takes a report
/// before any CQE of a work request posted after it. A program within `cqe` posts the work
/// request of CQE `n` only when `n - c < cqe`, so `n - r < 2 * cqe - 1`: the ring never looks
/// full to the NIC. A program that goes past `cqe` is caught when a CQE finds `2 * cqe` CQEs
/// not reported consumed: that CQE and every later one are dropped.
///
/// Cheap to clone. QPs keep the CQ alive; when the last handle goes, the CQ context is
/// invalidated and the ring freed.
#[derive(Clone)]
pub struct CompletionQueue {
    pub(crate) inner: Rc<CqInner>,
}

impl std::fmt::Debug for CompletionQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompletionQueue").field("cqn", &self.inner.cqn).field("capacity", &self.capacity()).finish()
    }
}

impl CompletionQueue {
    /// Creates a CQ of at least `min_cqe` entries (`cqe` rounded up to a power of two):
    /// allocates and zeroes a ring of twice that (a zeroed ring reads empty), then commits the
    /// CQ context (WRITE_CQ with VALID, LOG_SIZE, BASE), which resets the NIC's producer index,
    /// consumer index and overrun state.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for `min_cqe` of 0 or above [`MAX_CQE`];
    /// [`Error::NoMemory`] when no CQ context or DMA memory is free; backend errors.
    pub(crate) fn new(ctx: Rc<CtxInner>, min_cqe: usize, channel: Option<&CompletionChannel>) -> Result<Self> {
        if min_cqe == 0 || min_cqe > MAX_CQE {
            return Err(Error::inval(format!("a CQ needs 1..={MAX_CQE} entries, not {min_cqe}")));
        }
        if let Some(ch) = channel {
            if !Rc::ptr_eq(&ch.inner.ctx, &ctx) {
                return Err(Error::inval("the completion channel belongs to another context"));
            }
        }
        // The ring: twice the CQ's `cqe` (see the type's doc on overruns).
        let size = 2 * min_cqe.next_power_of_two();
        let log_size = size.trailing_zeros() as u8;
        let ring = DmaBuffer::new(&ctx.dev, size * cqe::BYTES, 4096)?;
        ring.write(0, &vec![0u8; size * cqe::BYTES])?;
        // A CQ with a channel gets an interrupt vector of its own, so a vector names its CQ.
        let vector = match channel {
            Some(_) => Some(ctx.tables.borrow_mut().alloc_vector(ctx.dev.interrupt_vectors())?),
            None => None,
        };
        let cqn = match ctx.tables.borrow_mut().alloc_cqn() {
            Ok(c) => c,
            Err(e) => {
                if let Some(v) = vector {
                    ctx.tables.borrow_mut().free_vector(v);
                }
                return Err(e);
            }
        };
        let rec = CqContext { valid: true, log_size, vector: vector.unwrap_or(0), base: ring.iova().0 }.pack();
        if let Err(e) = write_context(&*ctx.dev, cmd_op::WRITE_CQ, cqn as u8, &rec) {
            let _ = write_context(&*ctx.dev, cmd_op::WRITE_CQ, cqn as u8, &CqContext::default().pack());
            ctx.tables.borrow_mut().free_cqn(cqn);
            if let Some(v) = vector {
                ctx.tables.borrow_mut().free_vector(v);
            }
            return Err(e);
        }
        let inner = CqInner {
            ctx,
            cqn,
            ring: RefCell::new(ring),
            log_size: Cell::new(log_size),
            ci: Cell::new(0),
            reported: Cell::new(0),
            qps: RefCell::new(Vec::new()),
            channel: channel.zip(vector).map(|(c, v)| (Rc::clone(&c.inner), v)),
            events_unacked: Cell::new(0),
        };
        let inner = Rc::new(inner);
        if let Some((ch, v)) = &inner.channel {
            ch.attach(*v, &inner)?;
        }
        Ok(Self { inner })
    }

    /// Destroys the CQ (`ibv_destroy_cq(3)`): invalidates its context and frees its ring.
    ///
    /// # Errors
    /// [`Refused`] with [`Error::Busy`] (EBUSY), the CQ unchanged, while QPs are attached to
    /// it (as send or receive CQ), other handles of it (clones, QP builders) are alive, or
    /// completion events delivered for it are not yet acknowledged
    /// ([`ack_cq_events`](Self::ack_cq_events)).
    pub fn destroy(self) -> std::result::Result<(), Refused<Self>> {
        let unacked = self.inner.events_unacked.get();
        if unacked > 0 {
            let msg = format!("CQ {} has {unacked} completion events not acknowledged", self.inner.cqn);
            return Err(Refused::busy(self, msg));
        }
        let qps: Vec<u32> = self.inner.qps.borrow().iter().map(|q| q.0).collect();
        if !qps.is_empty() {
            let msg = format!("CQ {} has QPs {qps:?} attached", self.inner.cqn);
            return Err(Refused::busy(self, msg));
        }
        let others = Rc::strong_count(&self.inner) - 1;
        if others > 0 {
            let msg = format!("CQ {} has {others} other handles (clones or QP builders)", self.inner.cqn);
            return Err(Refused::busy(self, msg));
        }
        Ok(())
    }

    /// Resizes the CQ to at least `min_cqe` entries, rounded up to a power of two
    /// (`ibv_resize_cq(3)`): a new zeroed ring, then one context write (WRITE_CQ with the new
    /// BASE and LOG_SIZE, which restarts the NIC's producer index at 0), then the old ring is
    /// freed. The ring is twice the new `cqe`, as at creation; a CQ in error (overrun) works
    /// again after a resize.
    ///
    /// The NIC has no command that moves a CQ to a new ring while it may be writing a CQE
    /// into it (a context write racing a CQE job is overwritten by its index write-back), so
    /// the resize needs a quiet CQ: no QP attached to it may have a send or receive work
    /// request outstanding (every completion it will produce is polled), and no CQE may be
    /// waiting in the ring.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for 0 or more than [`MAX_CQE`] entries; [`Error::Busy`] (EBUSY) while an attached QP has work requests
    /// outstanding or a CQE is unpolled; [`Error::NoMemory`] for the ring; backend errors
    /// (then the CQ keeps its old ring).
    pub fn resize(&self, min_cqe: usize) -> Result<()> {
        let inner = &self.inner;
        if min_cqe == 0 || min_cqe > MAX_CQE {
            return Err(Error::inval(format!("a CQ needs 1..={MAX_CQE} entries, not {min_cqe}")));
        }
        let size = 2 * min_cqe.next_power_of_two();
        for (qpn, qp, _) in inner.qps.borrow().iter() {
            if let Some(q) = qp.upgrade() {
                let (s, r) = q.borrow().pending();
                if s + r > 0 {
                    return Err(Error::Busy(format!(
                        "CQ {} cannot be resized while QP {qpn} has {s} send and {r} receive work requests outstanding",
                        inner.cqn
                    )));
                }
            }
        }
        {
            let ring = inner.ring.borrow();
            let log_size = inner.log_size.get();
            let ci = inner.ci.get();
            let off = ((ci & ((1u64 << log_size) - 1)) as usize) * cqe::BYTES;
            let mut owner = [0u8; 1];
            ring.read(off + cqe::BYTES - 1, &mut owner)?;
            if (owner[0] & 1 == 1) == owner_for(ci, log_size) {
                return Err(Error::Busy(format!(
                    "CQ {} has unpolled completions: poll them before resizing",
                    inner.cqn
                )));
            }
        }
        let log_size = size.trailing_zeros() as u8;
        let ring = DmaBuffer::new(&inner.ctx.dev, size * cqe::BYTES, 4096)?;
        ring.write(0, &vec![0u8; size * cqe::BYTES])?;
        let vector = inner.channel.as_ref().map_or(0, |c| c.1);
        let rec = CqContext { valid: true, log_size, vector, base: ring.iova().0 }.pack();
        write_context(&*inner.ctx.dev, cmd_op::WRITE_CQ, inner.cqn as u8, &rec)?;
        // The NIC writes the new ring from index 0 on; the old one is freed here.
        *inner.ring.borrow_mut() = ring;
        inner.log_size.set(log_size);
        inner.ci.set(0);
        inner.reported.set(0);
        Ok(())
    }

    /// The CQ number (index of its context in the NIC).
    pub fn cqn(&self) -> u32 {
        self.inner.cqn
    }

    /// Where the ring the NIC writes lies: its IOVA (the CQ context's BASE) and its length in
    /// bytes (twice [`capacity`](Self::capacity) CQEs of 32 bytes). For diagnostics and for
    /// tests that inspect host memory through [`crate::Device::dma_read`].
    pub fn ring(&self) -> (crate::Iova, usize) {
        let ring = self.inner.ring.borrow();
        (ring.iova(), cqe::BYTES << self.inner.log_size.get())
    }

    /// The CQ's `cqe` (as returned by ibv_create_cq): how many completions the program may
    /// leave unpolled. The ring in host memory holds twice as many (see the type's doc).
    pub fn capacity(&self) -> usize {
        self.inner.capacity()
    }

    /// The interrupt vector of this CQ's completion events, if it was created with a
    /// completion channel ([`crate::Context::create_cq_with_channel`]).
    pub fn comp_vector(&self) -> Option<u16> {
        self.inner.channel.as_ref().map(|c| u16::from(c.1))
    }

    /// Requests one completion event (`ibv_req_notify_cq(3)`, IBTA Vol 1 11.4.2.2): the next
    /// completion added to the CQ, or with `solicited_only` the next solicited one (a receive
    /// completion of a message sent with `IBV_SEND_SOLICITED`, or any completion with an error
    /// status), makes the CQ's channel deliver one event
    /// ([`CompletionChannel::get_cq_event`]). One MMIO write: [`regs::CQ_ARM`] with the CQ
    /// number and the driver's consumer index, so a completion already in the ring and not yet
    /// polled raises the event at once (no wake-up is lost between the last poll and the arm).
    /// Arming again before the event is harmless; arming for every completion widens an arm
    /// for solicited ones.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] (EINVAL) if the CQ has no completion channel; backend MMIO
    /// errors.
    pub fn req_notify(&self, solicited_only: bool) -> Result<()> {
        if self.inner.channel.is_none() {
            return Err(Error::inval(format!(
                "CQ {} has no completion channel: create it with create_cq_with_channel to get events",
                self.inner.cqn
            )));
        }
        let ci = self.inner.ci.get() as u32 & ((1 << regs::cq_arm::CI_BITS) - 1);
        let sol = if solicited_only { regs::cq_arm::SOLICITED } else { 0 };
        // The consumer index must be current in the NIC's eyes: earlier ring reads are done.
        fence(Ordering::SeqCst);
        self.inner.ctx.dev.mmio_write32(regs::CQ_ARM, self.inner.cqn << regs::cq_arm::CQN_SHIFT | sol | ci)?;
        // The arm told the NIC the consumer index too.
        self.inner.reported.set(self.inner.ci.get());
        Ok(())
    }

    /// Acknowledges `nevents` events delivered for this CQ (`ibv_ack_cq_events(3)`); more than
    /// are outstanding acknowledges all of them. [`destroy`](Self::destroy) refuses while any
    /// is unacknowledged.
    pub fn ack_cq_events(&self, nevents: u32) {
        let n = self.inner.events_unacked.get();
        self.inner.events_unacked.set(n.saturating_sub(nevents));
    }

    /// Events delivered for this CQ and not yet acknowledged.
    pub fn unacked_events(&self) -> u32 {
        self.inner.events_unacked.get()
    }

    /// Polls up to `wcs.len()` completions (`ibv_poll_cq(3)`), oldest first, into `wcs[..n]`,
    /// and returns `n`. Reads only host memory: the entry at `ci mod size` is valid iff its owner
    /// bit equals `!((ci >> log_size) & 1)`. Completions also retire the QP's work requests
    /// (a signaled completion retires every earlier unsignaled one of its QP).
    ///
    /// When nothing was found it calls [`crate::Device::poll_progress`] once (a spin hint; in
    /// the simulator a few clock cycles), so a loop around `poll` always makes progress.
    ///
    /// # Errors
    /// Backend errors reading the ring.
    pub fn poll(&self, wcs: &mut [WorkCompletion]) -> Result<usize> {
        let n = self.inner.poll(wcs)?;
        if n == 0 && !wcs.is_empty() {
            self.inner.ctx.dev.poll_progress();
        }
        Ok(n)
    }

    /// Polls until at least one completion arrives or `budget_cycles` NIC cycles
    /// ([`crate::Device::now_cycles`]) pass. Returns the number polled (≥ 1).
    ///
    /// # Errors
    /// [`Error::TimedOut`] when the budget runs out; backend errors.
    pub fn poll_wait(&self, wcs: &mut [WorkCompletion], budget_cycles: u64) -> Result<usize> {
        let dev = &self.inner.ctx.dev;
        let start = dev.now_cycles();
        loop {
            let n = self.poll(wcs)?;
            if n > 0 || wcs.is_empty() {
                return Ok(n);
            }
            if dev.now_cycles().saturating_sub(start) >= budget_cycles {
                return Err(Error::TimedOut(format!(
                    "no completion on CQ {} within {budget_cycles} cycles",
                    self.inner.cqn
                )));
            }
        }
    }
}
