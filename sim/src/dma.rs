//! What the NIC's DMA reaches, and where its interrupts go: the two seams between a simulated NIC
//! and the host it sits in.
//!
//! - [`DmaMemory`]: the host memory behind the NIC's AXI4 DMA master, addressed by IOVA. The
//!   in-process host is [`crate::HostMemory`]; a vfio-user server (crate `rnic-vfio-server`)
//!   supplies the client's memory, shared by file descriptor, through its own IOVA table
//!   ([`crate::World::set_dma_memory`]).
//! - [`InterruptSink`]: where an MSI-X message of the NIC goes (a vfio-user server writes the
//!   client's eventfd). [`crate::Nic::signal_msix`] is the one place a raised vector enters it.

/// Host memory as the NIC's DMA sees it (after the IOMMU). The AXI slave model
/// ([`crate::axi_slave`]) checks a burst's whole span with [`is_mapped`](Self::is_mapped) when
/// the burst is accepted, then reads or writes it beat by beat; each beat is checked again (the
/// host may unmap memory while a burst is in flight).
pub trait DmaMemory {
    /// True if every byte of `[iova, iova + len)` may be reached by DMA (`len` ≥ 1).
    fn is_mapped(&self, iova: u64, len: u64) -> bool;

    /// Reads `out.len()` bytes at `iova`. Returns false (and leaves `out` unspecified) if the
    /// range is not mapped. Bytes that are authorised but have no backing (the tail of a user
    /// buffer's last page) read as zero.
    fn dma_read(&self, iova: u64, out: &mut [u8]) -> bool;

    /// Writes the bytes of `data` whose bit is set in `mask` (bit i = `data[i]`, so `data` is at
    /// most 64 bytes) at `iova`. Returns false if the range is not mapped or a selected byte has
    /// no backing (that byte is discarded; the others are written).
    fn dma_write_masked(&mut self, iova: u64, data: &[u8], mask: u64) -> bool;
}

/// Where the MSI-X messages of one NIC go. Called on the simulation's thread, in the cycle the
/// NIC raises the vector; the sink applies masking and pending bits itself.
pub trait InterruptSink {
    /// The NIC raised MSI-X vector `vector` (0-based).
    fn msix(&mut self, vector: u16);
}
