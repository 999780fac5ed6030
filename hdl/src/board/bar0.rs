//! BAR0 bridge: the PCIe bridge's 512-bit AXI4 master (host MMIO) → the core's 32-bit
//! AXI4-Lite slave.
use rust_hdl::prelude::*;

/// Converts each AXI4 transaction from the PCIe bridge into 32-bit AXI4-Lite accesses, one at
/// a time, in the same clock domain (250 MHz).
///
/// Writes: every 32-bit lane of a W beat with any strobe set becomes one AXI4-Lite write
/// (address = the beat's 64-byte line + 4 × lane, the lane's 4 strobes); lanes without
/// strobes are skipped. Reads: each R beat covers 2^ARSIZE bytes (at least one lane) from
/// the beat address, read lane by lane. Bursts (INCR) advance by 2^SIZE bytes per beat. An
/// AXI4-Lite error on any lane makes the response SLVERR. The core decodes 16 address bits.
///
/// Cost: a 4-byte MMIO write or read takes ~4 cycles plus the core's latency; a host never
/// issues MMIO wide enough for that to matter (doorbells are single 32-bit writes).
#[derive(LogicBlock, Default)]
pub struct Bar0Bridge {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    // AXI4 slave (from the PCIe bridge's BAR master)
    pub awid: Signal<In, Bits<4>>,
    pub awaddr: Signal<In, Bits<64>>,
    pub awlen: Signal<In, Bits<8>>,
    pub awsize: Signal<In, Bits<3>>,
    pub awvalid: Signal<In, Bit>,
    pub awready: Signal<Out, Bit>,
    pub wdata: Signal<In, Bits<512>>,
    pub wstrb: Signal<In, Bits<64>>,
    pub wvalid: Signal<In, Bit>,
    pub wready: Signal<Out, Bit>,
    pub bid: Signal<Out, Bits<4>>,
    pub bresp: Signal<Out, Bits<2>>,
    pub bvalid: Signal<Out, Bit>,
    pub bready: Signal<In, Bit>,
    pub arid: Signal<In, Bits<4>>,
    pub araddr: Signal<In, Bits<64>>,
    pub arlen: Signal<In, Bits<8>>,
    pub arsize: Signal<In, Bits<3>>,
    pub arvalid: Signal<In, Bit>,
    pub arready: Signal<Out, Bit>,
    pub rid: Signal<Out, Bits<4>>,
    pub rdata: Signal<Out, Bits<512>>,
    pub rresp: Signal<Out, Bits<2>>,
    pub rlast: Signal<Out, Bit>,
    pub rvalid: Signal<Out, Bit>,
    pub rready: Signal<In, Bit>,
    // AXI4-Lite master (to the core's BAR0 registers)
    pub l_awaddr: Signal<Out, Bits<16>>,
    pub l_awvalid: Signal<Out, Bit>,
    pub l_awready: Signal<In, Bit>,
    pub l_wdata: Signal<Out, Bits<32>>,
    pub l_wstrb: Signal<Out, Bits<4>>,
    pub l_wvalid: Signal<Out, Bit>,
    pub l_wready: Signal<In, Bit>,
    pub l_bresp: Signal<In, Bits<2>>,
    pub l_bvalid: Signal<In, Bit>,
    pub l_bready: Signal<Out, Bit>,
    pub l_araddr: Signal<Out, Bits<16>>,
    pub l_arvalid: Signal<Out, Bit>,
    pub l_arready: Signal<In, Bit>,
    pub l_rdata: Signal<In, Bits<32>>,
    pub l_rresp: Signal<In, Bits<2>>,
    pub l_rvalid: Signal<In, Bit>,
    pub l_rready: Signal<Out, Bit>,
    /// 0 idle, 1 W beat, 2 lane write, 3 lite B, 4 AXI B, 5 lane read, 6 lite R, 7 AXI R.
    state: DFF<Bits<3>>,
    id: DFF<Bits<4>>,
    /// Current beat's byte address (16 bits decoded) and the beats left after it.
    addr: DFF<Bits<16>>,
    beats_left: DFF<Bits<8>>,
    size: DFF<Bits<3>>,
    lane: DFF<Bits<4>>,
    lanes_left: DFF<Bits<5>>,
    data: DFF<Bits<512>>,
    strb: DFF<Bits<64>>,
    last: DFF<Bit>,
    err: DFF<Bit>,
    aw_done: DFF<Bit>,
    w_done: DFF<Bit>,
    lane_data: Signal<Local, Bits<32>>,
    lane_strb: Signal<Local, Bits<4>>,
    beat_lanes: Signal<Local, Bits<5>>,
    beat_lane0: Signal<Local, Bits<4>>,
}

impl Logic for Bar0Bridge {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, state, id, addr, beats_left, size, lane, lanes_left, data, strb, last, err, aw_done, w_done
        );
        self.awready.next = false;
        self.wready.next = false;
        self.bvalid.next = false;
        self.arready.next = false;
        self.rvalid.next = false;
        self.l_awvalid.next = false;
        self.l_wvalid.next = false;
        self.l_bready.next = false;
        self.l_arvalid.next = false;
        self.l_rready.next = false;
        self.bid.next = self.id.q.val();
        self.rid.next = self.id.q.val();
        self.bresp.next = 0.into();
        self.rresp.next = 0.into();
        if self.err.q.val() {
            self.bresp.next = 2.into();
            self.rresp.next = 2.into();
        }
        self.rdata.next = self.data.q.val();
        self.rlast.next = (self.beats_left.q.val() == 0).into();

        // The current lane's data and strobes.
        self.lane_data.next = 0.into();
        self.lane_strb.next = 0.into();
        for i in 0..16 {
            if self.lane.q.val().index() == i {
                self.lane_data.next = self.data.q.val().get_bits::<32>(i * 32);
                self.lane_strb.next = self.strb.q.val().get_bits::<4>(i * 4);
            }
        }
        self.l_awaddr.next = (self.addr.q.val() & 0xFFC0) | (bit_cast::<16, 4>(self.lane.q.val()) << 2);
        self.l_araddr.next = (self.addr.q.val() & 0xFFC0) | (bit_cast::<16, 4>(self.lane.q.val()) << 2);
        self.l_wdata.next = self.lane_data.val();
        self.l_wstrb.next = self.lane_strb.val();

        // A read beat of 2^size bytes covers max(1, 2^size / 4) lanes from its aligned start.
        self.beat_lanes.next = 1.into();
        self.beat_lane0.next = self.addr.q.val().get_bits::<4>(2);
        if self.size.q.val() == 3 {
            self.beat_lanes.next = 2.into();
            self.beat_lane0.next = self.addr.q.val().get_bits::<4>(2) & 0xE;
        }
        if self.size.q.val() == 4 {
            self.beat_lanes.next = 4.into();
            self.beat_lane0.next = self.addr.q.val().get_bits::<4>(2) & 0xC;
        }
        if self.size.q.val() == 5 {
            self.beat_lanes.next = 8.into();
            self.beat_lane0.next = self.addr.q.val().get_bits::<4>(2) & 0x8;
        }
        if self.size.q.val() >= 6 {
            self.beat_lanes.next = 16.into();
            self.beat_lane0.next = 0.into();
        }

        match self.state.q.val().index() {
            0 => {
                self.err.d.next = false;
                if self.awvalid.val() {
                    self.awready.next = true;
                    self.id.d.next = self.awid.val();
                    self.addr.d.next = self.awaddr.val().get_bits::<16>(0);
                    self.beats_left.d.next = self.awlen.val();
                    self.size.d.next = self.awsize.val();
                    self.state.d.next = 1.into();
                } else if self.arvalid.val() {
                    self.arready.next = true;
                    self.id.d.next = self.arid.val();
                    self.addr.d.next = self.araddr.val().get_bits::<16>(0);
                    self.beats_left.d.next = self.arlen.val();
                    self.size.d.next = self.arsize.val();
                    self.data.d.next = 0.into();
                    self.state.d.next = 5.into();
                    self.lanes_left.d.next = 0.into();
                }
            }
            1 => {
                self.wready.next = true;
                if self.wvalid.val() {
                    self.data.d.next = self.wdata.val();
                    self.strb.d.next = self.wstrb.val();
                    self.lane.d.next = 0.into();
                    self.aw_done.d.next = false;
                    self.w_done.d.next = false;
                    self.state.d.next = 2.into();
                }
            }
            2 => {
                // One lane per visit: write it if it has strobes, else skip it.
                if self.lane_strb.val().any() {
                    self.l_awvalid.next = !self.aw_done.q.val();
                    self.l_wvalid.next = !self.w_done.q.val();
                    if self.l_awready.val() {
                        self.aw_done.d.next = true;
                    }
                    if self.l_wready.val() {
                        self.w_done.d.next = true;
                    }
                    if (self.aw_done.q.val() | self.l_awready.val()) & (self.w_done.q.val() | self.l_wready.val()) {
                        self.state.d.next = 3.into();
                    }
                } else {
                    self.lane.d.next = self.lane.q.val() + 1;
                    if self.lane.q.val() == 15 {
                        self.state.d.next = 4.into();
                    }
                }
            }
            3 => {
                self.l_bready.next = true;
                if self.l_bvalid.val() {
                    if self.l_bresp.val().get_bits::<1>(1).any() {
                        self.err.d.next = true;
                    }
                    self.aw_done.d.next = false;
                    self.w_done.d.next = false;
                    self.lane.d.next = self.lane.q.val() + 1;
                    self.state.d.next = 2.into();
                    if self.lane.q.val() == 15 {
                        self.state.d.next = 4.into();
                    }
                }
            }
            4 => {
                // End of a W beat: the next beat of a burst, or the response.
                if self.beats_left.q.val() != 0 {
                    self.beats_left.d.next = self.beats_left.q.val() - 1;
                    self.addr.d.next =
                        self.addr.q.val() + (bit_cast::<16, 1>(1.into()) << bit_cast::<16, 3>(self.size.q.val()));
                    self.state.d.next = 1.into();
                } else {
                    self.bvalid.next = true;
                    if self.bready.val() {
                        self.state.d.next = 0.into();
                    }
                }
            }
            5 => {
                // Start of an R beat (lanes_left == 0) or the next lane of it.
                if self.lanes_left.q.val() == 0 {
                    self.lane.d.next = self.beat_lane0.val();
                    self.lanes_left.d.next = self.beat_lanes.val();
                } else {
                    self.l_arvalid.next = true;
                    if self.l_arready.val() {
                        self.state.d.next = 6.into();
                    }
                }
            }
            6 => {
                self.l_rready.next = true;
                if self.l_rvalid.val() {
                    if self.l_rresp.val().get_bits::<1>(1).any() {
                        self.err.d.next = true;
                    }
                    // `data` was cleared at the beat's start and lanes are distinct: OR in
                    // at bit 32 × lane.
                    self.data.d.next = self.data.q.val()
                        | (bit_cast::<512, 32>(self.l_rdata.val()) << (bit_cast::<9, 4>(self.lane.q.val()) << 5));
                    self.lane.d.next = self.lane.q.val() + 1;
                    self.lanes_left.d.next = self.lanes_left.q.val() - 1;
                    self.state.d.next = 5.into();
                    if self.lanes_left.q.val() == 1 {
                        self.state.d.next = 7.into();
                    }
                }
            }
            7 => {
                self.rvalid.next = true;
                if self.rready.val() {
                    self.data.d.next = 0.into();
                    self.lanes_left.d.next = 0.into();
                    if self.beats_left.q.val() != 0 {
                        self.beats_left.d.next = self.beats_left.q.val() - 1;
                        self.addr.d.next =
                            self.addr.q.val() + (bit_cast::<16, 1>(1.into()) << bit_cast::<16, 3>(self.size.q.val()));
                        self.state.d.next = 5.into();
                    } else {
                        self.state.d.next = 0.into();
                    }
                }
            }
            _ => {
                self.state.d.next = 0.into();
            }
        }
        if self.reset.val() {
            self.state.d.next = 0.into();
            self.aw_done.d.next = false;
            self.w_done.d.next = false;
        }
    }
}
