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
//! - `ud_wqes_become_send_only_with_a_deth`: on UD QPs, SENDs of up to one MTU become one SEND
//!   ONLY each with a DETH (the WQE's Q_Key or, bit 31 set, the QP's; this QP as source),
//!   addressed from the WQE, no AckReq; RDMA WRITE / READ and a SEND over the MTU complete
//!   locally (LOC_QP_OP_ERR, LOC_LEN_ERR) with nothing sent.
//!
//! `RNIC_TB_SEED` (decimal or `0x` hex) replaces every test's seed.
mod harness;
mod tx_scheduler;

use harness::Rng;
use rnic_contract::mr_entry::key;
use rnic_contract::verbs::{send_flags, wc_status, wr_opcode};
use rnic_contract::{wqe, MAX_MSG_SZ};
use tx_scheduler::*;

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
            1 => *bad = Sge { addr: base.va + 8, len: 64, lkey: key::word(50, 0x5C) },
            2 => *bad = Sge { addr: base.va + 8, len: 64, lkey: key::word(51, 0x5C) },
            3 => *bad = Sge { addr: base.va + 8, len: 64, lkey: key::word(52, 0x5C) },
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
        wqes[k - 1].sges[0] = Sge { addr: base.va + 64, len: 32, lkey: key::word(52, 0x5D) };
        let (i0, m0) = &mrs[0];
        let bad = &mut wqes[k].sges[0];
        match vi {
            0 => bad.lkey ^= 1 << tb.rng.range(0, 7),
            1 => *bad = Sge { addr: base.va + 8, len: 64, lkey: key::word(50, 0x5D) },
            2 => *bad = Sge { addr: base.va + 8, len: 64, lkey: key::word(51, 0x5D) },
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
