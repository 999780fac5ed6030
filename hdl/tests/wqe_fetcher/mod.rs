//! The WQE fetcher's test bench (`wqe_fetcher_tb.rs`): the DUT handle with its host memory
//! and DMA model (`Bench`), the WQE rings and burst limits it checks against, and a model of
//! the scheduler's takes (`scheduler_model`).
#![allow(dead_code)]

use crate::harness::{Dut, Rng};
use rnic_hdl::wqe_fetcher::{WqeFetcher, BUFFER_BEATS};
use std::collections::VecDeque;

/// No burst crosses a 4 KiB page (AXI4 A3.4.1).
pub const PAGE: u64 = 4096;
/// WQEs of a QP that may be in flight (the send window).
pub const WINDOW: u64 = 1 << rnic_contract::LOG_MAX_INFLIGHT_WQES;
/// The scheduler appends, and the fetch-ahead machine starts itself, only below this many WQEs
/// in flight (`in_flight_r`).
pub const APPEND_BELOW: u64 = 40;

/// An SQ ring: `2^log_size` WQEs of `64 << stride` bytes from `base`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Geom {
    pub base: u64,
    pub stride: u64,
    pub log_size: u32,
}

impl Geom {
    pub fn size(&self) -> u64 {
        1 << self.log_size
    }
    pub fn mask(&self) -> u64 {
        self.size() - 1
    }
    pub fn wqe_bytes(&self) -> u64 {
        64 << self.stride
    }
    /// Beats the scheduler reads of each WQE: all of them, but only the first 5 of a 512-byte WQE.
    pub fn bpw(&self) -> u64 {
        (1u64 << self.stride).min(5)
    }
    pub fn slot(&self, idx: u16) -> u64 {
        u64::from(idx) & self.mask()
    }
    pub fn addr(&self, idx: u16) -> u64 {
        self.base + self.slot(idx) * self.wqe_bytes()
    }
    pub fn end(&self) -> u64 {
        self.base + self.size() * self.wqe_bytes()
    }
}

/// What may limit a burst that starts at WQE `fci`, each in WQEs, from first principles.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub posted: u64,
    pub ring: u64,
    pub page: u64,
    pub window: u64,
    pub room: u64,
    pub most: u64,
}

pub const LIMIT_NAMES: [&str; 6] = ["posted", "ring end", "page end", "send window", "buffer room", "8 beats"];

impl Limits {
    /// `pi` and `in_flight` as the burst is sized, `held` beats asked for and not taken.
    pub fn new(g: &Geom, fci: u16, pi: u16, in_flight: u64, held: u64) -> Limits {
        let addr = g.addr(fci);
        Limits {
            posted: u64::from(pi.wrapping_sub(fci)),
            ring: g.size() - g.slot(fci),
            page: (PAGE - addr % PAGE) / g.wqe_bytes(),
            window: WINDOW.saturating_sub(in_flight),
            room: BUFFER_BEATS.saturating_sub(held) / g.bpw(),
            most: 8 / g.bpw(),
        }
    }
    pub fn all(&self) -> [u64; 6] {
        [self.posted, self.ring, self.page, self.window, self.room, self.most]
    }
    pub fn k(&self) -> u64 {
        self.all().into_iter().min().unwrap()
    }
}

/// Beat `beat` of WQE `index` of a QP's ring in its `epoch`: the first 8 bytes say which, the
/// rest is noise derived from them.
pub fn wqe_beat(qpn: u64, epoch: u32, index: u16, beat: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    out.push(qpn as u8);
    out.extend_from_slice(&epoch.to_le_bytes());
    out.extend_from_slice(&index.to_le_bytes());
    out.push(beat as u8);
    let mut h = Rng((qpn << 48) ^ (u64::from(epoch) << 24) ^ (u64::from(index) << 4) ^ beat);
    while out.len() < 64 {
        out.extend_from_slice(&h.next_u64().to_le_bytes());
    }
    out
}

/// A QP as the host and the scheduler see it: its ring in host memory, the host's producer
/// index and the scheduler's consumer index.
#[derive(Clone, Debug)]
pub struct Qp {
    pub qpn: u64,
    /// Bumped when the ring is reset (new bytes at the same indices).
    pub epoch: u32,
    pub g: Geom,
    pub ci: u16,
    pub pi: u16,
    /// The WQE index each slot holds (the last one posted there).
    pub slot: Vec<u16>,
    pub in_flight: u64,
}

impl Qp {
    pub fn new(qpn: u64, epoch: u32, g: Geom, ci: u16, posted: u64, in_flight: u64) -> Qp {
        let size = g.size();
        let mut slot = vec![0u16; size as usize];
        // Every slot holds an earlier, consumed WQE.
        for k in 0..size {
            let j = ci.wrapping_sub((size - k) as u16);
            slot[g.slot(j) as usize] = j;
        }
        let mut qp = Qp { qpn, epoch, g, ci, pi: ci, slot, in_flight };
        for _ in 0..posted {
            assert!(qp.post());
        }
        qp
    }
    pub fn posted(&self) -> u64 {
        u64::from(self.pi.wrapping_sub(self.ci))
    }
    /// The host posts a WQE if a slot is free.
    pub fn post(&mut self) -> bool {
        if self.posted() >= self.g.size() {
            return false;
        }
        let s = self.g.slot(self.pi) as usize;
        self.slot[s] = self.pi;
        self.pi = self.pi.wrapping_add(1);
        true
    }
    pub fn holds(&self, idx: u16) -> bool {
        self.slot[self.g.slot(idx) as usize] == idx
    }
    pub fn beat(&self, idx: u16, b: u64) -> Vec<u8> {
        wqe_beat(self.qpn, self.epoch, idx, b)
    }
    /// Host memory at `addr`, if it is in this ring.
    pub fn read(&self, addr: u64) -> Option<Vec<u8>> {
        if addr < self.g.base || addr >= self.g.end() {
            return None;
        }
        let off = addr - self.g.base;
        let s = (off / self.g.wqe_bytes()) as usize;
        Some(wqe_beat(self.qpn, self.epoch, self.slot[s], off % self.g.wqe_bytes() / 64))
    }
}

/// The scheduler's side of one cycle: its registers and its strobes.
#[derive(Clone, Debug, Default)]
pub struct Ctl {
    pub qpn: u64,
    pub ci: u16,
    pub pi: u16,
    pub g: Geom,
    pub in_flight: u64,
    pub in_flight_r: u64,
    pub size_limits: bool,
    pub size_saturate: bool,
    pub size_minima: bool,
    pub size_size: bool,
    pub fetch_wait: bool,
    pub discard: bool,
    pub append: bool,
    pub take: bool,
    pub pop: bool,
    pub cmd_fire: bool,
}

/// What the block shows in a cycle (all its outputs are registers), and the DMA's `ar_ready`.
#[derive(Clone, Debug, Default)]
pub struct Seen {
    pub head_ok: bool,
    pub head_qpn: u64,
    pub head_ci: u16,
    pub next_ci: u16,
    pub burst_room: bool,
    pub ahead_idle: bool,
    pub beat_ok: bool,
    pub beat: Vec<u8>,
    pub beat_err: bool,
    pub drop_due: bool,
    pub size_zero: bool,
    pub ar_valid: bool,
    pub ar_addr: u64,
    pub ar_len: u64,
    pub ar_ready: bool,
}

/// The DMA read issuer: `ar_ready` with probability `ready`, the first beat `lat` cycles after
/// the acceptance, a gap before a beat with probability `gap`, `r_err` with probability `err`.
#[derive(Clone, Copy, Debug)]
pub struct DmaCfg {
    pub ready: (u64, u64),
    pub lat: (u64, u64),
    pub gap: (u64, u64),
    pub err: (u64, u64),
}

pub const FAST_DMA: DmaCfg = DmaCfg { ready: (1, 1), lat: (3, 3), gap: (0, 1), err: (0, 1) };

/// A burst the DMA accepted: its beats (read from host memory at the acceptance) and the
/// discard generation it belongs to.
pub struct Burst {
    pub gen: u64,
    pub beats: Vec<(Vec<u8>, bool)>,
    pub ready: u64,
    pub sent: usize,
}

/// The model's state at the start of a cycle.
#[derive(Clone, Copy, Debug, Default)]
pub struct Hist {
    pub pi: u16,
    pub in_flight: u64,
    /// Beats of the current fetches asked for and not taken.
    pub cur_out: u64,
    pub held_lo: u64,
    pub held_hi: u64,
}

/// The fetch-ahead machine, as the model expects it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Ah {
    Idle,
    /// Started: its request is due in cycle `ar_at`.
    Busy {
        ar_at: u64,
    },
    Issue,
    Done {
        idle_at: u64,
    },
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ar {
    pub addr: u64,
    pub beats: u64,
    pub fresh: bool,
    /// The cycle it was accepted in.
    pub cycle: u64,
}

#[derive(Clone, Debug, Default)]
pub struct Stats {
    pub takes: u64,
    pub pops: u64,
    pub errs: u64,
    pub fresh: u64,
    pub appends: u64,
    pub kicks: u64,
    pub empty_appends: u64,
    pub appended_wqes: u64,
    pub discards: u64,
    pub discards_in_flight: u64,
    pub drops: u64,
    pub dropped_in: u64,
    pub cmd_fires: u64,
    pub resets: u64,
    pub switches: u64,
    pub size_zero: u64,
    pub requests: u64,
    pub exact: u64,
    pub binds: [u64; 6],
    pub cycles: u64,
}

/// The block, the DMA and host memory models, and the model of the block's promises.
pub struct Bench {
    pub dut: Dut,
    pub rng: Rng,
    pub seed: u64,
    pub cycle: u64,
    /// Host memory: every QP's ring (each in its own region).
    pub qps: Vec<Qp>,
    pub dma_cfg: DmaCfg,
    pub dma: VecDeque<Burst>,
    /// Read errors for the next beats the DMA reads (before the random ones).
    pub err_plan: VecDeque<bool>,
    pub ar_ready: bool,
    pub r_beat: Option<(u64, Vec<u8>, bool)>,
    /// Discard generation: bumped by each discard; `discarded_at[g]` is the cycle of the
    /// discard that ended generation `g`.
    pub gen: u64,
    pub discarded_at: Vec<u64>,
    /// The current generation's beats asked for and not taken, in order, with their errors;
    /// the first `arrived` of them have arrived.
    pub expect: VecDeque<(Vec<u8>, bool)>,
    pub arrived: u64,
    /// Discarded beats the buffer holds: surely `held_lo` (arrived before the discard), at
    /// most `held_hi` (those arriving in the discard's cycle or the next may be kept too).
    pub held_lo: u64,
    pub held_hi: u64,
    pub hist: Vec<Hist>,
    /// `head_ok`'s WQE count (`pf_n`), an append's WQEs due next cycle, `cmd_fire` since the
    /// last discard; `head_qpn`, `head_ci`, `next_ci`.
    pub n: u64,
    pub inc_due: u64,
    pub stale: bool,
    pub head_qpn: u64,
    pub head_ci: u16,
    pub next: Option<u16>,
    pub ah: Ah,
    pub kick_at: Option<u64>,
    /// The first cycle of the request `ar_valid` shows, and its first WQE.
    pub ar_start: Option<u64>,
    pub ar_fci: u16,
    pub last_limits: Option<u64>,
    pub saturates: Vec<u64>,
    pub drop_cycles: Vec<u64>,
    pub ars: Vec<Ar>,
    pub st: Stats,
}

impl Bench {
    pub fn new(seed: u64, dma_cfg: DmaCfg) -> Bench {
        let mut dut = Dut::build::<WqeFetcher>("wqe_fetcher").expect("build WqeFetcher");
        dut.reset(3);
        Bench {
            dut,
            rng: Rng(seed),
            seed,
            cycle: 0,
            qps: Vec::new(),
            dma_cfg,
            dma: VecDeque::new(),
            err_plan: VecDeque::new(),
            ar_ready: false,
            r_beat: None,
            gen: 0,
            discarded_at: Vec::new(),
            expect: VecDeque::new(),
            arrived: 0,
            held_lo: 0,
            held_hi: 0,
            hist: Vec::new(),
            n: 0,
            inc_due: 0,
            stale: false,
            head_qpn: 0,
            head_ci: 0,
            next: None,
            ah: Ah::Idle,
            kick_at: None,
            ar_start: None,
            ar_fci: 0,
            last_limits: None,
            saturates: Vec::new(),
            drop_cycles: Vec::new(),
            ars: Vec::new(),
            st: Stats::default(),
        }
    }

    pub fn at(&self) -> String {
        format!("seed {:#x} cycle {}", self.seed, self.cycle)
    }

    /// The start of a cycle: the DMA drives its side, then the block's outputs are read and
    /// checked against the model.
    pub fn look(&mut self) -> Seen {
        let t = self.cycle;
        let c = self.dma_cfg;
        self.ar_ready = self.rng.chance(c.ready.0, c.ready.1);
        self.r_beat = None;
        let go = !self.rng.chance(c.gap.0, c.gap.1);
        if let Some(b) = self.dma.front_mut() {
            if b.ready <= t && go {
                let (data, err) = b.beats[b.sent].clone();
                self.r_beat = Some((b.gen, data, err));
                b.sent += 1;
                if b.sent == b.beats.len() {
                    self.dma.pop_front();
                }
            }
        }
        let d = &mut self.dut;
        d.set_bit("ar_ready", self.ar_ready);
        match &self.r_beat {
            Some((_, data, err)) => {
                d.set_bit("r_valid", true);
                d.set_wide("r_data", data);
                d.set_bit("r_err", *err);
            }
            None => {
                d.set_bit("r_valid", false);
                d.set_bit("r_err", false);
            }
        }
        d.eval();
        let beat_ok = d.get_bit("beat_ok");
        let s = Seen {
            head_ok: d.get_bit("head_ok"),
            head_qpn: d.get("head_qpn"),
            head_ci: d.get("head_ci") as u16,
            next_ci: d.get("next_ci") as u16,
            burst_room: d.get_bit("burst_room"),
            ahead_idle: d.get_bit("ahead_idle"),
            beat_ok,
            beat: if beat_ok { d.get_wide("beat") } else { Vec::new() },
            beat_err: d.get_bit("beat_err"),
            drop_due: d.get_bit("drop_due"),
            size_zero: d.get_bit("size_zero"),
            ar_valid: d.get_bit("ar_valid"),
            ar_addr: d.get("ar_addr"),
            ar_len: d.get("ar_len"),
            ar_ready: self.ar_ready,
        };

        // The buffer's WQEs.
        let head = self.n != 0 && !self.stale;
        assert_eq!(
            s.head_ok,
            head,
            "{}: head_ok (WQEs counted {}, context command since the discard {})",
            self.at(),
            self.n,
            self.stale
        );
        if s.head_ok {
            assert_eq!(s.head_qpn, self.head_qpn, "{}: head_qpn", self.at());
            assert_eq!(s.head_ci, self.head_ci, "{}: head_ci", self.at());
        }
        if let Some(nx) = self.next {
            assert_eq!(s.next_ci, nx, "{}: next_ci", self.at());
        }
        // The head beat.
        assert!(!(s.beat_ok && s.drop_due), "{}: beat_ok and drop_due at once", self.at());
        if s.drop_due {
            assert!(self.held_hi > 0, "{}: drop_due with no discarded beat in the buffer", self.at());
        }
        if s.beat_ok {
            assert_eq!(self.held_lo, 0, "{}: beat_ok while discarded beats are still held ahead of it", self.at());
            // (Any discarded beat that may have been kept is gone: it would be ahead.)
            self.held_hi = 0;
            assert!(self.arrived > 0, "{}: beat_ok before the beat arrived (or a discarded beat served)", self.at());
            let (data, err) = self.expect.front().unwrap();
            assert!(
                s.beat == *data,
                "{}: the head beat is not the next beat of the current fetches: got {:02x?}, expected {:02x?}",
                self.at(),
                &s.beat[..8],
                &data[..8]
            );
            assert_eq!(s.beat_err, *err, "{}: beat_err of the head beat", self.at());
        }
        s
    }

    /// Beats of the burst a fetch from `fci` may read, sized with `size_limits` in cycle `l`:
    /// the limits with the most room, and the least and most WQEs.
    pub fn bounds(&self, g: &Geom, fci: u16, l: u64) -> (Limits, u64, u64) {
        let h = self.hist[l as usize];
        let h1 = self.hist[l as usize + 1];
        let least = Limits::new(g, fci, h.pi, h.in_flight, h1.cur_out + h1.held_hi);
        let most = Limits::new(g, fci, h.pi, h.in_flight, h1.cur_out + h1.held_lo);
        (most, least.k(), most.k())
    }

    /// A new request (first cycle): address and size against the limits.
    pub fn check_burst(&mut self, c: &Ctl, fci: u16, addr: u64, beats: u64, fresh: bool) {
        let t = self.cycle;
        let g = c.g;
        let what = if fresh { "fresh fetch" } else { "append" };
        let (lim, kmin, kmax) = self.bounds(&g, fci, t - 4);
        assert_eq!(addr, g.addr(fci), "{}: {what} from WQE {fci} at the wrong address ({g:?})", self.at());
        assert!(beats <= 8, "{}: {what} of {beats} beats", self.at());
        assert_eq!(beats % g.bpw(), 0, "{}: {what} of {beats} beats: not whole WQEs of {}", self.at(), g.bpw());
        let k = beats / g.bpw();
        assert!(k >= 1);
        assert_eq!(
            addr / PAGE,
            (addr + 64 * beats - 1) / PAGE,
            "{}: {what} {addr:#x} x {beats} crosses a page",
            self.at()
        );
        assert!(
            g.slot(fci) + k <= g.size(),
            "{}: {what} of {k} WQEs from slot {} past the ring's end",
            self.at(),
            g.slot(fci)
        );
        assert!(
            u64::from(fci.wrapping_sub(c.ci)) + k <= u64::from(c.pi.wrapping_sub(c.ci)),
            "{}: {what} of {k} WQEs from {fci} reads unposted WQEs (ci {}, pi {})",
            self.at(),
            c.ci,
            c.pi
        );
        assert!(k <= lim.window, "{}: {what} of {k} WQEs past the send window ({lim:?})", self.at());
        assert!(
            kmin <= k && k <= kmax,
            "{}: {what} from WQE {fci} of {k} WQEs, expected {kmin}..={kmax} (limits {lim:?})",
            self.at()
        );
        self.st.requests += 1;
        if kmin == kmax {
            self.st.exact += 1;
            for (i, v) in lim.all().into_iter().enumerate() {
                if v == k {
                    self.st.binds[i] += 1;
                }
            }
        }
    }

    /// The rest of a cycle: the scheduler's inputs (`c`), the request, the clock edge, and the
    /// model's updates.
    pub fn commit(&mut self, c: &Ctl, s: &Seen) {
        let t = self.cycle;
        let d = &mut self.dut;
        d.set("qpn", c.qpn);
        d.set("ci", u64::from(c.ci));
        d.set("pi", u64::from(c.pi));
        d.set("sq_base", c.g.base);
        d.set("sq_log_stride", c.g.stride);
        d.set("sq_mask", c.g.mask());
        d.set("in_flight", c.in_flight);
        d.set("in_flight_r", c.in_flight_r);
        d.set_bit("size_limits", c.size_limits);
        d.set_bit("size_saturate", c.size_saturate);
        d.set_bit("size_minima", c.size_minima);
        d.set_bit("size_size", c.size_size);
        d.set_bit("fetch_wait", c.fetch_wait);
        d.set_bit("discard", c.discard);
        d.set_bit("append", c.append);
        // The scheduler's takes are intents the block acts on only with `beat_ok`: a pop as
        // `WaitWqeBeats` (`pop_wait`, with `last_slot` on a WQE's last beat) or, one cycle in
        // two, a one-beat take as `NextWqe` (`pop_next`). With no beat at the head the
        // intents are raised now and then all the same: nothing may be taken.
        let idle_intent = !c.pop && !s.beat_ok && t % 3 == 0;
        let as_next = c.take && t % 2 == 0;
        d.set_bit("pop_wait", (c.pop && !as_next) || idle_intent);
        d.set_bit("pop_next", as_next || (idle_intent && t % 2 == 0));
        d.set_bit("last_slot", (c.take && !as_next) || (idle_intent && t % 4 == 0));
        d.set_bit("cmd_fire", c.cmd_fire);
        self.hist.push(Hist {
            pi: c.pi,
            in_flight: c.in_flight,
            cur_out: self.expect.len() as u64,
            held_lo: self.held_lo,
            held_hi: self.held_hi,
        });
        // The driver keeps the protocol (a failure here is the test's bug).
        assert!(
            !c.discard || (self.ah == Ah::Idle && !c.fetch_wait && self.ar_start.is_none() && self.kick_at != Some(t)),
            "{}: driver: discard while a fetch runs",
            self.at()
        );
        assert!(!c.append || self.ah == Ah::Idle, "{}: driver: append while the fetch-ahead machine runs", self.at());
        assert!(!c.pop || s.beat_ok, "{}: driver: pop without beat_ok", self.at());
        assert!(!c.take || c.pop, "{}: driver: take without pop", self.at());
        let sizing = c.size_limits || c.size_saturate || c.size_minima || c.size_size;
        if c.size_limits {
            self.last_limits = Some(t);
        }
        if c.size_saturate {
            self.saturates.push(t);
        }
        if c.size_size {
            let (lim, kmin, kmax) = self.bounds(&c.g, c.ci, t - 3);
            if kmax == 0 {
                assert!(s.size_zero, "{}: size_zero low with no room ({lim:?})", self.at());
            }
            if kmin > 0 {
                assert!(!s.size_zero, "{}: size_zero high with room ({lim:?})", self.at());
            }
            self.st.size_zero += u64::from(s.size_zero);
        }

        // The fetch-ahead machine.
        match self.ah {
            Ah::Idle => assert!(s.ahead_idle, "{}: ahead_idle low with no append started", self.at()),
            Ah::Busy { ar_at } => {
                if t < ar_at {
                    assert!(!s.ahead_idle, "{}: ahead_idle high while an append is being sized", self.at());
                    assert!(!s.ar_valid, "{}: an append's request before its sizing ended", self.at());
                } else if !s.ar_valid {
                    // Sized to nothing: only when the buffer had no room.
                    let (lim, _, kmax) = self.bounds(&c.g, self.next.unwrap(), t - 4);
                    assert_eq!(kmax, 0, "{}: no request 7 cycles after an append started ({lim:?})", self.at());
                    assert!(s.ahead_idle, "{}: ahead_idle low after an append sized to nothing", self.at());
                    self.ah = Ah::Idle;
                    self.st.empty_appends += 1;
                }
            }
            Ah::Issue => {
                assert!(!s.ahead_idle, "{}: ahead_idle high while an append's request waits", self.at());
                assert!(s.ar_valid, "{}: an append's request withdrawn", self.at());
            }
            Ah::Done { idle_at } => {
                if t < idle_at {
                    assert!(!s.ahead_idle, "{}: ahead_idle high the cycle after an append's acceptance", self.at());
                } else {
                    assert!(s.ahead_idle, "{}: ahead_idle low two cycles after an append's acceptance", self.at());
                    self.ah = Ah::Idle;
                }
            }
        }

        // The request.
        let mut fresh_acc = None;
        let mut app_acc = None;
        if s.ar_valid {
            assert!(!sizing, "{}: a request while a fresh fetch is being sized", self.at());
            if self.ar_start.is_none() {
                self.ar_start = Some(t);
                let fci = if c.fetch_wait {
                    assert_eq!(
                        self.last_limits.map(|l| l + 4),
                        Some(t),
                        "{}: a fresh fetch's request not 4 cycles after its size_limits",
                        self.at()
                    );
                    c.ci
                } else {
                    assert_eq!(
                        self.ah,
                        Ah::Busy { ar_at: t },
                        "{}: a request neither of a fresh fetch nor of an append due now",
                        self.at()
                    );
                    self.ah = Ah::Issue;
                    self.next.expect("an append before any fetch")
                };
                self.ar_fci = fci;
                self.check_burst(c, fci, s.ar_addr, s.ar_len + 1, c.fetch_wait);
            }
            if self.ar_ready {
                let (addr, beats, fci, g) = (s.ar_addr, s.ar_len + 1, self.ar_fci, c.g);
                let k = beats / g.bpw();
                let host = self.qps.iter().position(|q| addr >= q.g.base && addr < q.g.end());
                let host = host.unwrap_or_else(|| panic!("{}: request {addr:#x} outside every ring", self.at()));
                for j in 0..k as u16 {
                    assert!(
                        self.qps[host].holds(fci.wrapping_add(j)),
                        "{}: request reads WQE {} whose slot does not hold it",
                        self.at(),
                        fci.wrapping_add(j)
                    );
                }
                let mut data = Vec::with_capacity(beats as usize);
                for i in 0..beats {
                    let a = addr + 64 * i;
                    let bytes = self.qps.iter().find_map(|q| q.read(a)).unwrap();
                    let (en, ed) = self.dma_cfg.err;
                    let err = match self.err_plan.pop_front() {
                        Some(e) => e,
                        None => self.rng.chance(en, ed),
                    };
                    self.expect.push_back((bytes.clone(), err));
                    data.push((bytes, err));
                }
                let lat = self.rng.range(self.dma_cfg.lat.0, self.dma_cfg.lat.1);
                self.dma.push_back(Burst { gen: self.gen, beats: data, ready: t + lat, sent: 0 });
                self.ars.push(Ar { addr, beats, fresh: c.fetch_wait, cycle: t });
                self.ar_start = None;
                self.next = Some(fci.wrapping_add(k as u16));
                assert!(
                    self.expect.len() as u64 + self.held_lo <= BUFFER_BEATS,
                    "{}: {} beats asked for and not taken, {} discarded ones held: more than the buffer",
                    self.at(),
                    self.expect.len(),
                    self.held_lo
                );
                if c.fetch_wait {
                    fresh_acc = Some(k);
                    self.kick_at = Some(t + 1);
                    self.st.fresh += 1;
                } else {
                    app_acc = Some(k);
                    self.ah = Ah::Done { idle_at: t + 2 };
                    self.st.appended_wqes += k;
                }
            }
        } else {
            assert!(self.ar_start.is_none(), "{}: a request withdrawn before its acceptance", self.at());
            assert!(!c.fetch_wait, "{}: FetchWqe without a request", self.at());
        }
        if self.kick_at == Some(t) {
            // A fresh fetch was accepted last cycle: the fetch-ahead machine starts itself if
            // more WQEs are posted (and fewer than 40 in flight).
            self.kick_at = None;
            if self.next != Some(c.pi) && c.in_flight_r < APPEND_BELOW {
                assert_eq!(self.ah, Ah::Idle);
                self.ah = Ah::Busy { ar_at: t + 7 };
                self.st.kicks += 1;
            }
        }
        if c.append {
            self.ah = Ah::Busy { ar_at: t + 7 };
            self.st.appends += 1;
        }

        // Beats in and out.
        let mut arrived_now = 0;
        if let Some((g, _, _)) = &self.r_beat {
            if *g == self.gen {
                self.arrived += 1;
                arrived_now = 1;
            } else if t <= self.discarded_at[*g as usize] + 1 {
                self.held_hi += 1;
            } else {
                self.st.dropped_in += 1;
            }
        }
        if s.drop_due {
            self.held_hi -= 1;
            self.held_lo = self.held_lo.saturating_sub(1);
            self.st.drops += 1;
            self.drop_cycles.push(t);
        }
        if c.pop {
            let (_, err) = self.expect.pop_front().unwrap();
            self.arrived -= 1;
            self.st.pops += 1;
            self.st.errs += u64::from(err);
        }
        // The buffer's WQEs (`pf_n`: a fresh fetch's from the cycle after its acceptance, an
        // append's a cycle later; a take one less from the next cycle).
        let mut n = self.n + self.inc_due;
        self.inc_due = 0;
        if c.take {
            assert!(n > 0, "{}: driver: take with no WQE in the buffer", self.at());
            n -= 1;
            self.head_ci = self.head_ci.wrapping_add(1);
            self.st.takes += 1;
        }
        if let Some(k) = fresh_acc {
            n = k;
            self.head_qpn = c.qpn;
            self.head_ci = c.ci;
        }
        if let Some(k) = app_acc {
            self.inc_due = k;
        }
        if c.discard {
            if !self.dma.is_empty() {
                self.st.discards_in_flight += 1;
            }
            self.held_lo += self.arrived - arrived_now;
            self.held_hi += self.arrived;
            self.discarded_at.push(t);
            self.gen += 1;
            self.expect.clear();
            self.arrived = 0;
            n = 0;
            self.stale = false;
            self.st.discards += 1;
        }
        if c.cmd_fire {
            self.stale = true;
            self.st.cmd_fires += 1;
        }
        self.n = n;
        assert!(
            self.held_lo + self.arrived <= BUFFER_BEATS,
            "{}: the buffer holds {} beats and {} discarded ones",
            self.at(),
            self.arrived,
            self.held_lo
        );
        self.dut.tick();
        self.cycle += 1;
        self.st.cycles += 1;
    }

    /// One cycle of manual driving: the registers in `c`, strobes set by `f` from what the block
    /// shows.
    pub fn step(&mut self, c: &Ctl, f: impl FnOnce(&Seen, &mut Ctl)) -> Seen {
        let s = self.look();
        let mut cc = c.clone();
        f(&s, &mut cc);
        self.commit(&cc, &s);
        s
    }

    pub fn idle(&mut self, c: &Ctl, n: usize) {
        for _ in 0..n {
            self.step(c, |_, _| {});
        }
    }

    /// Until the fetch-ahead machine is idle, every beat has arrived and the discarded beats
    /// surely held have been popped.
    pub fn settle(&mut self, c: &Ctl) {
        for _ in 0..2000 {
            if self.ah == Ah::Idle && self.dma.is_empty() && self.kick_at.is_none() && self.held_lo == 0 {
                self.idle(c, 4);
                return;
            }
            self.idle(c, 1);
        }
        panic!("{}: the block never settled", self.at());
    }

    /// A fresh fetch as the scheduler makes one (`ci` and the ring set at least two cycles
    /// before): `discard` once the fetch-ahead machine is idle, the four sizing steps (again
    /// while `size_zero`), the request held until accepted. Returns it and the sizing rounds.
    pub fn fresh_fetch(&mut self, c: &Ctl) -> (Ar, usize) {
        let mut guard = 0;
        loop {
            let t = self.cycle;
            let kick = self.kick_at == Some(t);
            let s = self.step(c, |s, cc| cc.discard = s.ahead_idle && !kick);
            if s.ahead_idle && !kick {
                break;
            }
            guard += 1;
            assert!(guard < 1000, "{}: the fetch-ahead machine never went idle", self.at());
        }
        let mut rounds = 0;
        loop {
            rounds += 1;
            self.step(c, |_, cc| cc.size_limits = true);
            self.step(c, |_, cc| cc.size_saturate = true);
            self.step(c, |_, cc| cc.size_minima = true);
            let s = self.step(c, |_, cc| cc.size_size = true);
            if !s.size_zero {
                break;
            }
            assert!(rounds < 100, "{}: size_zero for ever", self.at());
        }
        loop {
            let s = self.step(c, |_, cc| cc.fetch_wait = true);
            if s.ar_ready {
                break;
            }
        }
        (*self.ars.last().unwrap(), rounds)
    }

    /// `n` WQEs taken from the buffer's head as `WaitWqeBeats` takes them (each beat popped
    /// while `beat_ok`, `take` with the last), `ci` moving on after each; returns each beat
    /// with its `beat_err`, after checking it is the ring's WQE `ci`.
    pub fn take_wqes(&mut self, c: &mut Ctl, n: u64) -> Vec<(Vec<u8>, bool)> {
        let mut got = Vec::new();
        let host = self.qps.iter().position(|q| q.qpn == c.qpn && q.g == c.g).expect("the served QP");
        for _ in 0..n {
            let mut wb = 0;
            let mut guard = 0;
            while wb < c.g.bpw() {
                let last = wb + 1 == c.g.bpw();
                let s = self.step(c, |s, cc| {
                    cc.pop = s.beat_ok;
                    cc.take = s.beat_ok && last;
                });
                if s.beat_ok {
                    let want = self.qps[host].beat(c.ci, wb);
                    assert!(s.beat == want, "{}: WQE {} beat {wb} is not the ring's", self.at(), c.ci);
                    got.push((s.beat, s.beat_err));
                    wb += 1;
                }
                guard += 1;
                assert!(guard < 2000, "{}: WQE {} never arrived", self.at(), c.ci);
            }
            self.idle(c, 1);
            c.ci = c.ci.wrapping_add(1);
            self.qps[host].ci = c.ci;
            self.idle(c, 1);
        }
        got
    }

    /// `NextWqe`'s append, if the block shows room for a burst, WQEs posted past its last, and
    /// fewer than 40 in flight.
    pub fn try_append(&mut self, c: &Ctl) -> bool {
        let ok = |s: &Seen| s.burst_room && s.ahead_idle && s.next_ci != c.pi && c.in_flight_r < APPEND_BELOW;
        let s = self.step(c, |s, cc| cc.append = ok(s));
        ok(&s)
    }

    /// Registers of the scheduler serving QP `i` (no strobes).
    pub fn regs(&self, i: usize) -> Ctl {
        let q = &self.qps[i];
        Ctl {
            qpn: q.qpn,
            ci: q.ci,
            pi: q.pi,
            g: q.g,
            in_flight: q.in_flight,
            in_flight_r: q.in_flight,
            ..Ctl::default()
        }
    }

    /// The final state once everything is taken: nothing at the head, nothing held.
    pub fn check_empty(&mut self, c: &Ctl) {
        self.settle(c);
        self.idle(c, 40);
        let s = self.look();
        assert!(!s.beat_ok && !s.drop_due, "{}: beats left in the buffer at the end", self.at());
        assert!(self.expect.is_empty() && self.held_lo == 0, "{}: beats not served at the end", self.at());
        self.commit(c, &s);
    }
}

/// A ring in QP `i`'s region of host memory: 1..64 entries, mostly not 4 KiB aligned, often a
/// few WQEs before a page's end.
pub fn random_geom(rng: &mut Rng, i: usize, stride: u64) -> Geom {
    let region = 0x10_0000 * (i as u64 + 1);
    let wb = 64 << stride;
    let per_page = PAGE / wb;
    let off = if rng.chance(1, 2) { per_page - rng.range(1, per_page.min(8)) } else { rng.range(0, per_page - 1) };
    Geom { base: region + rng.range(0, 6) * PAGE + off * wb, stride, log_size: rng.range(0, 6) as u32 }
}

pub fn random_ci(rng: &mut Rng) -> u16 {
    if rng.chance(1, 3) {
        0xFFFF - rng.range(0, 80) as u16
    } else {
        rng.next_u64() as u16
    }
}

/// The model scheduler's states (`TxScheduler`'s, as far as the fetcher sees them).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum St {
    Idle,
    LoadQp,
    TakeQp,
    CheckSq,
    NextWqe,
    Limits,
    Saturate,
    Minima,
    Size,
    FetchWqe,
    WaitBeats,
    /// The WQE's checks and packets; `ci` moves on in the last cycle.
    Work(u64),
}

pub struct Cfg {
    pub seed: u64,
    pub stride: u64,
    pub wqes: u64,
    pub qps: usize,
    pub err: (u64, u64),
    /// Chance to leave the QP after a WQE.
    pub switch: (u64, u64),
}

/// Runs the model scheduler for `cfg.wqes` WQEs, then until every posted WQE is taken.
pub fn scheduler_model(cfg: &Cfg) -> Stats {
    let mut rng = Rng::from_env(cfg.seed);
    let seed = rng.0;
    eprintln!("wqe_fetcher_tb: stride {} seed {seed:#x} (RNIC_TB_SEED)", cfg.stride);
    let dma = DmaCfg { ready: (3, 4), lat: (1, 40), gap: (1, 5), err: cfg.err };
    let mut b = Bench::new(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD3A, dma);
    b.seed = seed;
    let mut qpns: Vec<u64> = Vec::new();
    while qpns.len() < cfg.qps {
        let q = rng.range(0, 63);
        if !qpns.contains(&q) {
            qpns.push(q);
        }
    }
    let mut epoch = 0u32;
    for (i, &qpn) in qpns.iter().enumerate() {
        let g = random_geom(&mut rng, i, cfg.stride);
        let ci = random_ci(&mut rng);
        let posted = rng.range(0, g.size());
        b.qps.push(Qp::new(qpn, epoch, g, ci, posted, rng.range(0, 30)));
        epoch += 1;
    }
    let nq = b.qps.len();
    let mut st = St::Idle;
    let mut cur = 0usize;
    let (mut ci, mut g) = (b.qps[0].ci, b.qps[0].g);
    // The queue checks `CheckSq` registers.
    let (mut sq_empty, mut pf_hit, mut ah_idle_r, mut pf_more) = (true, false, true, false);
    let mut wb = 0u64;
    let mut if_r = b.qps[0].in_flight;
    let mut taken = 0u64;
    let mut heavy = true;
    let mut last_take = 0u64;
    loop {
        let t = b.cycle;
        let done = taken >= cfg.wqes;
        if done && st == St::Idle && b.dma.is_empty() && b.qps.iter().all(|q| q.posted() == 0) {
            break;
        }
        assert!(t - last_take < 5000, "{}: no WQE taken for 5000 cycles (state {st:?})", b.at());
        // The host posts: bursts and lulls.
        if rng.chance(1, 1500) {
            heavy = !heavy;
        }
        if !done && rng.chance(1, if heavy { 5 } else { 40 }) {
            let q = if rng.chance(3, 4) { cur } else { rng.range(0, nq as u64 - 1) as usize };
            for _ in 0..rng.range(1, if heavy { 8 } else { 2 }) {
                b.qps[q].post();
            }
        }
        // WQEs recorded and retired: mostly below 40, now and then anywhere in 0..63.
        {
            let q = &mut b.qps[cur];
            if rng.chance(1, 400) {
                q.in_flight = rng.range(0, WINDOW - 1);
            } else if rng.chance(1, 6) {
                if rng.chance(3, 5) {
                    q.in_flight = q.in_flight.saturating_sub(1);
                } else {
                    q.in_flight = (q.in_flight + 1).min(WINDOW - 1);
                }
            }
        }
        let seen = b.look();
        let q = &b.qps[cur];
        let mut c = Ctl {
            qpn: q.qpn,
            ci,
            pi: q.pi,
            g,
            in_flight: q.in_flight,
            in_flight_r: if_r,
            size_limits: st == St::Limits,
            size_saturate: st == St::Saturate,
            size_minima: st == St::Minima,
            size_size: st == St::Size,
            fetch_wait: st == St::FetchWqe,
            ..Ctl::default()
        };
        // A context command that rewrites nothing.
        c.cmd_fire = rng.chance(1, 2500);
        let work = |rng: &mut Rng| if rng.chance(1, 10) { rng.range(4, 40) } else { rng.range(1, 3) };
        let next = match st {
            St::Idle => {
                let cands: Vec<usize> = (0..nq).filter(|&i| b.qps[i].posted() > 0).collect();
                if !seen.ahead_idle || cands.is_empty() {
                    St::Idle
                } else {
                    let i = if cands.contains(&cur) && rng.chance(1, 2) { cur } else { *rng.pick(&cands) };
                    if rng.chance(1, 8) {
                        // A context command resets the QP: a new ring, new bytes, new indices.
                        let stride = if rng.chance(1, 4) { rng.range(0, 3) } else { cfg.stride };
                        let g = random_geom(&mut rng, i, stride);
                        let ci = random_ci(&mut rng);
                        let posted = rng.range(1, g.size());
                        let qpn = b.qps[i].qpn;
                        b.qps[i] = Qp::new(qpn, epoch, g, ci, posted, rng.range(0, 50));
                        epoch += 1;
                        c.cmd_fire = true;
                        b.st.resets += 1;
                    }
                    if i != cur {
                        b.st.switches += 1;
                    }
                    cur = i;
                    St::LoadQp
                }
            }
            St::LoadQp => St::TakeQp,
            St::TakeQp => {
                ci = b.qps[cur].ci;
                g = b.qps[cur].g;
                St::CheckSq
            }
            St::CheckSq => {
                sq_empty = ci == c.pi;
                pf_hit = seen.head_ok && seen.head_qpn == c.qpn && seen.head_ci == ci;
                ah_idle_r = seen.ahead_idle;
                pf_more = seen.burst_room && seen.next_ci != c.pi && if_r < APPEND_BELOW;
                St::NextWqe
            }
            St::NextWqe => {
                if sq_empty {
                    St::Idle
                } else if pf_hit {
                    c.append = pf_more;
                    if g.stride == 0 && seen.beat_ok {
                        // A one-beat WQE at the head is taken here.
                        assert!(seen.beat == b.qps[cur].beat(ci, 0), "{}: WQE {ci} is not the ring's", b.at());
                        c.pop = true;
                        c.take = true;
                        taken += 1;
                        last_take = t;
                        St::Work(work(&mut rng))
                    } else {
                        wb = 0;
                        St::WaitBeats
                    }
                } else if !ah_idle_r {
                    St::CheckSq
                } else {
                    c.discard = true;
                    St::Limits
                }
            }
            St::Limits => St::Saturate,
            St::Saturate => St::Minima,
            St::Minima => St::Size,
            St::Size => {
                if seen.size_zero {
                    St::Limits
                } else {
                    St::FetchWqe
                }
            }
            St::FetchWqe => {
                if seen.ar_ready {
                    wb = 0;
                    St::WaitBeats
                } else {
                    St::FetchWqe
                }
            }
            St::WaitBeats => {
                if seen.beat_ok {
                    assert!(seen.beat == b.qps[cur].beat(ci, wb), "{}: WQE {ci} beat {wb} is not the ring's", b.at());
                    c.pop = true;
                    if wb + 1 == g.bpw() {
                        c.take = true;
                        taken += 1;
                        last_take = t;
                        St::Work(work(&mut rng))
                    } else {
                        wb += 1;
                        St::WaitBeats
                    }
                } else {
                    St::WaitBeats
                }
            }
            St::Work(0) => {
                ci = ci.wrapping_add(1);
                b.qps[cur].ci = ci;
                if rng.chance(cfg.switch.0, cfg.switch.1) {
                    St::Idle
                } else {
                    St::CheckSq
                }
            }
            St::Work(n) => St::Work(n - 1),
        };
        if_r = c.in_flight;
        b.commit(&c, &seen);
        st = next;
    }
    let c = Ctl { qpn: b.qps[cur].qpn, ci, pi: b.qps[cur].pi, g, in_flight: if_r, in_flight_r: if_r, ..Ctl::default() };
    b.check_empty(&c);
    assert_eq!(b.st.takes, taken);
    assert!(b.st.takes >= cfg.wqes);
    eprintln!("wqe_fetcher_tb: stride {}: {:?}", cfg.stride, b.st);
    b.st.clone()
}

/// A fresh fetch's request for a QP set up from nothing.
pub struct Case {
    pub what: &'static str,
    pub stride: u64,
    pub log_size: u32,
    pub base: u64,
    pub ci: u16,
    pub posted: u64,
    pub in_flight: u64,
    /// `ar_addr`, `ar_len + 1`.
    pub addr: u64,
    pub beats: u64,
}
