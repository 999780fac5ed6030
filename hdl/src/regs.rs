//! BAR0: the AXI4-Lite register slave ([`rnic_contract::regs`]).
use rust_hdl::prelude::*;

/// Number of event counters ([`rnic_contract::regs::counter::EVENTS`]); the byte counts
/// after them come in on `bytes`.
pub const NUM_COUNTERS: usize = rnic_contract::regs::counter::EVENTS as usize;

/// The BAR0 register block.
///
/// AXI4-Lite slave with one outstanding read and one outstanding write. A write is accepted when
/// AW and W are both valid (`awready = wready` in that cycle); `bvalid` follows one cycle later,
/// or, for [`rnic_contract::regs::CMD`], once the context command has been accepted by every table
/// (`cmd_ready`), so a later MMIO always sees the command's effect. Reads answer one cycle after
/// AR. Doorbell writes wait (AW/W not ready) while the doorbell FIFO is full. A
/// [`rnic_contract::regs::CQ_ARM`] write is taken into a register and handed to the CQ writer
/// when it can take it (`arm_ready`); like `CMD`, its response waits until then (a few cycles
/// at most), and no other write is taken meanwhile. A [`rnic_contract::regs::CQ_CI`] write
/// is handed over the same way (`ci_write`, `ci_ready`).
///
/// Interrupts: [`rnic_contract::regs::IRQ_MASK`] and [`rnic_contract::regs::IRQ_MODERATION`] are
/// registers here (`irq_mask`, `irq_moderation`, 0 after reset);
/// [`rnic_contract::regs::IRQ_PENDING`] reads `irq_pending`.
///
/// Asynchronous events: [`rnic_contract::regs::ASYNC_EVENT_CQ`] is a register here
/// (`async_cq`: bit 8 the enable, bits 7:0 the CQ number; 0 after reset).
///
/// Counters: bit `i` of `count_inc` adds one to counter `i` (32-bit, wrapping). The pulses are
/// registered first, so a count shows one cycle after its event and no engine's decision logic
/// reaches a counter's adder in the same cycle.
#[derive(LogicBlock)]
pub struct BarRegs {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub awaddr: Signal<In, Bits<16>>,
    pub awvalid: Signal<In, Bit>,
    pub awready: Signal<Out, Bit>,
    pub wdata: Signal<In, Bits<32>>,
    pub wvalid: Signal<In, Bit>,
    pub wready: Signal<Out, Bit>,
    pub bvalid: Signal<Out, Bit>,
    pub bready: Signal<In, Bit>,
    pub araddr: Signal<In, Bits<16>>,
    pub arvalid: Signal<In, Bit>,
    pub arready: Signal<Out, Bit>,
    pub rdata: Signal<Out, Bits<32>>,
    pub rvalid: Signal<Out, Bit>,
    pub rready: Signal<In, Bit>,
    /// Counter increments, one bit per counter.
    pub count_inc: Signal<In, Bits<32>>,
    /// The 64-bit byte counts (TX in bits 63:0, RX in 127:64), read as counters
    /// `TX_BYTES_LO..=RX_BYTES_HI` ([`crate::byte_counters::ByteCounters`]).
    pub bytes: Signal<In, Bits<128>>,
    /// The engine status word ([`rnic_contract::regs::STATUS`]), assembled by the top level.
    pub status: Signal<In, Bits<32>>,
    /// Port MAC address (byte 0 in bits 7:0).
    pub mac: Signal<Out, Bits<48>>,
    /// Port IPv4 address (first octet in bits 31:24).
    pub ip: Signal<Out, Bits<32>>,
    /// SQ doorbell push: one cycle pulse with `db_data` = `qpn << 16 | producer index`.
    pub db_write: Signal<Out, Bit>,
    pub db_data: Signal<Out, Bits<32>>,
    /// RQ doorbell: one cycle pulse with `db_data` = `qpn << 16 | RQ producer index`; the RX
    /// engine stores it in its table at once (no FIFO, never waits).
    pub rq_db_write: Signal<Out, Bit>,
    /// CQ arm doorbell: one cycle pulse with `arm_data` = the [`rnic_contract::regs::CQ_ARM`]
    /// word, in a cycle `arm_ready` is high.
    pub arm_write: Signal<Out, Bit>,
    pub arm_data: Signal<Out, Bits<32>>,
    pub arm_ready: Signal<In, Bit>,
    /// CQ consumer-index doorbell: one cycle pulse with `ci_data` = the
    /// [`rnic_contract::regs::CQ_CI`] word, in a cycle `ci_ready` is high.
    pub ci_write: Signal<Out, Bit>,
    pub ci_data: Signal<Out, Bits<32>>,
    pub ci_ready: Signal<In, Bit>,
    /// Interrupt masks and moderation window; the pending bits to read.
    pub irq_mask: Signal<Out, Bits<32>>,
    pub irq_moderation: Signal<Out, Bits<16>>,
    pub irq_pending: Signal<In, Bits<32>>,
    /// The asynchronous event CQ: bit 8 enable, bits 7:0 the CQ number.
    pub async_cq: Signal<Out, Bits<9>>,
    /// Context command, held until `cmd_ready`.
    pub cmd_valid: Signal<Out, Bit>,
    pub cmd_ready: Signal<In, Bit>,
    pub cmd_op: Signal<Out, Bits<8>>,
    pub cmd_index: Signal<Out, Bits<8>>,
    pub cmd_record: Signal<Out, Bits<512>>,
    /// Raw frame to send ([`rnic_contract::regs::RAW_TX_SEND`]): the staged beat and length,
    /// held until `raw_send_ready` (the write's response waits with it).
    pub raw_send_valid: Signal<Out, Bit>,
    pub raw_send_ready: Signal<In, Bit>,
    pub raw_send_data: Signal<Out, Bits<512>>,
    pub raw_send_len: Signal<Out, Bits<7>>,
    /// The raw receive queue's head beat and status word ([`rnic_contract::regs::RAW_RX_DATA`],
    /// [`rnic_contract::regs::RAW_RX_STATUS`]); `raw_pop`: a one-cycle pulse on a
    /// [`rnic_contract::regs::RAW_RX_POP`] write.
    pub raw_rx_data: Signal<In, Bits<512>>,
    pub raw_rx_status: Signal<In, Bits<32>>,
    pub raw_pop: Signal<Out, Bit>,
    counters: [DFF<Bits<32>>; NUM_COUNTERS],
    inc_r: DFF<Bits<32>>,
    mac_r: DFF<Bits<48>>,
    ip_r: DFF<Bits<32>>,
    mask_r: DFF<Bits<32>>,
    moder_r: DFF<Bits<16>>,
    async_r: DFF<Bits<9>>,
    staging: DFF<Bits<512>>,
    raw_stage: DFF<Bits<512>>,
    raw_pending: DFF<Bit>,
    raw_len: DFF<Bits<7>>,
    cmd_pending: DFF<Bit>,
    /// A CQ_ARM write taken, waiting for the CQ writer (its response waits with it).
    arm_pending: DFF<Bit>,
    arm_word: DFF<Bits<32>>,
    /// A CQ_CI write taken, waiting for the CQ writer (its response waits with it).
    ci_pending: DFF<Bit>,
    ci_word: DFF<Bits<32>>,
    cmd_op_r: DFF<Bits<8>>,
    cmd_index_r: DFF<Bits<8>>,
    bvalid_r: DFF<Bit>,
    rvalid_r: DFF<Bit>,
    rdata_r: DFF<Bits<32>>,
    wr_accept: Signal<Local, Bit>,
    rd_value: Signal<Local, Bits<32>>,
    cidx: Signal<Local, Bits<6>>,
    /// The head raw frame shifted so that the addressed word is in bits 31:0.
    raw_word: Signal<Local, Bits<512>>,
    a_id: Constant<Bits<16>>,
    a_version: Constant<Bits<16>>,
    a_caps: Constant<Bits<16>>,
    a_clock: Constant<Bits<16>>,
    a_qp_caps: Constant<Bits<16>>,
    a_send_caps: Constant<Bits<16>>,
    a_srq_caps: Constant<Bits<16>>,
    a_features: Constant<Bits<16>>,
    a_mac_lo: Constant<Bits<16>>,
    a_mac_hi: Constant<Bits<16>>,
    a_ip: Constant<Bits<16>>,
    a_doorbell: Constant<Bits<16>>,
    a_rq_doorbell: Constant<Bits<16>>,
    a_cmd_data: Constant<Bits<16>>,
    a_cmd: Constant<Bits<16>>,
    a_counters: Constant<Bits<16>>,
    a_status: Constant<Bits<16>>,
    a_cq_arm: Constant<Bits<16>>,
    a_cq_ci: Constant<Bits<16>>,
    a_irq_mask: Constant<Bits<16>>,
    a_irq_pending: Constant<Bits<16>>,
    a_irq_moderation: Constant<Bits<16>>,
    a_async_cq: Constant<Bits<16>>,
    a_raw_tx_data: Constant<Bits<16>>,
    a_raw_tx_send: Constant<Bits<16>>,
    a_raw_rx_data: Constant<Bits<16>>,
    a_raw_rx_status: Constant<Bits<16>>,
    a_raw_rx_pop: Constant<Bits<16>>,
    v_id: Constant<Bits<32>>,
    v_version: Constant<Bits<32>>,
    v_caps: Constant<Bits<32>>,
    v_clock: Constant<Bits<32>>,
    v_qp_caps: Constant<Bits<32>>,
    v_send_caps: Constant<Bits<32>>,
    v_srq_caps: Constant<Bits<32>>,
    v_features: Constant<Bits<32>>,
    c_word_mask: Constant<Bits<512>>,
    /// The byte counts' counter indices ([`rnic_contract::regs::counter::TX_BYTES_LO`] ..
    /// `RX_BYTES_HI`).
    c_tx_lo: Constant<Bits<6>>,
    c_tx_hi: Constant<Bits<6>>,
    c_rx_lo: Constant<Bits<6>>,
    c_rx_hi: Constant<Bits<6>>,
}

// A counter's index is 6 bits of its address (`COUNTERS + 4 * index`); one increment bit per
// event counter.
const _: () = assert!(rnic_contract::regs::counter::COUNT <= 64);
const _: () = assert!(rnic_contract::regs::counter::EVENTS <= 32);

impl Default for BarRegs {
    fn default() -> Self {
        use rnic_contract::{regs, regs::caps, *};
        let caps = ((LOG_NUM_QPS as u32) << caps::LOG_QPS_SHIFT)
            | ((LOG_NUM_MRS as u32) << caps::LOG_MRS_SHIFT)
            | ((LOG_NUM_CQS as u32) << caps::LOG_CQS_SHIFT)
            | ((LOG_MAX_INFLIGHT_WQES as u32) << caps::LOG_INFLIGHT_SHIFT)
            | ((DATAPATH_BYTES as u32) << caps::DATAPATH_BYTES_SHIFT);
        let a = |x: u16| Constant::new((x as u64).to_bits());
        let v = |x: u32| Constant::new((x as u64).to_bits());
        Self {
            clock: Default::default(),
            reset: Default::default(),
            awaddr: Default::default(),
            awvalid: Default::default(),
            awready: Default::default(),
            wdata: Default::default(),
            wvalid: Default::default(),
            wready: Default::default(),
            bvalid: Default::default(),
            bready: Default::default(),
            araddr: Default::default(),
            arvalid: Default::default(),
            arready: Default::default(),
            rdata: Default::default(),
            rvalid: Default::default(),
            rready: Default::default(),
            count_inc: Default::default(),
            status: Default::default(),
            bytes: Default::default(),
            mac: Default::default(),
            ip: Default::default(),
            db_write: Default::default(),
            db_data: Default::default(),
            rq_db_write: Default::default(),
            arm_write: Default::default(),
            arm_data: Default::default(),
            arm_ready: Default::default(),
            arm_pending: Default::default(),
            arm_word: Default::default(),
            ci_write: Default::default(),
            ci_data: Default::default(),
            ci_ready: Default::default(),
            ci_pending: Default::default(),
            ci_word: Default::default(),
            irq_mask: Default::default(),
            irq_moderation: Default::default(),
            async_cq: Default::default(),
            irq_pending: Default::default(),
            mask_r: Default::default(),
            moder_r: Default::default(),
            async_r: Default::default(),
            cmd_valid: Default::default(),
            cmd_ready: Default::default(),
            cmd_op: Default::default(),
            cmd_index: Default::default(),
            cmd_record: Default::default(),
            raw_send_valid: Default::default(),
            raw_send_ready: Default::default(),
            raw_send_data: Default::default(),
            raw_send_len: Default::default(),
            raw_rx_data: Default::default(),
            raw_rx_status: Default::default(),
            raw_pop: Default::default(),
            raw_stage: Default::default(),
            raw_pending: Default::default(),
            raw_len: Default::default(),
            counters: std::array::from_fn(|_| Default::default()),
            inc_r: Default::default(),
            mac_r: Default::default(),
            ip_r: Default::default(),
            staging: Default::default(),
            cmd_pending: Default::default(),
            cmd_op_r: Default::default(),
            cmd_index_r: Default::default(),
            bvalid_r: Default::default(),
            rvalid_r: Default::default(),
            rdata_r: Default::default(),
            wr_accept: Default::default(),
            rd_value: Default::default(),
            cidx: Default::default(),
            raw_word: Default::default(),
            a_id: a(regs::ID),
            a_version: a(regs::VERSION),
            a_caps: a(regs::CAPS),
            a_clock: a(regs::CLOCK_MHZ),
            a_qp_caps: a(regs::QP_CAPS),
            a_send_caps: a(regs::SEND_CAPS),
            a_srq_caps: a(regs::SRQ_CAPS),
            a_features: a(regs::FEATURES),
            a_mac_lo: a(regs::MAC_LO),
            a_mac_hi: a(regs::MAC_HI),
            a_ip: a(regs::IPV4_ADDR),
            a_doorbell: a(regs::SQ_DOORBELL),
            a_rq_doorbell: a(regs::RQ_DOORBELL),
            a_cmd_data: a(regs::CMD_DATA),
            a_cmd: a(regs::CMD),
            a_counters: a(regs::COUNTERS),
            a_status: a(regs::STATUS),
            a_cq_arm: a(regs::CQ_ARM),
            a_cq_ci: a(regs::CQ_CI),
            a_irq_mask: a(regs::IRQ_MASK),
            a_irq_pending: a(regs::IRQ_PENDING),
            a_irq_moderation: a(regs::IRQ_MODERATION),
            a_async_cq: a(regs::ASYNC_EVENT_CQ),
            a_raw_tx_data: a(regs::RAW_TX_DATA),
            a_raw_tx_send: a(regs::RAW_TX_SEND),
            a_raw_rx_data: a(regs::RAW_RX_DATA),
            a_raw_rx_status: a(regs::RAW_RX_STATUS),
            a_raw_rx_pop: a(regs::RAW_RX_POP),
            v_id: v(regs::ID_VALUE),
            v_version: v(regs::VERSION_VALUE),
            v_caps: v(caps),
            v_clock: v(CORE_CLOCK_MHZ as u32),
            v_qp_caps: v(regs::QP_CAPS_VALUE),
            v_send_caps: v(regs::SEND_CAPS_VALUE),
            v_srq_caps: v(regs::SRQ_CAPS_VALUE),
            v_features: v(regs::FEATURES_VALUE),
            c_word_mask: Constant::new(0xFFFF_FFFF_u64.to_bits()),
            c_tx_lo: Constant::new(u64::from(regs::counter::TX_BYTES_LO).to_bits()),
            c_tx_hi: Constant::new(u64::from(regs::counter::TX_BYTES_HI).to_bits()),
            c_rx_lo: Constant::new(u64::from(regs::counter::RX_BYTES_LO).to_bits()),
            c_rx_hi: Constant::new(u64::from(regs::counter::RX_BYTES_HI).to_bits()),
        }
    }
}

impl Logic for BarRegs {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            mac_r,
            ip_r,
            mask_r,
            moder_r,
            async_r,
            staging,
            raw_stage,
            raw_pending,
            raw_len,
            cmd_pending,
            arm_pending,
            arm_word,
            ci_pending,
            ci_word,
            cmd_op_r,
            cmd_index_r,
            bvalid_r,
            rvalid_r,
            rdata_r,
            inc_r
        );
        self.inc_r.d.next = self.count_inc.val();
        for i in 0..NUM_COUNTERS {
            self.counters[i].clock.next = self.clock.val();
            self.counters[i].d.next = self.counters[i].q.val();
            if self.inc_r.q.val().get_bit(i) {
                self.counters[i].d.next = self.counters[i].q.val() + 1;
            }
        }
        // Write channel: AW and W together. Doorbells never wait (the doorbell table takes one
        // every cycle).
        self.wr_accept.next = self.awvalid.val()
            & self.wvalid.val()
            & !self.bvalid_r.q.val()
            & !self.cmd_pending.q.val()
            & !self.arm_pending.q.val()
            & !self.raw_pending.q.val()
            & !self.ci_pending.q.val();
        self.awready.next = self.wr_accept.val();
        self.wready.next = self.wr_accept.val();
        self.db_write.next = false;
        self.rq_db_write.next = false;
        self.arm_write.next = false;
        self.raw_pop.next = false;
        self.ci_write.next = false;
        self.db_data.next = self.wdata.val();
        if self.wr_accept.val() {
            self.bvalid_r.d.next = true;
            if self.awaddr.val() == self.a_mac_lo.val() {
                self.mac_r.d.next = (self.mac_r.q.val() & 0xFFFF_0000_0000_u64) | bit_cast::<48, 32>(self.wdata.val());
            }
            if self.awaddr.val() == self.a_mac_hi.val() {
                self.mac_r.d.next = (self.mac_r.q.val() & 0xFFFF_FFFF_u64)
                    | (bit_cast::<48, 16>(self.wdata.val().get_bits::<16>(0)) << 32);
            }
            if self.awaddr.val() == self.a_ip.val() {
                self.ip_r.d.next = self.wdata.val();
            }
            if self.awaddr.val() == self.a_doorbell.val() {
                self.db_write.next = true;
            }
            if self.awaddr.val() == self.a_rq_doorbell.val() {
                self.rq_db_write.next = true;
            }
            if self.awaddr.val() == self.a_cq_arm.val() {
                // The response waits for the CQ writer to take the arm.
                self.bvalid_r.d.next = false;
                self.arm_pending.d.next = true;
                self.arm_word.d.next = self.wdata.val();
            }
            if self.awaddr.val() == self.a_cq_ci.val() {
                // The response waits for the CQ writer to take the index.
                self.bvalid_r.d.next = false;
                self.ci_pending.d.next = true;
                self.ci_word.d.next = self.wdata.val();
            }
            if self.awaddr.val() == self.a_irq_mask.val() {
                self.mask_r.d.next = self.wdata.val();
            }
            if self.awaddr.val() == self.a_irq_moderation.val() {
                self.moder_r.d.next = self.wdata.val().get_bits::<16>(0);
            }
            if self.awaddr.val() == self.a_async_cq.val() {
                self.async_r.d.next = bit_cast::<9, 8>(self.wdata.val().get_bits::<8>(0))
                    | (bit_cast::<9, 1>(self.wdata.val().get_bits::<1>(31)) << 8);
            }
            if (self.awaddr.val() & 0xFFC0) == self.a_cmd_data.val() {
                self.staging.d.next = (self.staging.q.val()
                    & !(self.c_word_mask.val() << (bit_cast::<512, 4>(self.awaddr.val().get_bits::<4>(2)) << 5)))
                    | (bit_cast::<512, 32>(self.wdata.val())
                        << (bit_cast::<512, 4>(self.awaddr.val().get_bits::<4>(2)) << 5));
            }
            if (self.awaddr.val() & 0xFFC0) == self.a_raw_tx_data.val() {
                self.raw_stage.d.next = (self.raw_stage.q.val()
                    & !(self.c_word_mask.val() << (bit_cast::<512, 4>(self.awaddr.val().get_bits::<4>(2)) << 5)))
                    | (bit_cast::<512, 32>(self.wdata.val())
                        << (bit_cast::<512, 4>(self.awaddr.val().get_bits::<4>(2)) << 5));
            }
            if self.awaddr.val() == self.a_raw_tx_send.val() {
                // The response waits for the raw TX path to take the frame.
                self.bvalid_r.d.next = false;
                self.raw_pending.d.next = true;
                self.raw_len.d.next = self.wdata.val().get_bits::<7>(0);
            }
            if self.awaddr.val() == self.a_raw_rx_pop.val() {
                self.raw_pop.next = true;
            }
            if self.awaddr.val() == self.a_cmd.val() {
                // The response waits for the tables to take the command.
                self.bvalid_r.d.next = false;
                self.cmd_pending.d.next = true;
                self.cmd_op_r.d.next = self.wdata.val().get_bits::<8>(24);
                self.cmd_index_r.d.next = self.wdata.val().get_bits::<8>(0);
            }
        }
        self.arm_write.next = self.arm_pending.q.val() & self.arm_ready.val();
        self.arm_data.next = self.arm_word.q.val();
        if self.arm_pending.q.val() & self.arm_ready.val() {
            self.arm_pending.d.next = false;
            self.bvalid_r.d.next = true;
        }
        self.ci_write.next = self.ci_pending.q.val() & self.ci_ready.val();
        self.ci_data.next = self.ci_word.q.val();
        if self.ci_pending.q.val() & self.ci_ready.val() {
            self.ci_pending.d.next = false;
            self.bvalid_r.d.next = true;
        }
        if self.cmd_pending.q.val() & self.cmd_ready.val() {
            self.cmd_pending.d.next = false;
            self.bvalid_r.d.next = true;
        }
        if self.raw_pending.q.val() & self.raw_send_ready.val() {
            self.raw_pending.d.next = false;
            self.bvalid_r.d.next = true;
        }
        self.raw_send_valid.next = self.raw_pending.q.val();
        self.raw_send_data.next = self.raw_stage.q.val();
        self.raw_send_len.next = self.raw_len.q.val();
        if self.bvalid_r.q.val() & self.bready.val() {
            self.bvalid_r.d.next = false;
        }
        self.bvalid.next = self.bvalid_r.q.val();
        self.cmd_valid.next = self.cmd_pending.q.val();
        self.cmd_op.next = self.cmd_op_r.q.val();
        self.cmd_index.next = self.cmd_index_r.q.val();
        self.cmd_record.next = self.staging.q.val();
        self.mac.next = self.mac_r.q.val();
        self.ip.next = self.ip_r.q.val();
        self.irq_mask.next = self.mask_r.q.val();
        self.irq_moderation.next = self.moder_r.q.val();
        self.async_cq.next = self.async_r.q.val();

        // Read channel.
        self.rd_value.next = 0.into();
        if self.araddr.val() == self.a_id.val() {
            self.rd_value.next = self.v_id.val();
        }
        if self.araddr.val() == self.a_version.val() {
            self.rd_value.next = self.v_version.val();
        }
        if self.araddr.val() == self.a_caps.val() {
            self.rd_value.next = self.v_caps.val();
        }
        if self.araddr.val() == self.a_clock.val() {
            self.rd_value.next = self.v_clock.val();
        }
        // The capability registers: constants of the contract.
        if self.araddr.val() == self.a_qp_caps.val() {
            self.rd_value.next = self.v_qp_caps.val();
        }
        if self.araddr.val() == self.a_send_caps.val() {
            self.rd_value.next = self.v_send_caps.val();
        }
        if self.araddr.val() == self.a_srq_caps.val() {
            self.rd_value.next = self.v_srq_caps.val();
        }
        if self.araddr.val() == self.a_features.val() {
            self.rd_value.next = self.v_features.val();
        }
        if self.araddr.val() == self.a_status.val() {
            self.rd_value.next = self.status.val();
        }
        if self.araddr.val() == self.a_irq_mask.val() {
            self.rd_value.next = self.mask_r.q.val();
        }
        if self.araddr.val() == self.a_irq_pending.val() {
            self.rd_value.next = self.irq_pending.val();
        }
        if self.araddr.val() == self.a_irq_moderation.val() {
            self.rd_value.next = bit_cast::<32, 16>(self.moder_r.q.val());
        }
        if self.araddr.val() == self.a_async_cq.val() {
            self.rd_value.next = bit_cast::<32, 8>(self.async_r.q.val().get_bits::<8>(0))
                | (bit_cast::<32, 1>(self.async_r.q.val().get_bits::<1>(8)) << 31);
        }
        if self.araddr.val() == self.a_mac_lo.val() {
            self.rd_value.next = self.mac_r.q.val().get_bits::<32>(0);
        }
        if self.araddr.val() == self.a_mac_hi.val() {
            self.rd_value.next = bit_cast::<32, 16>(self.mac_r.q.val().get_bits::<16>(32));
        }
        if self.araddr.val() == self.a_ip.val() {
            self.rd_value.next = self.ip_r.q.val();
        }
        self.raw_word.next = self.raw_rx_data.val() >> (bit_cast::<512, 4>(self.araddr.val().get_bits::<4>(2)) << 5);
        if self.araddr.val() == self.a_raw_rx_status.val() {
            self.rd_value.next = self.raw_rx_status.val();
        }
        if (self.araddr.val() & 0xFFC0) == self.a_raw_rx_data.val() {
            self.rd_value.next = self.raw_word.val().get_bits::<32>(0);
        }
        for i in 0..NUM_COUNTERS {
            if (self.araddr.val() & 0xFF00) == self.a_counters.val() {
                if self.araddr.val().get_bits::<6>(2).index() == i {
                    self.rd_value.next = self.counters[i].q.val();
                }
            }
        }
        // Byte counts: the counters after the event counters (TX low, high, RX low, high).
        self.cidx.next = self.araddr.val().get_bits::<6>(2);
        if (self.araddr.val() & 0xFF00) == self.a_counters.val() {
            if self.cidx.val() == self.c_tx_lo.val() {
                self.rd_value.next = self.bytes.val().get_bits::<32>(0);
            }
            if self.cidx.val() == self.c_tx_hi.val() {
                self.rd_value.next = self.bytes.val().get_bits::<32>(32);
            }
            if self.cidx.val() == self.c_rx_lo.val() {
                self.rd_value.next = self.bytes.val().get_bits::<32>(64);
            }
            if self.cidx.val() == self.c_rx_hi.val() {
                self.rd_value.next = self.bytes.val().get_bits::<32>(96);
            }
        }
        self.arready.next = self.arvalid.val() & !self.rvalid_r.q.val();
        if self.arvalid.val() & !self.rvalid_r.q.val() {
            self.rvalid_r.d.next = true;
            self.rdata_r.d.next = self.rd_value.val();
        }
        if self.rvalid_r.q.val() & self.rready.val() {
            self.rvalid_r.d.next = false;
        }
        self.rvalid.next = self.rvalid_r.q.val();
        self.rdata.next = self.rdata_r.q.val();

        if self.reset.val() {
            self.bvalid_r.d.next = false;
            self.rvalid_r.d.next = false;
            self.cmd_pending.d.next = false;
            self.arm_pending.d.next = false;
            self.raw_pending.d.next = false;
            self.ci_pending.d.next = false;
            self.mask_r.d.next = 0.into();
            self.moder_r.d.next = 0.into();
            self.async_r.d.next = 0.into();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generates_verilog() {
        let mut b = BarRegs::default();
        b.connect_all();
        let v = generate_verilog(&b);
        assert!(v.contains("module top"));
    }
}
