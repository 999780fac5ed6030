//! The RX engine's test bench, shared by `rx_engine_tb.rs` (the responder) and
//! `rx_engine_completer_tb.rs` (the completer and the asynchronous events): the DUT handle
//! (`Tb`: context commands, descriptors in, jobs, counter pulses and go-back-N requests out, the
//! scheduler's side played through the in-flight, READ-list and `sent_*` ports), the packet and
//! job views, and the responder's model of IBTA's admission rules (`model`).
#![allow(dead_code)]

use crate::harness::tables::{Mr, Peer};
use crate::harness::{pack_fields, Dut, Port, Rng};
use rnic_contract::{cq_context as cqc, qp_context as qp, Field};
use rnic_hdl::records::{AckJob, RxDesc, WriteJob};
use rnic_hdl::rx_engine::RxEngine;

pub const WRITE_FIRST: u8 = 0x06;
pub const WRITE_MIDDLE: u8 = 0x07;
pub const WRITE_LAST: u8 = 0x08;
pub const WRITE_ONLY: u8 = 0x0A;

#[derive(Clone, Debug)]
pub struct Qp {
    pub state: u64,
    pub mtu_code: u64,
    pub access: u64,
    pub pd: u64,
    pub peer: Peer,
    // Responder state (model).
    pub epsn: u32,
    pub msn: u32,
    pub open: Option<(u64, u64)>, // (next address, bytes remaining) of an open multi-packet message
    /// A sequence-error NAK was sent for the current gap (cleared when a packet is accepted).
    pub nak_sent: bool,
    /// A class C error (NAK remote access error or invalid request) put the QP in ERR
    /// (IBTA Vol 1 9.9.3): every later packet is dropped as for a QP not in RTR/RTS.
    pub err: bool,
}

#[derive(Clone, Debug, Default)]
pub struct Desc {
    pub start: u64,
    pub nbeats: u64,
    pub opcode: u8,
    pub hlen: u64,
    pub ackreq: bool,
    pub plen: u64,
    pub dest_qpn: u64,
    pub psn: u32,
    pub va: u64,
    pub rkey: u32,
    pub len: u32,
    /// A UD SEND ONLY (`RxDesc::ud`), its DETH in `reth_va` (Q_Key 63:32, source QP 23:0).
    pub ud: Option<u64>,
}

/// What the engine did with one packet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    pub counter: &'static str,
    pub kind: u64,
    pub need_ack: bool,
    pub addr: Option<u64>,
    pub syndrome: Option<u64>,
    pub msn: Option<u64>,
    pub ack_psn: Option<u64>,
}

pub struct Tb {
    pub dut: Dut,
    pub p: Pins,
    pub rng: Rng,
    /// The scheduler's count of WQEs recorded in the in-flight table, by QP: served on
    /// `sent_data` at the engine's `sent_addr` (all zero unless a test records WQEs).
    pub sent: Vec<u64>,
}

pub struct Pins {
    pub desc_empty: Port,
    pub desc: Port,
    pub desc_read: Port,
    pub cmd_fire: Port,
    pub cmd_op: Port,
    pub cmd_index: Port,
    pub cmd_record: Port,
    pub cmd_ready: Port,
    pub job_afull: Port,
    pub job_write: Port,
    pub job: Port,
    pub rr_write: Port,
    pub counters: Vec<(&'static str, Port)>,
}

pub fn get(bytes: &[u8], off: usize, width: usize) -> u64 {
    Field::at_bit(off, width).get(bytes)
}

/// The responder's part of `q`'s QP-context record: its state, with both PSNs (re)loaded (the
/// expected one from `epsn`), path MTU, remote access, PD and the peer's QPN.
pub fn qp_record(q: &Qp) -> [u8; 64] {
    let mut r = [0u8; 64];
    qp::STATE.put(&mut r, q.state);
    qp::INIT_RQ_PSN.put(&mut r, 1);
    qp::INIT_SQ_PSN.put(&mut r, 1);
    qp::RQ_PSN.put(&mut r, u64::from(q.epsn));
    qp::PATH_MTU.put(&mut r, q.mtu_code);
    qp::ACCESS.put(&mut r, q.access);
    qp::PD.put(&mut r, q.pd);
    qp::DEST_QPN.put(&mut r, q.peer.dest_qpn);
    r
}

impl Tb {
    pub fn new(seed: u64) -> Tb {
        let mut dut = Dut::build::<RxEngine>("rx_engine").expect("build the RX engine model");
        let counters = [
            "cnt_roce_ok",
            "cnt_unknown_qp",
            "cnt_drop_key",
            "cnt_drop_psn",
            "cnt_drop_inv_req",
            "cnt_dup",
            "cnt_rx_ack",
            "cnt_cqe",
            "cnt_drop_no_rwqe",
        ]
        .into_iter()
        .map(|n| (n, dut.port(n)))
        .collect();
        let p = Pins {
            desc_empty: dut.port("desc_empty"),
            desc: dut.port("desc"),
            desc_read: dut.port("desc_read"),
            cmd_fire: dut.port("cmd_fire"),
            cmd_op: dut.port("cmd_op"),
            cmd_index: dut.port("cmd_index"),
            cmd_record: dut.port("cmd_record"),
            cmd_ready: dut.port("cmd_ready"),
            job_afull: dut.port("job_afull"),
            job_write: dut.port("job_write"),
            job: dut.port("job"),
            rr_write: dut.port("rr_write"),
            counters,
        };
        // Every other source FIFO (local completions, ACK timeouts, ...) stays empty.
        let empties: Vec<String> = dut
            .ports()
            .iter()
            .filter(|p| p.input && p.width == 1 && p.name.ends_with("_empty"))
            .map(|p| p.name.clone())
            .collect();
        for n in empties {
            dut.set(n.as_str(), 1);
        }
        dut.set(p.desc_empty, 1);
        // The READ-response queue always has room (no READ requests are sent here).
        dut.set("rr_full", 0);
        dut.reset(2);
        Tb { dut, p, rng: Rng::from_env(seed), sent: vec![0; 64] }
    }

    /// A context command as BAR0 presents it: `cmd_valid` with the command held until the
    /// engine is ready, then one `cmd_fire` cycle.
    pub fn command(&mut self, op: u64, index: u64, record: &[u8]) {
        self.dut.set(self.p.cmd_op, op);
        self.dut.set(self.p.cmd_index, index);
        self.dut.set_wide(self.p.cmd_record, record);
        self.dut.set("cmd_valid", 1);
        let mut t = 0;
        loop {
            self.dut.eval();
            if self.dut.get_bit(self.p.cmd_ready) {
                break;
            }
            self.dut.tick();
            t += 1;
            assert!(t < 100, "cmd_ready never high");
        }
        self.dut.set_bit(self.p.cmd_fire, true);
        self.dut.eval();
        self.dut.tick();
        self.dut.set_bit(self.p.cmd_fire, false);
        self.dut.set("cmd_valid", 0);
        self.dut.set_wide(self.p.cmd_record, &self.rng.bytes(64));
    }

    /// Runs `n` cycles with no packet offered (the engine finishes what it started: a flush
    /// visit of a QP a class C error put in ERR).
    pub fn settle(&mut self, n: u64) {
        for _ in 0..n {
            self.dut.set(self.p.desc_empty, 1);
            self.dut.eval();
            self.dut.tick();
        }
    }

    /// Writes `q`'s context with its peer (the ACKs' addresses) and no queues.
    pub fn write_qp(&mut self, index: u64, q: &Qp) {
        let mut r = qp_record(q);
        q.peer.put(&mut r);
        self.command(1, index, &r);
    }

    pub fn write_mr(&mut self, index: u64, m: &Mr) {
        self.command(2, index, &m.record());
    }

    /// Writes CQ `cqn` (valid, `2^log_size` entries at `base`).
    pub fn write_cq(&mut self, cqn: u64, log_size: u64, base: u64) {
        let mut r = [0u8; 64];
        cqc::VALID.put(&mut r, 1);
        cqc::LOG_SIZE.put(&mut r, log_size);
        cqc::BASE.put(&mut r, base);
        self.command(3, cqn, &r);
    }

    /// Presents `d` on the descriptor port (`RxDesc`).
    pub fn set_desc(&mut self, d: &Desc) {
        let l = RxDesc::default();
        let fields = [
            (l.get_my_offset_start(), l.get_my_width_start(), d.start),
            (l.get_my_offset_nbeats(), l.get_my_width_nbeats(), d.nbeats),
            (l.get_my_offset_opcode(), l.get_my_width_opcode(), u64::from(d.opcode)),
            (l.get_my_offset_hlen(), l.get_my_width_hlen(), d.hlen),
            (l.get_my_offset_ackreq(), l.get_my_width_ackreq(), u64::from(d.ackreq)),
            (l.get_my_offset_plen(), l.get_my_width_plen(), d.plen),
            (l.get_my_offset_dest_qpn(), l.get_my_width_dest_qpn(), d.dest_qpn),
            (l.get_my_offset_psn(), l.get_my_width_psn(), u64::from(d.psn)),
            (l.get_my_offset_reth_va(), l.get_my_width_reth_va(), d.va),
            (l.get_my_offset_reth_rkey(), l.get_my_width_reth_rkey(), u64::from(d.rkey)),
            (l.get_my_offset_reth_len(), l.get_my_width_reth_len(), u64::from(d.len)),
        ];
        let w = self.dut.width(self.p.desc);
        self.dut.set_wide(self.p.desc, &pack_fields(w, &fields));
    }

    /// Hands `d` in and returns the job and the counter pulses it caused.
    pub fn packet(&mut self, d: &Desc) -> (Vec<u8>, Vec<&'static str>) {
        self.set_desc(d);
        self.dut.set_bit(self.p.desc_empty, false);
        let mut job = None;
        let mut pulses = Vec::new();
        let mut read = false;
        let mut prev_full = false;
        for c in 0..40 {
            // The job FIFO is almost full now and then (`job_afull` is its almost-full flag,
            // one slot left): the engine must wait, not drop or repeat. It samples the flag a
            // cycle late, so it may still write in the cycle the flag rises, never after.
            let full = self.rng.chance(1, 4);
            self.dut.set_bit(self.p.job_afull, full);
            self.dut.eval();
            if self.dut.get_bit(self.p.desc_read) {
                assert!(!read, "descriptor read twice");
                read = true;
            }
            for (n, port) in &self.p.counters {
                if self.dut.get_bit(*port) {
                    pulses.push(*n);
                }
            }
            assert!(!self.dut.get_bit(self.p.rr_write), "a READ-response job for opcode {:#04x}", d.opcode);
            if self.dut.get_bit(self.p.job_write) {
                assert!(!prev_full, "job_write the cycle after job_afull (almost full)");
                assert!(job.is_none(), "two jobs for one packet");
                job = Some(self.dut.get_wide(self.p.job));
            }
            self.dut.tick();
            prev_full = full;
            if read {
                self.dut.set_bit(self.p.desc_empty, true);
            }
            if job.is_some() && c > 12 {
                break;
            }
        }
        (job.expect("no job for the packet"), pulses)
    }

    /// Hands the descriptors in back to back, as the ingress queues packets that arrive
    /// together (the next one offered in the cycle after the engine reads one), with the job
    /// FIFO almost full now and then; returns every job and every counter pulse, in order.
    pub fn burst(&mut self, ds: &[Desc]) -> (Vec<Vec<u8>>, Vec<&'static str>) {
        let mut jobs = Vec::new();
        let mut pulses = Vec::new();
        let mut next = 0;
        let mut quiet = 0;
        for _ in 0..40 * ds.len() + 100 {
            if next < ds.len() {
                self.set_desc(&ds[next]);
            }
            self.dut.set_bit(self.p.desc_empty, next == ds.len());
            self.dut.set_bit(self.p.job_afull, self.rng.chance(1, 8));
            self.dut.eval();
            if self.dut.get_bit(self.p.desc_read) {
                assert!(next < ds.len(), "a descriptor read from an empty FIFO");
                next += 1;
            }
            for (n, port) in &self.p.counters {
                if self.dut.get_bit(*port) {
                    pulses.push(*n);
                }
            }
            if self.dut.get_bit(self.p.job_write) {
                jobs.push(self.dut.get_wide(self.p.job));
                quiet = 0;
            }
            self.dut.tick();
            quiet += 1;
            if next == ds.len() && jobs.len() >= ds.len() && quiet > 12 {
                break;
            }
        }
        (jobs, pulses)
    }
}

pub fn outcome_of(job: &[u8], pulses: &[&'static str]) -> Outcome {
    assert_eq!(pulses.len(), 1, "counter pulses {pulses:?}");
    let w = WriteJob::default();
    let a = AckJob::default();
    let ack_off = w.get_my_offset_ack();
    let kind = get(job, w.get_my_offset_kind(), w.get_my_width_kind());
    let need_ack = get(job, w.get_my_offset_need_ack(), 1) == 1;
    Outcome {
        counter: pulses[0],
        kind,
        need_ack,
        addr: (kind == 0).then(|| get(job, w.get_my_offset_addr(), 64)),
        syndrome: need_ack.then(|| get(job, ack_off + a.get_my_offset_syndrome(), 8)),
        msn: need_ack.then(|| get(job, ack_off + a.get_my_offset_msn(), 24)),
        ack_psn: need_ack.then(|| get(job, ack_off + a.get_my_offset_psn(), 24)),
    }
}

/// Checks the parts of a job every packet shares: buffer release, and the ACK's addressing.
pub fn check_common(job: &[u8], d: &Desc, q: &Qp, ctx: &str) {
    let w = WriteJob::default();
    let a = AckJob::default();
    let ack = w.get_my_offset_ack();
    assert_eq!(get(job, w.get_my_offset_start(), 10), d.start, "{ctx}: job.start");
    assert_eq!(get(job, w.get_my_offset_release(), 8), d.nbeats, "{ctx}: job.release");
    if get(job, w.get_my_offset_kind(), 2) == 0 {
        assert_eq!(get(job, w.get_my_offset_off(), 13), d.hlen, "{ctx}: job.off (the header length)");
        assert_eq!(get(job, w.get_my_offset_plen(), 13), d.plen, "{ctx}: job.plen");
    }
    if get(job, w.get_my_offset_need_ack(), 1) == 1 {
        assert_eq!(get(job, ack + a.get_my_offset_dest_qpn(), 24), q.peer.dest_qpn, "{ctx}: ack.dest_qpn");
        assert_eq!(get(job, ack + a.get_my_offset_dest_mac(), 48), q.peer.dest_mac, "{ctx}: ack.dest_mac");
        assert_eq!(get(job, ack + a.get_my_offset_dest_ip(), 32), q.peer.dest_ip, "{ctx}: ack.dest_ip");
        assert_eq!(get(job, ack + a.get_my_offset_udp_sport(), 16), q.peer.udp_sport, "{ctx}: ack.udp_sport");
        assert_eq!(get(job, ack + a.get_my_offset_pkey(), 16), q.peer.pkey, "{ctx}: ack.pkey");
    }
}

pub const NONE: u64 = 2;
pub const PAYLOAD: u64 = 0;

/// A rejected packet: no payload; a NAK or ACK (when `syndrome`) carries the unchanged MSN and
/// `psn`.
pub fn reject(counter: &'static str, syndrome: Option<u64>, msn: u32, psn: u32) -> Outcome {
    Outcome {
        counter,
        kind: NONE,
        need_ack: syndrome.is_some(),
        addr: None,
        syndrome,
        msn: syndrome.map(|_| u64::from(msn)),
        ack_psn: syndrome.map(|_| u64::from(psn)),
    }
}

/// The IBTA model of one request at the responder; updates `q` when the packet is accepted.
pub fn model(q: &mut Qp, qpn_exists: bool, mrs: &[Mr], d: &Desc) -> Outcome {
    if !qpn_exists || !(q.state == 2 || q.state == 3) || q.err {
        return reject("cnt_unknown_qp", None, q.msn, 0);
    }
    let last = d.opcode == WRITE_LAST || d.opcode == WRITE_ONLY;
    let delta = d.psn.wrapping_sub(q.epsn) & 0xFF_FFFF;
    if delta >= 1 << 23 {
        // Duplicate (9.7.5.1.1): not executed again; re-acknowledged (everything received so
        // far: PSN e - 1) when it asks for an ACK or ends a message.
        let ack = (d.ackreq || last).then_some(0x1F);
        return reject("cnt_dup", ack, q.msn, q.epsn.wrapping_sub(1) & 0xFF_FFFF);
    }
    if delta != 0 {
        // Ahead: one PSN sequence error NAK (carrying e) per gap, then silence (9.7.5.1.2).
        let nak = (!q.nak_sent).then_some(0x60);
        q.nak_sent = true;
        return reject("cnt_drop_psn", nak, q.msn, q.epsn);
    }
    let mtu = 128u64 << q.mtu_code;
    let first_or_only = d.opcode == WRITE_FIRST || d.opcode == WRITE_ONLY;
    let mut dest = None;
    if first_or_only && d.len != 0 {
        // Key = index << 8 | tag; 2^6 entries.
        let index = (d.rkey >> 8) as usize;
        let tag = u64::from(d.rkey & 0xFF);
        let m = mrs.get(index).filter(|m| m.valid && m.tag == tag && m.pd == q.pd);
        let ok = m.filter(|m| {
            m.access & 2 != 0
                && q.access & 2 != 0
                && m.va <= d.va
                && u128::from(d.va) + u128::from(d.len) <= u128::from(m.va) + u128::from(m.length)
        });
        match ok {
            Some(m) => dest = Some(m.iova.wrapping_add(d.va - m.va)),
            None => {
                // The NAK, then the QP is in ERR: what follows it is dropped.
                q.nak_sent = true;
                q.err = true;
                return reject("cnt_drop_key", Some(0x62), q.msn, d.psn);
            }
        }
    }
    let len = u64::from(d.len);
    let seq_ok = match d.opcode {
        WRITE_ONLY => q.open.is_none() && d.plen == len,
        WRITE_FIRST => q.open.is_none() && d.plen == mtu && len > mtu,
        WRITE_MIDDLE => matches!(q.open, Some((_, rem)) if d.plen == mtu && d.plen < rem),
        WRITE_LAST => matches!(q.open, Some((_, rem)) if d.plen == rem),
        _ => false,
    };
    if !seq_ok {
        q.nak_sent = true;
        q.err = true;
        return reject("cnt_drop_inv_req", Some(0x61), q.msn, d.psn);
    }
    q.nak_sent = false;
    let addr = match d.opcode {
        WRITE_MIDDLE | WRITE_LAST => q.open.unwrap().0,
        // A zero-length ONLY skips the key check: no address (and no payload job).
        _ => dest.unwrap_or(0),
    };
    q.open = match d.opcode {
        WRITE_FIRST => Some((addr + d.plen, len - d.plen)),
        WRITE_MIDDLE => Some((addr + d.plen, q.open.unwrap().1 - d.plen)),
        _ => None,
    };
    q.epsn = (q.epsn + 1) & 0xFF_FFFF;
    if last {
        q.msn = (q.msn + 1) & 0xFF_FFFF;
    }
    let need_ack = d.ackreq || last;
    Outcome {
        counter: "cnt_roce_ok",
        kind: if d.plen > 0 { PAYLOAD } else { NONE },
        need_ack,
        addr: (d.plen > 0).then_some(addr),
        syndrome: need_ack.then_some(0x1F),
        msn: need_ack.then_some(u64::from(q.msn)),
        ack_psn: need_ack.then_some(u64::from(d.psn)),
    }
}

pub fn random_qp(rng: &mut Rng, state: u64, access: u64, pd: u64) -> Qp {
    Qp {
        state,
        mtu_code: rng.range(1, 5),
        access,
        pd,
        peer: Peer::random(rng),
        epsn: rng.u32() & 0xFF_FFFF,
        msn: 0,
        open: None,
        nak_sent: false,
        err: false,
    }
}

// ---- Receive scatter (SEND into a receive WQE of up to 15 entries) ----

pub const SEND_FIRST: u8 = 0x00;
pub const SEND_MIDDLE: u8 = 0x01;
pub const SEND_LAST: u8 = 0x02;
pub const SEND_ONLY: u8 = 0x04;

/// One job as the engine wrote it: kind, start, release, off, plen, addr, need_ack, and for a
/// CQE (kind 1) its status, byte_len, wr_id and opcode.
#[derive(Clone, Debug)]
pub struct JobSeen {
    pub kind: u64,
    pub start: u64,
    pub release: u64,
    pub off: u64,
    pub plen: u64,
    pub addr: u64,
    pub need_ack: bool,
    pub syndrome: u64,
    pub cqe: Option<(u64, u64, u64, u64)>,
    /// A CQE's WC_FLAGS and SRC_QP.
    pub cqe_ud: Option<(u64, u64)>,
}

/// What one packet caused: its jobs, receive-WQE fetches (address, beats), counter pulses and
/// go-back-N requests (QPN, restart PSN, flush).
#[derive(Clone, Debug, Default)]
pub struct Run {
    pub jobs: Vec<JobSeen>,
    pub fetches: Vec<(u64, u64)>,
    pub pulses: Vec<&'static str>,
    pub rewinds: Vec<(u64, u64, bool)>,
}

pub fn job_seen(job: &[u8]) -> JobSeen {
    let w = WriteJob::default();
    let a = AckJob::default();
    let kind = get(job, w.get_my_offset_kind(), 2);
    let c = w.get_my_offset_cqe();
    JobSeen {
        kind,
        start: get(job, w.get_my_offset_start(), 10),
        release: get(job, w.get_my_offset_release(), 8),
        off: get(job, w.get_my_offset_off(), 13),
        plen: get(job, w.get_my_offset_plen(), 13),
        addr: get(job, w.get_my_offset_addr(), 64),
        need_ack: get(job, w.get_my_offset_need_ack(), 1) == 1,
        syndrome: get(job, w.get_my_offset_ack() + a.get_my_offset_syndrome(), 8),
        cqe: (kind == 1).then(|| {
            use rnic_contract::cqe;
            (
                get(job, c + cqe::STATUS.lsb, 8),
                get(job, c + cqe::BYTE_LEN.lsb, 32),
                get(job, c + cqe::WR_ID.lsb, 64),
                get(job, c + cqe::OPCODE.lsb, 8),
            )
        }),
        cqe_ud: (kind == 1).then(|| {
            use rnic_contract::cqe;
            (get(job, c + cqe::WC_FLAGS.lsb, 8), get(job, c + cqe::SRC_QP.lsb, 24))
        }),
    }
}

impl Tb {
    /// Hands `d` in, serves the engine's receive-WQE fetches from `mem` (64-byte beats by
    /// address, `rq_ar_len + 1` of them, a few cycles later) and returns every job it writes
    /// until it has been quiet for 100 cycles, and the fetches (address, beats) it made.
    pub fn packet_rq(
        &mut self,
        d: &Desc,
        mem: &std::collections::HashMap<u64, Vec<u8>>,
    ) -> (Vec<JobSeen>, Vec<(u64, u64)>) {
        let r = self.packet_run(d, mem);
        (r.jobs, r.fetches)
    }

    /// [`Tb::packet_rq`], also returning the counter pulses and the go-back-N requests
    /// (`rw_data`) the packet caused. A READ response's AETH is an ACK (syndrome 0x1F).
    pub fn packet_run(&mut self, d: &Desc, mem: &std::collections::HashMap<u64, Vec<u8>>) -> Run {
        let l = RxDesc::default();
        let fields = [
            (l.get_my_offset_start(), l.get_my_width_start(), d.start),
            (l.get_my_offset_nbeats(), l.get_my_width_nbeats(), d.nbeats),
            (l.get_my_offset_opcode(), l.get_my_width_opcode(), u64::from(d.opcode)),
            (l.get_my_offset_hlen(), l.get_my_width_hlen(), d.hlen),
            (l.get_my_offset_ackreq(), l.get_my_width_ackreq(), u64::from(d.ackreq)),
            (l.get_my_offset_plen(), l.get_my_width_plen(), d.plen),
            (l.get_my_offset_dest_qpn(), l.get_my_width_dest_qpn(), d.dest_qpn),
            (l.get_my_offset_psn(), l.get_my_width_psn(), u64::from(d.psn)),
            (l.get_my_offset_reth_va(), 64, d.ud.unwrap_or_else(|| self.rng.next_u64())),
            (l.get_my_offset_ud(), 1, u64::from(d.ud.is_some())),
            (l.get_my_offset_aeth_syndrome(), 8, 0x1F),
            (l.get_my_offset_aeth_msn(), 24, self.rng.next_u64() & 0xFF_FFFF),
        ];
        let w = self.dut.width(self.p.desc);
        self.dut.set_wide(self.p.desc, &pack_fields(w, &fields));
        self.dut.set_bit(self.p.desc_empty, false);
        self.dut.set("rq_ar_ready", 1);
        let mut run = Run::default();
        let mut beats: std::collections::VecDeque<(u64, Vec<u8>)> = Default::default();
        let (mut read, mut prev_full, mut quiet) = (false, false, 0);
        for c in 0..20_000u64 {
            let full = self.rng.chance(1, 4);
            self.dut.set_bit(self.p.job_afull, full);
            let sa = self.dut.get("sent_addr") as usize;
            self.dut.set("sent_data", self.sent[sa]);
            let beat = beats.front().filter(|b| b.0 <= c).cloned();
            self.dut.set_bit("rq_r_valid", beat.is_some());
            self.dut.set_wide("rq_r_data", &beat.as_ref().map(|b| b.1.clone()).unwrap_or_else(|| self.rng.bytes(64)));
            self.dut.eval();
            if beat.is_some() {
                beats.pop_front();
            }
            if self.dut.get_bit("rq_ar_valid") {
                let (addr, n) = (self.dut.get("rq_ar_addr"), self.dut.get("rq_ar_len") + 1);
                run.fetches.push((addr, n));
                for k in 0..n {
                    let b = mem.get(&(addr + 64 * k)).cloned().unwrap_or_else(|| vec![0; 64]);
                    beats.push_back((c + 3 + k, b));
                }
            }
            if self.dut.get_bit(self.p.desc_read) {
                assert!(!read, "descriptor read twice");
                read = true;
            }
            for (n, port) in &self.p.counters {
                if self.dut.get_bit(*port) {
                    run.pulses.push(*n);
                }
            }
            if self.dut.get_bit("rw_write") {
                let rw = self.dut.get_wide("rw_data");
                run.rewinds.push((get(&rw, 0, 6), get(&rw, 48, 24), get(&rw, 72, 1) == 1));
            }
            assert!(!self.dut.get_bit(self.p.rr_write), "a READ-response job for opcode {:#04x}", d.opcode);
            quiet += 1;
            if self.dut.get_bit(self.p.job_write) {
                assert!(!prev_full, "job_write the cycle after job_afull (almost full)");
                run.jobs.push(job_seen(&self.dut.get_wide(self.p.job)));
                quiet = 0;
            }
            self.dut.tick();
            prev_full = full;
            if read {
                self.dut.set_bit(self.p.desc_empty, true);
            }
            if read && quiet > 100 && beats.is_empty() {
                break;
            }
        }
        assert!(read && quiet > 100, "the engine never settled");
        run
    }

    pub fn rq_doorbell(&mut self, qpn: u64, pi: u64) {
        self.dut.set("rq_db_data", qpn << 16 | pi);
        self.dut.set("rq_db_write", 1);
        self.dut.eval();
        self.dut.tick();
        self.dut.set("rq_db_write", 0);
    }
}

// ---- READ responses scattered over a READ's SGE list ----

pub const READ_RESPONSE_FIRST: u8 = 0x0D;
pub const READ_RESPONSE_MIDDLE: u8 = 0x0E;
pub const READ_RESPONSE_LAST: u8 = 0x0F;
pub const READ_RESPONSE_ONLY: u8 = 0x10;

/// An in-flight record as the scheduler writes it (`InflightRec`).
#[derive(Clone, Debug)]
pub struct Inflight {
    pub wr_id: u64,
    pub byte_len: u64,
    pub first_psn: u32,
    pub last_psn: u32,
    pub signaled: bool,
    pub rd_list: bool,
    pub wc_opcode: u64,
    pub local_iova: u64,
}

impl Tb {
    /// Writes entry `k` of the list of QP `qpn`'s READ number `s` (its READs and atomics
    /// counted from 0; 4 lists per QP, used in turn) as the scheduler does (`rl_*`, one cycle).
    pub fn write_read_list(&mut self, qpn: u64, s: u64, k: u64, iova: u64, len: u32) {
        let mut data = [0u8; 12];
        data[..8].copy_from_slice(&iova.to_le_bytes());
        data[8..].copy_from_slice(&len.to_le_bytes());
        self.dut.set("rl_waddr", qpn << 6 | (s % 4) << 4 | k);
        self.dut.set_wide("rl_wdata", &data);
        self.dut.set("rl_we", 1);
        self.dut.eval();
        self.dut.tick();
        self.dut.set("rl_we", 0);
        self.dut.set_wide("rl_wdata", &self.rng.bytes(12));
    }

    /// Records WQE `sent[qpn]` of QP `qpn` in the in-flight table (`if_*`, slot `sent mod 64`)
    /// and counts it as sent.
    pub fn record_inflight(&mut self, qpn: u64, r: &Inflight) {
        let l = rnic_hdl::records::InflightRec::default();
        let fields = [
            (l.get_my_offset_wr_id(), 64, r.wr_id),
            (l.get_my_offset_byte_len(), 32, r.byte_len),
            (l.get_my_offset_last_psn(), 24, u64::from(r.last_psn)),
            (l.get_my_offset_signaled(), 1, u64::from(r.signaled)),
            (l.get_my_offset_rd_list(), 1, u64::from(r.rd_list)),
            (l.get_my_offset_first_psn(), 24, u64::from(r.first_psn)),
            (l.get_my_offset_wc_opcode(), 8, r.wc_opcode),
            (l.get_my_offset_local_iova(), 64, r.local_iova),
        ];
        let slot = self.sent[qpn as usize] % (1 << rnic_contract::LOG_MAX_INFLIGHT_WQES);
        let w = self.dut.width("if_wdata");
        self.dut.set("if_waddr", qpn << rnic_contract::LOG_MAX_INFLIGHT_WQES | slot);
        self.dut.set_wide("if_wdata", &pack_fields(w, &fields));
        self.dut.set("if_we", 1);
        // The scheduler reports the request packet it emits (the PSN after it, after a READ's
        // responses): responses and ACKs for PSNs never sent are ghosts and dropped.
        self.dut.set("emit_we", 1);
        self.dut.set("emit_qpn", qpn);
        self.dut.set("emit_psn", u64::from(r.last_psn.wrapping_add(1) & 0xFF_FFFF));
        self.dut.eval();
        self.dut.tick();
        self.dut.set("if_we", 0);
        self.dut.set("emit_we", 0);
        self.sent[qpn as usize] += 1;
    }

    /// Records a signaled RDMA WRITE (`w`: wr_id, byte_len) of QP `qpn` at PSN `psn`.
    pub fn record_write(&mut self, qpn: u64, w: (u64, u64), psn: u32) {
        let junk = self.rng.next_u64();
        self.record_inflight(
            qpn,
            &Inflight {
                wr_id: w.0,
                byte_len: w.1,
                first_psn: psn,
                last_psn: psn,
                signaled: true,
                rd_list: false,
                wc_opcode: u64::from(rnic_contract::verbs::wc_opcode::RDMA_WRITE),
                local_iova: junk,
            },
        );
    }

    /// Records `run`'s RDMA READ (scattered over its READ list) as the scheduler does.
    pub fn record_read(&mut self, run: &ReadRun) {
        let junk = self.rng.next_u64();
        self.record_inflight(
            run.qpn,
            &Inflight {
                wr_id: run.wr_id,
                byte_len: run.total,
                first_psn: run.first_psn,
                last_psn: (run.first_psn + run.npkts as u32 - 1) & 0xFF_FFFF,
                signaled: run.signaled,
                rd_list: true,
                wc_opcode: u64::from(rnic_contract::verbs::wc_opcode::RDMA_READ),
                local_iova: junk,
            },
        );
    }
}

/// One RDMA READ with an SGE list, as the requester's completer sees its responses.
pub struct ReadRun {
    pub qpn: u64,
    pub mtu: u64,
    pub wr_id: u64,
    pub first_psn: u32,
    pub npkts: u64,
    pub total: u64,
    /// Message byte `m` goes to IOVA `iova_of[m]`.
    pub iova_of: Vec<u64>,
    pub entries: Vec<(u64, u64)>,
    /// The next response in order (0..npkts).
    pub next: u64,
    /// A signaled WRITE recorded just before the READ, not yet acknowledged: the READ's first
    /// response acknowledges it implicitly (IBTA Vol 1 9.7.5.1.3), so its CQE comes first.
    pub write_before: Option<(u64, u64)>,
    /// The READ asks for a completion (else it retires silently).
    pub signaled: bool,
    /// Responses `next` for which a response ahead of it was already handed in.
    pub gaps: std::collections::HashSet<u64>,
}

impl ReadRun {
    pub fn plen(&self, i: u64) -> u64 {
        if i + 1 == self.npkts {
            self.total - i * self.mtu
        } else {
            self.mtu
        }
    }
    pub fn opcode(&self, i: u64) -> u8 {
        match (self.npkts, i) {
            (1, _) => READ_RESPONSE_ONLY,
            (_, 0) => READ_RESPONSE_FIRST,
            (n, i) if i + 1 == n => READ_RESPONSE_LAST,
            _ => READ_RESPONSE_MIDDLE,
        }
    }
    pub fn psn(&self, i: u64) -> u32 {
        (self.first_psn + i as u32) & 0xFF_FFFF
    }
    /// The descriptor of response `i` (FIRST, LAST and ONLY carry an AETH: 58-byte header).
    pub fn desc(&self, i: u64, rng: &mut Rng) -> Desc {
        let op = self.opcode(i);
        let hlen = if op == READ_RESPONSE_MIDDLE { 54 } else { 58 };
        let plen = self.plen(i);
        Desc {
            start: rng.range(0, 255),
            nbeats: (hlen + plen + 4).div_ceil(64),
            opcode: op,
            hlen,
            ackreq: false,
            plen,
            dest_qpn: self.qpn,
            psn: self.psn(i),
            ..Desc::default()
        }
    }
}

impl Tb {
    /// Hands in `run`'s next response, in order, and checks what the completer did with it:
    /// the WRITE before the READ retired first (if any), the payload scattered over the READ's
    /// list (message byte `m` to `run.iova_of[m]`, in pieces that cover the packet once and
    /// free its beats with the last), the READ's CQE after its last response if signaled.
    /// Returns the number of payload pieces.
    pub fn response_in_order(&mut self, run: &mut ReadRun, ctx: &str) -> usize {
        use rnic_contract::verbs::wc_opcode;
        let i = run.next;
        let d = run.desc(i, &mut self.rng);
        let got = self.packet_run(&d, &Default::default());
        let ctx = format!("{ctx} ({:#04x}, {} B)", d.opcode, d.plen);
        assert!(got.fetches.is_empty() && got.rewinds.is_empty(), "{ctx}: {got:x?}");
        let last = i + 1 == run.npkts;
        let mut want_cqes = vec![];
        let mut want_pulses = vec![];
        let wb = run.write_before.take();
        if let Some(w) = wb {
            want_cqes.push((0, w.1, w.0, u64::from(wc_opcode::RDMA_WRITE)));
            want_pulses.push("cnt_cqe");
        }
        want_pulses.push("cnt_roce_ok");
        if last && run.signaled {
            want_cqes.push((0, run.total, run.wr_id, u64::from(wc_opcode::RDMA_READ)));
            want_pulses.push("cnt_cqe");
        }
        assert_eq!(cqes_of(&got.jobs, &ctx), want_cqes, "{ctx}: CQEs; jobs {:x?}", got.jobs);
        assert_eq!(got.pulses, want_pulses, "{ctx}: counters");
        // The CQEs: a WRITE's before the payload, the READ's after it.
        let kinds: Vec<u64> = got.jobs.iter().map(|j| j.kind).collect();
        let first_pay = kinds.iter().position(|&k| k == 0).expect("no payload job");
        let last_pay = kinds.iter().rposition(|&k| k == 0).unwrap();
        assert!(kinds[first_pay..=last_pay].iter().all(|&k| k == 0), "{ctx}: job kinds {kinds:?}");
        assert_eq!(first_pay, usize::from(wb.is_some()), "{ctx}: job kinds {kinds:?}");
        assert_eq!(kinds.len() - 1 - last_pay, usize::from(last && run.signaled), "{ctx}: job kinds {kinds:?}");
        let pay = &got.jobs[first_pay..=last_pay];
        let base = i * run.mtu;
        let mut at = base;
        for (k, j) in pay.iter().enumerate() {
            assert!(j.plen > 0, "{ctx}: empty piece {k}: {pay:x?}");
            assert_eq!(j.start, d.start, "{ctx}: piece {k} start");
            assert_eq!(j.off, d.hlen + (at - base), "{ctx}: piece {k} offset into the packet");
            assert!(at + j.plen <= base + d.plen, "{ctx}: pieces past the payload: {pay:x?}");
            for b in 0..j.plen {
                assert_eq!(
                    j.addr + b,
                    run.iova_of[(at + b) as usize],
                    "{ctx}: piece {k} byte {b} (message byte {}); pieces {pay:x?}",
                    at + b
                );
            }
            let lastp = k + 1 == pay.len();
            assert_eq!(j.release, if lastp { d.nbeats } else { 0 }, "{ctx}: piece {k} of {} release", pay.len());
            assert!(!j.need_ack, "{ctx}: piece {k} asks for an ACK");
            at += j.plen;
        }
        assert_eq!(at, base + d.plen, "{ctx}: pieces {pay:x?}");
        run.next += 1;
        pay.len()
    }
}

/// CQEs (status, byte_len, wr_id, opcode) among `jobs`, checked to free nothing and ask no ACK.
pub fn cqes_of(jobs: &[JobSeen], ctx: &str) -> Vec<(u64, u64, u64, u64)> {
    jobs.iter()
        .filter(|j| j.kind == 1)
        .map(|j| {
            assert_eq!(j.release, 0, "{ctx}: a CQE frees packet beats");
            assert!(!j.need_ack, "{ctx}: a CQE asks for an ACK");
            j.cqe.unwrap()
        })
        .collect()
}

/// An event CQE the engine wrote: (CQ number, ibv_event_type, QP_NUM).
pub fn event_cqes(jobs: &[Vec<u8>]) -> Vec<(u64, u64, u64)> {
    use rnic_contract::{cqe, verbs::wc_opcode};
    let w = WriteJob::default();
    let c = w.get_my_offset_cqe();
    jobs.iter()
        .filter(|j| get(j, w.get_my_offset_kind(), 2) == 1)
        .filter(|j| get(j, c + cqe::OPCODE.lsb, 8) == u64::from(wc_opcode::ASYNC_EVENT))
        .map(|j| (get(j, w.get_my_offset_addr(), 8), get(j, c + cqe::STATUS.lsb, 8), get(j, c + cqe::QP_NUM.lsb, 24)))
        .collect()
}

impl Tb {
    /// Hands `d` in (no job-FIFO stalls) and returns every job written in the next 120 cycles:
    /// the packet's and any asynchronous event's.
    pub fn packet_jobs(&mut self, d: &Desc) -> Vec<Vec<u8>> {
        self.set_desc(d);
        self.dut.set_bit(self.p.desc_empty, false);
        self.dut.set_bit(self.p.job_afull, false);
        let mut jobs = Vec::new();
        for _ in 0..120 {
            self.dut.eval();
            let read = self.dut.get_bit(self.p.desc_read);
            if self.dut.get_bit(self.p.job_write) {
                jobs.push(self.dut.get_wide(self.p.job));
            }
            self.dut.tick();
            if read {
                self.dut.set_bit(self.p.desc_empty, true);
            }
        }
        jobs
    }
}

impl Tb {
    /// Runs `n` cycles with no packet offered and returns the jobs written meanwhile.
    pub fn settle_jobs(&mut self, n: u64) -> Vec<Vec<u8>> {
        let mut jobs = Vec::new();
        self.dut.set_bit(self.p.job_afull, false);
        for _ in 0..n {
            self.dut.set(self.p.desc_empty, 1);
            self.dut.eval();
            if self.dut.get_bit(self.p.job_write) {
                jobs.push(self.dut.get_wide(self.p.job));
            }
            self.dut.tick();
        }
        jobs
    }
}

impl Tb {
    /// Hands `d` in and runs `n` cycles; returns `dbg_state` cycle by cycle, repeats collapsed.
    pub fn state_trace(&mut self, d: &Desc, n: u64) -> Vec<u64> {
        self.set_desc(d);
        self.dut.set_bit(self.p.desc_empty, false);
        self.dut.set_bit(self.p.job_afull, false);
        let mut trace: Vec<u64> = Vec::new();
        for _ in 0..n {
            self.dut.eval();
            let s = self.dut.get("dbg_state");
            if trace.last() != Some(&s) {
                trace.push(s);
            }
            let read = self.dut.get_bit(self.p.desc_read);
            self.dut.tick();
            if read {
                self.dut.set_bit(self.p.desc_empty, true);
            }
        }
        trace
    }
}
