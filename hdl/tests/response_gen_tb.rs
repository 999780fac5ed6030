//! `ResponseGen` in Verilator: each response packet the READ responder's sequencer hands it
//! becomes the transmit job IBTA Vol 1 prescribes, and it writes the shared FIFOs only in the
//! cycles it claimed.
//!
//! - `every_packet_becomes_its_transmit_job`: 600 random packets (READ RESPONSE FIRST /
//!   MIDDLE / LAST / ONLY, ATOMIC ACKNOWLEDGE, ACKNOWLEDGE with ACK and NAK syndromes), offered
//!   with random gaps while the scheduler's lock and the FIFOs' almost-full flags change at
//!   random. Every write carries the next packet's job (opcode 0x0D / 0x0E / 0x0F / 0x10 /
//!   0x12 / 0x11, the AETH with the syndrome and the MSN in wire order on FIRST, LAST, ONLY and
//!   the acknowledgements, the AtomicAckETH's original value, PSN, peer addresses, payload
//!   length and offset, `rsp_last` on a fresh response's last packet), a payload read and a
//!   piece exactly when it has payload, and the ACK / NAK counter pulses. And the sharing
//!   protocol holds every cycle: a write comes exactly one cycle after `hold`, `hold` only
//!   while the scheduler's lock is low and one cycle after the three FIFOs had room, two writes
//!   at least `RR_MIN_CYCLES` cycles apart.
//! - `a_free_stream_leaves_one_packet_per_min_gap`: with packets always offered and nothing
//!   in the way, the first write comes 2 cycles after the first offer and the next ones every
//!   `RR_MIN_CYCLES` cycles.
//! - `the_scheduler_s_lock_holds_it_back`: while `req_lock` is high nothing is claimed or
//!   written, however long; the cycle it falls, the claim comes, and the write after it.
mod harness;

use harness::{pack_fields, Dut, Rng};
use rnic_contract::Field;
use rnic_hdl::records::{ReadRespJob, TxJob};
use rnic_hdl::response_gen::{ResponseGen, RR_MIN_CYCLES};
use std::collections::VecDeque;

const IN_BITS: usize = 360;

/// One response packet as the sequencer hands it over.
#[derive(Clone, Debug)]
struct Pkt {
    qpn: u64,
    psn: u64,
    iova: u64,
    len: u64,
    first: bool,
    last: bool,
    atomic: bool,
    ack: bool,
    msn: u64,
    orig: u64,
    dest_qpn: u64,
    dest_mac: u64,
    dest_ip: u64,
    udp_sport: u64,
    pkey: u64,
    fresh: bool,
}

fn encode(p: &Pkt) -> Vec<u8> {
    let r = ReadRespJob::default();
    pack_fields(
        IN_BITS,
        &[
            (r.get_my_offset_qpn(), 6, p.qpn),
            (r.get_my_offset_psn(), 24, p.psn),
            (r.get_my_offset_iova(), 64, p.iova),
            (r.get_my_offset_len(), 32, p.len),
            (r.get_my_offset_path_mtu(), 3, 5),
            (r.get_my_offset_first(), 1, u64::from(p.first)),
            (r.get_my_offset_last(), 1, u64::from(p.last)),
            (r.get_my_offset_atomic(), 1, u64::from(p.atomic)),
            (r.get_my_offset_ack(), 1, u64::from(p.ack)),
            (r.get_my_offset_msn(), 24, p.msn),
            (r.get_my_offset_orig(), 64, p.orig),
            (r.get_my_offset_dest_qpn(), 24, p.dest_qpn),
            (r.get_my_offset_dest_mac(), 48, p.dest_mac),
            (r.get_my_offset_dest_ip(), 32, p.dest_ip),
            (r.get_my_offset_udp_sport(), 16, p.udp_sport),
            (r.get_my_offset_pkey(), 16, p.pkey),
            (r.get_my_offset_fresh(), 1, u64::from(p.fresh)),
        ],
    )
}

/// A field of a record read from a port (the contract's bit-field reader).
fn field(bytes: &[u8], off: usize, width: usize) -> u64 {
    Field::at_bit(off, width).get(bytes)
}

/// The transmit job's fields a response sets, by name, as read from the port (or expected).
#[derive(Debug, PartialEq)]
struct Job {
    opcode: u64,
    flags: [u64; 7],
    psn: u64,
    peer: (u64, u64, u64, u64, u64),
    plen: u64,
    pay_skip: u64,
    ext4: u64,
    at_swap: u64,
    rsp_qpn: u64,
    unused: [u64; 4],
}

fn decode(b: &[u8]) -> Job {
    let j = TxJob::default();
    Job {
        opcode: field(b, j.get_my_offset_opcode(), 8),
        // ackreq, has_reth, has_ext4, has_atomic_eth, has_atomic_ack, se, rsp_last
        flags: [
            field(b, j.get_my_offset_ackreq(), 1),
            field(b, j.get_my_offset_has_reth(), 1),
            field(b, j.get_my_offset_has_ext4(), 1),
            field(b, j.get_my_offset_has_atomic_eth(), 1),
            field(b, j.get_my_offset_has_atomic_ack(), 1),
            field(b, j.get_my_offset_se(), 1),
            field(b, j.get_my_offset_rsp_last(), 1),
        ],
        psn: field(b, j.get_my_offset_psn(), 24),
        peer: (
            field(b, j.get_my_offset_dest_qpn(), 24),
            field(b, j.get_my_offset_pkey(), 16),
            field(b, j.get_my_offset_udp_sport(), 16),
            field(b, j.get_my_offset_dest_ip(), 32),
            field(b, j.get_my_offset_dest_mac(), 48),
        ),
        plen: field(b, j.get_my_offset_plen(), 13),
        pay_skip: field(b, j.get_my_offset_pay_skip(), 6),
        ext4: field(b, j.get_my_offset_ext4(), 32),
        at_swap: field(b, j.get_my_offset_at_swap(), 64),
        rsp_qpn: field(b, j.get_my_offset_rsp_qpn(), 6),
        // has_deth, reth_len, at_cmp, reth_rkey: nothing of a response.
        unused: [
            field(b, j.get_my_offset_has_deth(), 1),
            field(b, j.get_my_offset_reth_len(), 32),
            field(b, j.get_my_offset_at_cmp(), 64),
            field(b, j.get_my_offset_reth_rkey(), 32),
        ],
    }
}

/// The AETH's syndrome a packet carries: ACK (0x1F) but on an ACKNOWLEDGE job, whose own is
/// in `orig` bits 7:0 (IBTA Vol 1 9.7.5.1).
fn syndrome(p: &Pkt) -> u64 {
    if p.ack {
        p.orig & 0xFF
    } else {
        0x1F
    }
}

/// The job IBTA Vol 1 prescribes for a packet: 9.7.4.1.4 (READ RESPONSE FIRST 0x0D, MIDDLE
/// 0x0E, LAST 0x0F, ONLY 0x10; AETH on all but MIDDLE), 9.5.3 (ATOMIC ACKNOWLEDGE 0x12: AETH
/// and AtomicAckETH), 9.7.5.1 (ACKNOWLEDGE 0x11: AETH only). The AETH goes on the wire as the
/// syndrome byte then the MSN big-endian; `ext4` holds it in wire order (byte 0 lowest).
fn expected(p: &Pkt) -> Job {
    let opcode = if p.atomic {
        0x12
    } else if p.ack {
        0x11
    } else {
        match (p.first, p.last) {
            (true, true) => 0x10,
            (true, false) => 0x0D,
            (false, true) => 0x0F,
            (false, false) => 0x0E,
        }
    };
    let aeth = p.ack || p.first || p.last;
    let m = p.msn;
    Job {
        opcode,
        flags: [0, 0, u64::from(aeth), 0, u64::from(p.atomic), 0, u64::from(p.last && p.fresh)],
        psn: p.psn,
        peer: (p.dest_qpn, p.pkey, p.udp_sport, p.dest_ip, p.dest_mac),
        plen: p.len,
        pay_skip: p.iova & 63,
        ext4: syndrome(p) | (m >> 16 & 0xFF) << 8 | (m >> 8 & 0xFF) << 16 | (m & 0xFF) << 24,
        at_swap: if p.atomic { p.orig } else { 0 },
        rsp_qpn: p.qpn,
        unused: [0; 4],
    }
}

fn random_pkt(rng: &mut Rng) -> Pkt {
    let kind = rng.range(0, 9);
    let (atomic, ack) = (kind == 8, kind == 9);
    let (first, last) = if atomic || ack { (true, true) } else { (rng.chance(1, 2), rng.chance(1, 2)) };
    let len = if atomic || ack || rng.chance(1, 10) { 0 } else { rng.range(1, 4096) };
    let mut orig = rng.next_u64();
    if ack && rng.chance(1, 2) {
        orig = (orig & !0xFF) | 0x1F;
    }
    Pkt {
        qpn: rng.range(0, 63),
        psn: rng.range(0, 0xFF_FFFF),
        iova: rng.next_u64(),
        len,
        first,
        last,
        atomic,
        ack,
        msn: rng.range(0, 0xFF_FFFF),
        orig,
        dest_qpn: rng.range(0, 0xFF_FFFF),
        dest_mac: rng.next_u64() >> 16,
        dest_ip: rng.next_u64() >> 32,
        udp_sport: rng.range(0, 0xFFFF),
        pkey: rng.range(0, 0xFFFF),
        fresh: rng.chance(1, 2),
    }
}

/// What the block did in one cycle.
struct Seen {
    taken: bool,
    hold: bool,
    write: Option<(Job, Option<(u64, u64, u64)>)>,
    ack: bool,
    nak: bool,
}

struct Tb {
    dut: Dut,
}

impl Tb {
    fn new() -> Tb {
        let mut dut = Dut::build::<ResponseGen>("response_gen").expect("build ResponseGen");
        dut.set_bit("in_empty", true);
        dut.reset(2);
        Tb { dut }
    }

    /// One cycle: offers `input`, with the scheduler's lock and the FIFOs' flags
    /// (`afull`: job, payload read, piece).
    fn cycle(&mut self, input: Option<&Pkt>, lock: bool, afull: [bool; 3]) -> Seen {
        let d = &mut self.dut;
        d.set_bit("in_empty", input.is_none());
        d.set_wide("in_job", &input.map(encode).unwrap_or_else(|| vec![0u8; IN_BITS.div_ceil(8)]));
        d.set_bit("req_lock", lock);
        d.set_bit("job_afull", afull[0]);
        d.set_bit("rj_afull", afull[1]);
        d.set_bit("pg_afull", afull[2]);
        d.eval();
        let write = d.get_bit("write").then(|| {
            let job = decode(&d.get_wide("job"));
            let pay = d.get_bit("rj_write").then(|| (d.get("rj_addr"), d.get("rj_len"), d.get("pg_data")));
            (job, pay)
        });
        let seen = Seen {
            taken: d.get_bit("in_read"),
            hold: d.get_bit("hold"),
            write,
            ack: d.get_bit("cnt_tx_ack"),
            nak: d.get_bit("cnt_tx_nak"),
        };
        d.tick();
        seen
    }
}

#[test]
fn every_packet_becomes_its_transmit_job() {
    let mut tb = Tb::new();
    let mut rng = Rng::from_env(0x5E6E_0001);
    let mut input: VecDeque<Pkt> = (0..600).map(|_| random_pkt(&mut rng)).collect();
    let total = input.len();
    let mut taken: VecDeque<Pkt> = VecDeque::new();
    let (mut out, mut acks, mut naks) = (0usize, 0usize, 0usize);
    let (mut want_acks, mut want_naks) = (0usize, 0usize);
    // The previous cycle's claim, the previous cycle's FIFO flags (what the registered room
    // flag sees), and the last write's cycle.
    let mut held_before = false;
    let mut last_write: Option<u64> = None;
    let mut afull = [false; 3];
    for cycle in 0..200_000u64 {
        let offer = rng.chance(3, 4).then(|| input.front()).flatten().cloned();
        let lock = rng.chance(1, 3);
        let new_afull = [rng.chance(1, 6), rng.chance(1, 10), rng.chance(1, 10)];
        let seen = tb.cycle(offer.as_ref(), lock, new_afull);
        if seen.taken {
            taken.push_back(input.pop_front().expect("took an offered packet"));
        }
        assert_eq!(seen.write.is_some(), held_before, "cycle {cycle}: a write must follow exactly one claim");
        if seen.hold {
            assert!(!lock, "cycle {cycle}: claimed while the scheduler was locked");
            assert!(
                afull.iter().all(|f| !f),
                "cycle {cycle}: claimed although the FIFOs were almost full a cycle earlier"
            );
        }
        if let Some((job, pay)) = seen.write {
            if let Some(l) = last_write {
                assert!(cycle - l >= RR_MIN_CYCLES, "cycle {cycle}: two writes {} cycles apart", cycle - l);
            }
            last_write = Some(cycle);
            let p = taken.pop_front().expect("a write with no packet taken");
            assert_eq!(job, expected(&p), "cycle {cycle}: packet {out} ({p:?})");
            let want_pay = (p.len != 0).then(|| (p.iova, p.len, (p.iova & 63) | p.len << 6 | 1 << 19));
            assert_eq!(pay, want_pay, "cycle {cycle}: payload read and piece of packet {out}");
            if p.ack {
                if syndrome(&p) == 0x1F {
                    want_acks += 1;
                } else {
                    want_naks += 1;
                }
            }
            out += 1;
        }
        acks += usize::from(seen.ack);
        naks += usize::from(seen.nak);
        held_before = seen.hold;
        afull = new_afull;
        if out == total {
            break;
        }
    }
    assert_eq!(out, total, "{out} of {total} packets written");
    assert_eq!((acks, naks), (want_acks, want_naks), "ACK / NAK counter pulses");
    assert!(want_acks > 0 && want_naks > 0, "the run had both ACKs and NAKs");
}

#[test]
fn a_free_stream_leaves_one_packet_per_min_gap() {
    let mut tb = Tb::new();
    let mut rng = Rng::from_env(0x5E6E_0002);
    let mut writes = Vec::new();
    for cycle in 0..400u64 {
        let p = random_pkt(&mut rng);
        let seen = tb.cycle(Some(&p), false, [false; 3]);
        if seen.write.is_some() {
            writes.push(cycle);
        }
    }
    assert_eq!(writes[0], 2, "first write: offer, take, claim, write");
    assert!(writes.windows(2).all(|w| w[1] - w[0] == RR_MIN_CYCLES), "writes at {writes:?}");
    assert_eq!(writes.len(), (400usize - 2).div_ceil(RR_MIN_CYCLES as usize));
}

#[test]
fn the_scheduler_s_lock_holds_it_back() {
    let mut tb = Tb::new();
    let mut rng = Rng::from_env(0x5E6E_0003);
    let p = random_pkt(&mut rng);
    for cycle in 0..100 {
        let seen = tb.cycle(Some(&p), true, [false; 3]);
        assert!(!seen.hold && seen.write.is_none(), "cycle {cycle}: claimed or wrote while locked");
    }
    let seen = tb.cycle(None, false, [false; 3]);
    assert!(seen.hold && seen.write.is_none(), "the claim comes in the cycle the lock falls");
    let seen = tb.cycle(None, true, [false; 3]);
    let (job, _) = seen.write.expect("the write follows the claim, lock or not");
    assert_eq!(job, expected(&p));
}
