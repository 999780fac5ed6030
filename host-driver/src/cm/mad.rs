//! Communication management MADs on the wire (IBTA Vol 1 ch. 12.6 and 13.4; RoCEv2 per
//! Annex A17): the 256-byte MAD a CM sends to QP1 in a UD SEND, its 24-byte common header
//! ([`MadHeader`]) and the connection messages REQ, MRA, REP, RTU, REJ, DREQ and DREP
//! ([`CmMessage`]), each parsed from and emitted to bytes field by field.
//!
//! Fields are big-endian; a bit field is named by its byte offset in the message's data area
//! (after the common header), its first bit counted from the byte's most significant bit, and
//! its width, as IBTA's tables give them. Reserved bits are emitted as zero and ignored on
//! parse. The tests check the emitted bytes against Wireshark's InfiniBand dissector.

use std::fmt;

/// Bytes of a MAD (the payload of the UD SEND carrying it).
pub const MAD_BYTES: usize = 256;
/// Bytes of the common MAD header (IBTA Vol 1 13.4.3).
pub const MAD_HEADER_BYTES: usize = 24;
/// Bytes of a CM message's data area.
pub const CM_DATA_BYTES: usize = MAD_BYTES - MAD_HEADER_BYTES;
/// `MgmtClass` of communication management.
pub const MGMT_CLASS_CM: u8 = 0x07;
/// `BaseVersion` of every MAD.
pub const MAD_BASE_VERSION: u8 = 1;
/// `ClassVersion` of the CM class (IBTA 1.2 and later).
pub const CM_CLASS_VERSION: u8 = 2;
/// `Method` SEND: every CM message is one (IBTA Vol 1 12.11).
pub const METHOD_SEND: u8 = 0x03;
/// The Q_Key every CM MAD to QP1 carries in its DETH (IBTA Vol 1 13.5.1, the GSI Q_Key).
pub const GSI_QKEY: u32 = 0x8001_0000;

/// `AttributeID`s of the CM messages (IBTA Vol 1 Table 111).
pub mod attr {
    /// ConnectRequest.
    pub const REQ: u16 = 0x0010;
    /// MsgRcptAck.
    pub const MRA: u16 = 0x0011;
    /// ConnectReject.
    pub const REJ: u16 = 0x0012;
    /// ConnectReply.
    pub const REP: u16 = 0x0013;
    /// ReadyToUse.
    pub const RTU: u16 = 0x0014;
    /// DisconnectRequest.
    pub const DREQ: u16 = 0x0015;
    /// DisconnectReply.
    pub const DREP: u16 = 0x0016;
}

/// Private data bytes each message carries (IBTA Vol 1 12.6).
pub mod private_len {
    /// REQ.
    pub const REQ: usize = 92;
    /// MRA.
    pub const MRA: usize = 222;
    /// REP.
    pub const REP: usize = 196;
    /// RTU.
    pub const RTU: usize = 224;
    /// REJ.
    pub const REJ: usize = 148;
    /// DREQ.
    pub const DREQ: usize = 220;
    /// DREP.
    pub const DREP: usize = 224;
}

/// Why bytes are not a CM message this module knows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MadError {
    /// Fewer than [`MAD_BYTES`] bytes.
    Truncated(usize),
    /// Not a CM MAD of class version 2 (base version, class, class version).
    NotCm(u8, u8, u8),
    /// A CM attribute this module does not parse (LAP, APR, SIDR).
    UnknownAttribute(u16),
}

impl fmt::Display for MadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Truncated(n) => write!(f, "a MAD is {MAD_BYTES} bytes, got {n}"),
            Self::NotCm(b, c, v) => {
                write!(f, "not a CM MAD: base version {b}, class {c:#04x}, class version {v} (want 1, 0x07, 2)")
            }
            Self::UnknownAttribute(a) => {
                write!(f, "CM attribute {a:#06x} is not REQ, MRA, REP, RTU, REJ, DREQ or DREP")
            }
        }
    }
}

impl std::error::Error for MadError {}

/// The fields of the common MAD header a CM sets (IBTA Vol 1 13.4.3); base version 1, class
/// 0x07 and class version 2 are implied.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MadHeader {
    /// `Method` ([`METHOD_SEND`] for every CM message).
    pub method: u8,
    /// `Status` (0 in a SEND).
    pub status: u16,
    /// `ClassSpecific` (0 for CM).
    pub class_specific: u16,
    /// `TransactionID`: the sender's; a REP or REJ echoes the REQ's.
    pub transaction_id: u64,
    /// `AttributeID` ([`attr`]).
    pub attribute_id: u16,
    /// `AttributeModifier` (0 for the messages here).
    pub attribute_modifier: u32,
}

/// Reads the bit field at `byte`, `bit` (from the MSB), `width` ≤ 64 bits, big-endian.
fn get(d: &[u8], byte: usize, bit: usize, width: usize) -> u64 {
    let mut v = 0u64;
    for i in 0..width {
        let b = bit + i;
        let set = d[byte + b / 8] >> (7 - b % 8) & 1;
        v = v << 1 | u64::from(set);
    }
    v
}

/// Writes `value`'s low `width` bits as the bit field at `byte`, `bit` (from the MSB).
fn put(d: &mut [u8], byte: usize, bit: usize, width: usize, value: u64) {
    for i in 0..width {
        let b = bit + i;
        let set = (value >> (width - 1 - i)) & 1 == 1;
        let m = 1u8 << (7 - b % 8);
        if set {
            d[byte + b / 8] |= m;
        } else {
            d[byte + b / 8] &= !m;
        }
    }
}

fn get16(d: &[u8], byte: usize) -> [u8; 16] {
    let mut g = [0u8; 16];
    g.copy_from_slice(&d[byte..byte + 16]);
    g
}

impl MadHeader {
    /// A CM SEND with `attribute_id` and `transaction_id`.
    pub fn cm_send(attribute_id: u16, transaction_id: u64) -> Self {
        Self { method: METHOD_SEND, attribute_id, transaction_id, ..Self::default() }
    }

    /// Parses the common header of a CM MAD.
    ///
    /// # Errors
    /// [`MadError::Truncated`], [`MadError::NotCm`].
    pub fn parse(mad: &[u8]) -> Result<Self, MadError> {
        if mad.len() < MAD_BYTES {
            return Err(MadError::Truncated(mad.len()));
        }
        if (mad[0], mad[1], mad[2]) != (MAD_BASE_VERSION, MGMT_CLASS_CM, CM_CLASS_VERSION) {
            return Err(MadError::NotCm(mad[0], mad[1], mad[2]));
        }
        Ok(Self {
            method: mad[3],
            status: get(mad, 4, 0, 16) as u16,
            class_specific: get(mad, 6, 0, 16) as u16,
            transaction_id: get(mad, 8, 0, 64),
            attribute_id: get(mad, 16, 0, 16) as u16,
            attribute_modifier: get(mad, 20, 0, 32) as u32,
        })
    }

    /// Writes the header into the first [`MAD_HEADER_BYTES`] of `mad`.
    pub fn emit(&self, mad: &mut [u8]) {
        mad[..MAD_HEADER_BYTES].fill(0);
        mad[0] = MAD_BASE_VERSION;
        mad[1] = MGMT_CLASS_CM;
        mad[2] = CM_CLASS_VERSION;
        mad[3] = self.method;
        put(mad, 4, 0, 16, self.status.into());
        put(mad, 6, 0, 16, self.class_specific.into());
        put(mad, 8, 0, 64, self.transaction_id);
        put(mad, 16, 0, 16, self.attribute_id.into());
        put(mad, 20, 0, 32, self.attribute_modifier.into());
    }
}

/// ConnectRequest (IBTA Vol 1 12.6.5), the fields an RC connection over RoCEv2 uses; the
/// alternate path is emitted as zeros (no automatic path migration).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Req {
    /// The requester's communication ID.
    pub local_comm_id: u32,
    /// The service (RDMA IP CM: [`ip_service_id`]).
    pub service_id: u64,
    /// The requester's CA GUID.
    pub local_ca_guid: u64,
    /// Q_Key (unused by RC).
    pub local_qkey: u32,
    /// The requester's QPN (24 bits).
    pub local_qpn: u32,
    /// RDMA READs/atomics the requester accepts as responder (`max_dest_rd_atomic`).
    pub responder_resources: u8,
    /// RDMA READs/atomics the requester issues at once (`max_rd_atomic`).
    pub initiator_depth: u8,
    /// How long the passive side may take to answer: 4.096 µs × 2^n (5 bits).
    pub remote_cm_response_timeout: u8,
    /// 0 RC, 1 UC, 3 XRC (2 bits).
    pub transport_service_type: u8,
    /// End-to-end flow control (1 bit).
    pub end_to_end_flow_control: bool,
    /// The requester's starting PSN (24 bits).
    pub starting_psn: u32,
    /// 4.096 µs × 2^n (5 bits).
    pub local_cm_response_timeout: u8,
    /// RETRY_CNT (3 bits).
    pub retry_count: u8,
    /// P_Key.
    pub pkey: u16,
    /// Path MTU: 1 = 256 … 5 = 4096 (4 bits).
    pub path_mtu: u8,
    /// RNR_RETRY (3 bits).
    pub rnr_retry_count: u8,
    /// Times the CM resends before giving up (4 bits).
    pub max_cm_retries: u8,
    /// The requester's QP uses an SRQ.
    pub srq: bool,
    /// Primary path LIDs (RoCE: 0xFFFF, the permissive LID).
    pub primary_local_lid: u16,
    /// See `primary_local_lid`.
    pub primary_remote_lid: u16,
    /// Primary path GIDs (RoCEv2: IPv4-mapped IPv6 addresses).
    pub primary_local_gid: [u8; 16],
    /// See `primary_local_gid`.
    pub primary_remote_gid: [u8; 16],
    /// Flow label (20 bits).
    pub primary_flow_label: u32,
    /// Packet rate (6 bits).
    pub primary_packet_rate: u8,
    /// Traffic class.
    pub primary_traffic_class: u8,
    /// Hop limit.
    pub primary_hop_limit: u8,
    /// Service level (4 bits).
    pub primary_sl: u8,
    /// Subnet local (1 bit).
    pub primary_subnet_local: bool,
    /// Local ACK timeout: 4.096 µs × 2^n (5 bits).
    pub primary_local_ack_timeout: u8,
    /// Private data ([`private_len::REQ`] bytes; RDMA IP CM: [`IpCmHeader`] then 56 bytes).
    pub private_data: [u8; private_len::REQ],
}

/// MsgRcptAck (IBTA Vol 1 12.6.6): "your message arrived, the answer takes longer".
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mra {
    /// The sender's communication ID.
    pub local_comm_id: u32,
    /// The peer's (0 if unknown).
    pub remote_comm_id: u32,
    /// What is acknowledged: 0 REQ, 1 REP, 2 other (LAP) (2 bits).
    pub message_mraed: u8,
    /// How long the answer may take: 4.096 µs × 2^n (5 bits).
    pub service_timeout: u8,
    /// Private data ([`private_len::MRA`] bytes).
    pub private_data: [u8; private_len::MRA],
}

/// ConnectReply (IBTA Vol 1 12.6.8).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rep {
    /// The replier's communication ID.
    pub local_comm_id: u32,
    /// The requester's (from its REQ).
    pub remote_comm_id: u32,
    /// Q_Key.
    pub local_qkey: u32,
    /// The replier's QPN (24 bits).
    pub local_qpn: u32,
    /// The replier's starting PSN (24 bits).
    pub starting_psn: u32,
    /// READs/atomics the replier accepts as responder.
    pub responder_resources: u8,
    /// READs/atomics the replier issues at once.
    pub initiator_depth: u8,
    /// 4.096 µs × 2^n (5 bits).
    pub target_ack_delay: u8,
    /// Failover accepted (2 bits).
    pub failover_accepted: u8,
    /// End-to-end flow control.
    pub end_to_end_flow_control: bool,
    /// RNR_RETRY (3 bits).
    pub rnr_retry_count: u8,
    /// The replier's QP uses an SRQ.
    pub srq: bool,
    /// The replier's CA GUID.
    pub local_ca_guid: u64,
    /// Private data ([`private_len::REP`] bytes).
    pub private_data: [u8; private_len::REP],
}

/// ReadyToUse (IBTA Vol 1 12.6.9).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rtu {
    /// The sender's communication ID.
    pub local_comm_id: u32,
    /// The peer's.
    pub remote_comm_id: u32,
    /// Private data ([`private_len::RTU`] bytes).
    pub private_data: [u8; private_len::RTU],
}

/// ConnectReject (IBTA Vol 1 12.6.7).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rej {
    /// The sender's communication ID.
    pub local_comm_id: u32,
    /// The peer's (0 if unknown).
    pub remote_comm_id: u32,
    /// What is rejected: 0 REQ, 1 REP, 2 no message (timeout) (2 bits).
    pub message_rejected: u8,
    /// Bytes of `additional_reject_info` that mean something (7 bits).
    pub reject_info_length: u8,
    /// The reason (IBTA Table 112: 28 consumer reject, 8 invalid service ID, …).
    pub reason: u16,
    /// Additional reject information (72 bytes).
    pub additional_reject_info: [u8; 72],
    /// Private data ([`private_len::REJ`] bytes).
    pub private_data: [u8; private_len::REJ],
}

/// DisconnectRequest (IBTA Vol 1 12.6.10).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dreq {
    /// The sender's communication ID.
    pub local_comm_id: u32,
    /// The peer's.
    pub remote_comm_id: u32,
    /// The receiver's QPN (24 bits).
    pub remote_qpn: u32,
    /// Private data ([`private_len::DREQ`] bytes).
    pub private_data: [u8; private_len::DREQ],
}

/// DisconnectReply (IBTA Vol 1 12.6.11).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Drep {
    /// The sender's communication ID.
    pub local_comm_id: u32,
    /// The peer's.
    pub remote_comm_id: u32,
    /// Private data ([`private_len::DREP`] bytes).
    pub private_data: [u8; private_len::DREP],
}

/// One CM message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CmMessage {
    /// ConnectRequest.
    Req(Box<Req>),
    /// MsgRcptAck.
    Mra(Box<Mra>),
    /// ConnectReply.
    Rep(Box<Rep>),
    /// ReadyToUse.
    Rtu(Box<Rtu>),
    /// ConnectReject.
    Rej(Box<Rej>),
    /// DisconnectRequest.
    Dreq(Box<Dreq>),
    /// DisconnectReply.
    Drep(Box<Drep>),
}

fn private<const N: usize>(d: &[u8], off: usize) -> [u8; N] {
    let mut p = [0u8; N];
    p.copy_from_slice(&d[off..off + N]);
    p
}

impl CmMessage {
    /// The message's `AttributeID`.
    pub fn attribute_id(&self) -> u16 {
        match self {
            Self::Req(_) => attr::REQ,
            Self::Mra(_) => attr::MRA,
            Self::Rep(_) => attr::REP,
            Self::Rtu(_) => attr::RTU,
            Self::Rej(_) => attr::REJ,
            Self::Dreq(_) => attr::DREQ,
            Self::Drep(_) => attr::DREP,
        }
    }

    /// Parses a CM MAD: its header and message.
    ///
    /// # Errors
    /// [`MadError`]: too short, not a CM MAD, or an attribute not handled here.
    pub fn parse(mad: &[u8]) -> Result<(MadHeader, Self), MadError> {
        let h = MadHeader::parse(mad)?;
        let d = &mad[MAD_HEADER_BYTES..MAD_BYTES];
        let g32 = |o: usize| get(d, o, 0, 32) as u32;
        let m = match h.attribute_id {
            attr::REQ => Self::Req(Box::new(Req {
                local_comm_id: g32(0),
                service_id: get(d, 8, 0, 64),
                local_ca_guid: get(d, 16, 0, 64),
                local_qkey: g32(28),
                local_qpn: get(d, 32, 0, 24) as u32,
                responder_resources: d[35],
                initiator_depth: d[39],
                remote_cm_response_timeout: get(d, 43, 0, 5) as u8,
                transport_service_type: get(d, 43, 5, 2) as u8,
                end_to_end_flow_control: get(d, 43, 7, 1) == 1,
                starting_psn: get(d, 44, 0, 24) as u32,
                local_cm_response_timeout: get(d, 47, 0, 5) as u8,
                retry_count: get(d, 47, 5, 3) as u8,
                pkey: get(d, 48, 0, 16) as u16,
                path_mtu: get(d, 50, 0, 4) as u8,
                rnr_retry_count: get(d, 50, 5, 3) as u8,
                max_cm_retries: get(d, 51, 0, 4) as u8,
                srq: get(d, 51, 4, 1) == 1,
                primary_local_lid: get(d, 52, 0, 16) as u16,
                primary_remote_lid: get(d, 54, 0, 16) as u16,
                primary_local_gid: get16(d, 56),
                primary_remote_gid: get16(d, 72),
                primary_flow_label: get(d, 88, 0, 20) as u32,
                primary_packet_rate: get(d, 91, 2, 6) as u8,
                primary_traffic_class: d[92],
                primary_hop_limit: d[93],
                primary_sl: get(d, 94, 0, 4) as u8,
                primary_subnet_local: get(d, 94, 4, 1) == 1,
                primary_local_ack_timeout: get(d, 95, 0, 5) as u8,
                private_data: private(d, 140),
            })),
            attr::MRA => Self::Mra(Box::new(Mra {
                local_comm_id: g32(0),
                remote_comm_id: g32(4),
                message_mraed: get(d, 8, 0, 2) as u8,
                service_timeout: get(d, 9, 0, 5) as u8,
                private_data: private(d, 10),
            })),
            attr::REP => Self::Rep(Box::new(Rep {
                local_comm_id: g32(0),
                remote_comm_id: g32(4),
                local_qkey: g32(8),
                local_qpn: get(d, 12, 0, 24) as u32,
                starting_psn: get(d, 20, 0, 24) as u32,
                responder_resources: d[24],
                initiator_depth: d[25],
                target_ack_delay: get(d, 26, 0, 5) as u8,
                failover_accepted: get(d, 26, 5, 2) as u8,
                end_to_end_flow_control: get(d, 26, 7, 1) == 1,
                rnr_retry_count: get(d, 27, 0, 3) as u8,
                srq: get(d, 27, 3, 1) == 1,
                local_ca_guid: get(d, 28, 0, 64),
                private_data: private(d, 36),
            })),
            attr::RTU => {
                Self::Rtu(Box::new(Rtu { local_comm_id: g32(0), remote_comm_id: g32(4), private_data: private(d, 8) }))
            }
            attr::REJ => Self::Rej(Box::new(Rej {
                local_comm_id: g32(0),
                remote_comm_id: g32(4),
                message_rejected: get(d, 8, 0, 2) as u8,
                reject_info_length: get(d, 9, 0, 7) as u8,
                reason: get(d, 10, 0, 16) as u16,
                additional_reject_info: private(d, 12),
                private_data: private(d, 84),
            })),
            attr::DREQ => Self::Dreq(Box::new(Dreq {
                local_comm_id: g32(0),
                remote_comm_id: g32(4),
                remote_qpn: get(d, 8, 0, 24) as u32,
                private_data: private(d, 12),
            })),
            attr::DREP => Self::Drep(Box::new(Drep {
                local_comm_id: g32(0),
                remote_comm_id: g32(4),
                private_data: private(d, 8),
            })),
            a => return Err(MadError::UnknownAttribute(a)),
        };
        Ok((h, m))
    }

    /// The 256-byte MAD of this message: a CM SEND with `transaction_id`.
    pub fn emit(&self, transaction_id: u64) -> [u8; MAD_BYTES] {
        let mut mad = [0u8; MAD_BYTES];
        MadHeader::cm_send(self.attribute_id(), transaction_id).emit(&mut mad);
        let d = &mut mad[MAD_HEADER_BYTES..];
        match self {
            Self::Req(r) => {
                put(d, 0, 0, 32, r.local_comm_id.into());
                put(d, 8, 0, 64, r.service_id);
                put(d, 16, 0, 64, r.local_ca_guid);
                put(d, 28, 0, 32, r.local_qkey.into());
                put(d, 32, 0, 24, r.local_qpn.into());
                d[35] = r.responder_resources;
                d[39] = r.initiator_depth;
                put(d, 43, 0, 5, r.remote_cm_response_timeout.into());
                put(d, 43, 5, 2, r.transport_service_type.into());
                put(d, 43, 7, 1, r.end_to_end_flow_control.into());
                put(d, 44, 0, 24, r.starting_psn.into());
                put(d, 47, 0, 5, r.local_cm_response_timeout.into());
                put(d, 47, 5, 3, r.retry_count.into());
                put(d, 48, 0, 16, r.pkey.into());
                put(d, 50, 0, 4, r.path_mtu.into());
                put(d, 50, 5, 3, r.rnr_retry_count.into());
                put(d, 51, 0, 4, r.max_cm_retries.into());
                put(d, 51, 4, 1, r.srq.into());
                put(d, 52, 0, 16, r.primary_local_lid.into());
                put(d, 54, 0, 16, r.primary_remote_lid.into());
                d[56..72].copy_from_slice(&r.primary_local_gid);
                d[72..88].copy_from_slice(&r.primary_remote_gid);
                put(d, 88, 0, 20, r.primary_flow_label.into());
                put(d, 91, 2, 6, r.primary_packet_rate.into());
                d[92] = r.primary_traffic_class;
                d[93] = r.primary_hop_limit;
                put(d, 94, 0, 4, r.primary_sl.into());
                put(d, 94, 4, 1, r.primary_subnet_local.into());
                put(d, 95, 0, 5, r.primary_local_ack_timeout.into());
                d[140..].copy_from_slice(&r.private_data);
            }
            Self::Mra(r) => {
                put(d, 0, 0, 32, r.local_comm_id.into());
                put(d, 4, 0, 32, r.remote_comm_id.into());
                put(d, 8, 0, 2, r.message_mraed.into());
                put(d, 9, 0, 5, r.service_timeout.into());
                d[10..].copy_from_slice(&r.private_data);
            }
            Self::Rep(r) => {
                put(d, 0, 0, 32, r.local_comm_id.into());
                put(d, 4, 0, 32, r.remote_comm_id.into());
                put(d, 8, 0, 32, r.local_qkey.into());
                put(d, 12, 0, 24, r.local_qpn.into());
                put(d, 20, 0, 24, r.starting_psn.into());
                d[24] = r.responder_resources;
                d[25] = r.initiator_depth;
                put(d, 26, 0, 5, r.target_ack_delay.into());
                put(d, 26, 5, 2, r.failover_accepted.into());
                put(d, 26, 7, 1, r.end_to_end_flow_control.into());
                put(d, 27, 0, 3, r.rnr_retry_count.into());
                put(d, 27, 3, 1, r.srq.into());
                put(d, 28, 0, 64, r.local_ca_guid);
                d[36..].copy_from_slice(&r.private_data);
            }
            Self::Rtu(r) => {
                put(d, 0, 0, 32, r.local_comm_id.into());
                put(d, 4, 0, 32, r.remote_comm_id.into());
                d[8..].copy_from_slice(&r.private_data);
            }
            Self::Rej(r) => {
                put(d, 0, 0, 32, r.local_comm_id.into());
                put(d, 4, 0, 32, r.remote_comm_id.into());
                put(d, 8, 0, 2, r.message_rejected.into());
                put(d, 9, 0, 7, r.reject_info_length.into());
                put(d, 10, 0, 16, r.reason.into());
                d[12..84].copy_from_slice(&r.additional_reject_info);
                d[84..].copy_from_slice(&r.private_data);
            }
            Self::Dreq(r) => {
                put(d, 0, 0, 32, r.local_comm_id.into());
                put(d, 4, 0, 32, r.remote_comm_id.into());
                put(d, 8, 0, 24, r.remote_qpn.into());
                d[12..].copy_from_slice(&r.private_data);
            }
            Self::Drep(r) => {
                put(d, 0, 0, 32, r.local_comm_id.into());
                put(d, 4, 0, 32, r.remote_comm_id.into());
                d[8..].copy_from_slice(&r.private_data);
            }
        }
        mad
    }
}

/// The service ID of an RDMA IP CM service (IBTA Annex A11, as librdmacm forms it for
/// RDMA_PS_TCP): `0x0000_0000_01` prefix, port space 0x06, then the TCP port.
pub fn ip_service_id(port: u16) -> u64 {
    0x0000_0000_0106_0000 | u64::from(port)
}

/// The header librdmacm puts at the start of a REQ's private data (IBTA Annex A11, the IP CM
/// service's "CM REQ private data format"): version, IP version, the source port and both
/// addresses; the consumer's private data (up to 56 bytes) follows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IpCmHeader {
    /// The active side's TCP-like source port.
    pub src_port: u16,
    /// The active side's address.
    pub src: std::net::Ipv4Addr,
    /// The passive side's address.
    pub dst: std::net::Ipv4Addr,
}

/// Bytes of [`IpCmHeader`] at the start of a REQ's private data.
pub const IP_CM_HEADER_BYTES: usize = 36;

impl IpCmHeader {
    /// Parses the header of an IPv4 RDMA IP CM REQ's private data; None for another version.
    pub fn parse(p: &[u8]) -> Option<Self> {
        if p.len() < IP_CM_HEADER_BYTES || p[0] != 0 || p[1] >> 4 != 4 {
            return None;
        }
        let v4 = |o: usize| std::net::Ipv4Addr::new(p[o + 12], p[o + 13], p[o + 14], p[o + 15]);
        Some(Self { src_port: u16::from_be_bytes([p[2], p[3]]), src: v4(4), dst: v4(20) })
    }

    /// Writes the header (major and minor version 0, IP version 4, the IPv4 addresses in the
    /// last 4 of their 16 bytes) into `p`.
    pub fn emit(&self, p: &mut [u8]) {
        p[..IP_CM_HEADER_BYTES].fill(0);
        p[1] = 4 << 4;
        p[2..4].copy_from_slice(&self.src_port.to_be_bytes());
        p[16..20].copy_from_slice(&self.src.octets());
        p[32..36].copy_from_slice(&self.dst.octets());
    }
}
