//! The NIC top level: standard AXI edges around the RoCEv2 engines.
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
#[derive(LogicBlock)]
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
}

impl Default for NicTop {
    fn default() -> Self {
        Self {
            clock: Default::default(),
            reset: Default::default(),
            s_axil_awaddr: Default::default(),
            s_axil_awvalid: Default::default(),
            s_axil_awready: Default::default(),
            s_axil_wdata: Default::default(),
            s_axil_wstrb: Default::default(),
            s_axil_wvalid: Default::default(),
            s_axil_wready: Default::default(),
            s_axil_bresp: Default::default(),
            s_axil_bvalid: Default::default(),
            s_axil_bready: Default::default(),
            s_axil_araddr: Default::default(),
            s_axil_arvalid: Default::default(),
            s_axil_arready: Default::default(),
            s_axil_rdata: Default::default(),
            s_axil_rresp: Default::default(),
            s_axil_rvalid: Default::default(),
            s_axil_rready: Default::default(),
            m_axi_awid: Default::default(),
            m_axi_awaddr: Default::default(),
            m_axi_awlen: Default::default(),
            m_axi_awsize: Default::default(),
            m_axi_awburst: Default::default(),
            m_axi_awvalid: Default::default(),
            m_axi_awready: Default::default(),
            m_axi_wdata: Default::default(),
            m_axi_wstrb: Default::default(),
            m_axi_wlast: Default::default(),
            m_axi_wvalid: Default::default(),
            m_axi_wready: Default::default(),
            m_axi_bid: Default::default(),
            m_axi_bresp: Default::default(),
            m_axi_bvalid: Default::default(),
            m_axi_bready: Default::default(),
            m_axi_arid: Default::default(),
            m_axi_araddr: Default::default(),
            m_axi_arlen: Default::default(),
            m_axi_arsize: Default::default(),
            m_axi_arburst: Default::default(),
            m_axi_arvalid: Default::default(),
            m_axi_arready: Default::default(),
            m_axi_rid: Default::default(),
            m_axi_rdata: Default::default(),
            m_axi_rresp: Default::default(),
            m_axi_rlast: Default::default(),
            m_axi_rvalid: Default::default(),
            m_axi_rready: Default::default(),
            m_axis_tx_tdata: Default::default(),
            m_axis_tx_tkeep: Default::default(),
            m_axis_tx_tlast: Default::default(),
            m_axis_tx_tvalid: Default::default(),
            m_axis_tx_tready: Default::default(),
            s_axis_rx_tdata: Default::default(),
            s_axis_rx_tkeep: Default::default(),
            s_axis_rx_tlast: Default::default(),
            s_axis_rx_tvalid: Default::default(),
            s_axis_rx_tuser: Default::default(),
        }
    }
}

// Placeholder wiring while the engines are written: the ID register answers, everything else is
// tied off. Replaced by the real datapath.
impl Logic for NicTop {
    #[hdl_gen]
    fn update(&mut self) {
        self.s_axil_awready.next = true;
        self.s_axil_wready.next = true;
        self.s_axil_bresp.next = 0.into();
        self.s_axil_bvalid.next = self.s_axil_awvalid.val() & self.s_axil_wvalid.val();
        self.s_axil_arready.next = true;
        self.s_axil_rresp.next = 0.into();
        self.s_axil_rvalid.next = self.s_axil_arvalid.val();
        self.s_axil_rdata.next = 0x524E_4943.into();
        self.m_axi_awid.next = 0.into();
        self.m_axi_awaddr.next = 0.into();
        self.m_axi_awlen.next = 0.into();
        self.m_axi_awsize.next = 6.into();
        self.m_axi_awburst.next = 1.into();
        self.m_axi_awvalid.next = false;
        self.m_axi_wdata.next = 0.into();
        self.m_axi_wstrb.next = 0.into();
        self.m_axi_wlast.next = false;
        self.m_axi_wvalid.next = false;
        self.m_axi_bready.next = true;
        self.m_axi_arid.next = 0.into();
        self.m_axi_araddr.next = 0.into();
        self.m_axi_arlen.next = 0.into();
        self.m_axi_arsize.next = 6.into();
        self.m_axi_arburst.next = 1.into();
        self.m_axi_arvalid.next = false;
        self.m_axi_rready.next = true;
        self.m_axis_tx_tdata.next = 0.into();
        self.m_axis_tx_tkeep.next = 0.into();
        self.m_axis_tx_tlast.next = false;
        self.m_axis_tx_tvalid.next = false;
    }
}
