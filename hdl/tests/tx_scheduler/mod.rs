//! The scheduler's test bench, shared by `tx_scheduler_tb.rs` (what each WQE becomes) and
//! `tx_scheduler_fetch_tb.rs` (how the WQEs are fetched and the QPs served): the DUT handle
//! (`Tb`: context commands, doorbells, host memory with the SQ rings, the completer's counts),
//! the events it records, the reference model (`Model`) and the WQE builders.
#![allow(dead_code)]

use crate::harness::tables::{Mr, Peer};
use crate::harness::{Dut, Rng};
use rnic_contract::mr_entry::key;
use rnic_contract::verbs::{send_flags, wc_status, wr_opcode};
use rnic_contract::{qp_context as qp, wqe, Field, MAX_MSG_SZ};
use rnic_hdl::records::{InflightRec, LocalCompletion, TxJob};
use rnic_hdl::tx_scheduler::TxScheduler;
use std::collections::{HashMap, VecDeque};

pub fn get(bytes: &[u8], off: usize, width: usize) -> u64 {
    Field::at_bit(off, width).get(bytes)
}

pub const PSN_MASK: u32 = 0xFF_FFFF;

#[derive(Clone, Debug)]
pub struct QpCfg {
    pub mtu_code: u64,
    pub pd: u64,
    pub peer: Peer,
    pub sq_psn: u32,
    pub log_size: u64,
    pub log_stride: u64,
    pub sq_base: u64,
    pub max_rd_atomic: u64,
    /// A UD QP with this Q_Key (`qp_context::QP_TYPE` 1, `QKEY`).
    pub ud_qkey: Option<u64>,
}

impl QpCfg {
    pub fn random(rng: &mut Rng, mtu_code: u64, pd: u64, log_stride: u64) -> QpCfg {
        QpCfg {
            mtu_code,
            pd,
            peer: Peer::random(rng),
            // Some QPs start near the end of the PSN space.
            sq_psn: if rng.chance(1, 3) { PSN_MASK - rng.range(0, 20) as u32 } else { rng.u32() & PSN_MASK },
            log_size: 3,
            log_stride,
            sq_base: (rng.next_u64() & 0x0000_7FFF_FFFF_F000) | 0x1000,
            max_rd_atomic: 16,
            ud_qkey: None,
        }
    }
    pub fn mtu(&self) -> u64 {
        128 << self.mtu_code
    }
}

#[derive(Clone, Copy, Debug)]
pub struct Sge {
    pub addr: u64,
    pub len: u32,
    pub lkey: u32,
}

#[derive(Clone, Debug)]
pub struct Wqe {
    pub wr_id: u64,
    pub opcode: u8,
    pub flags: u8,
    pub imm: u32,
    pub remote_addr: u64,
    pub rkey: u32,
    pub sges: Vec<Sge>,
    /// UD: (remote QPN, remote Q_Key, destination IP, destination MAC).
    pub ud: Option<(u64, u64, u64, u64)>,
    /// `IBV_SEND_INLINE` data (SEND_FLAGS bit 3 set, the length in SGE 0's length field, the
    /// bytes from the second slot); `sges` is then empty.
    pub inline: Option<Vec<u8>>,
}

impl Wqe {
    /// The WQE as `post_send` lays it out in a ring of stride `64 << log_stride`.
    pub fn bytes(&self, log_stride: u64) -> Vec<u8> {
        let mut b = vec![0u8; wqe::stride(log_stride as usize)];
        wqe::WR_ID.put(&mut b, self.wr_id);
        wqe::OPCODE.put(&mut b, u64::from(self.opcode));
        wqe::SEND_FLAGS.put(&mut b, u64::from(self.flags));
        wqe::NUM_SGE.put(&mut b, self.sges.len() as u64);
        wqe::IMM_DATA.put(&mut b, u64::from(self.imm));
        wqe::REMOTE_ADDR.put(&mut b, self.remote_addr);
        wqe::RKEY.put(&mut b, u64::from(self.rkey));
        for (i, s) in self.sges.iter().enumerate() {
            let o = wqe::sge_offset(i);
            b[o..o + 8].copy_from_slice(&s.addr.to_le_bytes());
            b[o + 8..o + 12].copy_from_slice(&s.len.to_le_bytes());
            b[o + 12..o + 16].copy_from_slice(&s.lkey.to_le_bytes());
        }
        if let Some(d) = &self.inline {
            wqe::SEND_FLAGS.put(&mut b, u64::from(self.flags | send_flags::INLINE));
            wqe::INLINE_LENGTH.put(&mut b, d.len() as u64);
            // (A length past what the WQE holds, which the NIC must refuse: what fits.)
            let n = d.len().min(b.len() - wqe::INLINE_DATA);
            b[wqe::INLINE_DATA..wqe::INLINE_DATA + n].copy_from_slice(&d[..n]);
        }
        if let Some((qpn, qkey, ip, mac)) = self.ud {
            wqe::UD_REMOTE_QPN.put(&mut b, qpn);
            wqe::UD_REMOTE_QKEY.put(&mut b, qkey);
            wqe::UD_DEST_IP.put(&mut b, ip);
            wqe::UD_DEST_MAC.put(&mut b, mac);
        }
        b
    }
    pub fn is_read(&self) -> bool {
        self.opcode == wr_opcode::RDMA_READ
    }
    pub fn is_send(&self) -> bool {
        self.opcode == wr_opcode::SEND || self.opcode == wr_opcode::SEND_WITH_IMM
    }
    pub fn has_imm(&self) -> bool {
        self.opcode == wr_opcode::SEND_WITH_IMM || self.opcode == wr_opcode::RDMA_WRITE_WITH_IMM
    }
    pub fn wc_opcode(&self) -> u64 {
        use rnic_contract::verbs::wc_opcode as w;
        u64::from(if self.is_read() {
            w::RDMA_READ
        } else if self.is_send() {
            w::SEND
        } else {
            w::RDMA_WRITE
        })
    }
}

/// A packet job's fields that mean something for it (the others are don't-care).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Job {
    pub opcode: u64,
    pub ackreq: bool,
    pub se: bool,
    pub psn: u64,
    pub peer: Peer,
    pub plen: u64,
    pub atomic_eth: bool,
    /// The payload's first byte in its beat (when there is a payload).
    pub pay_skip: Option<u64>,
    /// RETH (va, rkey, len), when `has_reth`.
    pub reth: Option<(u64, u64, u64)>,
    /// ImmDt, when `has_ext4`.
    pub ext4: Option<u64>,
    /// DETH (Q_Key, source QP), when `has_deth`.
    pub deth: Option<(u64, u64)>,
}

/// One thing the scheduler did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ev {
    Fetch {
        addr: u64,
        beats: u64,
    },
    List {
        waddr: u64,
        iova: u64,
        len: u64,
    },
    Record {
        addr: u64,
        wr_id: u64,
        byte_len: u64,
        first_psn: u64,
        last_psn: u64,
        signaled: bool,
        rd_list: bool,
        wc_opcode: u64,
        /// Checked only where it means something (a READ of one SGE: its destination).
        local_iova: Option<u64>,
    },
    Job(Job),
    /// A payload read job and its piece record.
    Read {
        addr: u64,
        len: u64,
        pg_skip: u64,
        pg_len: u64,
        pg_last: bool,
    },
    Local {
        wr_id: u64,
        qpn: u64,
        status: u64,
        wc_opcode: u64,
    },
    /// An inline piece record (no read job) and the first `pg_len` bytes of the beats written
    /// to the inline-data FIFO for it (`il_write`/`il_data`, `ceil(pg_len / 64)` of them).
    Inline {
        pg_skip: u64,
        pg_len: u64,
        pg_last: bool,
        data: Vec<u8>,
    },
}

/// `want` with its don't-care fields taken from `got`.
pub fn masked(want: &Ev, got: &Ev) -> Ev {
    match (want, got) {
        (Ev::Record { local_iova: None, .. }, Ev::Record { .. }) => {
            let mut g = got.clone();
            if let Ev::Record { local_iova, .. } = &mut g {
                *local_iova = None;
            }
            g
        }
        _ => got.clone(),
    }
}

/// Compares the events apart from WQE fetches: the scheduler fetches up to 8 beats of
/// consecutive WQEs at once and keeps them in its prefetch buffer, so fetches no longer line
/// up one per WQE (the harness checks each fetch's shape as it is issued, and every WQE the
/// model expects is acted on only after its bytes were fetched: its events follow).
pub fn assert_events(want: &[Ev], got: &[Ev], ctx: &str) {
    let want: Vec<Ev> = want.iter().filter(|e| !matches!(e, Ev::Fetch { .. })).cloned().collect();
    let got: Vec<Ev> = got.iter().filter(|e| !matches!(e, Ev::Fetch { .. })).cloned().collect();
    for (i, w) in want.iter().enumerate() {
        let Some(g) = got.get(i) else {
            panic!("{ctx}: event {i} missing: want {w:x?}\nwant all {want:#x?}\ngot all {got:#x?}");
        };
        let g = masked(w, g);
        assert_eq!(&g, w, "{ctx}: event {i}\nwant all {want:#x?}\ngot all {got:#x?}");
    }
    assert_eq!(got.len(), want.len(), "{ctx}: extra events {:#x?}", &got[want.len()..]);
}

/// Where entry `k` of READ number `s` of QP `qpn` goes in the RX engine's READ list table
/// (4 lists per QP, used in turn).
pub fn list_addr(qpn: u64, s: u64, k: usize) -> u64 {
    qpn << 6 | (s % 4) << 4 | k as u64
}

/// The reference model: the key table and each QP's requester state.
#[derive(Default)]
pub struct Model {
    pub mrs: HashMap<u64, Mr>,
    pub qps: HashMap<u64, QpModel>,
}

pub struct QpModel {
    pub cfg: QpCfg,
    pub next_psn: u32,
    pub ci: u64,
    pub err: bool,
    /// READs and atomics sent so far: READ number `s` keeps its list at `s mod 4`.
    pub reads: u64,
}

impl Model {
    /// The translated address of `s`, if its lkey names a valid entry of the QP's PD with the
    /// key's tag (and LOCAL_WRITE when `write`), and `[addr, addr + len)` lies inside it.
    pub fn check(&self, pd: u64, s: &Sge, write: bool) -> Option<u64> {
        if s.lkey >> 14 != 0 {
            return None;
        }
        let m = self.mrs.get(&u64::from((s.lkey >> 8) & 0x3F))?;
        if !m.valid || m.tag != u64::from(s.lkey & 0xFF) || m.pd != pd || (write && m.access & 1 == 0) {
            return None;
        }
        let off = s.addr.wrapping_sub(m.va);
        (s.addr >= m.va && off <= m.length && u64::from(s.len) <= m.length - off).then(|| m.iova.wrapping_add(off))
    }

    /// The events WQE `w`, the next of QP `qpn`, must cause, in order.
    pub fn expect(&mut self, qpn: u64, w: &Wqe) -> Vec<Ev> {
        let q = &self.qps[&qpn];
        let cfg = q.cfg.clone();
        let (ci, err, psn0) = (q.ci, q.err, q.next_psn);
        let stride = cfg.log_stride;
        let slot = cfg.sq_base + ((ci & ((1 << cfg.log_size) - 1)) << (6 + stride));
        let mut ev = vec![Ev::Fetch { addr: slot, beats: (1u64 << stride).min(5) }];
        let sge_limit = [1usize, 5, 13, 16][stride as usize];
        let multi = w.sges.len() > 1;
        // The gather list: translated non-empty SGEs; whether all passed.
        let mut list = Vec::new();
        let mut all_ok = true;
        for s in &w.sges {
            if s.len == 0 {
                continue;
            }
            match self.check(cfg.pd, s, w.is_read()) {
                Some(iova) => list.push((iova, u64::from(s.len))),
                None => all_ok = false,
            }
        }
        let mut len: u64 = list.iter().map(|e| e.1).sum::<u64>();
        if let Some(d) = &w.inline {
            // Inline data: from the ring slot's second 64 bytes on.
            len = d.len() as u64;
            list = if len == 0 { vec![] } else { vec![(slot + wqe::INLINE_DATA as u64, len)] };
        }
        let ud = cfg.ud_qkey.is_some();
        let status = if err {
            wc_status::WR_FLUSH_ERR
        } else if ud && !w.is_send() {
            // UD: only SEND and SEND_WITH_IMM (IBTA Vol 1 9.8).
            wc_status::LOC_QP_OP_ERR
        } else if w.sges.len() > sge_limit
            || (ud && len > cfg.mtu())
            || (w.inline.is_none() && w.sges.iter().map(|s| u64::from(s.len)).sum::<u64>() > u64::from(MAX_MSG_SZ))
            || w.inline.as_ref().is_some_and(|d| d.len() > wqe::stride(stride as usize) - wqe::INLINE_DATA)
        {
            wc_status::LOC_LEN_ERR
        } else if !all_ok {
            wc_status::LOC_PROT_ERR
        } else {
            wc_status::SUCCESS
        };
        let q = self.qps.get_mut(&qpn).unwrap();
        q.ci += 1;
        if status != wc_status::SUCCESS {
            q.err = true;
            ev.push(Ev::Local { wr_id: w.wr_id, qpn, status: u64::from(status), wc_opcode: w.wc_opcode() });
            return ev;
        }
        let mtu = cfg.mtu();
        let npkts = len.div_ceil(mtu).max(1);
        q.next_psn = (psn0 + npkts as u32) & PSN_MASK;
        if w.is_read() && multi {
            for (k, e) in list.iter().enumerate() {
                ev.push(Ev::List { waddr: list_addr(qpn, q.reads, k), iova: e.0, len: e.1 });
            }
        }
        if w.is_read() {
            q.reads += 1;
        }
        ev.push(Ev::Record {
            addr: qpn << rnic_contract::LOG_MAX_INFLIGHT_WQES
                | (ci & ((1 << rnic_contract::LOG_MAX_INFLIGHT_WQES) - 1)),
            wr_id: w.wr_id,
            byte_len: len,
            first_psn: u64::from(psn0),
            last_psn: u64::from((psn0 + npkts as u32 - 1) & PSN_MASK),
            signaled: w.flags & send_flags::SIGNALED != 0,
            rd_list: w.is_read() && multi,
            wc_opcode: w.wc_opcode(),
            local_iova: (w.is_read() && !multi && len != 0).then(|| list[0].0),
        });
        let job = |psn: u32| Job {
            opcode: 0,
            ackreq: false,
            se: false,
            psn: u64::from(psn & PSN_MASK),
            peer: cfg.peer.clone(),
            plen: 0,
            atomic_eth: false,
            pay_skip: None,
            reth: None,
            ext4: None,
            deth: None,
        };
        if let (Some(own), Some((rqpn, rqkey, ip, mac))) = (cfg.ud_qkey, w.ud) {
            // One SEND ONLY with a DETH, to the WQE's address, no AckReq.
            ev.push(Ev::Job(Job {
                opcode: 0x64 | u64::from(w.has_imm()),
                se: w.flags & send_flags::SOLICITED != 0,
                plen: len,
                pay_skip: (len != 0).then(|| list[0].0 & 63),
                ext4: w.has_imm().then_some(u64::from(w.imm)),
                peer: Peer { dest_qpn: rqpn, dest_ip: ip, dest_mac: mac, ..cfg.peer.clone() },
                deth: Some((if rqkey >> 31 == 1 { own } else { rqkey }, qpn)),
                ..job(psn0)
            }));
            if len != 0 {
                let a = list[0].0;
                ev.push(Ev::Read { addr: a, len, pg_skip: a & 63, pg_len: len, pg_last: true });
            }
            return ev;
        }
        if w.is_read() {
            ev.push(Ev::Job(Job {
                opcode: 0x0C,
                ackreq: true,
                reth: Some((w.remote_addr, u64::from(w.rkey), len)),
                ..job(psn0)
            }));
            return ev;
        }
        // WRITE / SEND: packets of the path MTU, each followed by its pieces.
        let (mut e, mut used) = (0usize, 0u64);
        for i in 0..npkts {
            let (first, last) = (i == 0, i + 1 == npkts);
            let plen = if last { len - i * mtu } else { mtu };
            let base = match (w.is_send(), first, last) {
                (false, true, true) => 0x0A,
                (false, true, false) => 0x06,
                (false, false, true) => 0x08,
                (false, false, false) => 0x07,
                (true, true, true) => 0x04,
                (true, true, false) => 0x00,
                (true, false, true) => 0x02,
                (true, false, false) => 0x01,
            };
            let imm = w.has_imm() && last;
            ev.push(Ev::Job(Job {
                opcode: base | u64::from(imm),
                ackreq: last || i % 16 == 15,
                se: w.flags & send_flags::SOLICITED != 0 && last && (w.is_send() || w.has_imm()),
                plen,
                pay_skip: (plen != 0).then(|| (list[e].0 + used) & 63),
                reth: (first && !w.is_send()).then_some((w.remote_addr, u64::from(w.rkey), len)),
                ext4: imm.then_some(u64::from(w.imm)),
                ..job(psn0 + i as u32)
            }));
            if let Some(d) = w.inline.as_ref().filter(|d| (1..=256).contains(&d.len())) {
                // Up to 256 bytes (one packet): from the WQE beats already fetched.
                ev.push(Ev::Inline { pg_skip: 0, pg_len: plen, pg_last: true, data: d.clone() });
                continue;
            }
            let mut left = plen;
            while left > 0 {
                let (iova, elen) = list[e];
                let n = left.min(elen - used);
                let a = iova + used;
                left -= n;
                ev.push(Ev::Read { addr: a, len: n, pg_skip: a & 63, pg_len: n, pg_last: left == 0 });
                used += n;
                if used == elen {
                    e += 1;
                    used = 0;
                }
            }
        }
        ev
    }
}

/// The model completer's counts for one QP, as served on `acked_*`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Acked {
    pub wqes: u64,
    pub reads: u64,
    pub psn: u32,
}

pub struct Tb {
    pub dut: Dut,
    pub rng: Rng,
    pub model: Model,
    /// Host memory, by 64-byte beat address.
    pub mem: HashMap<u64, Vec<u8>>,
    /// The doorbell FIFO (a rearm puts the QP at its end, with its newest index, unless it is in).
    pub db: VecDeque<u64>,
    /// Doorbell reads (cycle, `dbg_state` at the read: 0 is `Idle`) and rearms (cycle, QP).
    pub db_reads: Vec<(u64, u64)>,
    pub rearms: Vec<(u64, u64)>,
    /// WQE beats to deliver: (earliest cycle, data).
    pub beats: VecDeque<(u64, Vec<u8>)>,
    pub acked: Vec<Acked>,
    /// The QP the completer's table was addressed at in the previous cycle.
    pub acked_sel: usize,
    /// Local completions the model completer retires: (cycle, QP).
    pub lc_retire: VecDeque<(u64, usize)>,
    /// WQEs posted per QP.
    pub posted: Vec<u64>,
    /// Local completions retired per QP.
    pub locals_retired: Vec<u64>,
    pub events: Vec<(u64, Ev)>,
    pub backpressure: bool,
    /// Cycles from a WQE fetch's acceptance to its first beat, less one (2 unless a test
    /// models the PCIe round trip).
    pub wqe_latency: u64,
    pub prev_afull: bool,
    /// `il_afull` last cycle, and the inline piece still owed beats (its event's index).
    pub prev_il_afull: bool,
    pub il_open: Option<usize>,
    /// `job_lock` last cycle, and whether a packet job was written whose pieces are still
    /// owed (the response generator may write only in a cycle after `job_lock` was low, so
    /// it must be high in the cycle before every cycle with pieces owed).
    pub prev_lock: bool,
    pub pieces_owed: bool,
    pub cycle: u64,
    /// `dbg_state` last cycle, and how often `WaitWqeBeats` (5) went straight on to
    /// `ActOnChecks` (13): an inline WRITE taking the head check's verdicts.
    pub prev_dbg: u64,
    pub fast_inline: u64,
    pub pulses_tx_req: u64,
    pub pulses_local_err: u64,
}

impl Tb {
    pub fn new(seed: u64) -> Tb {
        let mut dut = Dut::build::<TxScheduler>("tx_scheduler").expect("build the TX scheduler model");
        dut.set("db_empty", 1);
        dut.set("rw_empty", 1);
        dut.reset(2);
        Tb {
            dut,
            rng: Rng::from_env(seed),
            model: Model::default(),
            mem: HashMap::new(),
            db: VecDeque::new(),
            db_reads: Vec::new(),
            rearms: Vec::new(),
            beats: VecDeque::new(),
            acked: vec![Acked::default(); 64],
            acked_sel: 0,
            lc_retire: VecDeque::new(),
            posted: vec![0; 64],
            locals_retired: vec![0; 64],
            events: Vec::new(),
            backpressure: false,
            wqe_latency: 2,
            prev_afull: false,
            prev_il_afull: false,
            il_open: None,
            prev_lock: false,
            pieces_owed: false,
            cycle: 0,
            prev_dbg: 0,
            fast_inline: 0,
            pulses_tx_req: 0,
            pulses_local_err: 0,
        }
    }

    /// A context command as BAR0 presents it: `cmd_valid` with the command held until the
    /// engine is ready, then one `cmd_fire` cycle.
    pub fn command(&mut self, op: u64, index: u64, record: &[u8]) {
        self.dut.set("cmd_op", op);
        self.dut.set("cmd_index", index);
        self.dut.set_wide("cmd_record", record);
        self.dut.set("cmd_valid", 1);
        let mut t = 0;
        loop {
            self.dut.eval();
            if self.dut.get_bit("cmd_ready") {
                break;
            }
            self.step();
            t += 1;
            assert!(t < 1000, "cmd_ready never high");
        }
        self.dut.set("cmd_fire", 1);
        self.step();
        self.dut.set("cmd_fire", 0);
        self.dut.set("cmd_valid", 0);
        let junk = self.rng.bytes(64);
        self.dut.set_wide("cmd_record", &junk);
    }

    /// Creates QP `qpn` in RTS with its SQ PSN loaded (INIT_SQ_PSN), as `modify_qp` to RTS does.
    pub fn create_qp(&mut self, qpn: u64, c: &QpCfg) {
        let mut r = [0u8; 64];
        qp::STATE.put(&mut r, 3);
        qp::INIT_SQ_PSN.put(&mut r, 1);
        qp::SQ_PSN.put(&mut r, u64::from(c.sq_psn));
        qp::PATH_MTU.put(&mut r, c.mtu_code);
        qp::PD.put(&mut r, c.pd);
        c.peer.put(&mut r);
        qp::SQ_LOG_SIZE.put(&mut r, c.log_size);
        qp::SQ_LOG_STRIDE.put(&mut r, c.log_stride);
        qp::SQ_BASE.put(&mut r, c.sq_base);
        qp::MAX_RD_ATOMIC.put(&mut r, c.max_rd_atomic);
        qp::SEND_CQ.put(&mut r, 1);
        if let Some(qk) = c.ud_qkey {
            qp::QP_TYPE.put(&mut r, 1);
            qp::QKEY.put(&mut r, qk);
        }
        self.command(1, qpn, &r);
        self.model.qps.insert(qpn, QpModel { cfg: c.clone(), next_psn: c.sq_psn, ci: 0, err: false, reads: 0 });
        self.acked[qpn as usize] = Acked { wqes: 0, reads: 0, psn: c.sq_psn };
        self.posted[qpn as usize] = 0;
        self.locals_retired[qpn as usize] = 0;
    }

    pub fn write_mr(&mut self, index: u64, m: &Mr) {
        self.command(2, index, &m.record());
        self.model.mrs.insert(index, m.clone());
    }

    /// Writes `wqes` into QP `qpn`'s ring, rings its doorbell, and returns the events the model
    /// expects of them.
    pub fn post(&mut self, qpn: u64, wqes: &[Wqe]) -> Vec<Ev> {
        let cfg = self.model.qps[&qpn].cfg.clone();
        let mut want = Vec::new();
        for w in wqes {
            let i = self.posted[qpn as usize];
            let slot = cfg.sq_base + ((i & ((1 << cfg.log_size) - 1)) << (6 + cfg.log_stride));
            let b = w.bytes(cfg.log_stride);
            for (k, chunk) in b.chunks(64).enumerate() {
                self.mem.insert(slot + 64 * k as u64, chunk.to_vec());
            }
            self.posted[qpn as usize] += 1;
            want.extend(self.model.expect(qpn, w));
        }
        self.db.push_back(qpn << 16 | (self.posted[qpn as usize] & 0xFFFF));
        want
    }

    /// The completer retires every WQE of QP `qpn` recorded so far (as its ACKs and responses
    /// would): `acked_data` = the WQEs recorded, `acked_reads` = the READs among them.
    pub fn retire_all(&mut self, qpn: u64) {
        let recs: Vec<&Ev> = self
            .events
            .iter()
            .map(|e| &e.1)
            .filter(|e| matches!(e, Ev::Record { addr, .. } if addr >> rnic_contract::LOG_MAX_INFLIGHT_WQES == qpn))
            .collect();
        let reads = recs.iter().filter(|e| matches!(e, Ev::Record { wc_opcode: 2, .. })).count() as u64;
        let a = &mut self.acked[qpn as usize];
        if let Some(Ev::Record { last_psn, .. }) = recs.last() {
            a.psn = (*last_psn as u32 + 1) & PSN_MASK;
        }
        a.wqes = recs.len() as u64 + self.locals_retired[qpn as usize];
        a.reads = reads;
    }

    /// One clock cycle: drive the inputs, record what the block did, tick.
    pub fn step(&mut self) {
        let c = self.cycle;
        let bp = self.backpressure;
        let (ja, ra, pa) = (bp && self.rng.chance(1, 8), bp && self.rng.chance(1, 10), bp && self.rng.chance(1, 10));
        // The response generator claims the next cycle's FIFO write (as `job_afull` does).
        let hold = bp && self.rng.chance(1, 10);
        self.dut.set_bit("job_hold", hold);
        self.dut.set_bit("job_afull", ja);
        self.dut.set_bit("rj_afull", ra);
        self.dut.set_bit("pg_afull", pa);
        let il_afull = bp && self.rng.chance(1, 6);
        self.dut.set_bit("il_afull", il_afull);
        let lc_full = bp && self.rng.chance(1, 3);
        self.dut.set_bit("lc_full", lc_full);
        let ar_ready = !bp || self.rng.chance(2, 3);
        self.dut.set_bit("wqe_ar_ready", ar_ready);
        self.dut.set_bit("db_empty", self.db.is_empty());
        // The doorbell block's `others`: a QP other than the offered one is ready.
        let front_qp = self.db.front().map(|d| d >> 16);
        self.dut.set_bit("db_others", self.db.iter().any(|&d| Some(d >> 16) != front_qp));
        self.dut.set("db_data", self.db.front().copied().unwrap_or(u64::from(self.rng.u32()) & 0x3F_FFFF));
        let beat = self.beats.front().filter(|b| b.0 <= c).map(|b| b.1.clone());
        self.dut.set_bit("wqe_r_valid", beat.is_some());
        let data = beat.clone().unwrap_or_else(|| self.rng.bytes(64));
        self.dut.set_wide("wqe_r_data", &data);
        let a = self.acked[self.acked_sel];
        self.dut.set("acked_data", a.wqes & 0xFFFF);
        self.dut.set("acked_reads", a.reads & 0x7F);
        self.dut.set("acked_psn", u64::from(a.psn));
        self.dut.eval();

        if self.dut.get_bit("db_read") {
            assert!(self.db.pop_front().is_some(), "cycle {c}: doorbell read from an empty FIFO");
            self.db_reads.push((c, self.dut.get("dbg_state")));
        }
        if self.dut.get_bit("rearm") {
            // Back into the ready set: offered again with its newest index (once).
            let q = self.dut.get("rearm_qpn");
            self.rearms.push((c, q));
            if !self.db.iter().any(|&d| d >> 16 == q) {
                self.db.push_back(q << 16 | (self.posted[q as usize] & 0xFFFF));
            }
        }
        if beat.is_some() {
            self.beats.pop_front();
        }
        if self.dut.get_bit("wqe_ar_valid") && ar_ready {
            // (A fetch may follow one whose beats are still due: those are discarded.)
            let (addr, beats) = (self.dut.get("wqe_ar_addr"), self.dut.get("wqe_ar_len") + 1);
            assert!(addr % 64 == 0 && beats <= 8, "cycle {c}: WQE fetch of {beats} beats at {addr:#x}");
            assert!(addr % 4096 + 64 * beats <= 4096, "cycle {c}: WQE fetch at {addr:#x} crosses a 4 KiB page");
            self.events.push((c, Ev::Fetch { addr, beats }));
            let mut t = c + self.wqe_latency;
            for k in 0..beats {
                t += if bp { self.rng.range(1, 3) } else { 1 };
                let b = self.mem.get(&(addr + 64 * k)).cloned().unwrap_or_else(|| vec![0; 64]);
                self.beats.push_back((t, b));
            }
        }
        if self.dut.get_bit("rl_we") {
            let waddr = self.dut.get("rl_waddr");
            let d = self.dut.get_wide("rl_wdata");
            self.events.push((c, Ev::List { waddr, iova: get(&d, 0, 64), len: get(&d, 64, 32) }));
        }
        if self.dut.get_bit("if_we") {
            let addr = self.dut.get("if_addr");
            let d = self.dut.get_wide("if_data");
            let l = InflightRec::default();
            self.events.push((
                c,
                Ev::Record {
                    addr,
                    wr_id: get(&d, l.get_my_offset_wr_id(), 64),
                    byte_len: get(&d, l.get_my_offset_byte_len(), 32),
                    first_psn: get(&d, l.get_my_offset_first_psn(), 24),
                    last_psn: get(&d, l.get_my_offset_last_psn(), 24),
                    signaled: get(&d, l.get_my_offset_signaled(), 1) == 1,
                    rd_list: get(&d, l.get_my_offset_rd_list(), 1) == 1,
                    wc_opcode: get(&d, l.get_my_offset_wc_opcode(), 8),
                    local_iova: Some(get(&d, l.get_my_offset_local_iova(), 64)),
                },
            ));
        }
        let job_write = self.dut.get_bit("job_write");
        let rj_write = self.dut.get_bit("rj_write");
        let pg_write = self.dut.get_bit("pg_write");
        let pg_inline = pg_write && self.dut.get("pg_data") >> 20 & 1 == 1;
        assert_eq!(
            pg_write && !pg_inline,
            rj_write,
            "cycle {c}: a piece record without its read job, or the reverse (an inline piece has none)"
        );
        if job_write || rj_write {
            assert!(!self.prev_afull, "cycle {c}: a job written the cycle after an almost-full flag or a claim");
        }
        assert!(
            !self.pieces_owed || self.prev_lock,
            "cycle {c}: a packet's pieces are still owed but `job_lock` was low the cycle before"
        );
        let plen_now =
            if job_write { get(&self.dut.get_wide("job"), TxJob::default().get_my_offset_plen(), 13) } else { 0 };
        if job_write && plen_now != 0 && !pg_write {
            self.pieces_owed = true;
        }
        if pg_write && self.dut.get("pg_data") >> 19 & 1 == 1 {
            self.pieces_owed = false;
        }
        let lock_now = self.dut.get_bit("job_lock");
        if job_write {
            let d = self.dut.get_wide("job");
            let l = TxJob::default();
            let plen = get(&d, l.get_my_offset_plen(), 13);
            let has_reth = get(&d, l.get_my_offset_has_reth(), 1) == 1;
            let has_ext4 = get(&d, l.get_my_offset_has_ext4(), 1) == 1;
            self.events.push((
                c,
                Ev::Job(Job {
                    opcode: get(&d, l.get_my_offset_opcode(), 8),
                    ackreq: get(&d, l.get_my_offset_ackreq(), 1) == 1,
                    se: get(&d, l.get_my_offset_se(), 1) == 1,
                    psn: get(&d, l.get_my_offset_psn(), 24),
                    peer: Peer {
                        dest_qpn: get(&d, l.get_my_offset_dest_qpn(), 24),
                        pkey: get(&d, l.get_my_offset_pkey(), 16),
                        udp_sport: get(&d, l.get_my_offset_udp_sport(), 16),
                        dest_ip: get(&d, l.get_my_offset_dest_ip(), 32),
                        dest_mac: get(&d, l.get_my_offset_dest_mac(), 48),
                    },
                    plen,
                    atomic_eth: get(&d, l.get_my_offset_has_atomic_eth(), 1) == 1
                        || get(&d, l.get_my_offset_has_atomic_ack(), 1) == 1,
                    pay_skip: (plen != 0).then(|| get(&d, l.get_my_offset_pay_skip(), 6)),
                    reth: has_reth.then(|| {
                        (
                            get(&d, l.get_my_offset_reth_va(), 64),
                            get(&d, l.get_my_offset_reth_rkey(), 32),
                            get(&d, l.get_my_offset_reth_len(), 32),
                        )
                    }),
                    ext4: has_ext4.then(|| get(&d, l.get_my_offset_ext4(), 32)),
                    deth: (get(&d, l.get_my_offset_has_deth(), 1) == 1)
                        .then(|| (get(&d, l.get_my_offset_reth_rkey(), 32), get(&d, l.get_my_offset_rsp_qpn(), 6))),
                }),
            ));
        }
        if rj_write {
            let pg = self.dut.get("pg_data");
            self.events.push((
                c,
                Ev::Read {
                    addr: self.dut.get("rj_addr"),
                    len: self.dut.get("rj_len"),
                    pg_skip: pg & 0x3F,
                    pg_len: (pg >> 6) & 0x1FFF,
                    pg_last: pg >> 19 & 1 == 1,
                },
            ));
        }
        if pg_inline {
            assert!(self.il_open.is_none(), "cycle {c}: an inline piece before the last one's beats");
            let pg = self.dut.get("pg_data");
            self.il_open = Some(self.events.len());
            self.events.push((
                c,
                Ev::Inline { pg_skip: pg & 0x3F, pg_len: (pg >> 6) & 0x1FFF, pg_last: pg >> 19 & 1 == 1, data: vec![] },
            ));
        }
        if self.dut.get_bit("il_write") {
            assert!(!self.prev_il_afull, "cycle {c}: an inline beat written the cycle after il_afull");
            let i = self.il_open.unwrap_or_else(|| panic!("cycle {c}: an inline beat with no inline piece"));
            let beat = self.dut.get_wide("il_data");
            if let Ev::Inline { pg_len, data, .. } = &mut self.events[i].1 {
                let want = *pg_len as usize;
                let take = (want - data.len()).min(64);
                data.extend_from_slice(&beat[..take]);
                if data.len() == want {
                    self.il_open = None;
                }
            }
        }
        if self.dut.get_bit("lc_write") {
            assert!(!lc_full, "cycle {c}: a local completion written while lc_full");
            let d = self.dut.get_wide("lc_data");
            let l = LocalCompletion::default();
            let qpn = get(&d, l.get_my_offset_qpn(), 8);
            self.events.push((
                c,
                Ev::Local {
                    wr_id: get(&d, l.get_my_offset_wr_id(), 64),
                    qpn,
                    status: get(&d, l.get_my_offset_status(), 8),
                    wc_opcode: get(&d, l.get_my_offset_wc_opcode(), 8),
                },
            ));
            // The RX engine takes it from its FIFO and retires the WQE a few cycles later.
            self.lc_retire.push_back((c + self.rng.range(3, 12), qpn as usize));
        }
        self.pulses_tx_req += u64::from(self.dut.get_bit("cnt_tx_req"));
        let dbg = self.dut.get("dbg_state");
        self.fast_inline += u64::from(self.prev_dbg == 5 && dbg == 13);
        self.prev_dbg = dbg;
        self.pulses_local_err += u64::from(self.dut.get_bit("cnt_local_err"));
        while let Some(&(t, q)) = self.lc_retire.front() {
            if t > c {
                break;
            }
            self.acked[q].wqes += 1;
            self.locals_retired[q] += 1;
            self.lc_retire.pop_front();
        }
        // The completer's table is a block RAM: the address of this cycle answers in the next.
        self.acked_sel = self.dut.get("acked_addr") as usize;
        self.prev_afull = ja || ra || pa || hold;
        self.prev_il_afull = il_afull;
        self.prev_lock = lock_now;
        self.dut.tick();
        self.cycle += 1;
    }

    /// Runs until the block has done nothing for `quiet` cycles (and no doorbell, WQE beat or
    /// retirement is pending); returns the events since `from`.
    pub fn run_quiet(&mut self, quiet: u64) -> Vec<Ev> {
        let from = self.events.len();
        let mut idle = 0;
        let mut n = self.events.len();
        for _ in 0..2_000_000 {
            self.step();
            if self.events.len() != n {
                n = self.events.len();
                idle = 0;
            } else {
                idle += 1;
            }
            if idle >= quiet && self.db.is_empty() && self.beats.is_empty() && self.lc_retire.is_empty() {
                return self.events[from..].iter().map(|e| e.1.clone()).collect();
            }
        }
        panic!("the scheduler never settled");
    }

    /// Posts `wqes` to QP `qpn`, runs until the block is quiet, checks that it did exactly what
    /// the model expects of them, and returns what it did.
    pub fn post_and_check(&mut self, qpn: u64, wqes: &[Wqe], ctx: &str) -> Vec<Ev> {
        let want = self.post(qpn, wqes);
        let got = self.run_quiet(200);
        assert_events(&want, &got, ctx);
        got
    }
}

/// Good regions of PD `pd` (LOCAL_WRITE granted) at table indices `first..first + n`.
pub fn good_mrs(tb: &mut Tb, first: u64, n: u64, pd: u64) -> Vec<(u64, Mr)> {
    let mut v = Vec::new();
    for i in first..first + n {
        let rng = &mut tb.rng;
        let m = Mr {
            valid: true,
            access: *rng.pick(&[0x1u64, 0x3, 0x7, 0xF]),
            tag: u64::from(rng.u32() as u8),
            pd,
            va: rng.next_u64() & 0x0000_7FFF_FFFF_FFFF,
            length: 1 << 20,
            iova: rng.next_u64() & 0x0000_FFFF_FFFF_FFFF,
        };
        tb.write_mr(i, &m);
        v.push((i, m));
    }
    v
}

pub fn lkey_of(index: u64, m: &Mr) -> u32 {
    key::word(index as u32, m.tag as u8)
}

/// An SGE of `len` bytes at a random (odd or not) place of region `(index, m)`.
pub fn sge_in(rng: &mut Rng, (index, m): &(u64, Mr), len: u64) -> Sge {
    Sge { addr: m.va + rng.range(0, m.length - len), len: len as u32, lkey: lkey_of(*index, m) }
}

pub fn random_flags(rng: &mut Rng) -> u8 {
    let mut f = 0;
    if rng.chance(2, 3) {
        f |= send_flags::SIGNALED;
    }
    if rng.chance(1, 3) {
        f |= send_flags::SOLICITED;
    }
    f
}

/// Every request packet job pulsed `cnt_tx_req` once.
pub fn check_tx_req(tb: &Tb, ctx: &str) {
    let jobs = tb.events.iter().filter(|e| matches!(e.1, Ev::Job(_))).count() as u64;
    assert_eq!(tb.pulses_tx_req, jobs, "{ctx}: cnt_tx_req pulses vs packet jobs");
}

/// A WQE of `opcode` carrying `len` random inline bytes, random flags, immediate and remote
/// address (drawn in that order).
pub fn inline_wqe(rng: &mut Rng, wr_id: u64, opcode: u8, len: usize) -> Wqe {
    Wqe {
        wr_id,
        opcode,
        flags: random_flags(rng),
        imm: rng.u32(),
        remote_addr: rng.next_u64(),
        rkey: rng.u32(),
        sges: vec![],
        ud: None,
        inline: Some(rng.bytes(len)),
    }
}

/// Key-table entries 50..=52 for bad keys, all a 64 KiB region at `va` (IOVA `iova`) with tag
/// `tag`: 50 invalid, 51 of PD `pd + 1`, 52 of PD `pd` without LOCAL_WRITE (REMOTE_WRITE and
/// REMOTE_READ only). Returns the valid LOCAL_WRITE entry they are variants of.
pub fn bad_key_mrs(tb: &mut Tb, pd: u64, tag: u64, va: u64, iova: u64) -> Mr {
    let base = Mr { valid: true, access: 0x1, tag, pd, va, length: 1 << 16, iova };
    tb.write_mr(50, &Mr { valid: false, ..base.clone() });
    tb.write_mr(51, &Mr { pd: pd + 1, ..base.clone() });
    tb.write_mr(52, &Mr { access: 0x6, ..base.clone() });
    base
}

/// A signaled one-SGE RDMA WRITE of 1..=64 bytes from one of `mrs`, to a random remote address.
pub fn small_write(rng: &mut Rng, mrs: &[(u64, Mr)], wr_id: u64) -> Wqe {
    let m = rng.pick(mrs).clone();
    let len = rng.range(1, 64);
    Wqe {
        wr_id,
        opcode: wr_opcode::RDMA_WRITE,
        flags: send_flags::SIGNALED,
        imm: 0,
        remote_addr: rng.next_u64(),
        rkey: rng.u32(),
        sges: vec![sge_in(rng, &m, len)],
        ud: None,
        inline: None,
    }
}

/// Creates QP `qpn` in PD `pd` with a random context at path MTU code 2 and one-beat WQEs, its
/// ring 64 entries (4 KiB) on a page boundary; returns the context.
pub fn ring64_qp(tb: &mut Tb, qpn: u64, pd: u64) -> QpCfg {
    let mut cfg = QpCfg::random(&mut tb.rng, 2, pd, 0);
    cfg.log_size = 6;
    cfg.sq_base &= !0xFFF;
    tb.create_qp(qpn, &cfg);
    cfg
}

/// Posts `n` one-beat WRITEs on a fresh QP `qpn` (64-entry ring on a page boundary) at once and
/// checks the events against the model; returns the ring's base, the fetches (cycle, address,
/// beats) and the cycles of the packet jobs.
pub fn burst_run(tb: &mut Tb, pd: u64, qpn: u64, n: u64, tag: u64) -> (u64, Vec<(u64, u64, u64)>, Vec<u64>) {
    let seed = tb.rng.0;
    let mrs = good_mrs(tb, 2, 2, pd);
    let cfg = ring64_qp(tb, qpn, pd);
    let wqes: Vec<Wqe> = (0..n).map(|k| small_write(&mut tb.rng, &mrs, tag | k)).collect();
    let first = tb.events.len();
    tb.post_and_check(qpn, &wqes, &format!("{n} WRITEs (seed {seed:#x})"));
    let evs = &tb.events[first..];
    let fetches: Vec<(u64, u64, u64)> = evs
        .iter()
        .filter_map(|(t, e)| if let Ev::Fetch { addr, beats } = e { Some((*t, *addr, *beats)) } else { None })
        .collect();
    let jobs: Vec<u64> = evs.iter().filter_map(|(t, e)| matches!(e, Ev::Job(_)).then_some(*t)).collect();
    assert_eq!(jobs.len() as u64, n, "one packet per WRITE (seed {seed:#x})");
    (cfg.sq_base, fetches, jobs)
}

/// A signaled SEND of no SGE with UD address `ud`.
pub fn base_wqe(wr_id: u64, ud: Option<(u64, u64, u64, u64)>) -> Wqe {
    Wqe {
        wr_id,
        opcode: wr_opcode::SEND,
        flags: send_flags::SIGNALED,
        imm: 0,
        remote_addr: 0,
        rkey: 0,
        sges: vec![],
        ud,
        inline: None,
    }
}

/// Posts `wqes` on `qpn`, of which WQE `k` fails with `status` (the model must agree, and flush
/// the rest): the WRITEs before it are sent, nothing after, and once they are retired every
/// event is the model's.
pub fn post_one_bad(tb: &mut Tb, qpn: u64, wqes: &[Wqe], k: usize, status: u8, ctx: &str) {
    let want = tb.post(qpn, wqes);
    let locals: Vec<(u64, u64)> = want
        .iter()
        .filter_map(|e| if let Ev::Local { wr_id, status, .. } = e { Some((*wr_id, *status)) } else { None })
        .collect();
    assert_eq!(locals[0], (wqes[k].wr_id, u64::from(status)), "{ctx}: the model");
    assert_eq!(locals.len(), wqes.len() - k, "{ctx}: the model flushes the rest");
    let mut got = tb.run_quiet(400);
    let jobs = got.iter().filter(|e| matches!(e, Ev::Job(_))).count();
    assert_eq!(jobs, k, "{ctx}: only the WRITEs before it go");
    tb.retire_all(qpn);
    got.extend(tb.run_quiet(400));
    assert_events(&want, &got, ctx);
}
