//! `ReadResponder` in Verilator against a model of the response packets each job owes.
//!
//! - `every_job_becomes_its_packets_in_order_per_qp`: random READs (0..20 000 bytes, path MTU
//!   256..4096), ATOMIC ACKNOWLEDGEs and ACKNOWLEDGEs on 12 QPs, fed with random gaps and taken
//!   at random. Each QP's output is exactly its jobs' packets in order: PSN and address step
//!   per packet, payload `min(rest, MTU)`, `first`/`last` in place, every other field as the job
//!   had it.
//! - `long_responses_interleave`: 16 QPs each owing a 64 KiB READ at MTU 256 (256 packets
//!   each): every QP's first packet is among the first 32 out, and no QP waits more than 16
//!   packets between two of its own (served round-robin, not one response after another).
//! - `a_replay_replaces_the_response_in_progress`: a duplicate READ (not `fresh`) for a QP in
//!   the middle of a new response is taken at once; after the few packets already handed over,
//!   the replay's packets follow, its last one carrying the cut response's `fresh` mark (so the
//!   `max_dest_rd_atomic` slot is released exactly once); another QP's response is untouched.
//! - `a_reset_retires_the_entry`: a QP put in RESET mid-response sends at most the packets
//!   already handed over (one in the output here, one being emitted); a new READ on that QP afterwards starts afresh at its own PSN.
mod harness;

use harness::{pack_fields, Dut, Rng};
use rnic_contract::Field;
use rnic_hdl::read_responder::ReadResponder;
use rnic_hdl::records::ReadRespJob;
use std::collections::VecDeque;

const BITS: usize = 360;

#[derive(Clone, Debug, PartialEq)]
struct Job {
    qpn: u64,
    psn: u64,
    iova: u64,
    len: u64,
    path_mtu: u64,
    atomic: bool,
    ack: bool,
    msn: u64,
    orig: u64,
    dest_qpn: u64,
    fresh: bool,
}

/// One output packet as read from the port.
#[derive(Clone, Debug, PartialEq)]
struct Pkt {
    qpn: u64,
    psn: u64,
    iova: u64,
    len: u64,
    first: bool,
    last: bool,
    /// The fields a packet copies from its job unchanged.
    carried: (u64, bool, bool, u64, u64, u64, bool),
}

fn encode(j: &Job) -> Vec<u8> {
    let r = ReadRespJob::default();
    pack_fields(
        BITS,
        &[
            (r.get_my_offset_qpn(), 6, j.qpn),
            (r.get_my_offset_psn(), 24, j.psn),
            (r.get_my_offset_iova(), 64, j.iova),
            (r.get_my_offset_len(), 32, j.len),
            (r.get_my_offset_path_mtu(), 3, j.path_mtu),
            (r.get_my_offset_atomic(), 1, u64::from(j.atomic)),
            (r.get_my_offset_ack(), 1, u64::from(j.ack)),
            (r.get_my_offset_msn(), 24, j.msn),
            (r.get_my_offset_orig(), 64, j.orig),
            (r.get_my_offset_dest_qpn(), 24, j.dest_qpn),
            (r.get_my_offset_fresh(), 1, u64::from(j.fresh)),
        ],
    )
}

/// A field of a record read from a port (the contract's bit-field reader).
fn field(bytes: &[u8], off: usize, width: usize) -> u64 {
    Field::at_bit(off, width).get(bytes)
}

fn decode(b: &[u8]) -> Pkt {
    let r = ReadRespJob::default();
    Pkt {
        qpn: field(b, r.get_my_offset_qpn(), 6),
        psn: field(b, r.get_my_offset_psn(), 24),
        iova: field(b, r.get_my_offset_iova(), 64),
        len: field(b, r.get_my_offset_len(), 32),
        first: field(b, r.get_my_offset_first(), 1) == 1,
        last: field(b, r.get_my_offset_last(), 1) == 1,
        carried: (
            field(b, r.get_my_offset_path_mtu(), 3),
            field(b, r.get_my_offset_atomic(), 1) == 1,
            field(b, r.get_my_offset_ack(), 1) == 1,
            field(b, r.get_my_offset_msn(), 24),
            field(b, r.get_my_offset_orig(), 64),
            field(b, r.get_my_offset_dest_qpn(), 24),
            field(b, r.get_my_offset_fresh(), 1) == 1,
        ),
    }
}

/// The packets a job owes, in order (IBTA Vol 1 9.7.4.1.4: path-MTU payloads, PSN + 1 each).
fn packets(j: &Job) -> Vec<Pkt> {
    let mtu = 128u64 << j.path_mtu;
    let n = if j.len == 0 { 1 } else { j.len.div_ceil(mtu) };
    (0..n)
        .map(|k| Pkt {
            qpn: j.qpn,
            psn: (j.psn + k) & 0xFF_FFFF,
            iova: j.iova + k * mtu,
            len: (j.len - k * mtu).min(mtu),
            first: k == 0,
            last: k == n - 1,
            carried: (j.path_mtu, j.atomic, j.ack, j.msn, j.orig, j.dest_qpn, j.fresh),
        })
        .collect()
}

struct Tb {
    dut: Dut,
}

impl Tb {
    fn new() -> Tb {
        let mut dut = Dut::build::<ReadResponder>("read_responder").expect("build ReadResponder");
        dut.set_bit("in_empty", true);
        dut.reset(2);
        Tb { dut }
    }

    /// One cycle: offers `input`'s head, takes an output packet if `take`; returns whether the
    /// head was consumed and the packet taken.
    fn cycle(&mut self, input: Option<&Job>, take: bool, clear: Option<u64>) -> (bool, Option<Pkt>) {
        let d = &mut self.dut;
        d.set_bit("in_empty", input.is_none());
        let bytes = input.map(encode).unwrap_or_else(|| vec![0u8; BITS.div_ceil(8)]);
        d.set_wide("in_job", &bytes);
        d.set_bit("clear", clear.is_some());
        d.set("clear_qpn", clear.unwrap_or(0));
        d.eval();
        let consumed = d.get_bit("in_read");
        let offered = !d.get_bit("out_empty");
        let pkt = (offered && take).then(|| decode(&d.get_wide("out_job")));
        d.set_bit("out_read", offered && take);
        d.eval();
        d.tick();
        (consumed, pkt)
    }
}

fn random_job(rng: &mut Rng, qpn: u64) -> Job {
    let kind = rng.range(0, 5);
    let (atomic, ack) = (kind == 4, kind == 5);
    let len = if atomic || ack {
        0
    } else if rng.chance(1, 8) {
        0
    } else {
        rng.range(1, 20_000)
    };
    Job {
        qpn,
        psn: rng.range(0, 0xFF_FFFF),
        iova: rng.next_u64() >> 8,
        len,
        path_mtu: rng.range(1, 5),
        atomic,
        ack,
        msn: rng.range(0, 0xFF_FFFF),
        orig: rng.next_u64(),
        dest_qpn: rng.range(0, 0xFF_FFFF),
        // Only ACKNOWLEDGEs may be not fresh here: a replay replaces the response in progress
        // (see `a_replay_replaces_the_response_in_progress`).
        fresh: !ack || rng.chance(1, 2),
    }
}

#[test]
fn every_job_becomes_its_packets_in_order_per_qp() {
    let mut tb = Tb::new();
    let mut rng = Rng::from_env(0x5EAD_0001);
    let mut input: VecDeque<Job> = (0..400)
        .map(|_| {
            let q = rng.range(0, 11);
            random_job(&mut rng, q)
        })
        .collect();
    let mut owed: Vec<VecDeque<Pkt>> = vec![VecDeque::new(); 64];
    let mut out = 0usize;
    let total: usize = input.iter().map(|j| packets(j).len()).sum();
    for cycle in 0..2_000_000u64 {
        let offer = (rng.chance(3, 4)).then(|| input.front()).flatten().cloned();
        let (consumed, pkt) = tb.cycle(offer.as_ref(), rng.chance(2, 3), None);
        if consumed {
            let j = input.pop_front().expect("consumed an offered job");
            owed[j.qpn as usize].extend(packets(&j));
        }
        if let Some(p) = pkt {
            let want = owed[p.qpn as usize].pop_front();
            assert_eq!(Some(&p), want.as_ref(), "cycle {cycle}: packet {out} of QP {}", p.qpn);
            out += 1;
        }
        if out == total {
            break;
        }
    }
    assert_eq!(out, total, "{} of {total} packets came out; {} jobs not taken", out, input.len());
    assert!(owed.iter().all(VecDeque::is_empty));
}

#[test]
fn long_responses_interleave() {
    let mut tb = Tb::new();
    let mut input: VecDeque<Job> = (0..16u64)
        .map(|q| Job {
            qpn: q * 3,
            psn: q * 1000,
            iova: 0x1000_0000 * (q + 1),
            len: 65_536,
            path_mtu: 1,
            atomic: false,
            ack: false,
            msn: q,
            orig: 0,
            dest_qpn: 0x100 + q,
            fresh: true,
        })
        .collect();
    let mut order: Vec<u64> = Vec::new();
    for _ in 0..200_000 {
        let offer = input.front().cloned();
        let (consumed, pkt) = tb.cycle(offer.as_ref(), true, None);
        if consumed {
            input.pop_front();
        }
        if let Some(p) = pkt {
            order.push(p.qpn);
        }
        if order.len() == 16 * 256 {
            break;
        }
    }
    assert_eq!(order.len(), 16 * 256);
    // The jobs are taken one per few cycles while the first QPs are already sending, so a
    // QP's first packet comes within the first 32, not after another QP's whole response.
    let mut firsts: Vec<u64> = order[..32].to_vec();
    firsts.sort_unstable();
    firsts.dedup();
    assert_eq!(firsts, (0..16u64).map(|q| q * 3).collect::<Vec<_>>(), "first 32 packets: {:?}", &order[..32]);
    for q in 0..16u64 {
        let at: Vec<usize> = order.iter().enumerate().filter(|(_, &x)| x == q * 3).map(|(i, _)| i).collect();
        assert_eq!(at.len(), 256);
        let worst = at.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0);
        assert!(worst <= 16, "QP {} waited {worst} packets between two of its own", q * 3);
    }
}

#[test]
fn a_reset_retires_the_entry() {
    let mut tb = Tb::new();
    let long = Job {
        qpn: 7,
        psn: 100,
        iova: 0x4000,
        len: 100 * 256,
        path_mtu: 1,
        atomic: false,
        ack: false,
        msn: 1,
        orig: 0,
        dest_qpn: 9,
        fresh: true,
    };
    let mut got: Vec<Pkt> = Vec::new();
    let mut offered = Some(long.clone());
    while got.len() < 10 {
        let (consumed, pkt) = tb.cycle(offered.as_ref(), true, None);
        if consumed {
            offered = None;
        }
        got.extend(pkt);
    }
    tb.cycle(None, false, Some(7));
    let mut after = 0;
    for _ in 0..200 {
        if tb.cycle(None, true, None).1.is_some() {
            after += 1;
        }
    }
    // At most the packet already in the output FIFO and the one being emitted at the reset.
    assert!(after <= 2, "{after} packets of the reset QP's response after the reset");
    // A new READ on the same QP starts at its own PSN and address.
    let fresh = Job { psn: 5000, iova: 0x9000, len: 600, ..long };
    let mut offered = Some(fresh.clone());
    let mut out = Vec::new();
    for _ in 0..200 {
        let (consumed, pkt) = tb.cycle(offered.as_ref(), true, None);
        if consumed {
            offered = None;
        }
        out.extend(pkt);
    }
    assert_eq!(out, packets(&fresh));
}

#[test]
fn a_replay_replaces_the_response_in_progress() {
    let mut tb = Tb::new();
    let first = Job {
        qpn: 5,
        psn: 1000,
        iova: 0x10_0000,
        len: 100 * 256,
        path_mtu: 1,
        atomic: false,
        ack: false,
        msn: 3,
        orig: 0,
        dest_qpn: 0x55,
        fresh: true,
    };
    let other = Job { qpn: 6, psn: 77, iova: 0x90_0000, len: 40 * 256, dest_qpn: 0x66, ..first.clone() };
    let replay = Job { psn: 1003, iova: 0x10_0000 + 3 * 256, len: 97 * 256, fresh: false, ..first.clone() };
    let mut input: VecDeque<Job> = VecDeque::from([first.clone(), other.clone()]);
    let mut got: Vec<Pkt> = Vec::new();
    let mut replay_taken_at = None;
    for _ in 0..20_000 {
        if replay_taken_at.is_none() && input.is_empty() && got.iter().filter(|p| p.qpn == 5).count() >= 10 {
            input.push_back(replay.clone());
        }
        let offer = input.front().cloned();
        let (consumed, pkt) = tb.cycle(offer.as_ref(), true, None);
        if consumed {
            let j = input.pop_front().unwrap();
            if !j.fresh {
                replay_taken_at = Some(got.len());
            }
        }
        got.extend(pkt);
        if got.iter().filter(|p| p.qpn == 6).count() == 40 && got.last().is_some_and(|p| p.qpn == 5 && p.last) {
            break;
        }
    }
    let at = replay_taken_at.expect("the replay was taken");
    let mine: Vec<&Pkt> = got.iter().filter(|p| p.qpn == 5).collect();
    let before = got[..at].iter().filter(|p| p.qpn == 5).count();
    // The replay's packets come last, whole; between them and the cut response, at most the
    // packets already handed over (output FIFO) or being emitted.
    let want = packets(&replay);
    let tail: Vec<Pkt> = mine[mine.len() - want.len()..].iter().map(|p| (*p).clone()).collect();
    let mut want_fresh_last = want.clone();
    want_fresh_last.iter_mut().for_each(|p| p.carried.6 = true);
    assert_eq!(tail, want_fresh_last, "the replay's packets, with the fresh mark it took over");
    let cut = mine.len() - want.len();
    assert!(cut - before <= 5, "{} packets of the cut response after the replay was taken", cut - before);
    assert!(cut < 100, "the first response was not cut short ({cut} packets)");
    // The other QP's response is whole and in order.
    let theirs: Vec<Pkt> = got.iter().filter(|p| p.qpn == 6).cloned().collect();
    assert_eq!(theirs, packets(&other));
}

/// Go-back-N resends every READ from the PSN it went back to: the replay of the oldest is in
/// progress when the replay of the next one arrives; that one waits, so both go out whole and
/// in order (were it to replace the first, the requester would again get only the first
/// packets of the oldest READ, round after round).
#[test]
fn a_later_replay_waits_for_the_replay_in_progress() {
    let mut tb = Tb::new();
    let older = Job {
        qpn: 9,
        psn: 0xFF_FFF0,
        iova: 0x20_0000,
        len: 60 * 256,
        path_mtu: 1,
        atomic: false,
        ack: false,
        msn: 4,
        orig: 0,
        dest_qpn: 0x99,
        fresh: false,
    };
    // The next READ, 60 PSNs later (across the 24-bit wrap).
    let newer = Job { psn: 0x00_002C, iova: 0x30_0000, len: 20 * 256, ..older.clone() };
    let mut input: VecDeque<Job> = VecDeque::from([older.clone()]);
    let mut got: Vec<Pkt> = Vec::new();
    let mut pushed = false;
    for _ in 0..20_000 {
        if !pushed && got.len() >= 5 {
            input.push_back(newer.clone());
            pushed = true;
        }
        let offer = input.front().cloned();
        let (consumed, pkt) = tb.cycle(offer.as_ref(), true, None);
        if consumed {
            input.pop_front();
        }
        got.extend(pkt);
        if got.len() == 80 {
            break;
        }
    }
    let mut want = packets(&older);
    want.extend(packets(&newer));
    assert_eq!(got, want, "both replays whole, the older first");
}
