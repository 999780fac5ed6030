//! The AMD Alveo U250 board top level: PCIe Gen3 x16 (BAR0 + DMA through the AXI bridge),
//! QSFP0 at 100G (CMAC), the NIC core, and the clock-domain crossings between them.
use super::bar0::Bar0Bridge;
use super::cdc::{MacRxCdc, MacTxCdc};
use super::usr_irq::UsrIrqBridge;
use super::vendor::{Cmac100g, InitClock, PcieBridge};
use crate::top::NicTop;
use rust_hdl::prelude::*;

/// The bitstream's top module (`top`). Port names are the ones `constraints/u250/pins.xdc`
/// places.
///
/// Clock domains:
/// - core, 250 MHz: the PCIe bridge's `axi_aclk`. BAR0 and DMA are in it, so the only
///   crossing is to the MAC.
/// - MAC, 322.265625 MHz: the CMAC's `gt_txusrclk2` (TX and RX user interfaces).
/// - init, 100 MHz: SYSCLK1 (300 MHz) / 3, free-running, for the CMAC's reset logic.
///
/// Resets: the core is held in reset while the bridge's `axi_aresetn` is low (PCIe PERST# or
/// link down); the MAC side by the CMAC's `usr_tx_reset`; the CMAC by a power-on counter in
/// the init domain.
///
/// No status LEDs: AMD's U250 master XDC lists the STATUS_LED pins under "leave
/// un-instantiated ... or signal contention with Satellite Controller".
#[derive(LogicBlock, Default)]
pub struct U250Top {
    pub pcie_refclk_p: Signal<In, Clock>,
    pub pcie_refclk_n: Signal<In, Clock>,
    pub pcie_perst_n: Signal<In, Bit>,
    pub pcie_rx_p: Signal<In, Bits<16>>,
    pub pcie_rx_n: Signal<In, Bits<16>>,
    pub pcie_tx_p: Signal<Out, Bits<16>>,
    pub pcie_tx_n: Signal<Out, Bits<16>>,
    pub qsfp0_refclk_p: Signal<In, Clock>,
    pub qsfp0_refclk_n: Signal<In, Clock>,
    pub qsfp0_rx_p: Signal<In, Bits<4>>,
    pub qsfp0_rx_n: Signal<In, Bits<4>>,
    pub qsfp0_tx_p: Signal<Out, Bits<4>>,
    pub qsfp0_tx_n: Signal<Out, Bits<4>>,
    pub qsfp0_resetl: Signal<Out, Bit>,
    pub qsfp0_lpmode: Signal<Out, Bit>,
    pub qsfp0_modsell: Signal<Out, Bit>,
    /// QSFP0 reference-clock select of the SI5335 (FS1, FS0) and its reset (high = reset).
    pub qsfp0_fs: Signal<Out, Bits<2>>,
    pub qsfp0_refclk_reset: Signal<Out, Bit>,
    pub sysclk1_300_p: Signal<In, Clock>,
    pub sysclk1_300_n: Signal<In, Clock>,
    pcie: PcieBridge,
    bar0: Bar0Bridge,
    nic: NicTop,
    mac: Cmac100g,
    init: InitClock,
    rx_cdc: MacRxCdc,
    tx_cdc: MacTxCdc,
    irq: UsrIrqBridge,
    core_reset: DFF<Bit>,
    por: DFF<Bits<8>>,
    mac_reset: DFF<Bit>,
    tx_enable: DFF<Bit>,
}

impl Logic for U250Top {
    #[hdl_gen]
    fn update(&mut self) {
        // ---- PCIe: lanes, reference clock, and the core clock it makes ----
        self.pcie.refclk_p.next = self.pcie_refclk_p.val();
        self.pcie.refclk_n.next = self.pcie_refclk_n.val();
        self.pcie.perst_n.next = self.pcie_perst_n.val();
        self.pcie.rxp.next = self.pcie_rx_p.val();
        self.pcie.rxn.next = self.pcie_rx_n.val();
        self.pcie_tx_p.next = self.pcie.txp.val();
        self.pcie_tx_n.next = self.pcie.txn.val();
        self.core_reset.clock.next = self.pcie.axi_aclk.val();
        // axi_aresetn is synchronous to axi_aclk (PG195); one register for fan-out.
        self.core_reset.d.next = !self.pcie.axi_aresetn.val();
        self.nic.clock.next = self.pcie.axi_aclk.val();
        self.nic.reset.next = self.core_reset.q.val();
        self.bar0.clock.next = self.pcie.axi_aclk.val();
        self.bar0.reset.next = self.core_reset.q.val();

        // ---- BAR0: bridge master → AXI4-Lite → core registers ----
        self.bar0.awid.next = self.pcie.bar_awid.val();
        self.bar0.awaddr.next = self.pcie.bar_awaddr.val();
        self.bar0.awlen.next = self.pcie.bar_awlen.val();
        self.bar0.awsize.next = self.pcie.bar_awsize.val();
        self.bar0.awvalid.next = self.pcie.bar_awvalid.val();
        self.pcie.bar_awready.next = self.bar0.awready.val();
        self.bar0.wdata.next = self.pcie.bar_wdata.val();
        self.bar0.wstrb.next = self.pcie.bar_wstrb.val();
        self.bar0.wvalid.next = self.pcie.bar_wvalid.val();
        self.pcie.bar_wready.next = self.bar0.wready.val();
        self.pcie.bar_bid.next = self.bar0.bid.val();
        self.pcie.bar_bresp.next = self.bar0.bresp.val();
        self.pcie.bar_bvalid.next = self.bar0.bvalid.val();
        self.bar0.bready.next = self.pcie.bar_bready.val();
        self.bar0.arid.next = self.pcie.bar_arid.val();
        self.bar0.araddr.next = self.pcie.bar_araddr.val();
        self.bar0.arlen.next = self.pcie.bar_arlen.val();
        self.bar0.arsize.next = self.pcie.bar_arsize.val();
        self.bar0.arvalid.next = self.pcie.bar_arvalid.val();
        self.pcie.bar_arready.next = self.bar0.arready.val();
        self.pcie.bar_rid.next = self.bar0.rid.val();
        self.pcie.bar_rdata.next = self.bar0.rdata.val();
        self.pcie.bar_rresp.next = self.bar0.rresp.val();
        self.pcie.bar_rlast.next = self.bar0.rlast.val();
        self.pcie.bar_rvalid.next = self.bar0.rvalid.val();
        self.bar0.rready.next = self.pcie.bar_rready.val();
        self.nic.s_axil_awaddr.next = self.bar0.l_awaddr.val();
        self.nic.s_axil_awvalid.next = self.bar0.l_awvalid.val();
        self.bar0.l_awready.next = self.nic.s_axil_awready.val();
        self.nic.s_axil_wdata.next = self.bar0.l_wdata.val();
        self.nic.s_axil_wstrb.next = self.bar0.l_wstrb.val();
        self.nic.s_axil_wvalid.next = self.bar0.l_wvalid.val();
        self.bar0.l_wready.next = self.nic.s_axil_wready.val();
        self.bar0.l_bresp.next = self.nic.s_axil_bresp.val();
        self.bar0.l_bvalid.next = self.nic.s_axil_bvalid.val();
        self.nic.s_axil_bready.next = self.bar0.l_bready.val();
        self.nic.s_axil_araddr.next = self.bar0.l_araddr.val();
        self.nic.s_axil_arvalid.next = self.bar0.l_arvalid.val();
        self.bar0.l_arready.next = self.nic.s_axil_arready.val();
        self.bar0.l_rdata.next = self.nic.s_axil_rdata.val();
        self.bar0.l_rresp.next = self.nic.s_axil_rresp.val();
        self.bar0.l_rvalid.next = self.nic.s_axil_rvalid.val();
        self.nic.s_axil_rready.next = self.bar0.l_rready.val();

        // ---- DMA: core AXI4 master → bridge slave (host memory) ----
        self.pcie.dma_awid.next = self.nic.m_axi_awid.val();
        self.pcie.dma_awaddr.next = self.nic.m_axi_awaddr.val();
        self.pcie.dma_awlen.next = self.nic.m_axi_awlen.val();
        self.pcie.dma_awsize.next = self.nic.m_axi_awsize.val();
        self.pcie.dma_awburst.next = self.nic.m_axi_awburst.val();
        self.pcie.dma_awvalid.next = self.nic.m_axi_awvalid.val();
        self.nic.m_axi_awready.next = self.pcie.dma_awready.val();
        self.pcie.dma_wdata.next = self.nic.m_axi_wdata.val();
        self.pcie.dma_wstrb.next = self.nic.m_axi_wstrb.val();
        self.pcie.dma_wlast.next = self.nic.m_axi_wlast.val();
        self.pcie.dma_wvalid.next = self.nic.m_axi_wvalid.val();
        self.nic.m_axi_wready.next = self.pcie.dma_wready.val();
        self.nic.m_axi_bid.next = self.pcie.dma_bid.val();
        self.nic.m_axi_bresp.next = self.pcie.dma_bresp.val();
        self.nic.m_axi_bvalid.next = self.pcie.dma_bvalid.val();
        self.pcie.dma_bready.next = self.nic.m_axi_bready.val();
        self.pcie.dma_arid.next = self.nic.m_axi_arid.val();
        self.pcie.dma_araddr.next = self.nic.m_axi_araddr.val();
        self.pcie.dma_arlen.next = self.nic.m_axi_arlen.val();
        self.pcie.dma_arsize.next = self.nic.m_axi_arsize.val();
        self.pcie.dma_arburst.next = self.nic.m_axi_arburst.val();
        self.pcie.dma_arvalid.next = self.nic.m_axi_arvalid.val();
        self.nic.m_axi_arready.next = self.pcie.dma_arready.val();
        self.nic.m_axi_rid.next = self.pcie.dma_rid.val();
        self.nic.m_axi_rdata.next = self.pcie.dma_rdata.val();
        self.nic.m_axi_rresp.next = self.pcie.dma_rresp.val();
        self.nic.m_axi_rlast.next = self.pcie.dma_rlast.val();
        self.nic.m_axi_rvalid.next = self.pcie.dma_rvalid.val();
        self.pcie.dma_rready.next = self.nic.m_axi_rready.val();

        // ---- 100G MAC on QSFP0 ----
        self.init.clk_p.next = self.sysclk1_300_p.val();
        self.init.clk_n.next = self.sysclk1_300_n.val();
        self.por.clock.next = self.init.clk_100.val();
        self.por.d.next = self.por.q.val();
        // Power-on reset: the CMAC's sys_reset stays high for 255 init-clock cycles (2.55 µs)
        // after configuration (the DFF's initial value is the power-up state).
        if self.por.q.val() != 255 {
            self.por.d.next = self.por.q.val() + 1;
        }
        self.mac.init_clk.next = self.init.clk_100.val();
        self.mac.sys_reset.next = (self.por.q.val() != 255).into();
        self.mac.refclk_p.next = self.qsfp0_refclk_p.val();
        self.mac.refclk_n.next = self.qsfp0_refclk_n.val();
        self.mac.rxp.next = self.qsfp0_rx_p.val();
        self.mac.rxn.next = self.qsfp0_rx_n.val();
        self.qsfp0_tx_p.next = self.mac.txp.val();
        self.qsfp0_tx_n.next = self.mac.txn.val();
        // Module out of reset, full power, not selected for I2C (no management yet).
        self.qsfp0_resetl.next = true;
        self.qsfp0_lpmode.next = false;
        self.qsfp0_modsell.next = true;
        // FS = 1X selects 161.1328125 MHz, the board's power-up default; driven rather than
        // left to the pull-ups so the bitstream's unused-pin setting cannot change it.
        self.qsfp0_fs.next = 2.into();
        self.qsfp0_refclk_reset.next = false;
        self.mac_reset.clock.next = self.mac.usr_clk.val();
        self.tx_enable.clock.next = self.mac.usr_clk.val();
        self.mac_reset.d.next = self.mac.usr_tx_reset.val() | self.mac.usr_rx_reset.val();
        // PG203 bring-up: remote fault until RX is aligned, then transmit.
        self.tx_enable.d.next = self.mac.rx_aligned.val();
        self.mac.ctl_tx_enable.next = self.tx_enable.q.val();
        self.mac.ctl_tx_send_rfi.next = !self.tx_enable.q.val();

        // ---- MAC ↔ core crossings ----
        self.rx_cdc.mac_clock.next = self.mac.usr_clk.val();
        self.rx_cdc.mac_reset.next = self.mac_reset.q.val();
        self.rx_cdc.core_clock.next = self.pcie.axi_aclk.val();
        self.rx_cdc.s_tdata.next = self.mac.rx_tdata.val();
        self.rx_cdc.s_tkeep.next = self.mac.rx_tkeep.val();
        self.rx_cdc.s_tlast.next = self.mac.rx_tlast.val();
        self.rx_cdc.s_tuser.next = self.mac.rx_tuser.val();
        self.rx_cdc.s_tvalid.next = self.mac.rx_tvalid.val();
        self.nic.s_axis_rx_tdata.next = self.rx_cdc.m_tdata.val();
        self.nic.s_axis_rx_tkeep.next = self.rx_cdc.m_tkeep.val();
        self.nic.s_axis_rx_tlast.next = self.rx_cdc.m_tlast.val();
        self.nic.s_axis_rx_tuser.next = self.rx_cdc.m_tuser.val();
        self.nic.s_axis_rx_tvalid.next = self.rx_cdc.m_tvalid.val();
        // ---- Interrupts: the NIC's messages on the XDMA core's user interrupts (MSI-X) ----
        self.irq.clock.next = self.pcie.axi_aclk.val();
        self.irq.reset.next = self.core_reset.q.val();
        self.irq.irq_valid.next = self.nic.irq_valid.val();
        self.irq.irq_vector.next = self.nic.irq_vector.val();
        self.nic.irq_ready.next = self.irq.irq_ready.val();
        self.pcie.usr_irq_req.next = self.irq.usr_irq_req.val();
        self.irq.usr_irq_ack.next = self.pcie.usr_irq_ack.val();

        self.tx_cdc.core_clock.next = self.pcie.axi_aclk.val();
        self.tx_cdc.core_reset.next = self.core_reset.q.val();
        self.tx_cdc.mac_clock.next = self.mac.usr_clk.val();
        self.tx_cdc.mac_reset.next = self.mac_reset.q.val();
        self.tx_cdc.s_tdata.next = self.nic.m_axis_tx_tdata.val();
        self.tx_cdc.s_tkeep.next = self.nic.m_axis_tx_tkeep.val();
        self.tx_cdc.s_tlast.next = self.nic.m_axis_tx_tlast.val();
        self.tx_cdc.s_tvalid.next = self.nic.m_axis_tx_tvalid.val();
        self.nic.m_axis_tx_tready.next = self.tx_cdc.s_tready.val();
        self.mac.tx_tdata.next = self.tx_cdc.m_tdata.val();
        self.mac.tx_tkeep.next = self.tx_cdc.m_tkeep.val();
        self.mac.tx_tlast.next = self.tx_cdc.m_tlast.val();
        self.mac.tx_tvalid.next = self.tx_cdc.m_tvalid.val();
        self.tx_cdc.m_tready.next = self.mac.tx_tready.val();
    }
}
