//! rdma_cm over QP1 between two simulated rnic hosts (IBTA Vol 1 ch. 12 and 13.5, Annex A17,
//! `rdma_cm(7)`): each host's [`EventChannel`] creates its port's GSI QP (UD, QP number 1,
//! Q_Key 0x8001_0000) and carries the CM engine's MADs on it as UD SENDs. A client resolves,
//! connects with private data, the server accepts with its own, both RC QPs reach RTS with
//! each other's QPN and PSN, and SENDs and RDMA WRITEs then move data both ways; rejects,
//! a closed port, an absent CM and lost REQ or REP frames end as rdma_cm says. tshark reads
//! the MADs on the wire as InfiniBand CM.

mod common;

use std::net::{Ipv4Addr, SocketAddrV4};

use common::frames::tshark_fields;
use common::{pattern, Hosts};
use rnic::cm::{ChannelConfig, CmEventType, ConnParam, EventChannel, RdmaCmEvent, RdmaCmId};
use rnic::{
    AccessFlags, AddressVector, Errno, QpAttr, QpAttrMask, QpState, QpType, RecvWr, SendWr, WcOpcode, WcStatus,
};
use rnic_firmware_tests::oracle;
use rnic_sim::SimConfig;

/// The server's port.
const PORT: u16 = 7471;
/// Cycles any one CM step may take without lost frames (a MAD's round trip is a few µs).
const STEP: u64 = 200_000;
/// Timing for the tests that lose frames or wait for retries: a CM response timeout of
/// 4.096 µs × 2^6 ≈ 262 µs and a packet life time of 4.096 µs × 2^4 ≈ 65 µs, so a MAD is
/// resent after ≈ 393 µs (98 k cycles at 250 MHz) rather than rdma_cm's 4.8 s.
const FAST: ChannelConfig = ChannelConfig { cm_response_timeout: 6, max_cm_retries: 3, packet_life_time: 4 };

/// Runs both channels (and the world) until `ch` has an event; panics after `budget` cycles.
fn next_event<'a>(h: &Hosts, ch: &EventChannel<'a>, other: &EventChannel<'_>, budget: u64) -> RdmaCmEvent<'a> {
    let start = h.world.borrow().cycles();
    loop {
        other.process().unwrap();
        ch.process().unwrap();
        if let Some(e) = ch.poll_cm_event() {
            return e;
        }
        if h.world.borrow().cycles() - start > budget {
            panic!("no rdma_cm event within {budget} cycles; {:?} {:?}\n{}", ch.stats(), other.stats(), h.diag());
        }
        h.settle(32);
    }
}

/// Takes `ch`'s next event, checks its type, acknowledges it and returns its id, status and
/// private data.
fn expect<'a>(
    h: &Hosts,
    ch: &EventChannel<'a>,
    other: &EventChannel<'_>,
    want: CmEventType,
    budget: u64,
) -> (RdmaCmId<'a>, i32, Vec<u8>) {
    let ev = next_event(h, ch, other, budget);
    assert_eq!(ev.event, want, "status {}, {:?}", ev.status, ev.id);
    let r = (ev.id.clone(), ev.status, ev.private_data.clone());
    ch.ack_cm_event(ev);
    r
}

/// Static neighbor entries for both hosts, so that no ARP runs: for the tests that count or
/// drop frames by their order on the wire.
fn static_neighbors(h: &Hosts, sa: &EventChannel<'_>, sb: &EventChannel<'_>) {
    let (a, b) = (h.a.port_addr().unwrap(), h.b.port_addr().unwrap());
    sa.add_neighbor(b.ip, b.mac).unwrap();
    sb.add_neighbor(a.ip, a.mac).unwrap();
}

/// Host B listening on [`PORT`].
fn listener<'a>(sb: &EventChannel<'a>) -> RdmaCmId<'a> {
    let l = sb.create_id();
    l.bind_addr(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, PORT)).unwrap();
    l.listen(8).unwrap();
    l
}

/// Host A's id, resolved towards host B's `port`, with an RC QP (RQ of 8).
fn resolved_client<'a>(h: &Hosts, sa: &EventChannel<'a>, sb: &EventChannel<'_>, port: u16) -> RdmaCmId<'a> {
    let b_ip = h.b.port_addr().unwrap().ip;
    let c = sa.create_id();
    c.resolve_addr(None, SocketAddrV4::new(b_ip, port)).unwrap();
    expect(h, sa, sb, CmEventType::AddrResolved, STEP);
    c.resolve_route().unwrap();
    expect(h, sa, sb, CmEventType::RouteResolved, STEP);
    c.create_qp(h.pa.create_qp(&h.ca).set_max_recv_wr(8)).unwrap();
    c
}

/// Private data naming a buffer: a tag, its address and rkey (little-endian).
fn advert(tag: &[u8; 16], addr: u64, rkey: u32) -> Vec<u8> {
    let mut v = tag.to_vec();
    v.extend_from_slice(&addr.to_le_bytes());
    v.extend_from_slice(&rkey.to_le_bytes());
    v
}

fn read_advert(p: &[u8]) -> (u64, u32) {
    (u64::from_le_bytes(p[16..24].try_into().unwrap()), u32::from_le_bytes(p[24..28].try_into().unwrap()))
}

/// tshark's number ("0x…" or decimal).
fn n(s: &str) -> u64 {
    match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).unwrap(),
        None => s.parse().unwrap_or_else(|_| panic!("not a number: {s:?}")),
    }
}

/// The whole life of a connection. The client resolves and connects with 28 bytes of private
/// data naming a buffer; the server gets CONNECT_REQUEST with them (zero-padded to 56) from
/// its listener, accepts with its own; both get ESTABLISHED (the client with the REP's private
/// data), both QPs are in RTS towards each other. A SEND each way and an RDMA WRITE each way
/// (to the buffers the private data named) land byte for byte. The client disconnects, both
/// get DISCONNECTED. On the wire every CM MAD goes to QP 1 from QP 1 with Q_Key 0x8001_0000,
/// tshark reads them as InfiniBand CM REQ, REP, RTU, DREQ, DREP with the QPNs and PSNs the
/// QPs have, and every frame is clean (tshark and scapy's ICRC).
#[test]
fn connect_accept_move_data_both_ways_and_disconnect() {
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("cm.pcap");
    let h = Hosts::new(SimConfig::default());
    h.world.borrow_mut().capture_pcap(&pcap).unwrap();
    // Each side: [0, 4096) what it sends, [4096, 8192) the RDMA WRITE target, [8192, 12288)
    // its receive buffer.
    let mut a_mem = [pattern(1, 4096), vec![0; 8192]].concat();
    let mut b_mem = [pattern(2, 4096), vec![0; 8192]].concat();
    let access = AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE;
    let a_mr = h.pa.register(&mut a_mem, access).unwrap();
    let b_mr = h.pb.register(&mut b_mem, access).unwrap();
    let sa = EventChannel::new(&h.a).unwrap();
    let sb = EventChannel::new(&h.b).unwrap();
    static_neighbors(&h, &sa, &sb);
    assert_eq!((sa.gsi_qp_num().unwrap(), sb.gsi_qp_num().unwrap()), (1, 1), "the CM's QP is QP 1");
    let l = listener(&sb);
    let c = resolved_client(&h, &sa, &sb, PORT);
    c.qp().unwrap().post_recv_one(RecvWr::new(10, a_mr.sge(8192..12288).unwrap())).unwrap();
    let client_pd = advert(b"rnic cm client\0\0", a_mr.remote_addr(4096).unwrap().addr, a_mr.rkey());
    let t0 = h.world.borrow().cycles();
    c.connect(&ConnParam::with_private_data(&client_pd)).unwrap();

    let ev = next_event(&h, &sb, &sa, STEP);
    assert_eq!(ev.event, CmEventType::ConnectRequest);
    let t_req = h.world.borrow().cycles();
    assert_eq!(ev.listen_id.as_ref(), Some(&l), "reported on the listener");
    assert_eq!(ev.private_data.len(), 56, "a REQ carries 56 bytes for the consumer");
    assert_eq!(&ev.private_data[..28], &client_pd[..], "the client's private data");
    assert!(ev.private_data[28..].iter().all(|&b| b == 0));
    let s = ev.id.clone();
    sb.ack_cm_event(ev);
    assert_eq!(s.remote_addr(), c.local_addr(), "the client's address and port, from the IP CM header");
    assert_eq!(s.local_addr().unwrap().port(), PORT);
    let (a_addr, a_rkey) = read_advert(&client_pd);
    s.create_qp(h.pb.create_qp(&h.cb).set_max_recv_wr(8)).unwrap();
    s.qp().unwrap().post_recv_one(RecvWr::new(20, b_mr.sge(8192..12288).unwrap())).unwrap();
    let server_pd = advert(b"rnic cm server\0\0", b_mr.remote_addr(4096).unwrap().addr, b_mr.rkey());
    s.accept(&ConnParam::with_private_data(&server_pd)).unwrap();
    assert_eq!(s.qp().unwrap().state(), QpState::Rts, "accept moves the QP to RTR and RTS");

    let (cid, _, rep_pd) = expect(&h, &sa, &sb, CmEventType::Established, STEP);
    let t_client = h.world.borrow().cycles();
    assert_eq!(cid, c);
    assert_eq!(rep_pd.len(), 196, "a REP carries 196 bytes");
    assert_eq!(&rep_pd[..28], &server_pd[..], "ESTABLISHED carries the server's private data");
    let (sid, _, _) = expect(&h, &sb, &sa, CmEventType::Established, STEP);
    let t_server = h.world.borrow().cycles();
    assert_eq!(sid, s);
    eprintln!(
        "connect → CONNECT_REQUEST {} cycles, → client ESTABLISHED {} cycles, → server ESTABLISHED {} cycles",
        t_req - t0,
        t_client - t0,
        t_server - t0
    );
    let (cq, sq) = (c.qp().unwrap().query_qp(), s.qp().unwrap().query_qp());
    assert_eq!((cq.qp_state, sq.qp_state), (QpState::Rts, QpState::Rts));
    assert_eq!(cq.dest_qp_num, s.qp_num().unwrap(), "the client's QP talks to the server's");
    assert_eq!(sq.dest_qp_num, c.qp_num().unwrap());
    // IBTA's Starting PSN (and Linux ib_cm's reading of it): each side announces the PSN it
    // expects to receive, and the peer sends from it.
    assert_eq!(cq.rq_psn, c.qp().unwrap().local_psn(), "the client expects the PSN its REQ announced");
    assert_eq!(sq.rq_psn, s.qp().unwrap().local_psn(), "the server expects the PSN its REP announced");
    assert_eq!((cq.sq_psn, sq.sq_psn), (sq.rq_psn, cq.rq_psn), "each sends from the PSN the other announced");

    // Data both ways: a SEND and an RDMA WRITE from each side.
    let (b_addr, b_rkey) = read_advert(&rep_pd);
    let to_b = rnic::RemoteAddr { addr: b_addr, rkey: b_rkey };
    let to_a = rnic::RemoteAddr { addr: a_addr, rkey: a_rkey };
    c.qp()
        .unwrap()
        .post_send(&[
            SendWr::send(1, a_mr.sge(0..1000).unwrap()).signaled(true),
            SendWr::rdma_write(2, a_mr.sge(0..4096).unwrap(), to_b).signaled(true),
        ])
        .unwrap();
    s.qp()
        .unwrap()
        .post_send(&[
            SendWr::send(3, b_mr.sge(0..2000).unwrap()).signaled(true),
            SendWr::rdma_write(4, b_mr.sge(0..4096).unwrap(), to_a).signaled(true),
        ])
        .unwrap();
    let mut wa = h.wait(&h.ca, 3, 500_000);
    let mut wb = h.wait(&h.cb, 3, 500_000);
    wa.sort_by_key(|w| w.wr_id);
    wb.sort_by_key(|w| w.wr_id);
    let summary = |w: &[rnic::WorkCompletion]| w.iter().map(|w| (w.wr_id, w.status, w.opcode)).collect::<Vec<_>>();
    assert_eq!(
        summary(&wa),
        vec![
            (1, WcStatus::Success, WcOpcode::Send),
            (2, WcStatus::Success, WcOpcode::RdmaWrite),
            (10, WcStatus::Success, WcOpcode::Recv)
        ],
        "{}",
        h.diag()
    );
    assert_eq!(
        summary(&wb),
        vec![
            (3, WcStatus::Success, WcOpcode::Send),
            (4, WcStatus::Success, WcOpcode::RdmaWrite),
            (20, WcStatus::Success, WcOpcode::Recv)
        ]
    );
    assert_eq!((wa[2].byte_len, wb[2].byte_len), (2000, 1000));
    let (a_now, b_now) = (a_mr.to_vec(), b_mr.to_vec());
    assert_eq!(&b_now[8192..9192], &pattern(1, 4096)[..1000], "A's SEND in B's receive buffer");
    assert_eq!(&a_now[8192..10192], &pattern(2, 4096)[..2000], "B's SEND in A's receive buffer");
    assert!(b_now[4096..8192] == pattern(1, 4096)[..], "A's RDMA WRITE at the address B advertised");
    assert!(a_now[4096..8192] == pattern(2, 4096)[..], "B's RDMA WRITE at the address A advertised");

    c.disconnect().unwrap();
    assert_eq!(c.qp().unwrap().state(), QpState::Err, "rdma_disconnect moves the QP to ERR");
    expect(&h, &sb, &sa, CmEventType::Disconnected, STEP);
    expect(&h, &sa, &sb, CmEventType::Disconnected, STEP);
    assert_eq!(s.qp().unwrap().state(), QpState::Err);
    s.disconnect().unwrap(); // the server's answer to DISCONNECTED, as rping does: nothing to send
    let (ea, qa) = sa.stats().unwrap();
    let (eb, qb) = sb.stats().unwrap();
    assert_eq!((qa.mads_sent, qa.mads_received, ea.retransmitted), (3, 2, 0), "REQ RTU DREQ out, REP DREP in");
    assert_eq!((qb.mads_sent, qb.mads_received, eb.retransmitted), (2, 3, 0));
    assert_eq!(qa.unresolved + qa.errors + qb.unresolved + qb.errors, 0);
    let (client_qpn, server_qpn) = (c.qp_num().unwrap(), s.qp_num().unwrap());
    let (client_psn, server_psn) = (c.qp().unwrap().local_psn(), s.qp().unwrap().local_psn());
    drop((c, s, l));
    drop((sa, sb));
    h.world.borrow_mut().finish().unwrap();

    let frames = oracle::read_pcap(&pcap).unwrap();
    let verdict = oracle::check_capture(&pcap).unwrap();
    assert!(verdict.all_clean(frames.len()), "{}", verdict.summary());
    let rows = tshark_fields(
        &pcap,
        &[
            "infiniband.bth.destqp",
            "infiniband.deth.srcqp",
            "infiniband.deth.q_key",
            "infiniband.mad.mgmtclass",
            "infiniband.mad.attributeid",
            "infiniband.cm.req.localqpn",
            "infiniband.cm.req.startpsn",
            "infiniband.cm.rep.localqpn",
            "infiniband.cm.rep.startpsn",
            "infiniband.cm.req.serviceid.dport",
        ],
    );
    let mads: Vec<&Vec<String>> = rows.iter().filter(|r| r[0] == "1" || r[0] == "0x000001").collect();
    let attrs: Vec<u64> = mads.iter().map(|r| n(&r[4])).collect();
    assert_eq!(attrs, vec![0x10, 0x13, 0x14, 0x15, 0x16], "REQ, REP, RTU, DREQ, DREP on QP 1: {rows:?}");
    for r in &mads {
        assert_eq!((n(&r[1]), n(&r[2]), n(&r[3])), (1, 0x8001_0000, 7), "from QP 1, GSI Q_Key, class CM: {r:?}");
    }
    let req = &mads[0];
    assert_eq!((n(&req[5]), n(&req[6]), n(&req[9])), (u64::from(client_qpn), u64::from(client_psn), u64::from(PORT)));
    let rep = &mads[1];
    assert_eq!((n(&rep[7]), n(&rep[8])), (u64::from(server_qpn), u64::from(server_psn)));
}

/// A REQ for a port with no listener is answered by the server's CM with REJ reason 8
/// (invalid service ID): the client gets REJECTED with status 8 and its id has no connection.
#[test]
fn connecting_to_a_port_nobody_listens_on_is_rejected_with_reason_8() {
    let h = Hosts::new(SimConfig::default());
    let sa = EventChannel::new(&h.a).unwrap();
    let sb = EventChannel::new(&h.b).unwrap();
    let _l = listener(&sb);
    let c = resolved_client(&h, &sa, &sb, PORT + 1);
    c.connect(&ConnParam::default()).unwrap();
    let (id, status, _) = expect(&h, &sa, &sb, CmEventType::Rejected, STEP);
    assert_eq!((id, status), (c.clone(), 8));
    assert_eq!(c.comm_id(), None);
    assert!(sb.poll_cm_event().is_none(), "the listener on another port hears nothing");
    assert_eq!(sb.stats().unwrap().0.rejected_req, 1);
}

/// The server takes the request with `rdma_get_request` and rejects it with private data
/// (`rdma_reject`): the client gets REJECTED with reason 28 (consumer reject) and those bytes at
/// the head of the REJ's 148.
#[test]
fn a_server_reject_reaches_the_client_with_its_private_data() {
    let h = Hosts::new(SimConfig::default());
    let sa = EventChannel::new(&h.a).unwrap();
    let sb = EventChannel::new(&h.b).unwrap();
    let l = listener(&sb);
    let c = resolved_client(&h, &sa, &sb, PORT);
    c.connect(&ConnParam::with_private_data(b"may I?")).unwrap();
    let ev = l.get_request(STEP).unwrap(); // rdma_get_request: the listener's next request
    assert_eq!((ev.event, ev.listen_id.as_ref()), (CmEventType::ConnectRequest, Some(&l)));
    assert_eq!(&ev.private_data[..6], b"may I?");
    let s = ev.id.clone();
    s.reject(b"go away: server full").unwrap();
    let (id, status, pd) = expect(&h, &sa, &sb, CmEventType::Rejected, STEP);
    assert_eq!((id, status, pd.len()), (c.clone(), 28, 148));
    assert_eq!(&pd[..20], b"go away: server full");
    assert_eq!(c.qp().unwrap().state(), QpState::Init, "the client's QP never left INIT");
}

/// Connects over a link that drops the `n`-th frame `nic` sends; returns the retransmissions
/// of A's and B's engines once both are ESTABLISHED.
fn connect_losing(nic: usize, n: u64) -> (u64, u64) {
    let h = Hosts::new(SimConfig {
        faults: rnic_sim::FaultConfig { drop_frames: vec![(nic, n)], ..Default::default() },
        ..SimConfig::default()
    });
    let sa = EventChannel::with_config(&h.a, FAST).unwrap();
    let sb = EventChannel::with_config(&h.b, FAST).unwrap();
    static_neighbors(&h, &sa, &sb);
    let _l = listener(&sb);
    let c = resolved_client(&h, &sa, &sb, PORT);
    let t0 = h.world.borrow().cycles();
    c.connect(&ConnParam::default()).unwrap();
    let (s, _, _) = expect(&h, &sb, &sa, CmEventType::ConnectRequest, 2_000_000);
    s.create_qp(h.pb.create_qp(&h.cb)).unwrap();
    s.accept(&ConnParam::default()).unwrap();
    expect(&h, &sa, &sb, CmEventType::Established, 2_000_000);
    expect(&h, &sb, &sa, CmEventType::Established, 2_000_000);
    eprintln!(
        "losing frame {n} of NIC {nic}: both ESTABLISHED {} cycles after connect",
        h.world.borrow().cycles() - t0
    );
    assert_eq!(c.qp().unwrap().query_qp().dest_qp_num, s.qp_num().unwrap());
    (sa.stats().unwrap().0.retransmitted, sb.stats().unwrap().0.retransmitted)
}

/// The server disconnects (the other direction): both sides get DISCONNECTED, the client's
/// QP goes to ERR and flushes its posted receive (IBV_WC_WR_FLUSH_ERR), and after TimeWait
/// (2 × the packet life time) both get TIMEWAIT_EXIT and the ids have no connection left.
#[test]
fn the_server_disconnects_and_both_sides_leave_timewait() {
    let h = Hosts::new(SimConfig::default());
    // Buffers before the channels: the ids' QPs borrow their MRs.
    let mut buf = vec![0u8; 64];
    let mr = h.pa.register(&mut buf, AccessFlags::LOCAL_WRITE).unwrap();
    let sa = EventChannel::with_config(&h.a, FAST).unwrap();
    let sb = EventChannel::with_config(&h.b, FAST).unwrap();
    let _l = listener(&sb);
    let c = resolved_client(&h, &sa, &sb, PORT);
    c.qp().unwrap().post_recv_one(RecvWr::new(77, mr.sge(0..64).unwrap())).unwrap();
    c.connect(&ConnParam::default()).unwrap();
    let (s, _, _) = expect(&h, &sb, &sa, CmEventType::ConnectRequest, STEP);
    s.create_qp(h.pb.create_qp(&h.cb)).unwrap();
    s.accept(&ConnParam::default()).unwrap();
    expect(&h, &sa, &sb, CmEventType::Established, STEP);
    expect(&h, &sb, &sa, CmEventType::Established, STEP);
    s.disconnect().unwrap();
    let (id, _, _) = expect(&h, &sa, &sb, CmEventType::Disconnected, STEP);
    assert_eq!(id, c);
    assert_eq!(c.qp().unwrap().state(), QpState::Err);
    let wc = h.wait(&h.ca, 1, STEP);
    assert_eq!((wc[0].wr_id, wc[0].status), (77, WcStatus::WrFlushErr), "the receive is flushed");
    expect(&h, &sb, &sa, CmEventType::Disconnected, STEP);
    let t0 = h.world.borrow().cycles();
    expect(&h, &sa, &sb, CmEventType::TimewaitExit, 1_000_000);
    expect(&h, &sb, &sa, CmEventType::TimewaitExit, 1_000_000);
    let waited = h.world.borrow().cycles() - t0;
    // TimeWait is 2 × 4.096 µs × 2^4 ≈ 131 µs ≈ 32.8 k cycles at 250 MHz.
    assert!((25_000..200_000).contains(&waited), "TimeWait took {waited} cycles");
    assert_eq!((c.comm_id(), s.comm_id()), (None, None));
}

/// The link loses the client's REQ (its first frame): the engine resends it after the
/// response timeout, and the connection comes up.
#[test]
fn a_lost_req_is_resent_and_the_connection_comes_up() {
    assert_eq!(connect_losing(0, 0), (1, 0), "one REQ resent, nothing else");
}

/// The link loses the server's REP (its first frame): the client's REQ timer and the server's
/// REP timer (started a few hundred cycles apart, less than a MAD's round trip) both run out,
/// each side resends once, and the connection comes up; the REP the repeated REQ draws again
/// (IBTA 12.9: a duplicate REQ in REP Sent) reaches an established client, which answers it
/// with the RTU again.
#[test]
fn a_lost_rep_is_resent_and_the_connection_comes_up() {
    assert_eq!(connect_losing(1, 0), (1, 1), "the REQ and the REP resent once each");
}

/// Nobody runs a CM on the peer (no QP 1: its NIC drops the REQs as for an unknown QP): after
/// 1 + max_cm_retries REQs the client gets UNREACHABLE with -ETIMEDOUT.
#[test]
fn a_peer_without_a_cm_is_unreachable() {
    let h = Hosts::new(SimConfig::default());
    let sa = EventChannel::with_config(&h.a, FAST).unwrap();
    let b_ip = h.b.port_addr().unwrap().ip;
    let c = sa.create_id();
    // B runs no port agent, so nothing answers A's ARP request: the address resolves by the
    // simulator's MAC rule once the (wall-clock) ARP timeout passes. A short timeout and an
    // unbounded cycle budget keep this independent of how fast the simulator runs.
    c.resolve_addr_timeout(None, SocketAddrV4::new(b_ip, PORT), std::time::Duration::from_millis(100)).unwrap();
    assert_eq!(sa.get_cm_event(u64::MAX / 2).unwrap().event, CmEventType::AddrResolved);
    c.resolve_route().unwrap();
    assert_eq!(sa.get_cm_event(STEP).unwrap().event, CmEventType::RouteResolved);
    c.create_qp(h.pa.create_qp(&h.ca)).unwrap();
    c.connect(&ConnParam::default()).unwrap();
    let ev = sa.get_cm_event(4_000_000).unwrap();
    assert_eq!((ev.event, ev.status), (CmEventType::Unreachable, -110));
    let (e, q) = sa.stats().unwrap();
    assert_eq!(e.retransmitted, 3, "max_cm_retries resends");
    assert_eq!(q.mads_sent, 5, "4 REQs and the REJ (timeout) that tells the peer");
    h.settle(5_000); // the REJ leaves
    let (_, cb) = h.counters();
    assert_eq!(cb.get("drop_unknown_qp"), Some(5), "B has no QP 1; {}", h.diag());
}

/// An address that is not a unicast neighbor (here a multicast one, which no neighbor entry or
/// the simulator's MAC rule maps) ends in ADDR_ERROR (-EHOSTUNREACH), and the id cannot go on;
/// a static neighbor entry makes an address resolve to the MAC it names. The channel's fd is
/// readable exactly while events wait. QP 1 exists once per context: a second channel on it is
/// refused.
#[test]
fn address_resolution_the_event_fd_and_one_gsi_qp_per_port() {
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("neigh.pcap");
    let h = Hosts::new(SimConfig::default());
    h.world.borrow_mut().capture_pcap(&pcap).unwrap();
    let sa = EventChannel::new(&h.a).unwrap();
    let e = EventChannel::new(&h.a).unwrap_err();
    assert_eq!(e.errno(), Errno::ENOMEM, "{e}");
    let readable = |ch: &EventChannel<'_>| {
        let mut p = libc::pollfd { fd: ch.fd(), events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd, no wait.
        unsafe { libc::poll(&mut p, 1, 0) == 1 }
    };
    assert!(!readable(&sa), "no events yet");
    let c = sa.create_id();
    c.resolve_addr(None, SocketAddrV4::new(Ipv4Addr::new(224, 0, 0, 1), PORT)).unwrap();
    assert!(readable(&sa), "an event waits");
    let ev = sa.get_cm_event(STEP).unwrap();
    assert!(!readable(&sa), "taken");
    assert_eq!((ev.event, ev.status), (CmEventType::AddrError, -113));
    assert_eq!(sa.unacked_events(), 1);
    sa.ack_cm_event(ev);
    assert_eq!(sa.unacked_events(), 0);
    assert!(c.resolve_route().is_err(), "no route without an address");
    let far = SocketAddrV4::new(Ipv4Addr::new(10, 9, 9, 9), PORT);
    let mac = rnic::MacAddr([2, 0, 0, 0, 0x77, 9]);
    sa.add_neighbor(*far.ip(), mac).unwrap();
    c.resolve_addr(None, far).unwrap();
    assert_eq!(sa.get_cm_event(STEP).unwrap().event, CmEventType::AddrResolved);
    assert!(c.connect(&ConnParam::default()).is_err(), "connect needs the route and a QP");
    c.resolve_route().unwrap();
    assert_eq!(sa.get_cm_event(STEP).unwrap().event, CmEventType::RouteResolved);
    c.create_qp(h.pa.create_qp(&h.ca)).unwrap();
    c.connect(&ConnParam::default()).unwrap();
    h.settle(5_000);
    h.world.borrow_mut().finish().unwrap();
    let frames = oracle::read_pcap(&pcap).unwrap();
    assert_eq!(frames.len(), 1, "the REQ");
    assert_eq!(&frames[0].1[0..6], &mac.0, "to the neighbor entry's MAC");
    assert_eq!(&frames[0].1[30..34], &far.ip().octets(), "and its IPv4 address");
}

/// Datagrams on QP1 that are not CM MADs cost the CM nothing: from an ordinary UD QP on host A,
/// 1000 bytes of junk and a 256-byte MAD of another management class reach B's QP1 (Q_Key
/// 0x8001_0000) and are handed to the engine, which drops and counts both as malformed;
/// 4096 bytes (a full datagram) land too, since QP1's buffers hold any datagram, so no
/// receive error ever moves QP1 to ERR; a datagram with another Q_Key is dropped by B's NIC.
/// A connection made afterwards comes up as usual.
#[test]
fn junk_on_qp1_is_counted_and_the_cm_goes_on() {
    let h = Hosts::new(SimConfig::default());
    let mut junk = pattern(5, 4096);
    let mr = h.pa.register(&mut junk, AccessFlags::LOCAL_WRITE).unwrap();
    let sa = EventChannel::new(&h.a).unwrap();
    let sb = EventChannel::new(&h.b).unwrap();
    let mut ud = h.pa.create_qp(&h.ca).set_qp_type(QpType::Ud).build().unwrap();
    use QpAttrMask as M;
    let init = QpAttr { qp_state: QpState::Init, port_num: 1, qkey: 0x8001_0000, ..QpAttr::default() };
    ud.modify(&init, M::STATE | M::PKEY_INDEX | M::PORT | M::QKEY).unwrap();
    ud.modify(&QpAttr { qp_state: QpState::Rtr, ..QpAttr::default() }, M::STATE).unwrap();
    ud.modify(&QpAttr { qp_state: QpState::Rts, ..QpAttr::default() }, M::STATE | M::SQ_PSN).unwrap();
    let b = h.b.port_addr().unwrap();
    let ah = h.pa.create_ah(AddressVector { dest_mac: b.mac, dest_ip: b.ip }).unwrap();
    let mut other_class = [0u8; 256];
    other_class[0] = 1; // base version 1
    other_class[1] = 0x81; // management class: directed-route SMP, not CM
    other_class[2] = 2;
    other_class[3] = 3;
    mr.write_at(0, &other_class).unwrap();
    ud.post_send(&[
        SendWr::send(1, mr.sge(0..1000).unwrap()).with_ud(&ah, 1, 0x8001_0000).signaled(true),
        SendWr::send(2, mr.sge(0..256).unwrap()).with_ud(&ah, 1, 0x8001_0000).signaled(true),
        SendWr::send(3, mr.sge(0..4096).unwrap()).with_ud(&ah, 1, 0x8001_0000).signaled(true),
        SendWr::send(4, mr.sge(0..256).unwrap()).with_ud(&ah, 1, 0x1234).signaled(true),
    ])
    .unwrap();
    h.wait(&h.ca, 4, STEP);
    h.settle(10_000);
    sb.process().unwrap();
    let (e, q) = sb.stats().unwrap();
    assert_eq!((q.mads_received, q.not_a_mad, q.errors, q.recoveries), (3, 2, 0, 0), "{q:?}");
    assert_eq!(e.malformed, 3, "{e:?}");
    let (_, cb) = h.counters();
    assert_eq!(cb.get("drop_key"), Some(1), "the wrong Q_Key; {}", h.diag());
    assert!(sb.poll_cm_event().is_none());
    let _l = listener(&sb);
    let c = resolved_client(&h, &sa, &sb, PORT);
    c.connect(&ConnParam::default()).unwrap();
    let (s, _, _) = expect(&h, &sb, &sa, CmEventType::ConnectRequest, STEP);
    s.create_qp(h.pb.create_qp(&h.cb)).unwrap();
    s.accept(&ConnParam::default()).unwrap();
    expect(&h, &sa, &sb, CmEventType::Established, STEP);
    expect(&h, &sb, &sa, CmEventType::Established, STEP);
}

/// The link loses the client's RTU (found by its MAD attribute ID, 0x0014 at byte 78 of the
/// frame, not by its place among the client's frames, which the NIC's arbitration between QP1
/// and the RC QP may change) and the CM keeps rdma_cm's timing (a REP
/// resend only after 4.8 s): the server stays in REP Sent, yet its QP is in RTS and takes the
/// client's first SEND. On that receive the server calls `rdma_notify(IBV_EVENT_COMM_EST)`
/// and gets ESTABLISHED at once, without resending anything.
#[test]
fn a_lost_rtu_is_covered_by_rdma_notify_on_the_first_receive() {
    let h = Hosts::new(SimConfig {
        faults: rnic_sim::FaultConfig { drop_first_matching: vec![(0, 78, vec![0x00, 0x14])], ..Default::default() },
        ..SimConfig::default()
    });
    let mut a_mem = pattern(3, 256);
    let mut b_mem = vec![0u8; 256];
    let a_mr = h.pa.register(&mut a_mem, AccessFlags::LOCAL_WRITE).unwrap();
    let b_mr = h.pb.register(&mut b_mem, AccessFlags::LOCAL_WRITE).unwrap();
    let sa = EventChannel::new(&h.a).unwrap();
    let sb = EventChannel::new(&h.b).unwrap();
    static_neighbors(&h, &sa, &sb);
    let _l = listener(&sb);
    let c = resolved_client(&h, &sa, &sb, PORT);
    c.connect(&ConnParam::default()).unwrap();
    let (s, _, _) = expect(&h, &sb, &sa, CmEventType::ConnectRequest, STEP);
    s.create_qp(h.pb.create_qp(&h.cb).set_max_recv_wr(4)).unwrap();
    s.qp().unwrap().post_recv_one(RecvWr::new(5, b_mr.sge(0..256).unwrap())).unwrap();
    assert!(s.notify(rnic::AsyncEventType::QpReqErr).is_err(), "only COMM_EST");
    s.accept(&ConnParam::default()).unwrap();
    expect(&h, &sa, &sb, CmEventType::Established, STEP);
    for _ in 0..200 {
        sa.process().unwrap();
        sb.process().unwrap();
        h.settle(100);
    }
    assert!(sb.poll_cm_event().is_none(), "the RTU was lost: no ESTABLISHED on the server");
    assert_eq!(s.cm_state(), Some(rnic::cm::CmState::RepSent));
    c.qp().unwrap().post_send_one(SendWr::send(1, a_mr.sge(0..256).unwrap()).signaled(true)).unwrap();
    let wc = h.wait(&h.cb, 1, STEP);
    assert_eq!((wc[0].wr_id, wc[0].status, wc[0].byte_len), (5, WcStatus::Success, 256));
    s.notify(rnic::AsyncEventType::CommEst).unwrap();
    let (id, _, _) = expect(&h, &sb, &sa, CmEventType::Established, STEP);
    assert_eq!(id, s);
    assert_eq!(s.cm_state(), Some(rnic::cm::CmState::Established));
    assert_eq!(sb.stats().unwrap().0.retransmitted, 0, "nothing resent");
    s.notify(rnic::AsyncEventType::CommEst).unwrap();
    sb.process().unwrap();
    assert!(sb.poll_cm_event().is_none(), "a second COMM_EST changes nothing");
}

/// Many connections, one after another, on the same two CM agents: each resolves, connects,
/// is accepted, established on both sides, disconnected on both sides and destroyed. QP1's
/// receive ring goes round several times (16 buffers, 2 or 3 MADs per connection per side).
#[test]
fn forty_connections_in_a_row() {
    let h = Hosts::new(SimConfig::default());
    let sa = EventChannel::new(&h.a).unwrap();
    let sb = EventChannel::new(&h.b).unwrap();
    let l = listener(&sb);
    for i in 0..40 {
        let c = resolved_client(&h, &sa, &sb, PORT);
        c.connect(&ConnParam::default()).unwrap();
        let (s, _, _) = expect(&h, &sb, &sa, CmEventType::ConnectRequest, STEP);
        s.create_qp(h.pb.create_qp(&h.cb).set_max_recv_wr(8)).unwrap();
        s.accept(&ConnParam::default()).unwrap();
        let (got, _, _) = expect(&h, &sa, &sb, CmEventType::Established, STEP);
        assert_eq!(got, c, "connection {i}");
        expect(&h, &sb, &sa, CmEventType::Established, STEP);
        c.disconnect().unwrap();
        expect(&h, &sb, &sa, CmEventType::Disconnected, STEP);
        expect(&h, &sa, &sb, CmEventType::Disconnected, STEP);
        c.destroy();
        s.destroy();
    }
    let ((_, qa), (_, qb)) = (sa.stats().unwrap(), sb.stats().unwrap());
    assert_eq!((qa.mads_sent, qa.mads_received), (120, 80), "REQ RTU DREQ out, REP DREP in, per connection");
    assert_eq!((qb.mads_sent, qb.mads_received), (80, 120));
    drop(l);
}

/// librdmacm's `<rdma/rdma_verbs.h>` helpers on a connected id: `rdma_post_recv`,
/// `rdma_post_send`, `rdma_post_write`, `rdma_post_read` (the id's QP, one SGE each), checked by
/// their completions and the bytes that moved; `id->pd`.
#[test]
fn rdma_verbs_helpers_post_on_the_ids_qp() {
    // The buffers outlive the ids, whose work requests borrow them.
    let mut a_buf = pattern(7, 4096);
    let mut b_buf = vec![0u8; 4096];
    let mut r_buf = pattern(9, 1024);
    let h = Hosts::new(SimConfig::default());
    let a_mr = h.pa.register(&mut a_buf, AccessFlags::LOCAL_WRITE).unwrap();
    let b_mr = h.pb.register(&mut b_buf, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE).unwrap();
    let r_mr = h.pb.register(&mut r_buf, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_READ).unwrap();
    let sa = EventChannel::new(&h.a).unwrap();
    let sb = EventChannel::new(&h.b).unwrap();
    let _l = listener(&sb);
    let c = resolved_client(&h, &sa, &sb, PORT);
    c.connect(&ConnParam::default()).unwrap();
    let (s, _, _) = expect(&h, &sb, &sa, CmEventType::ConnectRequest, STEP);
    s.create_qp(h.pb.create_qp(&h.cb).set_max_recv_wr(8)).unwrap();
    s.accept(&ConnParam::default()).unwrap();
    expect(&h, &sa, &sb, CmEventType::Established, STEP);
    expect(&h, &sb, &sa, CmEventType::Established, STEP);
    assert!(s.pd().is_some_and(|p| p.pdn() == h.pb.pdn()), "id->pd is its QP's");
    s.post_recv(11, b_mr.sge(0..512).unwrap()).unwrap();
    c.post_send(12, a_mr.sge(0..300).unwrap(), rnic::SendFlags::SIGNALED).unwrap();
    let to_b = rnic::RemoteAddr { addr: b_mr.addr() + 1024, rkey: b_mr.rkey() };
    c.post_write(13, a_mr.sge(1000..3000).unwrap(), to_b, rnic::SendFlags::SIGNALED).unwrap();
    // READ the server's readable buffer into the client's, past the bytes it sent.
    let from_r = rnic::RemoteAddr { addr: r_mr.addr() + 100, rkey: r_mr.rkey() };
    c.post_read(14, a_mr.sge(3000..3500).unwrap(), from_r, rnic::SendFlags::SIGNALED).unwrap();
    let mut wa = h.wait(&h.ca, 3, 500_000);
    wa.sort_by_key(|w| w.wr_id);
    let got: Vec<_> = wa.iter().map(|w| (w.wr_id, w.status, w.opcode)).collect();
    assert_eq!(
        got,
        vec![
            (12, WcStatus::Success, WcOpcode::Send),
            (13, WcStatus::Success, WcOpcode::RdmaWrite),
            (14, WcStatus::Success, WcOpcode::RdmaRead)
        ]
    );
    let wb = h.wait(&h.cb, 1, 500_000);
    assert_eq!((wb[0].wr_id, wb[0].status, wb[0].byte_len), (11, WcStatus::Success, 300));
    let mut b_now = vec![0u8; 4096];
    b_mr.read_at(0, &mut b_now).unwrap();
    let want = pattern(7, 4096);
    assert_eq!(&b_now[..300], &want[..300], "the SEND");
    assert_eq!(&b_now[1024..3024], &want[1000..3000], "the WRITE");
    let mut a_now = vec![0u8; 4096];
    a_mr.read_at(0, &mut a_now).unwrap();
    assert_eq!(&a_now[3000..3500], &pattern(9, 1024)[100..600], "the READ");
    // Without a QP the helpers refuse.
    let bare = sa.create_id();
    assert!(bare.pd().is_none() && bare.post_recv(1, a_mr.sge(0..8).unwrap()).is_err());
}

/// ARP on the raw Ethernet path (RFC 826, `rdma_resolve_addr(3)`): B's port has a MAC the
/// simulator's rule does not give (02:11:22:33:44:55), and nobody has a static entry. A's
/// resolution sends an ARP request, B's agent answers it and learns A from it, A learns B's
/// MAC from the reply and reports ADDR_RESOLVED with it; the connection then comes up with
/// that MAC on A's frames (tshark reads the REQ's destination and both ARP packets), and
/// the capture is clean to both oracles.
#[test]
fn address_resolution_by_arp_finds_a_mac_the_sim_rule_would_not() {
    let h = Hosts::new(SimConfig::default());
    let pcap = std::env::temp_dir().join(format!("rnic-e2e-cm-arp-{}.pcap", std::process::id()));
    h.world.borrow_mut().capture_pcap(&pcap).unwrap();
    let b_port =
        rnic::PortAddr { mac: rnic::MacAddr([0x02, 0x11, 0x22, 0x33, 0x44, 0x55]), ..h.b.port_addr().unwrap() };
    h.b.set_port_addr(b_port).unwrap();
    let sa = EventChannel::new(&h.a).unwrap();
    let sb = EventChannel::new(&h.b).unwrap();
    let _l = listener(&sb);
    let c = resolved_client(&h, &sa, &sb, PORT);
    assert_eq!(c.path().1, Some(b_port.mac), "the MAC ARP found");
    let (a, b) = (sa.arp_stats().unwrap(), sb.arp_stats().unwrap());
    assert!(a.requests_sent >= 1 && a.received >= 1 && a.timeouts == 0, "A: {a:?}");
    assert!(b.replies_sent >= 1 && b.received >= 1, "B: {b:?}");
    c.connect(&ConnParam::default()).unwrap();
    let (s, _, _) = expect(&h, &sb, &sa, CmEventType::ConnectRequest, STEP);
    assert_eq!(s.path().1, h.a.port_addr().map(|p| p.mac), "B learned A's MAC from its request");
    s.create_qp(h.pb.create_qp(&h.cb)).unwrap();
    s.accept(&ConnParam::default()).unwrap();
    expect(&h, &sa, &sb, CmEventType::Established, STEP);
    expect(&h, &sb, &sa, CmEventType::Established, STEP);
    h.world.borrow_mut().finish().unwrap();
    let fields = tshark_fields(&pcap, &["eth.dst", "arp.opcode", "arp.dst.proto_ipv4", "infiniband.mad.attributeid"]);
    let arp: Vec<_> = fields.iter().filter(|f| !f[1].is_empty()).collect();
    assert!(arp.len() >= 2, "an ARP request and a reply on the wire: {fields:?}");
    assert_eq!((arp[0][0].as_str(), arp[0][1].as_str()), ("ff:ff:ff:ff:ff:ff", "1"), "a broadcast request");
    assert_eq!(arp[0][2], b_port.ip.to_string());
    assert!(arp.iter().any(|f| f[1] == "2" && f[0] == h.a.port_addr().unwrap().mac.to_string()), "B's reply to A");
    let req = fields.iter().find(|f| f[3] == "0x0010").expect("a REQ on the wire");
    assert_eq!(req[0], b_port.mac.to_string(), "the REQ goes to the MAC ARP found");
    let v = oracle::check_capture(&pcap).unwrap();
    assert!(v.all_clean(fields.len()), "{}", v.summary());
    let _ = std::fs::remove_file(&pcap);
}

/// An address no host answers for: A sends ARP requests until the timeout, then, on a
/// simulated NIC, falls back on the simulator's MAC rule (ADDR_RESOLVED with
/// 02:00:00:00:00:77) and counts the timeout.
#[test]
fn an_unanswered_arp_falls_back_on_the_sim_rule_after_the_timeout() {
    let h = Hosts::new(SimConfig::default());
    let sa = EventChannel::new(&h.a).unwrap();
    let sb = EventChannel::new(&h.b).unwrap();
    let c = sa.create_id();
    let ip = Ipv4Addr::new(192, 0, 2, 0x77);
    let t0 = std::time::Instant::now();
    c.resolve_addr_timeout(None, SocketAddrV4::new(ip, PORT), std::time::Duration::from_millis(500)).unwrap();
    expect(&h, &sa, &sb, CmEventType::AddrResolved, u64::MAX / 2);
    assert!(t0.elapsed() >= std::time::Duration::from_millis(500), "only after the timeout");
    assert_eq!(c.path().1, Some(rnic::MacAddr([2, 0, 0, 0, 0, 0x77])));
    let a = sa.arp_stats().unwrap();
    assert!(a.requests_sent >= 2 && a.timeouts == 1, "requests every 200 ms until the timeout: {a:?}");
    assert_eq!(sb.arp_stats().unwrap().replies_sent, 0, "B does not answer for another address");
}

/// The passive side resolves its client before it answers: A knows B statically (so it sends
/// no ARP request B could learn from) and has a MAC the simulator's rule does not give. B's
/// agent holds the REQ, asks ARP for A, and reports CONNECT_REQUEST with the MAC A answered;
/// the REP reaches A and both sides are ESTABLISHED.
#[test]
fn a_server_asks_arp_for_a_client_it_has_not_heard_from() {
    let h = Hosts::new(SimConfig::default());
    let a_port =
        rnic::PortAddr { mac: rnic::MacAddr([0x02, 0xAA, 0xBB, 0xCC, 0xDD, 0xEE]), ..h.a.port_addr().unwrap() };
    h.a.set_port_addr(a_port).unwrap();
    let sa = EventChannel::new(&h.a).unwrap();
    let sb = EventChannel::new(&h.b).unwrap();
    let b = h.b.port_addr().unwrap();
    sa.add_neighbor(b.ip, b.mac).unwrap();
    let _l = listener(&sb);
    let c = resolved_client(&h, &sa, &sb, PORT);
    assert_eq!(sa.arp_stats().unwrap().requests_sent, 0, "A resolved B statically");
    c.connect(&ConnParam::default()).unwrap();
    let (s, _, _) = expect(&h, &sb, &sa, CmEventType::ConnectRequest, STEP);
    assert_eq!(s.path().1, Some(a_port.mac), "B asked ARP for A before reporting the REQ");
    let (a, bs) = (sa.arp_stats().unwrap(), sb.arp_stats().unwrap());
    assert!(bs.requests_sent >= 1 && a.replies_sent >= 1, "A: {a:?} B: {bs:?}");
    s.create_qp(h.pb.create_qp(&h.cb)).unwrap();
    s.accept(&ConnParam::default()).unwrap();
    expect(&h, &sa, &sb, CmEventType::Established, STEP);
    expect(&h, &sb, &sa, CmEventType::Established, STEP);
}
