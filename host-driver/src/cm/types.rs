//! What the CM engine ([`super::engine::CmEngine`]) takes and gives: MAD addresses, the
//! parameters of `connect` and `accept`, the rdma_cm-shaped events, the states of IBTA Vol 1
//! 12.9 and the typed errors of a bad API call.

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddrV4};

use super::mad::{private_len, MAD_BYTES};
use crate::qp_attr::Mtu;

/// Nanoseconds of one unit of the CM's timeout fields (IBTA Vol 1 12.6.5: 4.096 µs).
pub const CM_TIMEOUT_UNIT_NS: u64 = 4096;

/// The duration, in ns, that a 5-bit CM timeout exponent `exp` encodes: 4.096 µs × 2^`exp`
/// (IBTA Vol 1 12.6.5, "Remote/Local CM Response Timeout", and the packet life time of
/// 12.6.5's path fields). `exp` above 31 is read as 31.
pub fn cm_timeout_ns(exp: u8) -> u64 {
    CM_TIMEOUT_UNIT_NS << exp.min(31)
}

/// Private data bytes a consumer may put in a REQ of the RDMA IP CM service: the REQ's 92
/// bytes less the 36-byte IP CM header (IBTA Annex A11; `rdma_connect(3)`).
pub const REQ_USER_PRIVATE_DATA: usize = private_len::REQ - super::mad::IP_CM_HEADER_BYTES;

/// Where a MAD comes from or goes to: the port's GID (RoCEv2: the IPv4-mapped IPv6 address,
/// Annex A17) and the QPN (the GSI, QP1, for every CM MAD). The caller sends a MAD as
/// a UD SEND to this QPN with Q_Key [`super::mad::GSI_QKEY`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MadAddr {
    /// The port's GID.
    pub gid: Ipv6Addr,
    /// The QPN (24 bits; 1 for the GSI).
    pub qpn: u32,
}

impl MadAddr {
    /// QP1 of the RoCEv2 port with IPv4 address `ip`.
    pub fn gsi(ip: Ipv4Addr) -> Self {
        Self { gid: ip.to_ipv6_mapped(), qpn: 1 }
    }
}

/// A MAD the engine wants sent: the caller posts `mad` (256 bytes) on its QP1 as a UD SEND to
/// `dest` with Q_Key [`super::mad::GSI_QKEY`] (IBTA Vol 1 13.5.1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutMad {
    /// Where to send it.
    pub dest: MadAddr,
    /// The MAD.
    pub mad: [u8; MAD_BYTES],
}

/// A connection's identifier: the local communication ID the engine gave it (IBTA Vol 1
/// 12.6.5, "Local Communication ID"), never 0, unique among the engine's live connections.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CmId(pub(crate) u32);

impl CmId {
    /// The local communication ID this connection's MADs carry.
    pub fn local_comm_id(self) -> u32 {
        self.0
    }
}

impl std::fmt::Display for CmId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cm id {:#010x}", self.0)
    }
}

/// A connection's state, named as IBTA Vol 1 12.9 names it. A connection in
/// Idle is not kept: the engine forgets it, and [`super::engine::CmEngine::state`] answers
/// `None`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CmState {
    /// Active side: REQ sent, waiting for REP or REJ (resending the REQ on timeout).
    ReqSent,
    /// Passive side: REQ received and reported, waiting for the consumer's accept or reject.
    ReqRcvd,
    /// Passive side: REP sent, waiting for RTU (resending the REP on timeout).
    RepSent,
    /// Active side: REP received and reported, waiting for the consumer's establish or reject.
    RepRcvd,
    /// Both sides: connected.
    Established,
    /// DREQ sent, waiting for DREP (resending the DREQ on timeout).
    DreqSent,
    /// Disconnected; stray MADs of the old connection are answered until the timer ends.
    TimeWait,
}

/// The parameters of [`super::engine::CmEngine::connect`] (`rdma_connect(3)`'s
/// `rdma_conn_param` plus the resolved addresses), and the REQ fields they fill
/// (IBTA Vol 1 12.6.5).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnectParams {
    /// This side's address and TCP-like source port (the IP CM header's source).
    pub local: SocketAddrV4,
    /// The passive side's address and port (the port selects the service ID,
    /// [`super::mad::ip_service_id`]).
    pub remote: SocketAddrV4,
    /// The local RC QP's QPN (24 bits).
    pub qpn: u32,
    /// The first PSN the local QP expects to receive (24 bits): the REQ's Starting PSN, from
    /// which the passive side sends (IBTA Vol 1 12.7.23; ib_cm sets the passive side's
    /// `sq_psn` to it).
    pub starting_psn: u32,
    /// RDMA READs/atomics this side accepts as responder at once (its `max_dest_rd_atomic`).
    pub responder_resources: u8,
    /// RDMA READs/atomics this side issues at once (its `max_rd_atomic`).
    pub initiator_depth: u8,
    /// The path MTU.
    pub path_mtu: Mtu,
    /// RETRY_CNT the passive side's QP uses (3 bits).
    pub retry_count: u8,
    /// RNR_RETRY the passive side's QP uses (3 bits).
    pub rnr_retry_count: u8,
    /// Local ACK timeout exponent for the path (5 bits, 4.096 µs × 2^n).
    pub local_ack_timeout: u8,
    /// CM response timeout exponent, sent as both the REQ's Remote and Local CM Response
    /// Timeout (5 bits, 4.096 µs × 2^n; rdma_cm uses 20, about 4.3 s).
    pub cm_response_timeout: u8,
    /// Times each CM message is resent before the peer counts as unreachable (4 bits;
    /// rdma_cm uses 15).
    pub max_cm_retries: u8,
    /// GRH traffic class.
    pub traffic_class: u8,
    /// GRH hop limit.
    pub hop_limit: u8,
    /// The consumer's private data, at most [`REQ_USER_PRIVATE_DATA`] (56) bytes; it follows
    /// the 36-byte IP CM header (Annex A11) in the REQ.
    pub private_data: Vec<u8>,
}

impl ConnectParams {
    /// The parameters rdma_cm would use to connect QP `qpn` (starting PSN `starting_psn`)
    /// from `local` to `remote`: 4096-byte MTU, RETRY_CNT 7, RNR_RETRY 7, local ACK timeout
    /// 14, CM response timeout 20 (≈ 4.3 s), 15 CM retries, 1 READ/atomic each way, hop
    /// limit 64, no private data.
    pub fn new(local: SocketAddrV4, remote: SocketAddrV4, qpn: u32, starting_psn: u32) -> Self {
        Self {
            local,
            remote,
            qpn,
            starting_psn,
            responder_resources: 1,
            initiator_depth: 1,
            path_mtu: Mtu::Mtu4096,
            retry_count: 7,
            rnr_retry_count: 7,
            local_ack_timeout: 14,
            cm_response_timeout: 20,
            max_cm_retries: 15,
            traffic_class: 0,
            hop_limit: 64,
            private_data: Vec::new(),
        }
    }
}

/// The parameters of [`super::engine::CmEngine::accept`] (`rdma_accept(3)`), and the REP
/// fields they fill (IBTA Vol 1 12.6.8).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AcceptParams {
    /// The local RC QP's QPN (24 bits).
    pub qpn: u32,
    /// The first PSN the local QP expects to receive (24 bits): the REP's Starting PSN, from
    /// which the active side sends.
    pub starting_psn: u32,
    /// RDMA READs/atomics this side accepts as responder at once.
    pub responder_resources: u8,
    /// RDMA READs/atomics this side issues at once.
    pub initiator_depth: u8,
    /// RNR_RETRY the active side's QP uses (3 bits).
    pub rnr_retry_count: u8,
    /// The local QP uses an SRQ.
    pub srq: bool,
    /// Target ACK delay exponent (5 bits, 4.096 µs × 2^n).
    pub target_ack_delay: u8,
    /// Private data for the REP, at most 196 bytes.
    pub private_data: Vec<u8>,
}

impl AcceptParams {
    /// Accepting with QP `qpn` (starting PSN `starting_psn`): 1 READ/atomic each way,
    /// RNR_RETRY 7, no SRQ, target ACK delay 15 (as rxe reports), no private data.
    pub fn new(qpn: u32, starting_psn: u32) -> Self {
        Self {
            qpn,
            starting_psn,
            responder_resources: 1,
            initiator_depth: 1,
            rnr_retry_count: 7,
            srq: false,
            target_ack_delay: 15,
            private_data: Vec::new(),
        }
    }
}

/// A REQ a listener received (`RDMA_CM_EVENT_CONNECT_REQUEST`): what the passive side needs
/// to bring its QP to RTR and decide. `responder_resources` and `initiator_depth` are from
/// this side's point of view, as ib_cm and rdma_cm report them: the peer's initiator depth
/// and responder resources.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnectRequest {
    /// The new connection's id (accept or reject it).
    pub id: CmId,
    /// The service ID the REQ named (a listened one).
    pub service_id: u64,
    /// The active side's address and source port (IP CM header, Annex A11).
    pub src: SocketAddrV4,
    /// The address and port it connected to.
    pub dst: SocketAddrV4,
    /// Where its MADs come from (its QP1).
    pub peer: MadAddr,
    /// The active side's GID, from the REQ's primary path (RoCEv2: IPv4-mapped).
    pub peer_gid: Ipv6Addr,
    /// The active side's QPN: this side's QP's destination QPN.
    pub remote_qpn: u32,
    /// The REQ's Starting PSN, the first PSN the active side expects: this side's QP's first
    /// send PSN.
    pub starting_psn: u32,
    /// READs/atomics this side must accept as responder (the REQ's initiator depth).
    pub responder_resources: u8,
    /// READs/atomics this side may issue (the REQ's responder resources).
    pub initiator_depth: u8,
    /// The path MTU.
    pub path_mtu: Mtu,
    /// RETRY_CNT for this side's QP.
    pub retry_count: u8,
    /// RNR_RETRY for this side's QP.
    pub rnr_retry_count: u8,
    /// Local ACK timeout exponent of the path.
    pub local_ack_timeout: u8,
    /// The consumer's private data: the REQ's 56 bytes after the IP CM header.
    pub private_data: Vec<u8>,
}

/// A REP the active side received (`RDMA_CM_EVENT_CONNECT_RESPONSE`): the caller moves its
/// QP to RTR and RTS with these, then calls [`super::engine::CmEngine::establish`] (which
/// sends the RTU) or [`super::engine::CmEngine::reject`]. `responder_resources` and
/// `initiator_depth` are from this side's point of view (swapped from the REP's).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnectResponse {
    /// The connection.
    pub id: CmId,
    /// The passive side's QPN: this side's QP's destination QPN.
    pub remote_qpn: u32,
    /// The REP's Starting PSN, the first PSN the passive side expects: this side's QP's first
    /// send PSN.
    pub starting_psn: u32,
    /// READs/atomics this side must accept as responder (the REP's initiator depth).
    pub responder_resources: u8,
    /// READs/atomics this side may issue (the REP's responder resources).
    pub initiator_depth: u8,
    /// RNR_RETRY for this side's QP.
    pub rnr_retry_count: u8,
    /// The passive side's target ACK delay exponent.
    pub target_ack_delay: u8,
    /// The passive side uses an SRQ.
    pub srq: bool,
    /// The REP's private data (196 bytes).
    pub private_data: Vec<u8>,
}

/// One rdma_cm-shaped event (`rdma_cm(7)`, `enum rdma_cm_event_type`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CmEvent {
    /// `RDMA_CM_EVENT_CONNECT_REQUEST`: a new REQ for a listened service.
    ConnectRequest(Box<ConnectRequest>),
    /// `RDMA_CM_EVENT_CONNECT_RESPONSE`: the REP to our REQ.
    ConnectResponse(Box<ConnectResponse>),
    /// `RDMA_CM_EVENT_ESTABLISHED`: active side after its RTU is sent; passive side on the
    /// RTU or on [`super::engine::CmEngine::comm_established`].
    Established {
        /// The connection.
        id: CmId,
    },
    /// `RDMA_CM_EVENT_REJECTED`: the peer sent a REJ.
    Rejected {
        /// The connection (now gone).
        id: CmId,
        /// The REJ's reason (IBTA Vol 1 Table 112; [`reject_reason`]).
        reason: u16,
        /// The REJ's private data (148 bytes).
        private_data: Vec<u8>,
    },
    /// `RDMA_CM_EVENT_UNREACHABLE`: a REQ or REP was sent 1 + max CM retries times and
    /// never answered; a REJ with reason Timeout went to the peer.
    Unreachable {
        /// The connection (now gone).
        id: CmId,
    },
    /// `RDMA_CM_EVENT_DISCONNECTED`: a DREQ was received (and answered with DREP), or our
    /// DREQ was answered or its retries ran out. The connection is in TimeWait.
    Disconnected {
        /// The connection.
        id: CmId,
    },
    /// `RDMA_CM_EVENT_TIMEWAIT_EXIT`: TimeWait ended; the id is gone and the QP may be
    /// reused.
    TimewaitExit {
        /// The connection (now gone).
        id: CmId,
    },
}

impl CmEvent {
    /// The connection the event is about.
    pub fn id(&self) -> CmId {
        match self {
            Self::ConnectRequest(r) => r.id,
            Self::ConnectResponse(r) => r.id,
            Self::Established { id }
            | Self::Rejected { id, .. }
            | Self::Unreachable { id }
            | Self::Disconnected { id }
            | Self::TimewaitExit { id } => *id,
        }
    }
}

/// REJ reasons the engine sends or reads (IBTA Vol 1 12.6.7, Table 112).
pub mod reject_reason {
    /// The sender timed out waiting for a response.
    pub const TIMEOUT: u16 = 4;
    /// The REQ's service ID has no listener.
    pub const INVALID_SERVICE_ID: u16 = 8;
    /// The REQ asks for a transport service other than RC.
    pub const INVALID_TRANSPORT_TYPE: u16 = 9;
    /// A REQ for a connection that is in TimeWait.
    pub const STALE_CONNECTION: u16 = 10;
    /// The REQ's path MTU is not 256…4096.
    pub const INVALID_MTU: u16 = 26;
    /// The consumer rejected (`rdma_reject(3)`); the private data says why.
    pub const CONSUMER: u16 = 28;
}

/// A bad call of the engine's API. Nothing is sent and no state changes when one is
/// returned.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CmError {
    /// No live connection has this id (never made, or already gone).
    #[error("{0}: no such connection")]
    UnknownId(CmId),
    /// The call is not valid in the connection's state (IBTA Vol 1 12.9).
    #[error("{id}: {call} is not valid in state {state:?}")]
    WrongState {
        /// The connection.
        id: CmId,
        /// Its state.
        state: CmState,
        /// The call (`accept`, `reject`, `establish`, `disconnect`, `comm_established`).
        call: &'static str,
    },
    /// Private data longer than the message carries.
    #[error("{len} bytes of private data, at most {max} fit")]
    PrivateDataTooLong {
        /// Bytes given.
        len: usize,
        /// Bytes the message carries for the consumer.
        max: usize,
    },
    /// A field out of its range (a QPN or PSN over 24 bits, a 3-, 4- or 5-bit field too big).
    #[error("{0}")]
    InvalidArgument(String),
    /// The service (port) already has a listener.
    #[error("service id {0:#018x} already has a listener")]
    AlreadyListening(u64),
    /// The service (port) has no listener.
    #[error("service id {0:#018x} has no listener")]
    NotListening(u64),
}

/// Counts of received MADs the engine did not turn into progress (each is dropped, counted,
/// and sends at most a REJ or DREP back, as IBTA Vol 1 12.9 asks).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CmStats {
    /// MADs given to [`super::engine::CmEngine::handle_mad`].
    pub received: u64,
    /// MADs the engine queued for sending (including retransmissions).
    pub sent: u64,
    /// Of `sent`, resent after a timeout.
    pub retransmitted: u64,
    /// Not a CM MAD, too short, or not a SEND.
    pub malformed: u64,
    /// CM attributes the engine does not handle (LAP, APR, SIDR).
    pub unsupported: u64,
    /// Messages for no live connection, or one in a state that ignores them.
    pub stray: u64,
    /// Duplicates of a REQ, REP, RTU or DREQ already handled (answered again, or with an
    /// MRA, where IBTA says so).
    pub duplicate: u64,
    /// REQs rejected by the engine itself (no listener, bad transport, MTU or header).
    pub rejected_req: u64,
}
