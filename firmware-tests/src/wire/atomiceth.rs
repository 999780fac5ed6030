//! Atomic Extended Transport Header (IBTA Vol 1 §9.3.4): 28 bytes.
//!
//! ```text
//!  0..8    virtual address (64 bits, 8-byte aligned for the operation to be valid)
//!  8..12   R_Key
//!  12..20  Swap (COMPARE_SWAP) or Add (FETCH_ADD) data (64 bits)
//!  20..28  Compare data (64 bits; COMPARE_SWAP only, ignored by FETCH_ADD)
//! ```
//!
//! Carried by COMPARE_SWAP and FETCH_ADD.

use super::{check_len, Result};

mod field {
    use core::ops::Range;
    pub const VIRT_ADDR: Range<usize> = 0..8;
    pub const RKEY: Range<usize> = 8..12;
    pub const SWAP_ADD: Range<usize> = 12..20;
    pub const COMPARE: Range<usize> = 20..28;
}

/// Length of the AtomicETH, in bytes.
pub const HEADER_LEN: usize = 28;

fn be64(b: &[u8]) -> u64 {
    let mut w = [0; 8];
    w.copy_from_slice(b);
    u64::from_be_bytes(w)
}

/// A read/write view of an AtomicETH (and what follows it) over a byte buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps `buffer` without checking it; accessors may panic if it is shorter than 28
    /// bytes. Use [`Packet::new_checked`] on untrusted input.
    pub const fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }

    /// Wraps `buffer` after checking that it holds the 28-byte AtomicETH.
    ///
    /// # Errors
    /// [`Error::Truncated`](super::Error::Truncated) if it is shorter.
    pub fn new_checked(buffer: T) -> Result<Packet<T>> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Checks that the buffer holds the 28-byte AtomicETH; after this no accessor panics.
    ///
    /// # Errors
    /// [`Error::Truncated`](super::Error::Truncated) if it is shorter.
    pub fn check_len(&self) -> Result<()> {
        check_len("AtomicETH", self.buffer.as_ref(), HEADER_LEN)
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Virtual address of the remote 8-byte word.
    pub fn virt_addr(&self) -> u64 {
        be64(&self.buffer.as_ref()[field::VIRT_ADDR])
    }

    /// Remote key of the memory region.
    pub fn rkey(&self) -> u32 {
        let b = &self.buffer.as_ref()[field::RKEY];
        u32::from_be_bytes([b[0], b[1], b[2], b[3]])
    }

    /// Swap data (COMPARE_SWAP) or the addend (FETCH_ADD).
    pub fn swap_add(&self) -> u64 {
        be64(&self.buffer.as_ref()[field::SWAP_ADD])
    }

    /// Compare data (COMPARE_SWAP).
    pub fn compare(&self) -> u64 {
        be64(&self.buffer.as_ref()[field::COMPARE])
    }

    /// Everything after the 28-byte AtomicETH.
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

    /// Sets the swap or add data.
    pub fn set_swap_add(&mut self, v: u64) {
        self.buffer.as_mut()[field::SWAP_ADD].copy_from_slice(&v.to_be_bytes());
    }

    /// Sets the compare data.
    pub fn set_compare(&mut self, v: u64) {
        self.buffer.as_mut()[field::COMPARE].copy_from_slice(&v.to_be_bytes());
    }
}

/// The meaning of an AtomicETH.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Repr {
    /// Virtual address of the remote 8-byte word.
    pub virt_addr: u64,
    /// Remote key.
    pub rkey: u32,
    /// Swap data (COMPARE_SWAP) or the addend (FETCH_ADD).
    pub swap_add: u64,
    /// Compare data (COMPARE_SWAP; FETCH_ADD ignores it).
    pub compare: u64,
}

impl Repr {
    /// Reads the AtomicETH of `packet`.
    ///
    /// # Errors
    /// [`Error::Truncated`](super::Error::Truncated) if it is incomplete.
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>) -> Result<Repr> {
        packet.check_len()?;
        Ok(Repr {
            virt_addr: packet.virt_addr(),
            rkey: packet.rkey(),
            swap_add: packet.swap_add(),
            compare: packet.compare(),
        })
    }

    /// Length of the emitted header: 28 bytes.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the AtomicETH into `packet` (at least 28 bytes).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) {
        packet.set_virt_addr(self.virt_addr);
        packet.set_rkey(self.rkey);
        packet.set_swap_add(self.swap_add);
        packet.set_compare(self.compare);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Error;

    static BYTES: [u8; 28] = [
        0x00, 0x00, 0x7f, 0x12, 0x34, 0x56, 0x78, 0x08, // VA
        0xde, 0xad, 0xbe, 0xef, // R_Key
        0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, // swap / add
        0xf0, 0xe1, 0xd2, 0xc3, 0xb4, 0xa5, 0x96, 0x87, // compare
    ];

    fn repr() -> Repr {
        Repr {
            virt_addr: 0x7f12_3456_7808,
            rkey: 0xdead_beef,
            swap_add: 0x0102_0304_0506_0708,
            compare: 0xf0e1_d2c3_b4a5_9687,
        }
    }

    #[test]
    fn parse_and_emit() {
        let p = Packet::new_checked(&BYTES[..]).unwrap();
        assert_eq!(p.virt_addr(), 0x7f12_3456_7808);
        assert_eq!(p.rkey(), 0xdead_beef);
        assert_eq!(p.swap_add(), 0x0102_0304_0506_0708);
        assert_eq!(p.compare(), 0xf0e1_d2c3_b4a5_9687);
        assert!(p.payload().is_empty());
        assert_eq!(Repr::parse(&p), Ok(repr()));
        let mut buf = [0u8; 28];
        repr().emit(&mut Packet::new_unchecked(&mut buf[..]));
        assert_eq!(buf, BYTES);
        assert_eq!(repr().buffer_len(), 28);
    }

    #[test]
    fn truncated() {
        assert_eq!(
            Packet::new_checked(&BYTES[..27]),
            Err(Error::Truncated { header: "AtomicETH", need: 28, have: 27 })
        );
    }
}
