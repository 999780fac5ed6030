//! Issue 12, item 4 exactly: "a requester that believes what it is told". A real rnic
//! requester (NIC 0) and responder (NIC 1) with no wire between them (`common::carried`); the
//! test rewrites chosen responder frames on their way back and re-emits them with the
//! firmware-tests wire codec (ICRC recomputed), so the NIC parses the lie:
//!
//! - a READ RESPONSE out of its place in the sequence (a 3,079-byte READ at MTU 1024 whose
//!   MIDDLE becomes a FIRST; a one-packet READ whose ONLY becomes a LAST; FIRST→ONLY,
//!   LAST→MIDDLE, MIDDLE→LAST) with forged bytes: the READ completes `IBV_WC_BAD_RESP_ERR`
//!   (IBTA Vol 1 9.9.2, as rxe does), or the forged response is dropped and the READ resumed,
//!   never `IBV_WC_SUCCESS` with the forged bytes;
//! - an ATOMIC ACKNOWLEDGE relabeled as a READ RESPONSE ONLY and the reverse: refused;
//! - a READ RESPONSE LAST longer than what is left: nothing is written past the SGE;
//! - ghost ACKs — beyond the last PSN sent (while WRs wait for the window, and while a long
//!   message is still leaving), and with nothing outstanding — complete nothing that has not
//!   left the NIC.
//!
//! The seeded form of all this is `requester_fuzz.rs`.
mod common;

use common::carried::{psn_le, serial_max, Carried, Carrier, Dir, FnCarrier, Frame, PassThrough};
use common::pattern;
use rnic::{AccessFlags, ConnectOptions, MemoryRegion, Mtu, QueuePair, RecvWr, RemoteBuffer, SendWr, WcStatus};
use rnic_sim::SimConfig;

/// Every local byte no SGE covers.
const GUARD: u8 = 0xEE;
const PSN_MASK: u32 = 0xFF_FFFF;
/// The responder word's initial value.
const WORD_INIT: u64 = 0x0123_4567_89AB_CDEF;

/// Statuses a requester may report for a WR under a lying responder.
fn allowed_error(s: WcStatus) -> bool {
    matches!(
        s,
        WcStatus::WrFlushErr
            | WcStatus::BadRespErr
            | WcStatus::RetryExcErr
            | WcStatus::RnrRetryExcErr
            | WcStatus::RemInvReqErr
            | WcStatus::RemAccessErr
            | WcStatus::RemOpErr
            | WcStatus::LocLenErr
            | WcStatus::GeneralErr
    )
}

/// A connected QP pair for the named item-4 tests (MTU `mtu`, ACK timeout exponent `timeout`,
/// retry_cnt 3) with `bmem` advertised.
fn named_pair<'a>(
    h: &Carried,
    mtu: Mtu,
    timeout: u8,
    bmem: &MemoryRegion<'_>,
) -> (QueuePair<'a>, QueuePair<'a>, RemoteBuffer) {
    let mut qa = h.pa.create_qp(&h.ca).set_max_send_wr(128).set_sq_sig_all(true).build().unwrap();
    let mut qb = h.pb.create_qp(&h.cb).set_max_send_wr(32).set_max_recv_wr(16).build().unwrap();
    let o = ConnectOptions {
        path_mtu: mtu,
        access: AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_READ | AccessFlags::REMOTE_ATOMIC,
        timeout,
        retry_cnt: 3,
        ..ConnectOptions::default()
    };
    let (ea, eb) = (qa.endpoint().unwrap(), qb.endpoint().unwrap().with_buffer(bmem));
    qa.connect_with(&eb, &o).unwrap();
    qb.connect_with(&ea, &o).unwrap();
    (qa, qb, eb.buffer.unwrap())
}

/// Item 4: one READ whose response number `which` (from 0) is relabeled `to` with forged
/// bytes (0xF0). The READ must not complete successfully with the forged bytes: it completes
/// `IBV_WC_BAD_RESP_ERR`, or the forged response is dropped and the READ resumed (a second
/// READ REQUEST), and then it completes with the true bytes; nothing outside its SGE changes.
fn forged_read_response(len: usize, mtu: Mtu, which: usize, to: u8) {
    let h = Carried::new(SimConfig::default());
    let mut remote = pattern(len as u64, len + 64);
    let want = remote[..len].to_vec();
    let mut loc = vec![GUARD; len + 128];
    let what =
        format!("{len}-byte READ at MTU {}: response {which} relabeled {to:#04x} with forged bytes", mtu.bytes());
    {
        let rmr = h.pb.register(&mut remote, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_READ).unwrap();
        let lmr = h.pa.register(&mut loc, AccessFlags::LOCAL_WRITE).unwrap();
        let (mut qa, _qb, rb) = named_pair(&h, mtu, 4, &rmr);
        let qpn = qa.qp_num();
        let (mut n, mut requests) = (0usize, 0u32);
        let mut c = FnCarrier(|mut f: Frame| {
            if f.dest_qp() == qpn && (0x0D..=0x10).contains(&f.opcode()) {
                n += 1;
                if n - 1 == which {
                    f.set_opcode(to);
                    f.body.iter_mut().for_each(|b| *b = 0xF0);
                }
            }
            vec![f]
        });
        let c0 = h.a.counters().unwrap();
        qa.post_send_one(SendWr::rdma_read(1, lmr.sge(64..64 + len).unwrap(), rb.at(0))).unwrap();
        let w = h.wait(&h.ca, 1, 400_000, &mut c, &what)[0];
        let c1 = h.a.counters().unwrap();
        requests += common::delta(&c1, &c0, rnic_contract::regs::counter::TX_REQUESTS);
        let l = lmr.to_vec();
        match w.status {
            WcStatus::BadRespErr => {}
            WcStatus::Success => {
                if let Some(d) = common::first_difference(&l[64..64 + len], &want) {
                    panic!("{what}: completed SUCCESS with wrong bytes ({d})\n{}", h.diag());
                }
                assert!(requests >= 2, "{what}: completed SUCCESS without resuming the READ (1 READ REQUEST): the forged response was accepted\n{}", h.diag());
            }
            other => {
                panic!("{what}: completed {other:?}, expected IBV_WC_BAD_RESP_ERR or a resumed READ\n{}", h.diag())
            }
        }
        assert!(l[..64].iter().chain(&l[64 + len..]).all(|&b| b == GUARD), "{what}: a byte outside the SGE changed");
    }
}

/// Item 4: a 3,079-byte READ at MTU 1024 (FIRST, MIDDLE, MIDDLE, LAST) whose first MIDDLE is
/// replaced by a FIRST.
#[test]
fn a_read_response_middle_relabeled_first_is_refused() {
    forged_read_response(3079, Mtu::Mtu1024, 1, 0x0D);
}

/// Item 4: a one-packet READ whose ONLY becomes a LAST.
#[test]
fn a_one_packet_read_response_only_relabeled_last_is_refused() {
    forged_read_response(100, Mtu::Mtu1024, 0, 0x0F);
}

/// More sequence lies of the same kind: a FIRST that becomes an ONLY, a LAST that becomes a
/// MIDDLE, a MIDDLE that becomes a LAST (3 responses at MTU 256).
#[test]
fn read_responses_out_of_their_place_in_the_sequence_are_refused() {
    forged_read_response(600, Mtu::Mtu256, 0, 0x10);
    forged_read_response(600, Mtu::Mtu256, 2, 0x0E);
    forged_read_response(700, Mtu::Mtu256, 1, 0x0F);
}

/// Item 4: an ACK whose PSN lies beyond the last PSN sent completes nothing. 24 WRITEs and a
/// SEND are posted; while every frame of the responder is held back, the requester sends what
/// its window allows and waits; a ghost ACK for the SEND's PSN (never sent) arrives. No WR may
/// complete before its last packet left the NIC; then the held frames are released and every
/// WR completes successfully.
#[test]
fn a_ghost_ack_beyond_the_last_psn_sent_completes_nothing() {
    let h = Carried::new(SimConfig::default());
    let mut src = pattern(3, 4096);
    let mut bmem = vec![0u8; 64 * 1024];
    let mut brecv = vec![0u8; 4096];
    {
        let smr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let bmr =
            h.pb.register(&mut bmem, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_READ)
                .unwrap();
        let rmr = h.pb.register(&mut brecv, AccessFlags::LOCAL_WRITE).unwrap();
        // A long ACK timeout (67 ms): nothing is resent while the responder's frames are held.
        let (mut qa, mut qb, rb) = named_pair(&h, Mtu::Mtu1024, 14, &bmr);
        qb.post_recv_one(RecvWr::new(9, rmr.sge(0..4096).unwrap())).unwrap();
        // More WRs than the send window: some are not sent while no ACK comes.
        let n = (1u64 << rnic_contract::LOG_MAX_INFLIGHT_WQES) + 9;
        let wrs: Vec<SendWr<'_>> = (0..n)
            .map(|i| {
                if i + 1 < n {
                    SendWr::rdma_write(i + 1, smr.sge(0..64).unwrap(), rb.at(i * 64))
                } else {
                    SendWr::send(i + 1, smr.sge(0..100).unwrap())
                }
            })
            .collect();
        let first = qa.local_psn();
        let (qpn_a, qpn_b) = (qa.qp_num(), qb.qp_num());
        qa.post_send(&wrs).unwrap();
        // Hold the responder's frames; watch the requester's PSNs.
        struct Hold {
            qpn_a: u32,
            qpn_b: u32,
            held: Vec<Vec<u8>>,
            holding: bool,
            max_sent: Option<u32>,
        }
        impl Carrier for Hold {
            fn carry(&mut self, dir: Dir, frame: Vec<u8>) -> Vec<Vec<u8>> {
                let f = Frame::parse(&frame);
                if dir == 0 {
                    if let Some(f) = f.filter(|f| f.dest_qp() == self.qpn_b) {
                        self.max_sent = serial_max(self.max_sent, f.psn());
                    }
                    return vec![frame];
                }
                if self.holding && f.is_some_and(|f| f.dest_qp() == self.qpn_a) {
                    self.held.push(frame);
                    return vec![];
                }
                vec![frame]
            }
            fn release(&mut self, _now: u64) -> Vec<(Dir, Vec<u8>)> {
                if self.holding {
                    vec![]
                } else {
                    self.held.drain(..).map(|d| (1, d)).collect()
                }
            }
        }
        let mut c = Hold { qpn_a, qpn_b, held: Vec::new(), holding: true, max_sent: None };
        h.run(20_000, &mut c);
        let sent = c.max_sent.expect("the requester sent something");
        let last = (first + n as u32 - 1) & PSN_MASK;
        assert!(
            !psn_le(last, sent),
            "the requester sent every WR ({sent:#x}) although no ACK came: the test needs WRs it has not sent"
        );
        // The ghost: a copy of a held ACK, for the SEND's PSN (never sent).
        let mut ghost = Frame::parse(c.held.first().expect("a held ACK")).unwrap();
        ghost.set_opcode(0x11);
        ghost.body.clear();
        ghost.hdr.bth.psn = last;
        ghost.aeth = Some((0x1F, 25));
        h.world.borrow_mut().inject_rx_frame(0, ghost.emit(), false).unwrap();
        let early = h.poll(&h.ca, n as usize, 20_000, &mut c);
        let sent_now = c.max_sent.unwrap();
        for w in &early {
            let wr_last = (first + w.wr_id as u32 - 1) & PSN_MASK;
            assert!(
                psn_le(wr_last, sent_now),
                "WR {} (PSN {wr_last:#x}) completed {:?} after a ghost ACK for PSN {last:#x}, but the requester had sent only up to {sent_now:#x}\n{}",
                w.wr_id,
                w.status,
                h.diag()
            );
        }
        c.holding = false;
        let mut all = early.clone();
        all.extend(h.wait(&h.ca, n as usize - early.len(), 400_000, &mut c, "after the held frames were released"));
        assert_eq!(
            all.iter().map(|w| (w.wr_id, w.status)).collect::<Vec<_>>(),
            (1..=n).map(|i| (i, WcStatus::Success)).collect::<Vec<_>>(),
            "{}",
            h.diag()
        );
        let r = h.wait(&h.cb, 1, 100_000, &mut PassThrough, "the SEND's receive");
        assert_eq!((r[0].wr_id, r[0].status, r[0].byte_len), (9, WcStatus::Success, 100));
        drop((qa, qb));
    }
}

/// Ghost ACKs while nothing is outstanding, and far ahead of everything sent, complete
/// nothing, and the QP then works normally.
#[test]
fn ghost_acks_with_nothing_outstanding_complete_nothing() {
    let h = Carried::new(SimConfig::default());
    let mut src = pattern(4, 1024);
    let mut bmem = vec![0u8; 4096];
    {
        let smr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let bmr = h.pb.register(&mut bmem, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE).unwrap();
        let (mut qa, _qb, rb) = named_pair(&h, Mtu::Mtu1024, 4, &bmr);
        qa.post_send_one(SendWr::rdma_write(1, smr.sge(0..64).unwrap(), rb.at(0))).unwrap();
        let mut template = None;
        let mut c = FnCarrier(|f: Frame| {
            if f.opcode() == 0x11 {
                template.get_or_insert(f.clone());
            }
            vec![f]
        });
        assert_eq!(h.wait(&h.ca, 1, 100_000, &mut c, "the first WRITE")[0].status, WcStatus::Success);
        let t = template.expect("an ACK");
        for (psn, syn) in [
            (t.psn() + 1, 0x1F),
            (t.psn() + 5, 0x00),
            (t.psn() + 0x40_0000, 0x1F),
            (t.psn() + 2, 0x60),
            (t.psn() + 3, 0x62),
        ] {
            let mut g = t.clone();
            g.hdr.bth.psn = psn & PSN_MASK;
            g.aeth = Some((syn, 99));
            h.world.borrow_mut().inject_rx_frame(0, g.emit(), false).unwrap();
        }
        let w = h.poll(&h.ca, 4, 20_000, &mut PassThrough);
        assert!(w.is_empty(), "ghost ACKs completed {w:?}\n{}", h.diag());
        qa.post_send_one(SendWr::rdma_write(2, smr.sge(0..64).unwrap(), rb.at(64))).unwrap();
        let w = h.wait(&h.ca, 1, 100_000, &mut PassThrough, "a WRITE after the ghosts");
        assert_eq!((w[0].wr_id, w[0].status), (2, WcStatus::Success), "{}", h.diag());
    }
}

/// An ATOMIC ACKNOWLEDGE relabeled as a READ RESPONSE ONLY (its 8 bytes as payload, forged),
/// and a READ RESPONSE ONLY relabeled as an ATOMIC ACKNOWLEDGE, are refused: the WR never
/// completes successfully with the forged value.
#[test]
fn responses_of_the_wrong_kind_are_refused() {
    for (to, read) in [(0x10u8, false), (0x12u8, true)] {
        let h = Carried::new(SimConfig::default());
        let mut bmem = pattern(8, 256);
        bmem[..8].copy_from_slice(&WORD_INIT.to_le_bytes());
        let mut loc = vec![GUARD; 256];
        let what = if read {
            "a READ answered by an ATOMIC ACKNOWLEDGE"
        } else {
            "an atomic answered by a READ RESPONSE ONLY"
        };
        {
            let all = AccessFlags::LOCAL_WRITE
                | AccessFlags::REMOTE_WRITE
                | AccessFlags::REMOTE_READ
                | AccessFlags::REMOTE_ATOMIC;
            let bmr = h.pb.register(&mut bmem, all).unwrap();
            let lmr = h.pa.register(&mut loc, AccessFlags::LOCAL_WRITE).unwrap();
            let (mut qa, _qb, rb) = named_pair(&h, Mtu::Mtu1024, 4, &bmr);
            let qpn = qa.qp_num();
            let mut done = false;
            let mut c = FnCarrier(|mut f: Frame| {
                if !done && f.dest_qp() == qpn && matches!(f.opcode(), 0x10 | 0x12) {
                    done = true;
                    f.body.resize(8, 0);
                    f.set_opcode(to);
                    f.body.iter_mut().for_each(|b| *b = 0xF0);
                }
                vec![f]
            });
            let wr = if read {
                SendWr::rdma_read(1, lmr.sge(64..72).unwrap(), rb.at(64))
            } else {
                SendWr::atomic_fetch_and_add(1, lmr.sge(64..72).unwrap(), rb.at(0), 1)
            };
            qa.post_send_one(wr).unwrap();
            let w = h.wait(&h.ca, 1, 400_000, &mut c, what)[0];
            let l = lmr.to_vec();
            if w.status == WcStatus::Success {
                let want = if read { bmr.to_vec()[64..72].to_vec() } else { WORD_INIT.to_le_bytes().to_vec() };
                assert_eq!(l[64..72], want[..], "{what}: completed SUCCESS with the forged bytes\n{}", h.diag());
            } else {
                assert!(allowed_error(w.status), "{what}: {w:?}");
            }
            assert!(l[..64].iter().chain(&l[72..]).all(|&b| b == GUARD), "{what}: a byte outside the SGE changed");
        }
    }
}

/// A READ RESPONSE LAST longer than what is left of the READ (64 bytes added) never writes
/// past the READ's SGE, and the READ never completes successfully with those bytes.
#[test]
fn a_read_response_longer_than_the_read_writes_nothing_past_the_sge() {
    let h = Carried::new(SimConfig::default());
    let mut remote = pattern(11, 4096);
    let mut loc = vec![GUARD; 4096];
    let want = remote[..1500].to_vec();
    {
        let rmr = h.pb.register(&mut remote, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_READ).unwrap();
        let lmr = h.pa.register(&mut loc, AccessFlags::LOCAL_WRITE).unwrap();
        let (mut qa, _qb, rb) = named_pair(&h, Mtu::Mtu1024, 4, &rmr);
        let qpn = qa.qp_num();
        let mut done = false;
        let mut c = FnCarrier(|mut f: Frame| {
            if !done && f.dest_qp() == qpn && f.opcode() == 0x0F {
                done = true;
                f.body.extend([0xF0; 64]);
            }
            vec![f]
        });
        qa.post_send_one(SendWr::rdma_read(1, lmr.sge(100..1600).unwrap(), rb.at(0))).unwrap();
        let w = h.wait(&h.ca, 1, 400_000, &mut c, "a READ whose LAST is 64 bytes too long")[0];
        let l = lmr.to_vec();
        assert!(
            l[..100].iter().chain(&l[1600..]).all(|&b| b == GUARD),
            "a byte outside the READ's SGE changed: first at {:?}",
            l[1600..].iter().position(|&b| b != GUARD).map(|p| p + 1600)
        );
        if w.status == WcStatus::Success {
            assert_eq!(l[100..1600], want[..], "completed SUCCESS with wrong bytes");
        } else {
            assert!(allowed_error(w.status), "{w:?}");
        }
    }
}

/// Item 4, a message still being sent: a 256 KiB WRITE at MTU 256 (1,024 packets) and a SEND
/// behind it; while the WRITE's first packets are leaving, a ghost ACK for the SEND's PSN
/// arrives. Neither may complete before its last packet has left the NIC; both complete once
/// the real ACKs come.
#[test]
fn a_ghost_ack_for_a_message_still_being_sent_completes_nothing() {
    const LEN: usize = 256 * 1024;
    let h = Carried::new(SimConfig::default());
    let mut src = pattern(5, LEN);
    let mut bmem = vec![0u8; LEN];
    let mut brecv = vec![0u8; 256];
    {
        let smr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let bmr = h.pb.register(&mut bmem, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE).unwrap();
        let rmr = h.pb.register(&mut brecv, AccessFlags::LOCAL_WRITE).unwrap();
        let (mut qa, mut qb, rb) = named_pair(&h, Mtu::Mtu256, 14, &bmr);
        qb.post_recv_one(RecvWr::new(7, rmr.sge(0..256).unwrap())).unwrap();
        // A first WRITE, for a template of the responder's ACK.
        let mut template = None;
        let mut c = FnCarrier(|f: Frame| {
            if f.opcode() == 0x11 {
                template.get_or_insert(f.clone());
            }
            vec![f]
        });
        qa.post_send_one(SendWr::rdma_write(1, smr.sge(0..64).unwrap(), rb.at(0))).unwrap();
        assert_eq!(h.wait(&h.ca, 1, 100_000, &mut c, "the first WRITE")[0].status, WcStatus::Success);
        let mut ghost = template.expect("an ACK");
        let first = (ghost.psn() + 1) & PSN_MASK;
        let send_psn = (first + (LEN / 256) as u32) & PSN_MASK;
        ghost.hdr.bth.psn = send_psn;
        ghost.aeth = Some((0x1F, 3));
        let ghost = ghost.emit();
        struct Watch {
            qpn_b: u32,
            max_sent: Option<u32>,
            ghost: Option<Vec<u8>>,
        }
        impl Carrier for Watch {
            fn carry(&mut self, dir: Dir, frame: Vec<u8>) -> Vec<Vec<u8>> {
                if dir == 0 {
                    if let Some(f) = Frame::parse(&frame).filter(|f| f.dest_qp() == self.qpn_b) {
                        self.max_sent = serial_max(self.max_sent, f.psn());
                    }
                }
                vec![frame]
            }
            fn release(&mut self, _now: u64) -> Vec<(Dir, Vec<u8>)> {
                match self.max_sent {
                    Some(_) => self.ghost.take().map(|g| vec![(1, g)]).unwrap_or_default(),
                    None => vec![],
                }
            }
        }
        let mut c = Watch { qpn_b: qb.qp_num(), max_sent: None, ghost: Some(ghost) };
        qa.post_send(&[
            SendWr::rdma_write(2, smr.sge(0..LEN).unwrap(), rb.at(0)),
            SendWr::send(3, smr.sge(0..100).unwrap()),
        ])
        .unwrap();
        let mut got = Vec::new();
        while got.len() < 2 {
            let w = h.poll(&h.ca, 2 - got.len(), 1_000, &mut c);
            for w in w {
                let last = if w.wr_id == 2 { (send_psn + PSN_MASK) & PSN_MASK } else { send_psn };
                assert!(
                    c.max_sent.is_some_and(|m| psn_le(last, m)),
                    "WR {} completed {:?} after a ghost ACK for PSN {send_psn:#x}, but the requester had sent only up to {:x?}\n{}",
                    w.wr_id,
                    w.status,
                    c.max_sent,
                    h.diag()
                );
                got.push(w);
            }
            assert!(h.now() < 2_000_000, "no completion: {got:?}\n{}", h.diag());
        }
        assert_eq!(
            got.iter().map(|w| (w.wr_id, w.status)).collect::<Vec<_>>(),
            vec![(2, WcStatus::Success), (3, WcStatus::Success)]
        );
        assert_eq!(h.wait(&h.cb, 1, 100_000, &mut PassThrough, "the SEND's receive")[0].status, WcStatus::Success);
        drop((qa, qb));
    }
    assert!(bmem == src, "the WRITE's bytes");
}
