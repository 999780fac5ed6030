//! The connection manager's protocol engine (IBTA Vol 1 ch. 12; RoCEv2 per Annex A17; the
//! RDMA IP CM service of Annex A11), sans-IO: no sockets, no threads, no clock of its own.
//!
//! The caller feeds it application calls ([`CmEngine::connect`], [`CmEngine::accept`], …),
//! the MADs its QP1 received ([`CmEngine::handle_mad`]) and the time
//! ([`CmEngine::handle_timeout`] at [`CmEngine::next_timeout`]); it takes back the MADs to
//! send ([`CmEngine::poll_transmit`], each a UD SEND to the peer's QP1 with Q_Key
//! [`super::mad::GSI_QKEY`]) and rdma_cm-shaped events ([`CmEngine::poll_event`]). Time is
//! nanoseconds on any monotonic clock the caller chooses.
//!
//! The state machine is IBTA Vol 1 12.9's ([`CmState`]); what happens to
//! duplicates and strays follows 12.9 and what Linux ib_cm does, so that a Linux peer (rxe,
//! rdma_cm) can talk to it:
//! - a REQ's retransmission reuses the REQ's TID; a REP, RTU and REJ answering it echo that
//!   TID; a DREQ has a TID of its own and the DREP echoes it;
//! - a duplicate REQ gets the REP again if one was sent, an MRA while the consumer decides
//!   (as Linux does since it prepares its MRA instead of sending it at once); a REQ for a
//!   connection in TimeWait gets REJ "stale connection";
//! - a duplicate REP gets the RTU again on an established connection, an MRA while the
//!   consumer decides;
//! - an MRA for our REQ or REP stretches the wait for the answer to its service timeout;
//! - a REQ for a service with no listener gets REJ "invalid service ID";
//! - a DREQ in any connected state, or for a connection the engine does not know, gets a DREP;
//! - REP, RTU, REJ and DREP for no live connection are dropped and counted.
//!
//! Two engines, the wire between them a loop (on a NIC: UD SENDs on QP1):
//!
//! ```
//! use std::net::{Ipv4Addr, SocketAddrV4};
//! use rnic::cm::{AcceptParams, CmConfig, CmEngine, CmEvent, ConnectParams, MadAddr};
//!
//! let (ip_a, ip_b) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
//! let mut a = CmEngine::new(CmConfig::new(0xA, 1));
//! let mut b = CmEngine::new(CmConfig::new(0xB, 1));
//! b.listen(7174)?;
//! let carry = |from: &mut CmEngine, to: &mut CmEngine, src: Ipv4Addr| {
//!     while let Some(out) = from.poll_transmit() {
//!         to.handle_mad(0, MadAddr::gsi(src), &out.mad);
//!     }
//! };
//! let params = ConnectParams::new(SocketAddrV4::new(ip_a, 40000), SocketAddrV4::new(ip_b, 7174), 0x11, 100);
//! let id_a = a.connect(0, &params)?;
//! carry(&mut a, &mut b, ip_a);
//! let Some(CmEvent::ConnectRequest(req)) = b.poll_event() else { panic!() };
//! assert_eq!(req.remote_qpn, 0x11); // B's QP: RESET → INIT → RTR with these, then accept
//! b.accept(0, req.id, &AcceptParams::new(0x22, 200))?;
//! carry(&mut b, &mut a, ip_b);
//! let Some(CmEvent::ConnectResponse(rep)) = a.poll_event() else { panic!() };
//! assert_eq!((rep.remote_qpn, rep.starting_psn), (0x22, 200)); // A's QP: RTR, RTS
//! a.establish(0, id_a)?;
//! carry(&mut a, &mut b, ip_a);
//! assert_eq!(a.poll_event(), Some(CmEvent::Established { id: id_a }));
//! assert_eq!(b.poll_event(), Some(CmEvent::Established { id: req.id }));
//! # Ok::<(), rnic::cm::CmError>(())
//! ```

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::net::SocketAddrV4;

use super::mad::{
    ip_service_id, private_len, CmMessage, Drep, Dreq, IpCmHeader, MadError, Mra, Rej, Rep, Req, Rtu,
    IP_CM_HEADER_BYTES, MAD_BYTES, METHOD_SEND,
};
use super::types::{
    cm_timeout_ns, reject_reason, AcceptParams, CmError, CmEvent, CmId, CmState, CmStats, ConnectParams,
    ConnectRequest, ConnectResponse, MadAddr, OutMad, REQ_USER_PRIVATE_DATA,
};
use crate::qp_attr::Mtu;

/// The P_Key of every RoCEv2 REQ (the default partition, full membership).
const DEFAULT_PKEY: u16 = 0xFFFF;
/// The permissive LID a RoCE REQ carries in its LID fields (Annex A17), as Linux rdma_cm sends it.
const PERMISSIVE_LID: u16 = 0xFFFF;
/// The REQ's packet rate field: 0, as Linux rdma_cm over rxe sends it (docs/guests.md 4.5).
const PACKET_RATE: u8 = 0;
/// `MessageRejected` of a REJ (IBTA Vol 1 12.6.7): the REQ, the REP, or no message (timeout).
const REJECTED_REQ: u8 = 0;
const REJECTED_REP: u8 = 1;
const REJECTED_OTHER: u8 = 2;
/// `MessageMRAed` of an MRA (IBTA Vol 1 12.6.6): the REQ or the REP.
const MRAED_REQ: u8 = 0;
const MRAED_REP: u8 = 1;
/// The widest 24-bit value (QPN, PSN).
const MAX_24: u32 = 0xFF_FFFF;

/// How an engine identifies itself and times the exchange.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CmConfig {
    /// This CA's GUID (the REQ's and REP's Local CA GUID; RoCE: the EUI-64 of the MAC).
    pub local_ca_guid: u64,
    /// Packet life time exponent of the paths (4.096 µs × 2^n): a retransmission waits the
    /// peer's response timeout plus twice this, and TimeWait lasts twice this. rdma_cm uses
    /// 16 (≈ 268 ms) on RoCE.
    pub packet_life_time: u8,
    /// The first local communication ID to hand out; the caller should pass a random value,
    /// so that IDs differ across restarts (the engine has no random source of its own).
    pub comm_id_seed: u32,
    /// Service timeout exponent of the MRAs the engine sends while its consumer decides
    /// (4.096 µs × 2^n; rdma_cm uses 24, about 69 s).
    pub mra_service_timeout: u8,
}

impl CmConfig {
    /// A CA with GUID `local_ca_guid`, rdma_cm's RoCE packet life time (16) and MRA service
    /// timeout (24), IDs from `comm_id_seed`.
    pub fn new(local_ca_guid: u64, comm_id_seed: u32) -> Self {
        Self { local_ca_guid, packet_life_time: 16, comm_id_seed, mra_service_timeout: 24 }
    }
}

/// A message being resent until answered.
#[derive(Clone, Debug)]
struct Retx {
    mad: [u8; MAD_BYTES],
    /// When to resend (ns).
    deadline: u64,
    retries_left: u8,
}

/// One connection (a live communication ID).
#[derive(Clone, Debug)]
struct Conn {
    state: CmState,
    /// Where its MADs go: the peer's QP1.
    peer: MadAddr,
    /// The peer's communication ID (0 until known).
    remote_comm_id: u32,
    /// The peer's CA GUID (0 until known).
    remote_ca_guid: u64,
    local_qpn: u32,
    remote_qpn: u32,
    /// The establishment's transaction ID: the REQ's, echoed by REP, RTU and REJ.
    tid: u64,
    /// How long to wait for an answer before resending (ns).
    interval_ns: u64,
    max_cm_retries: u8,
    retx: Option<Retx>,
    /// What a duplicate of the last message received gets again (the REP or the RTU).
    answer: Option<[u8; MAD_BYTES]>,
    /// When TimeWait ends (ns).
    timewait_until: Option<u64>,
    /// Destroyed by the consumer: kept only for TimeWait, reported no more.
    destroyed: bool,
}

impl Conn {
    fn deadline(&self) -> Option<u64> {
        match (self.retx.as_ref().map(|r| r.deadline), self.timewait_until) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

/// The CM protocol engine of one port: listeners, connections, the MADs to send and the
/// events to report. See the module documentation.
#[derive(Debug)]
pub struct CmEngine {
    config: CmConfig,
    conns: BTreeMap<u32, Conn>,
    /// (remote CA GUID, remote communication ID) → local communication ID.
    by_remote: HashMap<(u64, u32), u32>,
    listeners: BTreeSet<u64>,
    next_comm_id: u32,
    tid_seq: u32,
    outbox: VecDeque<OutMad>,
    events: VecDeque<CmEvent>,
    stats: CmStats,
}

fn check_private(data: &[u8], max: usize) -> Result<(), CmError> {
    if data.len() > max {
        return Err(CmError::PrivateDataTooLong { len: data.len(), max });
    }
    Ok(())
}

fn check_field(name: &str, value: u32, max: u32) -> Result<(), CmError> {
    if value > max {
        return Err(CmError::InvalidArgument(format!("{name} {value:#x} is over its maximum {max:#x}")));
    }
    Ok(())
}

fn padded<const N: usize>(data: &[u8]) -> [u8; N] {
    let mut p = [0u8; N];
    p[..data.len()].copy_from_slice(data);
    p
}

fn mtu_of(code: u8) -> Option<Mtu> {
    Some(match code {
        1 => Mtu::Mtu256,
        2 => Mtu::Mtu512,
        3 => Mtu::Mtu1024,
        4 => Mtu::Mtu2048,
        5 => Mtu::Mtu4096,
        _ => return None,
    })
}

impl CmEngine {
    /// An engine with no listener and no connection.
    pub fn new(config: CmConfig) -> Self {
        Self {
            config,
            conns: BTreeMap::new(),
            by_remote: HashMap::new(),
            listeners: BTreeSet::new(),
            next_comm_id: config.comm_id_seed,
            tid_seq: 0,
            outbox: VecDeque::new(),
            events: VecDeque::new(),
            stats: CmStats::default(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &CmConfig {
        &self.config
    }

    /// The counters of MADs received, sent and dropped.
    pub fn stats(&self) -> CmStats {
        self.stats
    }

    /// The state of connection `id`; `None` once it is gone (Idle).
    pub fn state(&self, id: CmId) -> Option<CmState> {
        self.conns.get(&id.0).filter(|c| !c.destroyed).map(|c| c.state)
    }

    /// How long a TimeWait lasts, in ns: twice the packet life time.
    pub fn timewait_ns(&self) -> u64 {
        2 * cm_timeout_ns(self.config.packet_life_time)
    }

    /// How long the engine waits for an answer before resending a message whose answer
    /// takes `response_timeout` (4.096 µs × 2^n), in ns: that, plus the packet's round trip
    /// (twice the packet life time), as ib_cm computes it (IBTA Vol 1 12.6.5).
    pub fn retry_interval_ns(&self, response_timeout: u8) -> u64 {
        cm_timeout_ns(response_timeout) + 2 * cm_timeout_ns(self.config.packet_life_time)
    }

    /// Listens on TCP-like `port` of the RDMA IP CM service (`rdma_listen(3)`): REQs for
    /// [`ip_service_id`]`(port)` become [`CmEvent::ConnectRequest`]s. Returns the service ID.
    ///
    /// # Errors
    /// [`CmError::AlreadyListening`].
    pub fn listen(&mut self, port: u16) -> Result<u64, CmError> {
        let sid = ip_service_id(port);
        if !self.listeners.insert(sid) {
            return Err(CmError::AlreadyListening(sid));
        }
        Ok(sid)
    }

    /// Stops listening on `port`; connections already requested are unaffected, new REQs get
    /// REJ "invalid service ID".
    ///
    /// # Errors
    /// [`CmError::NotListening`].
    pub fn unlisten(&mut self, port: u16) -> Result<(), CmError> {
        let sid = ip_service_id(port);
        if !self.listeners.remove(&sid) {
            return Err(CmError::NotListening(sid));
        }
        Ok(())
    }

    fn alloc_comm_id(&mut self) -> u32 {
        loop {
            let id = self.next_comm_id;
            self.next_comm_id = self.next_comm_id.wrapping_add(1);
            if id != 0 && !self.conns.contains_key(&id) {
                return id;
            }
        }
    }

    /// A transaction ID unique to this engine: the communication ID in the high half, a
    /// sequence number in the low half.
    fn new_tid(&mut self, comm_id: u32) -> u64 {
        self.tid_seq = self.tid_seq.wrapping_add(1);
        u64::from(comm_id) << 32 | u64::from(self.tid_seq)
    }

    fn push(&mut self, dest: MadAddr, mad: [u8; MAD_BYTES]) {
        self.stats.sent += 1;
        self.outbox.push_back(OutMad { dest, mad });
    }

    fn conn(&self, id: CmId) -> Result<&Conn, CmError> {
        self.conns.get(&id.0).filter(|c| !c.destroyed).ok_or(CmError::UnknownId(id))
    }

    fn wrong_state(&self, id: CmId, call: &'static str) -> CmError {
        match self.conns.get(&id.0) {
            Some(c) => CmError::WrongState { id, state: c.state, call },
            None => CmError::UnknownId(id),
        }
    }

    fn remove(&mut self, lid: u32) {
        if let Some(c) = self.conns.remove(&lid) {
            let key = (c.remote_ca_guid, c.remote_comm_id);
            if self.by_remote.get(&key) == Some(&lid) {
                self.by_remote.remove(&key);
            }
        }
    }

    fn enter_timewait(&mut self, now_ns: u64, lid: u32) {
        let until = now_ns.saturating_add(self.timewait_ns());
        if let Some(c) = self.conns.get_mut(&lid) {
            c.state = CmState::TimeWait;
            c.retx = None;
            c.timewait_until = Some(until);
        }
    }

    /// Sends `mad` to the connection's peer and resends it every `interval_ns` until
    /// answered, at most `max_cm_retries` times.
    fn send_reliable(&mut self, now_ns: u64, lid: u32, mad: [u8; MAD_BYTES]) {
        let Some(c) = self.conns.get_mut(&lid) else { return };
        c.retx = Some(Retx { mad, deadline: now_ns.saturating_add(c.interval_ns), retries_left: c.max_cm_retries });
        let dest = c.peer;
        self.push(dest, mad);
    }

    /// Connects to `params.remote` (`rdma_connect(3)`): sends a REQ for the RDMA IP CM
    /// service of the remote port, with the IP CM header and the private data (IBTA Vol 1
    /// 12.6.5, Annex A11), and resends it until answered. The connection is in REQ Sent.
    ///
    /// # Errors
    /// [`CmError::PrivateDataTooLong`] over 56 bytes; [`CmError::InvalidArgument`] for a QPN
    /// or PSN over 24 bits, RETRY_CNT or RNR_RETRY over 7, a timeout over 31 or more than 15
    /// CM retries.
    pub fn connect(&mut self, now_ns: u64, p: &ConnectParams) -> Result<CmId, CmError> {
        check_private(&p.private_data, REQ_USER_PRIVATE_DATA)?;
        check_field("QPN", p.qpn, MAX_24)?;
        check_field("starting PSN", p.starting_psn, MAX_24)?;
        check_field("retry count", p.retry_count.into(), 7)?;
        check_field("RNR retry count", p.rnr_retry_count.into(), 7)?;
        check_field("local ACK timeout", p.local_ack_timeout.into(), 31)?;
        check_field("CM response timeout", p.cm_response_timeout.into(), 31)?;
        check_field("max CM retries", p.max_cm_retries.into(), 15)?;
        let lid = self.alloc_comm_id();
        let tid = self.new_tid(lid);
        let mut private_data = [0u8; private_len::REQ];
        IpCmHeader { src_port: p.local.port(), src: *p.local.ip(), dst: *p.remote.ip() }.emit(&mut private_data);
        private_data[IP_CM_HEADER_BYTES..IP_CM_HEADER_BYTES + p.private_data.len()].copy_from_slice(&p.private_data);
        let req = Req {
            local_comm_id: lid,
            service_id: ip_service_id(p.remote.port()),
            local_ca_guid: self.config.local_ca_guid,
            local_qkey: 0,
            local_qpn: p.qpn,
            responder_resources: p.responder_resources,
            initiator_depth: p.initiator_depth,
            remote_cm_response_timeout: p.cm_response_timeout,
            transport_service_type: 0,
            // The NIC's ACKs carry no credits (AETH syndrome 0x1F), as rping's REQ says too.
            end_to_end_flow_control: false,
            starting_psn: p.starting_psn,
            local_cm_response_timeout: p.cm_response_timeout,
            retry_count: p.retry_count,
            pkey: DEFAULT_PKEY,
            path_mtu: p.path_mtu as u8,
            rnr_retry_count: p.rnr_retry_count,
            max_cm_retries: p.max_cm_retries,
            srq: false,
            primary_local_lid: PERMISSIVE_LID,
            primary_remote_lid: PERMISSIVE_LID,
            primary_local_gid: p.local.ip().to_ipv6_mapped().octets(),
            primary_remote_gid: p.remote.ip().to_ipv6_mapped().octets(),
            primary_flow_label: 0,
            primary_packet_rate: PACKET_RATE,
            primary_traffic_class: p.traffic_class,
            primary_hop_limit: p.hop_limit,
            primary_sl: 0,
            primary_subnet_local: p.hop_limit <= 1,
            primary_local_ack_timeout: p.local_ack_timeout,
            private_data,
        };
        let conn = Conn {
            state: CmState::ReqSent,
            peer: MadAddr::gsi(*p.remote.ip()),
            remote_comm_id: 0,
            remote_ca_guid: 0,
            local_qpn: p.qpn,
            remote_qpn: 0,
            tid,
            interval_ns: self.retry_interval_ns(p.cm_response_timeout),
            max_cm_retries: p.max_cm_retries,
            retx: None,
            answer: None,
            timewait_until: None,
            destroyed: false,
        };
        self.conns.insert(lid, conn);
        let mad = CmMessage::Req(Box::new(req)).emit(tid);
        self.send_reliable(now_ns, lid, mad);
        Ok(CmId(lid))
    }

    /// Accepts a connection request (`rdma_accept(3)`): sends the REP (IBTA Vol 1 12.6.8)
    /// with the REQ's TID and resends it until the RTU (or the first packet,
    /// [`Self::comm_established`]) arrives. REQ Rcvd → REP Sent.
    ///
    /// # Errors
    /// [`CmError::UnknownId`], [`CmError::WrongState`] unless in REQ Rcvd,
    /// [`CmError::PrivateDataTooLong`] over 196 bytes, [`CmError::InvalidArgument`] for a QPN
    /// or PSN over 24 bits, RNR_RETRY over 7 or a target ACK delay over 31.
    pub fn accept(&mut self, now_ns: u64, id: CmId, p: &AcceptParams) -> Result<(), CmError> {
        let c = self.conn(id)?;
        if c.state != CmState::ReqRcvd {
            return Err(self.wrong_state(id, "accept"));
        }
        check_private(&p.private_data, private_len::REP)?;
        check_field("QPN", p.qpn, MAX_24)?;
        check_field("starting PSN", p.starting_psn, MAX_24)?;
        check_field("RNR retry count", p.rnr_retry_count.into(), 7)?;
        check_field("target ACK delay", p.target_ack_delay.into(), 31)?;
        let rep = Rep {
            local_comm_id: id.0,
            remote_comm_id: c.remote_comm_id,
            local_qkey: 0,
            local_qpn: p.qpn,
            starting_psn: p.starting_psn,
            responder_resources: p.responder_resources,
            initiator_depth: p.initiator_depth,
            target_ack_delay: p.target_ack_delay,
            failover_accepted: 0,
            // No end-to-end credits (AETH syndrome 0x1F).
            end_to_end_flow_control: false,
            rnr_retry_count: p.rnr_retry_count,
            srq: p.srq,
            local_ca_guid: self.config.local_ca_guid,
            private_data: padded(&p.private_data),
        };
        let mad = CmMessage::Rep(Box::new(rep)).emit(c.tid);
        if let Some(c) = self.conns.get_mut(&id.0) {
            c.state = CmState::RepSent;
            c.local_qpn = p.qpn;
            c.answer = Some(mad);
        }
        self.send_reliable(now_ns, id.0, mad);
        Ok(())
    }

    /// Rejects (`rdma_reject(3)`): a connection request in REQ Rcvd, or the REP of our own
    /// request in REP Rcvd, with a REJ of reason 28 "consumer reject" carrying
    /// `private_data` (IBTA Vol 1 12.6.7). The connection is gone (Idle).
    ///
    /// # Errors
    /// [`CmError::UnknownId`], [`CmError::WrongState`] in another state,
    /// [`CmError::PrivateDataTooLong`] over 148 bytes.
    pub fn reject(&mut self, _now_ns: u64, id: CmId, private_data: &[u8]) -> Result<(), CmError> {
        let c = self.conn(id)?;
        let rejected = match c.state {
            CmState::ReqRcvd => REJECTED_REQ,
            CmState::RepRcvd => REJECTED_REP,
            _ => return Err(self.wrong_state(id, "reject")),
        };
        check_private(private_data, private_len::REJ)?;
        let rej = Rej {
            local_comm_id: id.0,
            remote_comm_id: c.remote_comm_id,
            message_rejected: rejected,
            reject_info_length: 0,
            reason: reject_reason::CONSUMER,
            additional_reject_info: [0; 72],
            private_data: padded(private_data),
        };
        let (peer, tid) = (c.peer, c.tid);
        self.push(peer, CmMessage::Rej(Box::new(rej)).emit(tid));
        self.remove(id.0);
        Ok(())
    }

    /// Completes the active side's establishment after [`CmEvent::ConnectResponse`], once
    /// the caller has moved its QP to RTR and RTS (`rdma_establish(3)`): sends the RTU (IBTA
    /// Vol 1 12.6.9) and reports [`CmEvent::Established`]. REP Rcvd → Established.
    ///
    /// # Errors
    /// [`CmError::UnknownId`], [`CmError::WrongState`] unless in REP Rcvd.
    pub fn establish(&mut self, _now_ns: u64, id: CmId) -> Result<(), CmError> {
        let c = self.conn(id)?;
        if c.state != CmState::RepRcvd {
            return Err(self.wrong_state(id, "establish"));
        }
        let rtu = Rtu { local_comm_id: id.0, remote_comm_id: c.remote_comm_id, private_data: [0; private_len::RTU] };
        let mad = CmMessage::Rtu(Box::new(rtu)).emit(c.tid);
        let peer = c.peer;
        if let Some(c) = self.conns.get_mut(&id.0) {
            c.state = CmState::Established;
            c.answer = Some(mad);
        }
        self.push(peer, mad);
        self.events.push_back(CmEvent::Established { id });
        Ok(())
    }

    /// The passive side's QP received its first packet before the RTU (the COMM_EST async
    /// event, IBTA Vol 1 11.6.3 and 12.9, `ib_cm_notify(IB_EVENT_COMM_EST)`): stops
    /// resending the REP and reports [`CmEvent::Established`]. REP Sent → Established;
    /// nothing in Established (the RTU came first).
    ///
    /// # Errors
    /// [`CmError::UnknownId`], [`CmError::WrongState`] in another state.
    pub fn comm_established(&mut self, _now_ns: u64, id: CmId) -> Result<(), CmError> {
        let c = self.conn(id)?;
        match c.state {
            CmState::Established => Ok(()),
            CmState::RepSent => {
                self.established_passive(id.0);
                Ok(())
            }
            _ => Err(self.wrong_state(id, "comm_established")),
        }
    }

    fn established_passive(&mut self, lid: u32) {
        if let Some(c) = self.conns.get_mut(&lid) {
            c.state = CmState::Established;
            c.retx = None;
            c.answer = None;
            self.events.push_back(CmEvent::Established { id: CmId(lid) });
        }
    }

    /// Disconnects (`rdma_disconnect(3)`): sends a DREQ (IBTA Vol 1 12.6.10) with a new TID
    /// and resends it until the DREP; then, or when the retries run out,
    /// [`CmEvent::Disconnected`] and TimeWait. Established → DREQ Sent.
    ///
    /// # Errors
    /// [`CmError::UnknownId`], [`CmError::WrongState`] unless Established,
    /// [`CmError::PrivateDataTooLong`] over 220 bytes.
    pub fn disconnect(&mut self, now_ns: u64, id: CmId, private_data: &[u8]) -> Result<(), CmError> {
        let c = self.conn(id)?;
        if c.state != CmState::Established {
            return Err(self.wrong_state(id, "disconnect"));
        }
        check_private(private_data, private_len::DREQ)?;
        self.send_dreq(now_ns, id.0, private_data);
        Ok(())
    }

    /// Established → DREQ Sent: sends a DREQ with a new TID and resends it until the DREP.
    fn send_dreq(&mut self, now_ns: u64, lid: u32, private_data: &[u8]) {
        let Some(c) = self.conns.get(&lid) else { return };
        let dreq = Dreq {
            local_comm_id: lid,
            remote_comm_id: c.remote_comm_id,
            remote_qpn: c.remote_qpn,
            private_data: padded(private_data),
        };
        let tid = self.new_tid(lid);
        let mad = CmMessage::Dreq(Box::new(dreq)).emit(tid);
        if let Some(c) = self.conns.get_mut(&lid) {
            c.state = CmState::DreqSent;
            c.answer = None;
        }
        self.send_reliable(now_ns, lid, mad);
    }

    /// Destroys connection `id` (`rdma_destroy_id(3)`), telling the peer as ib_cm does when
    /// its id is destroyed: from REQ Sent a REJ "timeout" (with our CA GUID); from REQ Rcvd,
    /// REP Sent or REP Rcvd a REJ "consumer reject"; from Established one DREQ, not resent.
    /// A connection that was up (Established, DREQ Sent, TimeWait) then spends TimeWait
    /// silently, still answering strays; any other is gone at once. No event names `id`
    /// afterwards, and a later call with it is [`CmError::UnknownId`].
    ///
    /// # Errors
    /// [`CmError::UnknownId`].
    pub fn destroy(&mut self, now_ns: u64, id: CmId) -> Result<(), CmError> {
        let c = self.conn(id)?;
        if c.destroyed {
            return Err(CmError::UnknownId(id));
        }
        let (state, peer, tid, remote) = (c.state, c.peer, c.tid, c.remote_comm_id);
        let rej = |reason: u16, rejected: u8, ari: [u8; 72], len: u8| {
            CmMessage::Rej(Box::new(Rej {
                local_comm_id: id.0,
                remote_comm_id: remote,
                message_rejected: rejected,
                reject_info_length: len,
                reason,
                additional_reject_info: ari,
                private_data: [0; private_len::REJ],
            }))
            .emit(tid)
        };
        match state {
            CmState::ReqSent => {
                let mut ari = [0u8; 72];
                ari[..8].copy_from_slice(&self.config.local_ca_guid.to_be_bytes());
                self.push(peer, rej(reject_reason::TIMEOUT, REJECTED_OTHER, ari, 8));
            }
            CmState::ReqRcvd => self.push(peer, rej(reject_reason::CONSUMER, REJECTED_REQ, [0; 72], 0)),
            CmState::RepRcvd => self.push(peer, rej(reject_reason::CONSUMER, REJECTED_REP, [0; 72], 0)),
            CmState::RepSent => self.push(peer, rej(reject_reason::CONSUMER, REJECTED_OTHER, [0; 72], 0)),
            CmState::Established => {
                let dreq = Dreq {
                    local_comm_id: id.0,
                    remote_comm_id: remote,
                    remote_qpn: c.remote_qpn,
                    private_data: [0; private_len::DREQ],
                };
                let dtid = self.new_tid(id.0);
                self.push(peer, CmMessage::Dreq(Box::new(dreq)).emit(dtid));
            }
            CmState::DreqSent | CmState::TimeWait => {}
        }
        match state {
            CmState::Established | CmState::DreqSent => self.enter_timewait(now_ns, id.0),
            CmState::TimeWait => {}
            _ => {
                self.remove(id.0);
                return Ok(());
            }
        }
        if let Some(c) = self.conns.get_mut(&id.0) {
            c.destroyed = true;
        }
        Ok(())
    }

    /// The next MAD to send, if any: post it on QP1 as a UD SEND to `dest` with Q_Key
    /// [`super::mad::GSI_QKEY`].
    pub fn poll_transmit(&mut self) -> Option<OutMad> {
        self.outbox.pop_front()
    }

    /// The next event, if any.
    pub fn poll_event(&mut self) -> Option<CmEvent> {
        self.events.pop_front()
    }

    /// When (ns) the engine next needs [`Self::handle_timeout`]: the earliest retransmission
    /// or TimeWait end; `None` if no timer runs.
    pub fn next_timeout(&self) -> Option<u64> {
        self.conns.values().filter_map(Conn::deadline).min()
    }

    /// Runs the timers due at `now_ns`: resends an unanswered REQ, REP or DREQ (same bytes,
    /// same TID); when its retries are spent, an unanswered REQ or REP sends REJ "timeout"
    /// (with our CA GUID as additional information, IBTA Vol 1 12.6.7) and reports
    /// [`CmEvent::Unreachable`], an unanswered DREQ reports [`CmEvent::Disconnected`] and
    /// enters TimeWait; an ended TimeWait reports [`CmEvent::TimewaitExit`] and forgets the id.
    pub fn handle_timeout(&mut self, now_ns: u64) {
        let due: Vec<u32> =
            self.conns.iter().filter(|(_, c)| c.deadline().is_some_and(|d| d <= now_ns)).map(|(&l, _)| l).collect();
        for lid in due {
            self.timeout_one(now_ns, lid);
        }
    }

    fn timeout_one(&mut self, now_ns: u64, lid: u32) {
        let Some(c) = self.conns.get_mut(&lid) else { return };
        if c.timewait_until.is_some_and(|t| t <= now_ns) {
            let destroyed = c.destroyed;
            self.remove(lid);
            if !destroyed {
                self.events.push_back(CmEvent::TimewaitExit { id: CmId(lid) });
            }
            return;
        }
        let Some(r) = c.retx.as_mut().filter(|r| r.deadline <= now_ns) else { return };
        if r.retries_left > 0 {
            r.retries_left -= 1;
            r.deadline = now_ns.saturating_add(c.interval_ns);
            let (dest, mad) = (c.peer, r.mad);
            self.stats.retransmitted += 1;
            self.push(dest, mad);
            return;
        }
        c.retx = None;
        match c.state {
            CmState::ReqSent | CmState::RepSent => {
                let mut ari = [0u8; 72];
                ari[..8].copy_from_slice(&self.config.local_ca_guid.to_be_bytes());
                let rej = Rej {
                    local_comm_id: lid,
                    remote_comm_id: c.remote_comm_id,
                    message_rejected: REJECTED_OTHER,
                    reject_info_length: 8,
                    reason: reject_reason::TIMEOUT,
                    additional_reject_info: ari,
                    private_data: [0; private_len::REJ],
                };
                let (peer, tid) = (c.peer, c.tid);
                self.push(peer, CmMessage::Rej(Box::new(rej)).emit(tid));
                self.remove(lid);
                self.events.push_back(CmEvent::Unreachable { id: CmId(lid) });
            }
            CmState::DreqSent => {
                self.enter_timewait(now_ns, lid);
                self.events.push_back(CmEvent::Disconnected { id: CmId(lid) });
            }
            _ => {}
        }
    }

    /// Takes a MAD that QP1 received from `src` (the sender's GID and source QPN, from the
    /// GRH and DETH), at `now_ns`. Anything that is not a CM SEND of REQ, MRA, REP, RTU, REJ,
    /// DREQ or DREP is dropped and counted ([`CmStats`]); never panics.
    pub fn handle_mad(&mut self, now_ns: u64, src: MadAddr, mad: &[u8]) {
        self.stats.received += 1;
        let (hdr, msg) = match CmMessage::parse(mad) {
            Ok(m) => m,
            Err(MadError::UnknownAttribute(_)) => {
                self.stats.unsupported += 1;
                return;
            }
            Err(_) => {
                self.stats.malformed += 1;
                return;
            }
        };
        if hdr.method != METHOD_SEND {
            self.stats.malformed += 1;
            return;
        }
        let tid = hdr.transaction_id;
        match msg {
            CmMessage::Req(r) => self.on_req(now_ns, src, tid, &r),
            CmMessage::Mra(r) => self.on_mra(now_ns, &r),
            CmMessage::Rep(r) => self.on_rep(src, &r),
            CmMessage::Rtu(r) => self.on_rtu(&r),
            CmMessage::Rej(r) => self.on_rej(&r),
            CmMessage::Dreq(r) => self.on_dreq(now_ns, src, tid, &r),
            CmMessage::Drep(r) => self.on_drep(now_ns, &r),
        }
    }

    /// The engine's own REJ of a REQ it cannot take (stale, no listener, bad transport, MTU
    /// or header): to the sender, echoing the REQ's TID, our communication ID 0.
    fn reject_req(&mut self, src: MadAddr, tid: u64, r: &Req, reason: u16) {
        self.stats.rejected_req += 1;
        let rej = Rej {
            local_comm_id: 0,
            remote_comm_id: r.local_comm_id,
            message_rejected: REJECTED_REQ,
            reject_info_length: 0,
            reason,
            additional_reject_info: [0; 72],
            private_data: [0; private_len::REJ],
        };
        self.push(src, CmMessage::Rej(Box::new(rej)).emit(tid));
    }

    /// REQ (IBTA Vol 1 12.6.5, 12.9).
    fn on_req(&mut self, now_ns: u64, src: MadAddr, tid: u64, r: &Req) {
        if let Some(&lid) = self.by_remote.get(&(r.local_ca_guid, r.local_comm_id)) {
            self.stats.duplicate += 1;
            let Some(c) = self.conns.get(&lid) else { return };
            match (c.state, c.answer) {
                (CmState::RepSent, Some(rep)) => {
                    let peer = c.peer;
                    self.push(peer, rep);
                }
                (CmState::ReqRcvd, _) => self.send_mra(lid, MRAED_REQ),
                (CmState::TimeWait, _) => {
                    let rej = Rej {
                        local_comm_id: lid,
                        remote_comm_id: r.local_comm_id,
                        message_rejected: REJECTED_REQ,
                        reject_info_length: 0,
                        reason: reject_reason::STALE_CONNECTION,
                        additional_reject_info: [0; 72],
                        private_data: [0; private_len::REJ],
                    };
                    self.push(src, CmMessage::Rej(Box::new(rej)).emit(tid));
                }
                _ => {}
            }
            return;
        }
        // A new REQ from a QP that already has a connection here: the peer lost it (a
        // restart). As ib_cm does, the REQ gets REJ "stale connection" and the old connection
        // a DREQ; the peer retries once the old one is gone.
        let stale = self
            .conns
            .iter()
            .find(|(_, c)| {
                c.peer.gid == src.gid
                    && c.remote_qpn == r.local_qpn
                    && !c.destroyed
                    && !matches!(c.state, CmState::ReqSent | CmState::TimeWait)
            })
            .map(|(&l, c)| (l, c.state));
        if let Some((old, state)) = stale {
            self.reject_req(src, tid, r, reject_reason::STALE_CONNECTION);
            if state == CmState::Established {
                self.send_dreq(now_ns, old, &[]);
            }
            return;
        }
        if !self.listeners.contains(&r.service_id) {
            return self.reject_req(src, tid, r, reject_reason::INVALID_SERVICE_ID);
        }
        if r.transport_service_type != 0 {
            return self.reject_req(src, tid, r, reject_reason::INVALID_TRANSPORT_TYPE);
        }
        let Some(path_mtu) = mtu_of(r.path_mtu) else {
            return self.reject_req(src, tid, r, reject_reason::INVALID_MTU);
        };
        let Some(hdr) = IpCmHeader::parse(&r.private_data) else {
            return self.reject_req(src, tid, r, reject_reason::CONSUMER);
        };
        let lid = self.alloc_comm_id();
        let conn = Conn {
            state: CmState::ReqRcvd,
            peer: src,
            remote_comm_id: r.local_comm_id,
            remote_ca_guid: r.local_ca_guid,
            local_qpn: 0,
            remote_qpn: r.local_qpn,
            tid,
            interval_ns: self.retry_interval_ns(r.local_cm_response_timeout),
            max_cm_retries: r.max_cm_retries,
            retx: None,
            answer: None,
            timewait_until: None,
            destroyed: false,
        };
        self.conns.insert(lid, conn);
        self.by_remote.insert((r.local_ca_guid, r.local_comm_id), lid);
        let port = (r.service_id & 0xFFFF) as u16;
        self.events.push_back(CmEvent::ConnectRequest(Box::new(ConnectRequest {
            id: CmId(lid),
            service_id: r.service_id,
            src: SocketAddrV4::new(hdr.src, hdr.src_port),
            dst: SocketAddrV4::new(hdr.dst, port),
            peer: src,
            peer_gid: r.primary_local_gid.into(),
            remote_qpn: r.local_qpn,
            starting_psn: r.starting_psn,
            responder_resources: r.initiator_depth,
            initiator_depth: r.responder_resources,
            path_mtu,
            retry_count: r.retry_count,
            rnr_retry_count: r.rnr_retry_count,
            local_ack_timeout: r.primary_local_ack_timeout,
            private_data: r.private_data[IP_CM_HEADER_BYTES..].to_vec(),
        })));
    }

    /// REP (IBTA Vol 1 12.6.8, 12.9): matched by the remote communication ID it carries
    /// (our ID).
    fn on_rep(&mut self, src: MadAddr, r: &Rep) {
        let key = (r.local_ca_guid, r.local_comm_id);
        let Some(c) = self.conns.get_mut(&r.remote_comm_id) else {
            self.stats.stray += 1;
            return;
        };
        match c.state {
            CmState::ReqSent if !self.by_remote.contains_key(&key) => {
                c.state = CmState::RepRcvd;
                c.retx = None;
                c.peer = src;
                c.remote_comm_id = r.local_comm_id;
                c.remote_ca_guid = r.local_ca_guid;
                c.remote_qpn = r.local_qpn;
                self.by_remote.insert(key, r.remote_comm_id);
                self.events.push_back(CmEvent::ConnectResponse(Box::new(ConnectResponse {
                    id: CmId(r.remote_comm_id),
                    remote_qpn: r.local_qpn,
                    starting_psn: r.starting_psn,
                    responder_resources: r.initiator_depth,
                    initiator_depth: r.responder_resources,
                    rnr_retry_count: r.rnr_retry_count,
                    target_ack_delay: r.target_ack_delay,
                    srq: r.srq,
                    private_data: r.private_data.to_vec(),
                })));
            }
            CmState::RepRcvd | CmState::Established if c.remote_comm_id == r.local_comm_id => {
                self.stats.duplicate += 1;
                match (c.state, c.answer) {
                    (CmState::Established, Some(rtu)) => {
                        let peer = c.peer;
                        self.push(peer, rtu);
                    }
                    (CmState::RepRcvd, _) => self.send_mra(r.remote_comm_id, MRAED_REP),
                    _ => {}
                }
            }
            _ => self.stats.stray += 1,
        }
    }

    /// Sends an MRA for the REQ or REP (`mraed`) that connection `lid` received and its
    /// consumer has not answered yet (IBTA Vol 1 12.6.6), echoing the connection's TID.
    fn send_mra(&mut self, lid: u32, mraed: u8) {
        let Some(c) = self.conns.get(&lid) else { return };
        let mra = Mra {
            local_comm_id: lid,
            remote_comm_id: c.remote_comm_id,
            message_mraed: mraed,
            service_timeout: self.config.mra_service_timeout,
            private_data: [0; private_len::MRA],
        };
        let (peer, tid) = (c.peer, c.tid);
        self.push(peer, CmMessage::Mra(Box::new(mra)).emit(tid));
    }

    /// MRA (IBTA Vol 1 12.6.6): the peer got our REQ (in REQ Sent) or REP (in REP Sent) and
    /// needs longer to answer. The wait for the answer, and each further resend, becomes the
    /// MRA's service timeout plus twice the packet life time (as ib_cm stretches it); the
    /// retries left stay as they are. An MRA of a REQ is matched by our ID alone.
    fn on_mra(&mut self, now_ns: u64, m: &Mra) {
        let wait = self.retry_interval_ns(m.service_timeout);
        let Some(c) = self.conns.get_mut(&m.remote_comm_id) else {
            self.stats.stray += 1;
            return;
        };
        let fits = match m.message_mraed {
            MRAED_REQ => c.state == CmState::ReqSent,
            MRAED_REP => c.state == CmState::RepSent && c.remote_comm_id == m.local_comm_id,
            _ => false,
        };
        if !fits {
            self.stats.stray += 1;
            return;
        }
        c.interval_ns = wait;
        if let Some(r) = c.retx.as_mut() {
            r.deadline = now_ns.saturating_add(wait);
        }
    }

    /// RTU (IBTA Vol 1 12.6.9): REP Sent → Established.
    fn on_rtu(&mut self, r: &Rtu) {
        match self.conns.get(&r.remote_comm_id) {
            Some(c) if c.remote_comm_id == r.local_comm_id && c.state == CmState::RepSent => {
                self.established_passive(r.remote_comm_id);
            }
            Some(c) if c.remote_comm_id == r.local_comm_id && c.state == CmState::Established => {
                self.stats.duplicate += 1;
            }
            _ => self.stats.stray += 1,
        }
    }

    /// REJ (IBTA Vol 1 12.6.7): of our REQ, matched by our ID alone (the rejecter may have
    /// none); a timeout, by the rejecter's CA GUID (its additional information) and ID;
    /// others by both IDs. Ends the connection with [`CmEvent::Rejected`].
    fn on_rej(&mut self, r: &Rej) {
        let by_ids = || {
            self.conns
                .get(&r.remote_comm_id)
                .filter(|c| c.remote_comm_id == r.local_comm_id || c.state == CmState::ReqSent)
                .map(|_| r.remote_comm_id)
        };
        let lid = if r.message_rejected == REJECTED_REQ {
            self.conns.get(&r.remote_comm_id).filter(|c| c.state == CmState::ReqSent).map(|_| r.remote_comm_id)
        } else if r.reason == reject_reason::TIMEOUT && r.reject_info_length >= 8 {
            let mut guid = [0u8; 8];
            guid.copy_from_slice(&r.additional_reject_info[..8]);
            self.by_remote.get(&(u64::from_be_bytes(guid), r.local_comm_id)).copied().or_else(by_ids)
        } else {
            by_ids()
        };
        let Some(lid) = lid else {
            self.stats.stray += 1;
            return;
        };
        let Some(c) = self.conns.get(&lid) else { return };
        match c.state {
            CmState::ReqSent | CmState::ReqRcvd | CmState::RepSent | CmState::RepRcvd => {
                self.remove(lid);
                self.events.push_back(CmEvent::Rejected {
                    id: CmId(lid),
                    reason: r.reason,
                    private_data: r.private_data.to_vec(),
                });
            }
            _ => self.stats.stray += 1,
        }
    }

    /// DREQ (IBTA Vol 1 12.6.10, 12.9): answered with a DREP echoing its TID in any
    /// connected state, again in TimeWait, and also for a connection we do not know (the
    /// peer may have missed our DREP).
    fn on_dreq(&mut self, now_ns: u64, src: MadAddr, tid: u64, d: &Dreq) {
        let drep = |lid: u32, remote: u32| {
            CmMessage::Drep(Box::new(Drep {
                local_comm_id: lid,
                remote_comm_id: remote,
                private_data: [0; private_len::DREP],
            }))
            .emit(tid)
        };
        let lid = d.remote_comm_id;
        let Some(c) = self.conns.get(&lid).filter(|c| c.remote_comm_id == d.local_comm_id) else {
            self.stats.stray += 1;
            self.push(src, drep(d.remote_comm_id, d.local_comm_id));
            return;
        };
        if d.remote_qpn != c.local_qpn {
            self.stats.stray += 1;
            return;
        }
        let (state, peer) = (c.state, c.peer);
        match state {
            CmState::Established | CmState::RepSent | CmState::DreqSent => {
                self.push(peer, drep(lid, d.local_comm_id));
                self.enter_timewait(now_ns, lid);
                self.events.push_back(CmEvent::Disconnected { id: CmId(lid) });
            }
            CmState::TimeWait => {
                self.stats.duplicate += 1;
                self.push(peer, drep(lid, d.local_comm_id));
            }
            _ => self.stats.stray += 1,
        }
    }

    /// DREP (IBTA Vol 1 12.6.11): DREQ Sent → TimeWait, [`CmEvent::Disconnected`].
    fn on_drep(&mut self, now_ns: u64, d: &Drep) {
        match self.conns.get(&d.remote_comm_id) {
            Some(c) if c.remote_comm_id == d.local_comm_id && c.state == CmState::DreqSent => {
                self.enter_timewait(now_ns, d.remote_comm_id);
                self.events.push_back(CmEvent::Disconnected { id: CmId(d.remote_comm_id) });
            }
            _ => self.stats.stray += 1,
        }
    }
}
