//! AMD vendor IP and primitives as rust-hdl black boxes (`Verilog::Wrapper`).
//!
//! Each wrapper instantiates an IP that `constraints/u250/build.tcl` creates with `create_ip`
//! (module names `xdma_0`, `cmac_usplus_0`) or an UltraScale+ primitive. Port names follow
//! AMD PG195 (DMA/Bridge Subsystem for PCI Express, AXI Bridge mode) and PG203 (UltraScale+
//! 100G Ethernet Subsystem, AXI4-Stream user interface). The stub declarations that let yosys
//! and Verilator elaborate the design are guarded by `RNIC_STUB_VENDOR_IP`, which only
//! `scripts/synth.sh` and the tests define: Vivado reads the real IP instead.
//!
//! Untested on hardware and not elaborated by Vivado in CI (see constraints/README.md).
use rust_hdl::prelude::*;

/// Guard around stub modules: present for yosys/Verilator, absent for Vivado.
fn stubs(body: &str) -> String {
    format!(
        "\n`ifdef RNIC_STUB_VENDOR_IP\n/* verilator lint_off UNDRIVEN */\n/* verilator lint_off UNUSED */\n{body}\n/* verilator lint_on UNUSED */\n/* verilator lint_on UNDRIVEN */\n`endif\n"
    )
}

/// The PCIe Gen3 x16 endpoint with its AXI bridge (`xdma_0`, functional mode AXI Bridge,
/// 512-bit AXI at 250 MHz), and the reference-clock buffer it needs.
///
/// - `bar_*`: AXI4 master of BAR0 accesses from the host (PG195 `m_axib_*`).
/// - `dma_*`: AXI4 slave; the NIC's DMA reads and writes host memory through it
///   (PG195 `s_axib_*`), addresses are bus addresses (IOVAs), translation 0.
/// - `axi_aclk` (250 MHz) and `axi_aresetn` (synchronous to it) clock the NIC core.
/// - `usr_irq_req` / `usr_irq_ack`: the 16 user interrupts (PG195 "Interrupt Interface"); the
///   core sends bit `i` as MSI-X vector `i` (internal MSI-X table, build.tcl).
#[derive(LogicBlock, Default)]
pub struct PcieBridge {
    pub refclk_p: Signal<In, Clock>,
    pub refclk_n: Signal<In, Clock>,
    pub perst_n: Signal<In, Bit>,
    pub rxp: Signal<In, Bits<16>>,
    pub rxn: Signal<In, Bits<16>>,
    pub txp: Signal<Out, Bits<16>>,
    pub txn: Signal<Out, Bits<16>>,
    pub axi_aclk: Signal<Out, Clock>,
    pub axi_aresetn: Signal<Out, Bit>,
    pub link_up: Signal<Out, Bit>,
    pub usr_irq_req: Signal<In, Bits<16>>,
    pub usr_irq_ack: Signal<Out, Bits<16>>,
    pub bar_awid: Signal<Out, Bits<4>>,
    pub bar_awaddr: Signal<Out, Bits<64>>,
    pub bar_awlen: Signal<Out, Bits<8>>,
    pub bar_awsize: Signal<Out, Bits<3>>,
    pub bar_awvalid: Signal<Out, Bit>,
    pub bar_awready: Signal<In, Bit>,
    pub bar_wdata: Signal<Out, Bits<512>>,
    pub bar_wstrb: Signal<Out, Bits<64>>,
    pub bar_wvalid: Signal<Out, Bit>,
    pub bar_wready: Signal<In, Bit>,
    pub bar_bid: Signal<In, Bits<4>>,
    pub bar_bresp: Signal<In, Bits<2>>,
    pub bar_bvalid: Signal<In, Bit>,
    pub bar_bready: Signal<Out, Bit>,
    pub bar_arid: Signal<Out, Bits<4>>,
    pub bar_araddr: Signal<Out, Bits<64>>,
    pub bar_arlen: Signal<Out, Bits<8>>,
    pub bar_arsize: Signal<Out, Bits<3>>,
    pub bar_arvalid: Signal<Out, Bit>,
    pub bar_arready: Signal<In, Bit>,
    pub bar_rid: Signal<In, Bits<4>>,
    pub bar_rdata: Signal<In, Bits<512>>,
    pub bar_rresp: Signal<In, Bits<2>>,
    pub bar_rlast: Signal<In, Bit>,
    pub bar_rvalid: Signal<In, Bit>,
    pub bar_rready: Signal<Out, Bit>,
    pub dma_awid: Signal<In, Bits<4>>,
    pub dma_awaddr: Signal<In, Bits<64>>,
    pub dma_awlen: Signal<In, Bits<8>>,
    pub dma_awsize: Signal<In, Bits<3>>,
    pub dma_awburst: Signal<In, Bits<2>>,
    pub dma_awvalid: Signal<In, Bit>,
    pub dma_awready: Signal<Out, Bit>,
    pub dma_wdata: Signal<In, Bits<512>>,
    pub dma_wstrb: Signal<In, Bits<64>>,
    pub dma_wlast: Signal<In, Bit>,
    pub dma_wvalid: Signal<In, Bit>,
    pub dma_wready: Signal<Out, Bit>,
    pub dma_bid: Signal<Out, Bits<4>>,
    pub dma_bresp: Signal<Out, Bits<2>>,
    pub dma_bvalid: Signal<Out, Bit>,
    pub dma_bready: Signal<In, Bit>,
    pub dma_arid: Signal<In, Bits<4>>,
    pub dma_araddr: Signal<In, Bits<64>>,
    pub dma_arlen: Signal<In, Bits<8>>,
    pub dma_arsize: Signal<In, Bits<3>>,
    pub dma_arburst: Signal<In, Bits<2>>,
    pub dma_arvalid: Signal<In, Bit>,
    pub dma_arready: Signal<Out, Bit>,
    pub dma_rid: Signal<Out, Bits<4>>,
    pub dma_rdata: Signal<Out, Bits<512>>,
    pub dma_rresp: Signal<Out, Bits<2>>,
    pub dma_rlast: Signal<Out, Bit>,
    pub dma_rvalid: Signal<Out, Bit>,
    pub dma_rready: Signal<In, Bit>,
}

impl Logic for PcieBridge {
    fn update(&mut self) {}

    fn connect(&mut self) {
        self.txp.connect();
        self.txn.connect();
        self.axi_aclk.connect();
        self.axi_aresetn.connect();
        self.link_up.connect();
        self.usr_irq_ack.connect();
        self.bar_awid.connect();
        self.bar_awaddr.connect();
        self.bar_awlen.connect();
        self.bar_awsize.connect();
        self.bar_awvalid.connect();
        self.bar_wdata.connect();
        self.bar_wstrb.connect();
        self.bar_wvalid.connect();
        self.bar_bready.connect();
        self.bar_arid.connect();
        self.bar_araddr.connect();
        self.bar_arlen.connect();
        self.bar_arsize.connect();
        self.bar_arvalid.connect();
        self.bar_rready.connect();
        self.dma_awready.connect();
        self.dma_wready.connect();
        self.dma_bid.connect();
        self.dma_bresp.connect();
        self.dma_bvalid.connect();
        self.dma_arready.connect();
        self.dma_rid.connect();
        self.dma_rdata.connect();
        self.dma_rresp.connect();
        self.dma_rlast.connect();
        self.dma_rvalid.connect();
    }

    fn hdl(&self) -> Verilog {
        Verilog::Wrapper(Wrapper {
            code: r#"
    // PG195 example design: the GT gets the buffered reference, the core its ODIV2 copy.
    wire sys_clk;
    wire sys_clk_gt;
    IBUFDS_GTE4 #(.REFCLK_HROW_CK_SEL(2'b00)) refclk_buf (
        .I(refclk_p), .IB(refclk_n), .CEB(1'b0), .O(sys_clk_gt), .ODIV2(sys_clk));
    xdma_0 bridge (
        .sys_clk(sys_clk), .sys_clk_gt(sys_clk_gt), .sys_rst_n(perst_n),
        .pci_exp_txp(txp), .pci_exp_txn(txn), .pci_exp_rxp(rxp), .pci_exp_rxn(rxn),
        .axi_aclk(axi_aclk), .axi_aresetn(axi_aresetn), .user_lnk_up(link_up),
        .usr_irq_req(usr_irq_req), .usr_irq_ack(usr_irq_ack),
        .m_axib_awid(bar_awid), .m_axib_awaddr(bar_awaddr), .m_axib_awlen(bar_awlen),
        .m_axib_awsize(bar_awsize),
        .m_axib_awvalid(bar_awvalid), .m_axib_awready(bar_awready),
        .m_axib_wdata(bar_wdata), .m_axib_wstrb(bar_wstrb),
        .m_axib_wvalid(bar_wvalid), .m_axib_wready(bar_wready),
        .m_axib_bid(bar_bid), .m_axib_bresp(bar_bresp), .m_axib_bvalid(bar_bvalid),
        .m_axib_bready(bar_bready),
        .m_axib_arid(bar_arid), .m_axib_araddr(bar_araddr), .m_axib_arlen(bar_arlen),
        .m_axib_arsize(bar_arsize),
        .m_axib_arvalid(bar_arvalid), .m_axib_arready(bar_arready),
        .m_axib_rid(bar_rid), .m_axib_rdata(bar_rdata), .m_axib_rresp(bar_rresp),
        .m_axib_rlast(bar_rlast), .m_axib_rvalid(bar_rvalid), .m_axib_rready(bar_rready),
        .s_axib_awid(dma_awid), .s_axib_awaddr(dma_awaddr), .s_axib_awregion(4'h0),
        .s_axib_awlen(dma_awlen), .s_axib_awsize(dma_awsize), .s_axib_awburst(dma_awburst),
        .s_axib_awvalid(dma_awvalid), .s_axib_awready(dma_awready),
        .s_axib_wdata(dma_wdata), .s_axib_wstrb(dma_wstrb), .s_axib_wlast(dma_wlast),
        .s_axib_wvalid(dma_wvalid), .s_axib_wready(dma_wready),
        .s_axib_bid(dma_bid), .s_axib_bresp(dma_bresp), .s_axib_bvalid(dma_bvalid),
        .s_axib_bready(dma_bready),
        .s_axib_arid(dma_arid), .s_axib_araddr(dma_araddr), .s_axib_arregion(4'h0),
        .s_axib_arlen(dma_arlen), .s_axib_arsize(dma_arsize), .s_axib_arburst(dma_arburst),
        .s_axib_arvalid(dma_arvalid), .s_axib_arready(dma_arready),
        .s_axib_rid(dma_rid), .s_axib_rdata(dma_rdata), .s_axib_rresp(dma_rresp),
        .s_axib_rlast(dma_rlast), .s_axib_rvalid(dma_rvalid), .s_axib_rready(dma_rready)
    );
"#
            .into(),
            cores: stubs(
                r#"
(* blackbox *)
module IBUFDS_GTE4(I, IB, CEB, O, ODIV2);
    parameter REFCLK_HROW_CK_SEL = 2'b00;
    input I; input IB; input CEB; output O; output ODIV2;
endmodule
(* blackbox *)
module xdma_0(sys_clk, sys_clk_gt, sys_rst_n, pci_exp_txp, pci_exp_txn, pci_exp_rxp,
    pci_exp_rxn, axi_aclk, axi_aresetn, user_lnk_up, usr_irq_req, usr_irq_ack,
    m_axib_awid, m_axib_awaddr, m_axib_awlen, m_axib_awsize,
    m_axib_awvalid, m_axib_awready, m_axib_wdata, m_axib_wstrb,
    m_axib_wvalid, m_axib_wready, m_axib_bid, m_axib_bresp, m_axib_bvalid,
    m_axib_bready, m_axib_arid, m_axib_araddr, m_axib_arlen, m_axib_arsize,
    m_axib_arvalid, m_axib_arready, m_axib_rid,
    m_axib_rdata, m_axib_rresp, m_axib_rlast, m_axib_rvalid, m_axib_rready,
    s_axib_awid, s_axib_awaddr, s_axib_awregion, s_axib_awlen, s_axib_awsize, s_axib_awburst,
    s_axib_awvalid, s_axib_awready, s_axib_wdata, s_axib_wstrb, s_axib_wlast, s_axib_wvalid,
    s_axib_wready, s_axib_bid, s_axib_bresp, s_axib_bvalid, s_axib_bready, s_axib_arid,
    s_axib_araddr, s_axib_arregion, s_axib_arlen, s_axib_arsize, s_axib_arburst,
    s_axib_arvalid, s_axib_arready, s_axib_rid, s_axib_rdata, s_axib_rresp, s_axib_rlast,
    s_axib_rvalid, s_axib_rready);
    input sys_clk; input sys_clk_gt; input sys_rst_n;
    output [15:0] pci_exp_txp; output [15:0] pci_exp_txn;
    input [15:0] pci_exp_rxp; input [15:0] pci_exp_rxn;
    output axi_aclk; output axi_aresetn; output user_lnk_up;
    input [15:0] usr_irq_req; output [15:0] usr_irq_ack;
    output [3:0] m_axib_awid; output [63:0] m_axib_awaddr; output [7:0] m_axib_awlen;
    output [2:0] m_axib_awsize;     output m_axib_awvalid;
    input m_axib_awready; output [511:0] m_axib_wdata; output [63:0] m_axib_wstrb;
    output m_axib_wvalid; input m_axib_wready; input [3:0] m_axib_bid;
    input [1:0] m_axib_bresp; input m_axib_bvalid; output m_axib_bready;
    output [3:0] m_axib_arid; output [63:0] m_axib_araddr; output [7:0] m_axib_arlen;
    output [2:0] m_axib_arsize;     output m_axib_arvalid;
    input m_axib_arready; input [3:0] m_axib_rid; input [511:0] m_axib_rdata;
    input [1:0] m_axib_rresp; input m_axib_rlast; input m_axib_rvalid; output m_axib_rready;
    input [3:0] s_axib_awid; input [63:0] s_axib_awaddr; input [3:0] s_axib_awregion;
    input [7:0] s_axib_awlen; input [2:0] s_axib_awsize; input [1:0] s_axib_awburst;
    input s_axib_awvalid; output s_axib_awready; input [511:0] s_axib_wdata;
    input [63:0] s_axib_wstrb; input s_axib_wlast; input s_axib_wvalid; output s_axib_wready;
    output [3:0] s_axib_bid; output [1:0] s_axib_bresp; output s_axib_bvalid;
    input s_axib_bready; input [3:0] s_axib_arid; input [63:0] s_axib_araddr;
    input [3:0] s_axib_arregion; input [7:0] s_axib_arlen; input [2:0] s_axib_arsize;
    input [1:0] s_axib_arburst; input s_axib_arvalid; output s_axib_arready;
    output [3:0] s_axib_rid; output [511:0] s_axib_rdata; output [1:0] s_axib_rresp;
    output s_axib_rlast; output s_axib_rvalid; input s_axib_rready;
endmodule
"#,
            ),
        })
    }
}

/// The 100G MAC+PCS (`cmac_usplus_0`: CAUI-4, 4 × 25.78125 Gb/s on QSFP0, RS-FEC, AXI4-Stream
/// 512-bit user interface), with the RX user interface clocked by the TX user clock
/// (`rx_clk` = `gt_txusrclk2`, as in PG203's example design), so both stream directions live
/// in one 322.265625 MHz domain: `usr_clk`.
///
/// `ctl_tx_enable` / `ctl_tx_send_rfi` implement PG203's bring-up: send remote-fault
/// indication until RX is aligned, then enable TX. RS-FEC is enabled in both directions.
#[derive(LogicBlock, Default)]
pub struct Cmac100g {
    pub refclk_p: Signal<In, Clock>,
    pub refclk_n: Signal<In, Clock>,
    /// Free-running clock for the GT reset logic and DRP (100 MHz, `GT_DRP_CLK` in build.tcl).
    pub init_clk: Signal<In, Clock>,
    pub sys_reset: Signal<In, Bit>,
    pub rxp: Signal<In, Bits<4>>,
    pub rxn: Signal<In, Bits<4>>,
    pub txp: Signal<Out, Bits<4>>,
    pub txn: Signal<Out, Bits<4>>,
    pub usr_clk: Signal<Out, Clock>,
    pub usr_tx_reset: Signal<Out, Bit>,
    pub usr_rx_reset: Signal<Out, Bit>,
    pub rx_aligned: Signal<Out, Bit>,
    pub ctl_tx_enable: Signal<In, Bit>,
    pub ctl_tx_send_rfi: Signal<In, Bit>,
    pub rx_tdata: Signal<Out, Bits<512>>,
    pub rx_tkeep: Signal<Out, Bits<64>>,
    pub rx_tlast: Signal<Out, Bit>,
    pub rx_tuser: Signal<Out, Bit>,
    pub rx_tvalid: Signal<Out, Bit>,
    pub tx_tdata: Signal<In, Bits<512>>,
    pub tx_tkeep: Signal<In, Bits<64>>,
    pub tx_tlast: Signal<In, Bit>,
    pub tx_tvalid: Signal<In, Bit>,
    pub tx_tready: Signal<Out, Bit>,
}

impl Logic for Cmac100g {
    fn update(&mut self) {}

    fn connect(&mut self) {
        self.txp.connect();
        self.txn.connect();
        self.usr_clk.connect();
        self.usr_tx_reset.connect();
        self.usr_rx_reset.connect();
        self.rx_aligned.connect();
        self.rx_tdata.connect();
        self.rx_tkeep.connect();
        self.rx_tlast.connect();
        self.rx_tuser.connect();
        self.rx_tvalid.connect();
        self.tx_tready.connect();
    }

    fn hdl(&self) -> Verilog {
        Verilog::Wrapper(Wrapper {
            code: r#"
    cmac_usplus_0 mac (
        .gt_ref_clk_p(refclk_p), .gt_ref_clk_n(refclk_n), .init_clk(init_clk),
        .sys_reset(sys_reset),
        .gt_rxp_in(rxp), .gt_rxn_in(rxn), .gt_txp_out(txp), .gt_txn_out(txn),
        .gt_txusrclk2(usr_clk), .rx_clk(usr_clk),
        .gtwiz_reset_tx_datapath(1'b0), .gtwiz_reset_rx_datapath(1'b0),
        .gt_loopback_in(12'h000),
        .usr_tx_reset(usr_tx_reset), .usr_rx_reset(usr_rx_reset),
        .core_tx_reset(1'b0), .core_rx_reset(1'b0), .core_drp_reset(1'b0),
        .drp_clk(init_clk), .drp_addr(10'h000), .drp_di(16'h0000), .drp_en(1'b0),
        .drp_we(1'b0),
        .ctl_rx_enable(1'b1), .ctl_rx_force_resync(1'b0), .ctl_rx_test_pattern(1'b0),
        .ctl_tx_enable(ctl_tx_enable), .ctl_tx_send_rfi(ctl_tx_send_rfi),
        .ctl_tx_send_lfi(1'b0), .ctl_tx_send_idle(1'b0), .ctl_tx_test_pattern(1'b0),
        .ctl_rx_rsfec_enable(1'b1), .ctl_rx_rsfec_enable_correction(1'b1),
        .ctl_rx_rsfec_enable_indication(1'b1), .ctl_tx_rsfec_enable(1'b1),
        .ctl_rsfec_ieee_error_indication_mode(1'b0),
        .stat_rx_aligned(rx_aligned),
        .rx_axis_tvalid(rx_tvalid), .rx_axis_tdata(rx_tdata), .rx_axis_tlast(rx_tlast),
        .rx_axis_tkeep(rx_tkeep), .rx_axis_tuser(rx_tuser),
        .tx_axis_tready(tx_tready), .tx_axis_tvalid(tx_tvalid), .tx_axis_tdata(tx_tdata),
        .tx_axis_tlast(tx_tlast), .tx_axis_tkeep(tx_tkeep), .tx_axis_tuser(1'b0),
        .tx_preamblein(56'h0)
    );
"#
            .into(),
            cores: stubs(
                r#"
(* blackbox *)
module cmac_usplus_0(gt_ref_clk_p, gt_ref_clk_n, init_clk, sys_reset, gt_rxp_in, gt_rxn_in,
    gt_txp_out, gt_txn_out, gt_txusrclk2, rx_clk,
    gtwiz_reset_tx_datapath, gtwiz_reset_rx_datapath, gt_loopback_in,
    usr_tx_reset, usr_rx_reset, core_tx_reset, core_rx_reset, core_drp_reset, drp_clk,
    drp_addr, drp_di, drp_en, drp_we, ctl_rx_enable, ctl_rx_force_resync,
    ctl_rx_test_pattern, ctl_tx_enable, ctl_tx_send_rfi, ctl_tx_send_lfi, ctl_tx_send_idle,
    ctl_tx_test_pattern, ctl_rx_rsfec_enable, ctl_rx_rsfec_enable_correction,
    ctl_rx_rsfec_enable_indication, ctl_tx_rsfec_enable, ctl_rsfec_ieee_error_indication_mode,
    stat_rx_aligned, rx_axis_tvalid, rx_axis_tdata, rx_axis_tlast, rx_axis_tkeep,
    rx_axis_tuser, tx_axis_tready, tx_axis_tvalid, tx_axis_tdata,
    tx_axis_tlast, tx_axis_tkeep, tx_axis_tuser, tx_preamblein);
    input gt_ref_clk_p; input gt_ref_clk_n; input init_clk; input sys_reset;
    input [3:0] gt_rxp_in; input [3:0] gt_rxn_in; output [3:0] gt_txp_out;
    output [3:0] gt_txn_out; output gt_txusrclk2; input rx_clk;     input gtwiz_reset_tx_datapath; input gtwiz_reset_rx_datapath;
    input [11:0] gt_loopback_in; output usr_tx_reset;
    output usr_rx_reset; input core_tx_reset; input core_rx_reset; input core_drp_reset;
    input drp_clk; input [9:0] drp_addr; input [15:0] drp_di; input drp_en; input drp_we;
    input ctl_rx_enable; input ctl_rx_force_resync;
    input ctl_rx_test_pattern; input ctl_tx_enable; input ctl_tx_send_rfi;
    input ctl_tx_send_lfi; input ctl_tx_send_idle; input ctl_tx_test_pattern;
    input ctl_rx_rsfec_enable; input ctl_rx_rsfec_enable_correction;
    input ctl_rx_rsfec_enable_indication; input ctl_tx_rsfec_enable;
    input ctl_rsfec_ieee_error_indication_mode; output stat_rx_aligned;
    output rx_axis_tvalid; output [511:0] rx_axis_tdata; output rx_axis_tlast;
    output [63:0] rx_axis_tkeep; output rx_axis_tuser;     output tx_axis_tready; input tx_axis_tvalid; input [511:0] tx_axis_tdata;
    input tx_axis_tlast; input [63:0] tx_axis_tkeep; input tx_axis_tuser;     input [55:0] tx_preamblein;
endmodule
"#,
            ),
        })
    }
}

/// The 300 MHz board oscillator (SYSCLK1) divided by 3: the CMAC's free-running 100 MHz
/// `init_clk`, available before PCIe or the GTs come up.
#[derive(LogicBlock, Default)]
pub struct InitClock {
    pub clk_p: Signal<In, Clock>,
    pub clk_n: Signal<In, Clock>,
    pub clk_100: Signal<Out, Clock>,
}

impl Logic for InitClock {
    fn update(&mut self) {}

    fn connect(&mut self) {
        self.clk_100.connect();
    }

    fn hdl(&self) -> Verilog {
        Verilog::Wrapper(Wrapper {
            code: r#"
    wire clk_300;
    IBUFDS sysclk_buf (.I(clk_p), .IB(clk_n), .O(clk_300));
    BUFGCE_DIV #(.BUFGCE_DIVIDE(3)) div3 (.I(clk_300), .CE(1'b1), .CLR(1'b0), .O(clk_100));
"#
            .into(),
            cores: stubs(
                r#"
(* blackbox *)
module IBUFDS(I, IB, O);
    input I; input IB; output O;
endmodule
(* blackbox *)
module BUFGCE_DIV(I, CE, CLR, O);
    parameter BUFGCE_DIVIDE = 1;
    input I; input CE; input CLR; output O;
endmodule
"#,
            ),
        })
    }
}
