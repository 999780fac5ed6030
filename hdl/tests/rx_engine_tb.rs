//! `RxEngine` (the responder's admission checks and receive scatter, and the completer's
//! scatter of READ responses over a READ's SGE list) in Verilator with hand-driven descriptors,
//! against a model of IBTA's rules and `rnic_contract`'s key and context layouts.
//!
//! QP contexts and key-table entries are written through the context-command port exactly as
//! BAR0 commits them (records built with `rnic_contract` fields); descriptors are handed in as
//! the ingress would. Every other source FIFO stays empty and the READ-response queue is never
//! full (`rr_full` = 0); no packet here is an RDMA READ request or an atomic (the last test
//! hands in READ *responses*, for the requester's completer), so none may write a READ-response
//! job (`rr_write`, the atomic unit's input). Where the completer is involved, the test
//! plays the scheduler: it records WQEs through the in-flight table's write port
//! (`if_we/if_waddr/if_wdata`, reporting the request as emitted on `emit_*`), writes READ lists through `rl_we/rl_waddr/rl_wdata`, and serves
//! its count of WQEs recorded per QP on `sent_data` at the engine's `sent_addr`.
//!
//! - `write_only_key_and_bounds`: random WRITE ONLY packets against a table of regions
//!   (valid/invalid, other PD, no REMOTE_WRITE, stale tag, index past the table) and QPs (RTR,
//!   RTS, INIT, without REMOTE_WRITE), with VAs and lengths at and across region edges, wrong
//!   PSNs, zero-length writes and `plen` ≠ RETH length. Each packet yields exactly one job and
//!   one counter pulse: an accepted write a payload job at `IOVA + (va − VA)` (none when empty)
//!   with an ACK (syndrome 0x1F, MSN + 1, the packet's PSN, the QP's peer addresses); a key or
//!   bounds violation `cnt_drop_key` and a NAK 0x62; a length mismatch `cnt_drop_inv_req` and a
//!   NAK 0x61; a PSN behind the expected one `cnt_dup`, re-ACKed (PSN e − 1) when it has
//!   AckReq or ends a message; a PSN ahead `cnt_drop_psn` with one sequence-error NAK (0x60,
//!   PSN e) per gap; an unknown/non-receiving QP `cnt_unknown_qp`, unanswered. Rejected
//!   packets leave the expected PSN and MSN alone, and every job releases the packet's beats.
//! - `multi_packet_writes_follow_the_reth`: FIRST/MIDDLE/LAST messages at each path MTU write
//!   consecutive addresses and ACK with AckReq or on LAST; MIDDLE/LAST without FIRST, FIRST
//!   inside an open message, wrong segment lengths and a LAST short or long are invalid
//!   requests (NAK 0x61) that leave the open message as it was.
//! - `send_scatters_over_the_receive_entries`: SENDs at MTU 256 into 256-byte receive WQEs of
//!   1..=15 random entries (zero-length ones with junk lkeys, odd addresses), served through the
//!   RQ doorbell and the receive-WQE fetch port (`rq_ar_*`, `rq_r_*`, 4 beats); every payload
//!   piece maps message bytes to the IOVA of the entry holding them, at packet offset
//!   `hlen + bytes placed`, only a packet's last job frees its beats or asks for an ACK; the
//!   receive CQE follows the payload; a bad entry (stale tag, no LOCAL_WRITE, past its region)
//!   completes with LOC_PROT_ERR (NAK 0x63), a message one byte too long and a WQE claiming
//!   more entries than it holds with LOC_LEN_ERR (NAK 0x61), the refused packet writing nothing. (Here `job_afull` also stalls the pieces.)
//! - `read_responses_scatter_over_the_read_list`: RDMA READs recorded with `rd_list` set (a
//!   READ with several local SGEs, whose checked list the scheduler copies to `rl_*`, list
//!   `s mod 4` of the QP for its READ number `s`; the other three hold junk), one QP per path
//!   MTU, 1..=16 random list entries (1 byte to 3 MTUs, any IOVA alignment), READs of
//!   five QPs outstanding together and their READ RESPONSE FIRST/MIDDLE/LAST/ONLY packets
//!   interleaved across QPs: every payload byte goes to the IOVA of the list entry holding it,
//!   at packet offset `hlen + bytes placed`, one job per piece, only a packet's last piece
//!   freeing its beats; the READ's CQE (byte_len = the list's sum, IBV_WC_RDMA_READ) follows
//!   its last payload (none for an unsignaled READ); a signaled WRITE recorded before the READ completes first, on the READ's
//!   first response. Duplicate responses (`cnt_dup`) and responses ahead of a missing one
//!   (`cnt_drop_psn`, one go-back-N request from the missing PSN) write nothing, and the next
//!   in-order response still lands in the right entry; so do late duplicates of READs
//!   already complete.
//! - `qp_errors_and_comm_est_raise_async_events`, `a_qp_on_an_srq_entering_err_raises_last_wqe_reached`:
//!   the QP-affiliated asynchronous events (rnic_contract::regs::ASYNC_EVENT_CQ, here the
//!   `async_cq` input) as event CQE jobs on the event CQ: COMM_EST once per RTR, QP_ACCESS_ERR /
//!   QP_REQ_ERR after the responder's class C NAKs, LAST_WQE_REACHED for a QP on an SRQ entering
//!   ERR (after its error event, or alone when the driver moves it), nothing while disabled.
//! - `ud_sends_land_behind_the_grh_area`: UD SENDs on a UD QP: the GRH job, the payload 40
//!   bytes in, the CQE's byte_len + 40, GRH flag and SRC_QP, no ACK; the Q_Key and no-WQE drops,
//!   the short first entry (LOC_LEN_ERR), and RC/UD packets to the other kind of QP.
//! - `a_recreated_qp_keeps_nothing_of_its_last_connection`: one QPN destroyed (RESET), created
//!   (INIT) and connected again eight times, with messages left open and class C errors
//!   between, beside another QP's stream: no packet taken in RESET or INIT, and afterwards the
//!   new expected PSN, an MSN from 0, no open message and no error state.
//! - `a_recreated_qp_completes_only_its_new_connections_work`: the completer's side of the
//!   same: eight lives of one QPN, each with a WRITE and a READ recorded at a new SQ PSN, some
//!   ended with the READ half scattered; a late response of the last life is dropped, and the
//!   new READ scatters from its own list's start and both WQEs complete with their own wr_ids.
//! - `dbg_state_reports_the_state_numbers`: the state code on `dbg_state` (STATUS bits 5:0)
//!   through an accepted WRITE and a refused one with its flush visit: the numbers the states
//!   had before they were named (`rnic_hdl::rx_engine::RxState`).
mod harness;

use harness::tables::{Mr, Peer};
use harness::{pack_fields, Dut, Port, Rng};
use rnic_contract::{cq_context as cqc, qp_context as qp, Field};
use rnic_hdl::records::{AckJob, RxDesc, WriteJob};
use rnic_hdl::rx_engine::RxEngine;

const WRITE_FIRST: u8 = 0x06;
const WRITE_MIDDLE: u8 = 0x07;
const WRITE_LAST: u8 = 0x08;
const WRITE_ONLY: u8 = 0x0A;

#[derive(Clone, Debug)]
struct Qp {
    state: u64,
    mtu_code: u64,
    access: u64,
    pd: u64,
    peer: Peer,
    // Responder state (model).
    epsn: u32,
    msn: u32,
    open: Option<(u64, u64)>, // (next address, bytes remaining) of an open multi-packet message
    /// A sequence-error NAK was sent for the current gap (cleared when a packet is accepted).
    nak_sent: bool,
    /// A class C error (NAK remote access error or invalid request) put the QP in ERR
    /// (IBTA Vol 1 9.9.3): every later packet is dropped as for a QP not in RTR/RTS.
    err: bool,
}

#[derive(Clone, Debug, Default)]
struct Desc {
    start: u64,
    nbeats: u64,
    opcode: u8,
    hlen: u64,
    ackreq: bool,
    plen: u64,
    dest_qpn: u64,
    psn: u32,
    va: u64,
    rkey: u32,
    len: u32,
    /// A UD SEND ONLY (`RxDesc::ud`), its DETH in `reth_va` (Q_Key 63:32, source QP 23:0).
    ud: Option<u64>,
}

/// What the engine did with one packet.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Outcome {
    counter: &'static str,
    kind: u64,
    need_ack: bool,
    addr: Option<u64>,
    syndrome: Option<u64>,
    msn: Option<u64>,
    ack_psn: Option<u64>,
}

struct Tb {
    dut: Dut,
    p: Pins,
    rng: Rng,
    /// The scheduler's count of WQEs recorded in the in-flight table, by QP: served on
    /// `sent_data` at the engine's `sent_addr` (all zero unless a test records WQEs).
    sent: Vec<u64>,
}

struct Pins {
    desc_empty: Port,
    desc: Port,
    desc_read: Port,
    cmd_fire: Port,
    cmd_op: Port,
    cmd_index: Port,
    cmd_record: Port,
    cmd_ready: Port,
    job_afull: Port,
    job_write: Port,
    job: Port,
    rr_write: Port,
    counters: Vec<(&'static str, Port)>,
}

fn get(bytes: &[u8], off: usize, width: usize) -> u64 {
    Field::at_bit(off, width).get(bytes)
}

/// The responder's part of `q`'s QP-context record: its state, with both PSNs (re)loaded (the
/// expected one from `epsn`), path MTU, remote access, PD and the peer's QPN.
fn qp_record(q: &Qp) -> [u8; 64] {
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
    fn new(seed: u64) -> Tb {
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
    fn command(&mut self, op: u64, index: u64, record: &[u8]) {
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
    fn settle(&mut self, n: u64) {
        for _ in 0..n {
            self.dut.set(self.p.desc_empty, 1);
            self.dut.eval();
            self.dut.tick();
        }
    }

    /// Writes `q`'s context with its peer (the ACKs' addresses) and no queues.
    fn write_qp(&mut self, index: u64, q: &Qp) {
        let mut r = qp_record(q);
        q.peer.put(&mut r);
        self.command(1, index, &r);
    }

    fn write_mr(&mut self, index: u64, m: &Mr) {
        self.command(2, index, &m.record());
    }

    /// Writes CQ `cqn` (valid, `2^log_size` entries at `base`).
    fn write_cq(&mut self, cqn: u64, log_size: u64, base: u64) {
        let mut r = [0u8; 64];
        cqc::VALID.put(&mut r, 1);
        cqc::LOG_SIZE.put(&mut r, log_size);
        cqc::BASE.put(&mut r, base);
        self.command(3, cqn, &r);
    }

    /// Presents `d` on the descriptor port (`RxDesc`).
    fn set_desc(&mut self, d: &Desc) {
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
    fn packet(&mut self, d: &Desc) -> (Vec<u8>, Vec<&'static str>) {
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
    fn burst(&mut self, ds: &[Desc]) -> (Vec<Vec<u8>>, Vec<&'static str>) {
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

fn outcome_of(job: &[u8], pulses: &[&'static str]) -> Outcome {
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
fn check_common(job: &[u8], d: &Desc, q: &Qp, ctx: &str) {
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

const NONE: u64 = 2;
const PAYLOAD: u64 = 0;

/// A rejected packet: no payload; a NAK or ACK (when `syndrome`) carries the unchanged MSN and
/// `psn`.
fn reject(counter: &'static str, syndrome: Option<u64>, msn: u32, psn: u32) -> Outcome {
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
fn model(q: &mut Qp, qpn_exists: bool, mrs: &[Mr], d: &Desc) -> Outcome {
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

fn random_qp(rng: &mut Rng, state: u64, access: u64, pd: u64) -> Qp {
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

#[test]
fn write_only_key_and_bounds() {
    let mut tb = Tb::new(0x2E61_0001);
    let seed = tb.rng.0;
    let rng = &mut tb.rng;
    // QPs 0..8: 0-3 RTS/RTR with REMOTE_WRITE in PD 5; 4 INIT; 5 no REMOTE_WRITE; 6 PD 6; 7 RESET.
    let mut qps: Vec<Qp> = vec![
        random_qp(rng, 3, 0xF, 5),
        random_qp(rng, 2, 0x2, 5),
        random_qp(rng, 3, 0x6, 5),
        random_qp(rng, 3, 0x3, 5),
        random_qp(rng, 1, 0xF, 5),
        random_qp(rng, 3, 0x5, 5),
        random_qp(rng, 3, 0xF, 6),
        random_qp(rng, 0, 0xF, 5),
    ];
    // Regions 0..16: mostly good in PD 5; some invalid, other PD, no REMOTE_WRITE.
    let mut mrs = Vec::new();
    for i in 0..16u64 {
        let va = match i % 4 {
            0 => rng.next_u64() & 0x0000_7FFF_FFFF_F000,
            1 => rng.next_u64() & 0x0000_7FFF_FFFF_FFFF,
            2 => u64::MAX - rng.range(0, 1 << 20) - (1 << 20), // near the top of the VA space
            _ => rng.range(0, 4096),
        };
        let room = u64::MAX - va;
        mrs.push(Mr {
            valid: i != 9,
            access: match i {
                10 => 0x1,
                11 => 0x4,
                _ => *rng.pick(&[0x2u64, 0x3, 0x7, 0xF]),
            },
            tag: u64::from(rng.u32() as u8),
            pd: if i == 12 { 6 } else { 5 },
            va,
            length: rng.range(1, (1 << 20).min(room)),
            iova: rng.next_u64() & 0x0000_FFFF_FFFF_FFC0 | rng.range(0, 63),
        });
    }
    for (i, q) in qps.clone().iter().enumerate() {
        tb.write_qp(i as u64, q);
    }
    for (i, m) in mrs.clone().iter().enumerate() {
        tb.write_mr(i as u64, m);
    }
    let mut counts = std::collections::BTreeMap::new();
    for n in 0..3000 {
        let rng = &mut tb.rng;
        let qi = if rng.chance(4, 5) { rng.range(0, 3) as usize } else { rng.range(0, 7) as usize };
        let mi = rng.range(0, 15) as usize;
        let m = &mrs[mi];
        let mut rkey = (mi as u32) << 8 | m.tag as u32;
        let (mut va, mut len);
        // Where the write falls in the region.
        let in_len = m.length;
        match rng.range(0, 9) {
            0 => {
                // Exactly the whole region.
                va = m.va;
                len = in_len.min(u64::from(u32::MAX)) as u32;
            }
            1 => {
                // Ends one byte past the region.
                len = rng.range(1, in_len.min(4096)) as u32;
                va = m.va + in_len - u64::from(len) + 1;
            }
            2 => {
                // Starts one byte before it.
                va = m.va.wrapping_sub(1);
                len = rng.range(1, in_len.min(4096)) as u32;
            }
            3 => {
                // Ends exactly at its end.
                len = rng.range(1, in_len.min(4096)) as u32;
                va = m.va + in_len - u64::from(len);
            }
            4 => {
                // Far away.
                va = rng.next_u64();
                len = rng.range(1, 4096) as u32;
            }
            _ => {
                len = rng.range(0, in_len.min(4096)) as u32;
                va = m.va + rng.range(0, in_len - u64::from(len));
            }
        }
        match rng.range(0, 19) {
            0 => rkey ^= 1 << rng.range(0, 7),   // stale tag
            1 => rkey |= 1 << rng.range(14, 31), // index beyond the table
            2 => len = 0,                        // zero length: no key check
            _ => {}
        }
        let mut plen = u64::from(len);
        if rng.chance(1, 25) {
            plen = (plen + rng.range(1, 3)) & 0x1FFF; // plen != RETH length
        }
        if plen > 4096 {
            len = (len % 4096).max(1);
            plen = u64::from(len);
            va = m.va;
        }
        let q = &mut qps[qi];
        let mut psn = q.epsn;
        if rng.chance(1, 12) {
            psn = (psn + rng.range(1, 0xFF_FFFF) as u32) & 0xFF_FFFF;
        }
        // A packet for a QP number past the table.
        let big_qpn = rng.chance(1, 50);
        let d = Desc {
            start: rng.range(0, 255),
            nbeats: rng.range(1, 80),
            opcode: WRITE_ONLY,
            hlen: 70,
            ackreq: rng.chance(1, 2),
            plen,
            dest_qpn: if big_qpn { (qi as u64) | (rng.range(1, 0x3FFFF) << 6) } else { qi as u64 },
            psn,
            va,
            rkey,
            len,
            ud: None,
        };
        let before = q.clone();
        let want = model(q, !big_qpn, &mrs, &d);
        let ctx = format!("packet {n}: QP {qi} MR {mi} {d:x?} (seed {seed:#x})");
        let (job, pulses) = tb.packet(&d);
        let got = outcome_of(&job, &pulses);
        assert_eq!(got, want, "{ctx}\nQP {before:x?}\nMR {:x?}", mrs.get((rkey >> 8) as usize));
        check_common(&job, &d, &qps[qi], &ctx);
        *counts.entry(want.counter).or_insert(0) += 1;
        if qps[qi].err {
            // The class C error put the QP in ERR; the driver would reset and reconnect it:
            // its context again, with fresh PSNs (INIT_SQ_PSN / INIT_RQ_PSN).
            tb.settle(40);
            let q = &mut qps[qi];
            (q.err, q.nak_sent, q.open, q.msn) = (false, false, None, 0);
            let q = q.clone();
            tb.write_qp(qi as u64, &q);
        }
    }
    eprintln!("rx_engine: outcomes {counts:?}");
    for c in ["cnt_roce_ok", "cnt_unknown_qp", "cnt_drop_key", "cnt_drop_psn", "cnt_drop_inv_req", "cnt_dup"] {
        assert!(counts.get(c).copied().unwrap_or(0) >= 20, "too few {c}: {counts:?}");
    }
}

#[test]
fn multi_packet_writes_follow_the_reth() {
    let mut tb = Tb::new(0x2E61_0002);
    let seed = tb.rng.0;
    let mut qps: Vec<Qp> = (0..5)
        .map(|i| {
            let mut q = random_qp(&mut tb.rng, 3, 0x2, 9);
            q.mtu_code = i + 1;
            q
        })
        .collect();
    let m = Mr { valid: true, access: 0x2, tag: 0x5A, pd: 9, va: 0x10_0000_0000, length: 1 << 24, iova: 0x7_0000_1000 };
    let mrs = vec![m.clone()];
    for (i, q) in qps.clone().iter().enumerate() {
        tb.write_qp(i as u64, q);
    }
    tb.write_mr(0, &m);
    let mut n = 0;
    let mut bad = 0;
    for _ in 0..150 {
        let rng = &mut tb.rng;
        let qi = rng.range(0, 4) as usize;
        let mtu = 128u64 << qps[qi].mtu_code;
        let segs = rng.range(2, 6);
        // A LAST of exactly one MTU now and then: a MIDDLE in its place must be refused.
        let total = mtu * (segs - 1) + if rng.chance(1, 3) { mtu } else { rng.range(1, mtu) };
        let va = m.va + rng.range(0, (1 << 24) - total);
        // The message's packets, then perhaps one broken on purpose.
        let mut pkts = Vec::new();
        let mut left = total;
        for s in 0..segs {
            let (op, plen) = if s == 0 {
                (WRITE_FIRST, mtu)
            } else if s + 1 == segs {
                (WRITE_LAST, left)
            } else {
                (WRITE_MIDDLE, mtu)
            };
            left -= plen;
            pkts.push((op, plen));
        }
        if total % mtu == 0 && rng.chance(1, 2) {
            // MIDDLE where the message's last MTU must be a LAST (no byte would remain).
            let at = pkts.len() - 1;
            pkts.insert(at, (WRITE_MIDDLE, mtu));
        } else if rng.chance(1, 2) {
            let at = rng.range(0, segs - 1) as usize;
            let (op, plen) = pkts[at];
            let broken = match rng.range(0, 4) {
                0 => (op, plen + 4),                                 // wrong segment length
                1 => (WRITE_FIRST, mtu),                             // FIRST inside or before
                2 if op != WRITE_FIRST => (WRITE_ONLY, plen),        // ONLY inside a message
                3 if op == WRITE_LAST && plen > 1 => (op, plen - 1), // LAST short
                _ => (WRITE_MIDDLE, mtu),                            // MIDDLE where it is not
            };
            pkts.insert(at, broken);
        }
        if rng.chance(1, 5) {
            // A LAST or MIDDLE with no message open.
            pkts.insert(0, (*rng.pick(&[WRITE_LAST, WRITE_MIDDLE]), mtu));
        }
        for (op, plen) in pkts {
            let q = &mut qps[qi];
            let d = Desc {
                start: tb.rng.range(0, 255),
                nbeats: tb.rng.range(1, 80),
                opcode: op,
                hlen: if op == WRITE_FIRST || op == WRITE_ONLY { 70 } else { 54 },
                ackreq: tb.rng.chance(1, 3),
                plen,
                dest_qpn: qi as u64,
                psn: q.epsn,
                // MIDDLE/LAST carry no RETH: the ingress leaves stale values in these fields.
                va: if op == WRITE_FIRST || op == WRITE_ONLY { va } else { tb.rng.next_u64() },
                rkey: if op == WRITE_FIRST || op == WRITE_ONLY { 0x5A } else { tb.rng.u32() },
                len: if op == WRITE_FIRST || op == WRITE_ONLY { total as u32 } else { tb.rng.u32() },
                ud: None,
            };
            let before = q.clone();
            let want = model(q, true, &mrs, &d);
            if want.counter != "cnt_roce_ok" {
                bad += 1;
            }
            let (job, pulses) = tb.packet(&d);
            let got = outcome_of(&job, &pulses);
            assert_eq!(got, want, "packet {n}: QP {qi} {d:x?} (seed {seed:#x})\nQP before {before:x?}");
            check_common(&job, &d, &qps[qi], &format!("packet {n}"));
            n += 1;
        }
        // Close any message a broken packet left open, so the next one starts clean.
        let q = &mut qps[qi];
        if let Some((_, rem)) = q.open {
            let d = Desc {
                opcode: WRITE_LAST,
                plen: rem,
                dest_qpn: qi as u64,
                psn: q.epsn,
                nbeats: 1,
                hlen: 54,
                ..Desc::default()
            };
            let want = model(q, true, &mrs, &d);
            let (job, pulses) = tb.packet(&d);
            assert_eq!(outcome_of(&job, &pulses), want, "closing LAST (seed {seed:#x})");
        }
    }
    assert!(bad > 30, "only {bad} broken packets");
}

/// Packets that arrive together are served back to back (`WriteBack` takes the next
/// descriptor itself when nothing else waits): runs of WRITE ONLY, FIRST/LAST messages on
/// three QPs, each run one QP's packets in a row, now and then a duplicate PSN, a PSN ahead of
/// the expected one, a bad rkey or a region overrun, handed in as one burst. Each packet's job
/// and counter is the model's, in order: a visit that read the QP's transport state before the
/// previous packet's write-back would see a stale expected PSN and answer with a NAK.
#[test]
fn back_to_back_packets_see_the_previous_write_back() {
    let mut tb = Tb::new(0x2E61_0009);
    let seed = tb.rng.0;
    let mut qps: Vec<Qp> = (0..3)
        .map(|i| {
            let mut q = random_qp(&mut tb.rng, 3, 0x2, 4);
            q.mtu_code = 1 + i;
            q
        })
        .collect();
    let m = Mr { valid: true, access: 0x2, tag: 0x3C, pd: 4, va: 0x20_0000_0000, length: 1 << 20, iova: 0x5_0000_0040 };
    let mrs = vec![m.clone()];
    for (i, q) in qps.clone().iter().enumerate() {
        tb.write_qp(i as u64, q);
    }
    tb.write_mr(0, &m);
    let mut n = 0;
    for round in 0..40 {
        let mut ds = Vec::new();
        let mut want = Vec::new();
        for _ in 0..tb.rng.range(1, 4) {
            let qi = tb.rng.range(0, 2) as usize;
            for _ in 0..tb.rng.range(1, 8) {
                let rng = &mut tb.rng;
                let q = &mut qps[qi];
                let mtu = 128u64 << q.mtu_code;
                let two = rng.chance(1, 4);
                let total = if two { mtu + rng.range(1, mtu) } else { rng.range(1, mtu) };
                let mut va = m.va + rng.range(0, (1 << 20) - total);
                let mut rkey = 0x3C;
                let mut psn_off = 0u32;
                match rng.range(0, 11) {
                    0 => psn_off = 0xFF_FFFF, // a duplicate (one behind)
                    1 => psn_off = 1,         // ahead: a sequence error
                    2 => rkey ^= 1,
                    3 => va = m.va + (1 << 20) - total + 1,
                    _ => {}
                }
                let pkts =
                    if two { vec![(WRITE_FIRST, mtu), (WRITE_LAST, total - mtu)] } else { vec![(WRITE_ONLY, total)] };
                for (k, (op, plen)) in pkts.into_iter().enumerate() {
                    let d = Desc {
                        start: rng.range(0, 255),
                        nbeats: rng.range(1, 80),
                        opcode: op,
                        hlen: if k == 0 { 70 } else { 54 },
                        ackreq: rng.chance(1, 3),
                        plen,
                        dest_qpn: qi as u64,
                        psn: q.epsn.wrapping_add(if k == 0 { psn_off } else { 0 }) & 0xFF_FFFF,
                        va: if k == 0 { va } else { rng.next_u64() },
                        rkey: if k == 0 { rkey } else { rng.u32() },
                        len: if k == 0 { total as u32 } else { rng.u32() },
                        ud: None,
                    };
                    want.push(model(q, true, &mrs, &d));
                    ds.push(d);
                }
                // A message a refused FIRST left open is closed by the next run's packets
                // (the model says how); one refused packet is enough per run.
                if q.open.is_some() {
                    break;
                }
            }
        }
        let (jobs, pulses) = tb.burst(&ds);
        let ctx = format!("round {round}, packets {n}.. (seed {seed:#x})");
        assert_eq!(jobs.len(), ds.len(), "{ctx}: one job per packet");
        assert_eq!(pulses.len(), ds.len(), "{ctx}: one counter pulse per packet: {pulses:?}");
        for (i, d) in ds.iter().enumerate() {
            let got = outcome_of(&jobs[i], &pulses[i..i + 1]);
            assert_eq!(got, want[i], "{ctx}: packet {i} of the burst {d:x?}");
        }
        n += ds.len();
        tb.settle(40);
    }
}

/// A command waits for no stream of packets: while a QP's packets arrive back to back (each
/// visit could take the next packet from `WriteBack`), a command putting that QP in RESET,
/// which must wait until the engine has left the QP, is still taken within a visit or two.
#[test]
fn a_reset_is_taken_while_the_qps_packets_keep_coming() {
    let mut tb = Tb::new(0x2E61_000A);
    let mut q = random_qp(&mut tb.rng, 3, 0x2, 4);
    q.mtu_code = 3;
    let m = Mr { valid: true, access: 0x2, tag: 0x3C, pd: 4, va: 0x20_0000_0000, length: 1 << 20, iova: 0x5_0000_0040 };
    tb.write_qp(5, &q);
    tb.write_mr(0, &m);
    let ds: Vec<Desc> = (0..200u32)
        .map(|k| Desc {
            start: 0,
            nbeats: 2,
            opcode: WRITE_ONLY,
            hlen: 70,
            plen: 64,
            dest_qpn: 5,
            psn: q.epsn.wrapping_add(k) & 0xFF_FFFF,
            va: m.va + 64 * u64::from(k),
            rkey: 0x3C,
            len: 64,
            ..Desc::default()
        })
        .collect();
    let reset = Qp { state: 0, ..q.clone() };
    let mut next = 0;
    let mut asked = None;
    for c in 0..3000 {
        if next < ds.len() {
            tb.set_desc(&ds[next]);
        }
        tb.dut.set_bit(tb.p.desc_empty, next == ds.len());
        tb.dut.set_bit(tb.p.job_afull, false);
        if c == 100 {
            // The driver's RESET of QP 5, in the middle of the stream.
            tb.dut.set(tb.p.cmd_op, 1);
            tb.dut.set(tb.p.cmd_index, 5);
            tb.dut.set_wide(tb.p.cmd_record, &qp_record(&reset));
            tb.dut.set("cmd_valid", 1);
            asked = Some(next);
        }
        tb.dut.eval();
        if asked.is_some() && tb.dut.get_bit(tb.p.cmd_ready) {
            let taken = next - asked.unwrap();
            assert!(next < ds.len(), "the RESET waited for the whole stream");
            assert!(taken <= 3, "the RESET waited {taken} packets");
            return;
        }
        if tb.dut.get_bit(tb.p.desc_read) {
            next += 1;
        }
        tb.dut.tick();
    }
    panic!("the RESET was never taken");
}

// ---- Receive scatter (SEND into a receive WQE of up to 15 entries) ----

const SEND_FIRST: u8 = 0x00;
const SEND_MIDDLE: u8 = 0x01;
const SEND_LAST: u8 = 0x02;
const SEND_ONLY: u8 = 0x04;

/// One job as the engine wrote it: kind, start, release, off, plen, addr, need_ack, and for a
/// CQE (kind 1) its status, byte_len, wr_id and opcode.
#[derive(Clone, Debug)]
struct JobSeen {
    kind: u64,
    start: u64,
    release: u64,
    off: u64,
    plen: u64,
    addr: u64,
    need_ack: bool,
    syndrome: u64,
    cqe: Option<(u64, u64, u64, u64)>,
    /// A CQE's WC_FLAGS and SRC_QP.
    cqe_ud: Option<(u64, u64)>,
}

/// What one packet caused: its jobs, receive-WQE fetches (address, beats), counter pulses and
/// go-back-N requests (QPN, restart PSN, flush).
#[derive(Clone, Debug, Default)]
struct Run {
    jobs: Vec<JobSeen>,
    fetches: Vec<(u64, u64)>,
    pulses: Vec<&'static str>,
    rewinds: Vec<(u64, u64, bool)>,
}

fn job_seen(job: &[u8]) -> JobSeen {
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
    fn packet_rq(
        &mut self,
        d: &Desc,
        mem: &std::collections::HashMap<u64, Vec<u8>>,
    ) -> (Vec<JobSeen>, Vec<(u64, u64)>) {
        let r = self.packet_run(d, mem);
        (r.jobs, r.fetches)
    }

    /// [`Tb::packet_rq`], also returning the counter pulses and the go-back-N requests
    /// (`rw_data`) the packet caused. A READ response's AETH is an ACK (syndrome 0x1F).
    fn packet_run(&mut self, d: &Desc, mem: &std::collections::HashMap<u64, Vec<u8>>) -> Run {
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

    fn rq_doorbell(&mut self, qpn: u64, pi: u64) {
        self.dut.set("rq_db_data", qpn << 16 | pi);
        self.dut.set("rq_db_write", 1);
        self.dut.eval();
        self.dut.tick();
        self.dut.set("rq_db_write", 0);
    }
}

/// Random SENDs at path MTU 256 into receive WQEs (256 bytes: up to 15 entries) of random
/// entries — lengths 0 (junk lkey), 1 and up, odd addresses — with now and then a bad entry
/// (stale tag, no LOCAL_WRITE, past its region), a message one byte too long or a WQE whose
/// num_sge is more than its 256 bytes hold (16..=255). Checks every
/// job: a whole-WQE fetch (4 beats) per message; the payload pieces map message byte `m` to
/// the IOVA of the entry holding it and cover each packet's payload once, in order, at packet
/// offset `hlen + m`, only the packet's last job freeing its beats and carrying its ACK
/// request; the receive CQE (status, byte_len, wr_id, opcode) after the payload; a bad entry
/// gives IBV_WC_LOC_PROT_ERR (4), a too-long message or an overfull num_sge IBV_WC_LOC_LEN_ERR
/// (1), with no payload job for the refused packet.
#[test]
fn send_scatters_over_the_receive_entries() {
    use std::collections::HashMap;
    let mut tb = Tb::new(0x2E61_0003);
    let seed = tb.rng.0;
    let qpn = 3u64;
    let (rq_base, cqn) = (0x4000_0000u64, 2u64);
    let mut q = random_qp(&mut tb.rng, 3, 0x1, 7);
    q.mtu_code = 1;
    let good = Mr { valid: true, access: 0x1, tag: 0x11, pd: 7, va: 0x10_0000, length: 1 << 16, iova: 0x9_0000_0040 };
    let ro = Mr { access: 0x4, tag: 0x22, iova: 0xA_0000_0000, ..good.clone() };
    tb.write_mr(1, &good);
    tb.write_mr(2, &ro);
    tb.write_cq(cqn, 6, 0x5000_0000);
    let make_qp = |tb: &mut Tb, q: &Qp| {
        let mut r = [0u8; 64];
        qp::STATE.put(&mut r, 0);
        tb.command(1, qpn, &r);
        let mut r = qp_record(q);
        qp::RECV_CQ.put(&mut r, cqn);
        qp::SEND_CQ.put(&mut r, cqn);
        qp::RQ_LOG_SIZE.put(&mut r, 3);
        qp::RQ_LOG_STRIDE.put(&mut r, 2);
        qp::RQ_BASE.put(&mut r, rq_base);
        tb.command(1, qpn, &r);
    };
    make_qp(&mut tb, &q);
    let mut ci = 0u64;
    let (mut pieces_total, mut multi_piece_pkts, mut errors, mut overs) = (0, 0, 0, 0);
    for msg in 0..60u64 {
        let rng = &mut tb.rng;
        let n = rng.range(1, 15) as usize;
        // Entries: (addr, len, lkey); lengths 0 now and then.
        let mut entries: Vec<(u64, u64, u64)> = Vec::new();
        for _ in 0..n {
            let len = match rng.range(0, 6) {
                0 => 0,
                1 => rng.range(1, 8),
                2 => 256,
                _ => rng.range(8, 700),
            };
            let addr = good.va + rng.range(0, (1 << 16) - 700);
            entries.push((addr, len, if len == 0 { u64::from(rng.u32()) } else { 1 << 8 | 0x11 }));
        }
        let total: u64 = entries.iter().map(|e| e.1).sum();
        // Now and then one nonzero entry is bad, or the message is one byte too long.
        let mut bad = None;
        let nz: Vec<usize> = (0..n).filter(|&k| entries[k].1 > 0).collect();
        if !nz.is_empty() && rng.chance(1, 6) {
            let k = *rng.pick(&nz);
            match rng.range(0, 3) {
                0 => entries[k].2 = 1 << 8 | 0x12,                            // stale tag
                1 => entries[k].2 = 2 << 8 | 0x22,                            // no LOCAL_WRITE
                _ => entries[k].0 = good.va + good.length - entries[k].1 + 1, // past the region
            }
            bad = Some(k);
        }
        let too_long = bad.is_none() && rng.chance(1, 6);
        // Now and then the WQE claims more entries than its 256 bytes hold (a malformed WQE):
        // LOC_LEN_ERR at the first packet, whatever the message's length.
        let over = bad.is_none() && !too_long && rng.chance(1, 8);
        let num_sge = if over { rng.range(16, 256) } else { n as u64 };
        let len = if too_long {
            total + 1
        } else if rng.chance(1, 3) {
            total
        } else {
            rng.range(0, total)
        };
        // The WQE (256 bytes) at its ring slot; the doorbell.
        let mut wqe = vec![0u8; 256];
        rnic_contract::recv_wqe::WR_ID.put(&mut wqe, 0xC0DE_0000 + msg);
        rnic_contract::recv_wqe::NUM_SGE.put(&mut wqe, num_sge);
        for (k, e) in entries.iter().enumerate() {
            let o = rnic_contract::recv_wqe::sge_offset(k);
            wqe[o..o + 8].copy_from_slice(&e.0.to_le_bytes());
            wqe[o + 8..o + 12].copy_from_slice(&(e.1 as u32).to_le_bytes());
            wqe[o + 12..o + 16].copy_from_slice(&(e.2 as u32).to_le_bytes());
        }
        let slot = rq_base + (ci % 8) * 256;
        let mut mem = HashMap::new();
        for b in 0..4 {
            mem.insert(slot + 64 * b, wqe[64 * b as usize..64 * (b as usize + 1)].to_vec());
        }
        tb.rq_doorbell(qpn, ci + 1);
        // Message byte m -> IOVA, for a good receive.
        let mut iova_of = Vec::new();
        for e in &entries {
            for i in 0..e.1 {
                iova_of.push(good.iova + (e.0 - good.va) + i);
            }
        }
        // Packets at MTU 256.
        let npk = len.max(1).div_ceil(256);
        let mut sent = 0u64;
        let ctx = format!(
            "message {msg}: {len} B into {:?} (bad {bad:?}, num_sge {num_sge}) (seed {seed:#x})",
            entries.iter().map(|e| e.1).collect::<Vec<_>>()
        );
        let mut refused = false;
        for p in 0..npk {
            let plen = if p + 1 == npk { len - sent } else { 256 };
            let op = match (npk, p) {
                (1, _) => SEND_ONLY,
                (_, 0) => SEND_FIRST,
                (_, p) if p + 1 == npk => SEND_LAST,
                _ => SEND_MIDDLE,
            };
            let hlen = 54 + 4 * tb.rng.range(0, 8);
            let d = Desc {
                start: tb.rng.range(0, 255),
                nbeats: (hlen + plen + 4).div_ceil(64),
                opcode: op,
                hlen,
                ackreq: tb.rng.chance(1, 3),
                plen,
                dest_qpn: qpn,
                psn: q.epsn,
                ..Desc::default()
            };
            let (jobs, fetches) = tb.packet_rq(&d, &mem);
            let pctx = format!("{ctx}, packet {p} ({op:#x}, {plen} B)");
            if p == 0 {
                assert_eq!(fetches, vec![(slot, 4)], "{pctx}: one fetch of the whole 256-byte WQE");
            } else {
                assert!(fetches.is_empty(), "{pctx}: fetches {fetches:x?}");
            }
            let pay: Vec<&JobSeen> = jobs.iter().filter(|j| j.kind == 0).collect();
            let releasing: Vec<usize> = (0..jobs.len()).filter(|&i| jobs[i].release != 0).collect();
            assert_eq!(releasing.len(), 1, "{pctx}: jobs releasing beats: {jobs:x?}");
            assert_eq!(jobs[releasing[0]].release, d.nbeats, "{pctx}");
            assert!(jobs.iter().all(|j| j.start == d.start || j.kind == 1), "{pctx}: job.start");
            let fails_here = (bad.is_some() || over) && p == 0 || too_long && sent + plen > total;
            if fails_here {
                assert!(pay.is_empty(), "{pctx}: a refused packet wrote {pay:x?}");
                let cqe = jobs.iter().find(|j| j.kind == 1).expect("a receive CQE");
                let status = if bad.is_some() { 4 } else { 1 };
                assert_eq!(cqe.cqe.unwrap(), (status, 0, 0xC0DE_0000 + msg, 128), "{pctx}: CQE");
                assert!(cqe.need_ack, "{pctx}: the CQE carries the NAK");
                assert_eq!(cqe.syndrome, if bad.is_some() { 0x63 } else { 0x61 }, "{pctx}: NAK");
                refused = true;
                errors += 1;
                overs += usize::from(over);
                break;
            }
            // The payload pieces cover [sent, sent + plen) in order, each in one entry.
            let mut at = sent;
            for (i, j) in pay.iter().enumerate() {
                assert!(j.plen > 0, "{pctx}: empty piece");
                assert_eq!(j.off, hlen + (at - sent), "{pctx}: piece {i} offset into the packet");
                for b in 0..j.plen {
                    assert_eq!(
                        j.addr + b,
                        iova_of[(at + b) as usize],
                        "{pctx}: piece {i} byte {b} (message byte {})",
                        at + b
                    );
                }
                let last = i + 1 == pay.len();
                assert_eq!(j.release != 0, last, "{pctx}: piece {i} release");
                assert!(!j.need_ack || last, "{pctx}: ACK request on piece {i} of {}", pay.len());
                at += j.plen;
            }
            assert_eq!(at, sent + plen, "{pctx}: pieces {pay:x?}");
            pieces_total += pay.len();
            if pay.len() > 1 {
                multi_piece_pkts += 1;
            }
            sent += plen;
            q.epsn = (q.epsn + 1) & 0xFF_FFFF;
            if p + 1 == npk {
                let cqe = jobs.last().unwrap();
                assert_eq!(cqe.kind, 1, "{pctx}: the receive CQE comes last");
                assert_eq!(cqe.cqe.unwrap(), (0, len, 0xC0DE_0000 + msg, 128), "{pctx}: CQE");
            }
        }
        ci += 1;
        if refused {
            // The QP went to ERR: start it again (RESET, then RTS with fresh RQ indices).
            q.epsn = tb.rng.u32() & 0xFF_FFFF;
            make_qp(&mut tb, &q);
            ci = 0;
        }
    }
    assert!(
        multi_piece_pkts > 20 && errors > 5 && overs >= 2,
        "{multi_piece_pkts} packets over several entries ({pieces_total} pieces), {errors} refused, {overs} for num_sge"
    );
}

// ---- READ responses scattered over a READ's SGE list ----

const READ_RESPONSE_FIRST: u8 = 0x0D;
const READ_RESPONSE_MIDDLE: u8 = 0x0E;
const READ_RESPONSE_LAST: u8 = 0x0F;
const READ_RESPONSE_ONLY: u8 = 0x10;

/// An in-flight record as the scheduler writes it (`InflightRec`).
#[derive(Clone, Debug)]
struct Inflight {
    wr_id: u64,
    byte_len: u64,
    first_psn: u32,
    last_psn: u32,
    signaled: bool,
    rd_list: bool,
    wc_opcode: u64,
    local_iova: u64,
}

impl Tb {
    /// Writes entry `k` of the list of QP `qpn`'s READ number `s` (its READs and atomics
    /// counted from 0; 4 lists per QP, used in turn) as the scheduler does (`rl_*`, one cycle).
    fn write_read_list(&mut self, qpn: u64, s: u64, k: u64, iova: u64, len: u32) {
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
    fn record_inflight(&mut self, qpn: u64, r: &Inflight) {
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
    fn record_write(&mut self, qpn: u64, w: (u64, u64), psn: u32) {
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
    fn record_read(&mut self, run: &ReadRun) {
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
struct ReadRun {
    qpn: u64,
    mtu: u64,
    wr_id: u64,
    first_psn: u32,
    npkts: u64,
    total: u64,
    /// Message byte `m` goes to IOVA `iova_of[m]`.
    iova_of: Vec<u64>,
    entries: Vec<(u64, u64)>,
    /// The next response in order (0..npkts).
    next: u64,
    /// A signaled WRITE recorded just before the READ, not yet acknowledged: the READ's first
    /// response acknowledges it implicitly (IBTA Vol 1 9.7.5.1.3), so its CQE comes first.
    write_before: Option<(u64, u64)>,
    /// The READ asks for a completion (else it retires silently).
    signaled: bool,
    /// Responses `next` for which a response ahead of it was already handed in.
    gaps: std::collections::HashSet<u64>,
}

impl ReadRun {
    fn plen(&self, i: u64) -> u64 {
        if i + 1 == self.npkts {
            self.total - i * self.mtu
        } else {
            self.mtu
        }
    }
    fn opcode(&self, i: u64) -> u8 {
        match (self.npkts, i) {
            (1, _) => READ_RESPONSE_ONLY,
            (_, 0) => READ_RESPONSE_FIRST,
            (n, i) if i + 1 == n => READ_RESPONSE_LAST,
            _ => READ_RESPONSE_MIDDLE,
        }
    }
    fn psn(&self, i: u64) -> u32 {
        (self.first_psn + i as u32) & 0xFF_FFFF
    }
    /// The descriptor of response `i` (FIRST, LAST and ONLY carry an AETH: 58-byte header).
    fn desc(&self, i: u64, rng: &mut Rng) -> Desc {
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
    fn response_in_order(&mut self, run: &mut ReadRun, ctx: &str) -> usize {
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
fn cqes_of(jobs: &[JobSeen], ctx: &str) -> Vec<(u64, u64, u64, u64)> {
    jobs.iter()
        .filter(|j| j.kind == 1)
        .map(|j| {
            assert_eq!(j.release, 0, "{ctx}: a CQE frees packet beats");
            assert!(!j.need_ack, "{ctx}: a CQE asks for an ACK");
            j.cqe.unwrap()
        })
        .collect()
}

/// READs whose in-flight record has `rd_list` set (as the scheduler records a READ with several
/// local SGEs), on five QPs, one per path MTU (256..4096), with lists of 1..=16 random entries
/// (lengths 1..=3 MTUs, one byte and exactly one MTU among them, any IOVA alignment) written
/// through the `rl_*` port, the QPs' READs outstanding together and their responses
/// (FIRST/MIDDLE/LAST, or ONLY) interleaved across QPs in PSN order per QP. Junk is written
/// past each list's end and into the lists of QPs not being read. For every in-order response:
/// its payload jobs map message byte `m` to the IOVA of the list entry holding it, at packet
/// offset `hlen + bytes placed`, cover the payload once in order, none empty; only the last
/// frees the packet's beats (none asks for an ACK); the READ's CQE (status 0, byte_len = the
/// list's sum, IBV_WC_RDMA_READ) comes after its last payload unless the READ is unsignaled
/// (the next READ's list still starts at its entry 0), and a signaled WRITE recorded
/// before the READ completes (its CQE first) on the READ's first response. Now and then a
/// duplicate response (PSN behind, also of a READ already complete) is dropped (`cnt_dup`) and
/// a response ahead of the expected PSN is dropped (`cnt_drop_psn`) with one go-back-N request
/// from the expected PSN: each writes nothing (one job, freeing its beats) and the next
/// in-order response still lands where it belongs.
#[test]
fn read_responses_scatter_over_the_read_list() {
    use rnic_contract::verbs::wc_opcode;
    use std::collections::HashMap;
    let mut tb = Tb::new(0x2E61_0004);
    let seed = tb.rng.0;
    let cqn = 4u64;
    tb.write_cq(cqn, 10, 0x7000_0000);
    // One QP per path MTU; their QPNs differ in the bits the list table is indexed by.
    let qpns = [9u64, 22, 35, 48, 63];
    let mut psn = HashMap::new();
    for (i, &qpn) in qpns.iter().enumerate() {
        let mut q = random_qp(&mut tb.rng, 3, 0x7, 3);
        q.mtu_code = i as u64 + 1;
        let mut r = qp_record(&q);
        qp::SEND_CQ.put(&mut r, cqn);
        qp::RECV_CQ.put(&mut r, cqn);
        tb.command(1, qpn, &r);
        // Some QPs start near the end of the PSN space, so their READs wrap.
        let p0 = if i % 2 == 0 { 0xFF_FFFF - tb.rng.range(0, 40) as u32 } else { tb.rng.u32() & 0xFF_FFFF };
        psn.insert(qpn, p0);
    }
    let empty = HashMap::new();
    let (mut responses, mut multi_piece, mut strays, mut wrote_before) = (0u64, 0u64, 0u64, 0u64);
    for round in 0..20u64 {
        // A READ per QP: its list, junk past it and in the other QPs' lists, its record.
        let mut runs: Vec<ReadRun> = Vec::new();
        for (i, &qpn) in qpns.iter().enumerate() {
            let mtu = 256u64 << i;
            let rng = &mut tb.rng;
            let n = if round == 0 { 16 } else { rng.range(1, 16) };
            let entries: Vec<(u64, u64)> = (0..n)
                .map(|_| {
                    let len = match rng.range(0, 5) {
                        0 => 1,
                        1 => mtu,
                        _ => rng.range(1, 3 * mtu),
                    };
                    (rng.next_u64() & 0x0000_FFFF_FFFF_FFFF, len)
                })
                .collect();
            let total: u64 = entries.iter().map(|e| e.1).sum();
            let npkts = total.div_ceil(mtu);
            let mut iova_of = Vec::with_capacity(total as usize);
            for e in &entries {
                iova_of.extend((0..e.1).map(|b| e.0 + b));
            }
            // This is the QP's READ number `round`: its list is `round mod 4`; the other three
            // hold junk (lists of READs before and after it).
            for (k, e) in entries.iter().enumerate() {
                tb.write_read_list(qpn, round, k as u64, e.0, e.1 as u32);
            }
            for k in n..16 {
                if tb.rng.chance(1, 2) {
                    let (a, l) = (tb.rng.next_u64(), tb.rng.u32());
                    tb.write_read_list(qpn, round, k, a, l);
                }
            }
            for other in round + 1..round + 4 {
                for k in 0..16 {
                    if tb.rng.chance(1, 4) {
                        let (a, l) = (tb.rng.next_u64(), tb.rng.u32());
                        tb.write_read_list(qpn, other, k, a, l);
                    }
                }
            }
            let mut run = ReadRun {
                qpn,
                mtu,
                wr_id: 0xBEAD_0000 + (round << 8) + i as u64,
                first_psn: 0,
                npkts,
                total,
                iova_of,
                entries,
                next: 0,
                write_before: None,
                signaled: round == 0 || tb.rng.chance(3, 4),
                gaps: Default::default(),
            };
            let p = psn[&qpn];
            if tb.rng.chance(1, 3) {
                let w = (0xA11C_E000 + (round << 8) + i as u64, tb.rng.range(0, 1 << 20));
                tb.record_write(qpn, w, p);
                run.write_before = Some(w);
                wrote_before += 1;
            }
            run.first_psn = (p + u32::from(run.write_before.is_some())) & 0xFF_FFFF;
            psn.insert(qpn, (run.first_psn + npkts as u32) & 0xFF_FFFF);
            tb.record_read(&run);
            runs.push(run);
        }
        // Responses, interleaved across QPs, in order per QP, with strays now and then.
        while runs.iter().any(|r| r.next < r.npkts) {
            let live: Vec<usize> = (0..runs.len()).filter(|&i| runs[i].next < runs[i].npkts).collect();
            let ri = *tb.rng.pick(&live);
            let run = &mut runs[ri];
            let ctx = format!(
                "round {round}, QP {} (MTU {}), READ of {} B over {:?}, response {} of {} (seed {seed:#x})",
                run.qpn,
                run.mtu,
                run.total,
                run.entries.iter().map(|e| e.1).collect::<Vec<_>>(),
                run.next,
                run.npkts
            );
            let i = run.next;
            let behind = i > 0 && tb.rng.chance(1, 6);
            let ahead = !behind && i + 1 < run.npkts && !run.gaps.contains(&i) && tb.rng.chance(1, 6);
            if behind || ahead {
                // A duplicate (PSN behind) or a response past a missing one (PSN ahead).
                let j = if behind { tb.rng.range(0, i - 1) } else { tb.rng.range(i + 1, run.npkts - 1) };
                let d = run.desc(j, &mut tb.rng);
                let got = tb.packet_run(&d, &empty);
                let ctx = format!("{ctx}: stray response {j}");
                let mut want_pulses = vec![if behind { "cnt_dup" } else { "cnt_drop_psn" }];
                let mut want_cqes = vec![];
                if let Some(w) = run.write_before.take() {
                    // Its PSN covers the WRITE before the READ: retired first.
                    want_cqes.push((0, w.1, w.0, u64::from(wc_opcode::RDMA_WRITE)));
                    want_pulses.insert(0, "cnt_cqe");
                }
                assert_eq!(cqes_of(&got.jobs, &ctx), want_cqes, "{ctx}: CQEs {:x?}", got.jobs);
                let rest: Vec<&JobSeen> = got.jobs.iter().filter(|j| j.kind != 1).collect();
                assert_eq!(rest.len(), 1, "{ctx}: jobs {:x?}", got.jobs);
                assert_eq!(
                    (rest[0].kind, rest[0].release, rest[0].start),
                    (NONE, d.nbeats, d.start),
                    "{ctx}: the stray writes nothing and frees its beats"
                );
                assert!(!rest[0].need_ack, "{ctx}");
                assert_eq!(got.pulses, want_pulses, "{ctx}: counters");
                if ahead {
                    run.gaps.insert(i);
                    assert_eq!(
                        got.rewinds,
                        vec![(run.qpn, u64::from(run.psn(i)), false)],
                        "{ctx}: one go-back-N request from the first missing response"
                    );
                } else {
                    assert!(got.rewinds.is_empty(), "{ctx}: rewinds {:x?}", got.rewinds);
                }
                strays += 1;
                continue;
            }
            let pieces = tb.response_in_order(run, &ctx);
            responses += 1;
            if pieces > 1 {
                multi_piece += 1;
            }
        }
        // Late duplicates of READs already complete: for no outstanding READ, dropped.
        for _ in 0..3 {
            let ri = tb.rng.range(0, runs.len() as u64 - 1) as usize;
            let j = tb.rng.range(0, runs[ri].npkts - 1);
            let d = runs[ri].desc(j, &mut tb.rng);
            let got = tb.packet_run(&d, &empty);
            let ctx = format!("round {round}: late duplicate {j} of QP {}'s READ (seed {seed:#x})", runs[ri].qpn);
            assert_eq!(got.jobs.len(), 1, "{ctx}: jobs {:x?}", got.jobs);
            assert_eq!((got.jobs[0].kind, got.jobs[0].release), (NONE, d.nbeats), "{ctx}");
            assert_eq!(got.pulses, vec!["cnt_dup"], "{ctx}");
            assert!(got.rewinds.is_empty(), "{ctx}");
            strays += 1;
        }
    }
    eprintln!("rx_engine: {responses} READ responses in order ({multi_piece} over several entries), {strays} strays, {wrote_before} WRITEs retired by a response");
    assert!(
        multi_piece > 50 && strays > 30 && wrote_before > 5,
        "{multi_piece} responses over several entries, {strays} strays, {wrote_before} WRITEs before"
    );
}

/// An event CQE the engine wrote: (CQ number, ibv_event_type, QP_NUM).
fn event_cqes(jobs: &[Vec<u8>]) -> Vec<(u64, u64, u64)> {
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
    fn packet_jobs(&mut self, d: &Desc) -> Vec<Vec<u8>> {
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

/// QP-affiliated asynchronous events (rnic_contract::regs::ASYNC_EVENT_CQ): with the event CQ
/// enabled, the first request with the expected PSN on a QP in RTR raises COMM_EST (4) once; a
/// NAK remote access error that moves the QP to ERR raises QP_ACCESS_ERR (3), a NAK invalid
/// request (a WRITE MIDDLE with no message open) QP_REQ_ERR (2): each an event CQE (OPCODE
/// 255, STATUS the event, QP_NUM the QP) on the event CQ, after the packet's own job. A QP in
/// RTS raises no COMM_EST; with the register's enable bit clear nothing is raised.
#[test]
fn qp_errors_and_comm_est_raise_async_events() {
    use rnic_contract::verbs::event_type as ev;
    let mut tb = Tb::new(0x2E61_0015);
    let ev_cq = 7u64;
    tb.dut.set("async_cq", 1 << 8 | ev_cq);
    let pd = 5;
    let m = Mr { valid: true, access: 2, tag: 0x21, pd, va: 0x1_0000, length: 0x1000, iova: 0x8000_0000 };
    tb.write_mr(1, &m);
    let rkey = 1 << 8 | 0x21;
    let mut rng = Rng(0x15);
    let write = |qpn: u64, psn: u32, rkey: u32, opcode: u8| Desc {
        start: 3,
        nbeats: 2,
        opcode,
        hlen: 70,
        ackreq: true,
        plen: 16,
        dest_qpn: qpn,
        psn,
        va: 0x1_0000,
        rkey,
        len: 16,
        ud: None,
    };
    // QP 3 in RTR: COMM_EST on its first request, not on its second; then a bad rkey.
    let q3 = random_qp(&mut rng, 2, 2, pd);
    tb.write_qp(3, &q3);
    let jobs = tb.packet_jobs(&write(3, q3.epsn, rkey, WRITE_ONLY));
    assert_eq!(event_cqes(&jobs), [(ev_cq, u64::from(ev::COMM_EST), 3)], "first request in RTR");
    assert_eq!(jobs.len(), 2, "the packet's job and the event's");
    let jobs = tb.packet_jobs(&write(3, (q3.epsn + 1) & 0xFF_FFFF, rkey, WRITE_ONLY));
    assert_eq!(event_cqes(&jobs), [], "COMM_EST twice");
    let jobs = tb.packet_jobs(&write(3, (q3.epsn + 2) & 0xFF_FFFF, rkey ^ 1, WRITE_ONLY));
    assert_eq!(event_cqes(&jobs), [(ev_cq, u64::from(ev::QP_ACCESS_ERR), 3)], "NAK remote access error");
    // The QP is in ERR: a later packet raises nothing more.
    let jobs = tb.packet_jobs(&write(3, (q3.epsn + 3) & 0xFF_FFFF, rkey, WRITE_ONLY));
    assert_eq!(event_cqes(&jobs), [], "a packet for the QP in ERR");
    // QP 4 in RTS: no COMM_EST; a MIDDLE with no message open is an invalid request.
    let q4 = random_qp(&mut rng, 3, 2, pd);
    tb.write_qp(4, &q4);
    let jobs = tb.packet_jobs(&write(4, q4.epsn, rkey, WRITE_ONLY));
    assert_eq!(event_cqes(&jobs), [], "COMM_EST in RTS");
    let jobs = tb.packet_jobs(&write(4, (q4.epsn + 1) & 0xFF_FFFF, rkey, WRITE_MIDDLE));
    assert_eq!(event_cqes(&jobs), [(ev_cq, u64::from(ev::QP_REQ_ERR), 4)], "NAK invalid request");
    // Disabled: neither COMM_EST nor the error event of QP 5.
    tb.dut.set("async_cq", ev_cq);
    let q5 = random_qp(&mut rng, 2, 2, pd);
    tb.write_qp(5, &q5);
    let mut jobs = tb.packet_jobs(&write(5, q5.epsn, rkey, WRITE_ONLY));
    jobs.extend(tb.packet_jobs(&write(5, (q5.epsn + 1) & 0xFF_FFFF, rkey ^ 1, WRITE_ONLY)));
    assert_eq!(event_cqes(&jobs), [], "events while ASYNC_EVENT_CQ is disabled");
    // Re-enabled, QP 3 brought back (its context again with INIT_RQ_PSN): COMM_EST again.
    tb.dut.set("async_cq", 1 << 8 | ev_cq);
    let q3 = random_qp(&mut rng, 2, 2, pd);
    let mut r = qp_record(&q3);
    q3.peer.put(&mut r);
    tb.command(1, 3, &r);
    let jobs = tb.packet_jobs(&write(3, q3.epsn, rkey, WRITE_ONLY));
    assert_eq!(event_cqes(&jobs), [(ev_cq, u64::from(ev::COMM_EST), 3)], "COMM_EST after a new RTR");
}

impl Tb {
    /// Runs `n` cycles with no packet offered and returns the jobs written meanwhile.
    fn settle_jobs(&mut self, n: u64) -> Vec<Vec<u8>> {
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

/// A QP on an SRQ (USE_SRQ, SRQN) that enters ERR raises QP_LAST_WQE_REACHED (16) after its
/// error event when the NIC moves it there (a NAK remote access error: QP_ACCESS_ERR, then
/// LAST_WQE_REACHED), and LAST_WQE_REACHED alone when the driver writes its context with state
/// ERR (the flush visit raises no error event). A QP not on an SRQ moved to ERR by the driver
/// raises nothing.
#[test]
fn a_qp_on_an_srq_entering_err_raises_last_wqe_reached() {
    use rnic_contract::{srq_context as srqc, verbs::event_type as ev};
    let mut tb = Tb::new(0x2E61_0016);
    let ev_cq = 9u64;
    tb.dut.set("async_cq", 1 << 8 | ev_cq);
    let pd = 3;
    let m = Mr { valid: true, access: 2, tag: 0x33, pd, va: 0x2_0000, length: 0x1000, iova: 0x9000_0000 };
    tb.write_mr(2, &m);
    let mut srq = [0u8; 64];
    srqc::INIT.put(&mut srq, 1);
    tb.command(4, 20, &srq);
    let mut rng = Rng(0x16);
    let on_srq = |tb: &mut Tb, qpn: u64, q: &Qp, state: u64| {
        let mut r = qp_record(q);
        q.peer.put(&mut r);
        qp::STATE.put(&mut r, state);
        qp::USE_SRQ.put(&mut r, 1);
        qp::SRQN.put(&mut r, 20);
        tb.command(1, qpn, &r);
    };
    let q6 = random_qp(&mut rng, 3, 2, pd);
    on_srq(&mut tb, 6, &q6, 3);
    let bad = Desc {
        start: 1,
        nbeats: 2,
        opcode: WRITE_ONLY,
        hlen: 70,
        ackreq: true,
        plen: 16,
        dest_qpn: 6,
        psn: q6.epsn,
        va: 0x2_0000,
        rkey: 2 << 8 | 0x34,
        len: 16,
        ud: None,
    };
    let jobs = tb.packet_jobs(&bad);
    assert_eq!(
        event_cqes(&jobs),
        [(ev_cq, u64::from(ev::QP_ACCESS_ERR), 6), (ev_cq, u64::from(ev::QP_LAST_WQE_REACHED), 6)],
        "the NIC moved the QP on the SRQ to ERR"
    );
    // The driver moves QP 7 (on the SRQ) and QP 8 (not) to ERR.
    let q7 = random_qp(&mut rng, 3, 2, pd);
    on_srq(&mut tb, 7, &q7, 3);
    on_srq(&mut tb, 7, &q7, 6);
    let q8 = random_qp(&mut rng, 3, 2, pd);
    tb.write_qp(8, &q8);
    let mut r = qp_record(&q8);
    q8.peer.put(&mut r);
    qp::STATE.put(&mut r, 6);
    tb.command(1, 8, &r);
    let jobs = tb.settle_jobs(400);
    assert_eq!(
        event_cqes(&jobs),
        [(ev_cq, u64::from(ev::QP_LAST_WQE_REACHED), 7)],
        "the driver moved QP 7 (SRQ) and QP 8 to ERR"
    );
}

impl Tb {
    /// Hands `d` in and runs `n` cycles; returns `dbg_state` cycle by cycle, repeats collapsed.
    fn state_trace(&mut self, d: &Desc, n: u64) -> Vec<u64> {
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

/// `dbg_state` (bits 5:0 of rnic_contract::regs::STATUS) names the engine's states by the
/// numbers they had before they were named (in parentheses in `RxState`'s documentation): an
/// accepted WRITE ONLY passes through `Idle` 0, `ReadQpState` 1, `LoadQpState` 2, `CheckRegion`
/// 5, `Decide` 6 and `WriteBack` 9; a refused rkey through the same, then the flush visit of
/// the QP its class C error put in ERR: 0, 1, 2, `FlushStep` 33 and back to 0 (nothing to
/// flush).
#[test]
fn dbg_state_reports_the_state_numbers() {
    let mut tb = Tb::new(0xD8_57A7);
    let pd = 3;
    let m = Mr { valid: true, access: 2, tag: 0x11, pd, va: 0x4_0000, length: 0x1000, iova: 0x9000_0000 };
    tb.write_mr(2, &m);
    let rkey = 2 << 8 | 0x11;
    let q = random_qp(&mut Rng(0xD8), 2, 2, pd);
    tb.write_qp(9, &q);
    let write = |psn: u32, rkey: u32| Desc {
        start: 1,
        nbeats: 2,
        opcode: WRITE_ONLY,
        hlen: 70,
        ackreq: true,
        plen: 16,
        dest_qpn: 9,
        psn,
        va: 0x4_0000,
        rkey,
        len: 16,
        ud: None,
    };
    assert_eq!(tb.state_trace(&write(q.epsn, rkey), 40), [0, 1, 2, 5, 6, 9, 0], "an accepted WRITE ONLY");
    assert_eq!(
        tb.state_trace(&write((q.epsn + 1) & 0xFF_FFFF, rkey ^ 1), 200),
        [0, 1, 2, 5, 6, 9, 0, 1, 2, 33, 0],
        "a NAK remote access error, then the flush visit"
    );
}

/// UD SENDs (IBTA Vol 1 9.8.3; `RxDesc::ud`, the ingress's SEND ONLY with the DETH in
/// `reth_va`) on a UD QP (QP_TYPE 1, its Q_Key in the context's QKEY): a good one becomes the
/// GRH job (the packet's IPv4 header, frame bytes 14..34, to bytes 20..40 of the first entry,
/// releasing nothing), the payload 40 bytes into the entry (releasing the packet's beats), and
/// a receive CQE with byte_len + 40, IBV_WC_GRH (and WITH_IMM), SRC_QP = the DETH's source QP;
/// no job asks for an ACK. A wrong Q_Key: `cnt_drop_key`, no fetch. No receive WQE:
/// `cnt_drop_no_rwqe`, no RNR NAK; longer than the WQE takes: dropped the same way, the WQE
/// kept. A first entry shorter than the GRH area: LOC_LEN_ERR, no
/// payload. An RC SEND to the UD QP and a UD SEND to an RC QP: `cnt_unknown_qp`.
#[test]
fn ud_sends_land_behind_the_grh_area() {
    use std::collections::HashMap;
    let mut tb = Tb::new(0x0D_2001);
    let (qpn, rc_qpn) = (5u64, 6u64);
    let (rq_base, cqn, qkey) = (0x4000_0000u64, 2u64, 0x1234_5678u64);
    let mut q = random_qp(&mut tb.rng, 3, 0x1, 7);
    q.mtu_code = 5;
    let good = Mr { valid: true, access: 0x1, tag: 0x11, pd: 7, va: 0x10_0000, length: 1 << 16, iova: 0x9_0000_0040 };
    tb.write_mr(1, &good);
    tb.write_cq(cqn, 6, 0x5000_0000);
    let mut r = [0u8; 64];
    qp::STATE.put(&mut r, 0);
    tb.command(1, qpn, &r);
    let mut r = qp_record(&q);
    qp::QP_TYPE.put(&mut r, 1);
    qp::QKEY.put(&mut r, qkey);
    qp::RECV_CQ.put(&mut r, cqn);
    qp::SEND_CQ.put(&mut r, cqn);
    qp::RQ_LOG_SIZE.put(&mut r, 3);
    qp::RQ_BASE.put(&mut r, rq_base);
    tb.command(1, qpn, &r);
    tb.write_qp(rc_qpn, &q);
    let mut ci = 0u64;
    // Posts a 64-byte receive WQE of `entries` (addr, len) and returns the fetchable memory.
    let mut post = |tb: &mut Tb, entries: &[(u64, u64)], wr_id: u64| {
        let mut wqe = vec![0u8; 64];
        rnic_contract::recv_wqe::WR_ID.put(&mut wqe, wr_id);
        rnic_contract::recv_wqe::NUM_SGE.put(&mut wqe, entries.len() as u64);
        for (k, e) in entries.iter().enumerate() {
            let o = rnic_contract::recv_wqe::sge_offset(k);
            wqe[o..o + 8].copy_from_slice(&e.0.to_le_bytes());
            wqe[o + 8..o + 12].copy_from_slice(&(e.1 as u32).to_le_bytes());
            wqe[o + 12..o + 16].copy_from_slice(&(1u32 << 8 | 0x11).to_le_bytes());
        }
        let mut mem = HashMap::new();
        mem.insert(rq_base + (ci % 8) * 64, wqe);
        ci += 1;
        tb.rq_doorbell(qpn, ci);
        mem
    };
    let deth = |qk: u64, src: u64| qk << 32 | src;
    let ud = |opcode: u8, plen: u64, dest: u64, d: u64| Desc {
        start: 40,
        nbeats: 2 + plen / 64,
        opcode,
        hlen: if opcode == 0x05 { 66 } else { 62 },
        plen,
        dest_qpn: dest,
        psn: 0xABC,
        ud: Some(d),
        ..Desc::default()
    };
    let iova = |va: u64| good.iova + (va - good.va);
    let none = HashMap::new();

    // No receive WQE posted yet: dropped and counted, nothing answered, nothing fetched.
    let r0 = tb.packet_run(&ud(SEND_ONLY, 100, qpn, deth(qkey, 9)), &none);
    assert_eq!(r0.pulses, vec!["cnt_drop_no_rwqe"], "{r0:?}");
    assert!(r0.fetches.is_empty() && r0.jobs.iter().all(|j| j.kind == 2 && !j.need_ack), "{r0:?}");
    // A good one, and one with immediate.
    for (k, (op, plen, flags)) in [(SEND_ONLY, 100u64, 1u64), (0x05, 7, 3)].into_iter().enumerate() {
        let va = good.va + 0x1000 * (k as u64 + 1) + 3;
        let mem = post(&mut tb, &[(va, 1000)], 0xD0 + k as u64);
        let d = ud(op, plen, qpn, deth(qkey, 0xA_BCDE));
        let r = tb.packet_run(&d, &mem);
        let ctx = format!("UD SEND {k}: {r:?}");
        assert_eq!(r.jobs.len(), 3, "{ctx}");
        let (g, p, c) = (&r.jobs[0], &r.jobs[1], &r.jobs[2]);
        assert_eq!((g.kind, g.off, g.plen, g.addr, g.release), (0, 14, 20, iova(va) + 20, 0), "GRH job; {ctx}");
        assert_eq!((p.kind, p.off, p.plen, p.addr, p.release), (0, d.hlen, plen, iova(va) + 40, d.nbeats), "{ctx}");
        assert_eq!(c.cqe, Some((0, plen + 40, 0xD0 + k as u64, 128)), "{ctx}");
        assert_eq!(c.cqe_ud, Some((flags, 0xA_BCDE)), "{ctx}");
        assert!(r.jobs.iter().all(|j| !j.need_ack), "no ACK for UD; {ctx}");
    }
    // A wrong Q_Key: dropped, counted as a key violation; the posted WQE stays for the next.
    let mem = post(&mut tb, &[(good.va + 0x8000, 500)], 0xE0);
    let r = tb.packet_run(&ud(SEND_ONLY, 10, qpn, deth(qkey ^ 0x100, 1)), &mem);
    assert_eq!(r.pulses, vec!["cnt_drop_key"], "{r:?}");
    assert!(r.fetches.is_empty() && r.jobs.iter().all(|j| j.kind == 2 && !j.need_ack), "{r:?}");
    let r = tb.packet_run(&ud(SEND_ONLY, 10, qpn, deth(qkey, 1)), &mem);
    assert_eq!(r.jobs.last().and_then(|j| j.cqe), Some((0, 50, 0xE0, 128)), "the kept WQE takes the next; {r:?}");
    // A first entry shorter than the GRH area: LOC_LEN_ERR, nothing written.
    let mem = post(&mut tb, &[(good.va + 0x9000, 39), (good.va + 0xA000, 500)], 0xE1);
    let r = tb.packet_run(&ud(SEND_ONLY, 10, qpn, deth(qkey, 1)), &mem);
    assert!(r.jobs.iter().all(|j| j.kind != 0 && !j.need_ack), "no payload, no NAK; {r:?}");
    assert_eq!(r.jobs.last().and_then(|j| j.cqe).map(|c| (c.0, c.2)), Some((1, 0xE1)), "LOC_LEN_ERR; {r:?}");
    // Longer than the WQE takes (after the GRH): dropped and counted, the WQE kept.
    let mem = post(&mut tb, &[(good.va + 0xB000, 40 + 64)], 0xE2);
    let r = tb.packet_run(&ud(SEND_ONLY, 65, qpn, deth(qkey, 1)), &mem);
    assert_eq!(r.pulses, vec!["cnt_drop_no_rwqe"], "too long; {r:?}");
    assert!(r.jobs.iter().all(|j| j.kind == 2 && !j.need_ack), "nothing written; {r:?}");
    let r = tb.packet_run(&ud(SEND_ONLY, 64, qpn, deth(qkey, 1)), &mem);
    assert_eq!(r.jobs.last().and_then(|j| j.cqe), Some((0, 104, 0xE2, 128)), "the kept WQE; {r:?}");
    // An RC SEND to a UD QP, a UD SEND to an RC QP.
    let rc_send =
        Desc { start: 40, nbeats: 2, opcode: SEND_ONLY, hlen: 54, plen: 4, dest_qpn: rc_qpn, ..Desc::default() };
    let r = tb.packet_run(&Desc { dest_qpn: qpn, ..rc_send.clone() }, &none);
    assert_eq!(r.pulses, vec!["cnt_unknown_qp"], "RC packet to a UD QP; {r:?}");
    let r = tb.packet_run(&ud(SEND_ONLY, 4, rc_qpn, deth(qkey, 1)), &none);
    assert_eq!(r.pulses, vec!["cnt_unknown_qp"], "UD packet to an RC QP; {r:?}");
}

/// A QP destroyed and created again under the same QPN (what rdma_cm applications do with
/// every new connection) keeps nothing of its last connection: QP 6 is run through random
/// WRITE streams (a message sometimes left open, sometimes ended by a class C error that puts
/// it in ERR), then written in RESET, INIT and RTR/RTS with a new expected PSN, as the driver
/// does. In RESET and INIT its packets are not taken; afterwards the expected PSN is the new
/// one, the MSN starts from 0, no open message survives (a MIDDLE is an invalid request) and
/// no error state either. QP 7's stream runs between QP 6's lives and must never notice.
#[test]
fn a_recreated_qp_keeps_nothing_of_its_last_connection() {
    let mut tb = Tb::new(0x2E61_000C);
    let seed = tb.rng.0;
    let m =
        Mr { valid: true, access: 0x2, tag: 0x6B, pd: 11, va: 0x30_0000_0000, length: 1 << 24, iova: 0x6_0000_2000 };
    let mrs = vec![m.clone()];
    tb.write_mr(0, &m);
    let mut q7 = random_qp(&mut tb.rng, 3, 0x2, 11);
    tb.write_qp(7, &q7);
    let mut n = 0;
    // One packet to QP `qpn`, checked against the model.
    let mut send = |tb: &mut Tb, q: &mut Qp, qpn: u64, op: u8, plen: u64, total: u64, va: u64, psn: u32, ctx: &str| {
        let starts = op == WRITE_FIRST || op == WRITE_ONLY;
        let d = Desc {
            start: tb.rng.range(0, 255),
            nbeats: tb.rng.range(1, 80),
            opcode: op,
            hlen: if starts { 70 } else { 54 },
            ackreq: tb.rng.chance(1, 3),
            plen,
            dest_qpn: qpn,
            psn,
            va: if starts { va } else { tb.rng.next_u64() },
            rkey: if starts { 0x6B } else { tb.rng.u32() },
            len: if starts { total as u32 } else { tb.rng.u32() },
            ud: None,
        };
        let before = q.clone();
        let want = model(q, true, &mrs, &d);
        let (job, pulses) = tb.packet(&d);
        assert_eq!(
            outcome_of(&job, &pulses),
            want,
            "packet {n} ({ctx}): QP {qpn} {d:x?} (seed {seed:#x})\nQP before {before:x?}"
        );
        check_common(&job, &d, q, &format!("packet {n}"));
        n += 1;
        if want.counter == "cnt_drop_key" || want.counter == "cnt_drop_inv_req" {
            // The class C error's flush visit.
            tb.settle(40);
        }
    };
    // Lives that ended with a message open, in ERR; MIDDLEs sent first in a new life.
    let (mut left_open, mut left_err, mut middles) = (0, 0, 0);
    for life in 0..8 {
        let ctx = format!("life {life}");
        let mut q6 = random_qp(&mut tb.rng, if life % 2 == 0 { 3 } else { 2 }, 0x2, 11);
        if life > 0 {
            // Destroyed (RESET), created again (INIT): no packet is taken in either.
            for state in [0, 1] {
                tb.write_qp(6, &Qp { state, ..q6.clone() });
                let mut gone = Qp { state, ..q6.clone() };
                let psn = q6.epsn;
                send(&mut tb, &mut gone, 6, WRITE_ONLY, 64, 64, m.va, psn, &format!("{ctx}: QP 6 in state {state}"));
            }
        }
        // Connected again with its new PSN.
        tb.write_qp(6, &q6);
        let mtu = 128u64 << q6.mtu_code;
        if life > 0 && tb.rng.chance(1, 4) {
            // The last life's message does not go on: a MIDDLE is an invalid request (and the
            // QP is in ERR until it is created again).
            let psn = q6.epsn;
            send(&mut tb, &mut q6, 6, WRITE_MIDDLE, mtu, 0, 0, psn, &format!("{ctx}: a MIDDLE first"));
            middles += 1;
        }
        for k in 0..tb.rng.range(4, 12) {
            for (qpn, q) in [(6u64, &mut q6), (7, &mut q7)] {
                // (Every message fits the region: 4 MTUs at most from its first 4 MiB.)
                let va = m.va + tb.rng.range(0, 1 << 22);
                let qmtu = 128u64 << q.mtu_code;
                let psn = q.epsn;
                if let Some((_, rem)) = q.open {
                    let (op, plen) = if rem > qmtu { (WRITE_MIDDLE, qmtu) } else { (WRITE_LAST, rem) };
                    send(&mut tb, q, qpn, op, plen, 0, 0, psn, &ctx);
                    continue;
                }
                match tb.rng.range(0, 5) {
                    0 => {
                        // A message of 2..4 packets, its FIRST now.
                        let total = qmtu * tb.rng.range(1, 3) + tb.rng.range(1, qmtu);
                        send(&mut tb, q, qpn, WRITE_FIRST, qmtu, total, va, psn, &ctx);
                    }
                    1 if qpn == 6 && k > 2 && tb.rng.chance(1, 4) => {
                        // A region overrun: NAK remote access error, the QP in ERR.
                        send(&mut tb, q, qpn, WRITE_ONLY, 64, 64, m.va + m.length - 32, psn, &ctx);
                    }
                    2 if tb.rng.chance(1, 4) => {
                        // A PSN ahead: one sequence-error NAK.
                        let ahead = psn.wrapping_add(tb.rng.range(1, 9) as u32) & 0xFF_FFFF;
                        send(&mut tb, q, qpn, WRITE_ONLY, 64, 64, va, ahead, &ctx);
                    }
                    _ => {
                        let len = tb.rng.range(0, qmtu);
                        send(&mut tb, q, qpn, WRITE_ONLY, len, len, va, psn, &ctx);
                    }
                }
            }
        }
        // A PSN a little behind the expected one (as a late packet of the last life would
        // carry) is a duplicate, never executed.
        if life > 0 {
            let psn = q6.epsn.wrapping_sub(tb.rng.range(1, 100) as u32) & 0xFF_FFFF;
            send(&mut tb, &mut q6, 6, WRITE_ONLY, 64, 64, m.va, psn, &format!("{ctx}: an old PSN"));
        }
        if life % 2 == 1 && q6.open.is_none() && !q6.err {
            // This life ends inside a message: its FIRST is the last packet QP 6 sees.
            let (psn, total) = (q6.epsn, 2 * mtu + 1);
            send(&mut tb, &mut q6, 6, WRITE_FIRST, mtu, total, m.va, psn, &format!("{ctx}: a FIRST last"));
        }
        left_open += usize::from(q6.open.is_some() && !q6.err);
        left_err += usize::from(q6.err);
    }
    assert!(n > 100, "only {n} packets");
    assert!(
        left_open > 0 && left_err > 0 && middles > 0,
        "shapes not reached: {left_open} lives left a message open, {left_err} in ERR, {middles} MIDDLEs first"
    );
    assert!(!q7.err, "QP 7's stream was disturbed (seed {seed:#x})");
}

/// The completer's side of a QP destroyed and created again under the same QPN (the
/// requester's counterpart of `a_recreated_qp_keeps_nothing_of_its_last_connection`). QP 12
/// lives eight times, each life with a new SQ PSN half the PSN space from the last one's:
/// a signaled RDMA WRITE and an RDMA READ of 1..=4 responses over a list of 1..=4 entries are
/// recorded, and the READ's responses come in order. Some lives end with the READ cut short
/// (its first responses scattered: the completer holds a list entry and the bytes used of
/// it), the others complete it. After each re-creation, with the new life's WQEs recorded, a
/// response of the last life's READ comes late: it is dropped (a ghost or a duplicate), writes
/// nothing and completes nothing. The new READ is READ number 0 again: its payload lands from
/// byte 0 of entry 0 of its own list, and both WQEs complete with their own wr_ids,
/// successfully (nothing of the last life's READ progress, retired count or PSNs is kept).
#[test]
fn a_recreated_qp_completes_only_its_new_connections_work() {
    let mut tb = Tb::new(0x2E61_000D);
    let seed = tb.rng.0;
    let (qpn, cqn, mtu) = (12u64, 6u64, 256u64);
    tb.write_cq(cqn, 10, 0x7200_0000);
    let mut sq_psn = tb.rng.u32() & 0xFF_FFFF;
    // The last life's READ and the response it was cut at, if it was.
    let mut cut: Option<ReadRun> = None;
    let (mut cuts, mut late) = (0u64, 0u64);
    for life in 0..8u64 {
        let ctx = format!("life {life} (seed {seed:#x})");
        let mut q = random_qp(&mut tb.rng, 3, 0x7, 5);
        q.mtu_code = 1;
        let mut r = qp_record(&q);
        qp::SEND_CQ.put(&mut r, cqn);
        qp::RECV_CQ.put(&mut r, cqn);
        qp::SQ_PSN.put(&mut r, u64::from(sq_psn));
        if life > 0 {
            // Destroyed (RESET) and created again: the scheduler's consumer index restarts.
            let mut gone = r;
            qp::STATE.put(&mut gone, 0);
            tb.command(1, qpn, &gone);
        }
        tb.command(1, qpn, &r);
        tb.sent[qpn as usize] = 0;
        // The WRITE at the first PSN, then the READ (READ number 0: list 0).
        let n = tb.rng.range(1, 4);
        let entries: Vec<(u64, u64)> =
            (0..n).map(|_| (tb.rng.next_u64() & 0x0000_FFFF_FFFF_FFFF, tb.rng.range(1, 2 * mtu))).collect();
        for (k, e) in entries.iter().enumerate() {
            tb.write_read_list(qpn, 0, k as u64, e.0, e.1 as u32);
        }
        let total: u64 = entries.iter().map(|e| e.1).sum();
        let iova_of: Vec<u64> = entries.iter().flat_map(|e| (0..e.1).map(move |b| e.0 + b)).collect();
        let w = (0xC0DE_0000 + (life << 8), tb.rng.range(0, 1 << 16));
        tb.record_write(qpn, w, sq_psn);
        let mut run = ReadRun {
            qpn,
            mtu,
            wr_id: 0xC0DE_0001 + (life << 8),
            first_psn: (sq_psn + 1) & 0xFF_FFFF,
            npkts: total.div_ceil(mtu),
            total,
            iova_of,
            entries,
            next: 0,
            write_before: Some(w),
            signaled: true,
            gaps: Default::default(),
        };
        tb.record_read(&run);
        if let Some(old) = cut.take() {
            // A late response of the last life's READ, the one it was cut at.
            let d = old.desc(old.next, &mut tb.rng);
            let got = tb.packet_run(&d, &Default::default());
            let lctx = format!("{ctx}: the last life's response {} (PSN {:#x})", old.next, d.psn);
            assert_eq!(got.jobs.len(), 1, "{lctx}: jobs {:x?}", got.jobs);
            assert_eq!(
                (got.jobs[0].kind, got.jobs[0].release, got.jobs[0].start),
                (NONE, d.nbeats, d.start),
                "{lctx}: it writes nothing and frees its beats"
            );
            assert!(got.pulses == ["cnt_drop_psn"] || got.pulses == ["cnt_dup"], "{lctx}: counters {:?}", got.pulses);
            assert!(got.rewinds.is_empty(), "{lctx}: rewinds {:x?}", got.rewinds);
            late += 1;
        }
        // This life's responses: all of them, or (the life ends early) the first few.
        let stop =
            if life < 7 && run.npkts > 1 && tb.rng.chance(1, 2) { tb.rng.range(1, run.npkts - 1) } else { run.npkts };
        while run.next < stop {
            let rctx = format!("{ctx}: response {} of {} ({} B over {:?})", run.next, run.npkts, total, run.entries);
            tb.response_in_order(&mut run, &rctx);
        }
        if stop < run.npkts {
            cuts += 1;
            cut = Some(run);
        }
        // The next life starts half the PSN space away.
        sq_psn = (sq_psn + 0x80_0000 + tb.rng.range(0, 0xFFFF) as u32) & 0xFF_FFFF;
    }
    assert!(
        cuts >= 2 && late >= 2,
        "shapes not reached: {cuts} lives cut short, {late} late responses (seed {seed:#x})"
    );
}
