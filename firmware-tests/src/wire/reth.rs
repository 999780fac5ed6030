//! RDMA Extended Transport Header (IBTA Vol 1 §9.3.3): 16 bytes.
//!
//! ```text
//!  0..8    virtual address (64 bits)
//!  8..12   R_Key
//!  12..16  DMA length, in bytes
//! ```
//!
//! Carried by RDMA_WRITE_FIRST, RDMA_WRITE_ONLY, RDMA_WRITE_ONLY_WITH_IMMEDIATE and
//! RDMA_READ_REQUEST.

use super::{check_len, Result};

mod field {
    use core::ops::Range;
    pub const VIRT_ADDR: Range<usize> = 0..8;
    pub const RKEY: Range<usize> = 8..12;
    pub const DMA_LEN: Range<usize> = 12..16;
}

/// Length of the RETH, in bytes.
pub const HEADER_LEN: usize = 16;

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// A read/write view of a RETH (and what follows it) over a byte buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps `buffer` without checking it; accessors may panic if it is shorter than 16
    /// bytes. Use [`Packet::new_checked`] on untrusted input.
    pub const fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }

    /// Wraps `buffer` after checking that it holds the 16-byte RETH.
    ///
    /// # Errors
    /// [`Error::Truncated`](super::Error::Truncated) if it is shorter.
    pub fn new_checked(buffer: T) -> Result<Packet<T>> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Checks that the buffer holds the 16-byte RETH; after this no accessor panics.
    ///
    /// # Errors
    /// [`Error::Truncated`](super::Error::Truncated) if it is shorter.
    pub fn check_len(&self) -> Result<()> {
        check_len("RETH", self.buffer.as_ref(), HEADER_LEN)
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Virtual address of the remote buffer (64 bits).
    pub fn virt_addr(&self) -> u64 {
        let mut b = [0; 8];
        b.copy_from_slice(&self.buffer.as_ref()[field::VIRT_ADDR]);
        u64::from_be_bytes(b)
    }

    /// Remote key of the memory region.
    pub fn rkey(&self) -> u32 {
        be32(&self.buffer.as_ref()[field::RKEY])
    }

    /// Length of the whole RDMA transfer, in bytes.
    pub fn dma_len(&self) -> u32 {
        be32(&self.buffer.as_ref()[field::DMA_LEN])
    }

    /// Everything after the 16-byte RETH.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the virtual address.
    pub fn set_virt_addr(&mut self, va: u64) {
        self.buffer.as_mut()[field::VIRT_ADDR].copy_from_slice(&va.to_be_bytes());
    }

    /// Sets the remote key.
    pub fn set_rkey(&mut self, rkey: u32) {
        self.buffer.as_mut()[field::RKEY].copy_from_slice(&rkey.to_be_bytes());
    }

    /// Sets the DMA length, in bytes.
    pub fn set_dma_len(&mut self, len: u32) {
        self.buffer.as_mut()[field::DMA_LEN].copy_from_slice(&len.to_be_bytes());
    }
}

/// The meaning of a RETH.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Repr {
    /// Virtual address of the remote buffer.
    pub virt_addr: u64,
    /// Remote key.
    pub rkey: u32,
    /// Length of the whole transfer, in bytes (not of this packet's payload).
    pub dma_len: u32,
}

impl Repr {
    /// Reads the RETH of `packet`.
    ///
    /// # Errors
    /// [`Error::Truncated`](super::Error::Truncated) if it is incomplete.
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>) -> Result<Repr> {
        packet.check_len()?;
        Ok(Repr { virt_addr: packet.virt_addr(), rkey: packet.rkey(), dma_len: packet.dma_len() })
    }

    /// Length of the emitted header: 16 bytes.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the RETH into `packet` (at least 16 bytes).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) {
        packet.set_virt_addr(self.virt_addr);
        packet.set_rkey(self.rkey);
        packet.set_dma_len(self.dma_len);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Error;

    static BYTES: [u8; 16] = [
        0x00, 0x00, 0x7f, 0x12, 0x34, 0x56, 0x78, 0x00, // VA
        0xde, 0xad, 0xbe, 0xef, // R_Key
        0x00, 0x01, 0x00, 0x00, // 65536 bytes
    ];

    fn repr() -> Repr {
        Repr { virt_addr: 0x7f12_3456_7800, rkey: 0xdead_beef, dma_len: 65536 }
    }

    #[test]
    fn parse_and_emit() {
        let p = Packet::new_checked(&BYTES[..]).unwrap();
        assert_eq!(p.virt_addr(), 0x7f12_3456_7800);
        assert_eq!(p.rkey(), 0xdead_beef);
        assert_eq!(p.dma_len(), 65536);
        assert_eq!(Repr::parse(&p), Ok(repr()));
        let mut buf = [0u8; 16];
        repr().emit(&mut Packet::new_unchecked(&mut buf[..]));
        assert_eq!(buf, BYTES);
    }

    #[test]
    fn truncated() {
        assert_eq!(Packet::new_checked(&BYTES[..15]), Err(Error::Truncated { header: "RETH", need: 16, have: 15 }));
    }
}
