//! [`CompletionQueue`] (`ibv_create_cq(3)`, `ibv_poll_cq(3)`): a ring of CQEs in host memory
//! that the NIC fills by DMA and the driver polls by the owner bit, never by MMIO.
use std::cell::{Cell, RefCell};
use std::rc::{Rc, Weak};
use std::sync::atomic::{fence, Ordering};

use rnic_contract::{cqe, regs::cmd_op, verbs};

use crate::context::CtxInner;
use crate::device::DmaBuffer;
use crate::error::{Error, Result};
use crate::qp::QpShared;
use crate::records::{owner_for, write_context, Cqe, CqContext};

/// Largest CQ this driver creates, in entries (a 2 MiB ring).
pub const MAX_CQE: usize = 1 << 16;

/// `enum ibv_wc_status` (ibv_poll_cq(3)), with the ibverbs numbering.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum WcStatus {
    /// 0: the work request completed successfully.
    #[default]
    Success,
    /// 1: local length error.
    LocLenErr,
    /// 2: local QP operation error (e.g. an opcode the NIC does not implement).
    LocQpOpErr,
    /// 4: local protection error (bad lkey, SGE outside its MR, PD mismatch).
    LocProtErr,
    /// 5: flushed because the QP is in the error state.
    WrFlushErr,
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
    /// 19: fatal error.
    FatalErr,
    /// 21: general error.
    GeneralErr,
    /// Any other value (ibverbs defines a few more that this NIC never reports).
    Other(u8),
}

impl WcStatus {
    /// From the CQE's STATUS byte.
    pub fn from_raw(v: u8) -> Self {
        use verbs::wc_status as s;
        match v {
            s::SUCCESS => Self::Success,
            s::LOC_LEN_ERR => Self::LocLenErr,
            s::LOC_QP_OP_ERR => Self::LocQpOpErr,
            s::LOC_PROT_ERR => Self::LocProtErr,
            s::WR_FLUSH_ERR => Self::WrFlushErr,
            s::BAD_RESP_ERR => Self::BadRespErr,
            s::LOC_ACCESS_ERR => Self::LocAccessErr,
            s::REM_INV_REQ_ERR => Self::RemInvReqErr,
            s::REM_ACCESS_ERR => Self::RemAccessErr,
            s::REM_OP_ERR => Self::RemOpErr,
            s::RETRY_EXC_ERR => Self::RetryExcErr,
            s::RNR_RETRY_EXC_ERR => Self::RnrRetryExcErr,
            s::FATAL_ERR => Self::FatalErr,
            s::GENERAL_ERR => Self::GeneralErr,
            other => Self::Other(other),
        }
    }

    /// The ibverbs number.
    pub fn as_raw(self) -> u8 {
        use verbs::wc_status as s;
        match self {
            Self::Success => s::SUCCESS,
            Self::LocLenErr => s::LOC_LEN_ERR,
            Self::LocQpOpErr => s::LOC_QP_OP_ERR,
            Self::LocProtErr => s::LOC_PROT_ERR,
            Self::WrFlushErr => s::WR_FLUSH_ERR,
            Self::BadRespErr => s::BAD_RESP_ERR,
            Self::LocAccessErr => s::LOC_ACCESS_ERR,
            Self::RemInvReqErr => s::REM_INV_REQ_ERR,
            Self::RemAccessErr => s::REM_ACCESS_ERR,
            Self::RemOpErr => s::REM_OP_ERR,
            Self::RetryExcErr => s::RETRY_EXC_ERR,
            Self::RnrRetryExcErr => s::RNR_RETRY_EXC_ERR,
            Self::FatalErr => s::FATAL_ERR,
            Self::GeneralErr => s::GENERAL_ERR,
            Self::Other(v) => v,
        }
    }

    /// True for [`WcStatus::Success`].
    pub fn is_success(self) -> bool {
        self == Self::Success
    }
}

/// `enum ibv_wc_opcode`, with the ibverbs numbering.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum WcOpcode {
    /// 0: SEND.
    #[default]
    Send,
    /// 1: RDMA WRITE.
    RdmaWrite,
    /// 2: RDMA READ.
    RdmaRead,
    /// 3: atomic compare and swap.
    CompSwap,
    /// 4: atomic fetch and add.
    FetchAdd,
    /// 128: a receive.
    Recv,
    /// 129: a receive consumed by RDMA WRITE with immediate.
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
        }
    }
}

/// A QP whose completions a CQ delivers: its number, its shared state and the CQ entries it
/// reserved.
type AttachedQp = (u32, Weak<RefCell<QpShared>>, usize);

pub(crate) struct CqInner {
    pub(crate) ctx: Rc<CtxInner>,
    pub(crate) cqn: u32,
    ring: DmaBuffer,
    log_size: u8,
    /// Consumer index: CQEs consumed since creation (the driver's only CQ state).
    ci: Cell<u64>,
    /// QPs whose send or receive completions arrive here, to retire their SQ / RQ entries,
    /// with the entries each one committed.
    qps: RefCell<Vec<AttachedQp>>,
    /// Sum of the SQ sizes of the QPs using this CQ as send CQ and the RQ sizes of those using
    /// it as receive CQ, plus the size of each SRQ whose QPs receive here, once per SRQ (see
    /// [`CompletionQueue`] on overflow).
    committed: Cell<usize>,
    /// QPs receiving here from an SRQ: (QP number, SRQ number, SRQ size).
    srq_qps: RefCell<Vec<(u32, u32, usize)>>,
}

impl CqInner {
    pub(crate) fn capacity(&self) -> usize {
        1 << self.log_size
    }

    /// Reserves room for `entries` completions of QP `qpn`: its SQ size if this is its send
    /// CQ, plus its RQ size if this is its receive CQ.
    pub(crate) fn attach(&self, qpn: u32, qp: &Rc<RefCell<QpShared>>, entries: usize) -> Result<()> {
        let need = self.committed.get() + entries;
        if need > self.capacity() {
            return Err(Error::inval(format!(
                "CQ {} has {} entries but its QPs could have {need} completions outstanding (a send CQ counts each QP's SQ size fully, since errors complete even unsignaled work requests; a receive CQ counts each QP's RQ size); create a larger CQ",
                self.cqn,
                self.capacity()
            )));
        }
        self.committed.set(need);
        self.qps.borrow_mut().push((qpn, Rc::downgrade(qp), entries));
        Ok(())
    }

    /// Reserves room for the receive completions of QP `qpn` on SRQ `srqn` of `entries` WQEs:
    /// the SRQ's WQEs complete once each, whichever of its QPs takes them, so the SRQ's size is
    /// reserved once, by its first QP here.
    pub(crate) fn attach_srq(&self, qpn: u32, srqn: u32, entries: usize) -> Result<()> {
        let mut v = self.srq_qps.borrow_mut();
        if !v.iter().any(|&(_, s, _)| s == srqn) {
            let need = self.committed.get() + entries;
            if need > self.capacity() {
                return Err(Error::inval(format!(
                    "CQ {} has {} entries but its QPs and SRQs could have {need} completions outstanding; create a larger CQ",
                    self.cqn,
                    self.capacity()
                )));
            }
            self.committed.set(need);
        }
        v.push((qpn, srqn, entries));
        Ok(())
    }

    /// Releases what [`attach`](Self::attach) and [`attach_srq`](Self::attach_srq) reserved
    /// for `qpn` (an SRQ's room goes with its last QP here).
    pub(crate) fn detach(&self, qpn: u32) {
        let mut qps = self.qps.borrow_mut();
        let freed: usize = qps.iter().filter(|(n, _, _)| *n == qpn).map(|(_, _, e)| e).sum();
        self.committed.set(self.committed.get().saturating_sub(freed));
        qps.retain(|(n, _, _)| *n != qpn);
        let mut v = self.srq_qps.borrow_mut();
        if let Some(p) = v.iter().position(|&(n, _, _)| n == qpn) {
            let (_, srqn, entries) = v.remove(p);
            if !v.iter().any(|&(_, s, _)| s == srqn) {
                self.committed.set(self.committed.get().saturating_sub(entries));
            }
        }
    }

    fn poll(&self, wcs: &mut [WorkCompletion]) -> Result<usize> {
        let mask = (1u64 << self.log_size) - 1;
        let mut n = 0;
        while n < wcs.len() {
            let ci = self.ci.get();
            let off = ((ci & mask) as usize) * cqe::BYTES;
            // Owner byte first; the rest only after it says the NIC is done with the entry.
            let mut owner = [0u8; 1];
            self.ring.read(off + cqe::BYTES - 1, &mut owner)?;
            if (owner[0] & 1 == 1) != owner_for(ci, self.log_size) {
                break;
            }
            fence(Ordering::Acquire);
            let mut b = [0u8; cqe::BYTES];
            self.ring.read(off, &mut b)?;
            let c = Cqe::unpack(&b);
            self.ci.set(ci + 1);
            let wc = WorkCompletion::from(&c);
            self.retire(&wc);
            wcs[n] = wc;
            n += 1;
        }
        Ok(n)
    }

    /// Tells the QP that owns `wc` which of its work requests are finished: a receive
    /// completion (OPCODE with bit 7 set, `IBV_WC_RECV`; the NIC sets it on receive errors too)
    /// retires receive WRs, any other completion send WRs.
    fn retire(&self, wc: &WorkCompletion) {
        let qp = self.qps.borrow().iter().find(|(n, _, _)| *n == wc.qp_num).and_then(|(_, w, _)| w.upgrade());
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
    }
}

/// A completion queue: a ring of `capacity()` 32-byte CQEs in DMA memory, written by the NIC
/// with an owner (phase) bit that flips on every lap, polled by the driver without MMIO.
///
/// **Overflow.** The NIC does not know the driver's consumer index, so it would overwrite
/// unpolled CQEs. The driver makes that impossible: a QP may only be created on CQs whose
/// capacity is at least the sum of the SQ sizes of the QPs sending to it plus the RQ sizes of
/// the QPs receiving to it, because a QP never has more work requests outstanding than its SQ
/// (RQ) size, and an outstanding work request is retired only when its (or a later signaled)
/// CQE is polled. Create the CQ with at least the total `max_send_wr` + `max_recv_wr` of its
/// QPs (rounded up to powers of two).
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
    /// Creates a CQ of at least `min_cqe` entries (rounded up to a power of two): allocates and
    /// zeroes the ring (a zeroed ring reads empty), then commits the CQ context (WRITE_CQ with
    /// VALID, LOG_SIZE, BASE), which resets the NIC's producer index.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for `min_cqe` of 0 or above [`MAX_CQE`];
    /// [`Error::NoMemory`] when no CQ context or DMA memory is free; backend errors.
    pub(crate) fn new(ctx: Rc<CtxInner>, min_cqe: usize) -> Result<Self> {
        if min_cqe == 0 || min_cqe > MAX_CQE {
            return Err(Error::inval(format!("a CQ needs 1..={MAX_CQE} entries, not {min_cqe}")));
        }
        let size = min_cqe.next_power_of_two();
        let log_size = size.trailing_zeros() as u8;
        let ring = DmaBuffer::new(&ctx.dev, size * cqe::BYTES, 4096)?;
        ring.write(0, &vec![0u8; size * cqe::BYTES])?;
        let cqn = ctx.tables.borrow_mut().alloc_cqn()?;
        let rec = CqContext { valid: true, log_size, base: ring.iova().0 }.pack();
        if let Err(e) = write_context(&*ctx.dev, cmd_op::WRITE_CQ, cqn as u8, &rec) {
            let _ = write_context(&*ctx.dev, cmd_op::WRITE_CQ, cqn as u8, &CqContext::default().pack());
            ctx.tables.borrow_mut().free_cqn(cqn);
            return Err(e);
        }
        let inner = CqInner {
            ctx,
            cqn,
            ring,
            log_size,
            ci: Cell::new(0),
            qps: RefCell::new(Vec::new()),
            committed: Cell::new(0),
            srq_qps: RefCell::new(Vec::new()),
        };
        Ok(Self { inner: Rc::new(inner) })
    }

    /// The CQ number (index of its context in the NIC).
    pub fn cqn(&self) -> u32 {
        self.inner.cqn
    }

    /// Number of CQEs the ring holds (`cqe` as returned by ibv_create_cq).
    pub fn capacity(&self) -> usize {
        self.inner.capacity()
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
