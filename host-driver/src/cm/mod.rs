//! Communication management (IBTA Vol 1 ch. 12; RoCEv2 per Annex A17; librdmacm's RDMA IP
//! CM service, Annex A11): the connection messages a CM exchanges in MADs on QP1.
//!
//! Today this is the wire format ([`mad`]), checked against Wireshark's dissector. The
//! connection manager that sends and answers these MADs needs UD QPs and QP1 in the NIC
//! (issue 15); until then two rnic hosts connect by exchanging `Endpoint`s.
pub mod mad;
