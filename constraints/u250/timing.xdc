# Clocks and clock-domain-crossing constraints of the rnic U250 board top, read before
# synthesis (cdc.xdc, read after synthesis, holds the constraints on IP-generated clocks).
#
# Board clocks (frequencies from AMD's U250 master XDC, Rev 2.04, "Clock Trees"):
#   PCIe edge reference   100 MHz          ("PCIE Fingers PEX_REFCLK ... 100.000Mhz")
#   QSFP0 reference       161.1328125 MHz  (SI5335 OUT1 with FS[1:0] = 1X)
#   SYSCLK1               300 MHz          (SI5335 OUT0 via SI53340 OUT1)
create_clock -period 10.000 -name pcie_refclk  [get_ports pcie_refclk_p]
create_clock -period 6.206  -name qsfp0_refclk [get_ports qsfp0_refclk_p]
create_clock -period 3.333  -name sysclk1_300  [get_ports sysclk1_300_p]
#
# Derived clocks, created by the IP's own constraints (not here):
#   core  250 MHz          xdma_0 axi_aclk (axisten_freq 250), clocks the NIC core and BAR0
#   mac   322.265625 MHz   cmac_usplus_0 gt_txusrclk2, clocks both MAC stream directions
#   init  100 MHz          BUFGCE_DIV /3 of SYSCLK1, derived by Vivado from sysclk1_300
#
# The crossings' synchronizer flip-flops (rust-hdl BitSynchronizer dff0/dff1 inside the
# AsynchronousFIFOs of MacRxCdc and MacTxCdc): keep them together and out of SRLs.
set_property ASYNC_REG TRUE [get_cells -hierarchical -regexp {.*(rx_cdc|tx_cdc)/.*/sync/dff[01]/q_reg.*}]
