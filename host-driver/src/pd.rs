//! [`ProtectionDomain`] (`ibv_alloc_pd(3)`): the scope in which keys are valid.
use std::cell::Cell;
use std::rc::Rc;

use crate::context::CtxInner;
use crate::cq::CompletionQueue;
use crate::error::{Refused, Result};
use crate::mr::{AccessFlags, MemoryRegion};
use crate::qp::QpBuilder;
use crate::srq::SharedReceiveQueue;

pub(crate) struct PdInner {
    pub(crate) ctx: Rc<CtxInner>,
    pub(crate) pdn: u32,
    /// Memory regions, QPs and SRQs of this PD alive now (for `dealloc`'s EBUSY).
    pub(crate) mrs: Cell<usize>,
    pub(crate) qps: Cell<usize>,
    pub(crate) srqs: Cell<usize>,
}

/// Adds `d` (±1) to a use count.
pub(crate) fn count(c: &Cell<usize>, up: bool) {
    c.set(if up { c.get() + 1 } else { c.get().saturating_sub(1) });
}

/// A protection domain. Memory regions and QPs belong to one; the NIC accepts a key only for a
/// QP of the same PD (IBTA Vol 1 10.2.3).
///
/// Cheap to clone; MRs, QPs and SRQs keep their PD alive. [`dealloc`](Self::dealloc) is the
/// explicit `ibv_dealloc_pd(3)`, refused with `EBUSY` while any of them exists. PD numbers are
/// never reused.
#[derive(Clone)]
pub struct ProtectionDomain {
    pub(crate) inner: Rc<PdInner>,
}

impl std::fmt::Debug for ProtectionDomain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProtectionDomain").field("pdn", &self.inner.pdn).finish()
    }
}

impl ProtectionDomain {
    pub(crate) fn new(ctx: Rc<CtxInner>, pdn: u32) -> Self {
        let z = || Cell::new(0);
        Self { inner: Rc::new(PdInner { ctx, pdn, mrs: z(), qps: z(), srqs: z() }) }
    }

    /// Deallocates the PD (`ibv_dealloc_pd(3)`).
    ///
    /// # Errors
    /// [`Refused`] with [`crate::Error::Busy`] (EBUSY), the PD unchanged, while memory
    /// regions, QPs or SRQs of it exist (ibverbs' rule), or while other handles of it (clones,
    /// a QP builder) are alive.
    pub fn dealloc(self) -> std::result::Result<(), Refused<Self>> {
        let i = &self.inner;
        let (mrs, qps, srqs) = (i.mrs.get(), i.qps.get(), i.srqs.get());
        if mrs + qps + srqs > 0 {
            let msg = format!("PD {} still has {mrs} memory regions, {qps} QPs and {srqs} SRQs", i.pdn);
            return Err(Refused::busy(self, msg));
        }
        if Rc::strong_count(i) > 1 {
            let msg = format!("PD {} has {} other handles (clones or QP builders)", i.pdn, Rc::strong_count(i) - 1);
            return Err(Refused::busy(self, msg));
        }
        Ok(())
    }

    /// The PD number written into MR entries and QP contexts (24 bits).
    pub fn pdn(&self) -> u32 {
        self.inner.pdn
    }

    /// Registers `buf` (`ibv_reg_mr(3)`); see [`MemoryRegion::register`].
    ///
    /// # Errors
    /// As [`MemoryRegion::register`].
    pub fn register<'buf>(&self, buf: &'buf mut [u8], access: AccessFlags) -> Result<MemoryRegion<'buf>> {
        MemoryRegion::register(self, buf, access)
    }

    /// Starts building an RC queue pair whose send completions go to `send_cq`
    /// (`ibv_create_qp(3)`); see [`QpBuilder`].
    pub fn create_qp(&self, send_cq: &CompletionQueue) -> QpBuilder {
        QpBuilder::new(self.clone(), send_cq)
    }

    /// Creates an address handle for UD SENDs (`ibv_create_ah(3)`): the peer's MAC and IPv4
    /// address. It holds no NIC resource: each UD work request carries its address.
    ///
    /// # Errors
    /// [`crate::Error::InvalidArgument`] for a multicast or broadcast MAC, or an unspecified,
    /// broadcast or multicast IPv4 address (multicast UD is not supported).
    pub fn create_ah(&self, av: crate::qp::AddressVector) -> Result<crate::wr::AddressHandle> {
        if !av.is_unicast() {
            return Err(crate::Error::inval(format!(
                "address handle {} / {} is not a unicast peer",
                av.dest_mac, av.dest_ip
            )));
        }
        Ok(crate::wr::AddressHandle { av, pdn: self.inner.pdn })
    }

    /// Creates a shared receive queue (`ibv_create_srq(3)`) of at least `max_wr` receive WRs
    /// of up to `max_sge` scatter entries; see [`SharedReceiveQueue`].
    ///
    /// # Errors
    /// As [`SharedReceiveQueue`]'s creation: sizes out of range (`EINVAL`, `EOPNOTSUPP`), no QP
    /// number, CQ or DMA memory (`ENOMEM`), backend errors.
    pub fn create_srq<'mr>(&self, max_wr: u32, max_sge: u32) -> Result<SharedReceiveQueue<'mr>> {
        SharedReceiveQueue::new(self, max_wr, max_sge)
    }
}
