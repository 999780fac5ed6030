//! [`MemoryRegion`] (`ibv_reg_mr(3)`, IBTA Vol 1 10.6): a caller's buffer registered for DMA,
//! with the key the NIC checks.
use std::marker::PhantomData;
use std::ops::Range;
use std::ptr::NonNull;

use rnic_contract::regs::cmd_op;

use crate::device::Iova;
use crate::error::{Error, Result};
use crate::pd::ProtectionDomain;
use crate::qp::{RemoteAddr, Sge};
use crate::records::{write_context, MrEntry};

bitflags::bitflags! {
    /// `enum ibv_access_flags` (the bits this NIC implements), for memory regions and for a QP's
    /// `qp_access_flags`.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
    pub struct AccessFlags: u32 {
        /// `IBV_ACCESS_LOCAL_WRITE`: the NIC may write the region for local operations (RDMA
        /// READ responses, receives).
        const LOCAL_WRITE = 1;
        /// `IBV_ACCESS_REMOTE_WRITE`: peers may RDMA WRITE into the region.
        const REMOTE_WRITE = 2;
        /// `IBV_ACCESS_REMOTE_READ`: peers may RDMA READ the region.
        const REMOTE_READ = 4;
        /// `IBV_ACCESS_REMOTE_ATOMIC`: peers may perform atomics on the region.
        const REMOTE_ATOMIC = 8;
    }
}

impl AccessFlags {
    /// Checks the rule of ibv_reg_mr(3) / IBTA 10.6.3.1: REMOTE_WRITE or REMOTE_ATOMIC requires
    /// LOCAL_WRITE.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the missing flag.
    pub fn validate_for_mr(self) -> Result<()> {
        if self.intersects(Self::REMOTE_WRITE | Self::REMOTE_ATOMIC) && !self.contains(Self::LOCAL_WRITE) {
            return Err(Error::inval(format!(
                "access {self:?}: REMOTE_WRITE and REMOTE_ATOMIC require LOCAL_WRITE (ibv_reg_mr(3))"
            )));
        }
        Ok(())
    }
}

/// An lkey/rkey: `index << 8 | tag` (see [`rnic_contract::mr_entry`]).
pub fn make_key(index: u8, tag: u8) -> u32 {
    rnic_contract::mr_entry::key::word(u32::from(index), tag)
}

/// A registered memory region.
///
/// It mutably borrows the caller's buffer for `'buf`: while the MR lives, the NIC may read and
/// write the buffer by DMA and only the MR's [`read_at`](Self::read_at) /
/// [`write_at`](Self::write_at) copies reach it from the CPU. QPs that post work requests on the
/// MR borrow it (`QueuePair<'mr>`), so it cannot be dropped while a work request may still use
/// it. Dropping it deregisters it (`ibv_dereg_mr(3)`): the key-table entry is invalidated
/// (VALID = 0) and the buffer unmapped, after which the NIC can no longer reach it.
///
/// The region's virtual address ([`addr`](Self::addr)) is the buffer's address in this process,
/// as in ibverbs: SGEs and RETHs name bytes by it, and the NIC translates it to the IOVA.
pub struct MemoryRegion<'buf> {
    pd: ProtectionDomain,
    ptr: NonNull<u8>,
    len: usize,
    iova: Iova,
    index: u8,
    tag: u8,
    access: AccessFlags,
    registered: bool,
    _buf: PhantomData<&'buf mut [u8]>,
}

impl std::fmt::Debug for MemoryRegion<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryRegion")
            .field("addr", &format_args!("{:#x}", self.addr()))
            .field("len", &self.len)
            .field("iova", &self.iova)
            .field("lkey", &format_args!("{:#x}", self.lkey()))
            .field("access", &self.access)
            .finish()
    }
}

impl<'buf> MemoryRegion<'buf> {
    /// Registers `buf` in `pd` with `access` (`ibv_reg_mr(3)`): maps it for DMA at a contiguous
    /// IOVA and writes its key-table entry (WRITE_MR). The slot's tag is bumped on every
    /// registration, so keys of an earlier registration of the slot no longer match.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an empty buffer or REMOTE_WRITE/REMOTE_ATOMIC without
    /// LOCAL_WRITE; [`Error::NoMemory`] when the key table or IOVA space is full; backend errors.
    pub fn register(pd: &ProtectionDomain, buf: &'buf mut [u8], access: AccessFlags) -> Result<Self> {
        access.validate_for_mr()?;
        if buf.is_empty() {
            return Err(Error::inval("cannot register an empty buffer"));
        }
        let ctx = &pd.inner.ctx;
        let (index, tag) = ctx.tables.borrow_mut().alloc_mr()?;
        let len = buf.len();
        let ptr = NonNull::from(&mut *buf).cast::<u8>();
        // SAFETY: `buf` is mutably borrowed for `'buf` by the returned MR (PhantomData), so it
        // stays allocated and no other reference to it exists; the MR unmaps it in `deregister`
        // / `drop`, before the borrow ends (and aborts if that fails, see `release`). CPU access
        // goes only through the device's copies in `read_at` / `write_at`.
        let iova = match unsafe { ctx.dev.map_user(ptr.as_ptr(), len) } {
            Ok(i) => i,
            Err(e) => {
                ctx.tables.borrow_mut().free_mr(index);
                return Err(e);
            }
        };
        let entry = MrEntry {
            valid: true,
            access: (access.bits() & 0xF) as u8,
            tag,
            pd: pd.pdn(),
            va: ptr.as_ptr() as u64,
            length: len as u64,
            iova: iova.0,
        };
        if let Err(e) = write_context(&*ctx.dev, cmd_op::WRITE_MR, index, &entry.pack()) {
            let _ = write_context(&*ctx.dev, cmd_op::WRITE_MR, index, &MrEntry::default().pack());
            if ctx.dev.unmap(iova).is_err() {
                abort_mapped();
            }
            ctx.tables.borrow_mut().free_mr(index);
            return Err(e);
        }
        crate::pd::count(&pd.inner.mrs, true);
        Ok(Self { pd: pd.clone(), ptr, len, iova, index, tag, access, registered: true, _buf: PhantomData })
    }

    /// Registers `len` bytes at `ptr` (`ibv_reg_mr(3)` as C calls it): as
    /// [`register`](Self::register), for memory the Rust borrow checker does not see (the
    /// verbs C ABI, `librnic`).
    ///
    /// # Errors
    /// As [`register`](Self::register); [`Error::InvalidArgument`] for a null `ptr`.
    ///
    /// # Safety
    /// `ptr[..len]` must stay allocated until the region is deregistered (dropped), and while
    /// it is registered the NIC may write it at any time the device makes progress: the caller
    /// must not hold Rust references to it across verbs calls.
    pub unsafe fn register_raw(
        pd: &ProtectionDomain,
        ptr: *mut u8,
        len: usize,
        access: AccessFlags,
    ) -> Result<MemoryRegion<'static>> {
        if ptr.is_null() {
            return Err(Error::inval("cannot register a null address"));
        }
        // SAFETY: the caller promises what `register` gets from the borrow: `ptr[..len]`
        // stays valid and unaliased by references until the region goes.
        let buf: &'static mut [u8] = unsafe { std::slice::from_raw_parts_mut(ptr, len) };
        MemoryRegion::register(pd, buf, access)
    }

    /// Changes the region's protection domain and/or access in place (`ibv_rereg_mr(3)` with
    /// `IBV_REREG_MR_CHANGE_PD` / `IBV_REREG_MR_CHANGE_ACCESS`): one WRITE_MR of the same
    /// key-table entry, so the NIC switches atomically and the lkey/rkey stay the same (as rxe
    /// and mlx5 keep them).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an access combination ibv_reg_mr(3) refuses or a PD of
    /// another context; backend errors (then nothing changed).
    pub fn rereg(&mut self, pd: Option<&ProtectionDomain>, access: Option<AccessFlags>) -> Result<()> {
        let new_pd = pd.unwrap_or(&self.pd).clone();
        let access = access.unwrap_or(self.access);
        access.validate_for_mr()?;
        if !std::rc::Rc::ptr_eq(&new_pd.inner.ctx, &self.pd.inner.ctx) {
            return Err(Error::inval("the new protection domain belongs to another context"));
        }
        self.write_entry(&new_pd, access, self.ptr.as_ptr() as u64, self.len, self.iova)?;
        crate::pd::count(&self.pd.inner.mrs, false);
        crate::pd::count(&new_pd.inner.mrs, true);
        self.pd = new_pd;
        self.access = access;
        Ok(())
    }

    /// Moves the region to `len` bytes at `ptr` (`ibv_rereg_mr(3)` with
    /// `IBV_REREG_MR_CHANGE_TRANSLATION`), optionally with new `access`: maps the new buffer,
    /// rewrites the key-table entry (same lkey/rkey), then unmaps the old one. Work requests
    /// still using the old addresses fail their key checks.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a null or empty buffer or refused access; backend
    /// errors (then the region still describes the old buffer).
    ///
    /// # Safety
    /// As [`register_raw`](Self::register_raw) for the new buffer. The old buffer is released
    /// on success.
    pub unsafe fn rereg_translation_raw(
        &mut self,
        ptr: *mut u8,
        len: usize,
        access: Option<AccessFlags>,
    ) -> Result<()> {
        let access = access.unwrap_or(self.access);
        access.validate_for_mr()?;
        let Some(new_ptr) = NonNull::new(ptr) else {
            return Err(Error::inval("cannot register a null address"));
        };
        if len == 0 {
            return Err(Error::inval("cannot register an empty buffer"));
        }
        let ctx = std::rc::Rc::clone(&self.pd.inner.ctx);
        // SAFETY: forwarded from our caller.
        let iova = unsafe { ctx.dev.map_user(ptr, len) }?;
        let pd = self.pd.clone();
        if let Err(e) = self.write_entry(&pd, access, ptr as u64, len, iova) {
            if ctx.dev.unmap(iova).is_err() {
                abort_mapped();
            }
            return Err(e);
        }
        if ctx.dev.unmap(self.iova).is_err() {
            abort_mapped();
        }
        self.ptr = new_ptr;
        self.len = len;
        self.iova = iova;
        self.access = access;
        Ok(())
    }

    /// Moves the region to `buf` (safe form of
    /// [`rereg_translation_raw`](Self::rereg_translation_raw)), keeping its keys.
    ///
    /// # Errors
    /// As [`rereg_translation_raw`](Self::rereg_translation_raw), with the region returned
    /// unchanged in the [`crate::Refused`].
    pub fn rereg_buffer<'b>(
        mut self,
        buf: &'b mut [u8],
        access: Option<AccessFlags>,
    ) -> std::result::Result<MemoryRegion<'b>, crate::Refused<Self>> {
        // SAFETY: `buf` is borrowed for 'b by the region returned.
        if let Err(error) = unsafe { self.rereg_translation_raw(buf.as_mut_ptr(), buf.len(), access) } {
            return Err(crate::Refused { object: self, error });
        }
        self.registered = false;
        Ok(MemoryRegion {
            pd: self.pd.clone(),
            ptr: self.ptr,
            len: self.len,
            iova: self.iova,
            index: self.index,
            tag: self.tag,
            access: self.access,
            registered: true,
            _buf: PhantomData,
        })
    }

    fn write_entry(&self, pd: &ProtectionDomain, access: AccessFlags, va: u64, len: usize, iova: Iova) -> Result<()> {
        let entry = MrEntry {
            valid: true,
            access: (access.bits() & 0xF) as u8,
            tag: self.tag,
            pd: pd.pdn(),
            va,
            length: len as u64,
            iova: iova.0,
        };
        write_context(&*pd.inner.ctx.dev, cmd_op::WRITE_MR, self.index, &entry.pack())
    }

    /// Local key, for SGEs: `index << 8 | tag`.
    pub fn lkey(&self) -> u32 {
        make_key(self.index, self.tag)
    }

    /// Remote key, for peers' RETHs (the same value as the lkey).
    pub fn rkey(&self) -> u32 {
        self.lkey()
    }

    /// Virtual address of the first byte (the buffer's address in this process).
    pub fn addr(&self) -> u64 {
        self.ptr.as_ptr() as u64
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always false: empty buffers cannot be registered.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Where the buffer is mapped for DMA.
    pub fn iova(&self) -> Iova {
        self.iova
    }

    /// The access granted.
    pub fn access(&self) -> AccessFlags {
        self.access
    }

    /// The protection domain.
    pub fn pd(&self) -> &ProtectionDomain {
        &self.pd
    }

    fn check(&self, offset: usize, len: usize) -> Result<()> {
        match offset.checked_add(len) {
            Some(end) if end <= self.len => Ok(()),
            _ => Err(Error::inval(format!(
                "range at offset {offset}, {len} bytes, is outside the {}-byte memory region",
                self.len
            ))),
        }
    }

    /// A scatter/gather element for bytes `range` of the region (lkey, virtual address,
    /// length), borrowing the MR for as long as the SGE (and the QP it is posted on) lives.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if `range` is not inside the region or longer than 2^31 bytes
    /// (the IBTA message size limit).
    pub fn sge(&self, range: Range<usize>) -> Result<Sge<'_>> {
        if range.start > range.end {
            return Err(Error::inval(format!("SGE range {range:?} is reversed")));
        }
        self.check(range.start, range.end - range.start)?;
        let len = u32::try_from(range.end - range.start)
            .ok()
            .filter(|&l| l <= 1 << 31)
            .ok_or_else(|| Error::inval("an SGE covers at most 2^31 bytes"))?;
        Ok(Sge::from_parts(self.addr() + range.start as u64, len, self.lkey()))
    }

    /// The remote address of byte `offset` of the region with its rkey, as a peer would put
    /// it in a RETH.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if `offset > len`.
    pub fn remote_addr(&self, offset: usize) -> Result<RemoteAddr> {
        self.check(offset, 0)?;
        Ok(RemoteAddr { addr: self.addr() + offset as u64, rkey: self.rkey() })
    }

    /// Copies `out.len()` bytes at `offset` out of the buffer. Bytes the NIC is writing at the
    /// same time may be old or new (as with any DMA buffer). The copy goes through the device's
    /// view of the mapping ([`crate::Device::dma_read`] at the region's IOVA): the buffer itself
    /// where the backend maps it in place (in-process, kernel VFIO), its shared copy where the
    /// backend must share memory by file descriptor (vfio-user, see
    /// `rnic::backend::VfioUserDevice`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if the range is outside the region; backend errors.
    pub fn read_at(&self, offset: usize, out: &mut [u8]) -> Result<()> {
        self.check(offset, out.len())?;
        self.pd.inner.ctx.dev.dma_read(self.iova.offset(offset as u64), out)
    }

    /// Copies `data` into the buffer at `offset` (e.g. the payload of the next RDMA WRITE), through
    /// the device's view of the mapping as [`read_at`](Self::read_at). If a posted work request
    /// still reads these bytes, the NIC may send old or new data.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if the range is outside the region; backend errors.
    pub fn write_at(&self, offset: usize, data: &[u8]) -> Result<()> {
        self.check(offset, data.len())?;
        self.pd.inner.ctx.dev.dma_write(self.iova.offset(offset as u64), data)
    }

    /// A copy of the whole buffer.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut v = vec![0u8; self.len];
        // In bounds by construction.
        let _ = self.read_at(0, &mut v);
        v
    }

    /// Deregisters the region (`ibv_dereg_mr(3)`) and reports errors, which dropping cannot.
    /// Every step is attempted even if an earlier one fails: the entry is invalidated
    /// (WRITE_MR with VALID = 0), the buffer unmapped and the slot freed.
    ///
    /// # Errors
    /// The first error (the MR is gone either way; after an invalidation error the NIC may still
    /// hold the stale key, but the buffer is unmapped so it cannot reach it).
    pub fn deregister(mut self) -> Result<()> {
        self.release()
    }

    fn release(&mut self) -> Result<()> {
        if !self.registered {
            return Ok(());
        }
        self.registered = false;
        let ctx = &self.pd.inner.ctx;
        let invalidated = write_context(&*ctx.dev, cmd_op::WRITE_MR, self.index, &MrEntry::default().pack());
        if ctx.dev.unmap(self.iova).is_err() {
            // The borrow of the buffer ends with this MR; a buffer still mapped for DMA could be
            // written after its owner reuses or frees it. Nothing sound is left to do.
            abort_mapped();
        }
        ctx.tables.borrow_mut().free_mr(self.index);
        crate::pd::count(&self.pd.inner.mrs, false);
        invalidated
    }
}

/// Aborts: a user buffer could not be unmapped, and continuing would let the NIC write memory
/// the program no longer owns.
#[cold]
fn abort_mapped() -> ! {
    eprintln!("rnic: fatal: a registered buffer could not be unmapped from the device; aborting to keep DMA out of freed memory (was the simulated world borrowed while a memory region was dropped?)");
    std::process::abort()
}

impl Drop for MemoryRegion<'_> {
    fn drop(&mut self) {
        // Errors of the invalidation are harmless once the buffer is unmapped.
        let _ = self.release();
    }
}
