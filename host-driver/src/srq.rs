//! Shared receive queues (`ibv_create_srq(3)`, `ibv_post_srq_recv(3)`, `ibv_modify_srq(3)`;
//! IBTA Vol 1 10.2.9) and their limit event (`IBV_EVENT_SRQ_LIMIT_REACHED`,
//! ibv_get_async_event(3)).
//!
//! An SRQ is a ring of receive WQEs in host memory, like a QP's RQ, that any number of QPs
//! built with [`crate::QpBuilder::set_srq`] take their receive WQEs from: the NIC keeps the
//! SRQ's consumer index and hands each incoming SEND (or RDMA WRITE with immediate) the next
//! WQE, whichever QP it arrived on; the completion goes to that QP's receive CQ with that QP's
//! number. See `rnic_contract::srq_context` for what the NIC does.
use std::cell::{Cell, RefCell};
use std::marker::PhantomData;
use std::rc::{Rc, Weak};
use std::sync::atomic::{fence, Ordering};

use rnic_contract::{recv_wqe, regs, srq_context, verbs};

use crate::cq::{CompletionQueue, WorkCompletion};
use crate::device::DmaBuffer;
use crate::error::{Error, PostError, Refused, Result};
use crate::pd::ProtectionDomain;
use crate::qp::{recv_prefix, write_recv_wqes, RecvWr, MAX_RECV_SGE, MAX_RECV_WR};
use crate::records::write_context;

/// Entries of an SRQ's event CQ: one event per arming, so a few are plenty.
const EVENT_CQ_ENTRIES: usize = 16;

/// Attributes of an SRQ (`struct ibv_srq_attr`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SrqAttr {
    /// Receive WQEs the ring holds.
    pub max_wr: u32,
    /// Scatter entries per receive WR.
    pub max_sge: u32,
    /// The limit as this driver last set it; 0 when disarmed (by the NIC when its event
    /// fires, seen here once the event was polled).
    pub srq_limit: u32,
}

/// An asynchronous event (`struct ibv_async_event`), from [`crate::Context::poll_async_event`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AsyncEvent {
    /// `IBV_EVENT_SRQ_LIMIT_REACHED`: a receive WQE taken from SRQ `srq_num` left fewer than
    /// its limit posted (`wqes_left`); the SRQ is disarmed until
    /// [`SharedReceiveQueue::arm_limit`] is called again.
    SrqLimitReached {
        /// The SRQ's number.
        srq_num: u32,
        /// Receive WQEs still posted when the NIC fired the event.
        wqes_left: u32,
    },
    /// `IBV_EVENT_CQ_ERR` (`ibv_async_event.element.cq`): CQ `cq_num` overran (the NIC found
    /// its ring full, `rnic_contract::regs::CQ_CI`): completions are lost from then on and the
    /// CQ takes none until it is destroyed (or resized).
    CqErr {
        /// The CQ's number ([`crate::CompletionQueue::cqn`]).
        cq_num: u32,
    },
    /// A QP-affiliated event (`ibv_async_event.element.qp`): `IBV_EVENT_QP_FATAL`,
    /// `QP_REQ_ERR`, `QP_ACCESS_ERR` (the QP is now in the error state: its WRs complete with
    /// `IBV_WC_WR_FLUSH_ERR`; reset it to use it again), `COMM_EST` or
    /// `QP_LAST_WQE_REACHED`, from the context's event queue (`rnic_contract::regs::ASYNC_EVENT_CQ`
    /// says what raises each).
    Qp {
        /// The event.
        event_type: crate::AsyncEventType,
        /// The QP's number ([`crate::QueuePair::qp_num`]).
        qp_num: u32,
    },
}

impl AsyncEvent {
    /// The `ibv_event_type` of the event.
    pub fn event_type(&self) -> crate::AsyncEventType {
        match self {
            Self::SrqLimitReached { .. } => crate::AsyncEventType::SrqLimitReached,
            Self::CqErr { .. } => crate::AsyncEventType::CqErr,
            Self::Qp { event_type, .. } => *event_type,
        }
    }
}

/// The part of an SRQ its QPs' CQs update: receive WRs posted and not yet completed.
#[derive(Debug, Default)]
pub(crate) struct SrqShared {
    pub(crate) outstanding: usize,
}

pub(crate) struct SrqInner {
    pub(crate) pd: ProtectionDomain,
    pub(crate) srqn: u32,
    pub(crate) ring: DmaBuffer,
    pub(crate) size: u32,
    pub(crate) log_stride: u8,
    pub(crate) max_sge: u32,
    pi: Cell<u64>,
    limit: Cell<u32>,
    pub(crate) shared: Rc<RefCell<SrqShared>>,
    /// The CQ its limit event goes to: the context's event queue (`event_cqn`), or, on a NIC
    /// without one (contract minor < 4), a CQ of its own (`events`).
    events: Option<CompletionQueue>,
    event_cqn: u32,
}

impl SrqInner {
    /// Writes the SRQ context: `init` zeroes the NIC's indices (creation).
    fn write(&self, limit: u32, init: bool) -> Result<()> {
        let mut r = [0u8; 64];
        srq_context::LIMIT.put(&mut r, limit.into());
        srq_context::EVENT_CQ.put(&mut r, self.event_cqn.into());
        srq_context::INIT.put(&mut r, init.into());
        write_context(&*self.pd.inner.ctx.dev, regs::cmd_op::WRITE_SRQ, self.srqn as u8, &r)
    }

    /// Polls one limit event of this SRQ from its own event CQ, if it has one.
    pub(crate) fn poll_event(&self) -> Result<Option<AsyncEvent>> {
        let Some(events) = &self.events else { return Ok(None) };
        let mut wc = [WorkCompletion::default()];
        while events.poll(&mut wc)? == 1 {
            let w = wc[0];
            if w.opcode.as_raw() == verbs::wc_opcode::ASYNC_EVENT
                && w.status.as_raw() == verbs::event_type::SRQ_LIMIT_REACHED
            {
                self.limit.set(0);
                return Ok(Some(AsyncEvent::SrqLimitReached { srq_num: w.qp_num, wqes_left: w.byte_len }));
            }
        }
        Ok(None)
    }
}

impl Drop for SrqInner {
    fn drop(&mut self) {
        // Disarm (the QPs that used the SRQ are gone: they kept it alive).
        let _ = self.write(0, true);
        self.pd.inner.ctx.tables.borrow_mut().free_qpn(self.srqn);
        crate::pd::count(&self.pd.inner.srqs, false);
    }
}

/// A shared receive queue (`struct ibv_srq`). `'mr` is the lifetime of the memory regions its
/// receive WRs use, as for [`crate::QueuePair`]. QPs built on it keep it alive.
pub struct SharedReceiveQueue<'mr> {
    pub(crate) inner: Rc<SrqInner>,
    _mr: PhantomData<Cell<&'mr ()>>,
}

impl std::fmt::Debug for SharedReceiveQueue<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedReceiveQueue").field("srqn", &self.inner.srqn).field("attr", &self.query()).finish()
    }
}

impl<'mr> SharedReceiveQueue<'mr> {
    /// Creates an SRQ of at least `max_wr` receive WQEs (rounded up to a power of two, at most
    /// [`MAX_RECV_WR`]) of up to `max_sge` scatter entries (at most [`MAX_RECV_SGE`]), disarmed
    /// (ibv_create_srq(3)). It takes a number from the NIC's QP numbers and a CQ for its limit
    /// event; its ring is zeroed, page-aligned DMA memory.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for sizes out of range; [`Error::NoMemory`] when no QP number,
    /// CQ or DMA memory is free; backend errors.
    pub(crate) fn new(pd: &ProtectionDomain, max_wr: u32, max_sge: u32) -> Result<Self> {
        if max_wr == 0 || max_wr > MAX_RECV_WR {
            return Err(Error::inval(format!("an SRQ needs 1..={MAX_RECV_WR} WRs, not {max_wr}")));
        }
        if max_sge > MAX_RECV_SGE {
            return Err(Error::NotSupported(format!(
                "max_sge {max_sge}: the NIC scatters into at most {MAX_RECV_SGE}"
            )));
        }
        let ctx = Rc::clone(&pd.inner.ctx);
        let size = max_wr.next_power_of_two();
        let log_stride = recv_wqe::log_stride_for(max_sge.max(1) as usize);
        let bytes = size as usize * recv_wqe::stride(log_stride);
        let ring = DmaBuffer::new(&ctx.dev, bytes, 4096)?;
        ring.write(0, &vec![0u8; bytes])?;
        let (events, event_cqn) = match &ctx.events {
            Some(q) => (None, q.cqn),
            None => {
                let cq = CompletionQueue::new(Rc::clone(&ctx), EVENT_CQ_ENTRIES, None)?;
                let cqn = cq.cqn();
                (Some(cq), cqn)
            }
        };
        let srqn = ctx.tables.borrow_mut().alloc_qpn()?;
        crate::pd::count(&pd.inner.srqs, true);
        let inner = SrqInner {
            pd: pd.clone(),
            srqn,
            ring,
            size,
            log_stride: log_stride as u8,
            max_sge: (recv_wqe::max_sge(log_stride) as u32).min(MAX_RECV_SGE),
            pi: Cell::new(0),
            limit: Cell::new(0),
            shared: Rc::new(RefCell::new(SrqShared::default())),
            events,
            event_cqn,
        };
        // (From here on, dropping `inner` disarms the SRQ and frees its number.)
        inner.write(0, true)?;
        let inner = Rc::new(inner);
        ctx.srqs.borrow_mut().push(Rc::downgrade(&inner));
        Ok(Self { inner, _mr: PhantomData })
    }

    /// Destroys the SRQ (`ibv_destroy_srq(3)`): disarms its limit and frees its ring and
    /// number.
    ///
    /// # Errors
    /// [`Refused`] with [`Error::Busy`] (EBUSY), the SRQ unchanged, while QPs (or QP builders)
    /// use it.
    pub fn destroy(self) -> std::result::Result<(), Refused<Self>> {
        let users = Rc::strong_count(&self.inner) - 1;
        if users > 0 {
            let msg = format!("SRQ {} is used by {users} QPs or QP builders", self.inner.srqn);
            return Err(Refused::busy(self, msg));
        }
        Ok(())
    }

    /// The SRQ number (in the NIC's QP-number space).
    pub fn srq_num(&self) -> u32 {
        self.inner.srqn
    }

    /// Receive WRs posted and not yet completed on any of its QPs.
    pub fn outstanding(&self) -> usize {
        self.inner.shared.borrow().outstanding
    }

    /// `ibv_query_srq(3)`.
    pub fn query(&self) -> SrqAttr {
        SrqAttr { max_wr: self.inner.size, max_sge: self.inner.max_sge, srq_limit: self.inner.limit.get() }
    }

    /// Arms the limit (`ibv_modify_srq(3)` with `IBV_SRQ_LIMIT`): once a receive WQE taken
    /// from the SRQ leaves fewer than `limit` posted, the NIC reports
    /// [`AsyncEvent::SrqLimitReached`] once and disarms; 0 disarms.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if `limit` exceeds the SRQ's size; backend errors.
    pub fn arm_limit(&self, limit: u32) -> Result<()> {
        if limit > self.inner.size {
            return Err(Error::inval(format!("SRQ limit {limit} exceeds its {} WRs", self.inner.size)));
        }
        self.inner.write(limit, false)?;
        self.inner.limit.set(limit);
        Ok(())
    }

    /// Posts receive WRs (`ibv_post_srq_recv(3)`): writes them into the ring, then rings
    /// `RQ_DOORBELL = srq_num << 16 | pi mod 2^16`. A slot is reused only after the receive it
    /// held completed (on whichever QP took it). As in ibverbs, the list is posted up to the
    /// first WR that cannot be ([`crate::QueuePair::post_recv`]).
    ///
    /// # Errors
    /// [`PostError`] at the first WR with more than `max_sge` entries or an entry over 2^31
    /// bytes ([`Error::InvalidArgument`]) or that finds the ring full ([`Error::NoMemory`]);
    /// backend errors.
    pub fn post_recv(&self, wrs: &[RecvWr<'mr>]) -> std::result::Result<(), PostError> {
        let inner = &self.inner;
        let free = inner.size as usize - self.outstanding();
        let what = format!("SRQ {}", inner.srqn);
        let (n, stop) = recv_prefix(wrs, inner.max_sge, free, inner.size, &what);
        let start = inner.pi.get();
        let stride = recv_wqe::stride(inner.log_stride.into());
        let (written, stop) = match write_recv_wqes(&inner.ring, stride, inner.size, inner.max_sge, start, &wrs[..n]) {
            Ok(()) => (n, stop),
            Err(e) => (e.bad_wr, Some(e)),
        };
        if written == 0 {
            return stop.map_or(Ok(()), Err);
        }
        let pi = start + written as u64;
        // The receive WQEs must be in memory before the NIC hears of them.
        fence(Ordering::SeqCst);
        let doorbell = regs::doorbell::word(inner.srqn, pi as u32);
        if let Err(error) = inner.pd.inner.ctx.dev.mmio_write32(regs::RQ_DOORBELL, doorbell) {
            return Err(PostError { bad_wr: 0, error });
        }
        inner.pi.set(pi);
        inner.shared.borrow_mut().outstanding += written;
        stop.map_or(Ok(()), Err)
    }

    /// Posts one receive WR; see [`post_recv`](Self::post_recv).
    ///
    /// # Errors
    /// As [`post_recv`](Self::post_recv).
    pub fn post_recv_one(&self, wr: RecvWr<'mr>) -> Result<()> {
        self.post_recv(std::slice::from_ref(&wr)).map_err(Error::from)
    }
}

/// Notes a limit event of SRQ `srqn` that came through the context's event queue: the NIC
/// disarmed it.
pub(crate) fn disarmed(srqs: &RefCell<Vec<Weak<SrqInner>>>, srqn: u32) {
    if let Some(s) = srqs.borrow().iter().filter_map(Weak::upgrade).find(|s| s.srqn == srqn) {
        s.limit.set(0);
    }
}

/// Polls the limit events of the SRQs still alive in `srqs` (dropping the dead ones).
pub(crate) fn poll_async_event(srqs: &RefCell<Vec<Weak<SrqInner>>>) -> Result<Option<AsyncEvent>> {
    let live: Vec<Rc<SrqInner>> = {
        let mut v = srqs.borrow_mut();
        v.retain(|w| w.strong_count() > 0);
        v.iter().filter_map(Weak::upgrade).collect()
    };
    for s in live {
        if let Some(e) = s.poll_event()? {
            return Ok(Some(e));
        }
    }
    Ok(None)
}
