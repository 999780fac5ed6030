//! Base Transport Header opcodes and AETH syndromes (IBTA Vol 1 9.2, Table 37; 9.7.5.1).

/// RC transport opcodes (transport bits 7:5 = 000).
pub mod opcode {
    pub const SEND_FIRST: u8 = 0x00;
    pub const SEND_MIDDLE: u8 = 0x01;
    pub const SEND_LAST: u8 = 0x02;
    pub const SEND_LAST_WITH_IMMEDIATE: u8 = 0x03;
    pub const SEND_ONLY: u8 = 0x04;
    pub const SEND_ONLY_WITH_IMMEDIATE: u8 = 0x05;
    pub const RDMA_WRITE_FIRST: u8 = 0x06;
    pub const RDMA_WRITE_MIDDLE: u8 = 0x07;
    pub const RDMA_WRITE_LAST: u8 = 0x08;
    pub const RDMA_WRITE_LAST_WITH_IMMEDIATE: u8 = 0x09;
    pub const RDMA_WRITE_ONLY: u8 = 0x0A;
    pub const RDMA_WRITE_ONLY_WITH_IMMEDIATE: u8 = 0x0B;
    pub const RDMA_READ_REQUEST: u8 = 0x0C;
    pub const RDMA_READ_RESPONSE_FIRST: u8 = 0x0D;
    pub const RDMA_READ_RESPONSE_MIDDLE: u8 = 0x0E;
    pub const RDMA_READ_RESPONSE_LAST: u8 = 0x0F;
    pub const RDMA_READ_RESPONSE_ONLY: u8 = 0x10;
    pub const ACKNOWLEDGE: u8 = 0x11;
    pub const ATOMIC_ACKNOWLEDGE: u8 = 0x12;
    pub const COMPARE_SWAP: u8 = 0x13;
    pub const FETCH_ADD: u8 = 0x14;
    pub const SEND_LAST_WITH_INVALIDATE: u8 = 0x16;
    pub const SEND_ONLY_WITH_INVALIDATE: u8 = 0x17;
}

/// UD transport opcodes (transport bits 7:5 = 011; IBTA Vol 1 9.2, Table 37): one packet per
/// message, BTH then DETH (then ImmDt).
pub mod ud_opcode {
    pub const SEND_ONLY: u8 = 0x64;
    pub const SEND_ONLY_WITH_IMMEDIATE: u8 = 0x65;
}

/// AETH syndrome values (bits 7:5 type, 4:0 value).
pub mod syndrome {
    /// ACK with no credit information (credit code 0x1F).
    pub const ACK: u8 = 0x1F;
    /// NAK type (bits 7:5 = 011).
    pub const NAK: u8 = 0x60;
    /// NAK: PSN sequence error.
    pub const NAK_PSN_SEQ_ERR: u8 = 0x60;
    /// NAK: invalid request.
    pub const NAK_INV_REQ: u8 = 0x61;
    /// NAK: remote access error.
    pub const NAK_REM_ACCESS: u8 = 0x62;
    /// NAK: remote operational error.
    pub const NAK_REM_OP: u8 = 0x63;
    /// RNR NAK type (bits 7:5 = 001); bits 4:0 carry the minimum RNR NAK timer code
    /// (IBTA Vol 1 9.7.5.2.8, Table 45).
    pub const RNR_NAK: u8 = 0x20;
}

/// Header lengths in bytes.
pub mod len {
    pub const ETH: usize = 14;
    pub const IPV4: usize = 20;
    pub const UDP: usize = 8;
    pub const BTH: usize = 12;
    pub const RETH: usize = 16;
    /// Datagram Extended Transport Header: Q_Key (4), reserved (1), source QP (3); IBTA Vol 1
    /// 9.3.3.
    pub const DETH: usize = 8;
    pub const AETH: usize = 4;
    pub const IMMDT: usize = 4;
    pub const ICRC: usize = 4;
    /// Bytes of Ethernet/IPv4/UDP/BTH before any extension header.
    pub const BASE: usize = ETH + IPV4 + UDP + BTH;
}
