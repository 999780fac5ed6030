//! `RxIngress` in Verilator against frames from the reference codec.
//!
//! The block's verdict on a frame (a descriptor, or a drop counter pulse, with `cnt_rx_frame`)
//! comes exactly [`LATENCY`] cycles after the frame's `tlast` beat, while the next frames are
//! already coming in; the testbench streams frames and checks each verdict in the cycle it is
//! due (no pulse may come at any other cycle), reads accepted frames back through the buffer's
//! read port while later frames arrive, and releases their space as the RX engine would.
//!
//! - `valid_frames_become_descriptors`: RDMA WRITE ONLY/FIRST/MIDDLE/LAST (payload 0..=4096,
//!   every pad) and ACKNOWLEDGE frames with random addresses, TOS/TTL/ID, FECN/BECN (fields the
//!   ICRC masks), back to back or with idle cycles, each produce exactly one descriptor whose
//!   fields match the codec's parse (opcode, hlen, AckReq, plen, dest QP, PSN, RETH, AETH), whose
//!   `start` continues where the previous frame ended (mod 256) and `nbeats` covers Total Length;
//!   reading `nbeats` beats back through `buf_raddr`/`buf_rdata` gives the frame's bytes;
//!   `cnt_rx_frame` pulses once per frame and no error counter pulses.
//! - `back_to_back_frames_without_reading`: frames on consecutive cycles, nothing released until
//!   all are in; every descriptor and every stored frame is right.
//! - `ethernet_padding_is_ignored`: frames followed by 1..70 bytes of Ethernet padding (padding
//!   beats included) are accepted with the Total Length's beat count, and the next frame starts
//!   right after them in the buffer.
//! - `icrc_errors_are_counted_and_dropped`: one flipped bit anywhere the ICRC covers (payload,
//!   RETH, BTH, ICRC itself, pad) → `cnt_icrc`, no descriptor, and the buffer space is reused by
//!   the next frame, also when that frame follows on the next cycle (before the verdict).
//! - `malformed_frames_are_counted_and_dropped`: bad IPv4 checksum, wrong UDP port, truncated
//!   frame (`tlast` before Total Length), `tuser` = 1, not IPv4, unsupported opcode, UDP Length
//!   ≠ Total Length − 20, TVer ≠ 0, IPv4 fragment, IPv4 options, not UDP, Total Length past the
//!   largest frame → `cnt_malformed`, no descriptor.
//! - `overflow_when_buffer_or_descriptor_fifo_full`: with `rd_ptr` held the buffer fills and the
//!   frame that does not fit is counted in `cnt_overflow`; with `desc_full` a good frame is
//!   counted as overflow; once space is released, frames are accepted again.
mod harness;

use harness::codec;
use harness::{bytes_to_bits, Dut, Port, Rng};
use rnic_firmware_tests::wire::{icrc, Ipv4Packet, RocePacketRepr};
use rnic_hdl::records::RxDesc;
use rnic_hdl::rx_ingress::{RxIngress, LATENCY};
use rust_hdl::prelude::*;
use std::collections::VecDeque;

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
    Good { repr: Box<RocePacketRepr>, frame: Vec<u8>, release: bool },
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
            let bits: Bits<256> = bytes_to_bits(&d.get_wide(p.desc));
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
                if let Some(ns) = self.next_start {
                    assert_eq!(got.start, ns, "{ctx}: start (the previous frame ended at {ns})");
                }
                self.next_start = Some((got.start + got.nbeats) % 256);
                self.reads.push_back(ReadJob {
                    start: got.start,
                    nbeats: got.nbeats,
                    next: 0,
                    data: Vec::new(),
                    frame,
                    release,
                    ctx: ctx.clone(),
                });
                self.accepted.push(got);
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
        let reading = self.reads.front().map(|r| (r.start + r.next) % 256);
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
                codec::assert_frame_eq(&job.data[..job.frame.len()], &job.frame, &format!("{}: buffer contents", job.ctx));
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
                self.pending.push_back(Pending { due: self.cycle + LATENCY as u64, expect: expect.clone(), ctx: ctx.to_string() });
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
        self.rd_ptr = (self.rd_ptr + n) % 512;
        self.dut.set(self.p.rd_ptr, self.rd_ptr);
    }
}

const WRITE_FIRST: u8 = 0x06;
const WRITE_MIDDLE: u8 = 0x07;
const WRITE_LAST: u8 = 0x08;
const WRITE_ONLY: u8 = 0x0A;
const ACK: u8 = 0x11;
const SEND_FIRST: u8 = 0x00;
const SEND_MIDDLE: u8 = 0x01;
const SEND_LAST: u8 = 0x02;
const SEND_ONLY: u8 = 0x04;

/// A frame the ingress must accept, with random masked fields.
fn good_repr(rng: &mut Rng) -> RocePacketRepr {
    let op = *rng.pick(&[
        WRITE_FIRST, WRITE_MIDDLE, WRITE_LAST, WRITE_ONLY, ACK, SEND_FIRST, SEND_MIDDLE, SEND_LAST, SEND_ONLY,
    ]);
    let mut r = codec::nic_style_repr(rng, op);
    codec::add_ext_headers(rng, &mut r);
    r.ipv4.dscp = (rng.u32() & 63) as u8;
    r.ipv4.ecn = (rng.u32() & 3) as u8;
    r.ipv4.ttl = rng.u32() as u8;
    r.ipv4.ident = rng.u32() as u16;
    r.ipv4.dont_frag = rng.chance(1, 2);
    r.bth.fecn = rng.chance(1, 4);
    r.bth.becn = rng.chance(1, 4);
    let plen = match op {
        ACK => 0,
        WRITE_FIRST | WRITE_MIDDLE | SEND_FIRST | SEND_MIDDLE => *rng.pick(&[256usize, 512, 1024, 2048, 4096]),
        _ => match rng.range(0, 3) {
            0 => rng.range(0, 70) as usize,
            1 => rng.range(1, 4096) as usize,
            _ => 64 * rng.range(0, 64) as usize + *rng.pick(&[0usize, 2, 6, 10, 62]),
        }
        .min(4096),
    };
    r.payload = rng.bytes(plen);
    r
}

fn expected_desc(r: &RocePacketRepr, frame_len: usize, start: u64) -> RxDescView {
    let ext = r.present_ext_headers().len() as u64;
    let mut d = RxDescView {
        start,
        nbeats: frame_len.div_ceil(64) as u64,
        opcode: u64::from(r.bth.opcode.0),
        hlen: 54 + ext,
        ackreq: r.bth.ack_req,
        plen: r.payload.len() as u64,
        dest_qpn: u64::from(r.bth.dest_qp),
        psn: u64::from(r.bth.psn),
        reth_va: 0,
        reth_rkey: 0,
        reth_len: 0,
        aeth_syndrome: 0,
        aeth_msn: 0,
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
    d
}

/// Compares the fields the frame's opcode defines.
fn check_desc(got: &RxDescView, want: &RxDescView, ctx: &str) {
    let mut g = got.clone();
    if want.opcode != u64::from(WRITE_FIRST) && want.opcode != u64::from(WRITE_ONLY) {
        g.reth_va = 0;
        g.reth_rkey = 0;
        g.reth_len = 0;
    }
    if want.opcode != u64::from(ACK) {
        g.aeth_syndrome = 0;
        g.aeth_msn = 0;
    }
    assert_eq!(&g, want, "{ctx}: descriptor");
}

/// Sends a good frame (with `eth_pad` bytes of Ethernet padding); its descriptor and buffer
/// contents are checked when due, and its space released after the read-back.
fn send_good(tb: &mut Tb, r: &RocePacketRepr, eth_pad: usize, release: bool, ctx: &str) {
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
        let ctx = format!("frame {i} opcode {:#04x} plen {} (seed {seed:#x})", r.bth.opcode.0, r.payload.len());
        send_good(&mut tb, &r, 0, true, &ctx);
    }
    tb.flush();
    assert_eq!(tb.accepted.len(), 600);
}

#[test]
fn back_to_back_frames_without_reading() {
    // Frames arrive on consecutive cycles while the engine releases nothing until they are
    // all in: all fit (< 256 beats) and each descriptor is right.
    let mut tb = Tb::new(0x2F1E_0002);
    let mut frames = Vec::new();
    let mut total = 0;
    loop {
        let r = good_repr(&mut tb.rng);
        let nb = r.buffer_len().div_ceil(64);
        if total + nb > 256 {
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
            // Short frames: an ACK (62 bytes) or a small WRITE, padded past one beat.
            r = codec::nic_style_repr(&mut tb.rng, ACK);
            codec::add_ext_headers(&mut tb.rng, &mut r);
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
            0 if f.len() > 58 + 16 => tb.rng.range(54 + r.present_ext_headers().len() as u64, f.len() as u64 - 5) as usize,
            1 => f.len() - 1 - tb.rng.range(0, 3) as usize,
            2 => *tb.rng.pick(&[44usize, 45, 47, 48, 49, 50, 51, 52, 53]),
            3 if r.present_ext_headers().len() > 0 => 54 + tb.rng.range(0, r.present_ext_headers().len() as u64 - 1) as usize,
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
                // RDMA READ RESPONSE MIDDLE (BTH only): valid RoCE, but not an opcode this NIC
                // accepts yet.
                let mut s = codec::nic_style_repr(&mut tb.rng, 0x0E);
                let n = tb.rng.range(0, 300) as usize;
                s.payload = tb.rng.bytes(n);
                f = s.emit();
                "unsupported opcode (READ_RESPONSE_MIDDLE)"
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

#[test]
fn overflow_when_buffer_or_descriptor_fifo_full() {
    let mut tb = Tb::new(0x2F1E_0006);
    for round in 0..6 {
        // Fill the buffer without releasing, frames back to back.
        let mut held = 0u64;
        loop {
            let r = good_repr(&mut tb.rng);
            let nb = r.buffer_len().div_ceil(64) as u64;
            if held + nb > 256 {
                send_bad(&mut tb, &r.emit(), false, "overflow", &format!("round {round}: {nb} beats with {held} held"));
                // One-beat frames fill what is left, back to back; the next one overflows.
                loop {
                    let mut small = codec::nic_style_repr(&mut tb.rng, ACK);
                    codec::add_ext_headers(&mut tb.rng, &mut small);
                    let ctx = format!("round {round}: an ACK with {held} held");
                    if held == 256 {
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
