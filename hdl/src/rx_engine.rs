//! The RX engine: RC responder (RDMA WRITE) and requester completer (ACK/NAK → CQE).
use crate::gearbox::Gearbox;
use crate::records::{
    AckJob, CqContextRec, CqeRec, InflightRec, LocalCompletion, MrEntryRec, QpContextRec, RxDesc,
};
use rust_hdl::prelude::*;

/// Executes received packets in order, one at a time, and writes completions.
///
/// **Responder** (IBTA Vol 1 9.7): for an RDMA WRITE request on a QP in RTR or RTS:
/// - the PSN must equal the expected PSN, else the packet is dropped (`cnt_drop_psn`);
/// - FIRST/ONLY: the RETH's rkey must name a valid key-table entry with the same tag and PD
///   as the QP, the region and the QP must grant REMOTE_WRITE, and `[va, va + len)` must lie
///   inside the region (a zero-length WRITE skips the key check, 9.4.4); MIDDLE/LAST must
///   continue an open message and stay within the length its RETH announced. A violation
///   writes nothing, is counted (`cnt_drop_key` / `cnt_drop_inv_req`) and answered with NAK
///   remote access error / invalid request;
/// - the payload is realigned by a [`Gearbox`] and written in order, one 64-byte AXI beat per
///   cycle with byte strobes, so no byte outside the checked range is touched;
/// - once every write response has returned, an ACK (AETH syndrome 0x1F, the new MSN) is sent
///   for packets with AckReq and for the last packet of a message.
///
/// **Completer**: for an ACK/NAK on a QP in RTS, retires in-flight WQEs in SQ order while
/// their last PSN is covered (24-bit serial comparison, 9.7.5.1.3): successful ones produce a
/// CQE if signaled; a NAK with an error code completes the WQE holding the NAKed PSN with
/// `IBV_WC_REM_INV_REQ_ERR`, `REM_ACCESS_ERR` or `REM_OP_ERR`. Local errors from the
/// scheduler become CQEs the same way. A CQE is one masked AXI write of 32 bytes with the
/// owner bit of [`rnic_contract::cqe::OWNER`].
///
/// Timing: 3 cycles to load contexts, then the payload at one beat per cycle, the write-
/// response latency before the ACK, and 3 cycles of bookkeeping: a 4 KiB packet occupies the
/// engine for about 70 cycles plus one DMA write round trip.
#[derive(LogicBlock)]
pub struct RxEngine {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub desc_empty: Signal<In, Bit>,
    pub desc: Signal<In, RxDesc>,
    pub desc_read: Signal<Out, Bit>,
    pub lc_empty: Signal<In, Bit>,
    pub lc: Signal<In, LocalCompletion>,
    pub lc_read: Signal<Out, Bit>,
    pub buf_raddr: Signal<Out, Bits<8>>,
    pub buf_rdata: Signal<In, Bits<512>>,
    pub rd_ptr: Signal<Out, Bits<9>>,
    pub cmd_fire: Signal<In, Bit>,
    pub cmd_op: Signal<In, Bits<8>>,
    pub cmd_index: Signal<In, Bits<8>>,
    pub cmd_record: Signal<In, Bits<512>>,
    pub cmd_ready: Signal<Out, Bit>,
    pub acked_raddr: Signal<In, Bits<6>>,
    pub acked_rdata: Signal<Out, Bits<16>>,
    pub sent_addr: Signal<Out, Bits<6>>,
    pub sent_data: Signal<In, Bits<16>>,
    pub if_we: Signal<In, Bit>,
    pub if_waddr: Signal<In, Bits<10>>,
    pub if_wdata: Signal<In, InflightRec>,
    pub ack_full: Signal<In, Bit>,
    pub ack_write: Signal<Out, Bit>,
    pub ack: Signal<Out, AckJob>,
    pub awvalid: Signal<Out, Bit>,
    pub awready: Signal<In, Bit>,
    pub awaddr: Signal<Out, Bits<64>>,
    pub wvalid: Signal<Out, Bit>,
    pub wready: Signal<In, Bit>,
    pub wdata: Signal<Out, Bits<512>>,
    pub wstrb: Signal<Out, Bits<64>>,
    pub bvalid: Signal<In, Bit>,
    pub cnt_roce_ok: Signal<Out, Bit>,
    pub cnt_unknown_qp: Signal<Out, Bit>,
    pub cnt_drop_key: Signal<Out, Bit>,
    pub cnt_drop_psn: Signal<Out, Bit>,
    pub cnt_drop_inv_req: Signal<Out, Bit>,
    pub cnt_tx_ack: Signal<Out, Bit>,
    pub cnt_tx_nak: Signal<Out, Bit>,
    pub cnt_rx_ack: Signal<Out, Bit>,
    pub cnt_cqe: Signal<Out, Bit>,
    gb: Gearbox,
    qp_ram: RAM<Bits<320>, 6>,
    mr_ram: RAM<Bits<256>, 6>,
    rdyn_ram: RAM<Bits<192>, 6>,
    acked_ram: RAM<Bits<16>, 6>,
    acked_tx_ram: RAM<Bits<16>, 6>,
    cq_ram: RAM<Bits<128>, 6>,
    cqpi_ram: RAM<Bits<32>, 6>,
    inflight_ram: RAM<Bits<128>, 10>,
    state: DFF<Bits<4>>,
    src_lc: DFF<Bit>,
    pkt: DFF<RxDesc>,
    lcr: DFF<LocalCompletion>,
    qpn: DFF<Bits<6>>,
    qpn_ok: DFF<Bit>,
    ctx: DFF<QpContextRec>,
    epsn: DFF<Bits<24>>,
    msn: DFF<Bits<24>>,
    wr_addr: DFF<Bits<64>>,
    wr_rem: DFF<Bits<32>>,
    in_write: DFF<Bit>,
    acked: DFF<Bits<16>>,
    sent: DFF<Bits<16>>,
    cq: DFF<CqContextRec>,
    cq_pi: DFF<Bits<32>>,
    // Payload write stream.
    w_addr: DFF<Bits<64>>,
    w_rem: DFF<Bits<13>>,
    w_first: DFF<Bit>,
    j_cur: DFF<Bits<8>>,
    out_k: DFF<Bits<8>>,
    out_beats: DFF<Bits<8>>,
    outstanding: DFF<Bits<8>>,
    aw_done: DFF<Bit>,
    w_done: DFF<Bit>,
    // Reply.
    need_ack: DFF<Bit>,
    syndrome: DFF<Bits<8>>,
    ack_psn: DFF<Bits<24>>,
    // Completer.
    status: DFF<Bits<8>>,
    stop_after: DFF<Bit>,
    cqe_wr_id: DFF<Bits<64>>,
    cqe_len: DFF<Bits<32>>,
    rdp: DFF<Bits<9>>,
    // Combinational views.
    qp_now: Signal<Local, QpContextRec>,
    mr_now: Signal<Local, MrEntryRec>,
    rdyn_now: Signal<Local, Bits<192>>,
    cmd_qp: Signal<Local, QpContextRec>,
    entry: Signal<Local, InflightRec>,
    rkey: Signal<Local, Bits<32>>,
    op: Signal<Local, Bits<8>>,
    is_first_or_only: Signal<Local, Bit>,
    is_last_or_only: Signal<Local, Bit>,
    mtu: Signal<Local, Bits<32>>,
    plen32: Signal<Local, Bits<32>>,
    off: Signal<Local, Bits<64>>,
    key_ok: Signal<Local, Bit>,
    bounds_ok: Signal<Local, Bit>,
    seq_ok: Signal<Local, Bit>,
    lead: Signal<Local, Bits<7>>,
    beat_skip: Signal<Local, Bits<7>>,
    beat_len: Signal<Local, Bits<13>>,
    strb_lo: Signal<Local, Bits<64>>,
    beat_fire: Signal<Local, Bit>,
    aw_fire: Signal<Local, Bit>,
    w_fire: Signal<Local, Bit>,
    cover_psn: Signal<Local, Bits<24>>,
    psn_diff: Signal<Local, Bits<24>>,
    nak_code: Signal<Local, Bits<5>>,
    is_nak: Signal<Local, Bit>,
    cqe: Signal<Local, CqeRec>,
    cq_mask: Signal<Local, Bits<32>>,
    cqe_addr: Signal<Local, Bits<64>>,
    zero_cqe: Constant<CqeRec>,
    cqn: Signal<Local, Bits<8>>,
    mr_access: Signal<Local, Bits<4>>,
    qp_access: Signal<Local, Bits<4>>,
    hlen: Signal<Local, Bits<7>>,
    cq_lap: Signal<Local, Bits<32>>,
    aeth_syn: Signal<Local, Bits<8>>,
    lc_qpn: Signal<Local, Bits<8>>,
    desc_qpn: Signal<Local, Bits<24>>,
    beats16: Signal<Local, Bits<16>>,
}

impl Default for RxEngine {
    fn default() -> Self {
        Self {
            clock: Default::default(),
            reset: Default::default(),
            desc_empty: Default::default(),
            desc: Default::default(),
            desc_read: Default::default(),
            lc_empty: Default::default(),
            lc: Default::default(),
            lc_read: Default::default(),
            buf_raddr: Default::default(),
            buf_rdata: Default::default(),
            rd_ptr: Default::default(),
            cmd_fire: Default::default(),
            cmd_op: Default::default(),
            cmd_index: Default::default(),
            cmd_record: Default::default(),
            cmd_ready: Default::default(),
            acked_raddr: Default::default(),
            acked_rdata: Default::default(),
            sent_addr: Default::default(),
            sent_data: Default::default(),
            if_we: Default::default(),
            if_waddr: Default::default(),
            if_wdata: Default::default(),
            ack_full: Default::default(),
            ack_write: Default::default(),
            ack: Default::default(),
            awvalid: Default::default(),
            awready: Default::default(),
            awaddr: Default::default(),
            wvalid: Default::default(),
            wready: Default::default(),
            wdata: Default::default(),
            wstrb: Default::default(),
            bvalid: Default::default(),
            cnt_roce_ok: Default::default(),
            cnt_unknown_qp: Default::default(),
            cnt_drop_key: Default::default(),
            cnt_drop_psn: Default::default(),
            cnt_drop_inv_req: Default::default(),
            cnt_tx_ack: Default::default(),
            cnt_tx_nak: Default::default(),
            cnt_rx_ack: Default::default(),
            cnt_cqe: Default::default(),
            gb: Default::default(),
            qp_ram: Default::default(),
            mr_ram: Default::default(),
            rdyn_ram: Default::default(),
            acked_ram: Default::default(),
            acked_tx_ram: Default::default(),
            cq_ram: Default::default(),
            cqpi_ram: Default::default(),
            inflight_ram: Default::default(),
            state: Default::default(),
            src_lc: Default::default(),
            pkt: Default::default(),
            lcr: Default::default(),
            qpn: Default::default(),
            qpn_ok: Default::default(),
            ctx: Default::default(),
            epsn: Default::default(),
            msn: Default::default(),
            wr_addr: Default::default(),
            wr_rem: Default::default(),
            in_write: Default::default(),
            acked: Default::default(),
            sent: Default::default(),
            cq: Default::default(),
            cq_pi: Default::default(),
            w_addr: Default::default(),
            w_rem: Default::default(),
            w_first: Default::default(),
            j_cur: Default::default(),
            out_k: Default::default(),
            out_beats: Default::default(),
            outstanding: Default::default(),
            aw_done: Default::default(),
            w_done: Default::default(),
            need_ack: Default::default(),
            syndrome: Default::default(),
            ack_psn: Default::default(),
            status: Default::default(),
            stop_after: Default::default(),
            cqe_wr_id: Default::default(),
            cqe_len: Default::default(),
            rdp: Default::default(),
            qp_now: Default::default(),
            mr_now: Default::default(),
            rdyn_now: Default::default(),
            cmd_qp: Default::default(),
            entry: Default::default(),
            rkey: Default::default(),
            op: Default::default(),
            is_first_or_only: Default::default(),
            is_last_or_only: Default::default(),
            mtu: Default::default(),
            plen32: Default::default(),
            off: Default::default(),
            key_ok: Default::default(),
            bounds_ok: Default::default(),
            seq_ok: Default::default(),
            lead: Default::default(),
            beat_skip: Default::default(),
            beat_len: Default::default(),
            strb_lo: Default::default(),
            beat_fire: Default::default(),
            aw_fire: Default::default(),
            w_fire: Default::default(),
            cover_psn: Default::default(),
            psn_diff: Default::default(),
            nak_code: Default::default(),
            is_nak: Default::default(),
            cqe: Default::default(),
            cq_mask: Default::default(),
            cqe_addr: Default::default(),
            zero_cqe: Constant::new(CqeRec::default()),
    cqn: Default::default(),
            mr_access: Default::default(),
            qp_access: Default::default(),
            hlen: Default::default(),
            cq_lap: Default::default(),
            aeth_syn: Default::default(),
            lc_qpn: Default::default(),
            desc_qpn: Default::default(),
            beats16: Default::default(),
                }
    }
}

// States.
// 0 idle, 1 load (address), 2 load (data) + classify, 3 CQ load (address), 4 CQ load (data),
// 5 payload lead chunk, 6 payload stream, 7 payload drain, 8 ACK/NAK push, 9 write back,
// 10 completer wait, 11 completer check, 12 CQE write.

impl Logic for RxEngine {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, state, src_lc, pkt, lcr, qpn, qpn_ok, ctx, epsn, msn, wr_addr, wr_rem,
            in_write, acked, sent, cq, cq_pi, w_addr, w_rem, w_first, j_cur, out_k, out_beats,
            outstanding, aw_done, w_done, need_ack, syndrome, ack_psn, status, stop_after,
            cqe_wr_id, cqe_len, rdp
        );
        clock!(self, clock, gb);
        self.gb.reset.next = self.reset.val();
        self.qp_ram.read_clock.next = self.clock.val();
        self.qp_ram.write_clock.next = self.clock.val();
        self.mr_ram.read_clock.next = self.clock.val();
        self.mr_ram.write_clock.next = self.clock.val();
        self.rdyn_ram.read_clock.next = self.clock.val();
        self.rdyn_ram.write_clock.next = self.clock.val();
        self.acked_ram.read_clock.next = self.clock.val();
        self.acked_ram.write_clock.next = self.clock.val();
        self.acked_tx_ram.read_clock.next = self.clock.val();
        self.acked_tx_ram.write_clock.next = self.clock.val();
        self.cq_ram.read_clock.next = self.clock.val();
        self.cq_ram.write_clock.next = self.clock.val();
        self.cqpi_ram.read_clock.next = self.clock.val();
        self.cqpi_ram.write_clock.next = self.clock.val();
        self.inflight_ram.read_clock.next = self.clock.val();
        self.inflight_ram.write_clock.next = self.clock.val();

        // ---- Table reads follow the registers ----
        self.rkey.next = self.pkt.q.val().reth_rkey;
        self.qp_ram.read_address.next = self.qpn.q.val();
        self.rdyn_ram.read_address.next = self.qpn.q.val();
        self.acked_ram.read_address.next = self.qpn.q.val();
        self.mr_ram.read_address.next = self.rkey.val().get_bits::<6>(8);
        self.sent_addr.next = self.qpn.q.val();
        self.cqn.next = self.ctx.q.val().send_cq;
        self.cq_ram.read_address.next = self.cqn.val().get_bits::<6>(0);
        self.cqpi_ram.read_address.next = self.cqn.val().get_bits::<6>(0);
        self.inflight_ram.read_address.next = bit_cast::<10, 6>(self.qpn.q.val()) << 4
            | bit_cast::<10, 4>(self.acked.q.val().get_bits::<4>(0));
        self.acked_tx_ram.read_address.next = self.acked_raddr.val();
        self.acked_rdata.next = self.acked_tx_ram.read_data.val();
        self.qp_now.next = self.qp_ram.read_data.val().into();
        self.mr_now.next = self.mr_ram.read_data.val().into();
        self.rdyn_now.next = self.rdyn_ram.read_data.val();
        self.entry.next = self.inflight_ram.read_data.val().into();

        // In-flight table: written by the scheduler.
        self.inflight_ram.write_enable.next = self.if_we.val();
        self.inflight_ram.write_address.next = self.if_waddr.val();
        self.inflight_ram.write_data.next = self.if_wdata.val().into();

        // ---- Context commands (tables written in any cycle but write-back) ----
        self.cmd_ready.next = self.state.q.val() != 9;
        self.cmd_qp.next = bit_cast::<320, 512>(self.cmd_record.val()).into();
        self.qp_ram.write_enable.next = self.cmd_fire.val() & (self.cmd_op.val() == 1);
        self.qp_ram.write_address.next = self.cmd_index.val().get_bits::<6>(0);
        self.qp_ram.write_data.next = bit_cast::<320, 512>(self.cmd_record.val());
        self.mr_ram.write_enable.next = self.cmd_fire.val() & (self.cmd_op.val() == 2);
        self.mr_ram.write_address.next = self.cmd_index.val().get_bits::<6>(0);
        self.mr_ram.write_data.next = bit_cast::<256, 512>(self.cmd_record.val());
        self.cq_ram.write_enable.next = self.cmd_fire.val() & (self.cmd_op.val() == 3);
        self.cq_ram.write_address.next = self.cmd_index.val().get_bits::<6>(0);
        self.cq_ram.write_data.next = bit_cast::<128, 512>(self.cmd_record.val());
        self.cqpi_ram.write_enable.next = self.cmd_fire.val() & (self.cmd_op.val() == 3);
        self.cqpi_ram.write_address.next = self.cmd_index.val().get_bits::<6>(0);
        self.cqpi_ram.write_data.next = 0.into();
        self.rdyn_ram.write_enable.next = self.cmd_fire.val()
            & (self.cmd_op.val() == 1)
            & self.cmd_qp.val().init_rq_psn.any();
        self.rdyn_ram.write_address.next = self.cmd_index.val().get_bits::<6>(0);
        self.rdyn_ram.write_data.next = bit_cast::<192, 24>(self.cmd_qp.val().rq_psn);
        self.acked_ram.write_enable.next = self.cmd_fire.val()
            & (self.cmd_op.val() == 1)
            & self.cmd_qp.val().init_sq_psn.any();
        self.acked_ram.write_address.next = self.cmd_index.val().get_bits::<6>(0);
        self.acked_ram.write_data.next = 0.into();

        // ---- Request checks (valid in state 2, when the tables answer) ----
        self.op.next = self.pkt.q.val().opcode;
        self.is_first_or_only.next = (self.op.val() == 0x06) | (self.op.val() == 0x0A);
        self.is_last_or_only.next = (self.op.val() == 0x08) | (self.op.val() == 0x0A);
        self.mtu.next = bit_cast::<32, 8>(128.into()) << bit_cast::<32, 3>(self.qp_now.val().path_mtu);
        self.plen32.next = bit_cast::<32, 13>(self.pkt.q.val().plen);
        self.off.next = self.pkt.q.val().reth_va - self.mr_now.val().va;
        self.mr_access.next = self.mr_now.val().access;
        self.qp_access.next = self.qp_now.val().access;
        self.hlen.next = self.pkt.q.val().hlen;
        self.key_ok.next = self.mr_now.val().valid.any()
            & (self.mr_now.val().tag == self.rkey.val().get_bits::<8>(0))
            & (self.rkey.val().get_bits::<18>(14) == 0)
            & (self.mr_now.val().pd == self.qp_now.val().pd)
            & self.mr_access.val().get_bit(1)
            & self.qp_access.val().get_bit(1);
        self.bounds_ok.next = (self.pkt.q.val().reth_va >= self.mr_now.val().va)
            & (self.off.val() <= self.mr_now.val().length)
            & (bit_cast::<64, 32>(self.pkt.q.val().reth_len)
                <= (self.mr_now.val().length - self.off.val()));
        self.seq_ok.next = false;
        if self.op.val() == 0x0A {
            self.seq_ok.next = !self.rdyn_now.val().get_bit(160)
                & (self.plen32.val() == self.pkt.q.val().reth_len);
        }
        if self.op.val() == 0x06 {
            self.seq_ok.next = !self.rdyn_now.val().get_bit(160)
                & (self.plen32.val() == self.mtu.val())
                & (self.pkt.q.val().reth_len > self.mtu.val());
        }
        if self.op.val() == 0x07 {
            self.seq_ok.next = self.rdyn_now.val().get_bit(160)
                & (self.plen32.val() == self.mtu.val())
                & (self.plen32.val() < self.rdyn_now.val().get_bits::<32>(128));
        }
        if self.op.val() == 0x08 {
            self.seq_ok.next = self.rdyn_now.val().get_bit(160)
                & (self.plen32.val() == self.rdyn_now.val().get_bits::<32>(128));
        }

        // ---- Payload write stream ----
        self.lead.next = bit_cast::<7, 6>(self.w_addr.q.val().get_bits::<6>(0));
        self.beat_skip.next = 0.into();
        if self.w_first.q.val() {
            self.beat_skip.next = bit_cast::<7, 6>(self.hlen.val().get_bits::<6>(0));
        }
        if self.w_rem.q.val() < (64_u64 - bit_cast::<13, 7>(self.beat_skip.val())) {
            self.beat_len.next = self.w_rem.q.val();
        } else {
            self.beat_len.next = 64_u64 - bit_cast::<13, 7>(self.beat_skip.val());
        }
        self.beats16.next = (bit_cast::<16, 7>(self.lead.val())
            + bit_cast::<16, 13>(self.w_rem.q.val())
            + 63)
            >> 6;
        self.gb.in_valid.next = false;
        self.gb.in_data.next = self.buf_rdata.val();
        self.gb.in_skip.next = self.beat_skip.val();
        self.gb.in_len.next = self.beat_len.val().get_bits::<7>(0);
        self.gb.in_last.next = self.w_rem.q.val() == self.beat_len.val();
        self.buf_raddr.next = self.pkt.q.val().start + self.j_cur.q.val();

        // AXI write: payload beats from the gearbox, or one CQE.
        self.strb_lo.next = 0.into();
        if self.out_k.q.val() == 0 {
            self.strb_lo.next = (bit_cast::<64, 1>(1.into()) << bit_cast::<64, 7>(self.lead.val())) - 1;
        }
        self.cq_mask.next = (bit_cast::<32, 1>(1.into()) << bit_cast::<32, 5>(self.cq.q.val().log_size)) - 1;
        self.cqe_addr.next = self.cq.q.val().base
            + (bit_cast::<64, 32>(self.cq_pi.q.val() & self.cq_mask.val()) << 5);
        self.cqe.next = self.zero_cqe.val();
        self.cqe.next.wr_id = self.cqe_wr_id.q.val();
        self.cqe.next.byte_len = self.cqe_len.q.val();
        self.cqe.next.qp_num = bit_cast::<24, 6>(self.qpn.q.val());
        self.cqe.next.opcode = 1.into();
        self.cqe.next.status = self.status.q.val();
        self.cq_lap.next = self.cq_pi.q.val() >> bit_cast::<32, 5>(self.cq.q.val().log_size);
        self.cqe.next.owner = !self.cq_lap.val().get_bits::<1>(0);
        self.awaddr.next = (self.w_addr.q.val() & 0xFFFF_FFFF_FFFF_FFC0_u64)
            + (bit_cast::<64, 8>(self.out_k.q.val()) << 6);
        self.wdata.next = self.gb.out_data.val();
        self.wstrb.next = ((bit_cast::<64, 1>(1.into()) << bit_cast::<64, 7>(self.gb.out_count.val())) - 1)
            & !self.strb_lo.val();
        self.awvalid.next = false;
        self.wvalid.next = false;
        self.gb.out_ready.next = false;
        if (self.state.q.val() == 5) | (self.state.q.val() == 6) | (self.state.q.val() == 7) {
            self.awvalid.next = self.gb.out_valid.val() & !self.aw_done.q.val();
            self.wvalid.next = self.gb.out_valid.val() & !self.w_done.q.val();
        }
        if self.state.q.val() == 12 {
            self.awaddr.next = self.cqe_addr.val() & 0xFFFF_FFFF_FFFF_FFC0_u64;
            self.wdata.next = bit_cast::<512, 256>(self.cqe.val().into());
            self.wstrb.next = 0xFFFF_FFFF_u64.into();
            if self.cqe_addr.val().get_bit(5) {
                self.wdata.next = bit_cast::<512, 256>(self.cqe.val().into()) << 256;
                self.wstrb.next = 0xFFFF_FFFF_0000_0000_u64.into();
            }
            self.awvalid.next = !self.aw_done.q.val();
            self.wvalid.next = !self.w_done.q.val();
        }
        self.aw_fire.next = self.awvalid.val() & self.awready.val();
        self.w_fire.next = self.wvalid.val() & self.wready.val();
        self.beat_fire.next = (self.aw_done.q.val() | self.aw_fire.val())
            & (self.w_done.q.val() | self.w_fire.val())
            & (self.awvalid.val() | self.aw_done.q.val());
        if self.aw_fire.val() {
            self.aw_done.d.next = true;
        }
        if self.w_fire.val() {
            self.w_done.d.next = true;
        }
        if self.beat_fire.val() {
            self.aw_done.d.next = false;
            self.w_done.d.next = false;
        }
        if ((self.state.q.val() == 5) | (self.state.q.val() == 6) | (self.state.q.val() == 7))
            & self.beat_fire.val()
        {
            self.gb.out_ready.next = true;
            self.out_k.d.next = self.out_k.q.val() + 1;
        }
        // Write responses outstanding (payload and CQEs alike).
        if self.beat_fire.val() & !self.bvalid.val() {
            self.outstanding.d.next = self.outstanding.q.val() + 1;
        }
        if !self.beat_fire.val() & self.bvalid.val() {
            self.outstanding.d.next = self.outstanding.q.val() - 1;
        }

        // ---- Completer ----
        self.aeth_syn.next = self.pkt.q.val().aeth_syndrome;
        self.is_nak.next = self.aeth_syn.val().get_bits::<3>(5) == 3;
        self.nak_code.next = self.aeth_syn.val().get_bits::<5>(0);
        self.cover_psn.next = self.pkt.q.val().psn;
        if self.is_nak.val() {
            self.cover_psn.next = self.pkt.q.val().psn - 1;
        }
        self.psn_diff.next = self.cover_psn.val() - self.entry.val().last_psn;

        self.lc_qpn.next = self.lc.val().qpn;
        self.desc_qpn.next = self.desc.val().dest_qpn;

        // ---- Outputs by default ----
        self.desc_read.next = false;
        self.lc_read.next = false;
        self.ack_write.next = false;
        self.ack.next.dest_mac = self.ctx.q.val().dest_mac;
        self.ack.next.dest_ip = self.ctx.q.val().dest_ip;
        self.ack.next.udp_sport = self.ctx.q.val().udp_sport;
        self.ack.next.pkey = self.ctx.q.val().pkey;
        self.ack.next.dest_qpn = self.ctx.q.val().dest_qpn;
        self.ack.next.psn = self.ack_psn.q.val();
        self.ack.next.syndrome = self.syndrome.q.val();
        self.ack.next.msn = self.msn.q.val();
        self.ack.next.rsvd = 0.into();
        self.rd_ptr.next = self.rdp.q.val();
        self.cnt_roce_ok.next = false;
        self.cnt_unknown_qp.next = false;
        self.cnt_drop_key.next = false;
        self.cnt_drop_psn.next = false;
        self.cnt_drop_inv_req.next = false;
        self.cnt_tx_ack.next = false;
        self.cnt_tx_nak.next = false;
        self.cnt_rx_ack.next = false;
        self.cnt_cqe.next = false;

        match self.state.q.val().index() {
            0 => {
                if !self.lc_empty.val() {
                    self.lc_read.next = true;
                    self.src_lc.d.next = true;
                    self.lcr.d.next = self.lc.val();
                    self.qpn.d.next = self.lc_qpn.val().get_bits::<6>(0);
                    self.qpn_ok.d.next = true;
                    self.state.d.next = 1.into();
                } else if !self.desc_empty.val() {
                    self.desc_read.next = true;
                    self.src_lc.d.next = false;
                    self.pkt.d.next = self.desc.val();
                    self.qpn.d.next = self.desc_qpn.val().get_bits::<6>(0);
                    self.qpn_ok.d.next = self.desc_qpn.val().get_bits::<18>(6) == 0;
                    self.state.d.next = 1.into();
                }
            }
            1 => {
                self.state.d.next = 2.into();
            }
            2 => {
                self.ctx.d.next = self.qp_now.val();
                self.epsn.d.next = self.rdyn_now.val().get_bits::<24>(0);
                self.msn.d.next = self.rdyn_now.val().get_bits::<24>(32);
                self.wr_addr.d.next = self.rdyn_now.val().get_bits::<64>(64);
                self.wr_rem.d.next = self.rdyn_now.val().get_bits::<32>(128);
                self.in_write.d.next = self.rdyn_now.val().get_bit(160);
                self.acked.d.next = self.acked_ram.read_data.val();
                self.sent.d.next = self.sent_data.val();
                self.need_ack.d.next = false;
                self.stop_after.d.next = false;
                self.ack_psn.d.next = self.pkt.q.val().psn;
                if self.src_lc.q.val() {
                    self.state.d.next = 3.into();
                } else if !self.qpn_ok.q.val()
                    | !((self.qp_now.val().state == 2) | (self.qp_now.val().state == 3))
                {
                    self.cnt_unknown_qp.next = true;
                    self.state.d.next = 9.into();
                } else if self.op.val() == 0x11 {
                    if self.qp_now.val().state == 3 {
                        self.cnt_rx_ack.next = true;
                        self.state.d.next = 3.into();
                    } else {
                        self.cnt_unknown_qp.next = true;
                        self.state.d.next = 9.into();
                    }
                } else if self.pkt.q.val().psn != self.rdyn_now.val().get_bits::<24>(0) {
                    self.cnt_drop_psn.next = true;
                    self.state.d.next = 9.into();
                } else if self.is_first_or_only.val()
                    & (self.pkt.q.val().reth_len != 0)
                    & !(self.key_ok.val() & self.bounds_ok.val())
                {
                    self.cnt_drop_key.next = true;
                    self.need_ack.d.next = true;
                    self.syndrome.d.next = 0x62.into();
                    self.state.d.next = 8.into();
                } else if !self.seq_ok.val() {
                    self.cnt_drop_inv_req.next = true;
                    self.need_ack.d.next = true;
                    self.syndrome.d.next = 0x61.into();
                    self.state.d.next = 8.into();
                } else {
                    // Accepted: set up the write and the new responder state.
                    self.cnt_roce_ok.next = true;
                    self.syndrome.d.next = 0x1F.into();
                    self.need_ack.d.next = self.pkt.q.val().ackreq.any() | self.is_last_or_only.val();
                    self.epsn.d.next = self.rdyn_now.val().get_bits::<24>(0) + 1;
                    if self.is_last_or_only.val() {
                        self.msn.d.next = self.rdyn_now.val().get_bits::<24>(32) + 1;
                    }
                    self.w_addr.d.next = self.rdyn_now.val().get_bits::<64>(64);
                    self.wr_addr.d.next = self.rdyn_now.val().get_bits::<64>(64) + bit_cast::<64, 32>(self.plen32.val());
                    self.wr_rem.d.next = self.rdyn_now.val().get_bits::<32>(128) - self.plen32.val();
                    if self.is_first_or_only.val() {
                        self.w_addr.d.next = self.mr_now.val().iova + self.off.val();
                        self.wr_addr.d.next = self.mr_now.val().iova + self.off.val() + bit_cast::<64, 32>(self.plen32.val());
                        self.wr_rem.d.next = self.pkt.q.val().reth_len - self.plen32.val();
                    }
                    self.in_write.d.next = !self.is_last_or_only.val();
                    self.w_rem.d.next = self.pkt.q.val().plen;
                    self.w_first.d.next = true;
                    self.j_cur.d.next = bit_cast::<8, 1>(self.hlen.val().get_bits::<1>(6));
                    self.out_k.d.next = 0.into();
                    self.state.d.next = 5.into();
                    if self.pkt.q.val().plen == 0 {
                        self.state.d.next = 7.into();
                    }
                }
            }
            3 => {
                self.state.d.next = 4.into();
            }
            4 => {
                self.cq.d.next = self.cq_ram.read_data.val().into();
                self.cq_pi.d.next = self.cqpi_ram.read_data.val();
                if self.src_lc.q.val() {
                    self.cqe_wr_id.d.next = self.lcr.q.val().wr_id;
                    self.cqe_len.d.next = 0.into();
                    self.status.d.next = self.lcr.q.val().status;
                    self.stop_after.d.next = true;
                    self.state.d.next = 12.into();
                } else {
                    self.state.d.next = 10.into();
                }
            }
            5 => {
                // Lead chunk: zero bytes up to the target's offset in its 64-byte beat.
                self.gb.in_valid.next = true;
                self.gb.in_data.next = 0.into();
                self.gb.in_skip.next = 0.into();
                self.gb.in_len.next = self.lead.val();
                self.gb.in_last.next = false;
                self.out_beats.d.next = self.beats16.val().get_bits::<8>(0);
                if self.gb.in_ready.val() {
                    self.state.d.next = 6.into();
                }
            }
            6 => {
                self.gb.in_valid.next = true;
                if self.gb.in_ready.val() {
                    self.buf_raddr.next = self.pkt.q.val().start + self.j_cur.q.val() + 1;
                    self.j_cur.d.next = self.j_cur.q.val() + 1;
                    self.w_first.d.next = false;
                    self.w_rem.d.next = self.w_rem.q.val() - self.beat_len.val();
                    if self.w_rem.q.val() == self.beat_len.val() {
                        self.state.d.next = 7.into();
                    }
                }
            }
            7 => {
                // Every beat issued and every write response back before the ACK.
                if (self.out_k.q.val() == self.out_beats.q.val())
                    & (self.outstanding.q.val() == 0)
                    & !self.bvalid.val()
                {
                    if self.need_ack.q.val() {
                        self.state.d.next = 8.into();
                    } else {
                        self.state.d.next = 9.into();
                    }
                }
                if self.pkt.q.val().plen == 0 {
                    self.out_beats.d.next = 0.into();
                }
            }
            8 => {
                if !self.ack_full.val() {
                    self.ack_write.next = true;
                    if self.syndrome.q.val() == 0x1F {
                        self.cnt_tx_ack.next = true;
                    } else {
                        self.cnt_tx_nak.next = true;
                    }
                    self.state.d.next = 9.into();
                }
            }
            9 => {
                // Write back transport state; release the packet's buffer space.
                if !self.src_lc.q.val() {
                    self.rdp.d.next = self.rdp.q.val() + bit_cast::<9, 8>(self.pkt.q.val().nbeats);
                }
                self.rdyn_ram.write_enable.next = self.qpn_ok.q.val();
                self.rdyn_ram.write_address.next = self.qpn.q.val();
                self.rdyn_ram.write_data.next = bit_cast::<192, 24>(self.epsn.q.val())
                    | (bit_cast::<192, 24>(self.msn.q.val()) << 32)
                    | (bit_cast::<192, 64>(self.wr_addr.q.val()) << 64)
                    | (bit_cast::<192, 32>(self.wr_rem.q.val()) << 128)
                    | (bit_cast::<192, 1>(self.in_write.q.val().into()) << 160);
                self.acked_ram.write_enable.next = self.qpn_ok.q.val();
                self.acked_ram.write_address.next = self.qpn.q.val();
                self.acked_ram.write_data.next = self.acked.q.val();
                self.cqpi_ram.write_enable.next = true;
                self.cqpi_ram.write_address.next = self.cqn.val().get_bits::<6>(0);
                self.cqpi_ram.write_data.next = self.cq_pi.q.val();
                if !(self.src_lc.q.val() | (self.op.val() == 0x11)) | !self.qpn_ok.q.val() {
                    // Only the completer moves the CQ producer index.
                    self.cqpi_ram.write_enable.next = false;
                }
                self.state.d.next = 0.into();
            }
            10 => {
                // The in-flight entry at `acked` is being read.
                if self.acked.q.val() == self.sent.q.val() {
                    self.state.d.next = 9.into();
                } else {
                    self.state.d.next = 11.into();
                }
            }
            11 => {
                self.cqe_wr_id.d.next = self.entry.val().wr_id;
                self.cqe_len.d.next = self.entry.val().byte_len;
                self.status.d.next = 0.into();
                if self.psn_diff.val().get_bit(23) == false {
                    // Covered: retired successfully.
                    if self.entry.val().signaled.any() {
                        self.state.d.next = 12.into();
                    } else {
                        self.acked.d.next = self.acked.q.val() + 1;
                        self.state.d.next = 10.into();
                    }
                } else if self.is_nak.val() & (self.nak_code.val() != 0) & (self.nak_code.val() < 4) {
                    // The WQE holding the NAKed PSN fails (REM_INV_REQ 9, REM_ACCESS 10, REM_OP 11).
                    self.status.d.next = bit_cast::<8, 5>(self.nak_code.val()) + 8;
                    self.cqe_len.d.next = 0.into();
                    self.stop_after.d.next = true;
                    self.state.d.next = 12.into();
                } else {
                    self.state.d.next = 9.into();
                }
            }
            12 => {
                if self.beat_fire.val() {
                    self.cnt_cqe.next = true;
                    self.cq_pi.d.next = self.cq_pi.q.val() + 1;
                    self.acked.d.next = self.acked.q.val() + 1;
                    if self.stop_after.q.val() {
                        self.state.d.next = 9.into();
                    } else {
                        self.state.d.next = 10.into();
                    }
                }
            }
            _ => {
                self.state.d.next = 0.into();
            }
        }
        self.acked_tx_ram.write_enable.next = self.acked_ram.write_enable.val();
        self.acked_tx_ram.write_address.next = self.acked_ram.write_address.val();
        self.acked_tx_ram.write_data.next = self.acked_ram.write_data.val();
        if self.reset.val() {
            self.state.d.next = 0.into();
            self.outstanding.d.next = 0.into();
            self.aw_done.d.next = false;
            self.w_done.d.next = false;
            self.rdp.d.next = 0.into();
        }
    }
}
