//! Two CM engines joined by an in-memory wire: establishment, rejection, disconnection, and
//! each lost message of IBTA Vol 1 12.9's exchanges.

use std::net::{Ipv4Addr, SocketAddrV4};

use super::mad::{attr, private_len, CmMessage, MadHeader, Rej, MAD_BYTES};
use super::*;
use crate::qp_attr::Mtu;

const A_IP: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 1);
const B_IP: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 2);
const PORT: u16 = 7174;
const A_GUID: u64 = 0x0200_00ff_fe00_0001;
const B_GUID: u64 = 0x0200_00ff_fe00_0002;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Side {
    A,
    B,
}

/// A MAD that crossed (or was dropped from) the wire.
#[derive(Clone, Debug)]
struct Sent {
    from: Side,
    mad: [u8; MAD_BYTES],
}

impl Sent {
    fn attr(&self) -> u16 {
        MadHeader::parse(&self.mad).unwrap().attribute_id
    }
    fn tid(&self) -> u64 {
        MadHeader::parse(&self.mad).unwrap().transaction_id
    }
    fn msg(&self) -> CmMessage {
        CmMessage::parse(&self.mad).unwrap().1
    }
}

/// Engine A (192.0.2.1) and engine B (192.0.2.2, listening on [`PORT`]) and a clock.
struct Pair {
    a: CmEngine,
    b: CmEngine,
    now: u64,
    /// Every MAD either side sent, in order, with whether it was delivered.
    log: Vec<(Sent, bool)>,
}

impl Pair {
    fn new() -> Self {
        let a = CmEngine::new(CmConfig::new(A_GUID, 0x1000));
        let mut b = CmEngine::new(CmConfig::new(B_GUID, 0x8000));
        b.listen(PORT).unwrap();
        Self { a, b, now: 0, log: Vec::new() }
    }

    fn engine(&mut self, s: Side) -> &mut CmEngine {
        match s {
            Side::A => &mut self.a,
            Side::B => &mut self.b,
        }
    }

    /// Carries every queued MAD to the other side until both are quiet; `drop` decides which
    /// are lost. Returns the MADs sent in this call.
    fn pump(&mut self, mut drop: impl FnMut(&Sent) -> bool) -> Vec<Sent> {
        let mut sent = Vec::new();
        loop {
            let mut moved = false;
            for from in [Side::A, Side::B] {
                while let Some(out) = self.engine(from).poll_transmit() {
                    moved = true;
                    let (to, src_ip, dst_ip) = match from {
                        Side::A => (Side::B, A_IP, B_IP),
                        Side::B => (Side::A, B_IP, A_IP),
                    };
                    assert_eq!(out.dest, MadAddr::gsi(dst_ip), "{from:?} sent a MAD to the wrong address");
                    let s = Sent { from, mad: out.mad };
                    let lost = drop(&s);
                    self.log.push((s.clone(), !lost));
                    sent.push(s);
                    if !lost {
                        let now = self.now;
                        self.engine(to).handle_mad(now, MadAddr::gsi(src_ip), &out.mad);
                    }
                }
            }
            if !moved {
                return sent;
            }
        }
    }

    fn deliver_all(&mut self) -> Vec<Sent> {
        self.pump(|_| false)
    }

    fn events(&mut self, s: Side) -> Vec<CmEvent> {
        std::iter::from_fn(|| self.engine(s).poll_event()).collect()
    }

    /// Advances the clock to the earlier timer of the two and runs both.
    fn tick(&mut self) -> u64 {
        let t = [self.a.next_timeout(), self.b.next_timeout()].into_iter().flatten().min().expect("a timer runs");
        self.now = self.now.max(t);
        let now = self.now;
        self.a.handle_timeout(now);
        self.b.handle_timeout(now);
        now
    }
}

fn params() -> ConnectParams {
    let mut p = ConnectParams::new(SocketAddrV4::new(A_IP, 50_000), SocketAddrV4::new(B_IP, PORT), 0x11, 0x12_3456);
    p.responder_resources = 4;
    p.initiator_depth = 2;
    p.path_mtu = Mtu::Mtu1024;
    p.private_data = (1..=56).collect();
    p
}

fn accept_params() -> AcceptParams {
    let mut p = AcceptParams::new(0x22, 0x65_4321);
    p.responder_resources = 8;
    p.initiator_depth = 3;
    p.private_data = (0..196).map(|i| (i * 7) as u8).collect();
    p
}

fn connect_request(ev: &[CmEvent]) -> ConnectRequest {
    match ev {
        [CmEvent::ConnectRequest(r)] => (**r).clone(),
        other => panic!("want one CONNECT_REQUEST, got {other:?}"),
    }
}

fn connect_response(ev: &[CmEvent]) -> ConnectResponse {
    match ev {
        [CmEvent::ConnectResponse(r)] => (**r).clone(),
        other => panic!("want one CONNECT_RESPONSE, got {other:?}"),
    }
}

/// Connects A to B all the way to Established on both sides; returns (A's id, B's id).
fn established(p: &mut Pair) -> (CmId, CmId) {
    let a = p.a.connect(p.now, &params()).unwrap();
    p.deliver_all();
    let b = connect_request(&p.events(Side::B)).id;
    p.b.accept(p.now, b, &accept_params()).unwrap();
    p.deliver_all();
    connect_response(&p.events(Side::A));
    p.a.establish(p.now, a).unwrap();
    p.deliver_all();
    assert_eq!(p.events(Side::A), vec![CmEvent::Established { id: a }]);
    assert_eq!(p.events(Side::B), vec![CmEvent::Established { id: b }]);
    (a, b)
}

#[test]
fn connect_accept_establish_carries_qpn_psn_and_private_data() {
    let mut p = Pair::new();
    let a = p.a.connect(0, &params()).unwrap();
    assert_eq!(p.a.state(a), Some(CmState::ReqSent));
    let req = p.deliver_all();
    assert_eq!(req.len(), 1);
    assert_eq!(req[0].attr(), attr::REQ);

    let r = connect_request(&p.events(Side::B));
    assert_eq!(r.service_id, 0x0000_0000_0106_0000 | u64::from(PORT));
    assert_eq!(r.src, SocketAddrV4::new(A_IP, 50_000));
    assert_eq!(r.dst, SocketAddrV4::new(B_IP, PORT));
    assert_eq!(r.peer, MadAddr::gsi(A_IP));
    assert_eq!(r.peer_gid, A_IP.to_ipv6_mapped());
    assert_eq!((r.remote_qpn, r.starting_psn), (0x11, 0x12_3456));
    // From B's point of view: A issues 2 READs (B must accept 2), A accepts 4 (B may issue 4).
    assert_eq!((r.responder_resources, r.initiator_depth), (2, 4));
    assert_eq!(r.path_mtu, Mtu::Mtu1024);
    assert_eq!((r.retry_count, r.rnr_retry_count, r.local_ack_timeout), (7, 7, 14));
    assert_eq!(r.private_data, (1..=56).collect::<Vec<u8>>());
    assert_eq!(p.b.state(r.id), Some(CmState::ReqRcvd));

    p.b.accept(0, r.id, &accept_params()).unwrap();
    assert_eq!(p.b.state(r.id), Some(CmState::RepSent));
    let rep = p.deliver_all();
    assert_eq!(rep.len(), 1);
    assert_eq!(rep[0].attr(), attr::REP);
    assert_eq!(rep[0].tid(), req[0].tid(), "a REP echoes the REQ's TID");
    let CmMessage::Rep(m) = rep[0].msg() else { unreachable!() };
    assert_eq!((m.local_comm_id, m.remote_comm_id), (r.id.local_comm_id(), a.local_comm_id()));
    assert_eq!(m.local_ca_guid, B_GUID);

    let c = connect_response(&p.events(Side::A));
    assert_eq!(c.id, a);
    assert_eq!((c.remote_qpn, c.starting_psn), (0x22, 0x65_4321));
    assert_eq!((c.responder_resources, c.initiator_depth), (3, 8));
    assert_eq!(c.private_data, accept_params().private_data);
    assert_eq!(p.a.state(a), Some(CmState::RepRcvd));
    assert!(p.events(Side::B).is_empty(), "B is not established before the RTU");

    p.a.establish(0, a).unwrap();
    assert_eq!(p.events(Side::A), vec![CmEvent::Established { id: a }]);
    let rtu = p.deliver_all();
    assert_eq!(rtu.len(), 1);
    assert_eq!(rtu[0].attr(), attr::RTU);
    assert_eq!(rtu[0].tid(), req[0].tid());
    assert_eq!(p.events(Side::B), vec![CmEvent::Established { id: r.id }]);
    assert_eq!(p.a.state(a), Some(CmState::Established));
    assert_eq!(p.b.state(r.id), Some(CmState::Established));
    assert_eq!(p.a.next_timeout(), None, "nothing left to resend");
    assert_eq!(p.b.next_timeout(), None);
}

#[test]
fn req_carries_the_ip_cm_header_and_roce_path() {
    let mut p = Pair::new();
    p.a.connect(0, &params()).unwrap();
    let out = p.a.poll_transmit().unwrap();
    let CmMessage::Req(r) = CmMessage::parse(&out.mad).unwrap().1 else { panic!("not a REQ") };
    let h = super::mad::IpCmHeader::parse(&r.private_data).unwrap();
    assert_eq!((h.src, h.dst, h.src_port), (A_IP, B_IP, 50_000));
    assert_eq!(&r.private_data[36..], &(1..=56).collect::<Vec<u8>>()[..]);
    assert_eq!(r.local_ca_guid, A_GUID);
    assert_eq!((r.local_qpn, r.starting_psn, r.path_mtu), (0x11, 0x12_3456, 3));
    assert_eq!((r.remote_cm_response_timeout, r.local_cm_response_timeout, r.max_cm_retries), (20, 20, 15));
    assert_eq!(r.transport_service_type, 0, "RC");
    // As rping's REQ over rxe (docs/guests.md 4.5): no end-to-end credits, rate 0, not
    // subnet-local with hop limit 64.
    assert!(!r.end_to_end_flow_control && !r.primary_subnet_local);
    assert_eq!((r.primary_packet_rate, r.primary_hop_limit), (0, 64));
    assert_eq!((r.primary_local_lid, r.primary_remote_lid, r.pkey), (0xFFFF, 0xFFFF, 0xFFFF));
    assert_eq!(r.primary_local_gid, A_IP.to_ipv6_mapped().octets());
    assert_eq!(r.primary_remote_gid, B_IP.to_ipv6_mapped().octets());
}

#[test]
fn reject_reports_reason_and_private_data_and_ends_both_ids() {
    let mut p = Pair::new();
    let a = p.a.connect(0, &params()).unwrap();
    p.deliver_all();
    let b = connect_request(&p.events(Side::B)).id;
    p.b.reject(0, b, b"server full").unwrap();
    assert_eq!(p.b.state(b), None);
    let rej = p.deliver_all();
    assert_eq!(rej[0].attr(), attr::REJ);
    let CmMessage::Rej(m) = rej[0].msg() else { unreachable!() };
    assert_eq!(m.message_rejected, 0, "the REQ is rejected");
    match p.events(Side::A).as_slice() {
        [CmEvent::Rejected { id, reason, private_data }] => {
            assert_eq!((*id, *reason), (a, reject_reason::CONSUMER));
            assert_eq!(private_data.len(), private_len::REJ);
            assert_eq!(&private_data[..11], b"server full");
            assert!(private_data[11..].iter().all(|&x| x == 0));
        }
        other => panic!("want REJECTED, got {other:?}"),
    }
    assert_eq!(p.a.state(a), None);
    assert_eq!(p.a.next_timeout(), None, "the REQ is no longer resent");
}

#[test]
fn active_side_rejects_the_rep() {
    let mut p = Pair::new();
    let a = p.a.connect(0, &params()).unwrap();
    p.deliver_all();
    let b = connect_request(&p.events(Side::B)).id;
    p.b.accept(0, b, &accept_params()).unwrap();
    p.deliver_all();
    connect_response(&p.events(Side::A));
    p.a.reject(0, a, b"no").unwrap();
    let rej = p.deliver_all();
    let CmMessage::Rej(m) = rej[0].msg() else { panic!("not a REJ") };
    assert_eq!(m.message_rejected, 1, "the REP is rejected");
    assert!(matches!(p.events(Side::B).as_slice(), [CmEvent::Rejected { id, reason: 28, .. }] if *id == b));
    assert_eq!((p.a.state(a), p.b.state(b)), (None, None));
    assert_eq!(p.b.next_timeout(), None, "the REP is no longer resent");
}

#[test]
fn req_without_listener_gets_invalid_service_id() {
    let mut p = Pair::new();
    let mut c = params();
    c.remote = SocketAddrV4::new(B_IP, 9999);
    let a = p.a.connect(0, &c).unwrap();
    let sent = p.deliver_all();
    assert_eq!(sent.iter().map(Sent::attr).collect::<Vec<_>>(), vec![attr::REQ, attr::REJ]);
    assert_eq!(sent[1].tid(), sent[0].tid(), "the REJ echoes the REQ's TID");
    assert!(p.events(Side::B).is_empty(), "no CONNECT_REQUEST without a listener");
    assert_eq!(p.b.stats().rejected_req, 1);
    assert!(matches!(p.events(Side::A).as_slice(),
        [CmEvent::Rejected { id, reason: reject_reason::INVALID_SERVICE_ID, .. }] if *id == a));
    assert_eq!(p.a.state(a), None);

    // After unlisten the listened port behaves the same.
    p.b.unlisten(PORT).unwrap();
    p.a.connect(0, &params()).unwrap();
    p.deliver_all();
    assert!(p.events(Side::B).is_empty());
    assert!(matches!(p.events(Side::A).as_slice(), [CmEvent::Rejected { reason: 8, .. }]));
}

#[test]
fn unsupported_req_fields_are_rejected_by_reason() {
    for (field, reason) in [("transport", 9u16), ("mtu", 26), ("header", 28)] {
        let mut p = Pair::new();
        p.a.connect(0, &params()).unwrap();
        let out = p.a.poll_transmit().unwrap();
        let (h, CmMessage::Req(mut r)) = CmMessage::parse(&out.mad).unwrap() else { unreachable!() };
        match field {
            "transport" => r.transport_service_type = 1,
            "mtu" => r.path_mtu = 7,
            _ => r.private_data[1] = 6 << 4,
        }
        p.b.handle_mad(0, MadAddr::gsi(A_IP), &CmMessage::Req(r).emit(h.transaction_id));
        assert!(p.events(Side::B).is_empty(), "{field}");
        let rej = p.b.poll_transmit().unwrap();
        let CmMessage::Rej(m) = CmMessage::parse(&rej.mad).unwrap().1 else { panic!("{field}: no REJ") };
        assert_eq!(m.reason, reason, "{field}");
    }
}

#[test]
fn disconnect_from_active_side() {
    let mut p = Pair::new();
    let (a, b) = established(&mut p);
    p.a.disconnect(p.now, a, b"bye").unwrap();
    assert_eq!(p.a.state(a), Some(CmState::DreqSent));
    let sent = p.deliver_all();
    assert_eq!(sent.iter().map(Sent::attr).collect::<Vec<_>>(), vec![attr::DREQ, attr::DREP]);
    assert_eq!(sent[1].tid(), sent[0].tid(), "the DREP echoes the DREQ's TID");
    let CmMessage::Dreq(d) = sent[0].msg() else { unreachable!() };
    assert_eq!(d.remote_qpn, 0x22, "the DREQ names the receiver's QPN");
    assert_eq!(p.events(Side::A), vec![CmEvent::Disconnected { id: a }]);
    assert_eq!(p.events(Side::B), vec![CmEvent::Disconnected { id: b }]);
    assert_eq!((p.a.state(a), p.b.state(b)), (Some(CmState::TimeWait), Some(CmState::TimeWait)));

    let t = p.tick();
    assert_eq!(t, p.a.timewait_ns(), "TimeWait lasts twice the packet life time");
    assert_eq!(p.events(Side::A), vec![CmEvent::TimewaitExit { id: a }]);
    assert_eq!(p.events(Side::B), vec![CmEvent::TimewaitExit { id: b }]);
    assert_eq!((p.a.state(a), p.b.state(b)), (None, None));
    assert_eq!(p.a.disconnect(p.now, a, &[]), Err(CmError::UnknownId(a)));
}

#[test]
fn disconnect_from_passive_side() {
    let mut p = Pair::new();
    let (a, b) = established(&mut p);
    p.b.disconnect(p.now, b, &[]).unwrap();
    let sent = p.deliver_all();
    assert_eq!(
        sent.iter().map(|s| (s.from, s.attr())).collect::<Vec<_>>(),
        vec![(Side::B, attr::DREQ), (Side::A, attr::DREP)]
    );
    let CmMessage::Dreq(d) = sent[0].msg() else { unreachable!() };
    assert_eq!(d.remote_qpn, 0x11);
    assert_eq!(p.events(Side::A), vec![CmEvent::Disconnected { id: a }]);
    assert_eq!(p.events(Side::B), vec![CmEvent::Disconnected { id: b }]);
}

#[test]
fn crossing_dreqs_disconnect_both_once() {
    let mut p = Pair::new();
    let (a, b) = established(&mut p);
    p.a.disconnect(p.now, a, &[]).unwrap();
    p.b.disconnect(p.now, b, &[]).unwrap();
    p.deliver_all();
    assert_eq!(p.events(Side::A), vec![CmEvent::Disconnected { id: a }]);
    assert_eq!(p.events(Side::B), vec![CmEvent::Disconnected { id: b }]);
    assert_eq!((p.a.state(a), p.b.state(b)), (Some(CmState::TimeWait), Some(CmState::TimeWait)));
}

#[test]
fn lost_req_is_resent_with_its_tid_and_connects() {
    let mut p = Pair::new();
    let a = p.a.connect(0, &params()).unwrap();
    let first = p.pump(|_| true);
    assert!(p.events(Side::B).is_empty());
    let interval = p.a.retry_interval_ns(20);
    assert_eq!(p.a.next_timeout(), Some(interval));
    assert_eq!(p.tick(), interval);
    let again = p.deliver_all();
    assert_eq!(again[0].mad, first[0].mad, "the retransmission is the same REQ, TID and all");
    assert_eq!(p.a.stats().retransmitted, 1);
    let b = connect_request(&p.events(Side::B)).id;
    p.b.accept(p.now, b, &accept_params()).unwrap();
    p.deliver_all();
    connect_response(&p.events(Side::A));
    p.a.establish(p.now, a).unwrap();
    p.deliver_all();
    assert_eq!(p.b.state(b), Some(CmState::Established));
}

#[test]
fn lost_rep_duplicate_req_resends_rep_and_reports_one_request() {
    let mut p = Pair::new();
    let a = p.a.connect(0, &params()).unwrap();
    p.deliver_all();
    let b = connect_request(&p.events(Side::B)).id;
    p.now = 1_000;
    p.b.accept(p.now, b, &accept_params()).unwrap();
    let lost = p.pump(|s| s.attr() == attr::REP);
    assert!(p.events(Side::A).is_empty());
    // A's REQ timer fires first (B accepted 1 µs later): the duplicate REQ makes B resend its
    // REP at once.
    p.tick();
    assert!(p.b.stats().retransmitted == 0 && p.a.stats().retransmitted == 1);
    let sent = p.deliver_all();
    assert_eq!(sent.iter().map(Sent::attr).collect::<Vec<_>>(), vec![attr::REQ, attr::REP]);
    assert_eq!(sent[1].mad, lost[0].mad, "the same REP again");
    assert_eq!(p.b.stats().duplicate, 1);
    assert!(p.events(Side::B).is_empty(), "no second CONNECT_REQUEST");
    assert_eq!(connect_response(&p.events(Side::A)).remote_qpn, 0x22);
    p.a.establish(p.now, a).unwrap();
    p.deliver_all();
    assert_eq!(p.events(Side::B), vec![CmEvent::Established { id: b }]);
}

/// A duplicate REQ while B's consumer decides gets an MRA (service timeout 24), and A then
/// waits 4.096 µs × 2^24 + 2 × the packet life time before resending, instead of 2^20 + ….
#[test]
fn duplicate_req_before_accept_gets_mra_and_a_longer_wait() {
    let mut p = Pair::new();
    let a = p.a.connect(0, &params()).unwrap();
    p.deliver_all();
    let b = connect_request(&p.events(Side::B)).id;
    let t = p.tick();
    assert_eq!(t, p.a.retry_interval_ns(20));
    let sent = p.deliver_all();
    assert_eq!(sent.iter().map(Sent::attr).collect::<Vec<_>>(), vec![attr::REQ, attr::MRA]);
    assert_eq!(sent[1].tid(), sent[0].tid(), "the MRA echoes the REQ's TID");
    let CmMessage::Mra(m) = sent[1].msg() else { unreachable!() };
    assert_eq!((m.local_comm_id, m.remote_comm_id), (b.local_comm_id(), a.local_comm_id()));
    assert_eq!((m.message_mraed, m.service_timeout), (0, 24));
    assert!(p.events(Side::B).is_empty(), "no second CONNECT_REQUEST");
    assert_eq!(p.b.stats().duplicate, 1);
    assert_eq!(p.a.next_timeout(), Some(t + cm_timeout_ns(24) + 2 * cm_timeout_ns(16)));
    assert_eq!(p.a.state(a), Some(CmState::ReqSent));
    // The consumer accepts within the longer wait.
    p.now = t + cm_timeout_ns(23);
    p.b.accept(p.now, b, &accept_params()).unwrap();
    p.deliver_all();
    connect_response(&p.events(Side::A));
    assert_eq!(p.a.next_timeout(), None);
}

/// A duplicate REP while A's consumer has not called establish gets an MRA: B then waits
/// longer for the RTU instead of giving up after 1 + max CM retries short waits.
#[test]
fn duplicate_rep_before_establish_gets_mra() {
    let mut p = Pair::new();
    let mut c = params();
    c.max_cm_retries = 1;
    let a = p.a.connect(0, &c).unwrap();
    p.deliver_all();
    let b = connect_request(&p.events(Side::B)).id;
    p.b.accept(0, b, &accept_params()).unwrap();
    p.deliver_all();
    connect_response(&p.events(Side::A));
    let t = p.tick();
    let sent = p.deliver_all();
    assert_eq!(sent.iter().map(Sent::attr).collect::<Vec<_>>(), vec![attr::REP, attr::MRA]);
    let CmMessage::Mra(m) = sent[1].msg() else { unreachable!() };
    assert_eq!(m.message_mraed, 1, "the REP is acknowledged");
    assert_eq!(p.b.next_timeout(), Some(t + p.b.retry_interval_ns(24)));
    // Without the MRA B would have given up at 2 × the short interval.
    p.now = 2 * t;
    p.b.handle_timeout(p.now);
    assert!(p.events(Side::B).is_empty());
    p.a.establish(p.now, a).unwrap();
    p.deliver_all();
    assert_eq!(p.events(Side::B), vec![CmEvent::Established { id: b }]);
}

/// MRAs that fit no waiting message are dropped.
#[test]
fn stray_mras_are_dropped() {
    let mut p = Pair::new();
    let (a, _) = established(&mut p);
    let mra = |mraed: u8, remote: u32| {
        CmMessage::Mra(Box::new(super::mad::Mra {
            local_comm_id: 1,
            remote_comm_id: remote,
            message_mraed: mraed,
            service_timeout: 31,
            private_data: [0; private_len::MRA],
        }))
        .emit(5)
    };
    for m in [mra(0, a.local_comm_id()), mra(1, a.local_comm_id()), mra(2, a.local_comm_id()), mra(0, 77)] {
        p.a.handle_mad(p.now, MadAddr::gsi(B_IP), &m);
    }
    assert_eq!(p.a.stats().stray, 4);
    assert_eq!(p.a.next_timeout(), None);
    assert!(p.a.poll_event().is_none() && p.a.poll_transmit().is_none());
}

#[test]
fn lost_rtu_passive_established_by_comm_est() {
    let mut p = Pair::new();
    let a = p.a.connect(0, &params()).unwrap();
    p.deliver_all();
    let b = connect_request(&p.events(Side::B)).id;
    p.b.accept(0, b, &accept_params()).unwrap();
    p.deliver_all();
    connect_response(&p.events(Side::A));
    p.a.establish(0, a).unwrap();
    p.pump(|s| s.attr() == attr::RTU);
    assert_eq!(p.b.state(b), Some(CmState::RepSent));
    assert!(p.events(Side::B).is_empty());
    assert!(p.b.next_timeout().is_some(), "B still resends its REP");
    // The first data packet on B's QP raises COMM_EST.
    p.b.comm_established(p.now, b).unwrap();
    assert_eq!(p.events(Side::B), vec![CmEvent::Established { id: b }]);
    assert_eq!(p.b.state(b), Some(CmState::Established));
    assert_eq!(p.b.next_timeout(), None, "the REP is no longer resent");
    // A late RTU and a second COMM_EST change nothing.
    p.b.comm_established(p.now, b).unwrap();
    let rtu = p.log.iter().find(|(s, _)| s.attr() == attr::RTU).unwrap().0.mad;
    p.b.handle_mad(p.now, MadAddr::gsi(A_IP), &rtu);
    assert!(p.events(Side::B).is_empty());
}

#[test]
fn lost_rtu_duplicate_rep_resends_rtu() {
    let mut p = Pair::new();
    let a = p.a.connect(0, &params()).unwrap();
    p.deliver_all();
    let b = connect_request(&p.events(Side::B)).id;
    p.b.accept(0, b, &accept_params()).unwrap();
    p.deliver_all();
    connect_response(&p.events(Side::A));
    p.a.establish(0, a).unwrap();
    let lost = p.pump(|s| s.attr() == attr::RTU);
    p.events(Side::A);
    // B's REP timer fires; A answers the duplicate REP with the same RTU.
    p.tick();
    let sent = p.deliver_all();
    assert_eq!(sent.iter().map(Sent::attr).collect::<Vec<_>>(), vec![attr::REP, attr::RTU]);
    assert_eq!(sent[1].mad, lost[0].mad);
    assert_eq!(p.a.stats().duplicate, 1);
    assert!(p.events(Side::A).is_empty(), "no second ESTABLISHED on A");
    assert_eq!(p.events(Side::B), vec![CmEvent::Established { id: b }]);
}

#[test]
fn all_reqs_lost_is_unreachable_after_the_computed_time() {
    for (timeout, retries) in [(20u8, 15u8), (8, 3), (0, 0)] {
        let mut p = Pair::new();
        let mut c = params();
        c.cm_response_timeout = timeout;
        c.max_cm_retries = retries;
        let a = p.a.connect(0, &c).unwrap();
        let interval = cm_timeout_ns(timeout) + 2 * cm_timeout_ns(16);
        assert_eq!(p.a.retry_interval_ns(timeout), interval);
        let give_up = (1 + u64::from(retries)) * interval;
        p.pump(|_| true);
        while p.a.next_timeout().is_some_and(|t| t < give_up) {
            p.tick();
            p.pump(|_| true);
            assert!(p.events(Side::A).is_empty(), "not unreachable at {} ns", p.now);
        }
        assert_eq!(p.a.next_timeout(), Some(give_up));
        p.a.handle_timeout(give_up - 1);
        assert!(p.events(Side::A).is_empty());
        p.now = give_up;
        p.a.handle_timeout(give_up);
        assert_eq!(p.events(Side::A), vec![CmEvent::Unreachable { id: a }]);
        assert_eq!(p.a.state(a), None);
        let sent = p.pump(|_| true);
        let CmMessage::Rej(r) = sent[0].msg() else { panic!("no REJ after the last retry") };
        assert_eq!((r.reason, r.message_rejected), (reject_reason::TIMEOUT, 2));
        assert_eq!(&r.additional_reject_info[..8], &A_GUID.to_be_bytes());
        let reqs = p.log.iter().filter(|(s, _)| s.attr() == attr::REQ).count();
        assert_eq!(reqs, 1 + usize::from(retries));
        assert_eq!(p.a.next_timeout(), None);
    }
    // rdma_cm's defaults: 16 REQs, 4.096 µs × 2^20 + 2 × 4.096 µs × 2^16 apart: 77.3 s.
    assert_eq!(16 * (cm_timeout_ns(20) + 2 * cm_timeout_ns(16)), 77_309_411_328);
}

#[test]
fn unanswered_rep_is_unreachable_and_the_timeout_rej_reaches_the_active_side() {
    let mut p = Pair::new();
    let mut c = params();
    c.max_cm_retries = 2;
    let a = p.a.connect(0, &c).unwrap();
    p.deliver_all();
    let b = connect_request(&p.events(Side::B)).id;
    p.b.accept(0, b, &accept_params()).unwrap();
    p.deliver_all();
    connect_response(&p.events(Side::A));
    // A's consumer never establishes: B resends its REP twice; A's MRAs for the duplicates
    // are lost, so B's wait is never stretched.
    for _ in 0..2 {
        p.tick();
        let sent = p.pump(|s| s.attr() == attr::MRA);
        assert_eq!(sent.iter().map(Sent::attr).collect::<Vec<_>>(), vec![attr::REP, attr::MRA]);
    }
    assert!(p.events(Side::A).is_empty());
    assert_eq!(p.a.stats().duplicate, 2);
    p.tick();
    assert_eq!(p.now, 3 * p.b.retry_interval_ns(20));
    assert_eq!(p.events(Side::B), vec![CmEvent::Unreachable { id: b }]);
    p.deliver_all();
    match p.events(Side::A).as_slice() {
        [CmEvent::Rejected { id, reason: reject_reason::TIMEOUT, .. }] => assert_eq!(*id, a),
        other => panic!("want REJECTED (timeout), got {other:?}"),
    }
    assert_eq!((p.a.state(a), p.b.state(b)), (None, None));
}

#[test]
fn lost_dreq_is_resent_and_unanswered_dreq_still_disconnects() {
    let mut p = Pair::new();
    let (a, b) = established(&mut p);
    let t0 = p.now;
    p.a.disconnect(t0, a, &[]).unwrap();
    let first = p.pump(|_| true);
    p.tick();
    let sent = p.deliver_all();
    assert_eq!(sent[0].mad, first[0].mad, "the same DREQ, TID and all");
    assert_eq!(sent[1].attr(), attr::DREP);
    assert_eq!(p.events(Side::A), vec![CmEvent::Disconnected { id: a }]);
    assert_eq!(p.events(Side::B), vec![CmEvent::Disconnected { id: b }]);

    // Every DREQ lost: after 1 + 15 sends A disconnects anyway.
    let mut p = Pair::new();
    let (a, _) = established(&mut p);
    p.a.disconnect(p.now, a, &[]).unwrap();
    p.pump(|_| true);
    for _ in 0..15 {
        p.tick();
        p.pump(|_| true);
        assert!(p.events(Side::A).is_empty());
    }
    p.tick();
    assert_eq!(p.events(Side::A), vec![CmEvent::Disconnected { id: a }]);
    assert_eq!(p.a.state(a), Some(CmState::TimeWait));
    assert_eq!(p.log.iter().filter(|(s, _)| s.attr() == attr::DREQ).count(), 16);
}

#[test]
fn duplicate_dreq_in_timewait_gets_drep_again_and_stale_req_gets_rej() {
    let mut p = Pair::new();
    let (a, b) = established(&mut p);
    p.a.disconnect(p.now, a, &[]).unwrap();
    let sent = p.deliver_all();
    p.events(Side::A);
    p.events(Side::B);
    p.b.handle_mad(p.now, MadAddr::gsi(A_IP), &sent[0].mad);
    let again = p.b.poll_transmit().unwrap();
    assert_eq!(again.mad, sent[1].mad, "the same DREP");
    assert!(p.events(Side::B).is_empty());
    // The old REQ, arriving late, finds the connection in TimeWait.
    let req = p.log.iter().find(|(s, _)| s.attr() == attr::REQ).unwrap().0.mad;
    p.b.handle_mad(p.now, MadAddr::gsi(A_IP), &req);
    let rej = p.b.poll_transmit().unwrap();
    let CmMessage::Rej(r) = CmMessage::parse(&rej.mad).unwrap().1 else { panic!("no REJ") };
    assert_eq!(r.reason, reject_reason::STALE_CONNECTION);
    assert!(p.events(Side::B).is_empty());
    assert_eq!(p.b.state(b), Some(CmState::TimeWait));
}

#[test]
fn strays_are_dropped_and_unknown_dreq_gets_drep() {
    let mut p = Pair::new();
    let (a, b) = established(&mut p);
    let from_a = MadAddr::gsi(A_IP);
    // A REP and an RTU for connections a fresh engine does not have: dropped, counted.
    let mut stranger = CmEngine::new(CmConfig::new(9, 1));
    for at in [attr::REP, attr::RTU] {
        let mad = p.log.iter().find(|(s, _)| s.attr() == at).unwrap().0.mad;
        stranger.handle_mad(0, from_a, &mad);
    }
    assert_eq!(stranger.stats().stray, 2);
    assert!(stranger.poll_transmit().is_none() && stranger.poll_event().is_none());
    // A REJ naming none of B's connections.
    let rej = CmMessage::Rej(Box::new(Rej {
        local_comm_id: 5,
        remote_comm_id: 6,
        message_rejected: 1,
        reject_info_length: 0,
        reason: 28,
        additional_reject_info: [0; 72],
        private_data: [0; private_len::REJ],
    }))
    .emit(1);
    p.b.handle_mad(p.now, from_a, &rej);
    assert_eq!(p.b.stats().stray, 1);
    // A DREQ naming the wrong QPN is dropped; one for an unknown connection gets a DREP.
    let dreq = |remote_qpn: u32, remote_comm_id: u32| {
        CmMessage::Dreq(Box::new(super::mad::Dreq {
            local_comm_id: a.local_comm_id(),
            remote_comm_id,
            remote_qpn,
            private_data: [0; private_len::DREQ],
        }))
        .emit(77)
    };
    p.b.handle_mad(p.now, from_a, &dreq(0x99, b.local_comm_id()));
    assert_eq!(p.b.state(b), Some(CmState::Established));
    assert!(p.b.poll_transmit().is_none());
    p.b.handle_mad(p.now, from_a, &dreq(0x22, 0x4242));
    let drep = p.b.poll_transmit().unwrap();
    assert_eq!(drep.dest, from_a);
    let (h, CmMessage::Drep(d)) = CmMessage::parse(&drep.mad).unwrap() else { panic!("no DREP") };
    assert_eq!((h.transaction_id, d.local_comm_id, d.remote_comm_id), (77, 0x4242, a.local_comm_id()));
    assert!(p.events(Side::B).is_empty());
    assert_eq!(p.b.stats().stray, 3);
    // Garbage and a MAD of another class.
    p.b.handle_mad(p.now, from_a, &[0u8; 10]);
    let rep = p.log.iter().find(|(s, _)| s.attr() == attr::REP).unwrap().0.mad;
    let mut mad = rep;
    mad[1] = 0x04;
    p.b.handle_mad(p.now, from_a, &mad);
    let mut lap = rep;
    lap[16..18].copy_from_slice(&0x0019u16.to_be_bytes());
    p.b.handle_mad(p.now, from_a, &lap);
    assert_eq!((p.b.stats().malformed, p.b.stats().unsupported), (2, 1));
    assert!(p.events(Side::B).is_empty() && p.b.poll_transmit().is_none());
    assert_eq!(p.b.state(b), Some(CmState::Established));
}

#[test]
fn bad_calls_are_typed_errors_and_send_nothing() {
    let mut p = Pair::new();
    let ghost = CmId(0xdead);
    assert_eq!(p.b.accept(0, ghost, &accept_params()), Err(CmError::UnknownId(ghost)));
    assert_eq!(p.b.reject(0, ghost, &[]), Err(CmError::UnknownId(ghost)));
    assert_eq!(p.b.establish(0, ghost), Err(CmError::UnknownId(ghost)));
    assert_eq!(p.b.comm_established(0, ghost), Err(CmError::UnknownId(ghost)));
    assert_eq!(p.b.listen(PORT), Err(CmError::AlreadyListening(super::mad::ip_service_id(PORT))));
    assert_eq!(p.a.unlisten(PORT), Err(CmError::NotListening(super::mad::ip_service_id(PORT))));

    let mut c = params();
    c.private_data = vec![0; 57];
    assert_eq!(p.a.connect(0, &c), Err(CmError::PrivateDataTooLong { len: 57, max: 56 }));
    for bad in [
        |c: &mut ConnectParams| c.qpn = 1 << 24,
        |c: &mut ConnectParams| c.starting_psn = 1 << 24,
        |c: &mut ConnectParams| c.retry_count = 8,
        |c: &mut ConnectParams| c.max_cm_retries = 16,
        |c: &mut ConnectParams| c.cm_response_timeout = 32,
    ] {
        let mut c = params();
        bad(&mut c);
        assert!(matches!(p.a.connect(0, &c), Err(CmError::InvalidArgument(_))));
    }
    assert!(p.a.poll_transmit().is_none(), "a refused connect sends nothing");

    let a = p.a.connect(0, &params()).unwrap();
    let wrong = |call| CmError::WrongState { id: a, state: CmState::ReqSent, call };
    assert_eq!(p.a.accept(0, a, &accept_params()), Err(wrong("accept")));
    assert_eq!(p.a.establish(0, a), Err(wrong("establish")));
    assert_eq!(p.a.disconnect(0, a, &[]), Err(wrong("disconnect")));
    assert_eq!(p.a.reject(0, a, &[]), Err(wrong("reject")));
    p.deliver_all();
    let b = connect_request(&p.events(Side::B)).id;
    let mut ap = accept_params();
    ap.private_data = vec![0; 197];
    assert_eq!(p.b.accept(0, b, &ap), Err(CmError::PrivateDataTooLong { len: 197, max: 196 }));
    assert_eq!(p.b.reject(0, b, &[0; 149]), Err(CmError::PrivateDataTooLong { len: 149, max: 148 }));
    assert!(p.b.poll_transmit().is_none());
    assert_eq!(p.b.state(b), Some(CmState::ReqRcvd), "a refused call changes nothing");
    p.b.accept(0, b, &accept_params()).unwrap();
    p.deliver_all();
    p.a.establish(0, a).unwrap();
    p.deliver_all();
    assert_eq!(p.a.disconnect(0, a, &[0; 221]), Err(CmError::PrivateDataTooLong { len: 221, max: 220 }));
    assert_eq!(p.a.state(a), Some(CmState::Established));
    let msg = p.a.accept(0, a, &accept_params()).unwrap_err().to_string();
    assert!(msg.contains("accept") && msg.contains("Established"), "{msg}");
}

#[test]
fn active_timeout_rej_ends_the_pending_request_on_the_passive_side() {
    let mut p = Pair::new();
    let mut c = params();
    c.max_cm_retries = 1;
    let a = p.a.connect(0, &c).unwrap();
    p.deliver_all();
    let b = connect_request(&p.events(Side::B)).id;
    // B's consumer never answers; A resends once, then gives up and says so with a REJ
    // (reason timeout) that names no remote ID: B finds its id by A's CA GUID and ID.
    p.tick();
    p.deliver_all();
    p.tick();
    assert_eq!(p.events(Side::A), vec![CmEvent::Unreachable { id: a }]);
    let sent = p.deliver_all();
    let CmMessage::Rej(r) = sent[0].msg() else { panic!("no REJ") };
    assert_eq!(r.remote_comm_id, 0);
    match p.events(Side::B).as_slice() {
        [CmEvent::Rejected { id, reason: reject_reason::TIMEOUT, .. }] => assert_eq!(*id, b),
        other => panic!("want REJECTED (timeout), got {other:?}"),
    }
    assert_eq!(p.b.state(b), None);
}

/// A REQ with the field values Linux rdma_cm (rping over rxe) sent, as recorded in
/// docs/guests.md 4.5, reaches a listener on port 7174 as the CONNECT_REQUEST it means; the
/// REP answers with its TID and comm IDs; to an unlistened port it gets what rxe sent back:
/// REJ reason 8, message REJected 0, local comm ID 0.
#[test]
fn a_req_as_linux_rdma_cm_sends_it() {
    let (client, server) = (Ipv4Addr::new(192, 168, 77, 2), Ipv4Addr::new(192, 168, 77, 1));
    let mut private_data = [0u8; private_len::REQ];
    private_data[1] = 0x40;
    private_data[2..4].copy_from_slice(&0xdd23u16.to_be_bytes());
    private_data[16..20].copy_from_slice(&client.octets());
    private_data[32..36].copy_from_slice(&server.octets());
    let req = super::mad::Req {
        local_comm_id: 0x62c3_564c,
        service_id: 0x0000_0000_0106_1c06,
        local_ca_guid: 0x5054_00ff_fe77_0002,
        local_qkey: 0,
        local_qpn: 0x11,
        responder_resources: 1,
        initiator_depth: 1,
        remote_cm_response_timeout: 20,
        transport_service_type: 0,
        end_to_end_flow_control: false,
        starting_psn: 0x2b_63b6,
        local_cm_response_timeout: 20,
        retry_count: 7,
        pkey: 0xffff,
        path_mtu: 3,
        rnr_retry_count: 7,
        max_cm_retries: 15,
        srq: false,
        primary_local_lid: 0xffff,
        primary_remote_lid: 0xffff,
        primary_local_gid: client.to_ipv6_mapped().octets(),
        primary_remote_gid: server.to_ipv6_mapped().octets(),
        primary_flow_label: 0xae343,
        primary_packet_rate: 0,
        primary_traffic_class: 0,
        primary_hop_limit: 64,
        primary_sl: 0,
        primary_subnet_local: false,
        primary_local_ack_timeout: 19,
        private_data,
    };
    let tid = 0x0000_0002_4c56_c362;
    let mad = CmMessage::Req(Box::new(req)).emit(tid);
    let from = MadAddr::gsi(client);
    let mut e = CmEngine::new(CmConfig::new(0x5054_00ff_fe77_0001, 0x1be9_d8ba));
    e.handle_mad(0, from, &mad);
    let rej = e.poll_transmit().unwrap();
    let (h, CmMessage::Rej(r)) = CmMessage::parse(&rej.mad).unwrap() else { panic!("no REJ") };
    assert_eq!((h.transaction_id, r.reason, r.message_rejected), (tid, 8, 0));
    assert_eq!((r.local_comm_id, r.remote_comm_id), (0, 0x62c3_564c));
    assert_eq!(rej.dest, from);

    e.listen(7174).unwrap();
    e.handle_mad(0, from, &mad);
    let r = match e.poll_event() {
        Some(CmEvent::ConnectRequest(r)) => r,
        other => panic!("want CONNECT_REQUEST, got {other:?}"),
    };
    assert_eq!((r.src, r.dst), (SocketAddrV4::new(client, 0xdd23), SocketAddrV4::new(server, 7174)));
    assert_eq!((r.remote_qpn, r.starting_psn, r.path_mtu), (0x11, 0x2b_63b6, Mtu::Mtu1024));
    assert_eq!((r.responder_resources, r.initiator_depth, r.local_ack_timeout), (1, 1, 19));
    assert_eq!(r.private_data, vec![0; 56]);
    e.accept(0, r.id, &AcceptParams::new(0x11, 0xdb_fe36)).unwrap();
    let rep = e.poll_transmit().unwrap();
    let (h, CmMessage::Rep(m)) = CmMessage::parse(&rep.mad).unwrap() else { panic!("no REP") };
    assert_eq!(h.transaction_id, tid);
    assert_eq!((m.local_comm_id, m.remote_comm_id), (0x1be9_d8ba, 0x62c3_564c));
    assert_eq!((m.local_qpn, m.starting_psn, m.target_ack_delay, m.rnr_retry_count), (0x11, 0xdb_fe36, 15, 7));
    assert_eq!(m.local_ca_guid, 0x5054_00ff_fe77_0001);
    // 4.096 µs × 2^20 + 2 × 4.096 µs × 2^16 after the REP, it is resent unless the RTU came.
    assert_eq!(e.next_timeout(), Some(cm_timeout_ns(20) + 2 * cm_timeout_ns(16)));
}

#[test]
fn destroy_tells_the_peer_as_ib_cm_does_and_reports_nothing_more() {
    // REQ Sent: the peer's pending request ends with REJ timeout.
    let mut p = Pair::new();
    let a = p.a.connect(0, &params()).unwrap();
    p.deliver_all();
    let b = connect_request(&p.events(Side::B)).id;
    p.a.destroy(0, a).unwrap();
    assert_eq!((p.a.state(a), p.a.next_timeout()), (None, None));
    p.deliver_all();
    assert!(matches!(p.events(Side::B).as_slice(), [CmEvent::Rejected { id, reason: 4, .. }] if *id == b));
    assert!(p.events(Side::A).is_empty());
    assert_eq!(p.a.destroy(0, a), Err(CmError::UnknownId(a)));

    // REQ Rcvd: the active side is rejected by the consumer.
    let mut p = Pair::new();
    let a = p.a.connect(0, &params()).unwrap();
    p.deliver_all();
    let b = connect_request(&p.events(Side::B)).id;
    p.b.destroy(0, b).unwrap();
    p.deliver_all();
    assert!(matches!(p.events(Side::A).as_slice(), [CmEvent::Rejected { id, reason: 28, .. }] if *id == a));

    // Established: one DREQ, the peer disconnects; our id spends TimeWait silently.
    let mut p = Pair::new();
    let (a, b) = established(&mut p);
    p.a.destroy(p.now, a).unwrap();
    assert_eq!(p.a.state(a), None);
    assert_eq!(p.a.disconnect(p.now, a, &[]), Err(CmError::UnknownId(a)));
    let sent = p.deliver_all();
    assert_eq!(sent.iter().map(Sent::attr).collect::<Vec<_>>(), vec![attr::DREQ, attr::DREP]);
    assert_eq!(p.events(Side::B), vec![CmEvent::Disconnected { id: b }]);
    assert!(p.a.next_timeout().is_some(), "A keeps the id for TimeWait");
    p.tick();
    assert!(p.events(Side::A).is_empty(), "no event for a destroyed id, not even TIMEWAIT_EXIT");
    assert_eq!(p.events(Side::B), vec![CmEvent::TimewaitExit { id: b }]);
    assert_eq!(p.a.next_timeout(), None);
}

/// A restarted active side (new engine, new comm IDs) connects again from the QP the old
/// connection used: B rejects the REQ as stale and disconnects the old connection; the
/// next attempt, after that, succeeds.
#[test]
fn a_req_from_a_connected_qp_is_stale_and_ends_the_old_connection() {
    let mut p = Pair::new();
    let (_, b) = established(&mut p);
    p.a = CmEngine::new(CmConfig::new(A_GUID, 0x5000));
    let a2 = p.a.connect(p.now, &params()).unwrap();
    let sent = p.deliver_all();
    let attrs: Vec<_> = sent.iter().map(|s| (s.from, s.attr())).collect();
    assert_eq!(attrs, vec![(Side::A, attr::REQ), (Side::B, attr::REJ), (Side::B, attr::DREQ), (Side::A, attr::DREP)]);
    assert!(
        matches!(p.events(Side::A).as_slice(), [CmEvent::Rejected { id, reason: reject_reason::STALE_CONNECTION, .. }] if *id == a2)
    );
    assert_eq!(p.events(Side::B), vec![CmEvent::Disconnected { id: b }], "no CONNECT_REQUEST for the stale REQ");
    assert_eq!(p.b.state(b), Some(CmState::TimeWait));
    // The same QP connects again: B's old connection is in TimeWait, so the REQ is taken.
    p.a.connect(p.now, &params()).unwrap();
    p.deliver_all();
    connect_request(&p.events(Side::B));
}
