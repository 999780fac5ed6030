//! A memory region that owns its buffer.
use std::ops::Range;

use rnic::{AccessFlags, MemoryRegion, ProtectionDomain, RemoteBuffer, Sge};

use crate::error::Result;

/// A zeroed buffer of its own, registered (`ibv_reg_mr(3)`) for as long as this lives; dropping
/// it deregisters (`ibv_dereg_mr(3)`) and then frees the buffer.
///
/// Unlike [`MemoryRegion`], which borrows the caller's buffer, this can live in a struct next to
/// the QP that uses it (what a connection object needs). The CPU reaches the bytes only through
/// [`MemoryRegion::read_at`] / [`MemoryRegion::write_at`] (via `Deref`), as with any MR.
pub struct OwnedMr {
    // Declared before the buffer: dropped (deregistered, unmapped) first.
    mr: MemoryRegion<'static>,
    _buf: Vec<u8>,
}

impl std::fmt::Debug for OwnedMr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.mr.fmt(f)
    }
}

impl OwnedMr {
    /// Allocates `len` zeroed bytes and registers them in `pd` with `access`.
    ///
    /// # Errors
    /// As `ibv_reg_mr(3)` ([`MemoryRegion::register`]): EINVAL for `len` 0 or REMOTE_WRITE
    /// without LOCAL_WRITE, ENOMEM when the NIC's key table is full.
    pub fn new(pd: &ProtectionDomain, len: usize, access: AccessFlags) -> Result<Self> {
        let mut buf = vec![0u8; len];
        // SAFETY: the Vec's heap block stays allocated and unmoved until `_buf` drops, which is
        // after `mr` (field order), i.e. after deregistration unmapped it; nothing takes a Rust
        // reference to the bytes while it is registered (the Vec is private and never read).
        let mr = unsafe { MemoryRegion::register_raw(pd, buf.as_mut_ptr(), len, access)? };
        Ok(Self { mr, _buf: buf })
    }

    /// An SGE for bytes `range` of the region (`struct ibv_sge`: address, length, lkey) that a
    /// `QueuePair<'static>` accepts. The region must outlive the work requests that use it
    /// (drop the QP first); if it does not, the NIC finds the key invalid and the buffer
    /// unmapped, so it never reaches freed memory.
    ///
    /// # Errors
    /// EINVAL if `range` is outside the region.
    pub fn sge(&self, range: Range<usize>) -> Result<Sge<'static>> {
        let s = self.mr.sge(range)?;
        Ok(Sge::raw(s.addr, s.length, s.lkey))
    }

    /// Deregisters the region (`ibv_dereg_mr(3)`) and reports the error dropping would hide,
    /// then frees the buffer.
    ///
    /// # Errors
    /// The invalidation of the key-table entry failed (the buffer is unmapped either way).
    pub fn deregister_owned(self) -> Result<()> {
        let OwnedMr { mr, _buf } = self;
        mr.deregister()?;
        Ok(())
    }

    /// The region as a peer addresses it: virtual address, rkey, length in bytes.
    pub fn remote_buffer(&self) -> RemoteBuffer {
        RemoteBuffer { addr: self.mr.addr(), rkey: self.mr.rkey(), len: self.mr.len() as u64 }
    }
}

impl std::ops::Deref for OwnedMr {
    type Target = MemoryRegion<'static>;

    fn deref(&self) -> &Self::Target {
        &self.mr
    }
}
