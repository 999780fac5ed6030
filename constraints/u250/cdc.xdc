# Constraints on the IP-generated clocks, read after synth_design (the clocks exist only once
# the IP constraints are in the design).
#
# core (250 MHz, 4.000 ns) <-> mac (322.265625 MHz, 3.103 ns): every path between them goes
# through MacRxCdc/MacTxCdc. The FIFO RAM contents and the handshake-held pointer words are
# stable for several destination cycles before the synchronized flag lets the other side use
# them, so each crossing path only has to arrive within one destination period; clock skew
# does not apply (-datapath_only).
set core_clk [get_clocks -of_objects [get_pins pcie/bridge/axi_aclk]]
set mac_clk  [get_clocks -of_objects [get_pins mac/mac/gt_txusrclk2]]
if {[llength $core_clk] != 1 || [llength $mac_clk] != 1} {
    error "cdc.xdc: expected one clock on pcie/bridge/axi_aclk and on mac/mac/gt_txusrclk2, got '$core_clk' and '$mac_clk'"
}
set_max_delay -datapath_only -from $core_clk -to $mac_clk [get_property PERIOD $mac_clk]
set_max_delay -datapath_only -from $mac_clk -to $core_clk [get_property PERIOD $core_clk]
