//! The contract's records as rust-hdl `LogicStruct`s, so RTL code reads fields by name.
//!
//! `#[hdl_gen]` code cannot refer to Rust constants, so the layouts of
//! [`rnic_contract`] are mirrored here field by field (padding named `rsvd*`); the tests at the
//! bottom assert that every field's offset and width equal the contract's, so the two cannot
//! drift. `From<Bits<N>>` impls let RAM words and DMA beats be viewed as records.
use rust_hdl::prelude::*;

/// Declares a record: a `LogicStruct` (fields packed LSB-first in declaration order) plus the
/// `From<Bits<TOTAL>>` view, from one list of `field: width`.
macro_rules! record {
    ($(#[$m:meta])* $name:ident, $total:literal, { $($field:ident : $w:literal),* $(,)? }) => {
        $(#[$m])*
        #[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
        pub struct $name { $(pub $field: Bits<$w>),* }

        const _: () = assert!($total == 0 $(+ $w)*, "declared width differs from the fields' sum");

        impl From<Bits<$total>> for $name {
            fn from(x: Bits<$total>) -> Self {
                let mut off = 0usize;
                $( let $field = x.get_bits::<$w>(off); off += $w; )*
                debug_assert_eq!(off, $total);
                Self { $($field),* }
            }
        }
    };
}

record!(
    /// QP context staging record ([`rnic_contract::qp_context`]), 448 bits.
    QpContextRec, 448, {
        state: 3, init_sq_psn: 1, init_rq_psn: 1, sq_drain: 1, sqd_notify: 1, rsvd0: 1, path_mtu: 3, qp_type: 1, access: 4,
        pd: 24, dest_qpn: 24, sq_psn: 24, timeout: 5, retry_cnt: 3, rq_psn: 24, rnr_retry: 3,
        min_rnr_timer: 5, pkey: 16,
        udp_sport: 16, dest_ip: 32, dest_mac: 48, send_cq: 8, sq_log_size: 4, sq_log_stride: 3, rsvd4: 1,
        sq_base: 64, recv_cq: 8, rq_log_size: 4, rq_log_stride: 3, rsvd5: 1, max_rd_atomic: 8, srqn: 8, use_srq: 1, rsvd6: 7, max_dest_rd_atomic: 8, rsvd7: 16,
        rq_base: 64,
    }
);

record!(
    /// An asynchronous event waiting to be written as an event CQE
    /// ([`crate::event_queue::AsyncEventQueue`]): the QP (or the SRQ of an SRQ limit event),
    /// the event CQ, the WQEs left (an SRQ limit event; 0 otherwise) and the `ibv_event_type`.
    AsyncEventRec, 40, { qpn: 6, rsvd0: 2, cq: 8, left: 16, event_type: 5, rsvd1: 3 }
);

record!(
    /// Receive WQE ([`rnic_contract::recv_wqe`]), 512 bits: one DMA beat.
    RecvWqeRec, 512, {
        wr_id: 64, num_sge: 8, rsvd0: 56, sge0_addr: 64, sge0_length: 32, sge0_lkey: 32,
        rsvd1: 256,
    }
);

record!(
    /// Memory-region key-table entry ([`rnic_contract::mr_entry`]), 256 bits.
    MrEntryRec, 256, {
        valid: 1, rsvd0: 3, access: 4, tag: 8, pd: 24, rsvd1: 24, va: 64, length: 64, iova: 64,
    }
);

record!(
    /// CQ context ([`rnic_contract::cq_context`]), 128 bits.
    CqContextRec, 128, { valid: 1, rsvd0: 7, log_size: 5, rsvd1: 3, vector: 5, rsvd2: 43, base: 64 }
);

record!(
    /// Send WQE ([`rnic_contract::wqe`]), 512 bits: one DMA beat.
    WqeRec, 512, {
        wr_id: 64, opcode: 8, send_flags: 8, num_sge: 8, rsvd0: 8, imm_data: 32,
        remote_addr: 64, rkey: 32, rsvd1: 32, sge0_addr: 64, sge0_length: 32, sge0_lkey: 32,
        compare_add: 64, swap: 64,
    }
);

record!(
    /// The same send WQE as a UD SEND reads it ([`rnic_contract::wqe`]'s `UD_*` fields, in the
    /// bytes an RDMA or atomic WQE uses for its remote address, key and operands; IBTA Vol 1
    /// 9.8): the destination QPN, the Q_Key (bit 31: send the QP's own, 10.2.5), the
    /// destination IPv4 address and MAC.
    UdWqeRec, 512, {
        wr_id: 64, opcode: 8, send_flags: 8, num_sge: 8, rsvd0: 8, imm_data: 32,
        remote_qpn: 24, rsvd1: 8, remote_qkey: 32, dest_ip: 32, rsvd2: 32,
        sge0_addr: 64, sge0_length: 32, sge0_lkey: 32, dest_mac: 48, rsvd3: 16, rsvd4: 64,
    }
);

record!(
    /// An lkey or rkey ([`rnic_contract::mr_entry::key`]), 32 bits: the tag, the key-table
    /// index, and bits above it that a valid key has zero.
    KeyRec, 32, { tag: 8, index: 6, above: 18 }
);

record!(
    /// CQE ([`rnic_contract::cqe`]), 256 bits.
    CqeRec, 256, {
        wr_id: 64, byte_len: 32, imm_data: 32, qp_num: 24, opcode: 8, status: 8, wc_flags: 8,
        rsvd0: 16, src_qp: 24, rsvd2: 32, owner: 1, rsvd1: 7,
    }
);

record!(
    /// The first 88 bytes of a RoCEv2 frame as stored on the wire (byte `k` in bits
    /// `8k+7..8k`): Ethernet (14), IPv4 (20), UDP (8), BTH (12) and 28 bytes of extension
    /// headers (`ext`: a RETH, an AETH, an ImmDt, an AETH + AtomicAckETH or an AtomicETH in its
    /// first bytes, an ImmDt after a RETH in bytes 16..20), then 6 spare bytes.
    /// Multi-byte fields hold their bytes in network order, so a field's value as a number is
    /// byte-swapped: the RTL builds and reads them byte by byte (IBTA Vol 1 9.2-9.3; Annex A17).
    RoceHeader, 704, {
        eth_dst: 48, eth_src: 48, eth_type: 16,
        ip_vihl: 8, ip_tos: 8, ip_len: 16, ip_id: 16, ip_frag: 16, ip_ttl: 8, ip_proto: 8,
        ip_csum: 16, ip_src: 32, ip_dst: 32,
        udp_sport: 16, udp_dport: 16, udp_len: 16, udp_csum: 16,
        bth_opcode: 8, bth_flags: 8, bth_pkey: 16, bth_resv8: 8, bth_dqpn: 24, bth_ackreq: 8,
        bth_psn: 24,
        ext: 224,
        spare: 48,
    }
);

record!(
    /// One packet for the TX assembler (496 bits): a request (from the scheduler), or a READ
    /// response, ATOMIC ACKNOWLEDGE or ACKNOWLEDGE (from
    /// [`crate::response_gen::ResponseGen`]). `pay_skip` is the payload's host address modulo
    /// 64: where the payload starts in its first DMA beat. `ext4` (wire order) is a 4-byte
    /// extension header after the RETH if any: the ImmDt of a `*_WITH_IMMEDIATE` request, or a
    /// READ response's or ATOMIC ACKNOWLEDGE's AETH. `has_atomic_eth`: the extension header is
    /// an AtomicETH (`reth_va`, `reth_rkey`, `at_swap`, `at_cmp`; IBTA Vol 1 9.3.4);
    /// `has_atomic_ack`: an AETH (`ext4`) and an AtomicAckETH (`at_swap`, 9.3.5). `at_*` are
    /// numbers, byte-swapped onto the wire by the assembler. `se`: BTH.SE, the Solicited Event
    /// bit (9.2.3). `rsp_last`: the last packet of a new READ's or atomic's response, of
    /// local QP `rsp_qpn`: when the assembler has sent it, the QP owes one fewer (the
    /// responder's `max_dest_rd_atomic` count and the order of its ACKs behind responses).
    /// `has_deth`: a UD SEND (IBTA Vol 1 9.8): a DETH with Q_Key `reth_rkey` and source QP
    /// `rsp_qpn` (9.3.3), then the ImmDt if `has_ext4`; once its payload has gone, the
    /// assembler reports `{rsp_qpn, psn}` so the QP's completer retires the WQE (a UD SEND
    /// completes when it is sent, not on an ACK). `drop_ok`: a request packet of an RC QP,
    /// which the assembler drops instead of sending if the QP went back N since it was queued
    /// (`epoch`, the QP's rewind count mod 2 then, differs from the scheduler's now): the
    /// rewind resends it.
    TxJob, 496, {
        opcode: 8, ackreq: 1, has_reth: 1, has_ext4: 1, has_atomic_eth: 1, has_atomic_ack: 1,
        se: 1, rsp_last: 1, has_deth: 1, psn: 24, dest_qpn: 24, pkey: 16,
        udp_sport: 16, dest_ip: 32, dest_mac: 48, reth_va: 64, reth_rkey: 32, reth_len: 32,
        plen: 13, pay_skip: 6, drop_ok: 1, epoch: 1, rsvd1: 3, ext4: 32, at_swap: 64, at_cmp: 64, rsp_qpn: 6, rsvd2: 2,
    }
);

record!(
    /// An ACK or NAK the responder asks the TX side to send (256 bits): the peer's addresses
    /// from the QP context, the PSN acknowledged and the AETH (IBTA Vol 1 9.7.5). `prompt`:
    /// not to be held back for coalescing (a SEND's: the requester keeps few SENDs in flight,
    /// see [`crate::ack_coalescer`]).
    AckJob, 256, {
        dest_mac: 48, dest_ip: 32, udp_sport: 16, pkey: 16, dest_qpn: 24, psn: 24,
        syndrome: 8, msn: 24, prompt: 1, rsvd: 63,
    }
);

record!(
    /// A WQE the requester has sent and the completer must retire, kept per QP in
    /// the in-flight table at slot `sq_index mod 2^LOG_MAX_INFLIGHT_WQES` (224 bits). For an RDMA
    /// READ, `local_iova` is where its response payload goes (the local SGE, translated and
    /// checked for LOCAL_WRITE when the WQE was sent); with `rd_list` set the READ has several
    /// local SGEs instead, kept translated in the RX engine's READ list table for its QP.
    InflightRec, 224, {
        wr_id: 64, byte_len: 32, last_psn: 24, signaled: 1, rd_list: 1, rsvd: 6, first_psn: 24,
        wc_opcode: 8, local_iova: 64,
    }
);

record!(
    /// A WQE that failed before reaching the wire; the completer writes its error CQE in SQ
    /// order (128 bits). `fatal`: the WQE could not be read (its DMA read was answered with an
    /// error): the QP's error is a local work queue catastrophic error (QP_FATAL).
    LocalCompletion, 128, { wr_id: 64, qpn: 8, status: 8, wc_opcode: 8, fatal: 1, rsvd: 39 }
);

record!(
    /// An RDMA READ the responder accepted (or replays), for the TX side to answer with READ
    /// RESPONSE packets (360 bits): the requester's addresses from the QP context, the first
    /// response PSN, the MSN for the AETH, the translated local address and length (IBTA Vol 1
    /// 9.7.4.1.4, 9.5). With `atomic` set it is instead an ATOMIC ACKNOWLEDGE to send (one
    /// packet, AETH + AtomicAckETH carrying `orig`, the original remote value; 9.5.3, 9.7.4.1.5).
    /// With `ack` set it is instead an ACKNOWLEDGE (AETH only) for the request at `psn` with the
    /// syndrome in `orig` bits 7:0: an ACK or NAK of a QP that still owes READ responses, sent
    /// behind them so it never overtakes them (IBTA Vol 1 9.7.5.1: responses leave in PSN
    /// order), or the NAK invalid request of a READ beyond `max_dest_rd_atomic`. `fresh`: a new
    /// request, not a replay, counted against `max_dest_rd_atomic` of the local
    /// QP `qpn` until its last packet is sent. `first`/`last`: the place of one packet in its
    /// response, on the jobs [`crate::read_responder::ReadResponder`] hands the packet
    /// generator (one per packet; `len` is then the packet's payload length); 0 on the
    /// responder's jobs.
    ReadRespJob, 360, {
        dest_mac: 48, dest_ip: 32, udp_sport: 16, pkey: 16, dest_qpn: 24, psn: 24, msn: 24,
        path_mtu: 3, atomic: 1, ack: 1, first: 1, last: 1, rsvd0: 1, iova: 64, len: 32, orig: 64, fresh: 1, qpn: 6, rsvd1: 1,
    }
);

record!(
    /// A received packet that passed the ingress checks (416 bits), for the RX engine: where
    /// its beats are in the packet buffer and the header fields it needs. Numbers, not wire
    /// order, except `imm` (the ImmDt's 4 bytes in wire order, as the CQE carries them). An
    /// AtomicETH gives `reth_va`, `reth_rkey`, `at_swap` (Swap or Add Data) and `at_cmp`
    /// (Compare Data); an ATOMIC ACKNOWLEDGE's AtomicAckETH gives `at_swap` (Original Remote
    /// Data). `se`: the BTH's Solicited Event bit (IBTA Vol 1 9.2.3). `ud`: a UD SEND ONLY
    /// (0x64, 0x65 with immediate; IBTA Vol 1 9.8), described as the RC SEND ONLY it resembles
    /// (`opcode` 0x04 / 0x05) with its DETH in `reth_va` (Q_Key bits 63:32, source QP bits
    /// 23:0).
    RxDesc, 417, {
        start: 10, nbeats: 8, opcode: 8, hlen: 7, ackreq: 1, plen: 13, se: 1, dest_qpn: 24,
        psn: 24, reth_va: 64, reth_rkey: 32, reth_len: 32, aeth_syndrome: 8, aeth_msn: 24,
        imm: 32, at_swap: 64, at_cmp: 64, ud: 1,
    }
);

record!(
    /// A job the responder hands [`crate::atomic_unit::AtomicUnit`] (512 bits): `rr`, the
    /// [`ReadRespJob`] to pass on to the READ responder once every write accepted before it is
    /// in host memory (a READ to answer, an ACKNOWLEDGE owed behind responses, a replayed
    /// ATOMIC ACKNOWLEDGE); with `exec`, an atomic to execute first on the 8-byte word at
    /// `rr.iova` (FETCH ADD adding `swp` when `fadd`, else COMPARE SWAP of `cmp` with `swp`;
    /// IBTA Vol 1 9.4.5), its original value then saved in replay slot `slot` of its QP and
    /// sent in the AtomicAckETH. `epoch` is the QP's reset count (mod 2) when the job was
    /// queued, stamped by the unit.
    RespItem, 512, {
        rr: 360, exec: 1, fadd: 1, epoch: 1, slot: 4, rsvd0: 1, cmp: 64, swp: 64, rsvd1: 16,
    }
);

record!(
    /// One unit of work for the RX writer (640 bits), produced in packet order by the RX
    /// engine: `kind` 0 a payload to move from the packet buffer to host memory (`plen` bytes
    /// starting `off` bytes into the packet whose first beat is buffer beat `start`: its
    /// header length, plus the payload bytes earlier jobs of the same packet took when a
    /// receive scatters it over several entries; 0..8191), 1 a CQE to write (`cqe`, 32
    /// bytes), 2 nothing, 3 an 8-byte value to write (`cqe` bits 63..0, little-endian: an
    /// atomic's result); then `release` packet-buffer beats to free (0 on every job of a
    /// packet but its last) and, with `need_ack`, the ACK/NAK to send once every write
    /// before it has been acknowledged by the host. On a CQE: `se`, set by the RX engine, the
    /// CQE completes a received message whose last packet had BTH.SE set (a solicited
    /// completion); `ev`, set by the CQ writer, the CQE raises its CQ's completion event on
    /// interrupt vector `ev_vector` once the host has acknowledged its write. `bar` and `res`
    /// are write barriers for [`crate::atomic_unit::AtomicUnit`]: once the host has
    /// acknowledged every write before the job (and its own), the RX writer pulses `bar_done`
    /// (the barrier of a READ/atomic job the responder queued) or `res_done` (an atomic's
    /// result write is in host memory).
    WriteJob, 640, {
        kind: 2, need_ack: 1, se: 1, ev: 1, bar: 1, start: 10, release: 8, off: 13, res: 1, rsvd1: 2, plen: 13,
        rsvd2: 3, addr: 64, cqe: 256, ack: 256, ev_vector: 5, rsvd3: 3,
    }
);

record!(
    /// The responder's transport state of one QP (the RX engine's `rdyn_ram`, block RAM,
    /// 64 entries; IBTA Vol 1 9.7.5, 9.7.6): the expected PSN `epsn` and the MSN; an open RDMA
    /// WRITE's next address `wr_addr` and bytes left `wr_rem` (`in_write`); a sequence NAK sent
    /// for the current gap (`nak_sent`) and the PSN it named (`last_nak`, if `last_nak_ok`);
    /// an open SEND (`in_send`) with its receive WQE: the RQ consumer index `rq_ci`, scatter
    /// entry `sg_cur`, bytes received `recv_len`, `recv_wr_id` and bytes its entries still
    /// take `tot_rem`; the atomic-replay slot `at_slot`; IBV_EVENT_COMM_EST raised (`ce_done`).
    /// A context command with INIT_RQ_PSN (or in RESET) writes it as zero but `epsn`.
    RespDynRec, 368, {
        epsn: 24, rsvd0: 8, msn: 24, rsvd1: 8, wr_addr: 64, wr_rem: 32, in_write: 1, nak_sent: 1,
        in_send: 1, last_nak_ok: 1, last_nak: 24, rsvd2: 4, rq_ci: 16, sg_cur: 4, rsvd3: 12,
        recv_len: 32, recv_wr_id: 64, at_slot: 4, rsvd4: 4, tot_rem: 36, ce_done: 1, rsvd5: 3,
    }
);

record!(
    /// The completer's state of one QP (the RX engine's `acked_ram`, block RAM, 64 entries;
    /// IBTA Vol 1 9.7.5.1, 9.9): WQEs retired `acked` (mod 2^16), the PSN after the last retired
    /// `acked_psn` and the last PSN acknowledged `ack_hi`; the transport `retries` and
    /// `rnr_cnt` used on the oldest WQE, an RNR wait under way (`rnr_wait`); the QP in the
    /// error state (`qp_err`); READs retired `reads_done` (mod 128) and the next READ
    /// response's PSN `rd_next` (if `rd_valid`); the READ scatter list entry being filled
    /// `rl_k` with `rl_used` bytes of it used; the PSN the READ responses resume from after a
    /// retry, `rd_rs` (if `rd_rs_ok`). A context command with INIT_SQ_PSN writes it as zero but
    /// `acked_psn` (the first PSN) and `ack_hi` (the one before it): nothing sent, all
    /// acknowledged.
    AckedRec, 181, {
        acked: 16, retries: 3, rsvd0: 1, qp_err: 1, rd_valid: 1, rsvd1: 2, reads_done: 7, rsvd2: 1,
        rd_next: 24, rsvd3: 8, acked_psn: 24, rnr_cnt: 3, rnr_wait: 1, rsvd4: 4, rl_k: 4,
        rl_used: 32, rd_rs: 24, rd_rs_ok: 1, ack_hi: 24,
    }
);

record!(
    /// What the ACK timer snoops of [`AckedRec`] as the completer writes it (its `acked_ram`
    /// and `snap_ram`): WQEs retired `acked` (mod 2^16) and the low byte of the last PSN
    /// acknowledged, `ack_hi_lo`, so a READ response that retires nothing yet still counts as
    /// progress (IBTA Vol 1 9.7.6.1.3).
    AckProgressRec, 24, { acked: 16, ack_hi_lo: 8 }
);

record!(
    /// What the requester's scheduler reads of [`AckedRec`] (the RX engine's `acked_tx_ram`,
    /// written with `acked_ram`, read at the scheduler's own address): WQEs retired, READs
    /// retired and the PSN after the last retired WQE.
    AckedTxRec, 48, {
        acked: 16, reads_done: 7, rsvd0: 1, acked_psn: 24,
    }
);

record!(
    /// The requester's send-queue state of one QP, saved as the scheduler steps aside and
    /// reloaded in `TakeQp` (the scheduler's `dyn_ram`, 64 entries; `sent_ram`, the RX
    /// engine's view of it, keeps the same words): the next PSN to send `next_psn` (IBTA Vol 1
    /// 9.7.1), the QP in the error state `err` (its WQEs complete with IBV_WC_WR_FLUSH_ERR),
    /// RDMA READs sent `reads_sent` (mod 128), the SQ consumer index `ci` (the next WQE to
    /// send) and the producer index `pi` saved with it (what a rewind or SQD serves up to). A
    /// context command with INIT_SQ_PSN writes it as zero but `next_psn`.
    SqDynRec, 64, {
        next_psn: 24, err: 1, reads_sent: 7, ci: 16, pi: 16,
    }
);

record!(
    /// A scatter/gather entry as a WQE holds it (`rnic_contract::recv_wqe` and
    /// `rnic_contract::wqe`, SGE `k` at `SGE0_ADDR + 16 k` bytes): the buffer's address, its
    /// length in bytes and its lkey. The RX engine checks a receive WQE's one at a time
    /// (`cur_sge`); the scheduler takes a send WQE's SGE 1 and later from their 16-byte lane
    /// (`ext_lane`).
    SgeRec, 128, {
        addr: 64, length: 32, lkey: 32,
    }
);

record!(
    /// A WQE beat as four 16-byte scatter/gather-entry lanes, each read as an [`SgeRec`]:
    /// - a receive WQE ([`rnic_contract::recv_wqe::sge_offset`]): beat 0's lane 0 holds wr_id
    ///   and num_sge, entry `i` is beat `(i + 1) / 4`, lane `(i + 1) % 4`;
    /// - a send WQE's SGEs after the first ([`rnic_contract::wqe::sge_offset`]): SGE `i ≥ 1` is
    ///   beat `(i + 3) / 4`, lane `(i - 1) % 4`.
    SgeLanesRec, 512, {
        lane0: 128, lane1: 128, lane2: 128, lane3: 128,
    }
);

record!(
    /// An AETH syndrome byte (IBTA Vol 1 9.3.5, Table 43; [`rnic_contract::bth::syndrome`]):
    /// `value` (bits 4..0: the credit count, the RNR NAK timer code or the NAK code) and `kind`
    /// (bits 7..5: ACK 000, RNR NAK 001, NAK 011).
    AethSynRec, 8, {
        value: 5, kind: 3,
    }
);

record!(
    /// A DETH (IBTA Vol 1 9.3.3) as the RX ingress keeps it: its 8 wire bytes read as one
    /// big-endian word (in the packet descriptor's RETH VA field): the source QP, a reserved
    /// byte, the Q_Key.
    DethRec, 64, {
        src_qp: 24, rsvd0: 8, qkey: 32,
    }
);

record!(
    /// An SRQ's limit word ([`rnic_contract::srq_context`] `LIMIT`, `EVENT_CQ`): the limit
    /// (0: disarmed) and the CQ its limit event goes to.
    SrqLimitRec, 24, {
        limit: 16, event_cq: 8,
    }
);

record!(
    /// A scatter entry after its key check, translated: the IOVA the DMA writes to and the
    /// length in bytes. The RX engine's receive-scatter table (`sg_ram`) and the READ lists the
    /// scheduler writes for it (`rdl_ram`, through `rl_wdata`) hold these.
    ScatterEntryRec, 96, {
        iova: 64, length: 32,
    }
);

record!(
    /// The SQ and RQ doorbell word ([`rnic_contract::regs::SQ_DOORBELL`],
    /// [`rnic_contract::regs::RQ_DOORBELL`], fields in [`rnic_contract::regs::doorbell`]): the
    /// producer index `pi` (WQEs posted, mod 2^16) and the QPN, split into the `qpn` bits of the
    /// QPs the NIC holds and the bits above them, `qpn_hi` (nonzero: no QP of this NIC).
    DoorbellRec, 32, { pi: 16, qpn: 6, qpn_hi: 10 }
);

record!(
    /// A go-back-N request from the completer to the scheduler (73 bits; IBTA Vol 1
    /// 9.7.5.1.3, 9.9.2): resend QP `qpn`'s WQE `ci` (its SQ index, mod 2^16), whose first PSN
    /// is `first_psn`, from PSN `restart`. With `flush` the QP entered the error state instead
    /// and its send queue is flushed (the other fields but `qpn` are then not used).
    RewindRec, 73, { qpn: 6, rsvd0: 2, ci: 16, first_psn: 24, restart: 24, flush: 1 }
);

record!(
    /// An RNR wait of one QP in the ACK timer's `rnr_ram` (IBTA Vol 1 9.7.5.2.8): `pending`,
    /// and the cycle it ends (`end`, the timer's 48-bit cycle count).
    RnrWaitRec, 49, { end: 48, pending: 1 }
);

record!(
    /// What the ACK timer tells the completer (8 bits, through the timeout FIFO): QP `qpn`'s
    /// local ACK timeout passed (IBTA Vol 1 9.7.6.1.3), or, with `rnr_end`, its RNR wait ended
    /// and it resends (9.7.5.2.8).
    TimerEventRec, 8, { qpn: 6, rsvd: 1, rnr_end: 1 }
);

/// The classes of a send WQE's opcode (`enum ibv_wr_opcode`, ibv_post_send(3)) the scheduler
/// acts on, decoded as the WQE's first beat arrives and registered with it.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct WqeOpClass {
    /// IBV_WR_SEND or IBV_WR_SEND_WITH_IMM.
    pub send: Bit,
    /// IBV_WR_SEND_WITH_IMM or IBV_WR_RDMA_WRITE_WITH_IMM: the packets carry an ImmDt.
    pub imm: Bit,
    /// IBV_WR_RDMA_READ or an atomic: it counts against `max_rd_atomic`.
    pub read_or_atomic: Bit,
    /// One of the seven opcodes the NIC implements (the lowest of the enum).
    pub implemented: Bit,
    /// IBV_WR_ATOMIC_CMP_AND_SWP or IBV_WR_ATOMIC_FETCH_AND_ADD.
    pub atomic: Bit,
    /// IBV_WR_ATOMIC_FETCH_AND_ADD.
    pub fetch_add: Bit,
}

/// The classes of a received packet's BTH opcode the RX engine acts on (RC, IBTA Vol 1 §9.2,
/// Table 38), decoded once per packet into a register: each field is true for the opcodes
/// named.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct OpClass {
    /// RDMA WRITE FIRST or ONLY (with or without immediate).
    pub write_first: Bit,
    /// RDMA WRITE LAST or ONLY (with or without immediate).
    pub write_last: Bit,
    /// Any RDMA WRITE.
    pub write: Bit,
    /// SEND FIRST or ONLY (with or without immediate).
    pub send_first: Bit,
    /// SEND MIDDLE or LAST (with or without immediate).
    pub send_cont: Bit,
    /// SEND LAST or ONLY (with or without immediate).
    pub send_last: Bit,
    /// RDMA WRITE LAST or ONLY with immediate: it consumes a receive WQE.
    pub write_imm: Bit,
    /// The packet carries an ImmDt.
    pub imm: Bit,
    /// RDMA READ REQUEST.
    pub read_req: Bit,
    /// Any RDMA READ RESPONSE, or ATOMIC ACKNOWLEDGE.
    pub read_resp: Bit,
    /// RDMA READ RESPONSE LAST or ONLY, or ATOMIC ACKNOWLEDGE.
    pub resp_last: Bit,
    /// A RETH or AtomicETH to check: WRITE FIRST/ONLY, READ REQUEST, the atomics.
    pub reth: Bit,
    /// COMPARE SWAP or FETCH ADD.
    pub atomic: Bit,
    /// FETCH ADD.
    pub fetch_add: Bit,
    /// ATOMIC ACKNOWLEDGE.
    pub atomic_ack: Bit,
}

#[cfg(test)]
mod tests {
    use super::*;
    use rnic_contract::{cq_context as cq, cqe, mr_entry as mr, qp_context as qp, recv_wqe, wqe, Field};

    fn check(name: &str, offset: usize, width: usize, f: Field) {
        assert_eq!((offset, width), (f.lsb, f.width), "field {name} drifted from the contract");
    }

    /// `SgeRec`'s fields against a WQE's SGE 0 fields, relative to SGE 0's address.
    fn check_sge(addr: Field, length: Field, lkey: Field) {
        let g = SgeRec::default();
        let rel = |f: Field| Field { lsb: f.lsb - addr.lsb, ..f };
        check("addr", g.get_my_offset_addr(), g.get_my_width_addr(), rel(addr));
        check("length", g.get_my_offset_length(), g.get_my_width_length(), rel(length));
        check("lkey", g.get_my_offset_lkey(), g.get_my_width_lkey(), rel(lkey));
    }

    #[test]
    fn an_sge_record_is_a_receive_wqe_entry() {
        check_sge(recv_wqe::SGE0_ADDR, recv_wqe::SGE0_LENGTH, recv_wqe::SGE0_LKEY);
    }

    #[test]
    fn sge_lanes_are_the_wqe_entries() {
        let l = SgeLanesRec::default();
        let lanes = [
            (l.get_my_offset_lane0(), l.get_my_width_lane0()),
            (l.get_my_offset_lane1(), l.get_my_width_lane1()),
            (l.get_my_offset_lane2(), l.get_my_width_lane2()),
            (l.get_my_offset_lane3(), l.get_my_width_lane3()),
        ];
        let g = SgeRec::default();
        let sge_bits = g.get_my_width_addr() + g.get_my_width_length() + g.get_my_width_lkey();
        // Receive entry i: beat (i + 1) / 4, lane (i + 1) % 4.
        for i in 0..recv_wqe::MAX_SGE {
            let byte = recv_wqe::sge_offset(i);
            assert_eq!(byte / 64, (i + 1) / 4, "receive entry {i}: beat");
            assert_eq!(lanes[(i + 1) % 4], ((byte % 64) * 8, sge_bits), "receive entry {i}: lane");
        }
        // Send SGE i >= 1: beat (i + 3) / 4, lane (i - 1) % 4.
        for i in 1..wqe::MAX_SGE {
            let byte = wqe::sge_offset(i);
            assert_eq!(byte / 64, (i + 3) / 4, "send SGE {i}: beat");
            assert_eq!(lanes[(i - 1) % 4], ((byte % 64) * 8, sge_bits), "send SGE {i}: lane");
        }
    }

    #[test]
    fn an_aeth_syndrome_record_splits_type_and_value() {
        use rnic_contract::bth::syndrome as syn;
        for (byte, kind, value) in [(syn::ACK, 0, 0x1F), (syn::NAK_REM_ACCESS, 3, 2), (syn::RNR_NAK | 14, 1, 14)] {
            let r = AethSynRec::from(Bits::<8>::from(byte as u64));
            assert_eq!((r.kind, r.value), (Bits::<3>::from(kind), Bits::<5>::from(value)), "{byte:#x}");
            assert_eq!(r.kind, Bits::<3>::from((byte >> 5) as u64));
        }
    }

    #[test]
    fn a_deth_record_reads_the_wire_header() {
        // Q_Key 0x11223344, reserved, source QP 0xABCDEF, as on the wire (9.3.3).
        let wire = [0x11, 0x22, 0x33, 0x44, 0x00, 0xAB, 0xCD, 0xEF];
        assert_eq!(wire.len(), rnic_contract::bth::len::DETH);
        let d = DethRec::from(Bits::<64>::from(u64::from_be_bytes(wire)));
        assert_eq!(d.qkey, Bits::<32>::from(0x1122_3344));
        assert_eq!(d.src_qp, Bits::<24>::from(0xAB_CDEF));
    }

    #[test]
    fn an_srq_limit_record_is_the_srq_context_word() {
        use rnic_contract::srq_context as srq;
        let r = SrqLimitRec::default();
        check("limit", r.get_my_offset_limit(), r.get_my_width_limit(), srq::LIMIT);
        check("event_cq", r.get_my_offset_event_cq(), r.get_my_width_event_cq(), srq::EVENT_CQ);
    }

    #[test]
    fn an_sge_record_is_a_send_wqe_entry() {
        check_sge(wqe::SGE0_ADDR, wqe::SGE0_LENGTH, wqe::SGE0_LKEY);
    }

    #[test]
    fn a_doorbell_record_is_the_doorbell_word() {
        use rnic_contract::regs::doorbell;
        let d = DoorbellRec::default();
        assert_eq!((d.get_my_offset_pi(), d.get_my_width_pi()), (0, doorbell::PI_BITS as usize));
        assert_eq!(d.get_my_offset_qpn(), doorbell::QPN_SHIFT as usize);
        assert_eq!(d.get_my_width_qpn() + d.get_my_width_qpn_hi(), 32 - doorbell::QPN_SHIFT as usize);
        let w: DoorbellRec = (doorbell::word(0x2B, 0x1_2345) as u64).to_bits::<32>().into();
        assert_eq!((w.pi, w.qpn, w.qpn_hi), (0x2345u64.to_bits(), 0x2Bu64.to_bits(), 0u64.to_bits()));
        let far: DoorbellRec = (doorbell::word(64, 7) as u64).to_bits::<32>().into();
        assert_eq!((far.qpn, far.qpn_hi), (0u64.to_bits(), 1u64.to_bits()));
    }

    #[test]
    fn records_match_the_contract() {
        let q = QpContextRec::default();
        check("state", q.get_my_offset_state(), q.get_my_width_state(), qp::STATE);
        check("init_sq_psn", q.get_my_offset_init_sq_psn(), q.get_my_width_init_sq_psn(), qp::INIT_SQ_PSN);
        check("init_rq_psn", q.get_my_offset_init_rq_psn(), q.get_my_width_init_rq_psn(), qp::INIT_RQ_PSN);
        check("path_mtu", q.get_my_offset_path_mtu(), q.get_my_width_path_mtu(), qp::PATH_MTU);
        check("qp_type", q.get_my_offset_qp_type(), q.get_my_width_qp_type(), qp::QP_TYPE);
        check("access", q.get_my_offset_access(), q.get_my_width_access(), qp::ACCESS);
        check("pd", q.get_my_offset_pd(), q.get_my_width_pd(), qp::PD);
        check("dest_qpn", q.get_my_offset_dest_qpn(), q.get_my_width_dest_qpn(), qp::DEST_QPN);
        check("sq_psn", q.get_my_offset_sq_psn(), q.get_my_width_sq_psn(), qp::SQ_PSN);
        check("rq_psn", q.get_my_offset_rq_psn(), q.get_my_width_rq_psn(), qp::RQ_PSN);
        check("timeout", q.get_my_offset_timeout(), q.get_my_width_timeout(), qp::TIMEOUT);
        check("retry_cnt", q.get_my_offset_retry_cnt(), q.get_my_width_retry_cnt(), qp::RETRY_CNT);
        check("rnr_retry", q.get_my_offset_rnr_retry(), q.get_my_width_rnr_retry(), qp::RNR_RETRY);
        check("min_rnr_timer", q.get_my_offset_min_rnr_timer(), q.get_my_width_min_rnr_timer(), qp::MIN_RNR_TIMER);
        check("pkey", q.get_my_offset_pkey(), q.get_my_width_pkey(), qp::PKEY);
        check("udp_sport", q.get_my_offset_udp_sport(), q.get_my_width_udp_sport(), qp::UDP_SPORT);
        check("dest_ip", q.get_my_offset_dest_ip(), q.get_my_width_dest_ip(), qp::DEST_IP);
        check("dest_mac", q.get_my_offset_dest_mac(), q.get_my_width_dest_mac(), qp::DEST_MAC);
        check("send_cq", q.get_my_offset_send_cq(), q.get_my_width_send_cq(), qp::SEND_CQ);
        check("sq_log_size", q.get_my_offset_sq_log_size(), q.get_my_width_sq_log_size(), qp::SQ_LOG_SIZE);
        check("sq_log_stride", q.get_my_offset_sq_log_stride(), q.get_my_width_sq_log_stride(), qp::SQ_LOG_STRIDE);
        check("sq_base", q.get_my_offset_sq_base(), q.get_my_width_sq_base(), qp::SQ_BASE);
        check("recv_cq", q.get_my_offset_recv_cq(), q.get_my_width_recv_cq(), qp::RECV_CQ);
        check("rq_log_size", q.get_my_offset_rq_log_size(), q.get_my_width_rq_log_size(), qp::RQ_LOG_SIZE);
        check("rq_log_stride", q.get_my_offset_rq_log_stride(), q.get_my_width_rq_log_stride(), qp::RQ_LOG_STRIDE);
        check("rq_base", q.get_my_offset_rq_base(), q.get_my_width_rq_base(), qp::RQ_BASE);
        check("max_rd_atomic", q.get_my_offset_max_rd_atomic(), q.get_my_width_max_rd_atomic(), qp::MAX_RD_ATOMIC);
        check("srqn", q.get_my_offset_srqn(), q.get_my_width_srqn(), qp::SRQN);
        check("sq_drain", q.get_my_offset_sq_drain(), q.get_my_width_sq_drain(), qp::SQ_DRAIN);
        check("sqd_notify", q.get_my_offset_sqd_notify(), q.get_my_width_sqd_notify(), qp::SQD_NOTIFY);
        check("use_srq", q.get_my_offset_use_srq(), q.get_my_width_use_srq(), qp::USE_SRQ);
        check(
            "max_dest_rd_atomic",
            q.get_my_offset_max_dest_rd_atomic(),
            q.get_my_width_max_dest_rd_atomic(),
            qp::MAX_DEST_RD_ATOMIC,
        );
        let r = RecvWqeRec::default();
        check("wr_id", r.get_my_offset_wr_id(), r.get_my_width_wr_id(), recv_wqe::WR_ID);
        check("num_sge", r.get_my_offset_num_sge(), r.get_my_width_num_sge(), recv_wqe::NUM_SGE);
        check("sge0_addr", r.get_my_offset_sge0_addr(), r.get_my_width_sge0_addr(), recv_wqe::SGE0_ADDR);
        check("sge0_length", r.get_my_offset_sge0_length(), r.get_my_width_sge0_length(), recv_wqe::SGE0_LENGTH);
        check("sge0_lkey", r.get_my_offset_sge0_lkey(), r.get_my_width_sge0_lkey(), recv_wqe::SGE0_LKEY);

        let m = MrEntryRec::default();
        check("valid", m.get_my_offset_valid(), m.get_my_width_valid(), mr::VALID);
        check("access", m.get_my_offset_access(), m.get_my_width_access(), mr::ACCESS);
        check("tag", m.get_my_offset_tag(), m.get_my_width_tag(), mr::TAG);
        check("pd", m.get_my_offset_pd(), m.get_my_width_pd(), mr::PD);
        check("va", m.get_my_offset_va(), m.get_my_width_va(), mr::VA);
        check("length", m.get_my_offset_length(), m.get_my_width_length(), mr::LENGTH);
        check("iova", m.get_my_offset_iova(), m.get_my_width_iova(), mr::IOVA);

        let c = CqContextRec::default();
        check("valid", c.get_my_offset_valid(), c.get_my_width_valid(), cq::VALID);
        check("log_size", c.get_my_offset_log_size(), c.get_my_width_log_size(), cq::LOG_SIZE);
        check("vector", c.get_my_offset_vector(), c.get_my_width_vector(), cq::VECTOR);
        check("base", c.get_my_offset_base(), c.get_my_width_base(), cq::BASE);

        let w = WqeRec::default();
        check("wr_id", w.get_my_offset_wr_id(), w.get_my_width_wr_id(), wqe::WR_ID);
        check("opcode", w.get_my_offset_opcode(), w.get_my_width_opcode(), wqe::OPCODE);
        check("send_flags", w.get_my_offset_send_flags(), w.get_my_width_send_flags(), wqe::SEND_FLAGS);
        check("num_sge", w.get_my_offset_num_sge(), w.get_my_width_num_sge(), wqe::NUM_SGE);
        check("imm_data", w.get_my_offset_imm_data(), w.get_my_width_imm_data(), wqe::IMM_DATA);
        check("remote_addr", w.get_my_offset_remote_addr(), w.get_my_width_remote_addr(), wqe::REMOTE_ADDR);
        check("rkey", w.get_my_offset_rkey(), w.get_my_width_rkey(), wqe::RKEY);
        check("sge0_addr", w.get_my_offset_sge0_addr(), w.get_my_width_sge0_addr(), wqe::SGE0_ADDR);
        check("sge0_length", w.get_my_offset_sge0_length(), w.get_my_width_sge0_length(), wqe::SGE0_LENGTH);
        check("sge0_lkey", w.get_my_offset_sge0_lkey(), w.get_my_width_sge0_lkey(), wqe::SGE0_LKEY);
        check("compare_add", w.get_my_offset_compare_add(), w.get_my_width_compare_add(), wqe::COMPARE_ADD);
        check("swap", w.get_my_offset_swap(), w.get_my_width_swap(), wqe::SWAP);

        let u = UdWqeRec::default();
        check("wr_id", u.get_my_offset_wr_id(), u.get_my_width_wr_id(), wqe::WR_ID);
        check("opcode", u.get_my_offset_opcode(), u.get_my_width_opcode(), wqe::OPCODE);
        check("imm_data", u.get_my_offset_imm_data(), u.get_my_width_imm_data(), wqe::IMM_DATA);
        check("remote_qpn", u.get_my_offset_remote_qpn(), u.get_my_width_remote_qpn(), wqe::UD_REMOTE_QPN);
        check("remote_qkey", u.get_my_offset_remote_qkey(), u.get_my_width_remote_qkey(), wqe::UD_REMOTE_QKEY);
        check("dest_ip", u.get_my_offset_dest_ip(), u.get_my_width_dest_ip(), wqe::UD_DEST_IP);
        check("dest_mac", u.get_my_offset_dest_mac(), u.get_my_width_dest_mac(), wqe::UD_DEST_MAC);
        check("sge0_lkey", u.get_my_offset_sge0_lkey(), u.get_my_width_sge0_lkey(), wqe::SGE0_LKEY);

        let k = KeyRec::default();
        check("tag", k.get_my_offset_tag(), k.get_my_width_tag(), mr::key::TAG);
        check("index", k.get_my_offset_index(), k.get_my_width_index(), mr::key::INDEX);
        check("above", k.get_my_offset_above(), k.get_my_width_above(), mr::key::ABOVE);

        let e = CqeRec::default();
        check("wr_id", e.get_my_offset_wr_id(), e.get_my_width_wr_id(), cqe::WR_ID);
        check("byte_len", e.get_my_offset_byte_len(), e.get_my_width_byte_len(), cqe::BYTE_LEN);
        check("imm_data", e.get_my_offset_imm_data(), e.get_my_width_imm_data(), cqe::IMM_DATA);
        check("qp_num", e.get_my_offset_qp_num(), e.get_my_width_qp_num(), cqe::QP_NUM);
        check("opcode", e.get_my_offset_opcode(), e.get_my_width_opcode(), cqe::OPCODE);
        check("status", e.get_my_offset_status(), e.get_my_width_status(), cqe::STATUS);
        check("wc_flags", e.get_my_offset_wc_flags(), e.get_my_width_wc_flags(), cqe::WC_FLAGS);
        check("src_qp", e.get_my_offset_src_qp(), e.get_my_width_src_qp(), cqe::SRC_QP);
        check("owner", e.get_my_offset_owner(), e.get_my_width_owner(), cqe::OWNER);

        // Header offsets against the byte positions of PROTOCOL.md's framing.
        use rnic_contract::bth::len;
        let h = RoceHeader::default();
        assert_eq!(h.get_my_offset_ip_vihl(), 8 * len::ETH);
        assert_eq!(h.get_my_offset_udp_sport(), 8 * (len::ETH + len::IPV4));
        assert_eq!(h.get_my_offset_bth_opcode(), 8 * (len::ETH + len::IPV4 + len::UDP));
        assert_eq!(h.get_my_offset_ext(), 8 * len::BASE);
    }

    #[test]
    fn from_bits_reads_the_same_offsets() {
        let mut rec = [0u8; 64];
        wqe::RKEY.put(&mut rec, 0x1234_5678);
        wqe::SGE0_LENGTH.put(&mut rec, 4096);
        let mut bits = Bits::<512>::default();
        for (i, b) in rec.iter().enumerate() {
            bits = bits | (bit_cast::<512, 8>((*b as u64).to_bits()) << (8 * i as u64));
        }
        let w: WqeRec = bits.into();
        assert_eq!(w.rkey, 0x1234_5678_u64.to_bits::<32>());
        assert_eq!(w.sge0_length, 4096_u64.to_bits::<32>());
    }
}
