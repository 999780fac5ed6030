//! The NIC top level: standard AXI edges around the RoCEv2 engines.
use crate::ack_coalescer::AckCoalescer;
use crate::ack_timer::AckTimer;
use crate::atomic_unit::AtomicUnit;
use crate::byte_counters::ByteCounters;
use crate::counter_strobes::CounterStrobes;
use crate::cq_writer::CqWriter;
use crate::dma_read::DmaReadIssuer;
use crate::doorbell::SqDoorbells;
use crate::gearbox::Gearbox;
use crate::icrc::IcrcInsert;
use crate::irq::IrqGen;
use crate::numbers::Numbers;
use crate::raw_rx::RawRxQueue;
use crate::raw_tx::RawTxMux;
use crate::read_responder::ReadResponder;
use crate::records::{AckJob, LocalCompletion, ReadRespJob, RewindRec, RxDesc, TimerEventRec, TxJob, WriteJob};
use crate::recv_prefetch::RecvWqePrefetch;
use crate::regs::BarRegs;
use crate::reset_fifo::ResetFifo;
use crate::response_gen::ResponseGen;
use crate::rx_engine::RxEngine;
use crate::rx_ingress::RxIngress;
use crate::rx_writer::RxWriter;
use crate::tx_arbiter::TxArbiter;
use crate::tx_assembler::TxAssembler;
use crate::tx_scheduler::TxScheduler;
use rust_hdl::prelude::*;

/// The NIC core.
///
/// Edges (one clock, `clock`, 250 MHz; `reset` is synchronous, active high):
/// - `s_axil_*`: AXI4-Lite slave, 16-bit byte address, 32-bit data: BAR0 registers
///   ([`rnic_contract::regs`]).
/// - `m_axi_*`: AXI4 master, 64-bit address, 512-bit data, 4-bit IDs: DMA to host memory.
/// - `m_axis_tx_*`: AXI4-Stream master, 512-bit, towards the MAC; `tkeep` marks valid bytes
///   (contiguous from byte 0), `tlast` ends a frame (without FCS).
/// - `s_axis_rx_*`: AXI4-Stream slave from the MAC, no back-pressure (a 100G MAC cannot stall);
///   `tuser` on the last beat flags a frame the MAC found bad (FCS error).
/// - `irq_valid`, `irq_vector` (5 bits), `irq_ready`: MSI-X-style interrupt requests to the
///   PCIe core ([`rnic_contract::regs::irq`]), held until `irq_ready`; one per completion event
///   burst of a vector ([`IrqGen`]).
///
/// Inside: the BAR0 registers; the TX path [`SqDoorbells`] (ready set) → [`TxScheduler`] → job FIFOs →
/// [`DmaReadIssuer`] / [`TxAssembler`] → [`Gearbox`] → [`TxArbiter`] (with ACKs) →
/// [`IcrcInsert`] → MAC; the RX path MAC → [`RxIngress`] (parse, ICRC, packet buffer) →
/// descriptor FIFO → [`RxEngine`] (responder and completer decisions, contexts) → write-job
/// FIFO → [`RxWriter`] (payload and CQE DMA writes, ACKs once written) → ACK FIFO. The AXI
/// read channel carries send WQEs (ID 1) and payload (ID 0) for the TX side and receive WQEs
/// (ID 2) for the responder; the write channel belongs to the
/// RX writer. Completion events: the [`CqWriter`] decides them (CQ arms from BAR0), the
/// [`RxWriter`] releases a CQE's event once the CQE is written, and [`IrqGen`] turns both into
/// interrupt messages.
// The context commands decoded below by literal (WRITE_QP 1; STATE in record bits 2:0, RTS 3,
// RESET 0; SQ_DRAIN bit 5) must be the contract's.
const _: () = assert!(
    rnic_contract::regs::cmd_op::WRITE_QP == 1
        && rnic_contract::qp_context::STATE.lsb == 0
        && rnic_contract::qp_context::SQ_DRAIN.lsb == 5
        && rnic_contract::verbs::qp_state::RTS == 3
        && rnic_contract::verbs::qp_state::RESET == 0
);

#[derive(LogicBlock, Default)]
pub struct NicTop {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    // AXI4-Lite slave (BAR0)
    pub s_axil_awaddr: Signal<In, Bits<16>>,
    pub s_axil_awvalid: Signal<In, Bit>,
    pub s_axil_awready: Signal<Out, Bit>,
    pub s_axil_wdata: Signal<In, Bits<32>>,
    pub s_axil_wstrb: Signal<In, Bits<4>>,
    pub s_axil_wvalid: Signal<In, Bit>,
    pub s_axil_wready: Signal<Out, Bit>,
    pub s_axil_bresp: Signal<Out, Bits<2>>,
    pub s_axil_bvalid: Signal<Out, Bit>,
    pub s_axil_bready: Signal<In, Bit>,
    pub s_axil_araddr: Signal<In, Bits<16>>,
    pub s_axil_arvalid: Signal<In, Bit>,
    pub s_axil_arready: Signal<Out, Bit>,
    pub s_axil_rdata: Signal<Out, Bits<32>>,
    pub s_axil_rresp: Signal<Out, Bits<2>>,
    pub s_axil_rvalid: Signal<Out, Bit>,
    pub s_axil_rready: Signal<In, Bit>,
    // AXI4 master (DMA)
    pub m_axi_awid: Signal<Out, Bits<4>>,
    pub m_axi_awaddr: Signal<Out, Bits<64>>,
    pub m_axi_awlen: Signal<Out, Bits<8>>,
    pub m_axi_awsize: Signal<Out, Bits<3>>,
    pub m_axi_awburst: Signal<Out, Bits<2>>,
    pub m_axi_awvalid: Signal<Out, Bit>,
    pub m_axi_awready: Signal<In, Bit>,
    pub m_axi_wdata: Signal<Out, Bits<512>>,
    pub m_axi_wstrb: Signal<Out, Bits<64>>,
    pub m_axi_wlast: Signal<Out, Bit>,
    pub m_axi_wvalid: Signal<Out, Bit>,
    pub m_axi_wready: Signal<In, Bit>,
    pub m_axi_bid: Signal<In, Bits<4>>,
    pub m_axi_bresp: Signal<In, Bits<2>>,
    pub m_axi_bvalid: Signal<In, Bit>,
    pub m_axi_bready: Signal<Out, Bit>,
    pub m_axi_arid: Signal<Out, Bits<4>>,
    pub m_axi_araddr: Signal<Out, Bits<64>>,
    pub m_axi_arlen: Signal<Out, Bits<8>>,
    pub m_axi_arsize: Signal<Out, Bits<3>>,
    pub m_axi_arburst: Signal<Out, Bits<2>>,
    pub m_axi_arvalid: Signal<Out, Bit>,
    pub m_axi_arready: Signal<In, Bit>,
    pub m_axi_rid: Signal<In, Bits<4>>,
    pub m_axi_rdata: Signal<In, Bits<512>>,
    pub m_axi_rresp: Signal<In, Bits<2>>,
    pub m_axi_rlast: Signal<In, Bit>,
    pub m_axi_rvalid: Signal<In, Bit>,
    pub m_axi_rready: Signal<Out, Bit>,
    // AXI4-Stream TX to the MAC
    pub m_axis_tx_tdata: Signal<Out, Bits<512>>,
    pub m_axis_tx_tkeep: Signal<Out, Bits<64>>,
    pub m_axis_tx_tlast: Signal<Out, Bit>,
    pub m_axis_tx_tvalid: Signal<Out, Bit>,
    pub m_axis_tx_tready: Signal<In, Bit>,
    // AXI4-Stream RX from the MAC
    pub s_axis_rx_tdata: Signal<In, Bits<512>>,
    pub s_axis_rx_tkeep: Signal<In, Bits<64>>,
    pub s_axis_rx_tlast: Signal<In, Bit>,
    pub s_axis_rx_tvalid: Signal<In, Bit>,
    pub s_axis_rx_tuser: Signal<In, Bit>,
    // Interrupts (MSI-X-style, to the PCIe core)
    pub irq_valid: Signal<Out, Bit>,
    pub irq_vector: Signal<Out, Bits<5>>,
    pub irq_ready: Signal<In, Bit>,
    regs: BarRegs,
    irq: IrqGen,
    byte_cnt: ByteCounters,
    doorbells: SqDoorbells,
    txs: TxScheduler,
    /// Packet jobs from the scheduler to the assembler (16 entries). A job waits here while
    /// the 8 packets ahead of it in the assembler wait for their payload reads (64 cycles in
    /// the simulator's model): with 8 entries, 16 packets in flight held 64-byte WRITEs to
    /// one per ~4.4 cycles of DMA latency; with 16 the scheduler is not held (16 on 8 QPs:
    /// 33.6 → 43.0 Mpps; 32 entries, or 16 in the assembler's tag FIFO too, changed nothing).
    job_fifo: ResetFifo<TxJob, 4, 5, 1>,
    rj_fifo: ResetFifo<Bits<80>, 3, 4, 1>,
    /// Payload pieces for the assembler, one per payload read job or inline piece (16 entries).
    pg_fifo: ResetFifo<Bits<21>, 4, 5, 1>,
    /// Inline data for the assembler's inline pieces, 64-byte beats from the scheduler (16
    /// entries; almost full at 12, the margin of the scheduler's registered flag).
    il_fifo: ResetFifo<Bits<512>, 4, 5, 4>,
    rd_issuer: DmaReadIssuer,
    /// The responder's receive WQEs, read ahead between the RX engine and the DMA issuer.
    rqpf: RecvWqePrefetch,
    asm: TxAssembler,
    tx_gb: Gearbox,
    arb: TxArbiter,
    /// The responder's ACKs, coalesced per peer QP on their way to the ACK FIFO.
    ackc: AckCoalescer,
    ack_fifo: ResetFifo<AckJob, 3, 4, 1>,
    icrc: IcrcInsert,
    /// The raw Ethernet path ([`rnic_contract::regs::raw`]): frames the driver sends join
    /// the stream after the ICRC; non-RoCE frames to the port are queued for it.
    raw_tx: RawTxMux,
    raw_rx: RawRxQueue,
    /// The counters' pulses onto their contract indices.
    strobes: CounterStrobes,
    rxi: RxIngress,
    /// Packets accepted by the ingress, one descriptor each (256: as many as the 1024-beat
    /// packet buffer can hold of the shortest packets, 4 beats).
    desc_fifo: ResetFifo<RxDesc, 8, 9, 1>,
    /// UD SENDs the assembler has sent, `qpn | psn << 6` (16 entries): each goes into the
    /// descriptor FIFO as an ACK of that PSN for that QP, with no packet-buffer beats (so the
    /// RX engine knows it from a received one), in a cycle the ingress does not write; the RX
    /// engine's completer then retires the WQE as it retires an acknowledged one. The
    /// assembler takes a job only while this holds fewer than 8 (`ud_room_r`): with at most 8
    /// packets in its tag FIFO, it never overflows.
    ud_fifo: ResetFifo<Bits<30>, 4, 5, 8>,
    ud_room_r: DFF<Bit>,
    ud_take: Signal<Local, Bit>,
    ud_desc: Signal<Local, RxDesc>,
    lc_fifo: ResetFifo<LocalCompletion, 2, 3, 1>,
    /// The completer's go-back-N requests to the scheduler, in two FIFOs: the RX engine
    /// writes the 32-entry `rw_big` (the completer waits when it is full, and with it every
    /// received packet; with only the 4 entries of `rw_fifo`, 16 QPs retrying behind a
    /// wire-bound scheduler kept it full long enough for READ responses to overflow the 64 KiB
    /// receive buffer, random_load seed 2096; with 16, the same seed overflowed again by 47
    /// frames once the responder's receive-WQE prefetch answered in fewer cycles, stop 38),
    /// which moves each entry on, one per cycle, into the 4-entry `rw_fifo` the scheduler
    /// reads (its `empty` flag, a 3-bit compare, feeds the scheduler's decisions within the
    /// 6-LUT-level bound). 64 entries in `rw_big` put its own `full` → write enable at 7
    /// levels. Coalescing a QP's requests would bound them outright.
    rw_big: ResetFifo<RewindRec, 5, 6, 1>,
    rw_fifo: ResetFifo<RewindRec, 2, 3, 1>,
    rr_fifo: ResetFifo<ReadRespJob, 2, 3, 1>,
    /// Orders the responder's READ/atomic jobs behind earlier writes, executes atomics.
    atu: AtomicUnit,
    /// Sequences the responder's jobs into response packets, QPs in turn.
    rrs: ReadResponder,
    /// The responder's packets as transmit jobs, merged with the scheduler's.
    rgen: ResponseGen,
    timer: AckTimer,
    to_fifo: ResetFifo<TimerEventRec, 2, 3, 1>,
    rxe: RxEngine,
    wj_fifo: ResetFifo<WriteJob, 3, 4, 1>,
    cqw: CqWriter,
    rxw: RxWriter,
    cmd_fire: Signal<Local, Bit>,
    db_clear_r: DFF<Bit>,
    db_poke_r: DFF<Bit>,
    /// `rw_big` holds 15 or more requests, a cycle late: the RX engine's `rw_full` (so the
    /// engine's decisions start at a register, not at the FIFO's pointer compare). The engine
    /// may write once more after the flag rises: 16 at most, the FIFO's size.
    rw_af_r: DFF<Bit>,
    /// STATUS, registered; a payload beat taken last cycle; the write-job FIFO had two free
    /// slots last cycle.
    status_r: DFF<Bits<32>>,
    pay_beat_r: DFF<Bit>,
    /// The inline-data FIFO's head beat, registered in front of the assembler (valid, data):
    /// the assembler's payload valid is then a flop for inline pieces too, as `m_axi_rvalid`
    /// is an input for the others (the FIFO's `empty` compare in front of the assembler's
    /// payload logic made 8 LUT levels).
    il_v: DFF<Bit>,
    il_d: DFF<Bits<512>>,
    /// A send-WQE beat (AXI ID 1), its data and its error response, registered on the way
    /// to the scheduler.
    wqe_rv_r: DFF<Bit>,
    wqe_rd_r: DFF<Bits<512>>,
    wqe_re_r: DFF<Bit>,
    il_take: Signal<Local, Bit>,
    il_read: Signal<Local, Bit>,
    wj_room_r: DFF<Bit>,
    ack_cnt_pend: DFF<Bits<2>>,
    nak_cnt_pend: DFF<Bits<2>>,
    ack_cnt_out: Signal<Local, Bit>,
    nak_cnt_out: Signal<Local, Bit>,
    db_clear_qpn_r: DFF<Bits<6>>,
    rid2: Signal<Local, Bits<2>>,
    r_is_wqe: Signal<Local, Bit>,
    r_is_rwqe: Signal<Local, Bit>,
    r_is_at: Signal<Local, Bit>,
    atu_grant: Signal<Local, Bit>,
    tx_frame_done: Signal<Local, Bit>,
    /// The contract's numbers ([`crate::numbers`]).
    nums: Numbers,
}

impl Logic for NicTop {
    #[hdl_gen]
    fn update(&mut self) {
        clock!(
            self, clock, regs, doorbells, txs, job_fifo, rj_fifo, pg_fifo, il_fifo, rd_issuer, rqpf, asm, tx_gb, arb,
            ackc, ack_fifo, icrc, rxi, desc_fifo, ud_fifo, lc_fifo, rw_big, rw_fifo, rr_fifo, atu, rrs, rgen, timer,
            to_fifo, rxe, wj_fifo, cqw, rxw, byte_cnt, irq, raw_tx, raw_rx
        );
        self.wj_fifo.reset.next = self.reset.val();
        self.to_fifo.reset.next = self.reset.val();
        self.rr_fifo.reset.next = self.reset.val();
        self.rw_fifo.reset.next = self.reset.val();
        self.rw_big.reset.next = self.reset.val();
        self.lc_fifo.reset.next = self.reset.val();
        self.ud_fifo.reset.next = self.reset.val();
        self.desc_fifo.reset.next = self.reset.val();
        self.ack_fifo.reset.next = self.reset.val();
        self.pg_fifo.reset.next = self.reset.val();
        self.il_fifo.reset.next = self.reset.val();
        self.rj_fifo.reset.next = self.reset.val();
        self.job_fifo.reset.next = self.reset.val();
        dff_setup!(
            self,
            clock,
            rw_af_r,
            ud_room_r,
            db_clear_r,
            db_poke_r,
            db_clear_qpn_r,
            ack_cnt_pend,
            nak_cnt_pend,
            status_r,
            pay_beat_r,
            wj_room_r,
            il_v,
            il_d,
            wqe_rv_r,
            wqe_rd_r,
            wqe_re_r
        );
        self.regs.reset.next = self.reset.val();
        self.doorbells.reset.next = self.reset.val();
        self.byte_cnt.reset.next = self.reset.val();
        self.txs.reset.next = self.reset.val();
        self.rd_issuer.reset.next = self.reset.val();
        self.rqpf.reset.next = self.reset.val();
        self.asm.reset.next = self.reset.val();
        self.tx_gb.reset.next = self.reset.val();
        self.arb.reset.next = self.reset.val();
        self.icrc.reset.next = self.reset.val();
        self.rxi.reset.next = self.reset.val();
        self.rxe.reset.next = self.reset.val();
        self.rxw.reset.next = self.reset.val();
        self.cqw.reset.next = self.reset.val();
        self.timer.reset.next = self.reset.val();
        self.irq.reset.next = self.reset.val();
        self.raw_tx.reset.next = self.reset.val();
        self.raw_rx.reset.next = self.reset.val();

        // ---- BAR0 ----
        self.regs.awaddr.next = self.s_axil_awaddr.val();
        self.regs.awvalid.next = self.s_axil_awvalid.val();
        self.s_axil_awready.next = self.regs.awready.val();
        self.regs.wdata.next = self.s_axil_wdata.val();
        self.regs.wvalid.next = self.s_axil_wvalid.val();
        self.s_axil_wready.next = self.regs.wready.val();
        self.s_axil_bresp.next = 0.into();
        self.s_axil_bvalid.next = self.regs.bvalid.val();
        self.regs.bready.next = self.s_axil_bready.val();
        self.regs.araddr.next = self.s_axil_araddr.val();
        self.regs.arvalid.next = self.s_axil_arvalid.val();
        self.s_axil_arready.next = self.regs.arready.val();
        self.s_axil_rdata.next = self.regs.rdata.val();
        self.s_axil_rresp.next = 0.into();
        self.s_axil_rvalid.next = self.regs.rvalid.val();
        self.regs.rready.next = self.s_axil_rready.val();
        // SQ doorbells are taken at once (a posted write on PCIe never waits on the transport).
        self.doorbells.db_write.next = self.regs.db_write.val();
        self.doorbells.db_data.next = self.regs.db_data.val();
        self.doorbells.rearm.next = self.txs.rearm.val();
        self.doorbells.rearm_qpn.next = self.txs.rearm_qpn.val();
        // A context command goes to both engines' tables in the same cycle.
        self.cmd_fire.next =
            self.regs.cmd_valid.val() & self.txs.cmd_ready.val() & self.rxe.cmd_ready.val() & self.cqw.cmd_ready.val();
        self.regs.cmd_ready.next = self.txs.cmd_ready.val() & self.rxe.cmd_ready.val() & self.cqw.cmd_ready.val();
        self.cqw.cmd_fire.next = self.cmd_fire.val();
        self.cqw.cmd_op.next = self.regs.cmd_op.val();
        self.cqw.cmd_index.next = self.regs.cmd_index.val();
        self.cqw.cmd_record.next = self.regs.cmd_record.val();
        // CQ arms go to the CQ writer; the events of both sources to the interrupt generator.
        self.cqw.arm_write.next = self.regs.arm_write.val();
        self.cqw.arm_data.next = self.regs.arm_data.val();
        self.regs.arm_ready.next = self.cqw.arm_ready.val();
        self.cqw.ci_write.next = self.regs.ci_write.val();
        self.cqw.ci_data.next = self.regs.ci_data.val();
        self.regs.ci_ready.next = self.cqw.ci_ready.val();
        self.cqw.async_cq.next = self.regs.async_cq.val();
        self.irq.ev0_valid.next = self.cqw.ev_valid.val();
        self.irq.ev0_vector.next = self.cqw.ev_vector.val();
        self.irq.ev1_valid.next = self.rxw.ev_valid.val();
        self.irq.ev1_vector.next = self.rxw.ev_vector.val();
        self.irq.mask.next = self.regs.irq_mask.val();
        self.irq.moderation.next = self.regs.irq_moderation.val();
        self.regs.irq_pending.next = self.irq.pending_out.val();
        self.irq_valid.next = self.irq.irq_valid.val();
        self.irq_vector.next = self.irq.irq_vector.val();
        self.irq.irq_ready.next = self.irq_ready.val();
        self.txs.cmd_fire.next = self.cmd_fire.val();
        self.txs.cmd_valid.next = self.regs.cmd_valid.val();
        self.txs.cmd_op.next = self.regs.cmd_op.val();
        self.txs.cmd_index.next = self.regs.cmd_index.val();
        self.txs.cmd_record.next = self.regs.cmd_record.val();
        self.rxe.cmd_fire.next = self.cmd_fire.val();
        self.rxe.cmd_valid.next = self.regs.cmd_valid.val();
        self.rxe.cmd_op.next = self.regs.cmd_op.val();
        self.rxe.cmd_index.next = self.regs.cmd_index.val();
        self.rxe.cmd_record.next = self.regs.cmd_record.val();
        // A QP context written in RESET (created, reset, destroyed) forgets its doorbells, a
        // cycle later (registered: the command handshake depends on the scheduler).
        self.db_clear_r.d.next = self.cmd_fire.val()
            & (self.regs.cmd_op.val() == self.nums.val().cmd_write_qp)
            & (self.regs.cmd_record.val().get_bits::<3>(0) == self.nums.val().qps_reset);
        self.db_clear_qpn_r.d.next = self.regs.cmd_index.val().get_bits::<6>(0);
        self.doorbells.clear.next = self.db_clear_r.q.val();
        self.doorbells.clear_qpn.next = self.db_clear_qpn_r.q.val();
        // A QP context written in SQD (STATE = RTS with SQ_DRAIN) is offered to the scheduler,
        // which starts the drain even if nothing was rung. (SQD -> RTS is followed by the
        // driver's doorbell, which resumes what was rung while the QP drained; other context
        // writes offer nothing, so they cost the scheduler no cycle.)
        self.db_poke_r.d.next = self.cmd_fire.val()
            & (self.regs.cmd_op.val() == self.nums.val().cmd_write_qp)
            & (self.regs.cmd_record.val().get_bits::<3>(0) == self.nums.val().qps_rts)
            & self.regs.cmd_record.val().get_bit(5);
        self.doorbells.poke.next = self.db_poke_r.q.val();
        self.doorbells.poke_qpn.next = self.db_clear_qpn_r.q.val();

        // ---- TX: scheduler ----
        self.txs.db_empty.next = self.doorbells.empty.val();
        self.txs.db_data.next = self.doorbells.data.val();
        self.doorbells.read.next = self.txs.db_read.val();
        self.txs.db_others.next = self.doorbells.others.val();
        self.rxe.acked_raddr.next = self.txs.acked_addr.val();
        self.txs.acked_data.next = self.rxe.acked_rdata.val();
        self.txs.acked_reads.next = self.rxe.acked_rreads.val();
        self.txs.acked_psn.next = self.rxe.acked_rpsn.val();
        self.txs.sent_addr.next = self.rxe.sent_addr.val();
        self.rxe.sent_data.next = self.txs.sent_data.val();
        self.rd_issuer.wqe_valid.next = self.txs.wqe_ar_valid.val();
        self.rd_issuer.wqe_addr.next = self.txs.wqe_ar_addr.val();
        self.rd_issuer.wqe_len.next = self.txs.wqe_ar_len.val();
        self.rxe.rsp_done.next = self.asm.rsp_done.val();
        self.rxe.rsp_done_qpn.next = self.asm.rsp_done_qpn.val();
        self.rxe.emit_we.next = self.txs.emit_we.val();
        self.rxe.emit_qpn.next = self.txs.emit_qpn.val();
        self.rxe.emit_psn.next = self.txs.emit_psn.val();
        self.rxe.sq_stop.next = self.txs.sq_stop.val();
        self.rxe.sq_stop_qpn.next = self.txs.sq_stop_qpn.val();
        self.txs.wqe_ar_ready.next = self.rd_issuer.wqe_ready.val();
        // Read data by AXI ID. The NIC issues IDs 0..3 only (`DmaReadIssuer`), and RID is the
        // ID of a read it issued (AXI4 A5.3), so two bits tell them apart: fewer LUT inputs on
        // the R channel's paths into the scheduler, the prefetch and the assembler.
        self.rid2.next = self.m_axi_rid.val().get_bits::<2>(0);
        self.r_is_wqe.next = self.rid2.val() == 1;
        // Send-WQE beats (AXI ID 1) reach the scheduler a cycle after they are accepted, from
        // registers: its prefetch-buffer counters then start at flops, not at RVALID/RID
        // (they took 6 or 7 LUT levels from `m_axi_rid`, depending on the run).
        self.wqe_rv_r.d.next = self.m_axi_rvalid.val() & self.r_is_wqe.val();
        self.wqe_rd_r.d.next = self.m_axi_rdata.val();
        self.wqe_re_r.d.next = self.m_axi_rresp.val() != 0;
        if self.reset.val() {
            self.wqe_rv_r.d.next = false;
        }
        self.txs.wqe_r_valid.next = self.wqe_rv_r.q.val();
        // Receive WQEs (AXI ID 2) for the responder; RQ doorbells straight into its table.
        self.r_is_rwqe.next = self.rid2.val() == 2;
        self.rqpf.req_valid.next = self.rxe.rq_ar_valid.val();
        self.rqpf.req_addr.next = self.rxe.rq_ar_addr.val();
        self.rqpf.req_nb.next = bit_cast::<2, 3>(self.rxe.rq_ar_len.val());
        self.rqpf.req_base.next = self.rxe.rq_ar_base.val();
        self.rqpf.req_ci.next = self.rxe.rq_ar_ci.val();
        self.rqpf.req_pi.next = self.rxe.rq_ar_pi.val();
        self.rqpf.req_mask.next = self.rxe.rq_ar_mask.val();
        self.rxe.rq_ar_ready.next = self.rqpf.req_ready.val();
        self.rxe.rq_r_valid.next = self.rqpf.r_valid.val();
        self.rxe.rq_r_data.next = self.rqpf.r_data.val();
        self.rqpf.flush.next = self.cmd_fire.val();
        self.rd_issuer.rq_valid.next = self.rqpf.ar_valid.val();
        self.rd_issuer.rq_addr.next = self.rqpf.ar_addr.val();
        self.rd_issuer.rq_len.next = self.rqpf.ar_len.val();
        self.rqpf.ar_ready.next = self.rd_issuer.rq_ready.val();
        self.rqpf.in_valid.next = self.m_axi_rvalid.val() & self.r_is_rwqe.val();
        self.rqpf.in_data.next = self.m_axi_rdata.val();
        self.rxe.rq_db_write.next = self.regs.rq_db_write.val();
        self.rxe.rq_db_data.next = self.regs.db_data.val();
        self.rxe.async_cq.next = self.regs.async_cq.val();
        self.txs.wqe_r_data.next = self.wqe_rd_r.q.val();
        self.txs.wqe_r_err.next = self.wqe_re_r.q.val();
        // The scheduler's request packets and the responder's response packets share the
        // three FIFOs: the response generator takes a cycle the scheduler leaves free (it
        // claims it a cycle ahead, `job_hold`), and its write flag is a flop.
        self.job_fifo.write.next = self.txs.job_write.val() | self.rgen.write.val();
        self.job_fifo.data_in.next = self.txs.job.val();
        if self.rgen.write.val() {
            self.job_fifo.data_in.next = self.rgen.job.val();
        }
        self.txs.job_afull.next = self.job_fifo.almost_full.val();
        self.rj_fifo.write.next = self.txs.rj_write.val() | self.rgen.rj_write.val();
        self.rj_fifo.data_in.next =
            bit_cast::<80, 64>(self.txs.rj_addr.val()) | (bit_cast::<80, 13>(self.txs.rj_len.val()) << 64);
        self.txs.rj_afull.next = self.rj_fifo.almost_full.val();
        self.pg_fifo.write.next = self.txs.pg_write.val() | self.rgen.rj_write.val();
        self.pg_fifo.data_in.next = self.txs.pg_data.val();
        self.txs.pg_afull.next = self.pg_fifo.almost_full.val();
        self.il_fifo.write.next = self.txs.il_write.val();
        self.il_fifo.data_in.next = self.txs.il_data.val();
        self.txs.il_afull.next = self.il_fifo.almost_full.val();
        if self.rgen.write.val() {
            self.rj_fifo.data_in.next =
                bit_cast::<80, 64>(self.rgen.rj_addr.val()) | (bit_cast::<80, 13>(self.rgen.rj_len.val()) << 64);
            self.pg_fifo.data_in.next = self.rgen.pg_data.val();
        }
        self.rgen.job_afull.next = self.job_fifo.almost_full.val();
        self.rgen.rj_afull.next = self.rj_fifo.almost_full.val();
        self.rgen.pg_afull.next = self.pg_fifo.almost_full.val();
        self.rgen.req_lock.next = self.txs.job_lock.val();
        self.txs.job_hold.next = self.rgen.hold.val();
        self.rxe.if_we.next = self.txs.if_we.val();
        self.rxe.if_waddr.next = self.txs.if_addr.val();
        self.rxe.if_wdata.next = self.txs.if_data.val();
        self.rxe.rl_we.next = self.txs.rl_we.val();
        self.rxe.rl_waddr.next = self.txs.rl_waddr.val();
        self.rxe.rl_wdata.next = self.txs.rl_wdata.val();
        self.lc_fifo.write.next = self.txs.lc_write.val();
        self.lc_fifo.data_in.next = self.txs.lc_data.val();
        self.txs.lc_full.next = self.lc_fifo.full.val();
        self.rw_big.write.next = self.rxe.rw_write.val();
        self.rw_big.data_in.next = self.rxe.rw_data.val();
        self.rw_af_r.d.next = self.rw_big.almost_full.val();
        self.rxe.rw_full.next = self.rw_af_r.q.val();
        self.rw_fifo.data_in.next = self.rw_big.data_out.val();
        self.rw_fifo.write.next = !self.rw_big.empty.val() & !self.rw_fifo.full.val();
        self.rw_big.read.next = !self.rw_big.empty.val() & !self.rw_fifo.full.val();
        self.txs.rw_empty.next = self.rw_fifo.empty.val();
        self.txs.rw_data.next = self.rw_fifo.data_out.val();
        self.rw_fifo.read.next = self.txs.rw_read.val();
        // The responder's READ/atomic jobs wait in the atomic unit for their write barriers.
        self.atu.reset.next = self.reset.val();
        self.atu.in_write.next = self.rxe.rr_write.val();
        self.atu.in_item.next = self.rxe.rr_item.val();
        self.rxe.rr_full.next = self.atu.in_full.val();
        self.atu.bar_done.next = self.rxw.bar_done.val();
        self.atu.res_done.next = self.rxw.res_done.val();
        self.atu.clear.next = self.db_clear_r.q.val();
        self.atu.clear_qpn.next = self.db_clear_qpn_r.q.val();
        self.r_is_at.next = self.rid2.val() == 3;
        self.rd_issuer.at_valid.next = self.atu.ar_valid.val();
        self.rd_issuer.at_addr.next = self.atu.ar_addr.val();
        self.atu.ar_ready.next = self.rd_issuer.at_ready.val();
        self.atu.r_valid.next = self.m_axi_rvalid.val() & self.r_is_at.val();
        self.atu.r_data.next = self.m_axi_rdata.val();
        self.rr_fifo.write.next = self.atu.rr_write.val();
        self.rr_fifo.data_in.next = self.atu.rr_data.val();
        self.atu.rr_full.next = self.rr_fifo.full.val();
        self.rrs.reset.next = self.reset.val();
        self.rrs.in_empty.next = self.rr_fifo.empty.val();
        self.rrs.in_job.next = self.rr_fifo.data_out.val();
        self.rr_fifo.read.next = self.rrs.in_read.val();
        self.rrs.clear.next = self.db_clear_r.q.val();
        self.rrs.clear_qpn.next = self.db_clear_qpn_r.q.val();
        self.rgen.reset.next = self.reset.val();
        self.rgen.in_empty.next = self.rrs.out_empty.val();
        self.rgen.in_job.next = self.rrs.out_job.val();
        self.rrs.out_read.next = self.rgen.in_read.val();
        // Local ACK timeouts.
        self.timer.cmd_fire.next = self.cmd_fire.val();
        self.timer.cmd_op.next = self.regs.cmd_op.val();
        self.timer.cmd_index.next = self.regs.cmd_index.val();
        self.timer.cmd_record.next = self.regs.cmd_record.val();
        self.timer.sent_we.next = self.txs.sent_we.val();
        self.timer.sent_addr.next = self.txs.sent_waddr.val();
        self.timer.sent_data.next = self.txs.sent_wdata.val();
        self.timer.acked_we.next = self.rxe.acked_we.val();
        self.timer.acked_addr.next = self.rxe.acked_waddr.val();
        self.timer.acked_data.next = self.rxe.acked_wdata.val();
        self.to_fifo.write.next = self.timer.to_write.val();
        self.to_fifo.data_in.next = self.timer.to_qpn.val();
        self.timer.to_full.next = self.to_fifo.full.val();
        self.timer.tx_active.next = self.txs.tx_active.val();
        self.timer.rnr_arm.next = self.rxe.rnr_arm.val();
        self.timer.rnr_qpn.next = self.rxe.rnr_qpn.val();
        self.timer.rnr_code.next = self.rxe.rnr_code.val();
        self.timer.tx_qpn.next = self.txs.tx_qpn.val();
        self.timer.rw_set.next = self.rxe.rw_write.val();
        self.timer.rw_set_qpn.next = self.rxe.rw_data.val().qpn;
        self.timer.rw_clr.next = self.txs.rw_read.val();
        self.timer.rw_clr_qpn.next = self.rw_fifo.data_out.val().qpn;
        self.rxe.to_empty.next = self.to_fifo.empty.val();
        self.rxe.to_qpn.next = self.to_fifo.data_out.val();
        self.to_fifo.read.next = self.rxe.to_read.val();

        // ---- TX: DMA reads (AR) and read data (R) ----
        self.rd_issuer.rj_empty.next = self.rj_fifo.empty.val();
        self.rd_issuer.rj_addr.next = self.rj_fifo.data_out.val().get_bits::<64>(0);
        self.rd_issuer.rj_len.next = self.rj_fifo.data_out.val().get_bits::<13>(64);
        self.rj_fifo.read.next = self.rd_issuer.rj_read.val();
        self.m_axi_arvalid.next = self.rd_issuer.arvalid.val();
        self.m_axi_araddr.next = self.rd_issuer.araddr.val();
        self.m_axi_arlen.next = self.rd_issuer.arlen.val();
        self.m_axi_arid.next = self.rd_issuer.arid.val();
        self.m_axi_arsize.next = 6.into();
        self.m_axi_arburst.next = 1.into();
        self.rd_issuer.arready.next = self.m_axi_arready.val();
        self.m_axi_rready.next = self.r_is_wqe.val()
            | self.r_is_rwqe.val()
            | self.r_is_at.val()
            | (self.asm.pay_ready.val() & !self.asm.pay_inline.val());

        // ---- TX: assembly, arbitration, ICRC ----
        self.asm.src_mac.next = self.regs.mac.val();
        self.asm.src_ip.next = self.regs.ip.val();
        self.asm.req_epoch.next = self.txs.req_epoch.val();
        self.asm.job_valid.next = !self.job_fifo.empty.val();
        self.asm.job.next = self.job_fifo.data_out.val();
        self.job_fifo.read.next = self.asm.job_read.val();
        self.asm.pg_empty.next = self.pg_fifo.empty.val();
        self.asm.pg_data.next = self.pg_fifo.data_out.val();
        self.pg_fifo.read.next = self.asm.pg_read.val();
        // An inline piece's beats come from the inline-data FIFO, every other piece's from the
        // DMA read (AXI ID 0); `pay_inline` is a register in the assembler, so the valid is one
        // LUT of five flops and inputs (RVALID, RID[1:0], `pay_inline`, `il_v`).
        self.asm.pay_valid.next = (self.m_axi_rvalid.val() & (self.rid2.val() == 0) & !self.asm.pay_inline.val())
            | (self.asm.pay_inline.val() & self.il_v.q.val());
        self.asm.pay_data.next = self.m_axi_rdata.val();
        // (Through `il_v`/`il_d`: a beat is taken from the register, which the FIFO refills in
        // the same cycle, so inline beats still flow one per cycle.)
        self.il_take.next = self.asm.pay_inline.val() & self.asm.pay_ready.val() & self.il_v.q.val();
        self.il_read.next = !self.il_fifo.empty.val() & (!self.il_v.q.val() | self.il_take.val());
        self.il_fifo.read.next = self.il_read.val();
        self.il_v.d.next = self.il_read.val() | (self.il_v.q.val() & !self.il_take.val());
        if self.il_read.val() {
            self.il_d.d.next = self.il_fifo.data_out.val();
        }
        if self.reset.val() {
            self.il_v.d.next = false;
        }
        if self.asm.pay_inline.val() {
            self.asm.pay_data.next = self.il_d.q.val();
        }
        // Payload beats the assembler took from the DMA read: the DMA read issuer's window of
        // outstanding beats (registered: the count is a cycle late, never low).
        self.pay_beat_r.d.next =
            self.m_axi_rvalid.val() & (self.rid2.val() == 0) & self.asm.pay_ready.val() & !self.asm.pay_inline.val();
        self.rd_issuer.pay_beat.next = self.pay_beat_r.q.val();
        self.tx_gb.in_valid.next = self.asm.g_valid.val();
        self.asm.g_ready.next = self.tx_gb.in_ready.val();
        self.tx_gb.in_data.next = self.asm.g_data.val();
        self.tx_gb.in_skip.next = self.asm.g_skip.val();
        self.tx_gb.in_len.next = self.asm.g_len.val();
        self.tx_gb.in_last.next = self.asm.g_last.val();
        self.arb.src_mac.next = self.regs.mac.val();
        self.arb.src_ip.next = self.regs.ip.val();
        self.arb.req_valid.next = self.tx_gb.out_valid.val();
        self.tx_gb.out_ready.next = self.arb.req_ready.val();
        self.arb.req_data.next = self.tx_gb.out_data.val();
        self.arb.req_count.next = self.tx_gb.out_count.val();
        self.arb.req_last.next = self.tx_gb.out_last.val();
        self.arb.ack_valid.next = !self.ack_fifo.empty.val();
        self.arb.ack.next = self.ack_fifo.data_out.val();
        self.ack_fifo.read.next = self.arb.ack_read.val();
        self.icrc.in_valid.next = self.arb.out_valid.val();
        self.arb.out_ready.next = self.icrc.in_ready.val();
        self.icrc.in_data.next = self.arb.out_data.val();
        self.icrc.in_count.next = self.arb.out_count.val();
        self.icrc.in_last.next = self.arb.out_last.val();
        // Raw frames from BAR0 go out between RoCE frames.
        self.raw_tx.send_valid.next = self.regs.raw_send_valid.val();
        self.regs.raw_send_ready.next = self.raw_tx.send_ready.val();
        self.raw_tx.send_data.next = self.regs.raw_send_data.val();
        self.raw_tx.send_len.next = self.regs.raw_send_len.val();
        self.raw_tx.in_valid.next = self.icrc.out_valid.val();
        self.icrc.out_ready.next = self.raw_tx.in_ready.val();
        self.raw_tx.in_data.next = self.icrc.out_data.val();
        self.raw_tx.in_count.next = self.icrc.out_count.val();
        self.raw_tx.in_last.next = self.icrc.out_last.val();
        self.m_axis_tx_tvalid.next = self.raw_tx.out_valid.val();
        self.m_axis_tx_tdata.next = self.raw_tx.out_data.val();
        self.m_axis_tx_tkeep.next = (bit_cast::<64, 1>(1.into()) << bit_cast::<64, 7>(self.raw_tx.out_count.val())) - 1;
        self.m_axis_tx_tlast.next = self.raw_tx.out_last.val();
        self.raw_tx.out_ready.next = self.m_axis_tx_tready.val();
        self.tx_frame_done.next =
            self.raw_tx.out_valid.val() & self.m_axis_tx_tready.val() & self.raw_tx.out_last.val();

        // ---- RX ----
        self.rxi.tdata.next = self.s_axis_rx_tdata.val();
        self.rxi.tkeep.next = self.s_axis_rx_tkeep.val();
        self.rxi.tlast.next = self.s_axis_rx_tlast.val();
        self.rxi.tvalid.next = self.s_axis_rx_tvalid.val();
        self.rxi.tuser.next = self.s_axis_rx_tuser.val();
        self.raw_rx.tdata.next = self.s_axis_rx_tdata.val();
        self.raw_rx.tkeep.next = self.s_axis_rx_tkeep.val();
        self.raw_rx.tlast.next = self.s_axis_rx_tlast.val();
        self.raw_rx.tvalid.next = self.s_axis_rx_tvalid.val();
        self.raw_rx.tuser.next = self.s_axis_rx_tuser.val();
        self.raw_rx.mac.next = self.regs.mac.val();
        self.raw_rx.pop.next = self.regs.raw_pop.val();
        self.regs.raw_rx_data.next = self.raw_rx.head_data.val();
        self.regs.raw_rx_status.next = bit_cast::<32, 16>(self.raw_rx.taken.val())
            | (bit_cast::<32, 7>(self.raw_rx.head_len.val()) << 16)
            | (bit_cast::<32, 1>(self.raw_rx.head_valid.val().into()) << 31);
        self.rxi.buf_raddr.next = self.rxw.buf_raddr.val();
        self.rxw.buf_rdata.next = self.rxi.buf_rdata.val();
        self.rxi.rd_ptr.next = self.rxw.rd_ptr.val();
        // The ingress's descriptors, and in the cycles it cannot write one, the UD SENDs sent.
        self.ud_fifo.write.next = self.asm.ud_done.val();
        self.ud_fifo.data_in.next =
            bit_cast::<30, 6>(self.asm.ud_done_qpn.val()) | (bit_cast::<30, 24>(self.asm.ud_done_psn.val()) << 6);
        self.ud_room_r.d.next = !self.ud_fifo.almost_full.val();
        self.asm.ud_room.next = self.ud_room_r.q.val();
        self.ud_take.next = !self.rxi.desc_try.val() & !self.ud_fifo.empty.val() & !self.desc_fifo.full.val();
        self.ud_fifo.read.next = self.ud_take.val();
        self.ud_desc.next.start = 0.into();
        self.ud_desc.next.nbeats = 0.into();
        self.ud_desc.next.hlen = 0.into();
        self.ud_desc.next.ackreq = 0.into();
        self.ud_desc.next.plen = 0.into();
        self.ud_desc.next.se = 0.into();
        self.ud_desc.next.reth_va = 0.into();
        self.ud_desc.next.reth_rkey = 0.into();
        self.ud_desc.next.reth_len = 0.into();
        self.ud_desc.next.aeth_msn = 0.into();
        self.ud_desc.next.imm = 0.into();
        self.ud_desc.next.at_swap = 0.into();
        self.ud_desc.next.at_cmp = 0.into();
        self.ud_desc.next.opcode = self.nums.val().op_acknowledge;
        self.ud_desc.next.dest_qpn = bit_cast::<24, 6>(self.ud_fifo.data_out.val().get_bits::<6>(0));
        self.ud_desc.next.psn = self.ud_fifo.data_out.val().get_bits::<24>(6);
        self.ud_desc.next.aeth_syndrome = self.nums.val().syn_ack;
        // (An ACK of our own, not a UD packet: `ud` is the received packet's flag.)
        self.ud_desc.next.ud = 0.into();
        self.desc_fifo.write.next = self.rxi.desc_write.val() | self.ud_take.val();
        self.desc_fifo.data_in.next = self.rxi.desc.val();
        if !self.rxi.desc_try.val() {
            self.desc_fifo.data_in.next = self.ud_desc.val();
        }
        self.rxi.desc_full.next = self.desc_fifo.full.val();
        self.rxe.desc_empty.next = self.desc_fifo.empty.val();
        self.rxe.desc.next = self.desc_fifo.data_out.val();
        self.desc_fifo.read.next = self.rxe.desc_read.val();
        self.rxe.lc_empty.next = self.lc_fifo.empty.val();
        self.rxe.lc.next = self.lc_fifo.data_out.val();
        self.lc_fifo.read.next = self.rxe.lc_read.val();
        // The atomic unit's result jobs take a cycle the RX engine spends in its idle state,
        // where it never writes the FIFO, with at least two free slots a cycle ago (the
        // engine's own registered room check keeps one slot of margin, enough for this push).
        self.wj_room_r.d.next = !self.wj_fifo.almost_full.val();
        self.atu_grant.next = self.atu.job_valid.val() & self.rxe.job_free.val() & self.wj_room_r.q.val();
        self.atu.job_grant.next = self.atu_grant.val();
        self.wj_fifo.write.next = self.rxe.job_write.val() | self.atu_grant.val();
        self.wj_fifo.data_in.next = self.rxe.job.val();
        if self.atu_grant.val() {
            self.wj_fifo.data_in.next = self.atu.job.val();
        }
        self.rxe.job_afull.next = self.wj_fifo.almost_full.val();
        // CQEs are placed in their CQ's ring on the way (the CQ writer owns the CQs).
        self.cqw.in_empty.next = self.wj_fifo.empty.val();
        self.cqw.in_job.next = self.wj_fifo.data_out.val();
        self.wj_fifo.read.next = self.cqw.in_read.val();
        self.rxw.job_empty.next = self.cqw.out_empty.val();
        self.rxw.job.next = self.cqw.out_job.val();
        self.cqw.out_read.next = self.rxw.job_read.val();
        self.ackc.reset.next = self.reset.val();
        self.ackc.in_write.next = self.rxw.ack_write.val();
        self.ackc.in_ack.next = self.rxw.ack.val();
        self.ackc.more.next = self.rxw.ack_more.val();
        self.rxw.ack_full.next = self.ackc.full.val();
        self.ack_fifo.write.next = self.ackc.out_write.val();
        self.ack_fifo.data_in.next = self.ackc.out_ack.val();
        self.ackc.out_full.next = self.ack_fifo.full.val();

        // ---- RX: DMA writes (AW/W/B) ----
        self.m_axi_awid.next = 0.into();
        self.m_axi_awaddr.next = self.rxw.awaddr.val();
        self.m_axi_awlen.next = 0.into();
        self.m_axi_awsize.next = 6.into();
        self.m_axi_awburst.next = 1.into();
        self.m_axi_awvalid.next = self.rxw.awvalid.val();
        self.rxw.awready.next = self.m_axi_awready.val();
        self.m_axi_wdata.next = self.rxw.wdata.val();
        self.m_axi_wstrb.next = self.rxw.wstrb.val();
        self.m_axi_wlast.next = true;
        self.m_axi_wvalid.next = self.rxw.wvalid.val();
        self.rxw.wready.next = self.m_axi_wready.val();
        self.m_axi_bready.next = true;
        self.rxw.bvalid.next = self.m_axi_bvalid.val();

        // ---- Counters ([`rnic_contract::regs::counter`]) ----
        // ACKNOWLEDGEs leave from two places (the RX writer through the coalescer, and the
        // response generator for a QP that owes READ responses); a generator pulse meeting a coalescer
        // pulse waits in a small count.
        self.ack_cnt_out.next = (self.ack_cnt_pend.q.val() != 0) & !self.ackc.cnt_tx_ack.val();
        self.ack_cnt_pend.d.next = self.ack_cnt_pend.q.val() + bit_cast::<2, 1>(self.rgen.cnt_tx_ack.val().into())
            - bit_cast::<2, 1>(self.ack_cnt_out.val().into());
        self.nak_cnt_out.next = (self.nak_cnt_pend.q.val() != 0) & !self.ackc.cnt_tx_nak.val();
        self.nak_cnt_pend.d.next = self.nak_cnt_pend.q.val() + bit_cast::<2, 1>(self.rgen.cnt_tx_nak.val().into())
            - bit_cast::<2, 1>(self.nak_cnt_out.val().into());
        // Each counter's pulse by name; CounterStrobes puts it on its contract index.
        self.strobes.rx_frames.next = self.rxi.cnt_rx_frame.val();
        self.strobes.tx_frames.next = self.tx_frame_done.val();
        self.strobes.rx_roce_ok.next = self.rxe.cnt_roce_ok.val();
        self.strobes.drop_icrc.next = self.rxi.cnt_icrc.val();
        // A frame for the raw queue counts there, not as malformed (the verdicts are aligned).
        self.strobes.drop_malformed.next =
            self.rxi.cnt_malformed.val() & !(self.raw_rx.took.val() | self.raw_rx.cnt_drop.val());
        self.strobes.drop_unknown_qp.next = self.rxe.cnt_unknown_qp.val();
        self.strobes.drop_key.next = self.rxe.cnt_drop_key.val();
        self.strobes.drop_psn.next = self.rxe.cnt_drop_psn.val();
        self.strobes.drop_rx_overflow.next = self.rxi.cnt_overflow.val();
        self.strobes.tx_acks.next = self.ackc.cnt_tx_ack.val() | self.ack_cnt_out.val();
        self.strobes.tx_naks.next = self.ackc.cnt_tx_nak.val() | self.nak_cnt_out.val();
        self.strobes.rx_acks.next = self.rxe.cnt_rx_ack.val();
        self.strobes.cqes.next = self.rxe.cnt_cqe.val();
        self.strobes.tx_requests.next = self.txs.cnt_tx_req.val();
        self.strobes.local_errors.next = self.txs.cnt_local_err.val();
        self.strobes.drop_inv_req.next = self.rxe.cnt_drop_inv_req.val();
        self.strobes.rx_duplicates.next = self.rxe.cnt_dup.val();
        self.strobes.retransmits.next = self.rxe.cnt_retransmit.val();
        self.strobes.timeouts.next = self.rxe.cnt_timeout.val();
        self.strobes.tx_nak_seq.next = self.rxe.cnt_tx_nak_seq.val();
        self.strobes.rx_nak_seq.next = self.rxe.cnt_rx_nak_seq.val();
        self.strobes.rx_nak_inv_req.next = self.rxe.cnt_rx_nak_inv_req.val();
        self.strobes.rx_nak_rem_access.next = self.rxe.cnt_rx_nak_rem_access.val();
        self.strobes.rx_nak_rem_op.next = self.rxe.cnt_rx_nak_rem_op.val();
        self.strobes.tx_rnr_naks.next = self.rxe.cnt_tx_rnr.val();
        self.strobes.rx_rnr_naks.next = self.rxe.cnt_rx_rnr.val();
        self.strobes.drop_no_rwqe.next = self.rxe.cnt_drop_no_rwqe.val();
        self.strobes.drop_raw.next = self.raw_rx.cnt_drop.val();
        self.strobes.drop_cq_overrun.next = self.cqw.cnt_overrun.val();
        self.regs.count_inc.next = self.strobes.inc.val();
        self.byte_cnt.tx_fire.next = self.raw_tx.out_valid.val() & self.m_axis_tx_tready.val();
        self.byte_cnt.tx_count.next = self.raw_tx.out_count.val();
        self.byte_cnt.rx_valid.next = self.s_axis_rx_tvalid.val();
        self.byte_cnt.rx_keep.next = self.s_axis_rx_tkeep.val();
        self.regs.bytes.next = self.byte_cnt.bytes.val();
        // Engine status ([`rnic_contract::regs::STATUS`]), registered: a cycle old when read.
        self.regs.status.next = self.status_r.q.val();
        self.status_r.d.next = bit_cast::<32, 6>(self.rxe.dbg_state.val())
            | (bit_cast::<32, 6>(self.txs.dbg_state.val()) << 8)
            | (bit_cast::<32, 3>(self.cqw.dbg_state.val()) << 16)
            | (bit_cast::<32, 1>(self.wj_fifo.empty.val().into()) << 20)
            | (bit_cast::<32, 1>(self.rr_fifo.full.val().into()) << 21)
            | (bit_cast::<32, 1>(self.desc_fifo.empty.val().into()) << 22)
            | (bit_cast::<32, 1>(self.job_fifo.empty.val().into()) << 23)
            | (bit_cast::<32, 1>(self.rxw.idle.val().into()) << 24)
            | (bit_cast::<32, 1>((self.rw_fifo.empty.val() & self.rw_big.empty.val()).into()) << 25)
            | (bit_cast::<32, 1>((self.ack_fifo.empty.val() & !self.ackc.holding.val()).into()) << 26)
            | (bit_cast::<32, 1>(self.icrc.out_valid.val().into()) << 27);
    }
}
