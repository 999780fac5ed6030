//! The RX ingress's test bench (`rx_ingress_tb.rs`): the DUT, the frames fed beat by beat, the
//! descriptors and packet-buffer writes captured, and the model of what it must accept.
#![allow(dead_code)]

use crate::harness::codec::{self, AnyPacket};
use crate::harness::{bytes_to_bits, Dut, Port, Rng};
use rnic_firmware_tests::wire::{icrc, Ipv4Packet, Opcode, RocePacketRepr};
use rnic_hdl::records::RxDesc;
use rnic_hdl::rx_ingress::{RxIngress, LATENCY};
use rust_hdl::prelude::*;
use std::collections::VecDeque;

/// Packet-buffer beats.
pub const BEATS: u64 = 1 << rnic_hdl::rx_ingress::LOG_BUFFER_BEATS;

pub struct Pins {
    pub tdata: Port,
    pub tkeep: Port,
    pub tlast: Port,
    pub tvalid: Port,
    pub tuser: Port,
    pub buf_raddr: Port,
    pub buf_rdata: Port,
    pub rd_ptr: Port,
    pub desc_full: Port,
    pub desc_write: Port,
    pub desc: Port,
    pub cnt_rx_frame: Port,
    pub cnt_malformed: Port,
    pub cnt_icrc: Port,
    pub cnt_overflow: Port,
}

/// What the testbench expects of a frame it sent.
#[derive(Debug, Clone)]
pub enum Expect {
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
pub struct Pending {
    pub due: u64,
    pub expect: Expect,
    pub ctx: String,
}

/// A read-back of an accepted frame through the buffer's read port, one beat per cycle.
pub struct ReadJob {
    pub start: u64,
    pub nbeats: u64,
    pub next: u64,
    pub data: Vec<u8>,
    pub frame: Vec<u8>,
    pub release: bool,
    pub ctx: String,
}

pub struct Tb {
    pub dut: Dut,
    pub p: Pins,
    pub rng: Rng,
    /// Idle cycles between beats, in percent.
    pub p_idle: u64,
    pub rd_ptr: u64,
    pub cycle: u64,
    pub pending: VecDeque<Pending>,
    pub reads: VecDeque<ReadJob>,
    /// Where the next accepted frame must start in the buffer (if known).
    pub next_start: Option<u64>,
    /// Descriptors of accepted frames, in order.
    pub accepted: Vec<RxDescView>,
    /// Verdicts checked so far.
    pub verdicts: u64,
}

/// What the block said in a cycle.
#[derive(Debug, Default, Clone)]
pub struct Verdict {
    pub desc: Option<RxDescView>,
    pub frame: bool,
    pub malformed: bool,
    pub icrc: bool,
    pub overflow: bool,
}

impl Verdict {
    pub fn any(&self) -> bool {
        self.desc.is_some() || self.frame || self.malformed || self.icrc || self.overflow
    }
}

/// The descriptor as numbers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RxDescView {
    pub start: u64,
    pub nbeats: u64,
    pub opcode: u64,
    pub hlen: u64,
    pub ackreq: bool,
    pub plen: u64,
    pub dest_qpn: u64,
    pub psn: u64,
    pub reth_va: u64,
    pub reth_rkey: u64,
    pub reth_len: u64,
    pub aeth_syndrome: u64,
    pub aeth_msn: u64,
    pub imm: u64,
    pub at_swap: u64,
    pub at_cmp: u64,
    pub ud: bool,
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
    pub fn new(seed: u64) -> Tb {
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
    pub fn observe(&mut self) -> Verdict {
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
    pub fn accept(&mut self, got: RxDescView, frame: Vec<u8>, release: bool, ctx: String) {
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
    pub fn check(&mut self, v: Verdict, pend: Pending) {
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
    pub fn step(&mut self) {
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

    pub fn idle(&mut self, n: usize) {
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
    pub fn send(&mut self, bytes: &[u8], tuser: bool, expect: Expect, ctx: &str) {
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
    pub fn flush(&mut self) {
        while !self.pending.is_empty() || !self.reads.is_empty() {
            self.idle(1);
        }
    }

    /// Frees `n` beats, as the RX engine does after consuming a packet.
    pub fn release(&mut self, n: u64) {
        self.rd_ptr = (self.rd_ptr + n) % (2 * BEATS);
        self.dut.set(self.p.rd_ptr, self.rd_ptr);
    }
}

pub const SEND_FIRST: u8 = 0x00;
pub const SEND_MIDDLE: u8 = 0x01;
pub const SEND_LAST: u8 = 0x02;
pub const SEND_LAST_IMM: u8 = 0x03;
pub const SEND_ONLY: u8 = 0x04;
pub const SEND_ONLY_IMM: u8 = 0x05;
pub const WRITE_FIRST: u8 = 0x06;
pub const WRITE_MIDDLE: u8 = 0x07;
pub const WRITE_LAST: u8 = 0x08;
pub const WRITE_LAST_IMM: u8 = 0x09;
pub const WRITE_ONLY: u8 = 0x0A;
pub const WRITE_ONLY_IMM: u8 = 0x0B;
pub const READ_REQUEST: u8 = 0x0C;
pub const READ_RESP_FIRST: u8 = 0x0D;
pub const READ_RESP_MIDDLE: u8 = 0x0E;
pub const READ_RESP_LAST: u8 = 0x0F;
pub const READ_RESP_ONLY: u8 = 0x10;
pub const ACK: u8 = 0x11;
pub const ATOMIC_ACK: u8 = 0x12;
pub const CMP_SWAP: u8 = 0x13;
pub const FETCH_ADD: u8 = 0x14;

/// Every opcode the ingress accepts: all RC opcodes 0x00..=0x14.
pub const ACCEPTED: [u8; 21] = [
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
pub const HAS_RETH: [u8; 4] = [WRITE_FIRST, WRITE_ONLY, WRITE_ONLY_IMM, READ_REQUEST];
pub const HAS_AETH: [u8; 5] = [READ_RESP_FIRST, READ_RESP_LAST, READ_RESP_ONLY, ACK, ATOMIC_ACK];
pub const HAS_IMM: [u8; 4] = [SEND_LAST_IMM, SEND_ONLY_IMM, WRITE_LAST_IMM, WRITE_ONLY_IMM];
pub const HAS_ATOMIC_ETH: [u8; 2] = [CMP_SWAP, FETCH_ADD];

/// Bytes of extension headers after the BTH for an accepted opcode.
pub fn ext_len_of(op: u8) -> usize {
    match op {
        ATOMIC_ACK => 12,
        CMP_SWAP | FETCH_ADD => 28,
        _ => Opcode(op).ext_headers().unwrap().len(),
    }
}

/// A payload length the opcode may carry: a whole MTU for FIRST/MIDDLE packets, none for a
/// READ request or an ACK, anything up to 4096 bytes otherwise.
pub fn random_plen(rng: &mut Rng, op: u8) -> usize {
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
pub fn randomise_masked(rng: &mut Rng, r: &mut AnyPacket) {
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

pub fn randomise_masked_roce(rng: &mut Rng, r: &mut RocePacketRepr) {
    let mut a = AnyPacket::Roce(r.clone());
    randomise_masked(rng, &mut a);
    *r = a.roce().unwrap().clone();
}

/// A frame with opcode `op` (one the ingress accepts) and `plen` payload bytes, with its
/// extension headers and random masked fields.
pub fn good_repr_of(rng: &mut Rng, op: u8, plen: usize) -> AnyPacket {
    let mut r = AnyPacket::random(rng, op);
    randomise_masked(rng, &mut r);
    r.set_payload(rng.bytes(plen));
    r
}

/// A frame the ingress must accept, with random masked fields.
pub fn good_repr(rng: &mut Rng) -> AnyPacket {
    let op = *rng.pick(&ACCEPTED);
    let plen = random_plen(rng, op);
    good_repr_of(rng, op, plen)
}

pub fn expected_desc(p: &AnyPacket, frame_len: usize, start: u64) -> RxDescView {
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
pub fn check_desc(got: &RxDescView, want: &RxDescView, ctx: &str) {
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
pub fn send_good(tb: &mut Tb, r: &AnyPacket, eth_pad: usize, release: bool, ctx: &str) {
    let frame = r.emit();
    let mut wire = frame.clone();
    wire.extend(tb.rng.bytes(eth_pad));
    tb.send(&wire, false, Expect::Good { repr: Box::new(r.clone()), frame, release }, ctx);
}

/// Sends `frame`, which must be dropped with exactly the named counter.
pub fn send_bad(tb: &mut Tb, frame: &[u8], tuser: bool, kind: &'static str, ctx: &str) {
    tb.send(frame, tuser, Expect::Drop(kind), ctx);
}

/// A UD SEND ONLY (0x64, or 0x65 with immediate) of `plen` payload bytes: the codec's RC SEND
/// ONLY frame whose payload starts with a DETH (random Q_Key, source QP) and the ImmDt, with
/// the opcode replaced and the ICRC recomputed. Expected: the descriptor of the RC SEND ONLY
/// it resembles (0x04 / 0x05) with `ud`, `hlen` 62 / 66, the DETH in `reth_va` (Q_Key bits
/// 63:32, reserved byte 31:24 = 0, source QP 23:0) and the ImmDt in `imm`.
pub fn send_ud(tb: &mut Tb, op: u8, plen: usize, ctx: &str) {
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

pub fn fix_ip_checksum(f: &mut [u8]) {
    Ipv4Packet::new_unchecked(&mut f[14..34]).fill_checksum();
}

pub fn refill_icrc(f: &mut [u8]) {
    let total = usize::from(u16::from_be_bytes([f[16], f[17]]));
    icrc::fill(&mut f[14..14 + total]).unwrap();
}

/// A frame with an opcode the ingress must refuse, with the extension headers the opcode
/// calls for (those the codec models) or otherwise plausible bytes after the BTH.
pub fn unsupported_frame(rng: &mut Rng, op: u8) -> Vec<u8> {
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

/// A SEND ONLY with `n` payload bytes relabelled (ICRC recomputed) as `op`, an opcode with
/// extension headers, for every `n` up to 8 past their length: the `n` bytes and the pad become
/// its extension headers and payload. With `n` >= the opcode's extension bytes it is a valid
/// frame of that opcode (the codec parses it; the descriptor must match that parse); with fewer,
/// the headers run past the frame (payload length < 0) and it is malformed. Each is followed by
/// a good frame. Returns (accepted, malformed) frames sent. An atomic opcode carries no
/// payload: `n` goes up to its extension headers' length only.
pub fn relabel_sweep(tb: &mut Tb, op: u8, ctx0: &str) -> (usize, usize) {
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
