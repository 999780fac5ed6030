//! `enum ibv_event_type` (ibv_get_async_event(3)): the kinds of asynchronous events, with
//! `Display` giving exactly `ibv_event_type_str(3)`'s text (rdma-core 44), and the device's
//! asynchronous event queue.
//!
//! The NIC raises [`AsyncEventType::SrqLimitReached`] on each SRQ's event CQ and the
//! QP-affiliated events ([`AsyncEventType::QpFatal`], [`AsyncEventType::QpReqErr`],
//! [`AsyncEventType::QpAccessErr`], [`AsyncEventType::CommEst`],
//! [`AsyncEventType::QpLastWqeReached`]; see `rnic_contract::regs::ASYNC_EVENT_CQ` for what
//! raises each) and [`AsyncEventType::CqErr`] (a CQ overran, `rnic_contract::regs::CQ_CI`) on
//! the context's event queue, a CQ the driver takes when it opens the device;
//! [`crate::Context::poll_async_event`] reads both. The port and device events are not
//! raised.
use std::cell::Cell;
use std::fmt;
use std::rc::Rc;
use std::sync::atomic::{fence, Ordering};

use rnic_contract::{cqe, regs, regs::cmd_op, verbs};

use crate::device::{Device, DmaBuffer};
use crate::error::Result;
use crate::records::{owner_for, write_context, CqContext, Cqe};
use crate::srq::AsyncEvent;

/// log2 of the event queue's entries: each QP raises each event at most once per connection
/// (at most 3 per QP between two connections: COMM_EST, an error, LAST_WQE_REACHED), and the
/// NIC has 64 QPs, so 256 entries are not overrun by a reader that polls between connections.
const EVENT_QUEUE_LOG_SIZE: u8 = 8;

/// The device's asynchronous event queue: a CQ ring of [`rnic_contract::cqe`] entries that
/// the NIC writes event CQEs to (`rnic_contract::regs::ASYNC_EVENT_CQ`), with this driver's
/// consumer index. It holds the device (not the context), so the context owns it without a
/// reference cycle.
pub(crate) struct EventQueue {
    dev: Rc<dyn Device>,
    pub(crate) cqn: u32,
    /// The MSI-X vector in its CQ context, when the backend delivers interrupts: arming the
    /// CQ ([`EventQueue::arm`]) makes the next event CQE fire it.
    pub(crate) vector: Option<u8>,
    ring: DmaBuffer,
    ci: Cell<u64>,
    /// The consumer index the NIC was last told (`CQ_CI` or `CQ_ARM`).
    reported: Cell<u64>,
}

/// Event CQEs consumed between two `CQ_CI` reports: half the ring, so the NIC, which judges
/// the ring full by the reported index, never drops an event a reader polling between
/// connections would take (see [`EVENT_QUEUE_LOG_SIZE`]).
const EVENT_QUEUE_REPORT: u64 = 1 << (EVENT_QUEUE_LOG_SIZE - 1);

impl EventQueue {
    /// Zeroes a ring, commits it as CQ `cqn` (WRITE_CQ) with interrupt vector `vector` and
    /// points `ASYNC_EVENT_CQ` at it with the enable bit.
    ///
    /// # Errors
    /// DMA allocation and backend MMIO errors.
    pub(crate) fn new(dev: &Rc<dyn Device>, cqn: u32, vector: Option<u8>) -> Result<Self> {
        let bytes = cqe::BYTES << EVENT_QUEUE_LOG_SIZE;
        let ring = DmaBuffer::new(dev, bytes, 4096)?;
        ring.write(0, &vec![0u8; bytes])?;
        let rec =
            CqContext { valid: true, log_size: EVENT_QUEUE_LOG_SIZE, vector: vector.unwrap_or(0), base: ring.iova().0 }
                .pack();
        let q = Self { dev: Rc::clone(dev), cqn, vector, ring, ci: Cell::new(0), reported: Cell::new(0) };
        write_context(&**dev, cmd_op::WRITE_CQ, cqn as u8, &rec)?;
        dev.mmio_write32(regs::ASYNC_EVENT_CQ, regs::async_event_cq::ENABLE | cqn)?;
        Ok(q)
    }

    /// Takes the next event CQE, if the NIC wrote one: `ibv_event_type` and QP number as an
    /// [`AsyncEvent`] (an SRQ limit event here names the SRQ, a CQ error the CQ). CQEs that
    /// are not events (none are written here) and event types ibverbs does not name are
    /// skipped. Every [`EVENT_QUEUE_REPORT`] events it tells the NIC its consumer index
    /// (`CQ_CI`), so the NIC sees the ring's room.
    ///
    /// # Errors
    /// Backend errors reading the ring or writing `CQ_CI`.
    pub(crate) fn poll(&self) -> Result<Option<AsyncEvent>> {
        let ci = self.ci.get();
        if ci - self.reported.get() >= EVENT_QUEUE_REPORT {
            fence(Ordering::SeqCst);
            let word = self.cqn << regs::cq_arm::CQN_SHIFT | (ci & ((1 << regs::cq_arm::CI_BITS) - 1)) as u32;
            self.dev.mmio_write32(regs::CQ_CI, word)?;
            self.reported.set(ci);
        }
        loop {
            let ci = self.ci.get();
            let off = ((ci & ((1 << EVENT_QUEUE_LOG_SIZE) - 1)) as usize) * cqe::BYTES;
            // Owner byte first; the rest only after it says the NIC is done with the entry.
            let mut owner = [0u8; 1];
            self.ring.read(off + cqe::BYTES - 1, &mut owner)?;
            if (owner[0] & 1 == 1) != owner_for(ci, EVENT_QUEUE_LOG_SIZE) {
                return Ok(None);
            }
            fence(Ordering::Acquire);
            let mut b = [0u8; cqe::BYTES];
            self.ring.read(off, &mut b)?;
            self.ci.set(ci + 1);
            let c = Cqe::unpack(&b);
            if c.opcode != verbs::wc_opcode::ASYNC_EVENT {
                continue;
            }
            match AsyncEventType::from_raw(c.status.into()) {
                Some(AsyncEventType::SrqLimitReached) => {
                    return Ok(Some(AsyncEvent::SrqLimitReached { srq_num: c.qp_num, wqes_left: c.byte_len }))
                }
                Some(AsyncEventType::CqErr) => return Ok(Some(AsyncEvent::CqErr { cq_num: c.qp_num })),
                Some(event_type) => return Ok(Some(AsyncEvent::Qp { event_type, qp_num: c.qp_num })),
                None => continue,
            }
        }
    }
}

impl EventQueue {
    /// Arms the queue's CQ for its next event CQE ([`regs::CQ_ARM`] with the consumer index):
    /// if an event is already there unpolled, the NIC fires the vector at once.
    ///
    /// # Errors
    /// Backend MMIO errors.
    pub(crate) fn arm(&self) -> Result<()> {
        let ci = (self.ci.get() & ((1 << regs::cq_arm::CI_BITS) - 1)) as u32;
        self.dev.mmio_write32(regs::CQ_ARM, self.cqn << regs::cq_arm::CQN_SHIFT | ci)?;
        // The arm told the NIC the consumer index too.
        self.reported.set(self.ci.get());
        Ok(())
    }
}

impl Drop for EventQueue {
    fn drop(&mut self) {
        // Stop the events, then invalidate the CQ before its ring is freed.
        let _ = self.dev.mmio_write32(regs::ASYNC_EVENT_CQ, 0);
        let _ = write_context(&*self.dev, cmd_op::WRITE_CQ, self.cqn as u8, &CqContext::default().pack());
    }
}

/// `enum ibv_event_type`, with the ibverbs numbering.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum AsyncEventType {
    /// 0 `IBV_EVENT_CQ_ERR`: a CQ overran.
    CqErr = 0,
    /// 1 `IBV_EVENT_QP_FATAL`.
    QpFatal = 1,
    /// 2 `IBV_EVENT_QP_REQ_ERR`.
    QpReqErr = 2,
    /// 3 `IBV_EVENT_QP_ACCESS_ERR`.
    QpAccessErr = 3,
    /// 4 `IBV_EVENT_COMM_EST`.
    CommEst = 4,
    /// 5 `IBV_EVENT_SQ_DRAINED`.
    SqDrained = 5,
    /// 6 `IBV_EVENT_PATH_MIG`.
    PathMig = 6,
    /// 7 `IBV_EVENT_PATH_MIG_ERR`.
    PathMigErr = 7,
    /// 8 `IBV_EVENT_DEVICE_FATAL`.
    DeviceFatal = 8,
    /// 9 `IBV_EVENT_PORT_ACTIVE`.
    PortActive = 9,
    /// 10 `IBV_EVENT_PORT_ERR`.
    PortErr = 10,
    /// 11 `IBV_EVENT_LID_CHANGE`.
    LidChange = 11,
    /// 12 `IBV_EVENT_PKEY_CHANGE`.
    PkeyChange = 12,
    /// 13 `IBV_EVENT_SM_CHANGE`.
    SmChange = 13,
    /// 14 `IBV_EVENT_SRQ_ERR`.
    SrqErr = 14,
    /// 15 `IBV_EVENT_SRQ_LIMIT_REACHED`.
    SrqLimitReached = 15,
    /// 16 `IBV_EVENT_QP_LAST_WQE_REACHED`.
    QpLastWqeReached = 16,
    /// 17 `IBV_EVENT_CLIENT_REREGISTER`.
    ClientReregister = 17,
    /// 18 `IBV_EVENT_GID_CHANGE`.
    GidChange = 18,
    /// 19 `IBV_EVENT_WQ_FATAL`.
    WqFatal = 19,
}

const ALL: [(AsyncEventType, &str); 20] = [
    (AsyncEventType::CqErr, "CQ error"),
    (AsyncEventType::QpFatal, "local work queue catastrophic error"),
    (AsyncEventType::QpReqErr, "invalid request local work queue error"),
    (AsyncEventType::QpAccessErr, "local access violation work queue error"),
    (AsyncEventType::CommEst, "communication established"),
    (AsyncEventType::SqDrained, "send queue drained"),
    (AsyncEventType::PathMig, "path migrated"),
    (AsyncEventType::PathMigErr, "path migration request error"),
    (AsyncEventType::DeviceFatal, "local catastrophic error"),
    (AsyncEventType::PortActive, "port active"),
    (AsyncEventType::PortErr, "port error"),
    (AsyncEventType::LidChange, "LID change"),
    (AsyncEventType::PkeyChange, "P_Key change"),
    (AsyncEventType::SmChange, "SM change"),
    (AsyncEventType::SrqErr, "SRQ catastrophic error"),
    (AsyncEventType::SrqLimitReached, "SRQ limit reached"),
    (AsyncEventType::QpLastWqeReached, "last WQE reached"),
    (AsyncEventType::ClientReregister, "client reregistration"),
    (AsyncEventType::GidChange, "GID table change"),
    (AsyncEventType::WqFatal, "WQ fatal"),
];

impl AsyncEventType {
    /// The event type of ibverbs number `v`, if ibverbs names one.
    pub fn from_raw(v: u32) -> Option<Self> {
        ALL.get(v as usize).map(|e| e.0)
    }

    /// `ibv_event_type_str(3)` of ibverbs number `v` ("unknown" for numbers it does not name).
    pub fn str_of(v: u32) -> &'static str {
        ALL.get(v as usize).map_or("unknown", |e| e.1)
    }
}

impl fmt::Display for AsyncEventType {
    /// Exactly `ibv_event_type_str(3)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(Self::str_of(*self as u32))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_names_line_up() {
        for (i, (t, _)) in ALL.iter().enumerate() {
            assert_eq!(*t as u32, i as u32);
            assert_eq!(AsyncEventType::from_raw(i as u32), Some(*t));
        }
        assert_eq!(AsyncEventType::SrqLimitReached.to_string(), "SRQ limit reached");
        assert_eq!(AsyncEventType::str_of(20), "unknown");
        assert_eq!(AsyncEventType::CqErr as u32, u32::from(rnic_contract::verbs::event_type::CQ_ERR));
        assert_eq!(AsyncEventType::CqErr.to_string(), "CQ error");
        assert_eq!(
            AsyncEventType::SrqLimitReached as u32,
            u32::from(rnic_contract::verbs::event_type::SRQ_LIMIT_REACHED)
        );
    }
}
