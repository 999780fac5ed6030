//! `RxIngress` in Verilator against frames from the reference codec.
//!
//! The block's verdict on a frame (a descriptor, or a drop counter pulse, with `cnt_rx_frame`)
//! comes exactly [`LATENCY`] cycles after the frame's `tlast` beat, while the next frames are
//! already coming in; the testbench streams frames and checks each verdict in the cycle it is
//! due (no pulse may come at any other cycle), reads accepted frames back through the buffer's
//! read port while later frames arrive, and releases their space as the RX engine would.
//!
//! Accepted opcodes are the RC opcodes 0x00..=0x14: SEND FIRST/MIDDLE/LAST/ONLY and LAST/ONLY
//! WITH IMMEDIATE (ImmDt), RDMA WRITE FIRST/ONLY (RETH), MIDDLE/LAST, LAST WITH IMMEDIATE
//! (ImmDt), ONLY WITH IMMEDIATE (RETH + ImmDt), RDMA READ REQUEST (RETH), READ RESPONSE
//! FIRST/LAST/ONLY (AETH) and MIDDLE, ACKNOWLEDGE (AETH), ATOMIC ACKNOWLEDGE (AETH +
//! AtomicAckETH), COMPARE SWAP and FETCH ADD (AtomicETH); the atomics are built and parsed by
//! the codec's `AtomicPacketRepr` (the harness's `AnyPacket` holds either kind). A descriptor's
//! RETH fields are compared only for opcodes with a RETH, its AETH fields only for opcodes
//! with an AETH, `imm` only for the four WITH IMMEDIATE opcodes; for COMPARE SWAP / FETCH ADD
//! `reth_va`, `reth_rkey` (the AtomicETH's VA and R_Key), `at_swap` (Swap/Add Data) and
//! `at_cmp` (Compare Data); for ATOMIC ACKNOWLEDGE the AETH fields and `at_swap` (Original
//! Remote Data). Every other field an opcode does not define is left undefined (`reth_len` of
//! an atomic too).
//!
//! UD SEND ONLY (0x64, 0x65; IBTA Vol 1 9.8, DETH 9.3.3) is accepted too, as the SEND ONLY it
//! resembles with `ud` set (`ud_send_only_frames_become_ud_descriptors`; the codec does not
//! model DETH, so those frames are RC SEND ONLY frames with the DETH in their payload and the
//! opcode and ICRC rewritten).
//!
//! - `codec_places_extension_headers` (no Verilator): the reference itself: for each accepted
//!   opcode the codec emits the RETH / AETH / ImmDt IBTA Vol 1 Table 38 lists, in that order
//!   after the BTH, so the ImmDt is at frame bytes 54..58, or 70..74 after a RETH; the
//!   AtomicETH at 54..82 (VA, R_Key, Swap/Add, Compare, big-endian), the ATOMIC ACKNOWLEDGE's
//!   AETH at 54..58 and AtomicAckETH at 58..66.
//! - `valid_frames_become_descriptors`: frames of every accepted opcode (payload 0..=4096,
//!   every pad; none for READ REQUEST, ACKNOWLEDGE and the atomics, a whole MTU for
//!   FIRST/MIDDLE) with random
//!   addresses, TOS/TTL/ID, FECN/BECN (fields the ICRC masks), back to back or with idle cycles,
//!   each produce exactly one descriptor whose fields match the codec's parse (opcode, `hlen` =
//!   54 + 0/4/12/16/20/28, AckReq, plen, dest QP, PSN, RETH, AETH, `imm` = the ImmDt's wire
//!   bytes with the first in bits 7:0, the atomic operands as numbers), whose `start`
//!   continues where the previous frame ended (mod the 1024-beat buffer)
//!   and `nbeats` covers Total Length; reading `nbeats` beats back through
//!   `buf_raddr`/`buf_rdata` gives the frame's bytes; `cnt_rx_frame` pulses once per frame and
//!   no error counter pulses.
//! - `every_opcode_at_beat_edges`: each accepted opcode with payloads 0..=80 and lengths that
//!   end the frame just before, on and after the second and third beat boundaries (an RDMA
//!   WRITE ONLY WITH IMMEDIATE's ImmDt is in the second beat: taken from that beat when it is
//!   the frame's last, from a register when the frame is longer), all descriptors as above.
//! - `atomic_frames_become_descriptors`: ATOMIC ACKNOWLEDGE (70-byte frame, headers end at byte
//!   66) and COMPARE SWAP / FETCH ADD (86 bytes, AtomicETH to byte 82): headers ending in the
//!   second beat, which is also the last one (operands taken from that beat) or, with 1..=70
//!   bytes of Ethernet padding, not (operands kept in a register); operand corners (all ones,
//!   all zeros, single bytes); back to back with other frames or with idle cycles: each
//!   descriptor carries the AtomicETH / AtomicAckETH fields as above.
//! - `only_rc_opcodes_up_to_fetch_add_are_accepted`: all 256 opcodes, each followed by a good
//!   frame: exactly 0x00..=0x14 are accepted; 0x15..=0x1F, UC (with their own extension
//!   headers), UD, CNP and the rest are `cnt_malformed`, and the next frame is unaffected.
//! - `back_to_back_frames_without_reading`: frames on consecutive cycles, nothing released until
//!   all are in; every descriptor and every stored frame is right.
//! - `ethernet_padding_is_ignored`: frames followed by 1..70 bytes of Ethernet padding (padding
//!   beats included) are accepted with the Total Length's beat count, and the next frame starts
//!   right after them in the buffer.
//! - `icrc_errors_are_counted_and_dropped`: one flipped bit anywhere the ICRC covers (payload,
//!   extension headers, BTH, ICRC itself, pad) → `cnt_icrc`, no descriptor, and the buffer
//!   space is reused by the next frame, also when that frame follows on the next cycle (before
//!   the verdict).
//! - `malformed_frames_are_counted_and_dropped`: bad IPv4 checksum, wrong UDP port, truncated
//!   frame (`tlast` before Total Length), `tuser` = 1, not IPv4, unsupported opcode
//!   (0x15..=0x1A: RESYNC, reserved), UDP Length ≠ Total Length − 20, TVer ≠ 0, IPv4
//!   fragment, IPv4 options, not UDP, Total Length past the largest frame → `cnt_malformed`,
//!   no descriptor.
//! - `extension_headers_must_fit_in_the_frame`: a SEND ONLY of `n` bytes relabelled as each
//!   opcode with 4 or 16 bytes of extension headers is accepted (descriptor = the codec's
//!   parse) iff they fit (`n` >= their length), else `cnt_malformed`; relabelled as ATOMIC
//!   ACKNOWLEDGE (12 bytes) or COMPARE SWAP / FETCH ADD (28 bytes) with `n` up to the headers'
//!   length: accepted with `n` = that length, `cnt_malformed` when shorter (including a
//!   SEND's pad that would make up the 28 bytes).
//! - `write_only_with_immediate_headers_must_fit_in_the_frame`: the same for RDMA WRITE ONLY
//!   WITH IMMEDIATE (20 bytes, headers of 64..67 bytes with the pad), including a Total Length
//!   of 64 with PadCnt 1..3.
//! - `overflow_when_buffer_or_descriptor_fifo_full`: with `rd_ptr` held the buffer fills and the
//!   frame that does not fit is counted in `cnt_overflow`; with `desc_full` a good frame is
//!   counted as overflow; once space is released, frames are accepted again.
mod harness;

use harness::codec::{self, AnyPacket};
use harness::{bytes_to_bits, Dut, Port, Rng};
use rnic_firmware_tests::wire::{icrc, Ipv4Packet, Opcode, RocePacketRepr};
use rnic_hdl::records::RxDesc;
use rnic_hdl::rx_ingress::{RxIngress, LATENCY};
use rust_hdl::prelude::*;
use std::collections::VecDeque;

/// Packet-buffer beats.
const BEATS: u64 = 1 << rnic_hdl::rx_ingress::LOG_BUFFER_BEATS;

struct Pins {
    tdata: Port,
    tkeep: Port,
    tlast: Port,
    tvalid: Port,
    tuser: Port,
    buf_raddr: Port,
    buf_rdata: Port,
    rd_ptr: Port,
    desc_full: Port,
    desc_write: Port,
    desc: Port,
    cnt_rx_frame: Port,
    cnt_malformed: Port,
    cnt_icrc: Port,
    cnt_overflow: Port,
}

/// What the testbench expects of a frame it sent.
#[derive(Debug, Clone)]
enum Expect {
    /// Accepted: a descriptor for `repr` (whose frame, without Ethernet padding, is `frame`);
    /// its bytes are read back from the buffer and, if `release`, its space is freed.
    Good { repr: Box<AnyPacket>, frame: Vec<u8>, release: bool },
    /// Accepted as a UD SEND ONLY (the codec does not model DETH): this descriptor (its
    /// `start` aside; fields UD does not define are not compared), then as `Good`.
    Ud { want: Box<RxDescView>, frame: Vec<u8> },
    /// Dropped with exactly this counter: "malformed", "icrc" or "overflow".
    Drop(&'static str),
}

/// A frame whose verdict is due in cycle `due`.
struct Pending {
    due: u64,
    expect: Expect,
    ctx: String,
}

/// A read-back of an accepted frame through the buffer's read port, one beat per cycle.
struct ReadJob {
    start: u64,
    nbeats: u64,
    next: u64,
    data: Vec<u8>,
    frame: Vec<u8>,
    release: bool,
    ctx: String,
}

struct Tb {
    dut: Dut,
    p: Pins,
    rng: Rng,
    /// Idle cycles between beats, in percent.
    p_idle: u64,
    rd_ptr: u64,
    cycle: u64,
    pending: VecDeque<Pending>,
    reads: VecDeque<ReadJob>,
    /// Where the next accepted frame must start in the buffer (if known).
    next_start: Option<u64>,
    /// Descriptors of accepted frames, in order.
    accepted: Vec<RxDescView>,
    /// Verdicts checked so far.
    verdicts: u64,
}

/// What the block said in a cycle.
#[derive(Debug, Default, Clone)]
struct Verdict {
    desc: Option<RxDescView>,
    frame: bool,
    malformed: bool,
    icrc: bool,
    overflow: bool,
}

impl Verdict {
    fn any(&self) -> bool {
        self.desc.is_some() || self.frame || self.malformed || self.icrc || self.overflow
    }
}

/// The descriptor as numbers.
#[derive(Debug, Clone, PartialEq, Eq)]
struct RxDescView {
    start: u64,
    nbeats: u64,
    opcode: u64,
    hlen: u64,
    ackreq: bool,
    plen: u64,
    dest_qpn: u64,
    psn: u64,
    reth_va: u64,
    reth_rkey: u64,
    reth_len: u64,
    aeth_syndrome: u64,
    aeth_msn: u64,
    imm: u64,
    at_swap: u64,
    at_cmp: u64,
    ud: bool,
}

impl From<RxDesc> for RxDescView {
    fn from(d: RxDesc) -> Self {
        RxDescView {
            start: d.start.to_u64(),
            nbeats: d.nbeats.to_u64(),
            opcode: d.opcode.to_u64(),
            hlen: d.hlen.to_u64(),
            ackreq: d.ackreq.any(),
            plen: d.plen.to_u64(),
            dest_qpn: d.dest_qpn.to_u64(),
            psn: d.psn.to_u64(),
            reth_va: d.reth_va.to_u64(),
            reth_rkey: d.reth_rkey.to_u64(),
            reth_len: d.reth_len.to_u64(),
            aeth_syndrome: d.aeth_syndrome.to_u64(),
            aeth_msn: d.aeth_msn.to_u64(),
            imm: d.imm.to_u64(),
            at_swap: d.at_swap.to_u64(),
            at_cmp: d.at_cmp.to_u64(),
            ud: d.ud.any(),
        }
    }
}

impl Tb {
    fn new(seed: u64) -> Tb {
        let mut dut = Dut::build::<RxIngress>("rx_ingress").expect("build the RX ingress model");
        let p = Pins {
            tdata: dut.port("tdata"),
            tkeep: dut.port("tkeep"),
            tlast: dut.port("tlast"),
            tvalid: dut.port("tvalid"),
            tuser: dut.port("tuser"),
            buf_raddr: dut.port("buf_raddr"),
            buf_rdata: dut.port("buf_rdata"),
            rd_ptr: dut.port("rd_ptr"),
            desc_full: dut.port("desc_full"),
            desc_write: dut.port("desc_write"),
            desc: dut.port("desc"),
            cnt_rx_frame: dut.port("cnt_rx_frame"),
            cnt_malformed: dut.port("cnt_malformed"),
            cnt_icrc: dut.port("cnt_icrc"),
            cnt_overflow: dut.port("cnt_overflow"),
        };
        dut.reset(2);
        Tb {
            dut,
            p,
            rng: Rng::from_env(seed),
            p_idle: 0,
            rd_ptr: 0,
            cycle: 0,
            pending: VecDeque::new(),
            reads: VecDeque::new(),
            next_start: Some(0),
            accepted: Vec::new(),
            verdicts: 0,
        }
    }

    /// Reads the outputs of the current cycle (after eval): pulses and descriptor.
    fn observe(&mut self) -> Verdict {
        let d = &mut self.dut;
        let p = &self.p;
        let desc = if d.get_bit(p.desc_write) {
            let bits: Bits<417> = bytes_to_bits(&d.get_wide(p.desc));
            Some(RxDesc::from(bits).into())
        } else {
            None
        };
        Verdict {
            desc,
            frame: d.get_bit(p.cnt_rx_frame),
            malformed: d.get_bit(p.cnt_malformed),
            icrc: d.get_bit(p.cnt_icrc),
            overflow: d.get_bit(p.cnt_overflow),
        }
    }

    /// An accepted frame's descriptor `got`: its `start` continues where the previous frame
    /// ended; its bytes are read back (and its space released, if `release`) later.
    fn accept(&mut self, got: RxDescView, frame: Vec<u8>, release: bool, ctx: String) {
        if let Some(ns) = self.next_start {
            assert_eq!(got.start, ns, "{ctx}: start (the previous frame ended at {ns})");
        }
        self.next_start = Some((got.start + got.nbeats) % BEATS);
        self.reads.push_back(ReadJob {
            start: got.start,
            nbeats: got.nbeats,
            next: 0,
            data: Vec::new(),
            frame,
            release,
            ctx,
        });
        self.accepted.push(got);
    }

    /// Checks the verdict due in this cycle.
    fn check(&mut self, v: Verdict, pend: Pending) {
        let ctx = pend.ctx;
        assert!(v.frame, "{ctx}: no cnt_rx_frame {LATENCY} cycles after tlast: {v:?}");
        match pend.expect {
            Expect::Good { repr, frame, release } => {
                assert!(!v.malformed && !v.icrc && !v.overflow, "{ctx}: error pulse {v:?}");
                let got = v.desc.unwrap_or_else(|| panic!("{ctx}: no descriptor"));
                let want = expected_desc(&repr, frame.len(), got.start);
                check_desc(&got, &want, &ctx);
                self.accept(got, frame, release, ctx);
            }
            Expect::Ud { want, frame } => {
                assert!(!v.malformed && !v.icrc && !v.overflow, "{ctx}: error pulse {v:?}");
                let got = v.desc.unwrap_or_else(|| panic!("{ctx}: no descriptor"));
                let mut g = got.clone();
                (g.reth_rkey, g.reth_len, g.aeth_syndrome, g.aeth_msn, g.at_swap, g.at_cmp) = (0, 0, 0, 0, 0, 0);
                if want.opcode != 0x05 {
                    g.imm = 0;
                }
                assert_eq!(g, RxDescView { start: got.start, ..*want }, "{ctx}: UD descriptor");
                self.accept(got, frame, true, ctx);
            }
            Expect::Drop(kind) => {
                assert!(v.desc.is_none(), "{ctx}: a descriptor was written for a bad frame: {:?}", v.desc);
                let got = (v.malformed, v.icrc, v.overflow);
                let want = match kind {
                    "malformed" => (true, false, false),
                    "icrc" => (false, true, false),
                    "overflow" => (false, false, true),
                    _ => unreachable!(),
                };
                assert_eq!(got, want, "{ctx}: (malformed, icrc, overflow) pulses");
            }
        }
        self.verdicts += 1;
    }

    /// One clock cycle with the inputs as set: checks the outputs, reads the buffer.
    fn step(&mut self) {
        let reading = self.reads.front().map(|r| (r.start + r.next) % BEATS);
        if let Some(a) = reading {
            self.dut.set(self.p.buf_raddr, a);
        }
        self.dut.eval();
        let v = self.observe();
        if self.pending.front().is_some_and(|f| f.due == self.cycle) {
            let pend = self.pending.pop_front().unwrap();
            self.check(v, pend);
        } else {
            let next = self.pending.front().map(|f| (f.due, f.ctx.clone()));
            assert!(!v.any(), "cycle {}: pulse with no verdict due (next due: {next:?}): {v:?}", self.cycle);
        }
        self.dut.tick();
        self.cycle += 1;
        if reading.is_some() {
            let data = self.dut.get_wide(self.p.buf_rdata);
            let job = self.reads.front_mut().unwrap();
            job.data.extend(data);
            job.next += 1;
            if job.next == job.nbeats {
                let job = self.reads.pop_front().unwrap();
                codec::assert_frame_eq(
                    &job.data[..job.frame.len()],
                    &job.frame,
                    &format!("{}: buffer contents", job.ctx),
                );
                if job.release {
                    self.release(job.nbeats);
                }
            }
        }
    }

    fn idle(&mut self, n: usize) {
        self.dut.set_bit(self.p.tvalid, false);
        for _ in 0..n {
            let garbage = self.rng.bytes(64);
            self.dut.set_wide(self.p.tdata, &garbage);
            let last = self.rng.chance(1, 2);
            self.dut.set_bit(self.p.tlast, last);
            self.step();
        }
    }

    /// Sends `bytes` as one AXI4-Stream packet (`tkeep` per byte, `tlast` on the last beat);
    /// its verdict is checked against `expect` when it is due, while later frames come in.
    fn send(&mut self, bytes: &[u8], tuser: bool, expect: Expect, ctx: &str) {
        let n = bytes.len().div_ceil(64);
        assert!(n > 0);
        for k in 0..n {
            while self.rng.chance(self.p_idle, 100) {
                self.idle(1);
            }
            let part = &bytes[64 * k..bytes.len().min(64 * k + 64)];
            let mut data = [0u8; 64];
            // Bytes past tkeep are garbage on a real MAC.
            data.copy_from_slice(&self.rng.bytes(64));
            data[..part.len()].copy_from_slice(part);
            let keep = if part.len() == 64 { u64::MAX } else { (1u64 << part.len()) - 1 };
            let last = k + 1 == n;
            self.dut.set_bit(self.p.tvalid, true);
            self.dut.set_wide(self.p.tdata, &data);
            self.dut.set(self.p.tkeep, keep);
            self.dut.set_bit(self.p.tlast, last);
            self.dut.set_bit(self.p.tuser, last && tuser);
            if last {
                self.pending.push_back(Pending {
                    due: self.cycle + LATENCY as u64,
                    expect: expect.clone(),
                    ctx: ctx.to_string(),
                });
            }
            self.step();
        }
        self.dut.set_bit(self.p.tvalid, false);
        self.dut.set_bit(self.p.tuser, false);
    }

    /// Idles until every verdict has come and every read-back is done.
    fn flush(&mut self) {
        while !self.pending.is_empty() || !self.reads.is_empty() {
            self.idle(1);
        }
    }

    /// Frees `n` beats, as the RX engine does after consuming a packet.
    fn release(&mut self, n: u64) {
        self.rd_ptr = (self.rd_ptr + n) % (2 * BEATS);
        self.dut.set(self.p.rd_ptr, self.rd_ptr);
    }
}

const SEND_FIRST: u8 = 0x00;
const SEND_MIDDLE: u8 = 0x01;
const SEND_LAST: u8 = 0x02;
const SEND_LAST_IMM: u8 = 0x03;
const SEND_ONLY: u8 = 0x04;
const SEND_ONLY_IMM: u8 = 0x05;
const WRITE_FIRST: u8 = 0x06;
const WRITE_MIDDLE: u8 = 0x07;
const WRITE_LAST: u8 = 0x08;
const WRITE_LAST_IMM: u8 = 0x09;
const WRITE_ONLY: u8 = 0x0A;
const WRITE_ONLY_IMM: u8 = 0x0B;
const READ_REQUEST: u8 = 0x0C;
const READ_RESP_FIRST: u8 = 0x0D;
const READ_RESP_MIDDLE: u8 = 0x0E;
const READ_RESP_LAST: u8 = 0x0F;
const READ_RESP_ONLY: u8 = 0x10;
const ACK: u8 = 0x11;
const ATOMIC_ACK: u8 = 0x12;
const CMP_SWAP: u8 = 0x13;
const FETCH_ADD: u8 = 0x14;

/// Every opcode the ingress accepts: all RC opcodes 0x00..=0x14.
const ACCEPTED: [u8; 21] = [
    SEND_FIRST,
    SEND_MIDDLE,
    SEND_LAST,
    SEND_LAST_IMM,
    SEND_ONLY,
    SEND_ONLY_IMM,
    WRITE_FIRST,
    WRITE_MIDDLE,
    WRITE_LAST,
    WRITE_LAST_IMM,
    WRITE_ONLY,
    WRITE_ONLY_IMM,
    READ_REQUEST,
    READ_RESP_FIRST,
    READ_RESP_MIDDLE,
    READ_RESP_LAST,
    READ_RESP_ONLY,
    ACK,
    ATOMIC_ACK,
    CMP_SWAP,
    FETCH_ADD,
];

/// Opcodes whose descriptor carries a RETH, an AETH, an ImmDt (IBTA Vol 1 Table 38), an
/// AtomicETH, an AtomicAckETH.
const HAS_RETH: [u8; 4] = [WRITE_FIRST, WRITE_ONLY, WRITE_ONLY_IMM, READ_REQUEST];
const HAS_AETH: [u8; 5] = [READ_RESP_FIRST, READ_RESP_LAST, READ_RESP_ONLY, ACK, ATOMIC_ACK];
const HAS_IMM: [u8; 4] = [SEND_LAST_IMM, SEND_ONLY_IMM, WRITE_LAST_IMM, WRITE_ONLY_IMM];
const HAS_ATOMIC_ETH: [u8; 2] = [CMP_SWAP, FETCH_ADD];

/// Bytes of extension headers after the BTH for an accepted opcode.
fn ext_len_of(op: u8) -> usize {
    match op {
        ATOMIC_ACK => 12,
        CMP_SWAP | FETCH_ADD => 28,
        _ => Opcode(op).ext_headers().unwrap().len(),
    }
}

/// A payload length the opcode may carry: a whole MTU for FIRST/MIDDLE packets, none for a
/// READ request or an ACK, anything up to 4096 bytes otherwise.
fn random_plen(rng: &mut Rng, op: u8) -> usize {
    match op {
        ACK | READ_REQUEST | ATOMIC_ACK | CMP_SWAP | FETCH_ADD => 0,
        WRITE_FIRST | WRITE_MIDDLE | SEND_FIRST | SEND_MIDDLE | READ_RESP_FIRST | READ_RESP_MIDDLE => {
            *rng.pick(&[256usize, 512, 1024, 2048, 4096])
        }
        _ => match rng.range(0, 3) {
            0 => rng.range(0, 70) as usize,
            1 => rng.range(1, 4096) as usize,
            _ => 64 * rng.range(0, 64) as usize + *rng.pick(&[0usize, 2, 6, 10, 62]),
        }
        .min(4096),
    }
}

/// Randomises the fields the ingress does not check (ICRC-masked or not read).
fn randomise_masked(rng: &mut Rng, r: &mut AnyPacket) {
    let ip = r.ipv4_mut();
    ip.dscp = (rng.u32() & 63) as u8;
    ip.ecn = (rng.u32() & 3) as u8;
    ip.ttl = rng.u32() as u8;
    ip.ident = rng.u32() as u16;
    ip.dont_frag = rng.chance(1, 2);
    let bth = r.bth_mut();
    bth.fecn = rng.chance(1, 4);
    bth.becn = rng.chance(1, 4);
}

fn randomise_masked_roce(rng: &mut Rng, r: &mut RocePacketRepr) {
    let mut a = AnyPacket::Roce(r.clone());
    randomise_masked(rng, &mut a);
    *r = a.roce().unwrap().clone();
}

/// A frame with opcode `op` (one the ingress accepts) and `plen` payload bytes, with its
/// extension headers and random masked fields.
fn good_repr_of(rng: &mut Rng, op: u8, plen: usize) -> AnyPacket {
    let mut r = AnyPacket::random(rng, op);
    randomise_masked(rng, &mut r);
    r.set_payload(rng.bytes(plen));
    r
}

/// A frame the ingress must accept, with random masked fields.
fn good_repr(rng: &mut Rng) -> AnyPacket {
    let op = *rng.pick(&ACCEPTED);
    let plen = random_plen(rng, op);
    good_repr_of(rng, op, plen)
}

fn expected_desc(p: &AnyPacket, frame_len: usize, start: u64) -> RxDescView {
    let ext = p.ext_len() as u64;
    let mut d = RxDescView {
        start,
        nbeats: frame_len.div_ceil(64) as u64,
        opcode: u64::from(p.opcode()),
        hlen: 54 + ext,
        ackreq: p.bth().ack_req,
        plen: p.payload().len() as u64,
        dest_qpn: u64::from(p.bth().dest_qp),
        psn: u64::from(p.bth().psn),
        reth_va: 0,
        reth_rkey: 0,
        reth_len: 0,
        aeth_syndrome: 0,
        aeth_msn: 0,
        imm: 0,
        at_swap: 0,
        at_cmp: 0,
        ud: false,
    };
    let r = match p {
        AnyPacket::Roce(r) => r,
        AnyPacket::Atomic(a) => {
            if let Some(e) = &a.atomic_eth {
                d.reth_va = e.virt_addr;
                d.reth_rkey = u64::from(e.rkey);
                d.at_swap = e.swap_add;
                d.at_cmp = e.compare;
            }
            if let Some(x) = &a.aeth {
                d.aeth_syndrome = u64::from(x.syndrome);
                d.aeth_msn = u64::from(x.msn);
            }
            if let Some(o) = &a.atomic_ack_eth {
                d.at_swap = o.orig_data;
            }
            return d;
        }
    };
    if let Some(reth) = &r.reth {
        d.reth_va = reth.virt_addr;
        d.reth_rkey = u64::from(reth.rkey);
        d.reth_len = u64::from(reth.dma_len);
    }
    if let Some(a) = &r.aeth {
        d.aeth_syndrome = u64::from(a.syndrome);
        d.aeth_msn = u64::from(a.msn);
    }
    if let Some(i) = &r.immdt {
        d.imm = codec::imm_bits(i);
    }
    d
}

/// Compares the fields the frame's opcode defines (RETH, AETH and ImmDt fields only for the
/// opcodes that carry them).
fn check_desc(got: &RxDescView, want: &RxDescView, ctx: &str) {
    let mut g = got.clone();
    let op = want.opcode as u8;
    if !HAS_RETH.contains(&op) {
        if !HAS_ATOMIC_ETH.contains(&op) {
            g.reth_va = 0;
            g.reth_rkey = 0;
        }
        g.reth_len = 0;
    }
    if !HAS_ATOMIC_ETH.contains(&op) {
        g.at_cmp = 0;
        if op != ATOMIC_ACK {
            g.at_swap = 0;
        }
    }
    if !HAS_AETH.contains(&op) {
        g.aeth_syndrome = 0;
        g.aeth_msn = 0;
    }
    if !HAS_IMM.contains(&op) {
        g.imm = 0;
    }
    assert_eq!(&g, want, "{ctx}: descriptor");
}

/// Sends a good frame (with `eth_pad` bytes of Ethernet padding); its descriptor and buffer
/// contents are checked when due, and its space released after the read-back.
fn send_good(tb: &mut Tb, r: &AnyPacket, eth_pad: usize, release: bool, ctx: &str) {
    let frame = r.emit();
    let mut wire = frame.clone();
    wire.extend(tb.rng.bytes(eth_pad));
    tb.send(&wire, false, Expect::Good { repr: Box::new(r.clone()), frame, release }, ctx);
}

/// Sends `frame`, which must be dropped with exactly the named counter.
fn send_bad(tb: &mut Tb, frame: &[u8], tuser: bool, kind: &'static str, ctx: &str) {
    tb.send(frame, tuser, Expect::Drop(kind), ctx);
}

#[test]
fn valid_frames_become_descriptors() {
    let mut tb = Tb::new(0x2F1E_0001);
    let seed = tb.rng.0;
    for i in 0..600 {
        tb.p_idle = if i < 300 { 0 } else { 30 };
        let r = good_repr(&mut tb.rng);
        let ctx = format!("frame {i} opcode {:#04x} plen {} (seed {seed:#x})", r.opcode(), r.payload().len());
        send_good(&mut tb, &r, 0, true, &ctx);
    }
    tb.flush();
    assert_eq!(tb.accepted.len(), 600);
}

#[test]
fn codec_places_extension_headers() {
    // The reference the descriptors are checked against: for each accepted opcode the codec
    // emits exactly the extension headers IBTA Vol 1 Table 38 lists, in order RETH, AETH, ImmDt
    // right after the BTH, so an ImmDt is at frame bytes 54..58, or 70..74 after a RETH.
    let mut rng = Rng::from_env(0x2F1E_0007);
    for op in ACCEPTED {
        for _ in 0..20 {
            let plen = random_plen(&mut rng, op).min(100);
            let p = good_repr_of(&mut rng, op, plen);
            let ctx = format!("opcode {op:#04x}");
            if let AnyPacket::Atomic(a) = &p {
                let f = p.emit();
                assert_eq!(f[42], op, "{ctx}: opcode");
                assert_eq!(f.len(), 54 + ext_len_of(op) + 4, "{ctx}: frame length");
                if let Some(e) = &a.atomic_eth {
                    assert!(HAS_ATOMIC_ETH.contains(&op), "{ctx}: AtomicETH");
                    assert_eq!(&f[54..62], &e.virt_addr.to_be_bytes(), "{ctx}: AtomicETH VA");
                    assert_eq!(&f[62..66], &e.rkey.to_be_bytes(), "{ctx}: AtomicETH R_Key");
                    assert_eq!(&f[66..74], &e.swap_add.to_be_bytes(), "{ctx}: AtomicETH Swap/Add");
                    assert_eq!(&f[74..82], &e.compare.to_be_bytes(), "{ctx}: AtomicETH Compare");
                }
                if let (Some(x), Some(o)) = (&a.aeth, &a.atomic_ack_eth) {
                    assert_eq!(op, ATOMIC_ACK, "{ctx}: AETH + AtomicAckETH");
                    assert_eq!(f[54], x.syndrome, "{ctx}: AETH syndrome");
                    assert_eq!(&f[58..66], &o.orig_data.to_be_bytes(), "{ctx}: AtomicAckETH");
                }
                assert_eq!(AnyPacket::parse(&f), Ok(p.filled()), "{ctx}: round trip");
                continue;
            }
            let r = p.roce().unwrap();
            assert_eq!(r.reth.is_some(), HAS_RETH.contains(&op), "{ctx}: RETH");
            assert_eq!(r.aeth.is_some(), HAS_AETH.contains(&op), "{ctx}: AETH");
            assert_eq!(r.immdt.is_some(), HAS_IMM.contains(&op), "{ctx}: ImmDt");
            let f = r.emit();
            let ext = codec::ext_wire_bytes(r);
            assert_eq!(&f[54..54 + ext.len()], &ext[..], "{ctx}: extension header bytes");
            assert_eq!(&f[54 + ext.len()..54 + ext.len() + plen], &r.payload[..], "{ctx}: payload");
            if let Some(i) = &r.immdt {
                let at = if op == WRITE_ONLY_IMM { 70 } else { 54 };
                let wire = u64::from(u32::from_le_bytes(f[at..at + 4].try_into().unwrap()));
                assert_eq!(wire, codec::imm_bits(i), "{ctx}: ImmDt at byte {at}");
            }
            if let Some(reth) = &r.reth {
                assert_eq!(&f[54..62], &reth.virt_addr.to_be_bytes(), "{ctx}: RETH VA");
            }
            if let Some(a) = &r.aeth {
                assert_eq!(f[54], a.syndrome, "{ctx}: AETH syndrome");
            }
            assert_eq!(
                RocePacketRepr::parse(&f).as_ref(),
                Ok(&{
                    let mut x = r.clone();
                    x.fill_lengths();
                    x
                }),
                "{ctx}: round trip"
            );
        }
    }
}

#[test]
fn every_opcode_at_beat_edges() {
    // Each accepted opcode with payloads that put the frame's end on every side of the beat
    // boundaries (the ImmDt of a WRITE ONLY with immediate sits in the second beat: read from
    // the last beat itself for frames of two beats, from a register for longer ones).
    let mut tb = Tb::new(0x2F1E_0008);
    let seed = tb.rng.0;
    let mut n = 0;
    for (k, op) in ACCEPTED.into_iter().enumerate() {
        tb.p_idle = if k % 2 == 0 { 0 } else { 30 };
        let plens: Vec<usize> = if matches!(op, ACK | READ_REQUEST | ATOMIC_ACK | CMP_SWAP | FETCH_ADD) {
            vec![0; 8]
        } else {
            (0..=80).chain([100, 125, 126, 127, 128, 129, 130, 190, 191, 192, 193, 4093, 4096]).collect()
        };
        for plen in plens {
            let r = good_repr_of(&mut tb.rng, op, plen);
            let ctx = format!("opcode {op:#04x} plen {plen} frame {} bytes (seed {seed:#x})", r.buffer_len());
            send_good(&mut tb, &r, 0, true, &ctx);
            n += 1;
        }
    }
    tb.flush();
    assert_eq!(tb.accepted.len(), n);
    for op in ACCEPTED {
        assert!(tb.accepted.iter().any(|d| d.opcode == u64::from(op)), "no descriptor for {op:#04x}");
    }
}

#[test]
fn only_rc_opcodes_up_to_fetch_add_are_accepted() {
    // All 256 opcodes, each followed by a good frame: 0x00..=0x14 and UD SEND ONLY (0x64,
    // 0x65) become descriptors, every other (RESYNC, reserved, UC, the other UD opcodes, CNP,
    // manufacturer-specific) is malformed.
    let mut tb = Tb::new(0x2F1E_0009);
    let seed = tb.rng.0;
    for op in 0..=255u8 {
        tb.p_idle = if op % 3 == 0 { 20 } else { 0 };
        let ctx = format!("opcode {op:#04x} (seed {seed:#x})");
        if ACCEPTED.contains(&op) {
            let plen = random_plen(&mut tb.rng, op);
            let r = good_repr_of(&mut tb.rng, op, plen);
            send_good(&mut tb, &r, 0, true, &ctx);
        } else if op == 0x64 || op == 0x65 {
            let plen = tb.rng.range(0, 300) as usize;
            send_ud(&mut tb, op, plen, &ctx);
        } else {
            let f = unsupported_frame(&mut tb.rng, op);
            send_bad(&mut tb, &f, false, "malformed", &ctx);
        }
        let r = good_repr(&mut tb.rng);
        send_good(&mut tb, &r, 0, true, &format!("good frame after {ctx}"));
    }
    tb.flush();
    assert_eq!(tb.accepted.len(), 256 + ACCEPTED.len() + 2);
    assert_eq!(tb.verdicts, 512);
}

/// A UD SEND ONLY (0x64, or 0x65 with immediate) of `plen` payload bytes: the codec's RC SEND
/// ONLY frame whose payload starts with a DETH (random Q_Key, source QP) and the ImmDt, with
/// the opcode replaced and the ICRC recomputed. Expected: the descriptor of the RC SEND ONLY
/// it resembles (0x04 / 0x05) with `ud`, `hlen` 62 / 66, the DETH in `reth_va` (Q_Key bits
/// 63:32, reserved byte 31:24 = 0, source QP 23:0) and the ImmDt in `imm`.
fn send_ud(tb: &mut Tb, op: u8, plen: usize, ctx: &str) {
    let rng = &mut tb.rng;
    let mut r = codec::nic_style_repr(rng, 0x04);
    randomise_masked_roce(rng, &mut r);
    let (qkey, src) = (rng.u32(), rng.u32() & 0xFF_FFFF);
    let imm = rng.u32();
    let mut pay = qkey.to_be_bytes().to_vec();
    pay.extend_from_slice(&src.to_be_bytes());
    if op == 0x65 {
        pay.extend_from_slice(&imm.to_be_bytes());
    }
    pay.extend(rng.bytes(plen));
    r.payload = pay;
    let mut frame = r.emit();
    frame[42] = op;
    refill_icrc(&mut frame);
    let ext = if op == 0x65 { 12 } else { 8 };
    let want = RxDescView {
        start: 0,
        nbeats: frame.len().div_ceil(64) as u64,
        opcode: u64::from(op & 0x1F),
        hlen: 54 + ext,
        ackreq: r.bth.ack_req,
        plen: plen as u64,
        dest_qpn: u64::from(r.bth.dest_qp),
        psn: u64::from(r.bth.psn),
        reth_va: u64::from(qkey) << 32 | u64::from(src),
        reth_rkey: 0,
        reth_len: 0,
        aeth_syndrome: 0,
        aeth_msn: 0,
        imm: if op == 0x65 { u64::from(u32::from_le_bytes(imm.to_be_bytes())) } else { 0 },
        at_swap: 0,
        at_cmp: 0,
        ud: true,
    };
    tb.send(&frame.clone(), false, Expect::Ud { want: Box::new(want), frame }, ctx);
}

/// UD SEND ONLY frames, with and without ImmDt (whose bytes 62..66 straddle the first beat's
/// end), payloads 0..=80 and around the beat edges up to 4096, back to back with RC frames:
/// each a `ud` descriptor of the SEND ONLY it resembles, its DETH and ImmDt in place, its
/// bytes read back from the buffer.
#[test]
fn ud_send_only_frames_become_ud_descriptors() {
    let mut tb = Tb::new(0x0D_1001);
    let seed = tb.rng.0;
    for op in [0x64u8, 0x65] {
        for plen in (0..=80).chain([120, 127, 128, 129, 1000, 4093, 4096]) {
            let ctx = format!("opcode {op:#04x} plen {plen} (seed {seed:#x})");
            tb.p_idle = if plen % 5 == 0 { 7 } else { 0 };
            send_ud(&mut tb, op, plen, &ctx);
            if plen % 7 == 0 {
                let r = good_repr(&mut tb.rng);
                send_good(&mut tb, &r, 0, true, &format!("RC frame after {ctx}"));
            }
        }
    }
    tb.flush();
}

#[test]
fn back_to_back_frames_without_reading() {
    // Frames arrive on consecutive cycles while the engine releases nothing until they are
    // all in: all fit (< BEATS beats) and each descriptor is right.
    let mut tb = Tb::new(0x2F1E_0002);
    let mut frames = Vec::new();
    let mut total = 0;
    loop {
        let r = good_repr(&mut tb.rng);
        let nb = r.buffer_len().div_ceil(64);
        if total + nb > BEATS as usize {
            break;
        }
        total += nb;
        frames.push(r);
    }
    for (i, r) in frames.iter().enumerate() {
        send_good(&mut tb, r, 0, false, &format!("frame {i} of {}, {total} beats in all", frames.len()));
    }
    tb.flush();
    assert_eq!(tb.accepted.len(), frames.len());
    // Read everything back once more, late.
    let descs = tb.accepted.clone();
    for (i, (r, d)) in frames.iter().zip(&descs).enumerate() {
        tb.reads.push_back(ReadJob {
            start: d.start,
            nbeats: d.nbeats,
            next: 0,
            data: Vec::new(),
            frame: r.emit(),
            release: true,
            ctx: format!("frame {i} read back late"),
        });
    }
    tb.flush();
    assert_eq!(tb.rd_ptr, total as u64);
}

#[test]
fn ethernet_padding_is_ignored() {
    let mut tb = Tb::new(0x2F1E_0003);
    for i in 0..200 {
        tb.p_idle = if i % 4 == 3 { 20 } else { 0 };
        let mut r = good_repr(&mut tb.rng);
        if i % 2 == 0 {
            // Short frames: an ACK (62 bytes) or an ATOMIC ACKNOWLEDGE (70), padded.
            let op = *tb.rng.pick(&[ACK, ATOMIC_ACK]);
            r = AnyPacket::random(&mut tb.rng, op);
        }
        let pad = tb.rng.range(1, 70) as usize;
        send_good(&mut tb, &r, pad, true, &format!("frame {i} with {pad} bytes of padding"));
    }
    tb.flush();
    assert_eq!(tb.accepted.len(), 200);
}

#[test]
fn icrc_errors_are_counted_and_dropped() {
    let mut tb = Tb::new(0x2F1E_0004);
    for i in 0..300 {
        // Half the time the next frame follows on the next cycle, before the verdict.
        tb.p_idle = if i % 2 == 0 { 0 } else { 25 };
        let r = good_repr(&mut tb.rng);
        let mut f = r.emit();
        // A byte the ICRC covers and no other check reads: payload, pad, ICRC, RETH, AETH,
        // BTH P_Key / dest QP / PSN / AckReq byte, IPv4 addresses.
        let region = tb.rng.range(0, 5);
        let pos = match region {
            0 if f.len() > 58 + 16 && !r.payload().is_empty() => {
                tb.rng.range(54 + r.ext_len() as u64, f.len() as u64 - 5) as usize
            }
            1 => f.len() - 1 - tb.rng.range(0, 3) as usize,
            2 => *tb.rng.pick(&[44usize, 45, 47, 48, 49, 50, 51, 52, 53]),
            3 if r.ext_len() > 0 => 54 + tb.rng.range(0, r.ext_len() as u64 - 1) as usize,
            _ => 34 + tb.rng.range(0, 1) as usize, // UDP source port
        };
        let bit = tb.rng.range(0, 7);
        f[pos] ^= 1 << bit;
        send_bad(&mut tb, &f, false, "icrc", &format!("frame {i}: bit {bit} of byte {pos} flipped"));
        // The dropped frame's space is reused by the next good frame (checked by `next_start`).
        let r = good_repr(&mut tb.rng);
        send_good(&mut tb, &r, 0, true, &format!("good frame after bad frame {i}"));
    }
    tb.flush();
    assert_eq!(tb.accepted.len(), 300);
    assert_eq!(tb.verdicts, 600);
}

fn fix_ip_checksum(f: &mut [u8]) {
    Ipv4Packet::new_unchecked(&mut f[14..34]).fill_checksum();
}

fn refill_icrc(f: &mut [u8]) {
    let total = usize::from(u16::from_be_bytes([f[16], f[17]]));
    icrc::fill(&mut f[14..14 + total]).unwrap();
}

/// A frame with an opcode the ingress must refuse, with the extension headers the opcode
/// calls for (those the codec models) or otherwise plausible bytes after the BTH.
fn unsupported_frame(rng: &mut Rng, op: u8) -> Vec<u8> {
    assert!(!ACCEPTED.contains(&op), "{op:#04x} is accepted");
    let mut s = codec::nic_style_repr(rng, op);
    randomise_masked_roce(rng, &mut s);
    let n = match op {
        // Opcodes the codec models (UC): their own extension headers and some payload.
        _ if Opcode(op).ext_headers().is_ok() => {
            codec::add_ext_headers(rng, &mut s);
            rng.range(0, 300) as usize
        }
        _ => rng.range(0, 300) as usize,
    };
    s.payload = rng.bytes(n);
    s.emit()
}

#[test]
fn malformed_frames_are_counted_and_dropped() {
    let mut tb = Tb::new(0x2F1E_0005);
    for i in 0..400 {
        tb.p_idle = if i % 3 == 0 { 20 } else { 0 };
        let r = good_repr(&mut tb.rng);
        let mut f = r.emit();
        let case = i % 12;
        let mut tuser = false;
        let what = match case {
            0 => {
                f[24 + tb.rng.range(0, 1) as usize] ^= 1 << tb.rng.range(0, 7);
                "bad IPv4 checksum"
            }
            1 => {
                let port = loop {
                    let p = tb.rng.u32() as u16;
                    if p != 4791 {
                        break p;
                    }
                };
                f[36..38].copy_from_slice(&port.to_be_bytes());
                refill_icrc(&mut f);
                "wrong UDP destination port"
            }
            2 => {
                let cut = tb.rng.range(1, (f.len() - 54).min(70) as u64) as usize;
                f.truncate(f.len() - cut);
                "truncated frame"
            }
            3 => {
                tuser = true;
                "tuser (bad FCS)"
            }
            4 => {
                f[12..14].copy_from_slice(&[0x86, 0xdd]);
                "EtherType not IPv4"
            }
            5 => {
                // A well-formed RoCE frame with an opcode the NIC does not implement: RESYNC
                // or a reserved one right after the atomics.
                let op = *tb.rng.pick(&[0x15u8, 0x16, 0x17, 0x18, 0x19, 0x1A]);
                f = unsupported_frame(&mut tb.rng, op);
                "unsupported opcode"
            }
            6 => {
                let l = u16::from_be_bytes([f[38], f[39]]) + 4;
                f[38..40].copy_from_slice(&l.to_be_bytes());
                refill_icrc(&mut f);
                "UDP Length != Total Length - 20"
            }
            7 => {
                f[43] |= 1 + tb.rng.range(0, 14) as u8;
                refill_icrc(&mut f);
                "BTH TVer != 0"
            }
            8 => {
                f[20] |= 0x20; // More Fragments
                fix_ip_checksum(&mut f);
                refill_icrc(&mut f);
                "IPv4 fragment"
            }
            9 => {
                f[14] = 0x46; // IHL 6: options
                fix_ip_checksum(&mut f);
                refill_icrc(&mut f);
                "IPv4 header with options"
            }
            10 => {
                f[23] = 6; // TCP
                fix_ip_checksum(&mut f);
                "not UDP"
            }
            _ => {
                // Total Length past the largest frame (here: one more than the frame has,
                // which also makes it truncated), or wrapping the 16-bit end of frame.
                let l = *tb.rng.pick(&[5107u16, 5200, 65_522, 65_535]);
                f[16..18].copy_from_slice(&l.to_be_bytes());
                f[38..40].copy_from_slice(&(l.wrapping_sub(20)).to_be_bytes());
                fix_ip_checksum(&mut f);
                "IPv4 Total Length too large"
            }
        };
        send_bad(&mut tb, &f, tuser, "malformed", &format!("frame {i}: {what}"));
        let r = good_repr(&mut tb.rng);
        send_good(&mut tb, &r, 0, true, &format!("good frame after malformed frame {i} ({what})"));
    }
    tb.flush();
    assert_eq!(tb.accepted.len(), 400);
}

/// A SEND ONLY with `n` payload bytes relabelled (ICRC recomputed) as `op`, an opcode with
/// extension headers, for every `n` up to 8 past their length: the `n` bytes and the pad become
/// its extension headers and payload. With `n` >= the opcode's extension bytes it is a valid
/// frame of that opcode (the codec parses it; the descriptor must match that parse); with fewer,
/// the headers run past the frame (payload length < 0) and it is malformed. Each is followed by
/// a good frame. Returns (accepted, malformed) frames sent. An atomic opcode carries no
/// payload: `n` goes up to its extension headers' length only.
fn relabel_sweep(tb: &mut Tb, op: u8, ctx0: &str) -> (usize, usize) {
    let ext = ext_len_of(op);
    assert!(ext > 0, "{op:#04x} has no extension headers");
    let (mut good, mut bad) = (0, 0);
    let max = if matches!(op, ATOMIC_ACK | CMP_SWAP | FETCH_ADD) { ext } else { ext + 8 };
    for n in 0..=max {
        let mut s = codec::nic_style_repr(&mut tb.rng, SEND_ONLY);
        randomise_masked_roce(&mut tb.rng, &mut s);
        s.payload = tb.rng.bytes(n);
        let mut f = s.emit();
        f[42] = op;
        refill_icrc(&mut f);
        let ctx = format!("SEND ONLY with {n} bytes relabelled {op:#04x} ({ext} extension bytes, {ctx0})");
        match AnyPacket::parse(&f) {
            Ok(r) => {
                assert!(n >= ext, "{ctx}: the codec parses it");
                tb.send(&f, false, Expect::Good { repr: Box::new(r), frame: f.clone(), release: true }, &ctx);
                good += 1;
            }
            Err(e) => {
                assert!(n < ext, "{ctx}: the codec refuses it: {e}");
                send_bad(tb, &f, false, "malformed", &format!("{ctx}: {e}"));
                bad += 1;
            }
        }
        let r = good_repr(&mut tb.rng);
        send_good(tb, &r, 0, true, &format!("good frame after {ctx}"));
    }
    (good, bad)
}

#[test]
fn extension_headers_must_fit_in_the_frame() {
    let mut tb = Tb::new(0x2F1E_000A);
    let seed = tb.rng.0;
    let (mut good, mut bad) = (0, 0);
    for (k, op) in ACCEPTED.into_iter().enumerate() {
        let ext = ext_len_of(op);
        if ext == 0 || op == WRITE_ONLY_IMM {
            continue;
        }
        tb.p_idle = if k % 2 == 0 { 0 } else { 25 };
        let (g, b) = relabel_sweep(&mut tb, op, &format!("seed {seed:#x}"));
        good += g;
        bad += b;
    }
    tb.flush();
    // Seven opcodes with 4 extension bytes, three with 16 (`n` up to 8 past them); the
    // atomics (12, 28, 28 bytes) only with `n` = their length.
    assert_eq!((good, bad), (10 * 9 + 3, 7 * 4 + 3 * 16 + 12 + 28 + 28), "(accepted, malformed)");
}

/// RDMA WRITE ONLY WITH IMMEDIATE is the one opcode whose headers (44 + 20 + PadCnt bytes
/// after the Ethernet header) can reach 64 bytes or more: a frame whose RETH + ImmDt run past
/// Total Length (Total Length 44..60, or 64 with PadCnt 1..3) must be malformed, not accepted
/// with a wrapped `plen` (a 6-bit header-length compare got this wrong).
#[test]
fn write_only_with_immediate_headers_must_fit_in_the_frame() {
    let mut tb = Tb::new(0x2F1E_000B);
    let seed = tb.rng.0;
    let (good, bad) = relabel_sweep(&mut tb, WRITE_ONLY_IMM, &format!("seed {seed:#x}"));
    tb.flush();
    assert_eq!((good, bad), (9, 20), "(accepted, malformed)");
}

#[test]
fn overflow_when_buffer_or_descriptor_fifo_full() {
    let mut tb = Tb::new(0x2F1E_0006);
    for round in 0..6 {
        // Fill the buffer without releasing, frames back to back.
        let mut held = 0u64;
        loop {
            let r = good_repr(&mut tb.rng);
            let nb = r.buffer_len().div_ceil(64) as u64;
            if held + nb > BEATS {
                send_bad(&mut tb, &r.emit(), false, "overflow", &format!("round {round}: {nb} beats with {held} held"));
                // One-beat frames fill what is left, back to back; the next one overflows.
                loop {
                    let small = AnyPacket::random(&mut tb.rng, ACK);
                    let ctx = format!("round {round}: an ACK with {held} held");
                    if held == BEATS {
                        send_bad(&mut tb, &small.emit(), false, "overflow", &ctx);
                        break;
                    }
                    send_good(&mut tb, &small, 0, false, &ctx);
                    held += 1;
                }
                break;
            }
            send_good(&mut tb, &r, 0, false, &format!("round {round}: filling, {held} held"));
            held += nb;
        }
        tb.flush();
        // The descriptor FIFO full: a good frame that fits is an overflow too.
        tb.release(held);
        let r = good_repr(&mut tb.rng);
        tb.dut.set_bit(tb.p.desc_full, true);
        send_bad(&mut tb, &r.emit(), false, "overflow", &format!("round {round}: desc_full"));
        tb.flush();
        tb.dut.set_bit(tb.p.desc_full, false);
        // And once space is back, frames pass again.
        send_good(&mut tb, &r, 0, true, &format!("round {round}: after release"));
        tb.flush();
    }
}

#[test]
fn atomic_frames_become_descriptors() {
    // The atomics' headers end in the second beat (byte 66 or 82): operands from the last beat
    // itself, or (with Ethernet padding making a third beat) from a register.
    let mut tb = Tb::new(0x2F1E_000C);
    let seed = tb.rng.0;
    let mut n = 0;
    for i in 0..600 {
        tb.p_idle = if i % 4 < 2 { 0 } else { 30 };
        let op = *tb.rng.pick(&[ATOMIC_ACK, CMP_SWAP, FETCH_ADD]);
        let mut r = good_repr_of(&mut tb.rng, op, 0);
        if let AnyPacket::Atomic(a) = &mut r {
            let corner = match i % 9 {
                0 => Some(u64::MAX),
                1 => Some(0),
                2 => Some(0xA5u64 << (8 * (i / 9 % 8))),
                _ => None,
            };
            if let Some(v) = corner {
                if let Some(e) = a.atomic_eth.as_mut() {
                    e.swap_add = v;
                    e.compare = !v;
                    e.virt_addr = v & !7;
                }
                if let Some(o) = a.atomic_ack_eth.as_mut() {
                    o.orig_data = v;
                }
            }
        }
        let eth_pad = if i % 3 == 0 { tb.rng.range(1, 70) as usize } else { 0 };
        let ctx = format!("atomic {i} opcode {op:#04x} with {eth_pad} bytes of padding (seed {seed:#x})");
        send_good(&mut tb, &r, eth_pad, true, &ctx);
        n += 1;
        if i % 2 == 1 {
            let g = good_repr(&mut tb.rng);
            send_good(&mut tb, &g, 0, true, &format!("good frame after {ctx}"));
            n += 1;
        }
    }
    tb.flush();
    assert_eq!(tb.accepted.len(), n);
    for op in [ATOMIC_ACK, CMP_SWAP, FETCH_ADD] {
        assert!(tb.accepted.iter().any(|d| d.opcode == u64::from(op) && d.hlen == 54 + ext_len_of(op) as u64));
    }
}
