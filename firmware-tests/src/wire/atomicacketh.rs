//! Atomic Acknowledge Extended Transport Header (IBTA Vol 1 §9.3.5.1): 8 bytes.
//!
//! ```text
//!  0..8    original remote data (64 bits): the word before the atomic operation
//! ```
//!
//! Carried by ATOMIC_ACKNOWLEDGE, after its AETH.

use super::{check_len, Result};

mod field {
    use core::ops::Range;
    pub const ORIG_DATA: Range<usize> = 0..8;
}

/// Length of the AtomicAckETH, in bytes.
pub const HEADER_LEN: usize = 8;

/// A read/write view of an AtomicAckETH (and what follows it) over a byte buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps `buffer` without checking it; accessors may panic if it is shorter than 8
    /// bytes. Use [`Packet::new_checked`] on untrusted input.
    pub const fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }

    /// Wraps `buffer` after checking that it holds the 8-byte AtomicAckETH.
    ///
    /// # Errors
    /// [`Error::Truncated`](super::Error::Truncated) if it is shorter.
    pub fn new_checked(buffer: T) -> Result<Packet<T>> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Checks that the buffer holds the 8-byte AtomicAckETH; after this no accessor panics.
    ///
    /// # Errors
    /// [`Error::Truncated`](super::Error::Truncated) if it is shorter.
    pub fn check_len(&self) -> Result<()> {
        check_len("AtomicAckETH", self.buffer.as_ref(), HEADER_LEN)
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The remote word's value before the operation.
    pub fn orig_data(&self) -> u64 {
        let mut b = [0; 8];
        b.copy_from_slice(&self.buffer.as_ref()[field::ORIG_DATA]);
        u64::from_be_bytes(b)
    }

    /// Everything after the 8-byte AtomicAckETH.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the original remote data.
    pub fn set_orig_data(&mut self, v: u64) {
        self.buffer.as_mut()[field::ORIG_DATA].copy_from_slice(&v.to_be_bytes());
    }
}

/// The meaning of an AtomicAckETH.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Repr {
    /// The remote word's value before the operation.
    pub orig_data: u64,
}

impl Repr {
    /// Reads the AtomicAckETH of `packet`.
    ///
    /// # Errors
    /// [`Error::Truncated`](super::Error::Truncated) if it is incomplete.
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>) -> Result<Repr> {
        packet.check_len()?;
        Ok(Repr { orig_data: packet.orig_data() })
    }

    /// Length of the emitted header: 8 bytes.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the AtomicAckETH into `packet` (at least 8 bytes).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) {
        packet.set_orig_data(self.orig_data);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Error;

    static BYTES: [u8; 8] = [0x80, 0x00, 0x00, 0x00, 0x12, 0x34, 0x56, 0x78];

    #[test]
    fn parse_and_emit() {
        let p = Packet::new_checked(&BYTES[..]).unwrap();
        assert_eq!(p.orig_data(), 0x8000_0000_1234_5678);
        let r = Repr { orig_data: 0x8000_0000_1234_5678 };
        assert_eq!(Repr::parse(&p), Ok(r));
        let mut buf = [0u8; 8];
        r.emit(&mut Packet::new_unchecked(&mut buf[..]));
        assert_eq!(buf, BYTES);
    }

    #[test]
    fn truncated() {
        assert_eq!(
            Packet::new_checked(&BYTES[..7]),
            Err(Error::Truncated { header: "AtomicAckETH", need: 8, have: 7 })
        );
    }
}
