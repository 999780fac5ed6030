//! InfiniBand Base Transport Header (IBTA Vol 1 §9.2): 12 bytes, and the opcode table that
//! decides which extension headers follow it (IBTA Vol 1 §9.2, table 38).
//!
//! ```text
//!  byte 0   opcode
//!  byte 1   SE(7) M(6) PadCnt(5:4) TVer(3:0)
//!  2..4     P_Key
//!  byte 4   FECN(7) BECN(6) reserved(5:0)      <- all ones in the ICRC
//!  5..8     DestQP (24 bits)
//!  byte 8   AckReq(7) reserved(6:0)
//!  9..12    PSN (24 bits)
//! ```

use super::{check_len, Error, Result};
use core::fmt;

mod field {
    use core::ops::Range;
    pub const OPCODE: usize = 0;
    pub const FLAGS: usize = 1;
    pub const PKEY: Range<usize> = 2..4;
    pub const FECN_BECN: usize = 4;
    pub const DEST_QP: Range<usize> = 5..8;
    pub const ACK_REQ: usize = 8;
    pub const PSN: Range<usize> = 9..12;
}

/// Length of the BTH, in bytes.
pub const HEADER_LEN: usize = 12;

/// Mask of a 24-bit field (DestQP, PSN, MSN).
pub const MASK_24: u32 = 0x00ff_ffff;

/// Which extension transport headers follow the BTH, in wire order RETH, AETH, ImmDt
/// (IBTA Vol 1 §9.2 table 38; the RC opcode table in PROTOCOL.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ExtHeaders {
    /// An RDMA Extended Transport Header (16 bytes) follows.
    pub reth: bool,
    /// An ACK Extended Transport Header (4 bytes) follows.
    pub aeth: bool,
    /// Immediate Data (4 bytes) follows.
    pub immdt: bool,
}

impl ExtHeaders {
    const NONE: ExtHeaders = ExtHeaders { reth: false, aeth: false, immdt: false };
    const RETH: ExtHeaders = ExtHeaders { reth: true, ..Self::NONE };
    const AETH: ExtHeaders = ExtHeaders { aeth: true, ..Self::NONE };
    const IMMDT: ExtHeaders = ExtHeaders { immdt: true, ..Self::NONE };
    const RETH_IMMDT: ExtHeaders = ExtHeaders { reth: true, immdt: true, aeth: false };

    /// Total length of these extension headers, in bytes.
    pub const fn len(&self) -> usize {
        (if self.reth { 16 } else { 0 }) + (if self.aeth { 4 } else { 0 }) + (if self.immdt { 4 } else { 0 })
    }

    /// Whether no extension header follows the BTH.
    pub const fn is_empty(&self) -> bool {
        !self.reth && !self.aeth && !self.immdt
    }
}

/// A BTH opcode (8 bits: transport in bits 7:5, operation in bits 4:0; IBTA Vol 1 §9.2).
///
/// Any byte is a valid `Opcode`; [`Opcode::ext_headers`] says whether this codec can carry it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Opcode(pub u8);

/// The RC operation codes this codec models: (code, name, extension headers).
const OPERATIONS: [(u8, &str, ExtHeaders); 18] = [
    (0x00, "SEND_FIRST", ExtHeaders::NONE),
    (0x01, "SEND_MIDDLE", ExtHeaders::NONE),
    (0x02, "SEND_LAST", ExtHeaders::NONE),
    (0x03, "SEND_LAST_WITH_IMMEDIATE", ExtHeaders::IMMDT),
    (0x04, "SEND_ONLY", ExtHeaders::NONE),
    (0x05, "SEND_ONLY_WITH_IMMEDIATE", ExtHeaders::IMMDT),
    (0x06, "RDMA_WRITE_FIRST", ExtHeaders::RETH),
    (0x07, "RDMA_WRITE_MIDDLE", ExtHeaders::NONE),
    (0x08, "RDMA_WRITE_LAST", ExtHeaders::NONE),
    (0x09, "RDMA_WRITE_LAST_WITH_IMMEDIATE", ExtHeaders::IMMDT),
    (0x0a, "RDMA_WRITE_ONLY", ExtHeaders::RETH),
    (0x0b, "RDMA_WRITE_ONLY_WITH_IMMEDIATE", ExtHeaders::RETH_IMMDT),
    (0x0c, "RDMA_READ_REQUEST", ExtHeaders::RETH),
    (0x0d, "RDMA_READ_RESPONSE_FIRST", ExtHeaders::AETH),
    (0x0e, "RDMA_READ_RESPONSE_MIDDLE", ExtHeaders::NONE),
    (0x0f, "RDMA_READ_RESPONSE_LAST", ExtHeaders::AETH),
    (0x10, "RDMA_READ_RESPONSE_ONLY", ExtHeaders::AETH),
    (0x11, "ACKNOWLEDGE", ExtHeaders::AETH),
];

impl Opcode {
    /// RC SEND_FIRST (0x00).
    pub const RC_SEND_FIRST: Opcode = Opcode(0x00);
    /// RC SEND_MIDDLE (0x01).
    pub const RC_SEND_MIDDLE: Opcode = Opcode(0x01);
    /// RC SEND_LAST (0x02).
    pub const RC_SEND_LAST: Opcode = Opcode(0x02);
    /// RC SEND_LAST_WITH_IMMEDIATE (0x03): ImmDt follows.
    pub const RC_SEND_LAST_WITH_IMMEDIATE: Opcode = Opcode(0x03);
    /// RC SEND_ONLY (0x04).
    pub const RC_SEND_ONLY: Opcode = Opcode(0x04);
    /// RC SEND_ONLY_WITH_IMMEDIATE (0x05): ImmDt follows.
    pub const RC_SEND_ONLY_WITH_IMMEDIATE: Opcode = Opcode(0x05);
    /// RC RDMA_WRITE_FIRST (0x06): RETH follows.
    pub const RC_RDMA_WRITE_FIRST: Opcode = Opcode(0x06);
    /// RC RDMA_WRITE_MIDDLE (0x07).
    pub const RC_RDMA_WRITE_MIDDLE: Opcode = Opcode(0x07);
    /// RC RDMA_WRITE_LAST (0x08).
    pub const RC_RDMA_WRITE_LAST: Opcode = Opcode(0x08);
    /// RC RDMA_WRITE_LAST_WITH_IMMEDIATE (0x09): ImmDt follows.
    pub const RC_RDMA_WRITE_LAST_WITH_IMMEDIATE: Opcode = Opcode(0x09);
    /// RC RDMA_WRITE_ONLY (0x0A): RETH follows.
    pub const RC_RDMA_WRITE_ONLY: Opcode = Opcode(0x0a);
    /// RC RDMA_WRITE_ONLY_WITH_IMMEDIATE (0x0B): RETH then ImmDt follow.
    pub const RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE: Opcode = Opcode(0x0b);
    /// RC RDMA_READ_REQUEST (0x0C): RETH follows.
    pub const RC_RDMA_READ_REQUEST: Opcode = Opcode(0x0c);
    /// RC RDMA_READ_RESPONSE_FIRST (0x0D): AETH follows.
    pub const RC_RDMA_READ_RESPONSE_FIRST: Opcode = Opcode(0x0d);
    /// RC RDMA_READ_RESPONSE_MIDDLE (0x0E).
    pub const RC_RDMA_READ_RESPONSE_MIDDLE: Opcode = Opcode(0x0e);
    /// RC RDMA_READ_RESPONSE_LAST (0x0F): AETH follows.
    pub const RC_RDMA_READ_RESPONSE_LAST: Opcode = Opcode(0x0f);
    /// RC RDMA_READ_RESPONSE_ONLY (0x10): AETH follows.
    pub const RC_RDMA_READ_RESPONSE_ONLY: Opcode = Opcode(0x10);
    /// RC ACKNOWLEDGE (0x11): AETH follows.
    pub const RC_ACKNOWLEDGE: Opcode = Opcode(0x11);
    /// RC ATOMIC_ACKNOWLEDGE (0x12): AETH and AtomicAckETH follow
    /// ([`AtomicPacketRepr`](super::AtomicPacketRepr), not `ext_headers`).
    pub const RC_ATOMIC_ACKNOWLEDGE: Opcode = Opcode(0x12);
    /// RC COMPARE_SWAP (0x13): AtomicETH follows
    /// ([`AtomicPacketRepr`](super::AtomicPacketRepr), not `ext_headers`).
    pub const RC_COMPARE_SWAP: Opcode = Opcode(0x13);
    /// RC FETCH_ADD (0x14): AtomicETH follows
    /// ([`AtomicPacketRepr`](super::AtomicPacketRepr), not `ext_headers`).
    pub const RC_FETCH_ADD: Opcode = Opcode(0x14);
    /// Congestion Notification Packet (0x81, IBTA Annex A17.9.3; not modelled).
    pub const CNP: Opcode = Opcode(0x81);

    /// Transport bits 7:5 as a prefix: 0x00 RC, 0x20 UC, 0x40 RD, 0x60 UD, 0x80 CNP/vendor.
    pub const fn transport(self) -> u8 {
        self.0 & 0xe0
    }

    /// Operation bits 4:0 (the RC code of the same operation).
    pub const fn operation(self) -> u8 {
        self.0 & 0x1f
    }

    /// The extension headers that follow the BTH for this opcode.
    ///
    /// RC opcodes 0x00..=0x11 and UC opcodes 0x20..=0x2B (the same operations as RC
    /// 0x00..=0x0B) are supported.
    ///
    /// # Errors
    /// [`Error::UnsupportedOpcode`] for atomics (see
    /// [`AtomicPacketRepr`](super::AtomicPacketRepr)), IETH, RD, UD, CNP and reserved codes.
    pub fn ext_headers(self) -> Result<ExtHeaders> {
        let supported = match self.transport() {
            0x00 => self.operation() <= 0x11,
            0x20 => self.operation() <= 0x0b,
            _ => false,
        };
        if !supported {
            return Err(Error::UnsupportedOpcode(self.0));
        }
        Ok(OPERATIONS[usize::from(self.operation())].2)
    }

    /// The IBTA name, e.g. `RC_RDMA_WRITE_ONLY`, for opcodes this codec supports and CNP.
    pub fn name(self) -> Option<String> {
        if self == Self::CNP {
            return Some("CNP".to_owned());
        }
        let transport = match self.transport() {
            0x00 => "RC",
            0x20 => "UC",
            _ => return None,
        };
        self.ext_headers().ok()?;
        let op = OPERATIONS[usize::from(self.operation())].1;
        Some(format!("{transport}_{op}"))
    }
}

impl fmt::Display for Opcode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => write!(f, "{name} ({:#04x})", self.0),
            None => write!(f, "opcode {:#04x}", self.0),
        }
    }
}

fn be24(b: &[u8]) -> u32 {
    u32::from_be_bytes([0, b[0], b[1], b[2]])
}

/// A read/write view of a BTH and what follows it, over a byte buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps `buffer` without checking it; accessors may panic if it is shorter than 12
    /// bytes. Use [`Packet::new_checked`] on untrusted input.
    pub const fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }

    /// Wraps `buffer` after checking that it holds the 12-byte BTH.
    ///
    /// # Errors
    /// [`Error::Truncated`] if it is shorter.
    pub fn new_checked(buffer: T) -> Result<Packet<T>> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Checks that the buffer holds the 12-byte BTH; after this no accessor panics.
    ///
    /// # Errors
    /// [`Error::Truncated`] if it is shorter.
    pub fn check_len(&self) -> Result<()> {
        check_len("BTH", self.buffer.as_ref(), HEADER_LEN)
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Opcode (byte 0).
    pub fn opcode(&self) -> Opcode {
        Opcode(self.buffer.as_ref()[field::OPCODE])
    }

    /// Solicited Event bit.
    pub fn solicited(&self) -> bool {
        self.buffer.as_ref()[field::FLAGS] & 0x80 != 0
    }

    /// MigReq bit (path migration state).
    pub fn mig_req(&self) -> bool {
        self.buffer.as_ref()[field::FLAGS] & 0x40 != 0
    }

    /// PadCnt: pad bytes (0..=3) between the payload and the ICRC.
    pub fn pad_count(&self) -> u8 {
        (self.buffer.as_ref()[field::FLAGS] >> 4) & 0x03
    }

    /// TVer: transport header version (must be 0).
    pub fn tver(&self) -> u8 {
        self.buffer.as_ref()[field::FLAGS] & 0x0f
    }

    /// Partition key.
    pub fn pkey(&self) -> u16 {
        let b = &self.buffer.as_ref()[field::PKEY];
        u16::from_be_bytes([b[0], b[1]])
    }

    /// FECN bit (forward explicit congestion notification).
    pub fn fecn(&self) -> bool {
        self.buffer.as_ref()[field::FECN_BECN] & 0x80 != 0
    }

    /// BECN bit (backward explicit congestion notification).
    pub fn becn(&self) -> bool {
        self.buffer.as_ref()[field::FECN_BECN] & 0x40 != 0
    }

    /// Destination queue pair number (24 bits).
    pub fn dest_qp(&self) -> u32 {
        be24(&self.buffer.as_ref()[field::DEST_QP])
    }

    /// AckReq bit: the responder should acknowledge this packet.
    pub fn ack_req(&self) -> bool {
        self.buffer.as_ref()[field::ACK_REQ] & 0x80 != 0
    }

    /// Packet sequence number (24 bits).
    pub fn psn(&self) -> u32 {
        be24(&self.buffer.as_ref()[field::PSN])
    }

    /// Everything after the 12-byte BTH.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the opcode.
    pub fn set_opcode(&mut self, opcode: Opcode) {
        self.buffer.as_mut()[field::OPCODE] = opcode.0;
    }

    /// Sets byte 1: SE, M, PadCnt (low 2 bits used) and TVer (low 4 bits used).
    pub fn set_flags(&mut self, solicited: bool, mig_req: bool, pad_count: u8, tver: u8) {
        self.buffer.as_mut()[field::FLAGS] =
            (u8::from(solicited) << 7) | (u8::from(mig_req) << 6) | ((pad_count & 0x03) << 4) | (tver & 0x0f);
    }

    /// Sets the partition key.
    pub fn set_pkey(&mut self, pkey: u16) {
        self.buffer.as_mut()[field::PKEY].copy_from_slice(&pkey.to_be_bytes());
    }

    /// Sets byte 4: FECN, BECN and zero reserved bits.
    pub fn set_fecn_becn(&mut self, fecn: bool, becn: bool) {
        self.buffer.as_mut()[field::FECN_BECN] = (u8::from(fecn) << 7) | (u8::from(becn) << 6);
    }

    /// Sets the destination QP (low 24 bits used).
    pub fn set_dest_qp(&mut self, qpn: u32) {
        self.buffer.as_mut()[field::DEST_QP].copy_from_slice(&qpn.to_be_bytes()[1..]);
    }

    /// Sets byte 8: AckReq and zero reserved bits.
    pub fn set_ack_req(&mut self, ack_req: bool) {
        self.buffer.as_mut()[field::ACK_REQ] = u8::from(ack_req) << 7;
    }

    /// Sets the PSN (low 24 bits used).
    pub fn set_psn(&mut self, psn: u32) {
        self.buffer.as_mut()[field::PSN].copy_from_slice(&psn.to_be_bytes()[1..]);
    }

    /// Mutable access to everything after the BTH.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[HEADER_LEN..]
    }
}

/// The meaning of a BTH. Reserved bits are written as 0 and ignored on parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Repr {
    /// Opcode.
    pub opcode: Opcode,
    /// Solicited Event.
    pub solicited: bool,
    /// MigReq.
    pub mig_req: bool,
    /// Pad bytes before the ICRC, 0..=3. [`crate::wire::RocePacketRepr::emit`] recomputes it
    /// from the payload length.
    pub pad_count: u8,
    /// Partition key (0xFFFF is the default full-membership key).
    pub pkey: u16,
    /// FECN (not covered by the ICRC).
    pub fecn: bool,
    /// BECN (not covered by the ICRC).
    pub becn: bool,
    /// Destination QP number, 24 bits.
    pub dest_qp: u32,
    /// AckReq.
    pub ack_req: bool,
    /// Packet sequence number, 24 bits.
    pub psn: u32,
}

impl Repr {
    /// Reads the BTH of `packet`; TVer must be 0. The opcode is not checked here (see
    /// [`Opcode::ext_headers`]).
    ///
    /// # Errors
    /// [`Error::Truncated`] or [`Error::BthVersion`].
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>) -> Result<Repr> {
        packet.check_len()?;
        if packet.tver() != 0 {
            return Err(Error::BthVersion(packet.tver()));
        }
        Ok(Repr {
            opcode: packet.opcode(),
            solicited: packet.solicited(),
            mig_req: packet.mig_req(),
            pad_count: packet.pad_count(),
            pkey: packet.pkey(),
            fecn: packet.fecn(),
            becn: packet.becn(),
            dest_qp: packet.dest_qp(),
            ack_req: packet.ack_req(),
            psn: packet.psn(),
        })
    }

    /// Length of the emitted header: 12 bytes.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the BTH into `packet` (at least 12 bytes) with TVer 0; `dest_qp` and `psn` are
    /// truncated to 24 bits and `pad_count` to 2.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) {
        packet.set_opcode(self.opcode);
        packet.set_flags(self.solicited, self.mig_req, self.pad_count, 0);
        packet.set_pkey(self.pkey);
        packet.set_fecn_becn(self.fecn, self.becn);
        packet.set_dest_qp(self.dest_qp);
        packet.set_ack_req(self.ack_req);
        packet.set_psn(self.psn);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // BTH of a scapy-built RC_RDMA_WRITE_ONLY: PadCnt 3, AckReq, QP 0x12, PSN 0xabc.
    static BYTES: [u8; 12] = [0x0a, 0x30, 0xff, 0xff, 0x00, 0x00, 0x00, 0x12, 0x80, 0x00, 0x0a, 0xbc];

    fn repr() -> Repr {
        Repr {
            opcode: Opcode::RC_RDMA_WRITE_ONLY,
            solicited: false,
            mig_req: false,
            pad_count: 3,
            pkey: 0xffff,
            fecn: false,
            becn: false,
            dest_qp: 0x12,
            ack_req: true,
            psn: 0xabc,
        }
    }

    #[test]
    fn deconstruct() {
        let p = Packet::new_checked(&BYTES[..]).unwrap();
        assert_eq!(p.opcode(), Opcode::RC_RDMA_WRITE_ONLY);
        assert_eq!(p.pad_count(), 3);
        assert_eq!(p.tver(), 0);
        assert_eq!(p.pkey(), 0xffff);
        assert_eq!(p.dest_qp(), 0x12);
        assert!(p.ack_req());
        assert_eq!(p.psn(), 0xabc);
        assert!(p.payload().is_empty());
    }

    #[test]
    fn parse_and_emit() {
        let p = Packet::new_checked(&BYTES[..]).unwrap();
        assert_eq!(Repr::parse(&p), Ok(repr()));
        let mut buf = [0xa5; 12];
        repr().emit(&mut Packet::new_unchecked(&mut buf[..]));
        assert_eq!(buf, BYTES);
    }

    #[test]
    fn every_bit_field() {
        let r = Repr {
            opcode: Opcode(0x2b),
            solicited: true,
            mig_req: true,
            pad_count: 2,
            pkey: 0x8001,
            fecn: true,
            becn: true,
            dest_qp: 0xfedcba,
            ack_req: true,
            psn: 0xffffff,
        };
        let mut buf = [0u8; 12];
        r.emit(&mut Packet::new_unchecked(&mut buf[..]));
        assert_eq!(buf, [0x2b, 0xe0, 0x80, 0x01, 0xc0, 0xfe, 0xdc, 0xba, 0x80, 0xff, 0xff, 0xff]);
        assert_eq!(Repr::parse(&Packet::new_unchecked(&buf[..])), Ok(r));
    }

    #[test]
    fn errors() {
        assert!(matches!(Packet::new_checked(&BYTES[..11]), Err(Error::Truncated { .. })));
        let mut buf = BYTES;
        buf[1] |= 0x01;
        assert_eq!(Repr::parse(&Packet::new_unchecked(&buf[..])), Err(Error::BthVersion(1)));
    }

    #[test]
    fn opcode_table() {
        let h = |op: Opcode| op.ext_headers().unwrap();
        assert!(h(Opcode::RC_SEND_ONLY).is_empty());
        assert_eq!(h(Opcode::RC_RDMA_WRITE_FIRST), ExtHeaders::RETH);
        assert_eq!(h(Opcode::RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE).len(), 20);
        assert_eq!(h(Opcode::RC_RDMA_READ_REQUEST), ExtHeaders::RETH);
        assert_eq!(h(Opcode::RC_RDMA_READ_RESPONSE_MIDDLE), ExtHeaders::NONE);
        assert_eq!(h(Opcode::RC_ACKNOWLEDGE), ExtHeaders::AETH);
        assert_eq!(h(Opcode(0x25)), ExtHeaders::IMMDT); // UC SEND_ONLY_WITH_IMMEDIATE
        for unsupported in [0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x1f, 0x2c, 0x64, 0x81] {
            assert_eq!(Opcode(unsupported).ext_headers(), Err(Error::UnsupportedOpcode(unsupported)));
        }
        assert_eq!(Opcode::RC_RDMA_WRITE_ONLY.to_string(), "RC_RDMA_WRITE_ONLY (0x0a)");
        assert_eq!(Opcode(0x2a).name().as_deref(), Some("UC_RDMA_WRITE_ONLY"));
        assert_eq!(Opcode(0x64).to_string(), "opcode 0x64");
    }
}
