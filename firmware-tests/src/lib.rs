//! System tests of the rnic RTL, and the reference they check against: a software model of the
//! RoCEv2 wire format ([`wire`]).

pub mod wire;
