//! A recording [`Device`] for unit tests of the driver's own logic (argument checks, record
//! packing, ring handling). It does no NIC work: registers read as the identification values
//! or 0, writes are only recorded, DMA memory is plain memory. Tests that need completions write
//! CQEs into the ring themselves, playing the NIC's role explicitly.
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;

use rnic_contract::regs;

use crate::device::{Device, Iova};
use crate::error::{Error, Result};

#[derive(Default)]
pub(crate) struct MockDevice {
    pub writes: RefCell<Vec<(u16, u32)>>,
    pub reads: Cell<u64>,
    mem: RefCell<BTreeMap<u64, Vec<u8>>>,
    next: Cell<u64>,
    /// Mapped user buffers (held as copies, like the vfio-user backend): IOVA → buffer.
    users: RefCell<BTreeMap<u64, (*mut u8, usize)>>,
    pub progress: Cell<u64>,
    /// MSI-X vectors it claims to deliver (0: none), and the vectors the next
    /// `wait_interrupts` reports as fired (the test plays the NIC's interrupt).
    pub irq_vectors: Cell<u16>,
    pub fired: RefCell<Vec<u16>>,
}

impl MockDevice {
    pub fn new() -> Self {
        let d = Self::default();
        d.next.set(0x1_0000_0000);
        d
    }

    fn find(&self, iova: u64, len: usize) -> Result<(u64, usize)> {
        let mem = self.mem.borrow();
        let (&base, v) = mem.range(..=iova).next_back().ok_or_else(|| Error::inval("unmapped"))?;
        let off = (iova - base) as usize;
        if off + len > v.len() {
            return Err(Error::inval("unmapped"));
        }
        Ok((base, off))
    }
}

impl Device for MockDevice {
    fn name(&self) -> String {
        "mock".into()
    }

    fn mmio_read32(&self, offset: u16) -> Result<u32> {
        self.reads.set(self.reads.get() + 1);
        Ok(match offset {
            regs::ID => regs::ID_VALUE,
            regs::VERSION => regs::VERSION_VALUE,
            regs::CAPS => {
                use rnic_contract::{regs::caps, *};
                (LOG_NUM_QPS as u32) << caps::LOG_QPS_SHIFT
                    | (LOG_NUM_MRS as u32) << caps::LOG_MRS_SHIFT
                    | (LOG_NUM_CQS as u32) << caps::LOG_CQS_SHIFT
                    | (LOG_MAX_INFLIGHT_WQES as u32) << caps::LOG_INFLIGHT_SHIFT
                    | (DATAPATH_BYTES as u32) << caps::DATAPATH_BYTES_SHIFT
            }
            regs::CLOCK_MHZ => 250,
            regs::QP_CAPS => regs::QP_CAPS_VALUE,
            regs::SEND_CAPS => regs::SEND_CAPS_VALUE,
            regs::SRQ_CAPS => regs::SRQ_CAPS_VALUE,
            regs::FEATURES => regs::FEATURES_VALUE,
            _ => 0,
        })
    }

    fn mmio_write32(&self, offset: u16, value: u32) -> Result<()> {
        self.writes.borrow_mut().push((offset, value));
        Ok(())
    }

    fn alloc_dma(&self, len: usize, _align: usize) -> Result<Iova> {
        let base = self.next.get();
        self.next.set(base + ((len as u64).div_ceil(4096) + 1) * 4096);
        self.mem.borrow_mut().insert(base, vec![0; len]);
        Ok(Iova(base))
    }

    fn free_dma(&self, iova: Iova) -> Result<()> {
        self.mem.borrow_mut().remove(&iova.0).map(|_| ()).ok_or_else(|| Error::inval("not allocated"))
    }

    fn dma_read(&self, iova: Iova, out: &mut [u8]) -> Result<()> {
        let (base, off) = self.find(iova.0, out.len())?;
        out.copy_from_slice(&self.mem.borrow()[&base][off..off + out.len()]);
        Ok(())
    }

    fn dma_write(&self, iova: Iova, data: &[u8]) -> Result<()> {
        let (base, off) = self.find(iova.0, data.len())?;
        self.mem.borrow_mut().get_mut(&base).expect("found above")[off..off + data.len()].copy_from_slice(data);
        Ok(())
    }

    unsafe fn map_user(&self, ptr: *mut u8, len: usize) -> Result<Iova> {
        if ptr.is_null() || len == 0 {
            return Err(Error::inval("bad buffer"));
        }
        // A copy of the buffer stands for it while it is mapped (as in the vfio-user backend).
        let base = self.next.get();
        self.next.set(base + ((len as u64).div_ceil(4096) + 1) * 4096);
        // SAFETY: the caller keeps `ptr[..len]` valid for reads until `unmap`.
        let copy = unsafe { std::slice::from_raw_parts(ptr, len) }.to_vec();
        self.mem.borrow_mut().insert(base, copy);
        self.users.borrow_mut().insert(base, (ptr, len));
        Ok(Iova(base))
    }

    fn unmap(&self, iova: Iova) -> Result<()> {
        if let Some((ptr, len)) = self.users.borrow_mut().remove(&iova.0) {
            let mem = self.mem.borrow();
            // SAFETY: the caller keeps `ptr[..len]` valid for writes until `unmap` returns.
            unsafe { std::ptr::copy_nonoverlapping(mem[&iova.0].as_ptr(), ptr, len) };
        }
        self.free_dma(iova)
    }

    fn poll_progress(&self) {
        self.progress.set(self.progress.get() + 1);
    }

    fn now_cycles(&self) -> u64 {
        self.progress.get()
    }

    fn interrupt_vectors(&self) -> u16 {
        self.irq_vectors.get()
    }

    fn wait_interrupts(&self, vectors: &[u16], _timeout: std::time::Duration) -> Result<Vec<u16>> {
        let mut f = self.fired.borrow_mut();
        let (hit, rest): (Vec<u16>, Vec<u16>) = f.iter().partition(|v| vectors.contains(v));
        *f = rest;
        Ok(hit)
    }
}
