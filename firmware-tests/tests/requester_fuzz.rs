//! Requester-side fuzz: a real rnic requester (NIC 0) against a real rnic responder (NIC 1)
//! whose answers are rewritten on the way back. The NICs have no wire: the test carries every
//! frame (`common::carried`), and on the responder's frames for the QP under test it lies —
//! READ RESPONSE / ATOMIC ACKNOWLEDGE / ACKNOWLEDGE opcodes swapped (FIRST, MIDDLE, LAST, ONLY,
//! atomic and plain ACK), PSNs moved behind, ahead of and beyond the last PSN the requester
//! used, payloads cut or lengthened, every AETH syndrome (ACK credits, RNR NAK with every timer
//! code, NAK codes 0-3 and the reserved codes and types), MSNs changed, frames duplicated,
//! reordered, lost, and ghost ACKs / responses for PSNs never sent. Every rewritten frame is
//! re-emitted by the firmware-tests wire codec with its lengths, checksum and ICRC recomputed,
//! so the NIC parses the lie. A frame whose lie makes it invalid where it arrives (wrong place
//! in the response sequence, wrong length, a PSN that is not the expected one) also has its
//! payload scrambled, so accepting it shows up as wrong bytes.
//!
//! Properties (IBTA Vol 1 9.7.5.1, 9.7.5.2, 9.9.2; ibv_poll_cq(3)):
//! - every work request completes exactly once, in posting order: with success, with an error
//!   status such as `IBV_WC_BAD_RESP_ERR` / `IBV_WC_RETRY_EXC_ERR` / a remote error, or
//!   flushed (`IBV_WC_WR_FLUSH_ERR`, everything after the first error); a QP that has not
//!   finished within the case's budget is moved to ERR and must then flush what is left;
//! - never `IBV_WC_SUCCESS` for a WR whose last request packet never left the NIC, nor with
//!   wrong data: a successful READ holds the responder's bytes, a successful atomic the
//!   original value the responder's word had;
//! - never a DMA write outside the WR's SGEs: the local buffer is guard bytes everywhere else,
//!   the source buffer is unchanged, and the host saw no DMA error;
//! - the NIC never hangs: after the case, MMIO is answered and a new QP pair on the same NICs
//!   does a WRITE, a READ and an atomic.
//!
//! Seeded: `RNIC_SEED=n` replays one seed, `RNIC_SEEDS=N` / `RNIC_SEED_START=s` run more
//! (`scripts/soak.sh`); each seed prints its shape and the lies told. Issue 12's item 4 exactly
//! is `forged_responses.rs`.
mod common;

use std::fmt;

use common::carried::{has_aeth, psn_le, serial_max, Carried, Carrier, Dir, Frame};
use common::pattern;
use common::seeds::Kind;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rnic::{
    AccessFlags, ConnectOptions, MemoryRegion, Mtu, QpAttr, QpAttrMask, QpState, RecvWr, RemoteBuffer, SendWr, Sge,
    WcOpcode, WcStatus, WorkCompletion, WrOpcode,
};
use rnic_contract::regs;
use rnic_sim::SimConfig;

/// Every local byte no SGE covers.
const GUARD: u8 = 0xEE;
const PSN_MASK: u32 = 0xFF_FFFF;
/// Seeds CI runs (each 0.1-0.5 s of wall time).
const CI_SEEDS: u64 = 60;

/// One work request of a case.
#[derive(Clone, Debug)]
struct Wr {
    kind: Kind,
    /// Message length (8 for atomics).
    len: usize,
    /// Gather (WRITE, SEND) or scatter (READ) entry lengths, summing to `len`.
    pieces: Vec<usize>,
    /// FETCH_AND_ADD's addend; CMP_AND_SWP's swap value.
    operand: u64,
    /// CMP_AND_SWP: compare with the expected word (true) or a value that misses (false).
    hit: bool,
}

impl Wr {
    fn is_atomic(&self) -> bool {
        self.kind.is_atomic()
    }

    /// PSNs the WR uses at path MTU `mtu`.
    fn psns(&self, mtu: usize) -> u32 {
        if self.is_atomic() {
            1
        } else {
            self.len.div_ceil(mtu).max(1) as u32
        }
    }

    /// Whether it consumes a receive WQE at the responder.
    fn takes_recv(&self) -> bool {
        self.kind.takes_recv()
    }
}

/// Every kind of lie the liar tells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lie {
    /// A READ RESPONSE / ATOMIC ACKNOWLEDGE / ACKNOWLEDGE gets another of these opcodes.
    Opcode,
    /// The PSN moves 1..=40 ahead.
    PsnAhead,
    /// The PSN of a fresh response moves 1..=8 behind (only as the one lie of a case: after
    /// other lies the requester may still expect that PSN).
    PsnBehind,
    /// The PSN moves past the last PSN the requester has used.
    PsnBeyond,
    /// The payload (or AtomicAckETH) loses 1.. bytes.
    Truncate,
    /// 1..=64 bytes are appended.
    Extend,
    /// Another AETH syndrome: ACK credits, RNR NAK (any timer code), NAK 0-3, reserved.
    Syndrome,
    /// Another MSN.
    Msn,
    /// Delivered 2 or 3 times.
    Duplicate,
    /// Held back 20..1500 cycles, so later frames overtake it.
    Reorder,
    /// Lost.
    Drop,
    /// Followed by an invented ACK, READ RESPONSE ONLY or ATOMIC ACKNOWLEDGE for a PSN the
    /// requester never sent (or long acknowledged).
    Ghost,
}

const ALL_LIES: [Lie; 12] = [
    Lie::Opcode,
    Lie::PsnAhead,
    Lie::PsnBehind,
    Lie::PsnBeyond,
    Lie::Truncate,
    Lie::Extend,
    Lie::Syndrome,
    Lie::Msn,
    Lie::Duplicate,
    Lie::Reorder,
    Lie::Drop,
    Lie::Ghost,
];

/// How often each lie is drawn (same order as [`ALL_LIES`]): the ones that can put wrong
/// bytes in a buffer or complete what was never sent weigh more.
const LIE_WEIGHTS: [u32; 12] = [4, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 3];

fn draw_lie(r: &mut ChaCha8Rng) -> Lie {
    let total: u32 = LIE_WEIGHTS.iter().sum();
    let mut x = r.gen_range(0..total);
    for (l, w) in ALL_LIES.iter().zip(LIE_WEIGHTS) {
        if x < w {
            return *l;
        }
        x -= w;
    }
    unreachable!()
}

/// Which of the responder's frames are rewritten.
#[derive(Clone, Debug)]
enum Plan {
    /// One lie, told on the first frame from number `at` (of the QP's responder frames) that it
    /// fits.
    Single { lie: Lie, at: usize },
    /// Each frame, with probability `rate`, gets one of `lies` that fits it, up to `max` lies.
    Storm { lies: Vec<Lie>, rate: f64, max: usize },
}

/// What a seed draws.
#[derive(Clone, Debug)]
struct Shape {
    seed: u64,
    mtu: Mtu,
    timeout: u8,
    retry_cnt: u8,
    rnr_retry: u8,
    max_rd_atomic: u8,
    wrs: Vec<Wr>,
    plan: Plan,
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "seed {} MTU {} timeout {} retry_cnt {} rnr_retry {} max_rd_atomic {} plan {:?} WRs [",
            self.seed,
            self.mtu.bytes(),
            self.timeout,
            self.retry_cnt,
            self.rnr_retry,
            self.max_rd_atomic,
            self.plan
        )?;
        for (i, w) in self.wrs.iter().enumerate() {
            write!(f, "{}{:?} {} B {:?}", if i > 0 { ", " } else { "" }, w.kind, w.len, w.pieces)?;
        }
        write!(f, "]")
    }
}

/// A length in 1..=`max`: log-uniform, or next to a multiple of the MTU.
fn draw_len(r: &mut ChaCha8Rng, mtu: usize, max: usize) -> usize {
    if r.gen_bool(0.3) {
        let k = r.gen_range(1..=(max / mtu).max(1));
        (k * mtu).saturating_add_signed(r.gen_range(-1..=1)).clamp(1, max)
    } else {
        let e = r.gen_range(0.0..(max as f64).log2());
        (2f64.powf(e) as usize).clamp(1, max)
    }
}

/// `len` split into `n` non-empty pieces (fewer if `len < n`).
fn split(r: &mut ChaCha8Rng, len: usize, n: usize) -> Vec<usize> {
    let n = n.min(len).max(1);
    let mut cuts: Vec<usize> = (0..n - 1).map(|_| r.gen_range(1..len)).collect();
    cuts.sort_unstable();
    cuts.dedup();
    let mut out = Vec::new();
    let mut at = 0;
    for c in cuts.into_iter().chain([len]) {
        out.push(c - at);
        at = c;
    }
    out
}

fn shape(seed: u64) -> Shape {
    let mut r = ChaCha8Rng::seed_from_u64(seed ^ 0x5EED_F022);
    let mtu = [Mtu::Mtu256, Mtu::Mtu512, Mtu::Mtu1024, Mtu::Mtu2048, Mtu::Mtu4096][r.gen_range(0..5)];
    let m = mtu.bytes() as usize;
    let max = (4 * m + 1).min(12 * 1024);
    let n = r.gen_range(1..=8);
    let kinds = [
        Kind::Write,
        Kind::WriteImm,
        Kind::Send,
        Kind::SendImm,
        Kind::Read,
        Kind::Read,
        Kind::Read,
        Kind::FetchAdd,
        Kind::CmpSwap,
    ];
    let wrs: Vec<Wr> = (0..n)
        .map(|_| {
            let kind = kinds[r.gen_range(0..kinds.len())];
            // Mostly up to 4 packets; sometimes a long message (up to 64 KiB: 256 packets at
            // MTU 256), so that lies can arrive while it is still leaving.
            let max = if r.gen_bool(0.15) { 64 * 1024 } else { max };
            let len = if matches!(kind, Kind::FetchAdd | Kind::CmpSwap) { 8 } else { draw_len(&mut r, m, max) };
            let pieces = if len == 8 && matches!(kind, Kind::FetchAdd | Kind::CmpSwap) {
                vec![8]
            } else {
                let k = r.gen_range(1..=3);
                split(&mut r, len, k)
            };
            Wr { kind, len, pieces, operand: r.gen(), hit: r.gen_bool(0.7) }
        })
        .collect();
    let est: usize = wrs
        .iter()
        .map(|w| match w.kind {
            Kind::Read => w.psns(m) as usize,
            Kind::FetchAdd | Kind::CmpSwap => 1,
            _ => 1 + w.psns(m) as usize / 16,
        })
        .sum();
    let plan = if r.gen_bool(0.5) {
        Plan::Single { lie: draw_lie(&mut r), at: r.gen_range(0..est) }
    } else {
        let mut lies: Vec<Lie> =
            (0..r.gen_range(1..=5)).map(|_| draw_lie(&mut r)).filter(|&l| l != Lie::PsnBehind).collect();
        lies.dedup();
        if lies.is_empty() {
            lies.push(Lie::Opcode);
        }
        Plan::Storm { lies, rate: [0.05, 0.15, 0.3][r.gen_range(0..3)], max: r.gen_range(1..=6) }
    };
    Shape {
        seed,
        mtu,
        timeout: r.gen_range(2..=4),
        retry_cnt: r.gen_range(1..=3),
        rnr_retry: r.gen_range(0..=2),
        max_rd_atomic: r.gen_range(1..=4),
        wrs,
        plan,
    }
}

/// The carrier that lies: it rewrites the responder's frames to QP `qpn_a` (the requester's)
/// by `plan`, and watches the requester's frames to QP `qpn_b` to know which PSNs it used.
struct Liar {
    rng: ChaCha8Rng,
    qpn_a: u32,
    qpn_b: u32,
    mtu: usize,
    plan: Plan,
    /// Lies are told only while on.
    on: bool,
    /// Responder frames to `qpn_a` seen.
    seen: usize,
    /// Lies told (for the report).
    told: Vec<String>,
    /// Highest PSN of a request packet the requester sent, and the highest PSN it has used
    /// (a READ REQUEST uses the PSNs of all its responses).
    a_req_max: Option<u32>,
    a_end: Option<u32>,
    /// Highest PSN among the responder's frames to `qpn_a` so far.
    b_max: Option<u32>,
    /// The requester has sent a request packet again (a resend or a resumed READ): from then
    /// on a response's place in its sequence is ambiguous (a resumed READ starts with FIRST
    /// in the middle of the original one), so opcode lies are no longer told.
    rewound: bool,
    /// Frames held back: (release cycle, bytes).
    held: Vec<(u64, Vec<u8>)>,
    now: u64,
}

impl Liar {
    fn new(seed: u64, qpn_a: u32, qpn_b: u32, mtu: usize, plan: Plan) -> Self {
        Liar {
            rng: ChaCha8Rng::seed_from_u64(seed ^ 0x11A8),
            qpn_a,
            qpn_b,
            mtu,
            plan,
            on: true,
            seen: 0,
            told: Vec::new(),
            a_req_max: None,
            a_end: None,
            b_max: None,
            rewound: false,
            held: Vec::new(),
            now: 0,
        }
    }

    fn lies_done(&self) -> usize {
        self.told.len()
    }

    /// Replaces every payload byte by a different one.
    fn scramble(&mut self, f: &mut Frame) {
        for b in &mut f.body {
            *b ^= self.rng.gen_range(1..=255u8);
        }
    }

    /// A PSN the requester has never used.
    fn beyond(&mut self) -> Option<u32> {
        self.a_end.map(|e| (e + 1 + self.rng.gen_range(0..64)) & PSN_MASK)
    }

    /// Tells `lie` about `f` (`fresh`: its PSN is past every earlier responder frame's); `None`
    /// if the lie does not fit this frame.
    fn tell(&mut self, lie: Lie, mut f: Frame, fresh: bool) -> Option<Vec<Vec<u8>>> {
        let op = f.opcode();
        let what = format!("frame {} ({:#04x} PSN {:#x})", self.seen - 1, op, f.psn());
        let out = match lie {
            Lie::Opcode => {
                // Only where the frame's place in the sequence is certain (see `rewound`).
                if !fresh || self.rewound {
                    return None;
                }
                let choices: &[u8] = match op {
                    0x0D..=0x10 => &[0x0D, 0x0E, 0x0F, 0x10, 0x12],
                    0x12 => &[0x0D, 0x0E, 0x0F, 0x10, 0x11],
                    0x11 => &[0x0D, 0x0E, 0x0F, 0x10],
                    _ => return None,
                };
                let to = loop {
                    let c = choices[self.rng.gen_range(0..choices.len())];
                    if c != op {
                        break c;
                    }
                };
                if to == 0x12 {
                    f.body.resize(8, 0);
                }
                if to == 0x11 {
                    f.body.clear();
                }
                f.set_opcode(to);
                self.scramble(&mut f);
                self.told.push(format!("{what}: opcode -> {to:#04x}"));
                vec![f.emit()]
            }
            Lie::PsnAhead | Lie::PsnBehind => {
                if !f.body.is_empty() && !fresh {
                    return None;
                }
                if lie == Lie::PsnBehind && (f.body.is_empty() || !fresh) {
                    return None;
                }
                let d = if lie == Lie::PsnAhead {
                    self.rng.gen_range(1..=40u32)
                } else {
                    PSN_MASK + 1 - self.rng.gen_range(1..=8u32)
                };
                f.hdr.bth.psn = (f.psn() + d) & PSN_MASK;
                self.scramble(&mut f);
                self.told.push(format!("{what}: PSN -> {:#x}", f.psn()));
                vec![f.emit()]
            }
            Lie::PsnBeyond => {
                f.hdr.bth.psn = self.beyond()?;
                self.scramble(&mut f);
                self.told.push(format!("{what}: PSN -> {:#x} (beyond)", f.psn()));
                vec![f.emit()]
            }
            Lie::Truncate => {
                if f.body.is_empty() {
                    return None;
                }
                let n = self.rng.gen_range(1..=f.body.len());
                f.body.truncate(f.body.len() - n);
                self.scramble(&mut f);
                self.told.push(format!("{what}: {n} bytes cut"));
                vec![f.emit()]
            }
            Lie::Extend => {
                let n = self.rng.gen_range(1..=64);
                self.scramble(&mut f);
                let extra: Vec<u8> = (0..n).map(|_| self.rng.gen()).collect();
                f.body.extend(extra);
                self.told.push(format!("{what}: {n} bytes added"));
                vec![f.emit()]
            }
            Lie::Syndrome => {
                let (_, msn) = f.aeth?;
                let s = match self.rng.gen_range(0..5) {
                    0 => self.rng.gen_range(0x00..=0x1Fu8),
                    1 => 0x20 | self.rng.gen_range(0..32u8),
                    2 => 0x60 | self.rng.gen_range(0..4u8),
                    3 => self.rng.gen_range(0x64..=0x7Fu8),
                    _ => {
                        [self.rng.gen_range(0x40..=0x5Fu8), self.rng.gen_range(0x80..=0xFFu8)][self.rng.gen_range(0..2)]
                    }
                };
                f.aeth = Some((s, msn));
                self.told.push(format!("{what}: syndrome -> {s:#04x}"));
                vec![f.emit()]
            }
            Lie::Msn => {
                let (s, msn) = f.aeth?;
                let m = if self.rng.gen_bool(0.5) {
                    (msn + self.rng.gen_range(1..=3)) & PSN_MASK
                } else {
                    self.rng.gen_range(0..=PSN_MASK)
                };
                f.aeth = Some((s, m));
                self.told.push(format!("{what}: MSN {msn:#x} -> {m:#x}"));
                vec![f.emit()]
            }
            Lie::Duplicate => {
                let k = self.rng.gen_range(2..=3);
                self.told.push(format!("{what}: delivered {k} times"));
                vec![f.emit(); k]
            }
            Lie::Reorder => {
                let d = self.rng.gen_range(20..1500);
                self.told.push(format!("{what}: held {d} cycles"));
                self.held.push((self.now + d, f.emit()));
                vec![]
            }
            Lie::Drop => {
                self.told.push(format!("{what}: lost"));
                vec![]
            }
            Lie::Ghost => {
                let mut g = f.clone();
                let psn = match self.rng.gen_range(0..3) {
                    0 => self.beyond()?,
                    1 => (self.a_end? + 0x40_0000) & PSN_MASK,
                    _ => (f.psn() + PSN_MASK + 1 - self.rng.gen_range(1..=100)) & PSN_MASK,
                };
                let kind = self.rng.gen_range(0..3);
                let behind = !psn_le(self.a_end?.wrapping_add(1) & PSN_MASK, psn) || psn_le(psn, f.psn());
                match kind {
                    0 => {
                        g.set_opcode(0x11);
                        g.body.clear();
                    }
                    // Invented responses are always for PSNs never used: a response the
                    // requester could be waiting for would be an undetectable lie.
                    1 if !behind => {
                        g.set_opcode(0x10);
                        g.body = (0..self.rng.gen_range(1..=64)).map(|_| self.rng.gen()).collect();
                    }
                    2 if !behind => {
                        g.set_opcode(0x12);
                        g.body = (0..8).map(|_| self.rng.gen()).collect();
                    }
                    _ => {
                        g.set_opcode(0x11);
                        g.body.clear();
                    }
                }
                g.hdr.bth.psn = psn;
                g.aeth = Some((
                    if self.rng.gen_bool(0.5) { 0x1F } else { self.rng.gen_range(0..0x20) },
                    self.rng.gen_range(0..=PSN_MASK),
                ));
                self.told.push(format!("{what}: then a ghost {:#04x} PSN {psn:#x}", g.opcode()));
                vec![f.emit(), g.emit()]
            }
        };
        Some(out)
    }
}

impl Liar {
    /// A ghost ACK while a message is still leaving: on a FIRST or MIDDLE request packet of
    /// the QP (PSN `p`), an ACK for PSN `p + 1..=32` (packets not yet sent) is sent back at
    /// once, built from the request by swapping its addresses. Told when the plan has
    /// [`Lie::Ghost`] (a single lie: on the first such packet from number `at` on).
    fn maybe_ghost_mid_message(&mut self, req: &Frame) {
        if !self.on {
            return;
        }
        let go = match &self.plan {
            Plan::Single { lie: Lie::Ghost, at } => self.told.is_empty() && self.seen >= *at,
            Plan::Storm { lies, rate, max } => {
                lies.contains(&Lie::Ghost) && self.told.len() < *max && self.rng.gen_bool(*rate)
            }
            _ => false,
        };
        if !go {
            return;
        }
        let mut g = req.clone();
        std::mem::swap(&mut g.hdr.eth.src_addr, &mut g.hdr.eth.dst_addr);
        std::mem::swap(&mut g.hdr.ipv4.src_addr, &mut g.hdr.ipv4.dst_addr);
        g.hdr.udp.src_port = 0xC000 | (self.qpn_b as u16 & 0x3FFF);
        g.hdr.bth.dest_qp = self.qpn_a;
        g.hdr.bth.ack_req = false;
        g.set_opcode(0x11);
        g.body.clear();
        g.hdr.bth.psn = (req.psn() + self.rng.gen_range(1..=32)) & PSN_MASK;
        g.aeth = Some((0x1F, self.rng.gen_range(0..=PSN_MASK)));
        self.told.push(format!(
            "request {:#04x} PSN {:#x}: a ghost ACK for PSN {:#x}, not yet sent",
            req.opcode(),
            req.psn(),
            g.psn()
        ));
        self.held.push((self.now, g.emit()));
    }
}

impl Carrier for Liar {
    fn carry(&mut self, dir: Dir, frame: Vec<u8>) -> Vec<Vec<u8>> {
        let Some(f) = Frame::parse(&frame) else {
            return vec![frame];
        };
        if dir == 0 {
            if f.dest_qp() == self.qpn_b {
                let op = f.opcode();
                if op <= 0x14 && !has_aeth(op) && op != 0x0E {
                    if self.a_end.is_some_and(|e| psn_le(f.psn(), e)) {
                        self.rewound = true;
                    }
                    self.a_req_max = serial_max(self.a_req_max, f.psn());
                    let n = if op == 0x0C {
                        let len = u32::from_be_bytes(f.body[12..16].try_into().unwrap()) as usize;
                        len.div_ceil(self.mtu).max(1) as u32
                    } else {
                        1
                    };
                    self.a_end = serial_max(self.a_end, (f.psn() + n - 1) & PSN_MASK);
                }
            }
            if f.dest_qp() == self.qpn_b && matches!(f.opcode(), 0x00 | 0x01 | 0x06 | 0x07) {
                self.maybe_ghost_mid_message(&f);
            }
            return vec![frame];
        }
        if f.dest_qp() != self.qpn_a || !self.on {
            return vec![frame];
        }
        let fresh = self.b_max.is_none_or(|m| !psn_le(f.psn(), m));
        self.b_max = serial_max(self.b_max, f.psn());
        self.seen += 1;
        let idx = self.seen - 1;
        match self.plan.clone() {
            Plan::Single { lie, at } => {
                if self.told.is_empty() && idx >= at {
                    if let Some(out) = self.tell(lie, f, fresh) {
                        return out;
                    }
                }
            }
            Plan::Storm { lies, rate, max } => {
                if self.told.len() < max && self.rng.gen_bool(rate) {
                    for _ in 0..4 {
                        let lie = lies[self.rng.gen_range(0..lies.len())];
                        if let Some(out) = self.tell(lie, f.clone(), fresh) {
                            return out;
                        }
                    }
                }
            }
        }
        vec![frame]
    }

    fn release(&mut self, now: u64) -> Vec<(Dir, Vec<u8>)> {
        self.now = now;
        let (due, keep): (Vec<_>, Vec<_>) = self.held.drain(..).partition(|(t, _)| *t <= now);
        self.held = keep;
        due.into_iter().map(|(_, d)| (1, d)).collect()
    }
}

/// Where a case's WRs live: offsets of each WR's SGEs in the local (`loc`) or source (`src`)
/// buffer, and of its target in the responder's memory.
struct Layout {
    /// Per WR: (offset, length) of each SGE, in `src` for WRITE/SEND and in `loc` for READ and
    /// atomics.
    sges: Vec<Vec<(usize, usize)>>,
    /// Per WR: offset of its remote target in `bmem` (READ source, WRITE target, atomic word).
    remote: Vec<usize>,
    src_len: usize,
    loc_len: usize,
    bmem_len: usize,
    /// Offset of the one atomic word in `bmem` (8-byte aligned).
    word: usize,
    /// Offset and length of the READ source region in `bmem`.
    rsrc: (usize, usize),
}

fn layout(s: &Shape) -> Layout {
    let (mut src_at, mut loc_at) = (16usize, 64usize);
    let mut rsrc_len = 0usize;
    let mut wdst_len = 0usize;
    let (mut sges, mut remote) = (Vec::new(), Vec::new());
    for w in &s.wrs {
        let mut list = Vec::new();
        match w.kind {
            Kind::Read => {
                for (i, &p) in w.pieces.iter().enumerate() {
                    loc_at += 1 + (i * 7 + w.len) % 13;
                    list.push((loc_at, p));
                    loc_at += p;
                }
                loc_at += 64;
                remote.push(rsrc_len);
                rsrc_len += w.len + 5;
            }
            Kind::FetchAdd | Kind::CmpSwap => {
                loc_at = loc_at.next_multiple_of(8) + 16;
                list.push((loc_at, 8));
                loc_at += 8 + 16;
                remote.push(usize::MAX);
            }
            _ => {
                for &p in &w.pieces {
                    list.push((src_at, p));
                    src_at += p + 3;
                }
                remote.push(wdst_len);
                wdst_len += w.len + 7;
            }
        }
        sges.push(list);
    }
    // bmem: [READ source][WRITE targets][word]
    let wdst = rsrc_len.next_multiple_of(64);
    for (w, r) in s.wrs.iter().zip(remote.iter_mut()) {
        if !matches!(w.kind, Kind::Read) && *r != usize::MAX {
            *r += wdst;
        }
    }
    let word = (wdst + wdst_len).next_multiple_of(64);
    for r in remote.iter_mut() {
        if *r == usize::MAX {
            *r = word;
        }
    }
    Layout { sges, remote, src_len: src_at + 16, loc_len: loc_at + 64, bmem_len: word + 64, word, rsrc: (0, rsrc_len) }
}

/// The responder word's initial value.
const WORD_INIT: u64 = 0x0123_4567_89AB_CDEF;

/// The original value atomic `i` of `wrs` returns if every atomic before it executed once, in
/// order, and the compare of a CMP_AND_SWP with `hit` false misses; also the compare value to
/// post for each atomic.
fn atomic_originals(wrs: &[Wr]) -> Vec<(u64, u64)> {
    let mut v = WORD_INIT;
    wrs.iter()
        .map(|w| match w.kind {
            Kind::FetchAdd => {
                let o = v;
                v = v.wrapping_add(w.operand);
                (o, 0)
            }
            Kind::CmpSwap => {
                let o = v;
                let cmp = if w.hit { v } else { !v };
                if w.hit {
                    v = w.operand;
                }
                (o, cmp)
            }
            _ => (0, 0),
        })
        .collect()
}

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

fn sge_list<'a>(mr: &'a MemoryRegion<'_>, list: &[(usize, usize)]) -> Vec<Sge<'a>> {
    list.iter().map(|&(o, l)| mr.sge(o..o + l).unwrap()).collect()
}

/// Builds WR `i` of the shape.
fn build_wr<'a>(
    s: &Shape,
    lay: &Layout,
    i: usize,
    src: &'a MemoryRegion<'_>,
    loc: &'a MemoryRegion<'_>,
    rb: &RemoteBuffer,
    cmp: u64,
) -> SendWr<'a> {
    let w = &s.wrs[i];
    let id = i as u64 + 1;
    let remote = rb.at(lay.remote[i] as u64);
    let wr = match w.kind {
        Kind::Write | Kind::WriteImm => {
            let g = sge_list(src, &lay.sges[i]);
            let wr = SendWr::rdma_write(id, g[0], remote).with_sg_list(&g).unwrap();
            if w.kind == Kind::WriteImm {
                wr.with_opcode(WrOpcode::RdmaWriteWithImm).with_imm(i as u32 * 0x01010101)
            } else {
                wr
            }
        }
        Kind::Send | Kind::SendImm => {
            let g = sge_list(src, &lay.sges[i]);
            let wr = SendWr::send(id, g[0]).with_sg_list(&g).unwrap();
            if w.kind == Kind::SendImm {
                wr.with_opcode(WrOpcode::SendWithImm).with_imm(0xA5A5_0000 | i as u32)
            } else {
                wr
            }
        }
        Kind::Read => {
            let g = sge_list(loc, &lay.sges[i]);
            SendWr::rdma_read(id, g[0], remote).with_sg_list(&g).unwrap()
        }
        Kind::FetchAdd => SendWr::atomic_fetch_and_add(id, sge_list(loc, &lay.sges[i])[0], remote, w.operand),
        Kind::CmpSwap => SendWr::atomic_cmp_and_swp(id, sge_list(loc, &lay.sges[i])[0], remote, cmp, w.operand),
    };
    wr.signaled(true)
}

/// Runs one seed; panics (with the shape, the lies told and both NICs' counters) on a broken
/// property; returns a one-line summary.
fn fuzz_case(seed: u64) -> String {
    let s = shape(seed);
    let lay = layout(&s);
    let m = s.mtu.bytes() as usize;
    let h = Carried::new(SimConfig::default());
    let mut src = pattern(seed, lay.src_len);
    let src_copy = src.clone();
    let mut loc = vec![GUARD; lay.loc_len];
    let mut chk = vec![GUARD; 8192];
    let mut bmem = vec![0u8; lay.bmem_len];
    bmem[lay.rsrc.0..lay.rsrc.0 + lay.rsrc.1].copy_from_slice(&pattern(seed ^ 0x77, lay.rsrc.1));
    bmem[lay.word..lay.word + 8].copy_from_slice(&WORD_INIT.to_le_bytes());
    bmem[lay.word + 8..lay.word + 16].copy_from_slice(&7u64.to_le_bytes());
    let bmem_copy = bmem.clone();
    let recv_len: usize = s.wrs.iter().filter(|w| w.takes_recv()).map(|w| w.len.max(1) + 8).sum::<usize>() + 8;
    let mut brecv = vec![0u8; recv_len];
    let dma_errors0 = h.world.borrow().stats().nics[0].dma.errors;
    let origs = atomic_originals(&s.wrs);
    let ctx = |msg: String, liar: &Liar, h: &Carried| {
        format!("{msg}\n  shape: {s}\n  lies told: {:?}\n{}", liar.told, h.diag())
    };

    let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
    let loc_mr = h.pa.register(&mut loc, AccessFlags::LOCAL_WRITE).unwrap();
    let chk_mr = h.pa.register(&mut chk, AccessFlags::LOCAL_WRITE).unwrap();
    let all =
        AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_READ | AccessFlags::REMOTE_ATOMIC;
    let bmem_mr = h.pb.register(&mut bmem, all).unwrap();
    let brecv_mr = h.pb.register(&mut brecv, AccessFlags::LOCAL_WRITE).unwrap();

    let mut qa = h.pa.create_qp(&h.ca).set_max_send_wr(16).set_max_send_sge(4).set_sq_sig_all(true).build().unwrap();
    let mut qb = h.pb.create_qp(&h.cb).set_max_send_wr(16).set_max_recv_wr(16).build().unwrap();
    let o = ConnectOptions {
        path_mtu: s.mtu,
        access: AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_READ | AccessFlags::REMOTE_ATOMIC,
        timeout: s.timeout,
        retry_cnt: s.retry_cnt,
        rnr_retry: s.rnr_retry,
        min_rnr_timer: 1,
        max_rd_atomic: s.max_rd_atomic,
        max_dest_rd_atomic: 16,
    };
    let (ea, eb) = (qa.endpoint().unwrap(), qb.endpoint().unwrap().with_buffer(&bmem_mr));
    qa.connect_with(&eb, &o).unwrap();
    qb.connect_with(&ea, &o).unwrap();
    let rb = eb.buffer.unwrap();
    let first_psn = qa.local_psn();
    let mut liar = Liar::new(seed, qa.qp_num(), qb.qp_num(), m, s.plan.clone());

    // Receives for the WRs that take one, in order.
    let mut at = 0;
    for (i, w) in s.wrs.iter().enumerate().filter(|(_, w)| w.takes_recv()) {
        let l = w.len.max(1) + 8;
        qb.post_recv_one(RecvWr::new(100 + i as u64, brecv_mr.sge(at..at + l).unwrap())).unwrap();
        at += l;
    }
    let wrs: Vec<SendWr<'_>> =
        (0..s.wrs.len()).map(|i| build_wr(&s, &lay, i, &src_mr, &loc_mr, &rb, origs[i].1)).collect();
    qa.post_send(&wrs).unwrap();

    // Run until every WR completed, or the budget is spent; then ERR must flush the rest.
    let n = s.wrs.len();
    let tmo = 1024u64 << s.timeout;
    let budget = (60_000 + n as u64 * 3 * tmo * (u64::from(s.retry_cnt) + 1)).min(300_000);
    let mut got: Vec<(WorkCompletion, Option<u32>)> = Vec::new();
    let t0 = h.now();
    while got.len() < n && h.now() - t0 < budget {
        for w in h.poll(&h.ca, n - got.len(), 256, &mut liar) {
            got.push((w, liar.a_req_max));
        }
    }
    let moved_to_err = got.len() < n;
    if moved_to_err {
        qa.modify(&QpAttr { qp_state: QpState::Err, ..QpAttr::default() }, QpAttrMask::STATE).unwrap();
        let t1 = h.now();
        while got.len() < n && h.now() - t1 < 100_000 {
            for w in h.poll(&h.ca, n - got.len(), 256, &mut liar) {
                got.push((w, liar.a_req_max));
            }
        }
        if got.len() < n {
            panic!(
                "{}",
                ctx(format!("HANG: {} of {n} WRs completed within {budget} cycles, and the QP moved to ERR flushed no more within 100000: {:?}", got.len(), got.iter().map(|g| g.0).collect::<Vec<_>>()), &liar, &h)
            );
        }
    }
    // Nothing more may come.
    h.run(4_000, &mut liar);
    let extra = h.poll(&h.ca, 8, 0, &mut liar);
    if !extra.is_empty() {
        panic!(
            "{}",
            ctx(
                format!(
                    "completions beyond one per WR: {extra:?} after {:?}",
                    got.iter().map(|g| g.0).collect::<Vec<_>>()
                ),
                &liar,
                &h
            )
        );
    }

    // Every WR once, in order; after the first error only flushes.
    let ids: Vec<u64> = got.iter().map(|g| g.0.wr_id).collect();
    if ids != (1..=n as u64).collect::<Vec<_>>() {
        panic!("{}", ctx(format!("completions not one per WR in posting order: {ids:?}"), &liar, &h));
    }
    let loc_now = loc_mr.to_vec();
    let mut first_err: Option<usize> = None;
    let mut psn = first_psn;
    for (i, (wc, a_req)) in got.iter().enumerate() {
        let w = &s.wrs[i];
        let last_req_psn = match w.kind {
            Kind::Read => psn,
            _ => (psn + w.psns(m) - 1) & PSN_MASK,
        };
        psn = (psn + w.psns(m)) & PSN_MASK;
        if let Some(e) = first_err {
            if wc.status != WcStatus::WrFlushErr {
                panic!(
                    "{}",
                    ctx(
                        format!(
                            "WR {} completed {:?} after WR {} failed: only flushes may follow",
                            i + 1,
                            wc.status,
                            e + 1
                        ),
                        &liar,
                        &h
                    )
                );
            }
            continue;
        }
        if wc.status != WcStatus::Success {
            if !allowed_error(wc.status) {
                panic!(
                    "{}",
                    ctx(format!("WR {} ({:?}) completed with {:?}: {wc:?}", i + 1, w.kind, wc.status), &liar, &h)
                );
            }
            first_err = Some(i);
            continue;
        }
        // Success: the request left the NIC, the opcode and length are right, the data true.
        if !a_req.is_some_and(|m| psn_le(last_req_psn, m)) {
            panic!(
                "{}",
                ctx(format!("WR {} ({:?}, last request PSN {last_req_psn:#x}) completed SUCCESS but the requester had sent only up to PSN {a_req:x?}", i + 1, w.kind), &liar, &h)
            );
        }
        let (op, len) = match w.kind {
            Kind::Write | Kind::WriteImm => (WcOpcode::RdmaWrite, None),
            Kind::Send | Kind::SendImm => (WcOpcode::Send, None),
            Kind::Read => (WcOpcode::RdmaRead, Some(w.len as u32)),
            Kind::FetchAdd => (WcOpcode::FetchAdd, Some(8)),
            Kind::CmpSwap => (WcOpcode::CompSwap, Some(8)),
        };
        if wc.opcode != op || len.is_some_and(|l| l != wc.byte_len) {
            panic!("{}", ctx(format!("WR {} ({:?}, {} B) completed {wc:?}", i + 1, w.kind, w.len), &liar, &h));
        }
        match w.kind {
            Kind::Read => {
                let mut at = lay.remote[i];
                for &(o, l) in &lay.sges[i] {
                    if loc_now[o..o + l] != bmem_copy[at..at + l] {
                        let d = common::first_difference(&loc_now[o..o + l], &bmem_copy[at..at + l]).unwrap();
                        panic!(
                            "{}",
                            ctx(
                                format!(
                                    "WR {} (READ {} B) completed SUCCESS with wrong data in its SGE at +{o}: {d}",
                                    i + 1,
                                    w.len
                                ),
                                &liar,
                                &h
                            )
                        );
                    }
                    at += l;
                }
            }
            Kind::FetchAdd | Kind::CmpSwap => {
                let (o, _) = lay.sges[i][0];
                let v = u64::from_le_bytes(loc_now[o..o + 8].try_into().unwrap());
                if v != origs[i].0 {
                    panic!(
                        "{}",
                        ctx(
                            format!(
                                "WR {} ({:?}) completed SUCCESS with original {v:#x}, the responder's word was {:#x}",
                                i + 1,
                                w.kind,
                                origs[i].0
                            ),
                            &liar,
                            &h
                        )
                    );
                }
            }
            _ => {}
        }
    }
    // No DMA outside the SGEs.
    let mut inside = vec![false; lay.loc_len];
    for (i, w) in s.wrs.iter().enumerate() {
        if matches!(w.kind, Kind::Read | Kind::FetchAdd | Kind::CmpSwap) {
            for &(o, l) in &lay.sges[i] {
                inside[o..o + l].iter_mut().for_each(|b| *b = true);
            }
        }
    }
    if let Some(p) = (0..lay.loc_len).find(|&p| !inside[p] && loc_now[p] != GUARD) {
        panic!("{}", ctx(format!("local byte {p}, outside every SGE, was written ({:#04x})", loc_now[p]), &liar, &h));
    }
    if src_mr.to_vec() != src_copy {
        panic!("{}", ctx("the source buffer changed".into(), &liar, &h));
    }
    let dma_errors = h.world.borrow().stats().nics[0].dma.errors - dma_errors0;
    if dma_errors != 0 {
        panic!("{}", ctx(format!("{dma_errors} DMA errors at the requester's host"), &liar, &h));
    }

    // The NIC still answers MMIO and serves new QPs.
    liar.on = false;
    let id = h.world.borrow_mut().mmio_read(0, regs::ID);
    assert_eq!(id.ok(), Some(regs::ID_VALUE), "{}", ctx("MMIO not answered after the case".into(), &liar, &h));
    let mut qa2 = h.pa.create_qp(&h.ca).set_max_send_wr(8).build().unwrap();
    let mut qb2 = h.pb.create_qp(&h.cb).set_max_send_wr(8).build().unwrap();
    let o2 = ConnectOptions {
        path_mtu: Mtu::Mtu1024,
        access: o.access,
        max_rd_atomic: 2,
        max_dest_rd_atomic: 2,
        ..ConnectOptions::default()
    };
    let (ea2, eb2) = (qa2.endpoint().unwrap(), qb2.endpoint().unwrap());
    qa2.connect_with(&eb2, &o2).unwrap();
    qb2.connect_with(&ea2, &o2).unwrap();
    let rlen = lay.rsrc.1.clamp(1, 3000);
    let wtarget = lay.word + 32;
    let bmem_before = bmem_mr.to_vec();
    qa2.post_send(&[
        SendWr::rdma_read(1, chk_mr.sge(0..rlen).unwrap(), rb.at(0)).signaled(true),
        SendWr::atomic_fetch_and_add(2, chk_mr.sge(4096..4104).unwrap(), rb.at(lay.word as u64 + 8), 5).signaled(true),
        SendWr::rdma_write(3, src_mr.sge(0..16).unwrap(), rb.at(wtarget as u64)).signaled(true),
    ])
    .unwrap();
    let msg = ctx("a new QP after the case".into(), &liar, &h);
    let w = h.wait(&h.ca, 3, 300_000, &mut liar, &msg);
    let st: Vec<(u64, WcStatus)> = w.iter().map(|w| (w.wr_id, w.status)).collect();
    assert_eq!(
        st,
        vec![(1, WcStatus::Success), (2, WcStatus::Success), (3, WcStatus::Success)],
        "{}",
        ctx("a new QP after the case".into(), &liar, &h)
    );
    let c = chk_mr.to_vec();
    assert!(c[..rlen] == bmem_before[..rlen], "{}", ctx("a new QP's READ returned wrong bytes".into(), &liar, &h));
    assert!(bmem_mr.to_vec()[wtarget..wtarget + 16] == src_copy[..16], "{}", ctx("a new QP's WRITE".into(), &liar, &h));
    assert_eq!(
        u64::from_le_bytes(c[4096..4104].try_into().unwrap()),
        7,
        "{}",
        ctx("a new QP's atomic".into(), &liar, &h)
    );
    let statuses: Vec<String> = got.iter().map(|g| format!("{:?}", g.0.status)).collect();
    drop((qa2, qb2, qa, qb));
    format!(
        "{} WRs at MTU {}: {:?}{}; lies: {}",
        n,
        m,
        statuses,
        if moved_to_err { " (moved to ERR)" } else { "" },
        if liar.lies_done() == 0 { "none fitted".into() } else { liar.told.join("; ") }
    )
}

#[test]
fn requester_fuzz_seeds() {
    common::seeds::run_seeds("requester_fuzz", CI_SEEDS, fuzz_case);
}
