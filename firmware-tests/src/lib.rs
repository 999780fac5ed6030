//! System tests of the rnic RTL, and the reference they check against: a software model of the
//! RoCEv2 wire format ([`wire`]) and wrappers around external tools that check frames
//! independently of our own code ([`oracle`]: tshark's InfiniBand dissector, scapy's RoCE
//! layer, pcap files).

pub mod oracle;
pub mod wire;
