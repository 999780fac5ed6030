//! `TxScheduler` (the requester's work-queue engine) in Verilator, driven through its ports
//! against a reference model of what it must emit for each WQE.
//!
//! The test plays everything around the block: QP contexts and key-table entries are written
//! through the context-command port exactly as BAR0 commits them (records built with
//! `rnic_contract::qp_context` / `mr_entry` fields, `cmd_ready` handshake); SQ doorbells
//! (`qpn << 16 | pi`) wait in a model first-word fall-through FIFO (`db_empty/db_data/db_read`);
//! a model of host memory holds the SQ rings, WQEs laid out with `rnic_contract::wqe` (SGE 0 in
//! slot 0, SGEs 1.. from the second slot) and answers the WQE fetches (`wqe_ar_*`, then
//! `wqe_ar_len + 1` beats on `wqe_r_*` a few cycles later, with random gaps); the completer's
//! per-QP counts (`acked_data`, `acked_reads`, `acked_psn`) are served at `acked_addr` with a
//! block RAM's one-cycle latency and moved only by the test (a local completion is retired by
//! the model completer a few cycles after `lc_write`, as the RX engine does). The rewind FIFO
//! stays empty. The job FIFOs' almost-full flags (`job_afull`, `rj_afull`,
//! `pg_afull`), the response generator's claim (`job_hold`) and `lc_full` rise at random: the
//! block must not write a packet or payload job in the cycle after any almost-full flag or a
//! claim was high, nor a local completion while `lc_full`; and `job_lock` must be high in the
//! cycle before every cycle in which a packet's job is written and its pieces are not.
//!
//! Every output is recorded as an event, in order: a WQE fetch (address, beats), a READ list
//! write (`rl_*`), an in-flight record (`if_*`), a packet job (`job`), a payload read job with
//! its piece record (`rj_addr/rj_len` and `pg_data` = `skip | len << 6 | last << 19`, always in
//! the same cycle) and a local completion (`lc_*`). The model turns each posted WQE into the
//! events it must cause: the fetch of its ring slot (`sq_base + (i mod size) << (6 + stride)`,
//! `min(2^stride, 5)` beats); for a WQE that fails, one local completion (status per
//! `rnic_contract::verbs::wc_status`, in SQ order once every earlier WQE has retired, and
//! WR_FLUSH_ERR for every WQE after it); else, for a READ with several SGEs, one list write per
//! non-empty SGE (`{iova, length}` translated as `mr.iova + (addr - mr.va)`, at
//! `qpn << 6 | (s mod 4) << 4 | k` for the QP's READ number `s`),
//! then the in-flight record (first and last PSN, byte length, SIGNALED, `rd_list`,
//! IBV_WC opcode), then per packet its job (WRITE/SEND FIRST/MIDDLE/LAST/ONLY by path MTU, WITH
//! IMMEDIATE on the last with the ImmDt, AckReq on the last and every 16th, RETH on a WRITE's
//! first with the message length, BTH.SE for SOLICITED, the QP's peer addresses, `pay_skip` =
//! the payload's address mod 64; a READ: one READ REQUEST whose RETH asks for the whole list,
//! its responses taking the next ceil(len / MTU) PSNs) followed by one payload read job per
//! gather-list entry the packet touches. The recorded events must equal the model's exactly.
//!
//! - `write_one_sge_every_path_mtu`: at each path MTU 256..4096 and a random WQE stride,
//!   RDMA WRITEs (and WRITE WITH IMMEDIATE, SEND, SEND WITH IMMEDIATE) of one SGE, lengths at
//!   the MTU edges, 0, 1 and past 16 packets, odd addresses, random SIGNALED/SOLICITED, posted
//!   in batches across the ring's wrap, under back-pressure.
//! - `inline_data_goes_from_the_fetched_wqe`: inline WRITEs and SENDs at each WQE size: up to
//!   256 bytes one inline piece (`pg_data` bit 20, no read job) whose `il_write` beats are the
//!   WQE's bytes from its second slot; longer, read jobs at the ring slot; none for 0 bytes.
//! - `inline_writes_take_the_head_check`: streams of inline WRITEs of up to 256 bytes at each
//!   WQE size take the head check's verdicts (`WaitWqeBeats` → `ActOnChecks`), on 128-byte
//!   WQEs one per 6 cycles; longer or over-long inline data keeps to the slow path.
//! - `gather_lists_tile_the_message`: WRITEs and SENDs of 2..=16 SGEs (empty ones with junk
//!   lkeys, 1-byte ones, ones ending on beat boundaries, several regions) at odd alignments:
//!   besides the model, the payload read jobs laid end to end are the message, byte for byte
//!   mapped to the IOVA of the SGE holding it, each piece's record matching its read job and
//!   the last piece of each packet (only) flagged.
//! - `read_list_goes_to_the_rx_engine_first`: READs of 2..=16 SGEs (empty ones among them)
//!   followed by WRITEs: the list writes carry exactly the translated non-empty SGEs in order at
//!   `qpn << 6 | (s mod 4) << 4 | k`, all before the READ's in-flight record (`rd_list` = 1, byte_len = the sum),
//!   then one READ REQUEST for the sum; the next WQE's PSN follows the READ's responses. A
//!   READ of one SGE writes no list (`rd_list` = 0, `local_iova` its translated SGE); a READ
//!   whose SGEs are all empty writes none either (`rd_list` = 1, 0 bytes, one response PSN).
//! - `multi_sge_read_waits_for_earlier_reads`: with max_rd_atomic = 8, five one-SGE READs go
//!   at once (a one-SGE READ is not held back by 4 outstanding), and a READ with several SGEs
//!   waits, its list not copied and nothing recorded or sent, while 4 or more READs are
//!   outstanding (the RX engine keeps 4 lists per QP); when `acked_reads` leaves 3, its list
//!   goes to list 5 mod 4 = 1 and a WRITE behind it goes at once.
//! - `bad_lkey_in_a_read_list_completes_locally`: a READ of 4 SGEs whose SGE 2 has a bad lkey
//!   (stale tag, invalid entry, other PD, no LOCAL_WRITE, past its region, key bits above the
//!   table), behind a WRITE: no list write, no record, no job; a LocalCompletion with
//!   IBV_WC_LOC_PROT_ERR for the READ (opcode IBV_WC_RDMA_READ) only once the WRITE retired;
//!   the WQE after it completes with IBV_WC_WR_FLUSH_ERR.
//!
//! - `the_second_burst_is_asked_for_before_the_first_is_used`: the fetch-ahead machine asks
//!   for a QP's second burst as its first is accepted, and for later ones while the buffer
//!   still holds 8 or more unsent WQEs.
//! - `a_qp_rung_while_served_alone_serves_its_new_wqes_in_place`: with no other QP waiting, a
//!   doorbell of the served QP extends its producer index in place; every slot is fetched once.
//! - `a_reset_of_the_served_qp_ends_its_ring_reads`: a RESET of the served QP at every cycle
//!   offset from its doorbell: no WQE read once the command is taken.
//! - `a_qp_that_steps_aside_leaves_the_prefetch_buffer_to_the_next`: with a 64-cycle fetch, a
//!   QP out of READ credits steps aside with fetched beats still in flight; they are dropped
//!   unwritten and the next QP's first fetch is a full burst of 8, 12 cycles after the last READ.
//! - `ud_wqes_become_send_only_with_a_deth`: on UD QPs, SENDs of up to one MTU become one SEND
//!   ONLY each with a DETH (the WQE's Q_Key or, bit 31 set, the QP's; this QP as source),
//!   addressed from the WQE, no AckReq; RDMA WRITE / READ and a SEND over the MTU complete
//!   locally (LOC_QP_OP_ERR, LOC_LEN_ERR) with nothing sent.
//!
//! `RNIC_TB_SEED` (decimal or `0x` hex) replaces every test's seed.
mod harness;

use harness::tables::{Mr, Peer};
use harness::{Dut, Rng};
use rnic_contract::verbs::{send_flags, wc_status, wr_opcode};
use rnic_contract::{qp_context as qp, wqe, Field, MAX_MSG_SZ};
use rnic_hdl::records::{InflightRec, LocalCompletion, TxJob};
use rnic_hdl::tx_scheduler::TxScheduler;
use std::collections::{HashMap, VecDeque};

fn get(bytes: &[u8], off: usize, width: usize) -> u64 {
    Field::at_bit(off, width).get(bytes)
}

const PSN_MASK: u32 = 0xFF_FFFF;

#[derive(Clone, Debug)]
struct QpCfg {
    mtu_code: u64,
    pd: u64,
    peer: Peer,
    sq_psn: u32,
    log_size: u64,
    log_stride: u64,
    sq_base: u64,
    max_rd_atomic: u64,
    /// A UD QP with this Q_Key (`qp_context::QP_TYPE` 1, `QKEY`).
    ud_qkey: Option<u64>,
}

impl QpCfg {
    fn random(rng: &mut Rng, mtu_code: u64, pd: u64, log_stride: u64) -> QpCfg {
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
    fn mtu(&self) -> u64 {
        128 << self.mtu_code
    }
}

#[derive(Clone, Copy, Debug)]
struct Sge {
    addr: u64,
    len: u32,
    lkey: u32,
}

#[derive(Clone, Debug)]
struct Wqe {
    wr_id: u64,
    opcode: u8,
    flags: u8,
    imm: u32,
    remote_addr: u64,
    rkey: u32,
    sges: Vec<Sge>,
    /// UD: (remote QPN, remote Q_Key, destination IP, destination MAC).
    ud: Option<(u64, u64, u64, u64)>,
    /// `IBV_SEND_INLINE` data (SEND_FLAGS bit 3 set, the length in SGE 0's length field, the
    /// bytes from the second slot); `sges` is then empty.
    inline: Option<Vec<u8>>,
}

impl Wqe {
    /// The WQE as `post_send` lays it out in a ring of stride `64 << log_stride`.
    fn bytes(&self, log_stride: u64) -> Vec<u8> {
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
    fn is_read(&self) -> bool {
        self.opcode == wr_opcode::RDMA_READ
    }
    fn is_send(&self) -> bool {
        self.opcode == wr_opcode::SEND || self.opcode == wr_opcode::SEND_WITH_IMM
    }
    fn has_imm(&self) -> bool {
        self.opcode == wr_opcode::SEND_WITH_IMM || self.opcode == wr_opcode::RDMA_WRITE_WITH_IMM
    }
    fn wc_opcode(&self) -> u64 {
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
struct Job {
    opcode: u64,
    ackreq: bool,
    se: bool,
    psn: u64,
    peer: Peer,
    plen: u64,
    atomic_eth: bool,
    /// The payload's first byte in its beat (when there is a payload).
    pay_skip: Option<u64>,
    /// RETH (va, rkey, len), when `has_reth`.
    reth: Option<(u64, u64, u64)>,
    /// ImmDt, when `has_ext4`.
    ext4: Option<u64>,
    /// DETH (Q_Key, source QP), when `has_deth`.
    deth: Option<(u64, u64)>,
}

/// One thing the scheduler did.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Ev {
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
fn masked(want: &Ev, got: &Ev) -> Ev {
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
fn assert_events(want: &[Ev], got: &[Ev], ctx: &str) {
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
fn list_addr(qpn: u64, s: u64, k: usize) -> u64 {
    qpn << 6 | (s % 4) << 4 | k as u64
}

/// The reference model: the key table and each QP's requester state.
#[derive(Default)]
struct Model {
    mrs: HashMap<u64, Mr>,
    qps: HashMap<u64, QpModel>,
}

struct QpModel {
    cfg: QpCfg,
    next_psn: u32,
    ci: u64,
    err: bool,
    /// READs and atomics sent so far: READ number `s` keeps its list at `s mod 4`.
    reads: u64,
}

impl Model {
    /// The translated address of `s`, if its lkey names a valid entry of the QP's PD with the
    /// key's tag (and LOCAL_WRITE when `write`), and `[addr, addr + len)` lies inside it.
    fn check(&self, pd: u64, s: &Sge, write: bool) -> Option<u64> {
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
    fn expect(&mut self, qpn: u64, w: &Wqe) -> Vec<Ev> {
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
struct Acked {
    wqes: u64,
    reads: u64,
    psn: u32,
}

struct Tb {
    dut: Dut,
    rng: Rng,
    model: Model,
    /// Host memory, by 64-byte beat address.
    mem: HashMap<u64, Vec<u8>>,
    /// The doorbell FIFO (a rearm puts the QP at its end, with its newest index, unless it is in).
    db: VecDeque<u64>,
    /// Doorbell reads (cycle, `dbg_state` at the read: 0 is `Idle`) and rearms (cycle, QP).
    db_reads: Vec<(u64, u64)>,
    rearms: Vec<(u64, u64)>,
    /// WQE beats to deliver: (earliest cycle, data).
    beats: VecDeque<(u64, Vec<u8>)>,
    acked: Vec<Acked>,
    /// The QP the completer's table was addressed at in the previous cycle.
    acked_sel: usize,
    /// Local completions the model completer retires: (cycle, QP).
    lc_retire: VecDeque<(u64, usize)>,
    /// WQEs posted per QP.
    posted: Vec<u64>,
    /// Local completions retired per QP.
    locals_retired: Vec<u64>,
    events: Vec<(u64, Ev)>,
    backpressure: bool,
    /// Cycles from a WQE fetch's acceptance to its first beat, less one (2 unless a test
    /// models the PCIe round trip).
    wqe_latency: u64,
    prev_afull: bool,
    /// `il_afull` last cycle, and the inline piece still owed beats (its event's index).
    prev_il_afull: bool,
    il_open: Option<usize>,
    /// `job_lock` last cycle, and whether a packet job was written whose pieces are still
    /// owed (the response generator may write only in a cycle after `job_lock` was low, so
    /// it must be high in the cycle before every cycle with pieces owed).
    prev_lock: bool,
    pieces_owed: bool,
    cycle: u64,
    /// `dbg_state` last cycle, and how often `WaitWqeBeats` (5) went straight on to
    /// `ActOnChecks` (13): an inline WRITE taking the head check's verdicts.
    prev_dbg: u64,
    fast_inline: u64,
    pulses_tx_req: u64,
    pulses_local_err: u64,
}

impl Tb {
    fn new(seed: u64) -> Tb {
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
    fn command(&mut self, op: u64, index: u64, record: &[u8]) {
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
    fn create_qp(&mut self, qpn: u64, c: &QpCfg) {
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

    fn write_mr(&mut self, index: u64, m: &Mr) {
        self.command(2, index, &m.record());
        self.model.mrs.insert(index, m.clone());
    }

    /// Writes `wqes` into QP `qpn`'s ring, rings its doorbell, and returns the events the model
    /// expects of them.
    fn post(&mut self, qpn: u64, wqes: &[Wqe]) -> Vec<Ev> {
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
    fn retire_all(&mut self, qpn: u64) {
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
    fn step(&mut self) {
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
    fn run_quiet(&mut self, quiet: u64) -> Vec<Ev> {
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
    fn post_and_check(&mut self, qpn: u64, wqes: &[Wqe], ctx: &str) -> Vec<Ev> {
        let want = self.post(qpn, wqes);
        let got = self.run_quiet(200);
        assert_events(&want, &got, ctx);
        got
    }
}

/// Good regions of PD `pd` (LOCAL_WRITE granted) at table indices `first..first + n`.
fn good_mrs(tb: &mut Tb, first: u64, n: u64, pd: u64) -> Vec<(u64, Mr)> {
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

fn lkey_of(index: u64, m: &Mr) -> u32 {
    (index << 8 | m.tag) as u32
}

/// An SGE of `len` bytes at a random (odd or not) place of region `(index, m)`.
fn sge_in(rng: &mut Rng, (index, m): &(u64, Mr), len: u64) -> Sge {
    Sge { addr: m.va + rng.range(0, m.length - len), len: len as u32, lkey: lkey_of(*index, m) }
}

fn random_flags(rng: &mut Rng) -> u8 {
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
fn check_tx_req(tb: &Tb, ctx: &str) {
    let jobs = tb.events.iter().filter(|e| matches!(e.1, Ev::Job(_))).count() as u64;
    assert_eq!(tb.pulses_tx_req, jobs, "{ctx}: cnt_tx_req pulses vs packet jobs");
}

#[test]
fn write_one_sge_every_path_mtu() {
    let mut tb = Tb::new(0x75C4_0001);
    let seed = tb.rng.0;
    let pd = 0x12345;
    let mrs = good_mrs(&mut tb, 4, 3, pd);
    let qpns = [3u64, 17, 30, 44, 61];
    let mut wqes_seen = 0;
    for (mi, &qpn) in qpns.iter().enumerate() {
        let mtu_code = mi as u64 + 1;
        let stride = tb.rng.range(0, 3);
        let cfg = QpCfg::random(&mut tb.rng, mtu_code, pd, stride);
        tb.create_qp(qpn, &cfg);
        let mtu = cfg.mtu();
        let edges =
            [0, 1, mtu - 1, mtu, mtu + 1, 2 * mtu, 15 * mtu, 16 * mtu, 16 * mtu + 1, 17 * mtu - 1, 33 * mtu + 7];
        for batch in 0..5 {
            tb.backpressure = batch % 2 == 1;
            let n = tb.rng.range(1, 6);
            let mut wqes = Vec::new();
            for k in 0..n {
                let rng = &mut tb.rng;
                let len = if rng.chance(1, 2) { *rng.pick(&edges) } else { rng.range(1, 20 * mtu) };
                let m = rng.pick(&mrs).clone();
                let opcode = *rng.pick(&[
                    wr_opcode::RDMA_WRITE,
                    wr_opcode::RDMA_WRITE,
                    wr_opcode::RDMA_WRITE_WITH_IMM,
                    wr_opcode::SEND,
                    wr_opcode::SEND_WITH_IMM,
                ]);
                let sges = if len == 0 && rng.chance(1, 2) { vec![] } else { vec![sge_in(rng, &m, len)] };
                wqes.push(Wqe {
                    wr_id: 0x5A5A_0000_0000 | (mtu_code << 16) | (batch << 8) | k,
                    opcode,
                    flags: random_flags(rng),
                    imm: rng.u32(),
                    remote_addr: rng.next_u64(),
                    rkey: rng.u32(),
                    sges,
                    ud: None,
                    inline: None,
                });
            }
            let lens: Vec<u64> = wqes.iter().map(|w| w.sges.first().map_or(0, |s| u64::from(s.len))).collect();
            let ctx = format!("QP {qpn} MTU {mtu} stride {stride} batch {batch}: lengths {lens:?} (seed {seed:#x})");
            tb.post_and_check(qpn, &wqes, &ctx);
            wqes_seen += wqes.len();
            tb.retire_all(qpn);
        }
        check_tx_req(&tb, &format!("QP {qpn}"));
    }
    assert!(wqes_seen > 40, "{wqes_seen} WQEs");
}

/// A WQE of `opcode` carrying `len` random inline bytes, random flags, immediate and remote
/// address (drawn in that order).
fn inline_wqe(rng: &mut Rng, wr_id: u64, opcode: u8, len: usize) -> Wqe {
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

/// Inline WRITEs and SENDs (with and without immediate) at each WQE size that holds inline
/// data (128, 256, 512 bytes) and path MTU 256 / 1024: up to 256 bytes, the packet's one piece
/// is an inline piece whose beats are the WQE's own bytes from its second slot, with no read
/// job; longer (257..=448 bytes, a 512-byte WQE) the payload is read from the ring slot; a
/// zero-length one has no piece. Under random back-pressure, `il_afull` included.
#[test]
fn inline_data_goes_from_the_fetched_wqe() {
    let mut tb = Tb::new(0x75C4_0010);
    let seed = tb.rng.0;
    let pd = 0x4A11;
    let (mut fast, mut slow) = (0usize, 0usize);
    for (i, (&qpn, stride)) in [9u64, 27, 40, 58].iter().zip([1u64, 2, 3, 3]).enumerate() {
        let mtu_code = if i % 2 == 0 { 1 } else { 3 };
        let cfg = QpCfg::random(&mut tb.rng, mtu_code, pd, stride);
        tb.create_qp(qpn, &cfg);
        let cap = wqe::stride(stride as usize) - wqe::INLINE_DATA;
        let edges: Vec<usize> = [0usize, 1, 63, 64, 65, 127, 128, 129, 191, 192, 255, 256, 257, 320, 447, 448]
            .into_iter()
            .filter(|&l| l <= cap)
            .collect();
        for batch in 0..6 {
            tb.backpressure = batch % 2 == 1;
            let n = tb.rng.range(1, 6);
            let mut wqes = Vec::new();
            for k in 0..n {
                let rng = &mut tb.rng;
                let len = if rng.chance(1, 2) { *rng.pick(&edges) } else { rng.range(1, cap as u64) as usize };
                let opcode = *rng.pick(&[
                    wr_opcode::RDMA_WRITE,
                    wr_opcode::RDMA_WRITE_WITH_IMM,
                    wr_opcode::SEND,
                    wr_opcode::SEND_WITH_IMM,
                ]);
                if len > 256 {
                    slow += 1;
                } else if len > 0 {
                    fast += 1;
                }
                wqes.push(inline_wqe(rng, 0x11AE_0000_0000 | (qpn << 16) | (batch << 8) | k, opcode, len));
            }
            let lens: Vec<usize> = wqes.iter().map(|w| w.inline.as_ref().unwrap().len()).collect();
            let ctx =
                format!("QP {qpn} stride {stride} MTU code {mtu_code} batch {batch}: inline {lens:?} (seed {seed:#x})");
            tb.post_and_check(qpn, &wqes, &ctx);
            tb.retire_all(qpn);
        }
        check_tx_req(&tb, &format!("QP {qpn}"));
    }
    assert!(fast > 20 && slow > 2, "{fast} inline WQEs from the WQE, {slow} from the ring");
}

/// The head check (`HeadStep`) also takes inline RDMA WRITEs of up to 256 bytes (stop 33): a
/// stream of 24 posted at once, on 128- and 256-byte WQEs, goes from `WaitWqeBeats` straight
/// to `ActOnChecks` for all but the first (512-byte WQEs are appended one per burst, one
/// append at a time, so the next is rarely in the buffer when the check could start; their
/// events are still checked) (on 128-byte WQEs one every 6 cycles: the
/// larger ones wait for their fetches, 8 beats per burst), with exactly the events the model
/// gives (the inline beats included). Inline data past 256 bytes
/// or past what the WQE holds is left to the slow path: the first is read from the ring, the
/// second fails with IBV_WC_LOC_LEN_ERR and flushes the rest.
#[test]
fn inline_writes_take_the_head_check() {
    let mut tb = Tb::new(0x75C4_0011);
    let seed = tb.rng.0;
    let pd = 0x4A12;
    for (&qpn, stride) in [12u64, 33, 47].iter().zip([1u64, 2, 3]) {
        let cfg = QpCfg { log_size: 5, ..QpCfg::random(&mut tb.rng, 3, pd, stride) };
        tb.create_qp(qpn, &cfg);
        let cap = (wqe::stride(stride as usize) - wqe::INLINE_DATA).min(256);
        let wqe = |rng: &mut Rng, k: u64, len: usize| {
            let opcode = *rng.pick(&[wr_opcode::RDMA_WRITE, wr_opcode::RDMA_WRITE_WITH_IMM]);
            inline_wqe(rng, 0x1F00 | (qpn << 8) | k, opcode, len)
        };
        let wqes: Vec<Wqe> = (0..24)
            .map(|k| {
                let len = if k % 3 == 0 { cap } else { tb.rng.range(1, cap as u64) as usize };
                wqe(&mut tb.rng, k, len)
            })
            .collect();
        let ctx = format!("QP {qpn} stride {stride} (seed {seed:#x})");
        let fast0 = tb.fast_inline;
        let got = tb.post_and_check(qpn, &wqes, &ctx);
        let fast = tb.fast_inline - fast0;
        if stride < 3 {
            assert!(fast >= 22, "{ctx}: {fast} of 24 inline WRITEs took the head check");
        }
        let jobs: Vec<u64> = tb.events.iter().filter(|e| matches!(e.1, Ev::Job(_))).map(|e| e.0).collect();
        let jobs = &jobs[jobs.len() - 24..];
        let mut gaps: Vec<u64> = jobs.windows(2).map(|w| w[1] - w[0]).collect();
        gaps.sort_unstable();
        if stride == 1 {
            assert!(
                gaps[gaps.len() / 2] <= 6,
                "{ctx}: median {} cycles between inline WRITEs of 2 slots (events {})",
                gaps[gaps.len() / 2],
                got.len()
            );
        }
        tb.retire_all(qpn);
        check_tx_req(&tb, &ctx);
        if stride == 3 {
            // Past 256 bytes: read from the ring; past 448: LOC_LEN_ERR, the rest flushed.
            let long = vec![wqe(&mut tb.rng, 30, 300)];
            tb.post_and_check(qpn, &long, &format!("{ctx}: 300 bytes"));
            tb.retire_all(qpn);
            let tail = vec![wqe(&mut tb.rng, 31, 449), wqe(&mut tb.rng, 32, 8)];
            tb.post_and_check(qpn, &tail, &format!("{ctx}: 449 bytes"));
        }
    }
}

#[test]
fn gather_lists_tile_the_message() {
    let mut tb = Tb::new(0x75C4_0002);
    let seed = tb.rng.0;
    let pd = 0x777;
    let mrs = good_mrs(&mut tb, 10, 4, pd);
    let (mut multi_piece_pkts, mut pieces) = (0usize, 0usize);
    for (mi, &qpn) in [5u64, 21, 38, 52, 62].iter().enumerate() {
        let mtu_code = mi as u64 + 1;
        let cfg = QpCfg::random(&mut tb.rng, mtu_code, pd, 3);
        tb.create_qp(qpn, &cfg);
        let mtu = cfg.mtu();
        for batch in 0..6u64 {
            tb.backpressure = tb.rng.chance(1, 2);
            let mut wqes = Vec::new();
            for k in 0..tb.rng.range(1, 3) {
                let rng = &mut tb.rng;
                let n = rng.range(2, 16);
                let sges: Vec<Sge> = (0..n)
                    .map(|_| {
                        let m = rng.pick(&mrs).clone();
                        let len = match rng.range(0, 7) {
                            0 => 0,
                            1 => 1,
                            2 => rng.range(2, 8),
                            3 => rng.range(60, 70),
                            4 => mtu,
                            _ => rng.range(1, 2 * mtu),
                        };
                        let mut s = sge_in(rng, &m, len);
                        if len == 0 {
                            s.lkey = rng.u32(); // never checked
                        }
                        let end = (s.addr + len) & !63;
                        if len > 0 && rng.chance(1, 4) && end >= m.1.va + len {
                            // Ends on a beat boundary.
                            s.addr = end - len;
                        }
                        s
                    })
                    .collect();
                wqes.push(Wqe {
                    wr_id: 0x6A7E_0000 + (mtu_code << 12) + (batch << 4) + k,
                    opcode: *rng.pick(&[wr_opcode::RDMA_WRITE, wr_opcode::RDMA_WRITE_WITH_IMM, wr_opcode::SEND]),
                    flags: random_flags(rng),
                    imm: rng.u32(),
                    remote_addr: rng.next_u64(),
                    rkey: rng.u32(),
                    sges,
                    ud: None,
                    inline: None,
                });
            }
            let ctx = format!(
                "QP {qpn} MTU {mtu} batch {batch}: SGE lengths {:?} (seed {seed:#x})",
                wqes.iter().map(|w| w.sges.iter().map(|s| s.len).collect::<Vec<_>>()).collect::<Vec<_>>()
            );
            let got = tb.post_and_check(qpn, &wqes, &ctx);
            // Independently of the model's walk: per WQE, the read jobs laid end to end are
            // the message, each byte at the IOVA of the SGE holding it.
            let mut wi = 0;
            let mut i = 0;
            while i < got.len() {
                if let Ev::Record { .. } = got[i] {
                    let w = &wqes[wi];
                    let mut iova_of = Vec::new();
                    for s in &w.sges {
                        if s.len > 0 {
                            let t = tb.model.check(pd, s, false).unwrap();
                            iova_of.extend((0..u64::from(s.len)).map(|b| t + b));
                        }
                    }
                    let (mut at, mut pkt_len, mut pkt_placed, mut npieces) = (0u64, 0u64, 0u64, 0usize);
                    i += 1;
                    // (Up to the next WQE's record: fetches of later WQEs may come between.)
                    while i < got.len() && !matches!(got[i], Ev::Record { .. }) {
                        match &got[i] {
                            Ev::Fetch { .. } => {}
                            Ev::Job(j) => {
                                assert_eq!(pkt_placed, pkt_len, "{ctx}: WQE {wi}: a packet's pieces fall short");
                                (pkt_len, pkt_placed) = (j.plen, 0);
                                if npieces > 1 {
                                    multi_piece_pkts += 1;
                                }
                                npieces = 0;
                            }
                            Ev::Read { addr, len, pg_skip, pg_len, pg_last } => {
                                assert!(*len > 0, "{ctx}: empty piece");
                                for b in 0..*len {
                                    assert_eq!(
                                        addr + b,
                                        iova_of[(at + b) as usize],
                                        "{ctx}: WQE {wi} message byte {}",
                                        at + b
                                    );
                                }
                                assert_eq!((*pg_skip, *pg_len), (addr & 63, *len), "{ctx}: piece record vs read job");
                                at += len;
                                pkt_placed += len;
                                assert_eq!(*pg_last, pkt_placed == pkt_len, "{ctx}: WQE {wi}: last-piece flag");
                                npieces += 1;
                                pieces += 1;
                            }
                            e => panic!("{ctx}: unexpected {e:x?}"),
                        }
                        i += 1;
                    }
                    if npieces > 1 {
                        multi_piece_pkts += 1;
                    }
                    assert_eq!(pkt_placed, pkt_len, "{ctx}: WQE {wi}: the last packet's pieces fall short");
                    assert_eq!(at, iova_of.len() as u64, "{ctx}: WQE {wi}: the pieces cover the message");
                    wi += 1;
                } else {
                    i += 1;
                }
            }
            assert_eq!(wi, wqes.len(), "{ctx}: records");
            tb.retire_all(qpn);
        }
    }
    check_tx_req(&tb, "all");
    assert!(multi_piece_pkts > 30, "{multi_piece_pkts} packets over several SGEs ({pieces} pieces)");
}

#[test]
fn read_list_goes_to_the_rx_engine_first() {
    let mut tb = Tb::new(0x75C4_0003);
    let seed = tb.rng.0;
    let pd = 0x4242;
    let mrs = good_mrs(&mut tb, 20, 3, pd);
    let mut lists = 0;
    for (mi, &qpn) in [7u64, 26, 41, 55, 60].iter().enumerate() {
        let mtu_code = mi as u64 + 1;
        let stride = if mi % 2 == 0 { 3 } else { 2 };
        let cfg = QpCfg::random(&mut tb.rng, mtu_code, pd, stride);
        tb.create_qp(qpn, &cfg);
        let mtu = cfg.mtu();
        let max_sge = [1u64, 5, 13, 16][stride as usize];
        for batch in 0..6u64 {
            tb.backpressure = tb.rng.chance(1, 2);
            let rng = &mut tb.rng;
            let n = if batch == 0 {
                max_sge
            } else if batch == 1 {
                1
            } else {
                rng.range(2, max_sge)
            };
            let sges: Vec<Sge> = (0..n)
                .map(|k| {
                    let m = rng.pick(&mrs).clone();
                    // (Batch 2: every SGE empty, a READ of 0 bytes.)
                    let len = if batch == 2 || k > 0 && rng.chance(1, 6) { 0 } else { rng.range(1, 3 * mtu) };
                    let mut s = sge_in(rng, &m, len);
                    if len == 0 {
                        s.lkey = rng.u32();
                    }
                    s
                })
                .collect();
            let read = Wqe {
                wr_id: 0x2EAD_0000 + (mtu_code << 8) + batch,
                opcode: wr_opcode::RDMA_READ,
                flags: random_flags(rng),
                imm: rng.u32(),
                remote_addr: rng.next_u64(),
                rkey: rng.u32(),
                sges: sges.clone(),
                ud: None,
                inline: None,
            };
            let m = rng.pick(&mrs).clone();
            let len = rng.range(0, 2 * mtu);
            let write = Wqe {
                wr_id: 0x3717_0000 + batch,
                opcode: wr_opcode::RDMA_WRITE,
                flags: random_flags(rng),
                imm: 0,
                remote_addr: rng.next_u64(),
                rkey: rng.u32(),
                sges: vec![sge_in(rng, &m, len)],
                ud: None,
                inline: None,
            };
            let psn0 = tb.model.qps[&qpn].next_psn;
            let read_no = tb.model.qps[&qpn].reads;
            let ctx = format!(
                "QP {qpn} MTU {mtu} batch {batch}: READ into {:?} (seed {seed:#x})",
                sges.iter().map(|s| s.len).collect::<Vec<_>>()
            );
            let got = tb.post_and_check(qpn, &[read, write], &ctx);
            // (WQE fetches aside: the WRITE's may come before the READ's record.)
            let got: Vec<Ev> = got.into_iter().filter(|e| !matches!(e, Ev::Fetch { .. })).collect();
            // Spelled out: the list is the translated non-empty SGEs, written before the record.
            let nonempty: Vec<(u64, u64)> = sges
                .iter()
                .filter(|s| s.len > 0)
                .map(|s| (tb.model.check(pd, s, true).unwrap(), u64::from(s.len)))
                .collect();
            let sum: u64 = nonempty.iter().map(|e| e.1).sum();
            let list: Vec<(u64, u64, u64)> = got
                .iter()
                .filter_map(|e| if let Ev::List { waddr, iova, len } = e { Some((*waddr, *iova, *len)) } else { None })
                .collect();
            let rec = got.iter().position(|e| matches!(e, Ev::Record { .. })).expect("no record");
            if n > 1 {
                let want_list: Vec<(u64, u64, u64)> =
                    nonempty.iter().enumerate().map(|(k, e)| (list_addr(qpn, read_no, k), e.0, e.1)).collect();
                assert_eq!(list, want_list, "{ctx}: READ list writes");
                assert!(
                    got[..rec].iter().all(|e| matches!(e, Ev::List { .. })) && rec == list.len(),
                    "{ctx}: the list goes before the record"
                );
                lists += 1;
            } else {
                assert!(list.is_empty(), "{ctx}: a one-SGE READ wrote a list");
            }
            let Ev::Record { rd_list, byte_len, .. } = &got[rec] else { unreachable!() };
            assert_eq!((*rd_list, *byte_len), (n > 1, sum), "{ctx}: in-flight record");
            let Ev::Job(j) = &got[rec + 1] else { panic!("{ctx}: no READ REQUEST after the record") };
            assert_eq!((j.opcode, j.reth.map(|r| r.2)), (0x0C, Some(sum)), "{ctx}: READ REQUEST");
            let wj = got.iter().filter_map(|e| if let Ev::Job(j) = e { Some(j) } else { None }).nth(1).unwrap();
            assert_eq!(
                wj.psn,
                u64::from((psn0 + sum.div_ceil(mtu).max(1) as u32) & PSN_MASK),
                "{ctx}: the WRITE's PSN"
            );
            tb.retire_all(qpn);
        }
    }
    check_tx_req(&tb, "all");
    assert!(lists >= 20, "{lists} READ lists");
}

#[test]
fn multi_sge_read_waits_for_earlier_reads() {
    let mut tb = Tb::new(0x75C4_0004);
    let seed = tb.rng.0;
    let pd = 0x99;
    let mrs = good_mrs(&mut tb, 30, 2, pd);
    for (round, &qpn) in [11u64, 45, 58].iter().enumerate() {
        let mtu_code = tb.rng.range(1, 5);
        let mut cfg = QpCfg::random(&mut tb.rng, mtu_code, pd, 2);
        cfg.max_rd_atomic = 8;
        tb.create_qp(qpn, &cfg);
        tb.backpressure = round == 1;
        let mtu = cfg.mtu();
        let rng = &mut tb.rng;
        let read = |rng: &mut Rng, id: u64, n: u64| Wqe {
            wr_id: 0xFE0C_0000 + (round as u64) * 16 + id,
            opcode: wr_opcode::RDMA_READ,
            flags: send_flags::SIGNALED,
            imm: 0,
            remote_addr: rng.next_u64(),
            rkey: rng.u32(),
            sges: (0..n)
                .map(|_| {
                    let m = rng.pick(&mrs).clone();
                    let len = rng.range(1, 3 * mtu);
                    sge_in(rng, &m, len)
                })
                .collect(),
            ud: None,
            inline: None,
        };
        // Five one-SGE READs, a READ with a list, a WRITE.
        let mut wqes: Vec<Wqe> = (0..5).map(|i| read(rng, i, 1)).collect();
        let n5 = rng.range(2, 13);
        wqes.push(read(rng, 5, n5));
        let m = rng.pick(&mrs).clone();
        let len6 = rng.range(0, 3 * mtu);
        wqes.push(Wqe {
            wr_id: 0xFE0C_1000 + round as u64,
            opcode: wr_opcode::RDMA_WRITE,
            flags: send_flags::SIGNALED,
            imm: 0,
            remote_addr: rng.next_u64(),
            rkey: rng.u32(),
            sges: vec![sge_in(rng, &m, len6)],
            ud: None,
            inline: None,
        });
        let want = tb.post(qpn, &wqes);
        // Split the expected events at each WQE's fetch.
        let starts: Vec<usize> = (0..want.len()).filter(|&i| matches!(want[i], Ev::Fetch { .. })).collect();
        let part = |k: usize| -> Vec<Ev> { want[starts[k]..*starts.get(k + 1).unwrap_or(&want.len())].to_vec() };
        let ctx = format!("QP {qpn} MTU {mtu} (seed {seed:#x})");
        // READs 0..4 go (max_rd_atomic = 8: a one-SGE READ is not held back by 4 outstanding);
        // the list READ is fetched and waits (5 outstanding, the RX engine keeps 4 lists).
        let got = tb.run_quiet(600);
        let mut w: Vec<Ev> = (0..5).flat_map(part).collect();
        w.push(want[starts[5]].clone());
        assert_events(&w, &got, &format!("{ctx}: five READs outstanding"));
        let last = |ev: &[Ev]| {
            ev.iter()
                .find_map(|e| if let Ev::Record { last_psn, .. } = e { Some(*last_psn as u32) } else { None })
                .unwrap()
        };
        // READ 0 retired: 4 outstanding, the list READ still waits.
        tb.acked[qpn as usize] = Acked { wqes: 1, reads: 1, psn: (last(&part(0)) + 1) & PSN_MASK };
        let got = tb.run_quiet(400);
        assert_events(&[], &got, &format!("{ctx}: READ 0 retired, 4 outstanding"));
        // READ 1 retired: 3 outstanding; the list goes to the RX engine (list 5 mod 4 = 1, the
        // one READ 1 used), then the record and the request; the WRITE behind it goes at once.
        tb.acked[qpn as usize] = Acked { wqes: 2, reads: 2, psn: (last(&part(1)) + 1) & PSN_MASK };
        let got = tb.run_quiet(400);
        let w = [part(5)[1..].to_vec(), part(6)].concat();
        assert_events(&w, &got, &format!("{ctx}: READ 1 retired"));
        let Ev::List { waddr, .. } = got[0] else { panic!("{ctx}: the list is copied first: {:x?}", got[0]) };
        assert_eq!(waddr, qpn << 6 | 1 << 4, "{ctx}: READ 5's list slot");
        tb.retire_all(qpn);
    }
}

/// Key-table entries 50..=52 for bad keys, all a 64 KiB region at `va` (IOVA `iova`) with tag
/// `tag`: 50 invalid, 51 of PD `pd + 1`, 52 of PD `pd` without LOCAL_WRITE (REMOTE_WRITE and
/// REMOTE_READ only). Returns the valid LOCAL_WRITE entry they are variants of.
fn bad_key_mrs(tb: &mut Tb, pd: u64, tag: u64, va: u64, iova: u64) -> Mr {
    let base = Mr { valid: true, access: 0x1, tag, pd, va, length: 1 << 16, iova };
    tb.write_mr(50, &Mr { valid: false, ..base.clone() });
    tb.write_mr(51, &Mr { pd: pd + 1, ..base.clone() });
    tb.write_mr(52, &Mr { access: 0x6, ..base.clone() });
    base
}

#[test]
fn bad_lkey_in_a_read_list_completes_locally() {
    let mut tb = Tb::new(0x75C4_0005);
    let seed = tb.rng.0;
    let pd = 0x31;
    let mrs = good_mrs(&mut tb, 40, 2, pd);
    let base = bad_key_mrs(&mut tb, pd, 0x5C, 0x1000_0000, 0x8_0000_0000);
    let kinds =
        ["stale tag", "invalid entry", "other PD", "no LOCAL_WRITE", "past the region", "key bits above the table"];
    let mut local_errs = 0;
    for (vi, kind) in kinds.iter().enumerate() {
        let qpn = 20 + vi as u64 * 7;
        let mtu_code = tb.rng.range(1, 5);
        let cfg = QpCfg::random(&mut tb.rng, mtu_code, pd, 1);
        tb.create_qp(qpn, &cfg);
        tb.backpressure = vi % 2 == 1;
        let mtu = cfg.mtu();
        let rng = &mut tb.rng;
        let sge = |rng: &mut Rng| {
            let m = rng.pick(&mrs).clone();
            let len = rng.range(1, 2 * mtu);
            sge_in(rng, &m, len)
        };
        let write = |rng: &mut Rng, id: u64, s: Sge| Wqe {
            wr_id: 0xE770_0000 + (vi as u64) * 16 + id,
            opcode: wr_opcode::RDMA_WRITE,
            flags: send_flags::SIGNALED,
            imm: 0,
            remote_addr: rng.next_u64(),
            rkey: rng.u32(),
            sges: vec![s],
            ud: None,
            inline: None,
        };
        let s0 = sge(rng);
        let w0 = write(rng, 0, s0);
        let mut sges: Vec<Sge> = (0..4).map(|_| sge(rng)).collect();
        let bad = &mut sges[2];
        match vi {
            0 => bad.lkey ^= 1 << rng.range(0, 7),
            1 => *bad = Sge { addr: base.va + 8, len: 64, lkey: (50 << 8) | 0x5C },
            2 => *bad = Sge { addr: base.va + 8, len: 64, lkey: (51 << 8) | 0x5C },
            3 => *bad = Sge { addr: base.va + 8, len: 64, lkey: (52 << 8) | 0x5C },
            4 => {
                let (i, m) = &mrs[0];
                *bad = Sge { addr: m.va + m.length - 63, len: 64, lkey: lkey_of(*i, m) };
            }
            _ => bad.lkey |= 1 << rng.range(14, 31),
        }
        let r1 = Wqe {
            wr_id: 0xE770_0000 + (vi as u64) * 16 + 1,
            opcode: wr_opcode::RDMA_READ,
            flags: send_flags::SIGNALED,
            imm: 0,
            remote_addr: rng.next_u64(),
            rkey: rng.u32(),
            sges,
            ud: None,
            inline: None,
        };
        let s2 = sge(rng);
        let w2 = write(rng, 2, s2);
        let want = tb.post(qpn, &[w0, r1, w2]);
        let ctx = format!("QP {qpn}: SGE 2 {kind} (seed {seed:#x})");
        // The model's verdict, spelled out.
        let locals: Vec<&Ev> = want.iter().filter(|e| matches!(e, Ev::Local { .. })).collect();
        assert_eq!(
            locals,
            vec![
                &Ev::Local {
                    wr_id: 0xE770_0000 + (vi as u64) * 16 + 1,
                    qpn,
                    status: u64::from(wc_status::LOC_PROT_ERR),
                    wc_opcode: 2
                },
                &Ev::Local {
                    wr_id: 0xE770_0000 + (vi as u64) * 16 + 2,
                    qpn,
                    status: u64::from(wc_status::WR_FLUSH_ERR),
                    wc_opcode: 1
                },
            ],
            "{ctx}: the model"
        );
        // The WRITE goes; the READ is fetched, and its error waits for the WRITE to retire.
        let starts: Vec<usize> = (0..want.len()).filter(|&i| matches!(want[i], Ev::Fetch { .. })).collect();
        let got = tb.run_quiet(400);
        assert_events(&want[..starts[1] + 1], &got, &format!("{ctx}: before the WRITE retired"));
        tb.retire_all(qpn);
        let got = tb.run_quiet(400);
        assert_events(&want[starts[1] + 1..], &got, &format!("{ctx}: after"));
        assert!(
            !got.iter().any(|e| matches!(e, Ev::List { .. } | Ev::Record { .. } | Ev::Job(_) | Ev::Read { .. })),
            "{ctx}: {got:x?}"
        );
        local_errs += 1;
        assert_eq!(tb.pulses_local_err, local_errs, "{ctx}: cnt_local_err counts the LOC_PROT_ERR, not the flush");
    }
    check_tx_req(&tb, "all");
}

/// A signaled one-SGE RDMA WRITE of 1..=64 bytes from one of `mrs`, to a random remote address.
fn small_write(rng: &mut Rng, mrs: &[(u64, Mr)], wr_id: u64) -> Wqe {
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
fn ring64_qp(tb: &mut Tb, qpn: u64, pd: u64) -> QpCfg {
    let mut cfg = QpCfg::random(&mut tb.rng, 2, pd, 0);
    cfg.log_size = 6;
    cfg.sq_base &= !0xFFF;
    tb.create_qp(qpn, &cfg);
    cfg
}

/// Posts `n` one-beat WRITEs on a fresh QP `qpn` (64-entry ring on a page boundary) at once and
/// checks the events against the model; returns the ring's base, the fetches (cycle, address,
/// beats) and the cycles of the packet jobs.
fn burst_run(tb: &mut Tb, pd: u64, qpn: u64, n: u64, tag: u64) -> (u64, Vec<(u64, u64, u64)>, Vec<u64>) {
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

/// Small WRITEs posted several at a time are fetched in bursts of consecutive WQEs (up to 8
/// beats, never across the ring's end or a 4 KiB page), and each WQE is still acted on exactly
/// as the model says, across ring wraps and with the buffer refilled between batches.
#[test]
fn wqes_are_fetched_in_bursts() {
    let mut tb = Tb::new(0x75C4_0006);
    let seed = tb.rng.0;
    let pd = 0x2468;
    let mrs = good_mrs(&mut tb, 2, 2, pd);
    let mut total = (0usize, 0usize);
    for (qpn, stride, log_size) in [(5u64, 0u64, 4u64), (9, 1, 3), (12, 0, 6), (40, 2, 4)] {
        let mut cfg = QpCfg::random(&mut tb.rng, 2, pd, stride);
        cfg.log_size = log_size;
        // The ring ends 64 bytes short of a page boundary sometimes: bursts split there.
        if tb.rng.chance(1, 2) {
            cfg.sq_base = (cfg.sq_base & !0xFFF) | (0x1000 - (64 << stride));
        }
        tb.create_qp(qpn, &cfg);
        let mut wqes_here = 0;
        let first_event = tb.events.len();
        for batch in 0..6 {
            // (Never more than the ring holds.)
            let n = tb.rng.range(1, 12).min(1 << log_size);
            let wqes: Vec<Wqe> =
                (0..n).map(|k| small_write(&mut tb.rng, &mrs, 0xB0B0_0000 | (qpn << 12) | (batch << 8) | k)).collect();
            let ctx = format!("QP {qpn} stride {stride} ring {} batch {batch} (seed {seed:#x})", 1 << log_size);
            tb.post_and_check(qpn, &wqes, &ctx);
            tb.retire_all(qpn);
            wqes_here += wqes.len();
        }
        let fetches: Vec<(u64, u64)> = tb.events[first_event..]
            .iter()
            .filter_map(|(_, e)| if let Ev::Fetch { addr, beats } = e { Some((*addr, *beats)) } else { None })
            .collect();
        let wqe_bytes = 64u64 << stride;
        let ring_end = cfg.sq_base + (wqe_bytes << log_size);
        for &(addr, beats) in &fetches {
            assert!(
                addr >= cfg.sq_base && addr + 64 * beats <= ring_end,
                "QP {qpn}: fetch {addr:#x}+{beats} leaves the ring"
            );
            assert_eq!((addr - cfg.sq_base) % wqe_bytes, 0, "QP {qpn}: fetch {addr:#x} not at a WQE slot");
        }
        let fetched_wqes: u64 = fetches.iter().map(|&(_, b)| b * 64 / wqe_bytes).sum();
        assert!(fetched_wqes >= wqes_here as u64, "QP {qpn}: {fetched_wqes} WQEs fetched for {wqes_here}");
        total = (total.0 + fetches.len(), total.1 + wqes_here);
    }
    // One fetch per WQE before the prefetch buffer; now far fewer.
    assert!(total.0 * 2 < total.1, "{} fetches for {} WQEs", total.0, total.1);
}

/// UD QPs (`QP_TYPE` 1; IBTA Vol 1 9.8): each SEND / SEND WITH IMMEDIATE of up to one path MTU
/// becomes one SEND ONLY (0x64 / 0x65) with AckReq clear, BTH.SE for SOLICITED, addressed from
/// the WQE (remote QPN, IP, MAC; P_Key and UDP port from the context), with `has_deth`: Q_Key
/// the WQE's, or the QP's when the WQE's has bit 31 set, and this QP as the source; recorded in
/// the in-flight table like any WQE (the assembler's report of the sent frame retires it). An
/// RDMA WRITE or READ on a UD QP completes IBV_WC_LOC_QP_OP_ERR, a message over the path MTU
/// IBV_WC_LOC_LEN_ERR, nothing sent, and the WQEs behind them are flushed.
#[test]
fn ud_wqes_become_send_only_with_a_deth() {
    let mut tb = Tb::new(0x0D_3001);
    let seed = tb.rng.0;
    let pd = 0x777;
    let mrs = good_mrs(&mut tb, 2, 2, pd);
    let qkey = 0x1357_9BDFu64;
    for (round, qpn) in [9u64, 21, 33].into_iter().enumerate() {
        let stride = tb.rng.range(0, 3);
        let mut cfg = QpCfg::random(&mut tb.rng, 3, pd, stride);
        cfg.ud_qkey = Some(qkey);
        tb.create_qp(qpn, &cfg);
        let mtu = cfg.mtu();
        for batch in 0..3u64 {
            tb.backpressure = batch % 2 == 1;
            let mut wqes = Vec::new();
            for k in 0..tb.rng.range(1, 6) {
                let rng = &mut tb.rng;
                let m = rng.pick(&mrs).clone();
                let any = rng.range(1, mtu);
                let len = *rng.pick(&[0, 1, 63, 64, 65, mtu - 1, mtu, any]);
                let opcode = *rng.pick(&[wr_opcode::SEND, wr_opcode::SEND_WITH_IMM]);
                let wq = if rng.chance(1, 3) { 0x8000_0000 | u64::from(rng.u32()) } else { u64::from(rng.u32() >> 1) };
                wqes.push(Wqe {
                    wr_id: 0xD0D0_0000 | (round as u64) << 12 | batch << 8 | k,
                    opcode,
                    flags: random_flags(rng),
                    imm: rng.u32(),
                    remote_addr: 0,
                    rkey: 0,
                    sges: if len == 0 && rng.chance(1, 2) { vec![] } else { vec![sge_in(rng, &m, len)] },
                    inline: None,
                    ud: Some((
                        u64::from(rng.u32() & 0xFF_FFFF),
                        wq,
                        u64::from(rng.u32()),
                        rng.next_u64() & 0xFFFF_FFFF_FFFF,
                    )),
                });
            }
            let ctx = format!("UD QP {qpn} batch {batch} (seed {seed:#x})");
            tb.post_and_check(qpn, &wqes, &ctx);
            tb.retire_all(qpn);
        }
        // Then what a UD QP cannot send: an RDMA WRITE (round 0), an RDMA READ (1), a SEND
        // one byte over the MTU (2); a good SEND behind it is flushed.
        let m = mrs[0].clone();
        let ud = Some((5, 5, 0x0A00_0001, 0x02_0000_0001));
        let bad = match round {
            0 => Wqe { opcode: wr_opcode::RDMA_WRITE, sges: vec![sge_in(&mut tb.rng, &m, 8)], ..base_wqe(1, ud) },
            1 => Wqe { opcode: wr_opcode::RDMA_READ, sges: vec![sge_in(&mut tb.rng, &m, 8)], ..base_wqe(1, ud) },
            _ => Wqe { sges: vec![sge_in(&mut tb.rng, &m, mtu + 1)], ..base_wqe(1, ud) },
        };
        let good = Wqe { sges: vec![sge_in(&mut tb.rng, &m, 10)], ..base_wqe(2, ud) };
        let got = tb.post_and_check(qpn, &[bad, good], &format!("UD QP {qpn} refusals (seed {seed:#x})"));
        assert!(!got.iter().any(|e| matches!(e, Ev::Job(_))), "nothing sent: {got:?}");
    }
}

/// A signaled SEND of no SGE with UD address `ud`.
fn base_wqe(wr_id: u64, ud: Option<(u64, u64, u64, u64)>) -> Wqe {
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

/// The next WQEs are read while the prefetch buffer still holds some (a fetch appended behind
/// them), so a QP with many WQEs posted never waits a whole DMA read between bursts: 32
/// one-beat WRITEs posted at once cost 4 fetches of 8 consecutive slots, each slot read once,
/// and every fetch after the first is issued before the packet of the last WQE the fetches
/// before it read has gone out.
#[test]
fn the_next_wqes_are_fetched_while_the_buffer_holds_some() {
    let mut tb = Tb::new(0x75C4_0007);
    let qpn = 7;
    let (base, fetches, jobs) = burst_run(&mut tb, 0x2468, qpn, 32, 0xA11E_0000);
    let want: Vec<(u64, u64)> = (0..4).map(|k| (base + 512 * k, 8)).collect();
    assert_eq!(fetches.iter().map(|f| (f.1, f.2)).collect::<Vec<_>>(), want, "4 bursts of 8, each slot once");
    for k in 1..4usize {
        assert!(
            fetches[k].0 < jobs[8 * k - 1],
            "fetch {k} at cycle {} only after WQE {}'s packet at {}",
            fetches[k].0,
            8 * k - 1,
            jobs[8 * k - 1]
        );
    }
    tb.retire_all(qpn);
}

/// A QP's second burst is asked for as soon as its first is accepted (the fetch-ahead
/// machine's kick), before any WQE of the first is used, and appends go on while the WQE path
/// works: 40 one-beat WRITEs are fetched as 5 bursts of 8, each slot once, the first two before
/// the first packet, and every later burst while at least 8 fetched WQEs are not yet sent (the
/// 32-beat buffer); the events equal the model's.
#[test]
fn the_second_burst_is_asked_for_before_the_first_is_used() {
    let mut tb = Tb::new(0x75C4_000A);
    let seed = tb.rng.0;
    let qpn = 9;
    let (base, fetches, jobs) = burst_run(&mut tb, 0x2469, qpn, 40, 0xA12E_0000);
    let want: Vec<(u64, u64)> = (0..5).map(|k| (base + 512 * k, 8)).collect();
    assert_eq!(fetches.iter().map(|f| (f.1, f.2)).collect::<Vec<_>>(), want, "5 bursts of 8, each slot once");
    assert!(
        fetches[1].0 < jobs[0],
        "the second burst at cycle {} only after the first packet at {} (seed {seed:#x})",
        fetches[1].0,
        jobs[0]
    );
    for (k, f) in fetches.iter().enumerate().skip(2) {
        let sent = jobs.iter().filter(|&&t| t < f.0).count();
        assert!(
            8 * k - sent >= 8,
            "burst {k} asked for at cycle {} with only {} fetched WQEs unsent (seed {seed:#x})",
            f.0,
            8 * k - sent
        );
    }
    tb.retire_all(qpn);
}

/// A QP rung again while it is served, with another QP waiting behind its offer (`db_others`),
/// does not keep that QP waiting until it runs out of work: the scheduler takes its own offer
/// while serving (so the doorbell block can offer the next QP), serves the waiting QP next, and
/// puts itself back into the ready set (`rearm`) when it leaves; its WQEs posted meanwhile come
/// after the other QP's. Before, the served QP's own offer hid the other QP: a READ stream on
/// one QP kept another QP's READs waiting for 50 000 cycles (`rnic perf read --qps 2`).
#[test]
fn a_qp_rung_while_served_lets_a_waiting_qp_go_next() {
    let mut tb = Tb::new(0x75C4_0009);
    let seed = tb.rng.0;
    let pd = 0x1357;
    let mrs = good_mrs(&mut tb, 2, 2, pd);
    let (a, b) = (7u64, 21u64);
    for q in [a, b] {
        let mut cfg = QpCfg::random(&mut tb.rng, 2, pd, 0);
        cfg.log_size = 6;
        tb.create_qp(q, &cfg);
    }
    let first: Vec<Wqe> = (0..8).map(|k| small_write(&mut tb.rng, &mrs, 0xA000 | k)).collect();
    let mut want = tb.post(a, &first);
    let from = tb.events.len();
    while !tb.events[from..].iter().any(|e| matches!(e.1, Ev::Job(_))) {
        tb.step();
    }
    // QP a is being served: it is rung again, and QP b is rung behind it.
    let again: Vec<Wqe> = (0..8).map(|k| small_write(&mut tb.rng, &mrs, 0xA100 | k)).collect();
    let want_again = tb.post(a, &again);
    let other: Vec<Wqe> = (0..4).map(|k| small_write(&mut tb.rng, &mrs, 0xB000 | k)).collect();
    want.extend(tb.post(b, &other));
    want.extend(want_again);
    let reads_before = tb.db_reads.len();
    let mut got: Vec<Ev> = tb.events[from..].iter().map(|e| e.1.clone()).collect();
    got.extend(tb.run_quiet(200));
    assert_events(&want, &got, &format!("QP {a}'s first WQEs, then QP {b}'s, then QP {a}'s (seed {seed:#x})"));
    assert!(
        tb.db_reads[reads_before..].iter().any(|&(_, st)| st != 0),
        "QP {a}'s own offer was not taken while it was served: {:?}",
        &tb.db_reads[reads_before..]
    );
    assert!(tb.rearms.iter().any(|&(_, q)| q == a), "QP {a} was not put back into the ready set");
}

/// A QP rung again while it is served, with no other QP waiting, serves the new WQEs in the
/// same visit: its own offer is taken while it is served (not from `Idle`), its producer index
/// extended in place (the QP still goes back into the ready set when it leaves, and is found
/// with nothing left), and the new WQEs' slots are fetched once each, appended behind the
/// first batch's, never read again from scratch; the events equal the model's. Before, the QP
/// ran dry at the first doorbell's producer index, went back through `Idle` and started over
/// with a fresh WQE read (64-byte WRITEs on one QP: 20.7 Mpps, 23.4 with it).
#[test]
fn a_qp_rung_while_served_alone_serves_its_new_wqes_in_place() {
    let mut tb = Tb::new(0x75C4_000B);
    let seed = tb.rng.0;
    let pd = 0x1358;
    let mrs = good_mrs(&mut tb, 2, 2, pd);
    let a = 11u64;
    let cfg = ring64_qp(&mut tb, a, pd);
    let first: Vec<Wqe> = (0..16).map(|k| small_write(&mut tb.rng, &mrs, 0xC000 | k)).collect();
    let mut want = tb.post(a, &first);
    let from = tb.events.len();
    while !tb.events[from..].iter().any(|e| matches!(e.1, Ev::Job(_))) {
        tb.step();
    }
    let reads_before = tb.db_reads.len();
    let again: Vec<Wqe> = (0..16).map(|k| small_write(&mut tb.rng, &mrs, 0xC100 | k)).collect();
    want.extend(tb.post(a, &again));
    let mut got: Vec<Ev> = tb.events[from..].iter().map(|e| e.1.clone()).collect();
    got.extend(tb.run_quiet(200));
    assert_events(&want, &got, &format!("QP {a}'s two batches in order (seed {seed:#x})"));
    let reads = &tb.db_reads[reads_before..];
    // (A later read from `Idle` is the QP's return to the ready set, `self_rung`, with nothing left.)
    assert!(reads.first().is_some_and(|&(_, st)| st != 0), "the second doorbell was taken from Idle: {reads:?}");
    let mut slots: Vec<u64> = Vec::new();
    for e in &got {
        if let Ev::Fetch { addr, beats } = e {
            slots.extend((0..*beats).map(|k| (addr - cfg.sq_base) / 64 + k));
        }
    }
    assert_eq!(slots, (0..32).collect::<Vec<_>>(), "each slot fetched once, in order (seed {seed:#x})");
    tb.retire_all(a);
}

/// A RESET of the QP being served, at every cycle offset from its doorbell: once the command is
/// taken (the driver then frees the QP's rings), the engine reads nothing more from the ring,
/// whether the command came while it was loading the QP's context (`LoadQp`: the context it then
/// loads is read again, `cmd_in_load`), serving it, or waiting in `Idle` for an append of the
/// fetch-ahead machine to be issued (`rst_here_r` holds the command back for both machines).
#[test]
fn a_reset_of_the_served_qp_ends_its_ring_reads() {
    for off in 0..48u64 {
        let mut tb = Tb::new(0x75C4_0C00 + off);
        let seed = tb.rng.0;
        let pd = 0x2470;
        let mrs = good_mrs(&mut tb, 2, 2, pd);
        let qpn = 5;
        let mut cfg = QpCfg::random(&mut tb.rng, 2, pd, 0);
        cfg.log_size = 6;
        tb.create_qp(qpn, &cfg);
        let wqes: Vec<Wqe> = (0..40u64).map(|k| small_write(&mut tb.rng, &mrs, 0xD000 | k)).collect();
        tb.post(qpn, &wqes);
        for _ in 0..off {
            tb.step();
        }
        let mut r = [0u8; 64];
        qp::STATE.put(&mut r, 0);
        tb.command(1, qpn, &r);
        let taken = tb.cycle;
        for _ in 0..400 {
            tb.step();
        }
        let late: Vec<(u64, Ev)> =
            tb.events.iter().filter(|(t, e)| *t >= taken && matches!(e, Ev::Fetch { .. })).cloned().collect();
        assert!(
            late.is_empty(),
            "offset {off}: ring read after the RESET was taken at {taken}: {late:?} (seed {seed:#x})"
        );
    }
}

/// A QP that steps aside with fetched WQEs it cannot send yet leaves the prefetch buffer to
/// the next QP: its beats still in flight are dropped as they arrive, never written, so they
/// take no room from the next QP's first fetch. QP a (max_rd_atomic 16) has 56 one-SGE READs
/// posted, fetched ahead while it sends its first 16 (a fetch takes 64 cycles here, as the
/// simulator's PCIe model); then it must wait for responses and steps aside for QP b, whose
/// first fetch is a full burst of 8 WQEs (before: the 2 that its undelivered beats left),
/// asked for 12 cycles after a's last READ (a steps aside as the 17th reaches the buffer's
/// head, `rd_blk_r`, instead of taking it through its checks first: 19); every
/// event equals the model's, a's READs resuming as the test retires them. (`rnic perf read
/// --qps 8 --post-list 16`: 19.71 Mpps with the old accounting, 20.34 with this.)
#[test]
fn a_qp_that_steps_aside_leaves_the_prefetch_buffer_to_the_next() {
    let mut tb = Tb::new(0x75C4_000D);
    let seed = tb.rng.0;
    tb.wqe_latency = 64;
    let pd = 0x2470;
    let mrs = good_mrs(&mut tb, 2, 2, pd);
    let (a, b) = (13u64, 29u64);
    let mut bases = Vec::new();
    for q in [a, b] {
        // (max_rd_atomic 16, `QpCfg::random`'s.)
        bases.push(ring64_qp(&mut tb, q, pd).sq_base);
    }
    let reads: Vec<Wqe> = (0..56)
        .map(|k| {
            let m = tb.rng.pick(&mrs).clone();
            let len = tb.rng.range(1, 64);
            let sge = sge_in(&mut tb.rng, &m, len);
            Wqe {
                wr_id: 0xD000 | k,
                opcode: wr_opcode::RDMA_READ,
                flags: send_flags::SIGNALED,
                imm: 0,
                remote_addr: tb.rng.next_u64(),
                rkey: tb.rng.u32(),
                sges: vec![sge],
                ud: None,
                inline: None,
            }
        })
        .collect();
    let want_a = tb.post(a, &reads);
    // Split a's expected events at each WQE's fetch.
    let starts: Vec<usize> = (0..want_a.len()).filter(|&i| matches!(want_a[i], Ev::Fetch { .. })).collect();
    let part = |r: std::ops::Range<usize>| -> Vec<Ev> {
        want_a[starts[r.start]..*starts.get(r.end).unwrap_or(&want_a.len())].to_vec()
    };
    // b rings once a is being served.
    let from = tb.events.len();
    while !tb.events[from..].iter().any(|e| matches!(e.1, Ev::Job(_))) {
        tb.step();
    }
    let writes: Vec<Wqe> = (0..16).map(|k| small_write(&mut tb.rng, &mrs, 0xE000 | k)).collect();
    let want_b = tb.post(b, &writes);
    let mut got: Vec<Ev> = tb.events[from..].iter().map(|e| e.1.clone()).collect();
    got.extend(tb.run_quiet(400));
    let want = [part(0..16), want_b].concat();
    assert_events(&want, &got, &format!("a's first 16 READs, then b's WRITEs (seed {seed:#x})"));
    let in_ring = |addr: u64, base: u64| addr >= base && addr < base + 4096;
    let b_first = got
        .iter()
        .find_map(|e| match e {
            Ev::Fetch { addr, beats } if in_ring(*addr, bases[1]) => Some(*beats),
            _ => None,
        })
        .expect("b's WQEs were fetched");
    assert_eq!(b_first, 8, "b's first fetch: a full burst, not what a's dropped beats left (seed {seed:#x})");
    // a steps aside as its 17th READ reaches the head of the buffer (no slot), not after
    // taking it through the checks: b's fetch follows a's last request closely.
    let evs = &tb.events[from..];
    let last_a = evs.iter().filter(|(_, e)| matches!(e, Ev::Job(_))).map(|&(c, _)| c).nth(15).expect("16 READs");
    let b_fetch = evs
        .iter()
        .find_map(|(c, e)| matches!(e, Ev::Fetch { addr, .. } if in_ring(*addr, bases[1])).then_some(*c))
        .expect("b fetched");
    assert!(
        b_fetch <= last_a + 12,
        "a's last READ at cycle {last_a}, b's first fetch only at {b_fetch} (seed {seed:#x})"
    );
    // a's READs go on as their responses come back.
    for (k, r) in [(1, 16..32), (2, 32..48), (3, 48..56)] {
        tb.retire_all(a);
        let got = tb.run_quiet(400);
        assert_events(&part(r), &got, &format!("a's READs, round {k} (seed {seed:#x})"));
    }
    tb.retire_all(a);
    tb.retire_all(b);
}

/// A SEND starts only while fewer than `1 << LOG_MAX_INFLIGHT_SENDS` (32) WQEs of its QP are in
/// flight: with 40 small SENDs posted and no ACK, exactly 32 are recorded and sent; each WQE
/// the completer retires lets one more go, and the WRITE posted behind the held SENDs waits
/// its turn (a QP's WQEs start in order).
#[test]
fn a_send_waits_for_the_send_window() {
    let mut tb = Tb::new(0x75C4_0031);
    let seed = tb.rng.0;
    let pd = 0x5A;
    let qpn = 21;
    let mrs = good_mrs(&mut tb, 12, 2, pd);
    ring64_qp(&mut tb, qpn, pd);
    let win = 1u64 << rnic_contract::LOG_MAX_INFLIGHT_SENDS;
    let n = win + 8;
    let mut wqes: Vec<Wqe> =
        (0..n).map(|k| Wqe { opcode: wr_opcode::SEND, ..small_write(&mut tb.rng, &mrs, 0x5E00 | k) }).collect();
    wqes.push(small_write(&mut tb.rng, &mrs, 0x5EFF));
    let want = tb.post(qpn, &wqes);
    let jobs = |ev: &[Ev]| ev.iter().filter(|e| matches!(e, Ev::Job(_))).count() as u64;
    let ctx = format!("{n} SENDs and a WRITE, no ACK (seed {seed:#x})");
    let got = tb.run_quiet(400);
    assert_eq!(jobs(&got), win, "{ctx}: the window's SENDs go, the rest wait");
    let mut all = got;
    // Three WQEs retired: three more SENDs.
    let records: Vec<u32> = all
        .iter()
        .filter_map(|e| if let Ev::Record { last_psn, .. } = e { Some(*last_psn as u32) } else { None })
        .collect();
    tb.acked[qpn as usize] = Acked { wqes: 3, reads: 0, psn: (records[2] + 1) & PSN_MASK };
    let got = tb.run_quiet(400);
    assert_eq!(jobs(&got), 3, "{ctx}: three retired, three more SENDs");
    all.extend(got);
    // All retired: the rest, the WRITE last, exactly as the model says.
    tb.retire_all(qpn);
    all.extend(tb.run_quiet(400));
    assert_events(&want, &all, &ctx);
}

/// Posts `wqes` on `qpn`, of which WQE `k` fails with `status` (the model must agree, and flush
/// the rest): the WRITEs before it are sent, nothing after, and once they are retired every
/// event is the model's.
fn post_one_bad(tb: &mut Tb, qpn: u64, wqes: &[Wqe], k: usize, status: u8, ctx: &str) {
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

/// The head check (`HeadStep`) gives a buffered one-SGE WRITE the verdicts `CheckLkey`,
/// `CheckRoom` and `CheckBounds` would: 16 one-beat WRITEs posted at once (each checked while
/// the one before it is issued), one of them with a bad SGE (stale tag, invalid entry, another
/// PD, past or before its region, key bits above the table) and one from a region without
/// LOCAL_WRITE (which a WRITE's source needs not grant). The WRITEs before the bad one go, it
/// fails with IBV_WC_LOC_PROT_ERR once they are retired, and the rest are flushed, exactly as
/// the model says.
#[test]
fn buffered_writes_get_the_key_and_bounds_verdicts_of_the_slow_path() {
    let mut tb = Tb::new(0x75C4_0032);
    let seed = tb.rng.0;
    let pd = 0x3C;
    let mrs = good_mrs(&mut tb, 40, 2, pd);
    let base = bad_key_mrs(&mut tb, pd, 0x5D, 0x2000_0000, 0x9_0000_0000);
    let kinds = ["stale tag", "invalid entry", "other PD", "past the region", "before the region", "key bits above"];
    for (vi, kind) in kinds.iter().enumerate() {
        let qpn = 3 + vi as u64 * 9;
        ring64_qp(&mut tb, qpn, pd);
        tb.backpressure = vi % 2 == 1;
        let tag = 0xB0C0_0000 + (vi as u64) * 64;
        let mut wqes: Vec<Wqe> = (0..16).map(|k| small_write(&mut tb.rng, &mrs, tag | k)).collect();
        let k = tb.rng.range(2, 15) as usize;
        // A good WQE from a region without LOCAL_WRITE just before the bad one.
        wqes[k - 1].sges[0] = Sge { addr: base.va + 64, len: 32, lkey: (52 << 8) | 0x5D };
        let (i0, m0) = &mrs[0];
        let bad = &mut wqes[k].sges[0];
        match vi {
            0 => bad.lkey ^= 1 << tb.rng.range(0, 7),
            1 => *bad = Sge { addr: base.va + 8, len: 64, lkey: (50 << 8) | 0x5D },
            2 => *bad = Sge { addr: base.va + 8, len: 64, lkey: (51 << 8) | 0x5D },
            3 => *bad = Sge { addr: m0.va + m0.length - 63, len: 64, lkey: lkey_of(*i0, m0) },
            4 => *bad = Sge { addr: m0.va - 1, len: 8, lkey: lkey_of(*i0, m0) },
            _ => bad.lkey |= 1 << tb.rng.range(14, 31),
        }
        let ctx = format!("QP {qpn}: WRITE {k} {kind} (seed {seed:#x})");
        post_one_bad(&mut tb, qpn, &wqes, k, wc_status::LOC_PROT_ERR, &ctx);
    }
}

/// A message over `max_msg_sz` (2^31 bytes; one SGE, or a gather list adding up to more) is
/// refused with IBV_WC_LOC_LEN_ERR before its key or bounds are looked at, nothing of it is
/// sent, and the WQEs behind it are flushed. The one-SGE WRITE takes the head check's fast
/// path (one-slot WQEs) on one QP and the slow path on the other (two-slot WQEs), so both
/// verdicts are exercised. (The driver refuses such a WR at `ibv_post_send`; this is what the
/// NIC does with one a driver did not check.)
#[test]
fn a_message_over_max_msg_sz_fails_with_loc_len_err() {
    let mut tb = Tb::new(0x75C4_0035);
    let seed = tb.rng.0;
    let pd = 0x5A5;
    let mrs = good_mrs(&mut tb, 20, 2, pd);
    for (vi, (qpn, log_stride)) in [(9u64, 0u64), (44, 1), (45, 1)].into_iter().enumerate() {
        let mut cfg = QpCfg::random(&mut tb.rng, 2, pd, log_stride);
        cfg.log_size = 6;
        cfg.sq_base &= !0xFFF;
        tb.create_qp(qpn, &cfg);
        let tag = 0xC0DE_0000 + (vi as u64) * 64;
        let mut wqes: Vec<Wqe> = (0..12).map(|k| small_write(&mut tb.rng, &mrs, tag | k)).collect();
        let k = tb.rng.range(1, 11) as usize;
        let (i0, m0) = &mrs[0];
        let over = MAX_MSG_SZ + tb.rng.range(1, u64::from(MAX_MSG_SZ) - 1) as u32;
        wqes[k].sges = if vi < 2 {
            vec![Sge { addr: m0.va, len: over, lkey: lkey_of(*i0, m0) }]
        } else {
            // Two entries of at most 2^31 each, together one byte or more over.
            let a = MAX_MSG_SZ - tb.rng.range(0, 4096) as u32;
            let b = MAX_MSG_SZ - a + 1 + tb.rng.range(0, 4096) as u32;
            vec![
                Sge { addr: m0.va, len: a, lkey: lkey_of(*i0, m0) },
                Sge { addr: m0.va, len: b, lkey: lkey_of(*i0, m0) },
            ]
        };
        let ctx = format!("QP {qpn} (stride {log_stride}): WQE {k} over 2^31 bytes (seed {seed:#x})");
        post_one_bad(&mut tb, qpn, &wqes, k, wc_status::LOC_LEN_ERR, &ctx);
    }
}
