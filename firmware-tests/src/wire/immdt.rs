//! Immediate Data extended transport header (IBTA Vol 1 §9.3.4): 4 bytes, delivered to the
//! receiver's completion unchanged.
//!
//! Carried by SEND_LAST/ONLY_WITH_IMMEDIATE and RDMA_WRITE_LAST/ONLY_WITH_IMMEDIATE.

use super::{check_len, Result};

mod field {
    use core::ops::Range;
    pub const DATA: Range<usize> = 0..4;
}

/// Length of the ImmDt header, in bytes.
pub const HEADER_LEN: usize = 4;

/// A read/write view of an ImmDt header (and what follows it) over a byte buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps `buffer` without checking it; accessors may panic if it is shorter than 4
    /// bytes. Use [`Packet::new_checked`] on untrusted input.
    pub const fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }

    /// Wraps `buffer` after checking that it holds the 4-byte ImmDt.
    ///
    /// # Errors
    /// [`Error::Truncated`](super::Error::Truncated) if it is shorter.
    pub fn new_checked(buffer: T) -> Result<Packet<T>> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Checks that the buffer holds the 4-byte ImmDt; after this no accessor panics.
    ///
    /// # Errors
    /// [`Error::Truncated`](super::Error::Truncated) if it is shorter.
    pub fn check_len(&self) -> Result<()> {
        check_len("ImmDt", self.buffer.as_ref(), HEADER_LEN)
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The immediate data read big-endian. ibverbs' `imm_data` is `__be32`, so
    /// `u32::from_be(wc.imm_data)` on a little-endian host equals this value.
    pub fn data(&self) -> u32 {
        let b = &self.buffer.as_ref()[field::DATA];
        u32::from_be_bytes([b[0], b[1], b[2], b[3]])
    }

    /// Everything after the 4-byte ImmDt.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the immediate data (written big-endian).
    pub fn set_data(&mut self, data: u32) {
        self.buffer.as_mut()[field::DATA].copy_from_slice(&data.to_be_bytes());
    }
}

/// The meaning of an ImmDt header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Repr {
    /// The immediate data, as the 4 wire bytes read big-endian.
    pub data: u32,
}

impl Repr {
    /// Reads the ImmDt of `packet`.
    ///
    /// # Errors
    /// [`Error::Truncated`](super::Error::Truncated) if it is incomplete.
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>) -> Result<Repr> {
        packet.check_len()?;
        Ok(Repr { data: packet.data() })
    }

    /// Length of the emitted header: 4 bytes.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the ImmDt into `packet` (at least 4 bytes).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) {
        packet.set_data(self.data);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Error;

    static BYTES: [u8; 6] = [0x12, 0x34, 0x56, 0x78, 0xaa, 0xbb];

    #[test]
    fn parse_and_emit() {
        let p = Packet::new_checked(&BYTES[..]).unwrap();
        assert_eq!(p.payload(), &[0xaa, 0xbb]);
        let r = Repr::parse(&p).unwrap();
        assert_eq!(r, Repr { data: 0x1234_5678 });
        let mut buf = [0u8; 6];
        buf[4..].copy_from_slice(&BYTES[4..]);
        r.emit(&mut Packet::new_unchecked(&mut buf[..]));
        assert_eq!(buf, BYTES);
    }

    #[test]
    fn truncated() {
        assert!(matches!(Packet::new_checked(&BYTES[..2]), Err(Error::Truncated { need: 4, have: 2, .. })));
    }
}
