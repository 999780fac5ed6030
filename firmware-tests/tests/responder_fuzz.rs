//! Responder-side fuzz: a requester that lies. A real rnic requester (NIC 0) sends a random mix
//! of RDMA WRITE (with and without immediate), SEND (likewise), RDMA READ and atomics to a real
//! rnic responder (NIC 1). The NICs have no wire: the test carries every frame
//! (`common::carried`), and on the requests for the QP under test it lies — request opcodes
//! swapped for other requests, responses, reserved RC codes, UC and UD opcodes; PSNs moved
//! ahead and behind; a RETH's or AtomicETH's R_Key replaced by the key of a region without the
//! access, of another PD, a receive buffer's L_Key or a stale tag; its virtual address moved
//! before, across the end of, or far outside the region; its DMA length made 0, 2^31, 2^32 − 1
//! or off by one; payloads cut or lengthened (past the path MTU too); frames duplicated,
//! reordered, lost; and invented requests (a WRITE, SEND, READ or atomic the requester never
//! posted) slipped in at the next PSN. Every rewritten frame is re-emitted by the
//! firmware-tests wire codec with its lengths, checksum and ICRC recomputed, so the NIC parses
//! the lie.
//!
//! Properties (IBTA Vol 1 9.7.4, 9.7.5.2, 10.6.3; the guide's "a malformed packet is dropped
//! and counted, never hangs the pipeline or writes outside a registered memory region"):
//! - the responder's host memory changes only where a remote peer may write: anywhere in the
//!   region registered with REMOTE_WRITE and REMOTE_ATOMIC for the QP's PD, and inside posted
//!   receive buffers. A region registered REMOTE_READ only, a region of another PD, the bytes
//!   between receive buffers and the host's unmapped memory (no DMA error) stay as they were;
//! - every receive WQE completes at most once, and a successful one with a length that fits it;
//! - every requester work request completes exactly once, in posting order (success, an error
//!   the lies can cause, or flushed after the first error; a QP still busy after the budget
//!   is moved to ERR and must flush);
//! - neither NIC hangs: after the case MMIO is answered and a new QP pair on the same NICs
//!   does a WRITE, a SEND, a READ and an atomic with the right bytes.
//!
//! Seeded: `RNIC_SEED=n` replays one seed, `RNIC_SEEDS=N` / `RNIC_SEED_START=s` run more
//! (`scripts/soak.sh`); each seed prints its shape and the lies told. The requester's side of
//! a lying peer is `requester_fuzz.rs`.
mod common;

use common::carried::{has_reth, Carried, Carrier, Dir, Frame};
use common::pattern;
use common::seeds::Kind;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rnic::{
    AccessFlags, ConnectOptions, Mtu, QpAttr, QpAttrMask, QpState, RecvWr, SendWr, WcOpcode, WcStatus, WorkCompletion,
    WrOpcode,
};
use rnic_contract::regs;
use rnic_sim::SimConfig;

/// Bytes no DMA may touch.
const GUARD: u8 = 0xEE;
const PSN_MASK: u32 = 0xFF_FFFF;
/// Seeds CI runs.
const CI_SEEDS: u64 = 100;
/// The region open to remote writes and atomics, and the two that are not.
const RW_LEN: usize = 16 * 1024;
const RO_LEN: usize = 4096;
const XPD_LEN: usize = 4096;
/// Receive buffers: slots this far apart, the bytes between them guards.
const SLOT_GAP: usize = 64;
/// Receive WQEs beyond the SENDs the requester posts (for invented SENDs).
const SPARE_RECVS: usize = 6;

/// One work request of the requester: its kind, message length and offset into the
/// responder's region (its local buffer is at the same offset of the requester's).
#[derive(Clone, Debug)]
struct Wr {
    kind: Kind,
    len: usize,
    off: usize,
}

/// Every kind of lie the liar tells about a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lie {
    /// Another opcode: a request, a response, a reserved RC code, UC or UD.
    Opcode,
    /// The PSN moves 1..=40 ahead.
    PsnAhead,
    /// The PSN moves 1..=8 behind (a duplicate's PSN).
    PsnBehind,
    /// A RETH's or AtomicETH's R_Key (and mostly its address with it, into that key's
    /// region): a REMOTE_READ-only region's, another PD's, a receive buffer's L_Key, a stale
    /// tag of the QP's own region, or any number.
    Rkey,
    /// Its virtual address: before the region, across its end, in another region, far away.
    Va,
    /// A RETH's DMA length: 0, 2^31, 2^32 - 1, or one off.
    DmaLen,
    /// The payload (or AtomicETH) loses bytes.
    Truncate,
    /// Bytes are appended, sometimes past the path MTU.
    Extend,
    /// Delivered 2 or 3 times.
    Duplicate,
    /// Held back 20..1500 cycles.
    Reorder,
    /// Lost.
    Drop,
    /// Followed by an invented request at the next PSN.
    Ghost,
}

const ALL_LIES: [Lie; 12] = [
    Lie::Opcode,
    Lie::PsnAhead,
    Lie::PsnBehind,
    Lie::Rkey,
    Lie::Va,
    Lie::DmaLen,
    Lie::Truncate,
    Lie::Extend,
    Lie::Duplicate,
    Lie::Reorder,
    Lie::Drop,
    Lie::Ghost,
];

/// How often each lie is drawn (order of [`ALL_LIES`]): the ones aimed at memory weigh more.
const LIE_WEIGHTS: [u32; 12] = [3, 1, 1, 3, 3, 2, 2, 2, 1, 1, 1, 3];

/// Opcodes an opcode lie picks from: every RC request (IBTA Vol 1 Table 38), responses, the
/// reserved RC codes after FETCH ADD, UC SEND / WRITE, UD SEND ONLY, and the CNP.
const LIE_OPCODES: [u8; 26] = [
    0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x0B, 0x0C, 0x13, 0x14, // requests
    0x0D, 0x10, 0x11, 0x12, // responses
    0x15, 0x17, 0x1F, // reserved RC
    0x24, 0x2A, // UC SEND ONLY, UC WRITE ONLY
    0x64, // UD SEND ONLY
    0x81, // CNP
];

/// A case: path MTU, the requester's WRs, and how the liar lies.
struct Shape {
    mtu: Mtu,
    wrs: Vec<Wr>,
    /// Chance that a request frame gets a lie, and the most lies of the case.
    rate: f64,
    max_lies: usize,
    timeout: u8,
}

impl std::fmt::Display for Shape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MTU {}, rate {:.2}, at most {} lies, WRs", self.mtu.bytes(), self.rate, self.max_lies)?;
        for w in &self.wrs {
            write!(f, " {:?}({}@{})", w.kind, w.len, w.off)?;
        }
        Ok(())
    }
}

fn shape(seed: u64) -> Shape {
    let mut r = ChaCha8Rng::seed_from_u64(seed ^ 0x5E5F_0DE1);
    let mtu = if r.gen_bool(0.5) { Mtu::Mtu256 } else { Mtu::Mtu1024 };
    let m = mtu.bytes() as usize;
    let n = r.gen_range(3..=10);
    let wrs = (0..n)
        .map(|_| {
            let kind = match r.gen_range(0..10) {
                0..=2 => Kind::Write,
                3 => Kind::WriteImm,
                4 | 5 => Kind::Send,
                6 => Kind::SendImm,
                7 | 8 => Kind::Read,
                _ => {
                    if r.gen_bool(0.5) {
                        Kind::FetchAdd
                    } else {
                        Kind::CmpSwap
                    }
                }
            };
            let len = match kind {
                _ if kind.is_atomic() => 8,
                Kind::Send | Kind::SendImm => r.gen_range(0..=2 * m),
                Kind::Read => r.gen_range(1..=3 * m),
                _ => r.gen_range(0..=3 * m),
            };
            let off = if kind.is_atomic() { 8 * r.gen_range(0..RW_LEN / 8) } else { r.gen_range(0..=RW_LEN - len) };
            Wr { kind, len, off }
        })
        .collect();
    Shape { mtu, wrs, rate: r.gen_range(0.1..0.6), max_lies: r.gen_range(1..=8), timeout: r.gen_range(1..=3) }
}

/// Addresses and keys the liar aims at.
struct Targets {
    rw: (u64, u32),
    ro: (u64, u32),
    xpd: (u64, u32),
    /// The receive buffers' address and L_Key, and their length.
    recv: (u64, u32),
    recv_len: u64,
}

struct Liar {
    rng: ChaCha8Rng,
    qpn_b: u32,
    mtu: usize,
    rate: f64,
    max_lies: usize,
    t: Targets,
    on: bool,
    told: Vec<String>,
    /// Frames held back: (release cycle, bytes).
    held: Vec<(u64, Vec<u8>)>,
    now: u64,
}

impl Liar {
    fn pick_lie(&mut self) -> Lie {
        let total: u32 = LIE_WEIGHTS.iter().sum();
        let mut x = self.rng.gen_range(0..total);
        for (l, w) in ALL_LIES.iter().zip(LIE_WEIGHTS) {
            if x < w {
                return *l;
            }
            x -= w;
        }
        unreachable!()
    }

    /// A key a lie puts in a RETH or AtomicETH, and an 8-byte aligned address inside the
    /// region that key names (none for a random key).
    fn bad_key(&mut self) -> (u32, Option<u64>) {
        let (key, base, len) = match self.rng.gen_range(0..5) {
            0 => (self.t.ro.1, self.t.ro.0, RO_LEN as u64),
            1 => (self.t.xpd.1, self.t.xpd.0, XPD_LEN as u64),
            2 => (self.t.recv.1, self.t.recv.0, self.t.recv_len),
            // The QP's own region's index with another tag.
            3 => (self.t.rw.1 ^ (1 + self.rng.gen_range(0..255u32)), self.t.rw.0, RW_LEN as u64),
            _ => return (self.rng.gen(), None),
        };
        (key, Some(base + self.rng.gen_range(0..len / 8) * 8))
    }

    /// An address a lie puts in a RETH or AtomicETH (the region's own key stays).
    fn bad_va(&mut self) -> u64 {
        let (rw, ro) = (self.t.rw.0, self.t.ro.0);
        match self.rng.gen_range(0..7) {
            0 => rw.wrapping_sub(self.rng.gen_range(1..=64)),
            1 => rw + RW_LEN as u64 - self.rng.gen_range(0..=64),
            2 => rw + RW_LEN as u64 + self.rng.gen_range(0..4096),
            3 => ro + self.rng.gen_range(0..RO_LEN as u64),
            4 => u64::MAX - self.rng.gen_range(0..256),
            5 => 0,
            _ => self.rng.gen(),
        }
    }

    /// A request the requester never posted, at `psn`, built on `f`'s headers.
    fn ghost(&mut self, f: &Frame, psn: u32) -> Frame {
        let mut g = f.clone();
        let op = [0x0A, 0x04, 0x0C, 0x14, 0x13, 0x06, 0x00][self.rng.gen_range(0..7)];
        g.set_opcode(op);
        g.hdr.bth.psn = psn & PSN_MASK;
        let (va, key) = match self.rng.gen_range(0..3) {
            0 => (self.t.rw.0 + self.rng.gen_range(0..RW_LEN as u64 / 8) * 8, self.t.rw.1),
            1 => (self.bad_va(), self.t.rw.1),
            _ => {
                let (k, va) = self.bad_key();
                (va.unwrap_or_else(|| self.t.rw.0 + self.rng.gen_range(0..RW_LEN as u64 / 8) * 8), k)
            }
        };
        let plen = self.rng.gen_range(0..=self.mtu);
        let mut body = Vec::new();
        if has_reth(op) {
            let dma = if op == 0x06 { plen + self.rng.gen_range(0..=2 * self.mtu) } else { plen };
            body.extend_from_slice(&va.to_be_bytes());
            body.extend_from_slice(&key.to_be_bytes());
            body.extend_from_slice(&(dma as u32).to_be_bytes());
        } else if op == 0x13 || op == 0x14 {
            body.extend_from_slice(&va.to_be_bytes());
            body.extend_from_slice(&key.to_be_bytes());
            body.extend_from_slice(&self.rng.gen::<[u8; 16]>());
        }
        if op != 0x0C && op != 0x13 && op != 0x14 {
            body.extend((0..plen).map(|_| GUARD ^ 0x55));
        }
        g.body = body;
        self.told.push(format!("ghost {op:#04x} at PSN {psn:#x} va {va:#x} key {key:#x}"));
        g
    }

    /// Tells `lie` about `f`; `None` if it does not fit the frame.
    fn tell(&mut self, lie: Lie, mut f: Frame) -> Option<Vec<Vec<u8>>> {
        let op = f.opcode();
        let eth = has_reth(op) || op == 0x13 || op == 0x14;
        let what = format!("{lie:?} on {op:#04x} PSN {:#x}", f.psn());
        match lie {
            Lie::Opcode => {
                let new = LIE_OPCODES[self.rng.gen_range(0..LIE_OPCODES.len())];
                if new == op {
                    return None;
                }
                f.set_opcode(new);
                self.told.push(format!("{what} -> {new:#04x}"));
            }
            Lie::PsnAhead => {
                f.hdr.bth.psn = (f.psn() + self.rng.gen_range(1..=40)) & PSN_MASK;
                self.told.push(format!("{what} -> {:#x}", f.psn()));
            }
            Lie::PsnBehind => {
                f.hdr.bth.psn = f.psn().wrapping_sub(self.rng.gen_range(1..=8)) & PSN_MASK;
                self.told.push(format!("{what} -> {:#x}", f.psn()));
            }
            Lie::Rkey if eth && f.body.len() >= 12 => {
                let (k, va) = self.bad_key();
                f.body[8..12].copy_from_slice(&k.to_be_bytes());
                match va.filter(|_| self.rng.gen_bool(0.8)) {
                    Some(va) => {
                        f.body[..8].copy_from_slice(&va.to_be_bytes());
                        self.told.push(format!("{what} -> key {k:#x} va {va:#x}"));
                    }
                    None => self.told.push(format!("{what} -> key {k:#x}")),
                }
            }
            Lie::Va if eth && f.body.len() >= 8 => {
                let va = self.bad_va();
                f.body[..8].copy_from_slice(&va.to_be_bytes());
                self.told.push(format!("{what} -> va {va:#x}"));
            }
            Lie::DmaLen if has_reth(op) && f.body.len() >= 16 => {
                let old = u32::from_be_bytes(f.body[12..16].try_into().unwrap());
                let len = match self.rng.gen_range(0..5) {
                    0 => 0,
                    1 => 0x8000_0000,
                    2 => u32::MAX,
                    3 => old.wrapping_add(1),
                    _ => old.wrapping_sub(1),
                };
                f.body[12..16].copy_from_slice(&len.to_be_bytes());
                self.told.push(format!("{what} -> DMA length {len:#x}"));
            }
            Lie::Truncate if !f.body.is_empty() => {
                let cut = self.rng.gen_range(1..=f.body.len().min(64));
                f.body.truncate(f.body.len() - cut);
                self.told.push(format!("{what}: {cut} bytes cut"));
            }
            Lie::Extend => {
                let add = if self.rng.gen_bool(0.5) { self.rng.gen_range(1..=64) } else { self.mtu };
                f.body.extend((0..add).map(|i| (i as u8) | 1));
                self.told.push(format!("{what}: {add} bytes added"));
            }
            Lie::Duplicate => {
                let k = self.rng.gen_range(2..=3);
                self.told.push(format!("{what}: {k} times"));
                return Some(vec![f.emit(); k]);
            }
            Lie::Reorder => {
                let d = self.rng.gen_range(20..1500);
                self.told.push(format!("{what}: held {d} cycles"));
                self.held.push((self.now + d, f.emit()));
                return Some(Vec::new());
            }
            Lie::Drop => {
                self.told.push(what);
                return Some(Vec::new());
            }
            Lie::Ghost => {
                let psn = if self.rng.gen_bool(0.7) { f.psn() + 1 } else { self.rng.gen() };
                let g = self.ghost(&f, psn);
                return Some(vec![f.emit(), g.emit()]);
            }
            _ => return None,
        }
        Some(vec![f.emit()])
    }
}

impl Carrier for Liar {
    fn carry(&mut self, dir: Dir, frame: Vec<u8>) -> Vec<Vec<u8>> {
        if dir != 0 || !self.on || self.told.len() >= self.max_lies || !self.rng.gen_bool(self.rate) {
            return vec![frame];
        }
        let Some(f) = Frame::parse(&frame) else {
            return vec![frame];
        };
        if f.dest_qp() != self.qpn_b {
            return vec![frame];
        }
        for _ in 0..4 {
            let lie = self.pick_lie();
            if let Some(out) = self.tell(lie, f.clone()) {
                return out;
            }
        }
        vec![frame]
    }

    fn release(&mut self, now: u64) -> Vec<(Dir, Vec<u8>)> {
        self.now = now;
        let (due, keep): (Vec<_>, Vec<_>) = self.held.drain(..).partition(|(t, _)| *t <= now);
        self.held = keep;
        due.into_iter().map(|(_, d)| (0, d)).collect()
    }
}

/// Statuses a requester may report when its requests were lied about on the way.
fn allowed_error(s: WcStatus) -> bool {
    matches!(
        s,
        WcStatus::WrFlushErr
            | WcStatus::RetryExcErr
            | WcStatus::RnrRetryExcErr
            | WcStatus::RemInvReqErr
            | WcStatus::RemAccessErr
            | WcStatus::RemOpErr
            | WcStatus::BadRespErr
    )
}

fn fuzz_case(seed: u64) -> String {
    let s = shape(seed);
    let m = s.mtu.bytes() as usize;
    let h = Carried::new(SimConfig::default());
    let n = s.wrs.len();
    let n_recv = s.wrs.iter().filter(|w| w.kind.takes_recv()).count() + SPARE_RECVS;
    let slot = 2 * m + 128;

    // The requester's buffers: the source, and the READ / atomic destinations at the same
    // offsets (guards elsewhere).
    let mut src = pattern(seed, RW_LEN);
    let src_copy = src.clone();
    let mut loc = vec![GUARD; RW_LEN];
    let mut chk = vec![GUARD; 8192];
    // The responder's: the region open to the QP, one open only to READs, one of another PD,
    // and the receive slots with guards between them.
    let mut rw = pattern(seed ^ 0x77, RW_LEN);
    let mut ro = pattern(seed ^ 0x78, RO_LEN);
    let ro_copy = ro.clone();
    let mut xpd = pattern(seed ^ 0x79, XPD_LEN);
    let xpd_copy = xpd.clone();
    let mut brecv = vec![GUARD; n_recv * (slot + SLOT_GAP)];
    let dma0 = (h.world.borrow().stats().nics[0].dma.errors, h.world.borrow().stats().nics[1].dma.errors);

    let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
    let loc_mr = h.pa.register(&mut loc, AccessFlags::LOCAL_WRITE).unwrap();
    let chk_mr = h.pa.register(&mut chk, AccessFlags::LOCAL_WRITE).unwrap();
    let all =
        AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_READ | AccessFlags::REMOTE_ATOMIC;
    let rw_mr = h.pb.register(&mut rw, all).unwrap();
    let ro_mr = h.pb.register(&mut ro, AccessFlags::REMOTE_READ).unwrap();
    let pd2 = h.b.alloc_pd().unwrap();
    let xpd_mr = pd2.register(&mut xpd, all).unwrap();
    let brecv_mr = h.pb.register(&mut brecv, AccessFlags::LOCAL_WRITE).unwrap();

    let mut qa = h.pa.create_qp(&h.ca).set_max_send_wr(16).set_sq_sig_all(true).build().unwrap();
    let mut qb = h.pb.create_qp(&h.cb).set_max_send_wr(16).set_max_recv_wr(32).build().unwrap();
    let o = ConnectOptions {
        path_mtu: s.mtu,
        access: AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_READ | AccessFlags::REMOTE_ATOMIC,
        timeout: s.timeout,
        retry_cnt: 3,
        rnr_retry: 2,
        min_rnr_timer: 1,
        max_rd_atomic: 4,
        max_dest_rd_atomic: 16,
    };
    let (ea, eb) = (qa.endpoint().unwrap(), qb.endpoint().unwrap().with_buffer(&rw_mr));
    qa.connect_with(&eb, &o).unwrap();
    qb.connect_with(&ea, &o).unwrap();
    let rb = eb.buffer.unwrap();
    let mut liar = Liar {
        rng: ChaCha8Rng::seed_from_u64(seed ^ 0x11A9),
        qpn_b: qb.qp_num(),
        mtu: m,
        rate: s.rate,
        max_lies: s.max_lies,
        t: Targets {
            rw: (rw_mr.addr(), rw_mr.rkey()),
            ro: (ro_mr.addr(), ro_mr.rkey()),
            xpd: (xpd_mr.addr(), xpd_mr.rkey()),
            recv: (brecv_mr.addr(), brecv_mr.lkey()),
            recv_len: brecv_mr.len() as u64,
        },
        on: true,
        told: Vec::new(),
        held: Vec::new(),
        now: 0,
    };
    let ctx = |msg: String, liar: &Liar, h: &Carried| {
        format!("{msg}\n  shape: {s}\n  lies told: {:?}\n{}", liar.told, h.diag())
    };

    for k in 0..n_recv {
        let at = k * (slot + SLOT_GAP);
        qb.post_recv_one(RecvWr::new(1000 + k as u64, brecv_mr.sge(at..at + slot).unwrap())).unwrap();
    }
    let wrs: Vec<SendWr<'_>> = s
        .wrs
        .iter()
        .enumerate()
        .map(|(i, w)| {
            let id = i as u64 + 1;
            let (o, l) = (w.off, w.len);
            match w.kind {
                Kind::Write => SendWr::rdma_write(id, src_mr.sge(o..o + l).unwrap(), rb.at(o as u64)),
                Kind::WriteImm => SendWr::rdma_write(id, src_mr.sge(o..o + l).unwrap(), rb.at(o as u64))
                    .with_opcode(WrOpcode::RdmaWriteWithImm)
                    .with_imm(id as u32),
                Kind::Send => SendWr::send(id, src_mr.sge(o..o + l).unwrap()),
                Kind::SendImm => {
                    SendWr::send(id, src_mr.sge(o..o + l).unwrap()).with_opcode(WrOpcode::SendWithImm).with_imm(7)
                }
                Kind::Read => SendWr::rdma_read(id, loc_mr.sge(o..o + l).unwrap(), rb.at(o as u64)),
                Kind::FetchAdd => SendWr::atomic_fetch_and_add(id, loc_mr.sge(o..o + 8).unwrap(), rb.at(o as u64), 3),
                Kind::CmpSwap => SendWr::atomic_cmp_and_swp(id, loc_mr.sge(o..o + 8).unwrap(), rb.at(o as u64), 0, id),
            }
        })
        .collect();
    qa.post_send(&wrs).unwrap();

    // The requester: every WR once, in order, within the budget (or flushed once in ERR).
    let tmo = 1024u64 << s.timeout;
    let budget = (60_000 + n as u64 * 3 * tmo * 4).min(300_000);
    let mut got: Vec<WorkCompletion> = Vec::new();
    let mut recvs: Vec<WorkCompletion> = Vec::new();
    let t0 = h.now();
    while got.len() < n && h.now() - t0 < budget {
        got.extend(h.poll(&h.ca, n - got.len(), 256, &mut liar));
        recvs.extend(h.poll(&h.cb, 16, 0, &mut liar));
    }
    let moved_to_err = got.len() < n;
    if moved_to_err {
        qa.modify(&QpAttr { qp_state: QpState::Err, ..QpAttr::default() }, QpAttrMask::STATE).unwrap();
        let t1 = h.now();
        while got.len() < n && h.now() - t1 < 100_000 {
            got.extend(h.poll(&h.ca, n - got.len(), 256, &mut liar));
        }
        if got.len() < n {
            panic!("{}", ctx(format!("HANG: {} of {n} WRs completed, then no flush: {got:?}", got.len()), &liar, &h));
        }
    }
    liar.on = false;
    h.run(4_000, &mut liar);
    if let Some(x) = h.poll(&h.ca, 8, 0, &mut liar).first() {
        panic!("{}", ctx(format!("a completion beyond one per WR: {x:?} after {got:?}"), &liar, &h));
    }
    let ids: Vec<u64> = got.iter().map(|w| w.wr_id).collect();
    if ids != (1..=n as u64).collect::<Vec<_>>() {
        panic!("{}", ctx(format!("requester completions not one per WR in order: {ids:?}"), &liar, &h));
    }
    let mut failed = false;
    for (i, wc) in got.iter().enumerate() {
        if failed && wc.status != WcStatus::WrFlushErr {
            panic!("{}", ctx(format!("WR {} completed {:?} after an earlier error", i + 1, wc.status), &liar, &h));
        }
        if wc.status != WcStatus::Success {
            if !allowed_error(wc.status) {
                panic!("{}", ctx(format!("WR {} completed {wc:?}", i + 1), &liar, &h));
            }
            failed = true;
        }
    }

    // The responder: receives at most once each, within their buffers. Its QP is moved to
    // ERR so every receive WQE left completes (flushed).
    qb.modify(&QpAttr { qp_state: QpState::Err, ..QpAttr::default() }, QpAttrMask::STATE).unwrap();
    let t2 = h.now();
    while recvs.len() < n_recv && h.now() - t2 < 100_000 {
        recvs.extend(h.poll(&h.cb, 16, 256, &mut liar));
    }
    let mut seen = vec![false; n_recv];
    for wc in &recvs {
        let k = wc.wr_id.checked_sub(1000).filter(|&k| (k as usize) < n_recv);
        let Some(k) = k else {
            panic!("{}", ctx(format!("a responder completion of no receive WQE: {wc:?}"), &liar, &h));
        };
        if std::mem::replace(&mut seen[k as usize], true) {
            panic!("{}", ctx(format!("receive WQE {} completed twice: {recvs:?}", wc.wr_id), &liar, &h));
        }
        // (A WRITE with immediate's byte_len is what it wrote into the region, not the slot.)
        let too_long = wc.opcode == WcOpcode::Recv && wc.byte_len as usize > slot;
        if wc.status == WcStatus::Success
            && (too_long || !matches!(wc.opcode, WcOpcode::Recv | WcOpcode::RecvRdmaWithImm))
        {
            panic!("{}", ctx(format!("receive completion {wc:?} (slots of {slot} B)"), &liar, &h));
        }
    }
    if recvs.len() < n_recv {
        panic!(
            "{}",
            ctx(format!("{} of {n_recv} receive WQEs completed after ERR: {recvs:?}", recvs.len()), &liar, &h)
        );
    }

    // Memory: nothing outside what a remote peer may write.
    if ro_mr.to_vec() != ro_copy {
        let d = common::first_difference(&ro_mr.to_vec(), &ro_copy).unwrap();
        panic!("{}", ctx(format!("the REMOTE_READ-only region was written: {d}"), &liar, &h));
    }
    if xpd_mr.to_vec() != xpd_copy {
        let d = common::first_difference(&xpd_mr.to_vec(), &xpd_copy).unwrap();
        panic!("{}", ctx(format!("the region of another PD was written: {d}"), &liar, &h));
    }
    let rv = brecv_mr.to_vec();
    for k in 0..n_recv {
        let gap = k * (slot + SLOT_GAP) + slot..(k + 1) * (slot + SLOT_GAP);
        if let Some(p) = gap.clone().find(|&p| rv[p] != GUARD) {
            panic!("{}", ctx(format!("receive buffer byte {p}, between slots, was written"), &liar, &h));
        }
    }
    if src_mr.to_vec() != src_copy {
        panic!("{}", ctx("the requester's source buffer changed".into(), &liar, &h));
    }
    let dma = (h.world.borrow().stats().nics[0].dma.errors, h.world.borrow().stats().nics[1].dma.errors);
    if dma != dma0 {
        panic!("{}", ctx(format!("DMA errors (requester, responder): {dma0:?} -> {dma:?}"), &liar, &h));
    }

    // Neither NIC hangs: MMIO answers, and a new QP pair works.
    for nic in 0..2 {
        let id = h.world.borrow_mut().mmio_read(nic, regs::ID);
        assert_eq!(id.ok(), Some(regs::ID_VALUE), "{}", ctx(format!("NIC {nic}: MMIO not answered"), &liar, &h));
    }
    let status = |nic: usize| {
        let st = h.world.borrow_mut().mmio_read(nic, regs::STATUS).unwrap_or(0);
        format!("STATUS {st:#010x} (RX engine state {}, scheduler state {})", st & 0x3F, st >> 8 & 0x3F)
    };
    let mut qa2 = h.pa.create_qp(&h.ca).set_max_send_wr(8).build().unwrap_or_else(|e| {
        let m = format!("NIC 0 refused a new QP after the case: {e}; {}", status(0));
        panic!("{}", ctx(m, &liar, &h))
    });
    let mut qb2 = h.pb.create_qp(&h.cb).set_max_send_wr(8).set_max_recv_wr(4).build().unwrap_or_else(|e| {
        let m = format!("NIC 1 refused a new QP after the case: {e}; {}", status(1));
        panic!("{}", ctx(m, &liar, &h))
    });
    let o2 = ConnectOptions { path_mtu: Mtu::Mtu1024, access: o.access, max_rd_atomic: 2, max_dest_rd_atomic: 2, ..o };
    let (ea2, eb2) = (qa2.endpoint().unwrap(), qb2.endpoint().unwrap());
    qa2.connect_with(&eb2, &o2).unwrap();
    qb2.connect_with(&ea2, &o2).unwrap();
    qb2.post_recv_one(RecvWr::new(77, brecv_mr.sge(0..slot).unwrap())).unwrap();
    let rw_before = rw_mr.to_vec();
    let word = u64::from_le_bytes(rw_before[RW_LEN - 8..].try_into().unwrap());
    qa2.post_send(&[
        SendWr::rdma_read(1, chk_mr.sge(0..3000).unwrap(), rb.at(0)).signaled(true),
        SendWr::atomic_fetch_and_add(2, chk_mr.sge(4096..4104).unwrap(), rb.at((RW_LEN - 8) as u64), 5).signaled(true),
        SendWr::rdma_write(3, src_mr.sge(0..100).unwrap(), rb.at(4000)).signaled(true),
        SendWr::send(4, src_mr.sge(200..300).unwrap()).signaled(true),
    ])
    .unwrap();
    let msg = ctx("a new QP pair after the case".into(), &liar, &h);
    let w = h.wait(&h.ca, 4, 300_000, &mut liar, &msg);
    let r = h.wait(&h.cb, 1, 100_000, &mut liar, &msg);
    let st: Vec<(u64, WcStatus)> = w.iter().map(|w| (w.wr_id, w.status)).collect();
    let want: Vec<(u64, WcStatus)> = (1..=4).map(|i| (i, WcStatus::Success)).collect();
    assert_eq!(st, want, "{msg}");
    assert_eq!((r[0].wr_id, r[0].status, r[0].byte_len), (77, WcStatus::Success, 100), "{msg}");
    let c = chk_mr.to_vec();
    assert!(c[..3000] == rw_before[..3000], "{}", ctx("a new QP's READ returned wrong bytes".into(), &liar, &h));
    assert_eq!(u64::from_le_bytes(c[4096..4104].try_into().unwrap()), word, "{msg}");
    assert!(rw_mr.to_vec()[4000..4100] == src_copy[..100], "{msg}");
    assert!(brecv_mr.to_vec()[..100] == src_copy[200..300], "{msg}");

    let statuses: Vec<String> = got.iter().map(|g| format!("{:?}", g.status)).collect();
    drop((qa2, qb2, qa, qb));
    format!(
        "{n} WRs at MTU {m}: {statuses:?}{}; {} receives done; lies: {}",
        if moved_to_err { " (moved to ERR)" } else { "" },
        recvs.iter().filter(|r| r.status == WcStatus::Success).count(),
        if liar.told.is_empty() { "none fitted".into() } else { liar.told.join("; ") }
    )
}

#[test]
fn responder_fuzz_seeds() {
    common::seeds::run_seeds("responder_fuzz", CI_SEEDS, fuzz_case);
}

/// Seed 1422 of the first soak (stop 37), kept as a named case. A PSN moved ahead drew a NAK
/// sequence error and the requester went back to its first WRITE; a PSN moved behind then made
/// the responder NAK invalid request, and the requester's QP entered ERR. Its completer flushed
/// every WQE in flight while its scheduler was fetching one of them again after the rewind: the
/// scheduler then waited in `CompleteError` for a retired count that had already passed that
/// WQE, forever, and the NIC took no context command after it.
#[test]
fn a_flush_that_overtakes_a_rewound_wqe_leaves_the_requester_working() {
    let summary = fuzz_case(1422);
    assert!(summary.contains("RemInvReqErr"), "the case no longer tells its lies: {summary}");
}
