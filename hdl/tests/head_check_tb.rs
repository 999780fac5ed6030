//! `HeadCheck` (the requester's head check: the local checks of the send WQE at the prefetch
//! buffer's head, IBTA Vol 1 10.6.3) in Verilator, against a model written from its docstring
//! and from first principles.
//!
//! The test plays the scheduler and the key table around the block: the head beat (a send WQE
//! laid out with `rnic_contract::wqe`), `start` (the scheduler in `ActOnChecks`), `key_slot`
//! (in `RecordWqe`), `kill` and `reset`, and the served QP's `pd`, `path_mtu`,
//! `inline_max`, `one_slot` and `ud` (changed only in a `kill` cycle, as a QP load or context
//! command kills the check). The key table is 64 entries (`rnic_contract::mr_entry` records,
//! rewritten only in `kill` cycles) behind a block RAM's one-cycle latency: the entry on `mr`
//! in cycle `c + 1` is the one addressed in cycle `c`, which is `mr_index` when `mr_read` is
//! high and a random other index (the scheduler's own read) otherwise, so the block only sees
//! its entry in the cycles the docstring promises.
//!
//! Checked every cycle (`Tb::step`): `ready` is high exactly when the model's check is: 3
//! cycles after a `start` in which the block was idle with an eligible WQE at the head
//! (`beat_ok`; RC; not fenced; an RDMA WRITE, WRITE WITH IMMEDIATE or READ of one slot, one
//! SGE and not inline, or a WRITE of two or more slots and inline) if `key_slot` was high the cycle after `start`
//! and neither `kill` nor `reset` came in between, and from then on until the cycle after a
//! `kill`; `mr_read` is high exactly in that `start` cycle and that `key_slot` cycle (outside
//! `kill` cycles), with `mr_index` the SGE's lkey bits 13:8. While `ready`, the verdicts equal
//! the model's: `len` and `len_m1` (SGE 0's length, minus one mod 2^32), `is_inline`,
//! `is_read`; `nq`,
//! `npart`, `npkts` (`len / MTU`, `len mod MTU != 0`, `max(1, ceil(len / MTU))` mod 2^24) for
//! PATH_MTU 1..=5; for an inline WRITE `inline_ok` (`len <= 256`, `len <= inline_max`,
//! PATH_MTU != 0); otherwise `key_ok` (entry valid, tag = lkey bits 7:0, lkey bits 31:14 zero,
//! entry PD = QP PD, and for a READ the entry grants LOCAL_WRITE), `va_ok` (`addr >= va`), `off` (`addr - va` mod 2^64), `off_ok`
//! (`off <= length`), `room` (`length - off`), `base` (`iova + off`) and `bounds`
//! (`va <= addr` and `addr + len <= va + length`, computed in 128 bits). The targeted tests
//! run through the same checks and also assert their verdicts literally.
//!
//! - `random_checks_match_the_model`: 1 000 000 cycles of random heads (eligible or not: opcodes
//!   0..=6 and junk, 0..=255 SGEs, FENCE / INLINE / other flags, one or several slots, UD),
//!   random `start`s, `key_slot` mostly right after `start` (sometimes missing), random `kill`s
//!   and `reset`s at any step, random QPs (PATH_MTU 0..=5, PDs that mostly match the entries'),
//!   random keys (valid, wrong tag, bits 31:14 set, invalid entries) and SGEs around the
//!   region's bounds (before `va`, at `va`, inside, ending exactly at the region's end, one
//!   byte past it, at the end, random; lengths 0, MTU edges, 2^31, 2^32 - 1; regions of length
//!   0 and up to 2^64 - 1, at address 0 and at the top of the address space). Every verdict
//!   and `mr_read` checked as above; the run must reach thousands of verdicts, with every
//!   verdict seen both ways and the check given up by every cause.
//! - `room_equal_to_len_passes_one_byte_more_fails`: a region, an SGE whose end is the
//!   region's end passes `bounds` (room = len); one byte longer, or starting one byte later,
//!   fails it; the same at the top of the 64-bit address space (end = 2^64).
//! - `addr_one_below_va_fails_va_ok`: SGE address `va - 1` fails `va_ok` and `bounds`
//!   (`off` wraps to 2^64 - 1); `va` passes.
//! - `wrong_pd_fails_key_ok`: the entry's PD passes `key_ok`, a PD one bit off (low or high)
//!   fails it, the bounds verdicts unchanged.
//! - `key_tag_validity_and_high_bits`: a wrong tag (bit 0 or 7), an invalid entry, or lkey bit
//!   14 or 31 set fails `key_ok`; the right key passes.
//! - `offset_at_region_end`: an empty SGE at the region's end (off = length) passes `off_ok`
//!   and `bounds`; one byte past fails both; an empty SGE at an empty region's `va` passes.
//! - `packet_count_edges`: at each PATH_MTU 1..=5, lengths 0, 1, MTU - 1, MTU, MTU + 1,
//!   2 MTU, 2^31: `nq`, `npart`, `npkts` (1 for 0 bytes) and `len_m1` (2^32 - 1 for 0 bytes).
//! - `inline_length_edges`: inline WRITEs at each WQE size (inline_max 64, 192, 448): lengths
//!   at inline_max and 256 and one past pass and fail `inline_ok`; 0 bytes passes (the
//!   scheduler tests `len != 0` itself); PATH_MTU 0 fails.
//! - `ready_timing_kill_and_missing_key_slot`: `ready` rises 3 cycles after `start`, not
//!   before, and holds for 50 cycles of junk beats, entries, `start`s and `key_slot`s with
//!   its verdicts unchanged, until the cycle after `kill`; a `start` without `key_slot` the
//!   next cycle, or a `kill` in any of the 3 cycles, never raises it; a later `start` does.
//! - `ineligible_wqes_never_ready`: every combination of opcode 0..=7, 0..=2 SGEs, FENCE and
//!   INLINE, one or two slots, RC or UD: `ready` rises for exactly the 9 eligible ones; not
//!   with `beat_ok` low.
mod harness;

use harness::tables::Mr;
use harness::{Dut, Port, Rng};
use rnic_contract::mr_entry::key;
use rnic_contract::verbs::{access, send_flags, wr_opcode};
use rnic_contract::wqe;
use rnic_hdl::head_check::HeadCheck;

/// Bytes of an `MrEntryRec` (256 bits) on the `mr` port.
const MR_BYTES: usize = 32;
/// PDs the random QPs and entries draw from (so that they mostly match).
const PDS: [u64; 4] = [0x00_0001, 0x00_0002, 0xAB_CDEF, 0x80_0000];

/// The served QP's parameters.
#[derive(Clone, Copy, Debug)]
struct Qp {
    pd: u64,
    /// The IBTA code: 1..=5 for 256..=4096 bytes (0 is not a valid MTU).
    path_mtu: u64,
    /// SQ_LOG_STRIDE: 0 is a one-slot (64-byte) WQE.
    log_stride: u64,
    ud: bool,
}

impl Qp {
    fn one_slot(&self) -> bool {
        self.log_stride == 0
    }
    /// Inline bytes a WQE of the QP's stride holds (`rnic_contract::wqe`).
    fn inline_max(&self) -> u64 {
        if self.log_stride == 0 {
            0
        } else {
            (wqe::stride(self.log_stride as usize) - wqe::INLINE_DATA) as u64
        }
    }
    fn mtu(&self) -> Option<u64> {
        (1..=5).contains(&self.path_mtu).then(|| 256u64 << (self.path_mtu - 1))
    }
    fn random(rng: &mut Rng) -> Qp {
        Qp {
            pd: match rng.range(0, 7) {
                0 => rng.range(0, 0xFF_FFFF),
                1..=3 => PDS[0],
                _ => *rng.pick(&PDS),
            },
            path_mtu: if rng.chance(1, 16) { 0 } else { rng.range(1, 5) },
            log_stride: if rng.chance(1, 2) { 0 } else { rng.range(1, 3) },
            ud: rng.chance(1, 10),
        }
    }
}

/// The fields of a send WQE's first slot the block reads.
#[derive(Clone, Copy, Debug, Default)]
struct Wqe {
    opcode: u8,
    flags: u8,
    num_sge: u8,
    addr: u64,
    len: u32,
    lkey: u32,
}

impl Wqe {
    /// The 64-byte slot: the fields over random bytes (wr_id, imm, RETH, atomics...).
    fn beat(&self, rng: &mut Rng) -> [u8; 64] {
        let mut b = [0u8; 64];
        b.copy_from_slice(&rng.bytes(64));
        wqe::OPCODE.put(&mut b, u64::from(self.opcode));
        wqe::SEND_FLAGS.put(&mut b, u64::from(self.flags));
        wqe::NUM_SGE.put(&mut b, u64::from(self.num_sge));
        wqe::SGE0_ADDR.put(&mut b, self.addr);
        wqe::SGE0_LENGTH.put(&mut b, u64::from(self.len));
        wqe::SGE0_LKEY.put(&mut b, u64::from(self.lkey));
        b
    }
    fn decode(b: &[u8]) -> Wqe {
        Wqe {
            opcode: wqe::OPCODE.get(b) as u8,
            flags: wqe::SEND_FLAGS.get(b) as u8,
            num_sge: wqe::NUM_SGE.get(b) as u8,
            addr: wqe::SGE0_ADDR.get(b),
            len: wqe::SGE0_LENGTH.get(b) as u32,
            lkey: wqe::SGE0_LKEY.get(b) as u32,
        }
    }
    fn inline(&self) -> bool {
        self.flags & send_flags::INLINE != 0
    }
    /// The key-table index the lkey selects (bits 13:8).
    fn index(&self) -> usize {
        ((self.lkey >> 8) & 63) as usize
    }
}

/// Whether the head check takes the WQE (the block's docstring, "Eligible WQEs").
fn eligible(w: &Wqe, qp: &Qp) -> bool {
    let is_write = w.opcode == wr_opcode::RDMA_WRITE || w.opcode == wr_opcode::RDMA_WRITE_WITH_IMM;
    let is_read = w.opcode == wr_opcode::RDMA_READ;
    let fenced = w.flags & send_flags::FENCE != 0;
    let one_sge_gather = qp.one_slot() && w.num_sge == 1 && !w.inline();
    let inline_write = !qp.one_slot() && w.inline();
    !qp.ud && !fenced && ((is_write && (one_sge_gather || inline_write)) || (is_read && one_sge_gather))
}

/// The block's outputs while `ready`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Verdicts {
    inline: bool,
    read: bool,
    inline_ok: bool,
    len: u64,
    len_m1: u64,
    off: u64,
    va_ok: bool,
    key_ok: bool,
    off_ok: bool,
    room: u64,
    base: u64,
    bounds: bool,
    nq: u64,
    npart: bool,
    npkts: u64,
}

/// What the verdicts must be for `w` checked against entry `e` for `qp`, from first principles.
fn expected(w: &Wqe, e: &Mr, qp: &Qp) -> Verdicts {
    let len = u64::from(w.len);
    // IBTA 10.6.3: the lkey names a valid entry of the QP's PD (the tag guards against a
    // stale key; the table has 64 entries, so key bits 31:14 must be clear).
    // A READ's local buffer is written by the NIC: its region must grant LOCAL_WRITE.
    let read = w.opcode == wr_opcode::RDMA_READ;
    let key_ok = e.valid
        && e.tag == u64::from(w.lkey & 0xFF)
        && w.lkey >> 14 == 0
        && e.pd == qp.pd
        && (!read || e.access & u64::from(access::LOCAL_WRITE) != 0);
    let va_ok = w.addr >= e.va;
    let off = w.addr.wrapping_sub(e.va);
    // The whole SGE inside [va, va + length), in exact arithmetic.
    let bounds = u128::from(w.addr) >= u128::from(e.va)
        && u128::from(w.addr) + u128::from(len) <= u128::from(e.va) + u128::from(e.length);
    let (nq, npart, npkts) = match qp.mtu() {
        Some(mtu) => (len / mtu, len % mtu != 0, len.div_ceil(mtu).max(1) & 0xFF_FFFF),
        None => (0, false, 0),
    };
    Verdicts {
        inline: w.inline(),
        read,
        inline_ok: len <= 256 && len <= qp.inline_max() && qp.path_mtu != 0,
        len,
        len_m1: u64::from(w.len.wrapping_sub(1)),
        off,
        va_ok,
        key_ok,
        off_ok: off <= e.length,
        room: e.length.wrapping_sub(off),
        base: e.iova.wrapping_add(off),
        bounds,
        nq,
        npart,
        npkts,
    }
}

/// The differences that matter between `got` and `want` (an inline WRITE has no key or
/// bounds verdicts, a plain one no inline verdict; PATH_MTU 0 has no packet count).
fn mismatches(got: &Verdicts, want: &Verdicts, qp: &Qp) -> Vec<String> {
    let mut out = Vec::new();
    let mut cmp = |name: &str, g: u64, w: u64| {
        if g != w {
            out.push(format!("{name}: got {g:#x}, want {w:#x}"));
        }
    };
    cmp("inline", got.inline.into(), want.inline.into());
    cmp("read", got.read.into(), want.read.into());
    cmp("len", got.len, want.len);
    cmp("len_m1", got.len_m1, want.len_m1);
    if qp.mtu().is_some() {
        cmp("nq", got.nq, want.nq);
        cmp("npart", got.npart.into(), want.npart.into());
        cmp("npkts", got.npkts, want.npkts);
    }
    if want.inline {
        cmp("inline_ok", got.inline_ok.into(), want.inline_ok.into());
    } else {
        cmp("key_ok", got.key_ok.into(), want.key_ok.into());
        cmp("va_ok", got.va_ok.into(), want.va_ok.into());
        cmp("off", got.off, want.off);
        cmp("off_ok", got.off_ok.into(), want.off_ok.into());
        cmp("room", got.room, want.room);
        cmp("base", got.base, want.base);
        cmp("bounds", got.bounds.into(), want.bounds.into());
    }
    out
}

/// The model's step (the block's docstring: `HeadStep`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Idle,
    Key,
    Room,
    Ready,
}

/// One cycle's drive.
#[derive(Clone, Debug, Default)]
struct Drive {
    start: bool,
    key_slot: bool,
    kill: bool,
    reset: bool,
    beat_ok: bool,
    /// A new head beat (else the last one stays).
    beat: Option<[u8; 64]>,
    /// A new QP (only with `kill` or `reset`).
    qp: Option<Qp>,
    /// Key-table writes (only with `kill` or `reset`).
    writes: Vec<(usize, Mr)>,
}

/// Why checks ended, and what they saw (the random test's coverage).
#[derive(Clone, Debug, Default)]
struct Stats {
    cycles: u64,
    eligible_starts: u64,
    ineligible_starts: u64,
    ignored_starts: u64,
    ready_checks: u64,
    verdict_reads: u64,
    killed_in_flight: u64,
    no_key_slot: u64,
    inline_checks: u64,
    key_ok: [u64; 2],
    va_ok: [u64; 2],
    off_ok_with_va: [u64; 2],
    bounds: [u64; 2],
    room_eq_len_pass: u64,
    room_plus_one_fail: u64,
    inline_ok: [u64; 2],
    npart: [u64; 2],
    len0: u64,
}

struct Ports {
    beat: Port,
    beat_ok: Port,
    one_slot: Port,
    ud: Port,
    start: Port,
    key_slot: Port,
    kill: Port,
    reset: Port,
    mr_read: Port,
    mr_index: Port,
    mr: Port,
    pd: Port,
    path_mtu: Port,
    inline_max: Port,
    ready: Port,
    inline: Port,
    read: Port,
    inline_ok: Port,
    len: Port,
    len_m1: Port,
    off: Port,
    va_ok: Port,
    key_ok: Port,
    off_ok: Port,
    room: Port,
    base: Port,
    bounds: Port,
    nq: Port,
    npart: Port,
    npkts: Port,
}

impl Ports {
    fn of(d: &Dut) -> Ports {
        Ports {
            beat: d.port("beat"),
            beat_ok: d.port("beat_ok"),
            one_slot: d.port("one_slot"),
            ud: d.port("ud"),
            start: d.port("start"),
            key_slot: d.port("key_slot"),
            kill: d.port("kill"),
            reset: d.port("reset"),
            mr_read: d.port("mr_read"),
            mr_index: d.port("mr_index"),
            mr: d.port("mr"),
            pd: d.port("pd"),
            path_mtu: d.port("path_mtu"),
            inline_max: d.port("inline_max"),
            ready: d.port("ready"),
            inline: d.port(INLINE_PORT),
            read: d.port("is_read"),
            inline_ok: d.port("inline_ok"),
            len: d.port("len"),
            len_m1: d.port("len_m1"),
            off: d.port("off"),
            va_ok: d.port("va_ok"),
            key_ok: d.port("key_ok"),
            off_ok: d.port("off_ok"),
            room: d.port("room"),
            base: d.port("base"),
            bounds: d.port("bounds"),
            nq: d.port("nq"),
            npart: d.port("npart"),
            npkts: d.port("npkts"),
        }
    }
}

struct Tb {
    dut: Dut,
    p: Ports,
    rng: Rng,
    seed: u64,
    qp: Qp,
    table: Vec<Mr>,
    records: Vec<[u8; MR_BYTES]>,
    /// The key-table address of the last cycle (its entry is on `mr` this cycle).
    addr_prev: usize,
    beat: [u8; 64],
    step: Step,
    /// The WQE being checked and its verdicts (computed when it was taken: the table and
    /// the QP change only with `kill`).
    checked: Wqe,
    checked_qp: Qp,
    want: Verdicts,
    /// The cycle the check was taken.
    taken_at: u64,
    /// Verdicts seen in the current `Ready` (they must hold still).
    held: Option<Verdicts>,
    stats: Stats,
}

/// The block's inline flag (`is_inline`: `inline` is a C++ keyword, which Verilator refuses
/// as a top-level port).
const INLINE_PORT: &str = "is_inline";

/// The block as a Verilated model.
fn build() -> Dut {
    Dut::build::<HeadCheck>("head_check").expect("build HeadCheck")
}

fn record(m: &Mr) -> [u8; MR_BYTES] {
    let full = m.record();
    assert!(full[MR_BYTES..].iter().all(|b| *b == 0), "MrEntryRec is 256 bits");
    let mut r = [0u8; MR_BYTES];
    r.copy_from_slice(&full[..MR_BYTES]);
    r
}

/// Uniform in 0..=n (any n, u64::MAX included).
fn upto(rng: &mut Rng, n: u64) -> u64 {
    if n == u64::MAX {
        rng.next_u64()
    } else {
        rng.range(0, n)
    }
}

fn random_entry(rng: &mut Rng) -> Mr {
    let va = match rng.range(0, 5) {
        0 => 0,
        1 => u64::MAX - rng.range(0, 1 << 20),
        2 => rng.next_u64(),
        _ => (rng.next_u64() & 0xFFFF_FFFF_F000) + rng.range(0, 63),
    };
    let length = match rng.range(0, 7) {
        0 => 0,
        1 => rng.range(1, 4096),
        2 => rng.range(1, 1 << 20),
        3 => rng.range(1, 1 << 32),
        4 => rng.range(1 << 32, 1 << 40),
        5 => u64::MAX - rng.range(0, 4096),
        6 => rng.next_u64(),
        _ => 1 << rng.range(0, 63),
    };
    Mr {
        valid: rng.chance(7, 8),
        access: rng.range(0, 15),
        tag: rng.range(0, 255),
        pd: match rng.range(0, 15) {
            0 => rng.range(0, 0xFF_FFFF),
            1..=7 => PDS[0],
            _ => *rng.pick(&PDS),
        },
        va,
        length,
        iova: rng.next_u64(),
    }
}

impl Tb {
    fn new(seed: u64) -> Tb {
        let mut dut = build();
        let p = Ports::of(&dut);
        let mut rng = Rng::from_env(seed);
        let seed = rng.0;
        let table: Vec<Mr> = (0..64).map(|_| random_entry(&mut rng)).collect();
        let records = table.iter().map(record).collect();
        let qp = Qp { pd: PDS[0], path_mtu: 3, log_stride: 0, ud: false };
        dut.reset(3);
        let mut tb = Tb {
            dut,
            p,
            rng,
            seed,
            qp,
            table,
            records,
            addr_prev: 0,
            beat: [0; 64],
            step: Step::Idle,
            checked: Wqe::default(),
            checked_qp: qp,
            want: Verdicts::default(),
            taken_at: 0,
            held: None,
            stats: Stats::default(),
        };
        tb.apply_qp(qp);
        tb
    }

    fn apply_qp(&mut self, qp: Qp) {
        self.qp = qp;
        let (d, p) = (&mut self.dut, &self.p);
        d.set(p.pd, qp.pd);
        d.set(p.path_mtu, qp.path_mtu);
        d.set(p.inline_max, qp.inline_max());
        d.set_bit(p.one_slot, qp.one_slot());
        d.set_bit(p.ud, qp.ud);
    }

    fn ctx(&self) -> String {
        format!(
            "seed {:#x}, cycle {}, step {:?} (taken at cycle {}), qp {:?} (now {:?}), wqe {:?}, entry {:?}",
            self.seed,
            self.stats.cycles,
            self.step,
            self.taken_at,
            self.checked_qp,
            self.qp,
            self.checked,
            self.table[self.checked.index()]
        )
    }

    fn read_verdicts(&mut self) -> Verdicts {
        let (d, p) = (&mut self.dut, &self.p);
        Verdicts {
            inline: d.get_bit(p.inline),
            read: d.get_bit(p.read),
            inline_ok: d.get_bit(p.inline_ok),
            len: d.get(p.len),
            len_m1: d.get(p.len_m1),
            off: d.get(p.off),
            va_ok: d.get_bit(p.va_ok),
            key_ok: d.get_bit(p.key_ok),
            off_ok: d.get_bit(p.off_ok),
            room: d.get(p.room),
            base: d.get(p.base),
            bounds: d.get_bit(p.bounds),
            nq: d.get(p.nq),
            npart: d.get_bit(p.npart),
            npkts: d.get(p.npkts),
        }
    }

    /// One clock cycle: drives `drv`, checks the outputs against the model, steps both.
    /// Returns the verdicts if `ready` was high.
    fn step(&mut self, drv: Drive) -> Option<Verdicts> {
        let killed = drv.kill || drv.reset;
        assert!(killed || (drv.qp.is_none() && drv.writes.is_empty()), "QP and table change only with kill");
        if let Some(b) = drv.beat {
            self.beat = b;
            self.dut.set_wide(self.p.beat, &b);
        }
        if let Some(qp) = drv.qp {
            self.apply_qp(qp);
        }
        {
            let (d, p) = (&mut self.dut, &self.p);
            d.set_bit(p.start, drv.start);
            d.set_bit(p.key_slot, drv.key_slot);
            d.set_bit(p.kill, drv.kill);
            d.set_bit(p.reset, drv.reset);
            d.set_bit(p.beat_ok, drv.beat_ok);
            d.set_wide(p.mr, &self.records[self.addr_prev]);
            d.eval();
        }

        let ready = self.dut.get_bit(self.p.ready);
        assert_eq!(ready, self.step == Step::Ready, "ready: {}", self.ctx());
        let mut out = None;
        if ready {
            let got = self.read_verdicts();
            let bad = mismatches(&got, &self.want, &self.checked_qp);
            assert!(bad.is_empty(), "verdicts wrong: {}\n  {}", self.ctx(), bad.join("\n  "));
            if let Some(h) = self.held {
                assert_eq!(got, h, "verdicts changed while ready: {}", self.ctx());
            }
            self.held = Some(got);
            self.stats.verdict_reads += 1;
            out = Some(got);
        }

        // The key-table port: the block's entry exactly when the docstring says.
        let head = Wqe::decode(&self.beat);
        let take = self.step == Step::Idle && drv.start && drv.beat_ok && eligible(&head, &self.qp);
        let key = self.step == Step::Key && drv.key_slot;
        let mr_read = self.dut.get_bit(self.p.mr_read);
        let mr_index = self.dut.get(self.p.mr_index) as usize;
        if !killed {
            assert_eq!(mr_read, take || key, "mr_read: take {take}, key {key}: {}", self.ctx());
            if take {
                assert_eq!(mr_index, head.index(), "mr_index at start: {}", self.ctx());
            }
            if key {
                assert_eq!(mr_index, self.checked.index(), "mr_index in key_slot: {}", self.ctx());
            }
        }
        self.addr_prev = if mr_read { mr_index } else { self.rng.range(0, 63) as usize };

        // The model's step.
        if drv.start && drv.beat_ok && self.step == Step::Idle {
            if take {
                self.stats.eligible_starts += 1;
            } else {
                self.stats.ineligible_starts += 1;
            }
        } else if drv.start && self.step != Step::Idle {
            self.stats.ignored_starts += 1;
        }
        let next = match self.step {
            Step::Idle if take => {
                self.checked = head;
                self.checked_qp = self.qp;
                self.want = expected(&head, &self.table[head.index()], &self.qp);
                self.taken_at = self.stats.cycles;
                Step::Key
            }
            Step::Idle => Step::Idle,
            Step::Key if drv.key_slot => Step::Room,
            Step::Key => {
                if !killed {
                    self.stats.no_key_slot += 1;
                }
                Step::Idle
            }
            Step::Room => Step::Ready,
            Step::Ready => Step::Ready,
        };
        if killed && (take || matches!(self.step, Step::Key | Step::Room)) {
            self.stats.killed_in_flight += 1;
        }
        if next == Step::Ready && self.step == Step::Room && !killed {
            self.count_verdicts();
        }
        self.step = if killed { Step::Idle } else { next };
        if self.step != Step::Ready {
            self.held = None;
        }
        for (i, m) in drv.writes {
            self.records[i] = record(&m);
            self.table[i] = m;
        }
        self.dut.tick();
        self.stats.cycles += 1;
        out
    }

    fn count_verdicts(&mut self) {
        let (w, s) = (&self.want, &mut self.stats);
        s.ready_checks += 1;
        if w.len == 0 {
            s.len0 += 1;
        }
        if self.checked_qp.mtu().is_some() {
            s.npart[usize::from(w.npart)] += 1;
        }
        if w.inline {
            s.inline_checks += 1;
            s.inline_ok[usize::from(w.inline_ok)] += 1;
            return;
        }
        s.key_ok[usize::from(w.key_ok)] += 1;
        s.va_ok[usize::from(w.va_ok)] += 1;
        if w.va_ok {
            s.off_ok_with_va[usize::from(w.off_ok)] += 1;
        }
        s.bounds[usize::from(w.bounds)] += 1;
        if w.va_ok && w.off_ok && w.room == w.len {
            s.room_eq_len_pass += 1;
        }
        if w.va_ok && w.off_ok && w.room + 1 == w.len {
            s.room_plus_one_fail += 1;
        }
    }

    /// Writes entry `index` and sets the QP in one `kill` cycle.
    fn setup(&mut self, qp: Qp, writes: Vec<(usize, Mr)>) {
        self.step(Drive { kill: true, qp: Some(qp), writes, ..Drive::default() });
    }

    /// One check the way the scheduler runs it: `start` with `w` at the head, `key_slot` the
    /// next cycle; `ready` must be low for 3 cycles and high in the 4th (the model checks
    /// the verdicts); then `kill`. Returns the verdicts.
    fn check(&mut self, w: &Wqe) -> Verdicts {
        let beat = w.beat(&mut self.rng);
        let mut got = None;
        for k in 0..4 {
            let drv = Drive {
                start: k == 0,
                key_slot: k == 1,
                beat_ok: true,
                beat: Some(if k == 0 { beat } else { self.rng.bytes(64).try_into().unwrap() }),
                ..Drive::default()
            };
            let v = self.step(drv);
            assert_eq!(v.is_some(), k == 3, "ready in cycle {k} after start: {w:?}");
            got = v;
        }
        self.step(Drive { kill: true, ..Drive::default() });
        got.unwrap()
    }
}

fn lkey_of(index: usize, m: &Mr) -> u32 {
    key::word(index as u32, m.tag as u8)
}

/// A plain (one-slot, one-SGE) RDMA WRITE.
fn write_wqe(addr: u64, len: u32, lkey: u32) -> Wqe {
    Wqe { opcode: wr_opcode::RDMA_WRITE, flags: send_flags::SIGNALED, num_sge: 1, addr, len, lkey }
}

/// A random head WQE for `qp`: mostly eligible, its SGE around its entry's bounds.
fn random_wqe(rng: &mut Rng, qp: &Qp, table: &[Mr]) -> Wqe {
    let mut w = Wqe {
        opcode: *rng.pick(&[wr_opcode::RDMA_WRITE, wr_opcode::RDMA_WRITE_WITH_IMM, wr_opcode::RDMA_READ]),
        flags: (rng.u32() as u8) & !(send_flags::FENCE | send_flags::INLINE),
        num_sge: 1,
        ..Wqe::default()
    };
    if !qp.one_slot() {
        w.flags |= send_flags::INLINE;
        w.num_sge = rng.range(0, 3) as u8;
    }
    if rng.chance(1, 4) {
        match rng.range(0, 5) {
            0 => w.opcode = rng.range(2, 6) as u8,
            1 => w.opcode = rng.range(0, 255) as u8,
            2 => w.num_sge = *rng.pick(&[0u8, 2, 3, 16, 255]),
            3 => w.flags |= send_flags::FENCE,
            4 => w.flags ^= send_flags::INLINE,
            _ => w.flags = rng.u32() as u8,
        }
    }
    // The key.
    let index = rng.range(0, 63) as usize;
    let e = &table[index];
    let good = lkey_of(index, e);
    w.lkey = match rng.range(0, 15) {
        12 => good ^ (1 << rng.range(0, 7)),
        13 => good | (1 << rng.range(14, 31)),
        14 => rng.u32(),
        15 => good | (rng.u32() & 0xFFFF_C000),
        _ => good,
    };
    let e = &table[w.index()];
    // The length.
    let mtu = qp.mtu().unwrap_or(256);
    w.len = if w.inline() && rng.chance(3, 4) {
        let any = rng.range(0, 600) as u32;
        *rng.pick(&[0u32, 1, 63, 64, 65, 191, 192, 193, 255, 256, 257, 447, 448, 449, any])
    } else {
        match rng.range(0, 9) {
            0 => 0,
            1 => rng.range(1, 16) as u32,
            2 => (mtu * rng.range(1, 8)) as u32,
            3 => (mtu * rng.range(1, 8)) as u32 - 1,
            4 => (mtu * rng.range(0, 8)) as u32 + 1,
            5 => rng.range(1, 1 << 16) as u32,
            6 => rng.u32(),
            7 => *rng.pick(&[0x8000_0000u32, 0x7FFF_FFFF, 0xFFFF_FFFF]),
            8 if e.length <= u64::from(u32::MAX) => upto(rng, e.length) as u32,
            _ => rng.range(1, 4096) as u32,
        }
    };
    // The address, around the region's bounds.
    let len = u64::from(w.len);
    let end = e.va.wrapping_add(e.length);
    w.addr = match rng.range(0, 9) {
        0 => e.va.wrapping_sub(rng.range(1, 4096)),
        1 => e.va,
        2 => e.va.wrapping_add(upto(rng, e.length)),
        3 | 4 => end.wrapping_sub(len),
        5 => end.wrapping_sub(len).wrapping_add(1),
        6 => end.wrapping_sub(len).wrapping_sub(rng.range(1, 64)),
        7 => end.wrapping_add(rng.range(0, 1)),
        _ => rng.next_u64(),
    };
    w
}

#[test]
fn random_checks_match_the_model() {
    let t0 = std::time::Instant::now();
    let mut tb = Tb::new(0x4EAD_C4EC);
    let mut rng = Rng(tb.rng.next_u64());
    for _ in 0..1_000_000 {
        // Calm stretches let checks reach `Ready` and stay there; stormy ones kill often.
        let kill_odds = if (tb.stats.cycles / 2000) % 3 == 2 { 4 } else { 16 };
        let kill = rng.chance(1, kill_odds);
        let reset = rng.chance(1, 1000);
        let (start, key_slot) = match tb.step {
            Step::Key => (false, rng.chance(15, 16)),
            _ if rng.chance(1, 3) => (true, false),
            _ => (false, rng.chance(1, 10)),
        };
        let beat = if start {
            Some(random_wqe(&mut rng, &tb.qp, &tb.table).beat(&mut rng))
        } else if rng.chance(1, 3) {
            let junk = if rng.chance(1, 2) {
                random_wqe(&mut rng, &tb.qp, &tb.table).beat(&mut rng)
            } else {
                rng.bytes(64).try_into().unwrap()
            };
            Some(junk)
        } else {
            None
        };
        let mut drv = Drive { start, key_slot, kill, reset, beat_ok: rng.chance(7, 8), beat, ..Drive::default() };
        if kill || reset {
            if rng.chance(1, 4) {
                drv.qp = Some(Qp::random(&mut rng));
            }
            if rng.chance(1, 2) {
                drv.writes.push((rng.range(0, 63) as usize, random_entry(&mut rng)));
            }
        }
        tb.step(drv);
    }
    let s = tb.stats.clone();
    eprintln!("random_checks_match_the_model: {:.1} s, {s:#?}", t0.elapsed().as_secs_f64());
    assert!(s.ready_checks >= 30_000, "too few checks reached ready: {s:?}");
    assert!(s.inline_checks >= 10_000, "{s:?}");
    assert!(s.ineligible_starts >= 30_000, "{s:?}");
    assert!(s.killed_in_flight >= 10_000 && s.no_key_slot >= 1000 && s.ignored_starts >= 10_000, "{s:?}");
    for (name, b) in [
        ("key_ok", s.key_ok),
        ("va_ok", s.va_ok),
        ("off_ok", s.off_ok_with_va),
        ("bounds", s.bounds),
        ("inline_ok", s.inline_ok),
        ("npart", s.npart),
    ] {
        assert!(b[0] >= 1000 && b[1] >= 1000, "{name} not seen both ways enough: {b:?}: {s:?}");
    }
    assert!(s.room_eq_len_pass >= 1000 && s.room_plus_one_fail >= 500 && s.len0 >= 1000, "{s:?}");
}

/// The region the targeted tests use, at key-table index 5.
fn region() -> (usize, Mr, Qp) {
    let m =
        Mr { valid: true, access: 1, tag: 0x3C, pd: 0x12_3456, va: 0x7000_1000, length: 0x3000, iova: 0x1_2340_0000 };
    (5, m, Qp { pd: 0x12_3456, path_mtu: 3, log_stride: 0, ud: false })
}

/// A bench (seed `seed`) whose key table holds [`region`] and whose QP is its.
fn region_bench(seed: u64) -> (Tb, usize, Mr, Qp) {
    let mut tb = Tb::new(seed);
    let (i, m, qp) = region();
    tb.setup(qp, vec![(i, m.clone())]);
    (tb, i, m, qp)
}

#[test]
fn room_equal_to_len_passes_one_byte_more_fails() {
    let (mut tb, i, m, qp) = region_bench(1);
    let k = lkey_of(i, &m);

    let v = tb.check(&write_wqe(m.va + 0x1000, 0x2000, k));
    assert!(v.key_ok && v.va_ok && v.off_ok && v.bounds, "{v:?}");
    assert_eq!((v.off, v.room, v.base), (0x1000, 0x2000, m.iova + 0x1000));
    assert_eq!((v.nq, v.npart, v.npkts), (8, false, 8));

    let v = tb.check(&write_wqe(m.va + 0x1000, 0x2001, k));
    assert!(v.va_ok && v.off_ok && !v.bounds, "one byte more than the room: {v:?}");
    assert_eq!((v.room, v.nq, v.npart, v.npkts), (0x2000, 8, true, 9));

    let v = tb.check(&write_wqe(m.va + 0x1001, 0x2000, k));
    assert!(v.va_ok && v.off_ok && !v.bounds && v.room == 0x1FFF, "starting one byte later: {v:?}");

    // A region ending at 2^64: the SGE that ends with it passes, one byte more does not.
    let top = Mr { va: u64::MAX - 0xFFF, length: 0x1000, ..m.clone() };
    tb.setup(qp, vec![(i, top.clone())]);
    let v = tb.check(&write_wqe(top.va, 0x1000, k));
    assert!(v.va_ok && v.off_ok && v.bounds && v.room == 0x1000, "{v:?}");
    let v = tb.check(&write_wqe(top.va, 0x1001, k));
    assert!(v.va_ok && v.off_ok && !v.bounds, "{v:?}");
    let v = tb.check(&write_wqe(u64::MAX, 1, k));
    assert!(v.bounds && v.room == 1 && v.off == 0xFFF, "{v:?}");
    let v = tb.check(&write_wqe(u64::MAX, 2, k));
    assert!(!v.bounds, "{v:?}");
}

#[test]
fn addr_one_below_va_fails_va_ok() {
    let (mut tb, i, m, _) = region_bench(2);
    let k = lkey_of(i, &m);

    let v = tb.check(&write_wqe(m.va - 1, 1, k));
    assert!(v.key_ok && !v.va_ok && !v.bounds, "{v:?}");
    assert_eq!(v.off, u64::MAX, "the offset wraps");
    let v = tb.check(&write_wqe(m.va - 1, 0, k));
    assert!(!v.va_ok && !v.bounds, "even empty: {v:?}");

    let v = tb.check(&write_wqe(m.va, 1, k));
    assert!(v.key_ok && v.va_ok && v.off_ok && v.bounds && v.off == 0 && v.base == m.iova, "{v:?}");
    let v = tb.check(&write_wqe(m.va, 0x3000, k));
    assert!(v.bounds && v.room == 0x3000, "the whole region: {v:?}");
}

#[test]
fn wrong_pd_fails_key_ok() {
    let (mut tb, i, m, qp) = region_bench(3);
    let w = write_wqe(m.va + 0x10, 0x100, lkey_of(i, &m));

    let v = tb.check(&w);
    assert!(v.key_ok && v.bounds, "{v:?}");
    for pd in [qp.pd ^ 1, qp.pd ^ 0x80_0000, 0] {
        tb.setup(Qp { pd, ..qp }, vec![]);
        let v = tb.check(&w);
        assert!(!v.key_ok, "pd {pd:#x} against the entry's {:#x}: {v:?}", m.pd);
        assert!(v.va_ok && v.off_ok && v.bounds, "the bounds do not depend on the PD: {v:?}");
    }
    tb.setup(qp, vec![]);
    assert!(tb.check(&w).key_ok);
}

#[test]
fn key_tag_validity_and_high_bits() {
    let (mut tb, i, m, qp) = region_bench(4);
    let k = lkey_of(i, &m);
    let at = |lkey| write_wqe(m.va, 64, lkey);

    assert!(tb.check(&at(k)).key_ok);
    for (what, lkey) in
        [("tag bit 0", k ^ 1), ("tag bit 7", k ^ 0x80), ("lkey bit 14", k | 1 << 14), ("lkey bit 31", k | 1 << 31)]
    {
        let v = tb.check(&at(lkey));
        assert!(!v.key_ok, "{what}: {v:?}");
    }
    // Another index with the same tag holds another entry.
    tb.setup(qp, vec![(i + 1, Mr { valid: false, ..m.clone() })]);
    assert!(!tb.check(&at(lkey_of(i + 1, &m))).key_ok, "invalid entry");
    tb.setup(qp, vec![(i, Mr { valid: false, ..m.clone() })]);
    assert!(!tb.check(&at(k)).key_ok, "invalidated entry");
    tb.setup(qp, vec![(i, m.clone())]);
    assert!(tb.check(&at(k)).key_ok, "re-registered");
}

#[test]
fn offset_at_region_end() {
    let (mut tb, i, m, qp) = region_bench(5);
    let k = lkey_of(i, &m);

    let v = tb.check(&write_wqe(m.va + m.length, 0, k));
    assert!(v.va_ok && v.off_ok && v.bounds && v.room == 0, "empty SGE at the end: {v:?}");
    assert_eq!((v.npkts, v.len_m1), (1, 0xFFFF_FFFF));
    let v = tb.check(&write_wqe(m.va + m.length, 1, k));
    assert!(v.off_ok && !v.bounds, "{v:?}");
    let v = tb.check(&write_wqe(m.va + m.length + 1, 0, k));
    assert!(v.va_ok && !v.off_ok && !v.bounds, "one byte past the end: {v:?}");

    let empty = Mr { length: 0, ..m.clone() };
    tb.setup(qp, vec![(i, empty.clone())]);
    let v = tb.check(&write_wqe(empty.va, 0, k));
    assert!(v.key_ok && v.va_ok && v.off_ok && v.bounds, "empty SGE in an empty region: {v:?}");
    let v = tb.check(&write_wqe(empty.va, 1, k));
    assert!(v.off_ok && !v.bounds, "{v:?}");
}

#[test]
fn packet_count_edges() {
    let mut tb = Tb::new(6);
    let (i, m, qp) = region();
    let huge = Mr { va: 0, length: u64::MAX, ..m.clone() };
    tb.setup(qp, vec![(i, huge.clone())]);
    let k = lkey_of(i, &huge);
    for path_mtu in 1..=5u64 {
        tb.setup(Qp { path_mtu, ..qp }, vec![]);
        let mtu = 128u64 << path_mtu;
        for (len, nq, npart, npkts) in [
            (0, 0, false, 1),
            (1, 0, true, 1),
            (mtu - 1, 0, true, 1),
            (mtu, 1, false, 1),
            (mtu + 1, 1, true, 2),
            (2 * mtu, 2, false, 2),
            (1 << 31, (1 << 31) / mtu, false, (1 << 31) / mtu),
        ] {
            let v = tb.check(&write_wqe(0x1000, len as u32, k));
            assert_eq!((v.nq, v.npart, v.npkts), (nq, npart, npkts), "mtu {mtu}, len {len}: {v:?}");
            assert_eq!(v.len_m1, (len as u32).wrapping_sub(1) as u64);
            assert!(v.bounds);
        }
    }
}

#[test]
fn inline_length_edges() {
    let (mut tb, i, m, qp) = region_bench(7);
    let inl = |len: u32| Wqe {
        opcode: wr_opcode::RDMA_WRITE_WITH_IMM,
        flags: send_flags::INLINE,
        num_sge: 0,
        addr: 0xDEAD_BEEF,
        len,
        lkey: 0xFFFF_FFFF,
    };
    for (log_stride, max) in [(1u64, 64u32), (2, 192), (3, 448)] {
        tb.setup(Qp { log_stride, ..qp }, vec![]);
        let cap = max.min(256);
        for (len, ok) in [(0, true), (1, true), (cap, true), (cap + 1, false), (257, false), (0x8000_0000, false)] {
            let v = tb.check(&inl(len));
            assert!(v.inline, "{v:?}");
            assert_eq!(v.inline_ok, ok, "inline_max {max}, len {len}: {v:?}");
            assert_eq!(v.len, u64::from(len));
        }
    }
    tb.setup(Qp { log_stride: 3, path_mtu: 0, ..qp }, vec![]);
    assert!(!tb.check(&inl(64)).inline_ok, "PATH_MTU 0");
    // A plain WRITE is not inline.
    tb.setup(qp, vec![]);
    assert!(!tb.check(&write_wqe(m.va, 64, lkey_of(i, &m))).inline);
}

#[test]
fn ready_timing_kill_and_missing_key_slot() {
    let (mut tb, i, m, qp) = region_bench(8);
    let w = write_wqe(m.va + 8, 100, lkey_of(i, &m));
    let beat = w.beat(&mut tb.rng);
    let start = Drive { start: true, beat_ok: true, beat: Some(beat), ..Drive::default() };
    let key = Drive { key_slot: true, beat_ok: true, ..Drive::default() };
    let idle = Drive { beat_ok: true, ..Drive::default() };

    // Ready in the 4th cycle, held through junk, dropped the cycle after kill.
    assert!(tb.step(start.clone()).is_none());
    assert!(tb.step(key.clone()).is_none());
    assert!(tb.step(idle.clone()).is_none());
    let first = tb.step(idle.clone()).expect("ready 3 cycles after start");
    for _ in 0..50 {
        let junk = random_wqe(&mut tb.rng.clone(), &qp, &tb.table).beat(&mut tb.rng);
        let drv = Drive {
            start: tb.rng.chance(1, 2),
            key_slot: tb.rng.chance(1, 2),
            beat_ok: true,
            beat: Some(junk),
            ..Drive::default()
        };
        assert_eq!(tb.step(drv), Some(first), "held until kill");
    }
    assert!(tb.step(Drive { kill: true, ..idle.clone() }).is_some(), "still ready in the kill cycle");
    for _ in 0..5 {
        assert!(tb.step(idle.clone()).is_none(), "gone after kill");
    }

    // No key_slot right after start: given up, even if key_slot comes later.
    tb.step(start.clone());
    tb.step(idle.clone());
    tb.step(key.clone());
    for _ in 0..20 {
        assert!(tb.step(idle.clone()).is_none(), "no key_slot, no ready");
    }

    // A kill in any of the 3 cycles.
    for at in 0..3 {
        let seq = [start.clone(), key.clone(), idle.clone()];
        for (c, d) in seq.into_iter().enumerate() {
            let d = Drive { kill: c == at, ..d };
            assert!(tb.step(d).is_none());
        }
        for _ in 0..10 {
            assert!(tb.step(idle.clone()).is_none(), "killed at step {at}");
        }
    }
    // The same with reset.
    let seq = [start.clone(), Drive { reset: true, ..key.clone() }, idle.clone()];
    for d in seq {
        assert!(tb.step(d).is_none());
    }
    assert!(tb.step(idle.clone()).is_none(), "reset gives the check up");

    // A new start works.
    assert_eq!(tb.check(&w), first);
}

#[test]
fn ineligible_wqes_never_ready() {
    let (mut tb, i, m, qp) = region_bench(9);
    let mut took = 0;
    for ud in [false, true] {
        for log_stride in [0u64, 1] {
            tb.setup(Qp { ud, log_stride, ..qp }, vec![]);
            for opcode in 0..=7u8 {
                for num_sge in 0..=2u8 {
                    for flags in [0u8, send_flags::FENCE, send_flags::INLINE, send_flags::FENCE | send_flags::INLINE] {
                        let w = Wqe {
                            opcode,
                            flags: flags | send_flags::SIGNALED,
                            num_sge,
                            ..write_wqe(m.va, 64, lkey_of(i, &m))
                        };
                        let beat = w.beat(&mut tb.rng);
                        tb.step(Drive { start: true, beat_ok: true, beat: Some(beat), ..Drive::default() });
                        tb.step(Drive { key_slot: true, beat_ok: true, ..Drive::default() });
                        tb.step(Drive::default());
                        // `step` checks `ready` against the docstring's rule; count the takes.
                        let ready = tb.step(Drive::default()).is_some();
                        let plain = !ud
                            && log_stride == 0
                            && (opcode <= 1 || opcode == wr_opcode::RDMA_READ)
                            && num_sge == 1
                            && flags == 0;
                        let inline = !ud && log_stride == 1 && opcode <= 1 && flags == send_flags::INLINE;
                        assert_eq!(ready, plain || inline, "{w:?} ud {ud} stride {log_stride}");
                        took += usize::from(ready);
                        tb.step(Drive { kill: true, ..Drive::default() });
                    }
                }
            }
        }
    }
    // WRITE, WRITE WITH IMMEDIATE and READ: one SGE one slot (3); the WRITEs inline of any
    // SGE count (6).
    assert_eq!(took, 9);
    // beat_ok low: not taken either.
    let beat = write_wqe(m.va, 64, lkey_of(i, &m)).beat(&mut tb.rng);
    tb.step(Drive { start: true, beat_ok: false, beat: Some(beat), ..Drive::default() });
    for _ in 0..5 {
        assert!(tb.step(Drive { key_slot: true, ..Drive::default() }).is_none());
    }
}
