# AMD Alveo U250 pin assignments for the rnic board top (hdl/src/board/u250.rs, module `top`).
#
# Every PACKAGE_PIN and IOSTANDARD below is transcribed from AMD's published U250 material and
# cited on its line:
#   [BF] AMD board files for the Alveo U250, Xilinx/XilinxBoardStore,
#        boards/Xilinx/au250/1.3/part0_pins.xml (commit 1143dec6e6ae48f8217907999deaab5c046963bd),
#        the pin map Vivado's board flow uses for part xcu250-figd2104-2L-e; cited as
#        [BF] <pin name> loc=<site> [iostandard=<std>].
#   [MX] AMD "AU200/250 - Master XDC", Revision 2.04 (the U250 XDC AMD publishes with UG1289);
#        cited as [MX] <net name>. It names the low-speed QSFP pins and the clock frequencies.
# Transceiver (MGT) pins and MGT reference clocks are dedicated analog pins: they take no
# IOSTANDARD. Pins that could not be sourced are left out and listed in constraints/README.md.
# Untested on hardware.

## PCIe Gen3 x16 (GTY quads 224-227) ##########################################
set_property PACKAGE_PIN AM11 [get_ports pcie_refclk_p] ;# [BF] pcie_mgt_clkp loc=AM11; [MX] PEX_REFCLK_C_P MGTREFCLK0P_226, 100 MHz
set_property PACKAGE_PIN AM10 [get_ports pcie_refclk_n] ;# [BF] pcie_mgt_clkn loc=AM10; [MX] PEX_REFCLK_C_N MGTREFCLK0N_226
set_property PACKAGE_PIN BD21 [get_ports pcie_perst_n]  ;# [BF] pcie_perstn_rst loc=BD21 iostandard=LVCMOS12; [MX] PCIE_PERST_LS
set_property IOSTANDARD LVCMOS12 [get_ports pcie_perst_n] ;# [BF] pcie_perstn_rst iostandard=LVCMOS12; [MX] Bank 64 VCCO 1.2 V
set_property PACKAGE_PIN AF2  [get_ports {pcie_rx_p[0]}] ;# [BF] pcie_rx0_p loc=AF2
set_property PACKAGE_PIN AF1  [get_ports {pcie_rx_n[0]}] ;# [BF] pcie_rx0_n loc=AF1
set_property PACKAGE_PIN AF7  [get_ports {pcie_tx_p[0]}] ;# [BF] pcie_tx0_p loc=AF7
set_property PACKAGE_PIN AF6  [get_ports {pcie_tx_n[0]}] ;# [BF] pcie_tx0_n loc=AF6
set_property PACKAGE_PIN AG4  [get_ports {pcie_rx_p[1]}] ;# [BF] pcie_rx1_p loc=AG4
set_property PACKAGE_PIN AG3  [get_ports {pcie_rx_n[1]}] ;# [BF] pcie_rx1_n loc=AG3
set_property PACKAGE_PIN AG9  [get_ports {pcie_tx_p[1]}] ;# [BF] pcie_tx1_p loc=AG9
set_property PACKAGE_PIN AG8  [get_ports {pcie_tx_n[1]}] ;# [BF] pcie_tx1_n loc=AG8
set_property PACKAGE_PIN AH2  [get_ports {pcie_rx_p[2]}] ;# [BF] pcie_rx2_p loc=AH2
set_property PACKAGE_PIN AH1  [get_ports {pcie_rx_n[2]}] ;# [BF] pcie_rx2_n loc=AH1
set_property PACKAGE_PIN AH7  [get_ports {pcie_tx_p[2]}] ;# [BF] pcie_tx2_p loc=AH7
set_property PACKAGE_PIN AH6  [get_ports {pcie_tx_n[2]}] ;# [BF] pcie_tx2_n loc=AH6
set_property PACKAGE_PIN AJ4  [get_ports {pcie_rx_p[3]}] ;# [BF] pcie_rx3_p loc=AJ4
set_property PACKAGE_PIN AJ3  [get_ports {pcie_rx_n[3]}] ;# [BF] pcie_rx3_n loc=AJ3
set_property PACKAGE_PIN AJ9  [get_ports {pcie_tx_p[3]}] ;# [BF] pcie_tx3_p loc=AJ9
set_property PACKAGE_PIN AJ8  [get_ports {pcie_tx_n[3]}] ;# [BF] pcie_tx3_n loc=AJ8
set_property PACKAGE_PIN AK2  [get_ports {pcie_rx_p[4]}] ;# [BF] pcie_rx4_p loc=AK2
set_property PACKAGE_PIN AK1  [get_ports {pcie_rx_n[4]}] ;# [BF] pcie_rx4_n loc=AK1
set_property PACKAGE_PIN AK7  [get_ports {pcie_tx_p[4]}] ;# [BF] pcie_tx4_p loc=AK7
set_property PACKAGE_PIN AK6  [get_ports {pcie_tx_n[4]}] ;# [BF] pcie_tx4_n loc=AK6
set_property PACKAGE_PIN AL4  [get_ports {pcie_rx_p[5]}] ;# [BF] pcie_rx5_p loc=AL4
set_property PACKAGE_PIN AL3  [get_ports {pcie_rx_n[5]}] ;# [BF] pcie_rx5_n loc=AL3
set_property PACKAGE_PIN AL9  [get_ports {pcie_tx_p[5]}] ;# [BF] pcie_tx5_p loc=AL9
set_property PACKAGE_PIN AL8  [get_ports {pcie_tx_n[5]}] ;# [BF] pcie_tx5_n loc=AL8
set_property PACKAGE_PIN AM2  [get_ports {pcie_rx_p[6]}] ;# [BF] pcie_rx6_p loc=AM2
set_property PACKAGE_PIN AM1  [get_ports {pcie_rx_n[6]}] ;# [BF] pcie_rx6_n loc=AM1
set_property PACKAGE_PIN AM7  [get_ports {pcie_tx_p[6]}] ;# [BF] pcie_tx6_p loc=AM7
set_property PACKAGE_PIN AM6  [get_ports {pcie_tx_n[6]}] ;# [BF] pcie_tx6_n loc=AM6
set_property PACKAGE_PIN AN4  [get_ports {pcie_rx_p[7]}] ;# [BF] pcie_rx7_p loc=AN4
set_property PACKAGE_PIN AN3  [get_ports {pcie_rx_n[7]}] ;# [BF] pcie_rx7_n loc=AN3
set_property PACKAGE_PIN AN9  [get_ports {pcie_tx_p[7]}] ;# [BF] pcie_tx7_p loc=AN9
set_property PACKAGE_PIN AN8  [get_ports {pcie_tx_n[7]}] ;# [BF] pcie_tx7_n loc=AN8
set_property PACKAGE_PIN AP2  [get_ports {pcie_rx_p[8]}] ;# [BF] pcie_rx8_p loc=AP2
set_property PACKAGE_PIN AP1  [get_ports {pcie_rx_n[8]}] ;# [BF] pcie_rx8_n loc=AP1
set_property PACKAGE_PIN AP7  [get_ports {pcie_tx_p[8]}] ;# [BF] pcie_tx8_p loc=AP7
set_property PACKAGE_PIN AP6  [get_ports {pcie_tx_n[8]}] ;# [BF] pcie_tx8_n loc=AP6
set_property PACKAGE_PIN AR4  [get_ports {pcie_rx_p[9]}] ;# [BF] pcie_rx9_p loc=AR4
set_property PACKAGE_PIN AR3  [get_ports {pcie_rx_n[9]}] ;# [BF] pcie_rx9_n loc=AR3
set_property PACKAGE_PIN AR9  [get_ports {pcie_tx_p[9]}] ;# [BF] pcie_tx9_p loc=AR9
set_property PACKAGE_PIN AR8  [get_ports {pcie_tx_n[9]}] ;# [BF] pcie_tx9_n loc=AR8
set_property PACKAGE_PIN AT2  [get_ports {pcie_rx_p[10]}] ;# [BF] pcie_rx10_p loc=AT2
set_property PACKAGE_PIN AT1  [get_ports {pcie_rx_n[10]}] ;# [BF] pcie_rx10_n loc=AT1
set_property PACKAGE_PIN AT7  [get_ports {pcie_tx_p[10]}] ;# [BF] pcie_tx10_p loc=AT7
set_property PACKAGE_PIN AT6  [get_ports {pcie_tx_n[10]}] ;# [BF] pcie_tx10_n loc=AT6
set_property PACKAGE_PIN AU4  [get_ports {pcie_rx_p[11]}] ;# [BF] pcie_rx11_p loc=AU4
set_property PACKAGE_PIN AU3  [get_ports {pcie_rx_n[11]}] ;# [BF] pcie_rx11_n loc=AU3
set_property PACKAGE_PIN AU9  [get_ports {pcie_tx_p[11]}] ;# [BF] pcie_tx11_p loc=AU9
set_property PACKAGE_PIN AU8  [get_ports {pcie_tx_n[11]}] ;# [BF] pcie_tx11_n loc=AU8
set_property PACKAGE_PIN AV2  [get_ports {pcie_rx_p[12]}] ;# [BF] pcie_rx12_p loc=AV2
set_property PACKAGE_PIN AV1  [get_ports {pcie_rx_n[12]}] ;# [BF] pcie_rx12_n loc=AV1
set_property PACKAGE_PIN AV7  [get_ports {pcie_tx_p[12]}] ;# [BF] pcie_tx12_p loc=AV7
set_property PACKAGE_PIN AV6  [get_ports {pcie_tx_n[12]}] ;# [BF] pcie_tx12_n loc=AV6
set_property PACKAGE_PIN AW4  [get_ports {pcie_rx_p[13]}] ;# [BF] pcie_rx13_p loc=AW4
set_property PACKAGE_PIN AW3  [get_ports {pcie_rx_n[13]}] ;# [BF] pcie_rx13_n loc=AW3
set_property PACKAGE_PIN BB5  [get_ports {pcie_tx_p[13]}] ;# [BF] pcie_tx13_p loc=BB5
set_property PACKAGE_PIN BB4  [get_ports {pcie_tx_n[13]}] ;# [BF] pcie_tx13_n loc=BB4
set_property PACKAGE_PIN BA2  [get_ports {pcie_rx_p[14]}] ;# [BF] pcie_rx14_p loc=BA2
set_property PACKAGE_PIN BA1  [get_ports {pcie_rx_n[14]}] ;# [BF] pcie_rx14_n loc=BA1
set_property PACKAGE_PIN BD5  [get_ports {pcie_tx_p[14]}] ;# [BF] pcie_tx14_p loc=BD5
set_property PACKAGE_PIN BD4  [get_ports {pcie_tx_n[14]}] ;# [BF] pcie_tx14_n loc=BD4
set_property PACKAGE_PIN BC2  [get_ports {pcie_rx_p[15]}] ;# [BF] pcie_rx15_p loc=BC2
set_property PACKAGE_PIN BC1  [get_ports {pcie_rx_n[15]}] ;# [BF] pcie_rx15_n loc=BC1
set_property PACKAGE_PIN BF5  [get_ports {pcie_tx_p[15]}] ;# [BF] pcie_tx15_p loc=BF5
set_property PACKAGE_PIN BF4  [get_ports {pcie_tx_n[15]}] ;# [BF] pcie_tx15_n loc=BF4

## QSFP28 port 0 (GTY quad 231), 100GBASE-R4 (CAUI-4) #########################
set_property PACKAGE_PIN K11 [get_ports qsfp0_refclk_p] ;# [BF] qsfp0_161mhz_p loc=K11; [MX] QSFP0_CLOCK_P MGTREFCLK1P_231, 161.1328125 MHz
set_property PACKAGE_PIN K10 [get_ports qsfp0_refclk_n] ;# [BF] qsfp0_161mhz_n loc=K10; [MX] QSFP0_CLOCK_N MGTREFCLK1N_231
set_property PACKAGE_PIN N4  [get_ports {qsfp0_rx_p[0]}] ;# [BF] qsfp0_RX_P0 loc=N4; [MX] MGTYRXP0_231
set_property PACKAGE_PIN N3  [get_ports {qsfp0_rx_n[0]}] ;# [BF] qsfp0_RX_N0 loc=N3; [MX] MGTYRXN0_231
set_property PACKAGE_PIN N9  [get_ports {qsfp0_tx_p[0]}] ;# [BF] qsfp0_TX_P0 loc=N9; [MX] MGTYTXP0_231
set_property PACKAGE_PIN N8  [get_ports {qsfp0_tx_n[0]}] ;# [BF] qsfp0_TX_N0 loc=N8; [MX] MGTYTXN0_231
set_property PACKAGE_PIN M2  [get_ports {qsfp0_rx_p[1]}] ;# [BF] qsfp0_RX_P1 loc=M2; [MX] MGTYRXP1_231
set_property PACKAGE_PIN M1  [get_ports {qsfp0_rx_n[1]}] ;# [BF] qsfp0_RX_N1 loc=M1; [MX] MGTYRXN1_231
set_property PACKAGE_PIN M7  [get_ports {qsfp0_tx_p[1]}] ;# [BF] qsfp0_TX_P1 loc=M7; [MX] MGTYTXP1_231
set_property PACKAGE_PIN M6  [get_ports {qsfp0_tx_n[1]}] ;# [BF] qsfp0_TX_N1 loc=M6; [MX] MGTYTXN1_231
set_property PACKAGE_PIN L4  [get_ports {qsfp0_rx_p[2]}] ;# [BF] qsfp0_RX_P2 loc=L4; [MX] MGTYRXP2_231
set_property PACKAGE_PIN L3  [get_ports {qsfp0_rx_n[2]}] ;# [BF] qsfp0_RX_N2 loc=L3; [MX] MGTYRXN2_231
set_property PACKAGE_PIN L9  [get_ports {qsfp0_tx_p[2]}] ;# [BF] qsfp0_TX_P2 loc=L9; [MX] MGTYTXP2_231
set_property PACKAGE_PIN L8  [get_ports {qsfp0_tx_n[2]}] ;# [BF] qsfp0_TX_N2 loc=L8; [MX] MGTYTXN2_231
set_property PACKAGE_PIN K2  [get_ports {qsfp0_rx_p[3]}] ;# [BF] qsfp0_RX_P3 loc=K2; [MX] MGTYRXP3_231
set_property PACKAGE_PIN K1  [get_ports {qsfp0_rx_n[3]}] ;# [BF] qsfp0_RX_N3 loc=K1; [MX] MGTYRXN3_231
set_property PACKAGE_PIN K7  [get_ports {qsfp0_tx_p[3]}] ;# [BF] qsfp0_TX_P3 loc=K7; [MX] MGTYTXP3_231
set_property PACKAGE_PIN K6  [get_ports {qsfp0_tx_n[3]}] ;# [BF] qsfp0_TX_N3 loc=K6; [MX] MGTYTXN3_231
# Module control (bank 64, 1.2 V); [BF] lists them as qsfp0_lowspeed_0..4, [MX] names them.
set_property PACKAGE_PIN BE17 [get_ports qsfp0_resetl]  ;# [BF] qsfp0_lowspeed_1 loc=BE17; [MX] QSFP0_RESETL_LS (active-low reset to the module)
set_property PACKAGE_PIN BD18 [get_ports qsfp0_lpmode]  ;# [BF] qsfp0_lowspeed_0 loc=BD18; [MX] QSFP0_LPMODE_LS (high = low power)
set_property PACKAGE_PIN BE16 [get_ports qsfp0_modsell] ;# [BF] qsfp0_lowspeed_2 loc=BE16; [MX] QSFP0_MODSELL_LS (active-low I2C select)
set_property IOSTANDARD LVCMOS12 [get_ports qsfp0_resetl] ;# [BF] qsfp0_lowspeed_* iostandard=LVCMOS12; [MX] LVCMOS12
set_property IOSTANDARD LVCMOS12 [get_ports qsfp0_lpmode] ;# [BF] qsfp0_lowspeed_* iostandard=LVCMOS12; [MX] LVCMOS12
set_property IOSTANDARD LVCMOS12 [get_ports qsfp0_modsell] ;# [BF] qsfp0_lowspeed_* iostandard=LVCMOS12; [MX] LVCMOS12
set_property DRIVE 8 [get_ports {qsfp0_resetl qsfp0_lpmode qsfp0_modsell}] ;# [BF] qsfp0_lowspeed_* drive=8
# Reference-clock select of QSFP0's SI5335 (only in [MX]): FS[1:0] = 1X -> 161.1328125 MHz.
set_property PACKAGE_PIN AT20 [get_ports {qsfp0_fs[0]}]     ;# [MX] QSFP0_FS0 IO_L10P_T1U_N6_QBC_AD4P_64, LVCMOS12
set_property PACKAGE_PIN AU22 [get_ports {qsfp0_fs[1]}]     ;# [MX] QSFP0_FS1 IO_L9N_T1L_N5_AD12N_64, LVCMOS12
set_property PACKAGE_PIN AT22 [get_ports qsfp0_refclk_reset] ;# [MX] QSFP0_REFCLK_RESET IO_L9P_T1L_N4_AD12P_64, LVCMOS12 (high = reset)
set_property IOSTANDARD LVCMOS12 [get_ports {qsfp0_fs[*] qsfp0_refclk_reset}] ;# [MX] LVCMOS12 (Rev 2.02: bank 64 is 1.2 V)

## SYSCLK1, 300 MHz (SI5335 OUT0 via SI53340 OUT1): the CMAC's free-running init clock ##
set_property PACKAGE_PIN AW20 [get_ports sysclk1_300_p] ;# [BF] default_300mhz_clk1_p loc=AW20 iostandard=LVDS; [MX] SYSCLK1_300_P
set_property PACKAGE_PIN AW19 [get_ports sysclk1_300_n] ;# [BF] default_300mhz_clk1_n loc=AW19 iostandard=LVDS; [MX] SYSCLK1_300_N
set_property IOSTANDARD LVDS [get_ports {sysclk1_300_p sysclk1_300_n}] ;# [BF] default_300mhz_clk1_* iostandard=LVDS; [MX] LVDS
set_property DQS_BIAS TRUE [get_ports {sysclk1_300_p sysclk1_300_n}] ;# [BF] default_300mhz_clk1_* dqs_bias=TRUE

## Configuration ###############################################################
set_property CONFIG_VOLTAGE 1.8 [current_design]                  ;# [MX] "Bitstream Generation for QSPI"
set_property BITSTREAM.CONFIG.UNUSEDPIN Pullup [current_design]   ;# [MX] same block: unused pins pulled up
