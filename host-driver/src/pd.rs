//! [`ProtectionDomain`] (`ibv_alloc_pd(3)`): the scope in which keys are valid.
use std::rc::Rc;

use crate::context::CtxInner;
use crate::cq::CompletionQueue;
use crate::error::Result;
use crate::mr::{AccessFlags, MemoryRegion};
use crate::qp::QpBuilder;
use crate::srq::SharedReceiveQueue;

pub(crate) struct PdInner {
    pub(crate) ctx: Rc<CtxInner>,
    pub(crate) pdn: u32,
}

/// A protection domain. Memory regions and QPs belong to one; the NIC accepts a key only for a
/// QP of the same PD (IBTA Vol 1 10.2.3).
///
/// Cheap to clone; MRs and QPs keep their PD alive, so there is no `EBUSY` on deallocation: the
/// PD number is simply never reused.
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
        Self { inner: Rc::new(PdInner { ctx, pdn }) }
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
