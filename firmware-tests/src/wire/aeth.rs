//! ACK Extended Transport Header (IBTA Vol 1 §9.3.5): 4 bytes.
//!
//! ```text
//!  byte 0   syndrome: type (7:5) and value (4:0)
//!  1..4     MSN, message sequence number (24 bits)
//! ```
//!
//! Carried by ACKNOWLEDGE, ATOMIC_ACKNOWLEDGE and RDMA_READ_RESPONSE_FIRST/LAST/ONLY.

use super::{check_len, Result};

mod field {
    use core::ops::Range;
    pub const SYNDROME: usize = 0;
    pub const MSN: Range<usize> = 1..4;
}

/// Length of the AETH, in bytes.
pub const HEADER_LEN: usize = 4;

/// The meaning of an AETH syndrome byte (IBTA Vol 1 §9.7.5.1, table 43).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AckKind {
    /// Type 000: ACK; the value is the credit count code (0x1F = no credit information).
    Ack {
        /// Credit count code, 5 bits.
        credit: u8,
    },
    /// Type 001: RNR NAK; the value is the RNR timer code (see PROTOCOL.md for the ms table).
    RnrNak {
        /// RNR timer code, 5 bits.
        timer: u8,
    },
    /// Type 011: NAK; code 0 PSN sequence error, 1 invalid request, 2 remote access error,
    /// 3 remote operational error, 4 invalid RD request.
    Nak {
        /// NAK code, 5 bits.
        code: u8,
    },
    /// A reserved type (010, or bit 7 set); the whole syndrome byte.
    Reserved(u8),
}

impl AckKind {
    /// Decodes a syndrome byte.
    pub const fn from_syndrome(syndrome: u8) -> AckKind {
        let value = syndrome & 0x1f;
        match syndrome >> 5 {
            0b000 => AckKind::Ack { credit: value },
            0b001 => AckKind::RnrNak { timer: value },
            0b011 => AckKind::Nak { code: value },
            _ => AckKind::Reserved(syndrome),
        }
    }

    /// Encodes as a syndrome byte (values are truncated to 5 bits).
    pub const fn syndrome(self) -> u8 {
        match self {
            AckKind::Ack { credit } => credit & 0x1f,
            AckKind::RnrNak { timer } => 0x20 | (timer & 0x1f),
            AckKind::Nak { code } => 0x60 | (code & 0x1f),
            AckKind::Reserved(s) => s,
        }
    }
}

/// A read/write view of an AETH (and what follows it) over a byte buffer.
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

    /// Wraps `buffer` after checking that it holds the 4-byte AETH.
    ///
    /// # Errors
    /// [`Error::Truncated`](super::Error::Truncated) if it is shorter.
    pub fn new_checked(buffer: T) -> Result<Packet<T>> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Checks that the buffer holds the 4-byte AETH; after this no accessor panics.
    ///
    /// # Errors
    /// [`Error::Truncated`](super::Error::Truncated) if it is shorter.
    pub fn check_len(&self) -> Result<()> {
        check_len("AETH", self.buffer.as_ref(), HEADER_LEN)
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Syndrome byte.
    pub fn syndrome(&self) -> u8 {
        self.buffer.as_ref()[field::SYNDROME]
    }

    /// Message sequence number (24 bits).
    pub fn msn(&self) -> u32 {
        let b = &self.buffer.as_ref()[field::MSN];
        u32::from_be_bytes([0, b[0], b[1], b[2]])
    }

    /// Everything after the 4-byte AETH.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the syndrome byte.
    pub fn set_syndrome(&mut self, syndrome: u8) {
        self.buffer.as_mut()[field::SYNDROME] = syndrome;
    }

    /// Sets the MSN (low 24 bits used).
    pub fn set_msn(&mut self, msn: u32) {
        self.buffer.as_mut()[field::MSN].copy_from_slice(&msn.to_be_bytes()[1..]);
    }
}

/// The meaning of an AETH.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Repr {
    /// Syndrome byte; see [`Repr::kind`].
    pub syndrome: u8,
    /// Message sequence number, 24 bits.
    pub msn: u32,
}

impl Repr {
    /// Reads the AETH of `packet`.
    ///
    /// # Errors
    /// [`Error::Truncated`](super::Error::Truncated) if it is incomplete.
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>) -> Result<Repr> {
        packet.check_len()?;
        Ok(Repr { syndrome: packet.syndrome(), msn: packet.msn() })
    }

    /// The decoded syndrome.
    pub const fn kind(&self) -> AckKind {
        AckKind::from_syndrome(self.syndrome)
    }

    /// Length of the emitted header: 4 bytes.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the AETH into `packet` (at least 4 bytes); `msn` is truncated to 24 bits.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) {
        packet.set_syndrome(self.syndrome);
        packet.set_msn(self.msn);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Error;

    // AETH of a scapy-built ACK: no credit information, MSN 5.
    static BYTES: [u8; 4] = [0x1f, 0x00, 0x00, 0x05];

    #[test]
    fn parse_and_emit() {
        let p = Packet::new_checked(&BYTES[..]).unwrap();
        let r = Repr::parse(&p).unwrap();
        assert_eq!(r, Repr { syndrome: 0x1f, msn: 5 });
        assert_eq!(r.kind(), AckKind::Ack { credit: 0x1f });
        let mut buf = [0u8; 4];
        r.emit(&mut Packet::new_unchecked(&mut buf[..]));
        assert_eq!(buf, BYTES);
    }

    #[test]
    fn syndromes() {
        for (byte, kind) in [
            (0x00, AckKind::Ack { credit: 0 }),
            (0x3f, AckKind::RnrNak { timer: 31 }),
            (0x60, AckKind::Nak { code: 0 }),
            (0x62, AckKind::Nak { code: 2 }),
            (0x40, AckKind::Reserved(0x40)),
            (0x80, AckKind::Reserved(0x80)),
        ] {
            assert_eq!(AckKind::from_syndrome(byte), kind);
            assert_eq!(kind.syndrome(), byte);
        }
    }

    #[test]
    fn truncated() {
        assert!(matches!(Packet::new_checked(&BYTES[..3]), Err(Error::Truncated { need: 4, .. })));
    }
}
