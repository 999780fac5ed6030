//! Clock-domain crossings between the 100G MAC and the NIC core, built on rust-hdl's
//! `AsynchronousFIFO` (dual-clock RAM, pointers crossed by a handshake synchronizer).
//!
//! Clocks on the U250 shell: the MAC side runs on the CMAC user clock (`gt_txusrclk2`,
//! 322.265625 MHz; RX is clocked by it too), the core side on the PCIe bridge's `axi_aclk`
//! (250 MHz). The synchronizer flip-flops are `…/sync/dff0`, `…/sync/dff1`;
//! `constraints/u250/cdc.xdc` marks them ASYNC_REG and bounds the crossing paths.
use rust_hdl::prelude::*;

/// Beats of the MAC-side FIFOs: 256 × 64 B = 16 KiB, two maximum frames of the core (MTU 4096:
/// 4170 B = 66 beats) plus a jumbo frame's worth of admission margin on RX.
pub const LOG_BEATS: usize = 8;
/// RX admits a frame only while the FIFO holds at most this many beats, so that a frame of up
/// to 150 beats (9600 B, the CMAC's default maximum) always fits: 256 − 150 = 106.
pub const RX_ADMIT_MAX_FILL: u32 = 106;

/// One 512-bit AXI4-Stream beat as stored in a FIFO (578 bits).
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct AxisBeat {
    pub tdata: Bits<512>,
    pub tkeep: Bits<64>,
    pub tlast: Bits<1>,
    pub tuser: Bits<1>,
}

/// MAC RX (322 MHz, no back-pressure) → core RX (250 MHz, no back-pressure).
///
/// The MAC cannot be stalled, so admission is per frame: a frame whose first beat finds more
/// than [`RX_ADMIT_MAX_FILL`] beats in the FIFO is dropped whole (`dropped` pulses once, MAC
/// clock) instead of being cut, which would glue two frames together. The core side drains
/// one beat per cycle (250 M beats/s); a 100G line delivers more than that only for sustained
/// runs of 65–75-byte frames (two beats per 89–99 wire bytes), where whole frames are dropped.
/// Latency: ~6 core cycles plus the pointer handshake (a few cycles of each clock).
/// The outputs are registered (one core cycle).
#[derive(LogicBlock)]
pub struct MacRxCdc {
    pub mac_clock: Signal<In, Clock>,
    pub mac_reset: Signal<In, Bit>,
    pub s_tdata: Signal<In, Bits<512>>,
    pub s_tkeep: Signal<In, Bits<64>>,
    pub s_tlast: Signal<In, Bit>,
    pub s_tuser: Signal<In, Bit>,
    pub s_tvalid: Signal<In, Bit>,
    /// One MAC-clock pulse per frame dropped at admission.
    pub dropped: Signal<Out, Bit>,
    pub core_clock: Signal<In, Clock>,
    pub m_tdata: Signal<Out, Bits<512>>,
    pub m_tkeep: Signal<Out, Bits<64>>,
    pub m_tlast: Signal<Out, Bit>,
    pub m_tuser: Signal<Out, Bit>,
    pub m_tvalid: Signal<Out, Bit>,
    fifo: AsynchronousFIFO<AxisBeat, LOG_BEATS, 9, 1>,
    admit_max: Constant<Bits<9>>,
    in_frame: DFF<Bit>,
    dropping: DFF<Bit>,
    out_beat: DFF<AxisBeat>,
    out_valid: DFF<Bit>,
    first_ok: Signal<Local, Bit>,
}

impl Default for MacRxCdc {
    fn default() -> Self {
        Self {
            mac_clock: Default::default(),
            mac_reset: Default::default(),
            s_tdata: Default::default(),
            s_tkeep: Default::default(),
            s_tlast: Default::default(),
            s_tuser: Default::default(),
            s_tvalid: Default::default(),
            dropped: Default::default(),
            core_clock: Default::default(),
            m_tdata: Default::default(),
            m_tkeep: Default::default(),
            m_tlast: Default::default(),
            m_tuser: Default::default(),
            m_tvalid: Default::default(),
            fifo: Default::default(),
            admit_max: Constant::new(RX_ADMIT_MAX_FILL.to_bits()),
            in_frame: Default::default(),
            dropping: Default::default(),
            out_beat: Default::default(),
            out_valid: Default::default(),
            first_ok: Default::default(),
        }
    }
}

impl Logic for MacRxCdc {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, mac_clock, in_frame, dropping);
        dff_setup!(self, core_clock, out_beat, out_valid);
        self.fifo.write_clock.next = self.mac_clock.val();
        self.fifo.read_clock.next = self.core_clock.val();

        // ---- MAC side ----
        self.fifo.data_in.next.tdata = self.s_tdata.val();
        self.fifo.data_in.next.tkeep = self.s_tkeep.val();
        self.fifo.data_in.next.tlast = bit_cast::<1, 1>(0.into());
        self.fifo.data_in.next.tuser = bit_cast::<1, 1>(0.into());
        if self.s_tlast.val() {
            self.fifo.data_in.next.tlast = bit_cast::<1, 1>(1.into());
        }
        if self.s_tuser.val() {
            self.fifo.data_in.next.tuser = bit_cast::<1, 1>(1.into());
        }
        self.first_ok.next = (self.fifo.write_fill.val() <= self.admit_max.val()).into();
        self.fifo.write.next = false;
        self.dropped.next = false;
        if self.s_tvalid.val() {
            if self.in_frame.q.val() {
                self.fifo.write.next = !self.dropping.q.val();
            } else {
                self.fifo.write.next = self.first_ok.val();
                self.dropping.d.next = !self.first_ok.val();
                self.dropped.next = !self.first_ok.val();
            }
            self.in_frame.d.next = !self.s_tlast.val();
        }
        if self.mac_reset.val() {
            self.in_frame.d.next = false;
            self.dropping.d.next = false;
        }

        // ---- core side: drain every cycle, register the outputs ----
        self.fifo.read.next = !self.fifo.empty.val();
        self.out_valid.d.next = !self.fifo.empty.val();
        self.out_beat.d.next = self.fifo.data_out.val();
        self.m_tvalid.next = self.out_valid.q.val();
        self.m_tdata.next = self.out_beat.q.val().tdata;
        self.m_tkeep.next = self.out_beat.q.val().tkeep;
        self.m_tlast.next = self.out_beat.q.val().tlast.any();
        self.m_tuser.next = self.out_beat.q.val().tuser.any();
    }
}

/// Core TX (250 MHz, `tready`) → MAC TX (322 MHz, `tready`), store and forward.
///
/// The CMAC must receive a frame without gaps once it has started (a gap is a TX underflow,
/// which corrupts the frame), while the core may pause mid-frame waiting for DMA data. So the
/// MAC side starts a frame only when all of it is in the FIFO: the core side counts each
/// frame's beats into a small length FIFO at `tlast`, and the MAC side waits until its
/// (conservative, synchronized) fill level covers the head frame's length. Frames longer than
/// 2^[`LOG_BEATS`] beats would never start; the core's are at most 66.
/// `s_tready` drops while either FIFO may be full.
#[derive(LogicBlock, Default)]
pub struct MacTxCdc {
    pub core_clock: Signal<In, Clock>,
    pub core_reset: Signal<In, Bit>,
    pub s_tdata: Signal<In, Bits<512>>,
    pub s_tkeep: Signal<In, Bits<64>>,
    pub s_tlast: Signal<In, Bit>,
    pub s_tvalid: Signal<In, Bit>,
    pub s_tready: Signal<Out, Bit>,
    pub mac_clock: Signal<In, Clock>,
    pub mac_reset: Signal<In, Bit>,
    pub m_tdata: Signal<Out, Bits<512>>,
    pub m_tkeep: Signal<Out, Bits<64>>,
    pub m_tlast: Signal<Out, Bit>,
    pub m_tvalid: Signal<Out, Bit>,
    pub m_tready: Signal<In, Bit>,
    data: AsynchronousFIFO<AxisBeat, LOG_BEATS, 9, 1>,
    lens: AsynchronousFIFO<Bits<9>, 5, 6, 1>,
    beats: DFF<Bits<9>>,
    sending: DFF<Bit>,
    accept: Signal<Local, Bit>,
}

impl Logic for MacTxCdc {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, core_clock, beats);
        dff_setup!(self, mac_clock, sending);
        self.data.write_clock.next = self.core_clock.val();
        self.lens.write_clock.next = self.core_clock.val();
        self.data.read_clock.next = self.mac_clock.val();
        self.lens.read_clock.next = self.mac_clock.val();

        // ---- core side ----
        self.s_tready.next = !self.data.full.val() & !self.lens.full.val();
        self.accept.next = self.s_tvalid.val() & !self.data.full.val() & !self.lens.full.val();
        self.data.data_in.next.tdata = self.s_tdata.val();
        self.data.data_in.next.tkeep = self.s_tkeep.val();
        self.data.data_in.next.tlast = bit_cast::<1, 1>(0.into());
        self.data.data_in.next.tuser = bit_cast::<1, 1>(0.into());
        if self.s_tlast.val() {
            self.data.data_in.next.tlast = bit_cast::<1, 1>(1.into());
        }
        self.data.write.next = self.accept.val();
        self.lens.write.next = false;
        self.lens.data_in.next = self.beats.q.val() + 1;
        if self.accept.val() {
            self.beats.d.next = self.beats.q.val() + 1;
            if self.s_tlast.val() {
                self.lens.write.next = true;
                self.beats.d.next = 0.into();
            }
        }
        if self.core_reset.val() {
            self.beats.d.next = 0.into();
        }

        // ---- MAC side ----
        self.data.read.next = false;
        self.lens.read.next = false;
        self.m_tvalid.next = self.sending.q.val();
        self.m_tdata.next = self.data.data_out.val().tdata;
        self.m_tkeep.next = self.data.data_out.val().tkeep;
        self.m_tlast.next = self.data.data_out.val().tlast.any();
        if self.sending.q.val() {
            if self.m_tready.val() {
                self.data.read.next = true;
                if self.data.data_out.val().tlast.any() {
                    self.lens.read.next = true;
                    self.sending.d.next = false;
                }
            }
        } else if !self.lens.empty.val() & (self.data.read_fill.val() >= self.lens.data_out.val()) {
            self.sending.d.next = true;
        }
        if self.mac_reset.val() {
            self.sending.d.next = false;
        }
    }
}
