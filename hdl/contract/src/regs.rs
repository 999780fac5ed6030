//! BAR0 register map (AXI4-Lite, 32-bit registers, byte addresses, 16-bit address space).
//!
//! Reads of unmapped addresses return 0 with OKAY; writes to read-only registers are ignored.
//! Doorbells and context commands are write-only and take effect in the order written.

/// Width of the BAR0 address in bits (64 KiB BAR).
pub const ADDR_BITS: usize = 16;

/// Identification: reads [`ID_VALUE`].
pub const ID: u16 = 0x0000;
/// ASCII "RNIC".
pub const ID_VALUE: u32 = 0x524E_4943;
/// Version: `major << 16 | minor`.
pub const VERSION: u16 = 0x0004;
/// Contract version implemented by this RTL and driver.
pub const VERSION_VALUE: u32 = 0x0000_0001;
/// Capabilities, see [`caps`].
pub const CAPS: u16 = 0x0008;
/// Core clock in MHz (reads 250).
pub const CLOCK_MHZ: u16 = 0x000C;

/// Capability word fields.
pub mod caps {
    /// Bits 3:0: log2 of the number of QPs.
    pub const LOG_QPS_SHIFT: u32 = 0;
    /// Bits 7:4: log2 of the number of MR key-table entries.
    pub const LOG_MRS_SHIFT: u32 = 4;
    /// Bits 11:8: log2 of the number of CQs.
    pub const LOG_CQS_SHIFT: u32 = 8;
    /// Bits 15:12: log2 of the maximum unacknowledged WQEs per QP.
    pub const LOG_INFLIGHT_SHIFT: u32 = 12;
    /// Bits 23:16: datapath width in bytes.
    pub const DATAPATH_BYTES_SHIFT: u32 = 16;
}

/// The port's source MAC address, bytes 0..4 (byte 0 of the address in bits 7:0).
pub const MAC_LO: u16 = 0x0010;
/// The port's source MAC address, bytes 4..6 in bits 15:0.
pub const MAC_HI: u16 = 0x0014;
/// The port's IPv4 address, first octet in bits 31:24 (network order as a number).
pub const IPV4_ADDR: u16 = 0x0018;

/// SQ doorbell: write `qpn << 16 | sq_producer_index` (the producer index counts WQEs posted,
/// modulo 2^16). The NIC fetches WQEs from the QP's SQ ring up to that index.
pub const SQ_DOORBELL: u16 = 0x0100;

/// RQ doorbell: write `qpn << 16 | rq_producer_index` (receive WQEs posted, modulo 2^16). The
/// responder consumes receive WQEs from the QP's RQ ring up to that index; a SEND that finds
/// none is answered with an RNR NAK.
pub const RQ_DOORBELL: u16 = 0x0104;

/// Context-command staging words: 16 registers at `CMD_DATA + 4*i` holding the 512-bit record
/// (word `i` = record bits `32*i+31 .. 32*i`) that the next [`CMD`] commits.
pub const CMD_DATA: u16 = 0x0200;
/// Number of staging words.
pub const CMD_DATA_WORDS: usize = 16;
/// Context command: write `op << 24 | index` to commit the staging record. See [`cmd_op`].
/// Commands complete in 2 cycles; the AXI4-Lite write response is returned after the commit,
/// so a later MMIO access always sees it.
pub const CMD: u16 = 0x0240;

/// Context-command opcodes (bits 31:24 of [`CMD`]).
pub mod cmd_op {
    /// Write a QP context (staging record laid out as [`crate::qp_context`]).
    pub const WRITE_QP: u32 = 1;
    /// Write a memory-region key-table entry ([`crate::mr_entry`]); index = lkey/rkey bits 15:8.
    pub const WRITE_MR: u32 = 2;
    /// Write a CQ context ([`crate::cq_context`]); resets the CQ's producer index to 0.
    pub const WRITE_CQ: u32 = 3;
    /// Write an SRQ context ([`crate::srq_context`]); index = SRQ number.
    pub const WRITE_SRQ: u32 = 4;
}

/// Statistics and drop counters: 32-bit, wrap around, read-only, one register each at
/// `COUNTERS + 4 * index` with `index` from [`counter`].
pub const COUNTERS: u16 = 0x0400;

/// Counter indices (see [`COUNTERS`]).
pub mod counter {
    /// Frames accepted from the MAC (any content).
    pub const RX_FRAMES: u16 = 0;
    /// Frames handed to the MAC.
    pub const TX_FRAMES: u16 = 1;
    /// RoCEv2 packets that passed every check and were executed or acknowledged.
    pub const RX_ROCE_OK: u16 = 2;
    /// Dropped: ICRC mismatch.
    pub const DROP_ICRC: u16 = 3;
    /// Dropped: not a well-formed Ethernet/IPv4/UDP:4791/BTH packet (bad EtherType, IP version or
    /// header length, fragments, lengths that disagree with the frame, unknown or unsupported
    /// opcode, MAC-signalled FCS error).
    pub const DROP_MALFORMED: u16 = 4;
    /// Dropped: destination QP does not exist or is not in a state that receives.
    pub const DROP_UNKNOWN_QP: u16 = 5;
    /// Dropped: rkey invalid, PD mismatch, access not granted, or access outside the MR.
    pub const DROP_KEY: u16 = 6;
    /// Dropped: PSN is not the expected one (duplicates and sequence gaps).
    pub const DROP_PSN: u16 = 7;
    /// Dropped: no room in the receive packet buffer (the MAC cannot be back-pressured).
    pub const DROP_RX_OVERFLOW: u16 = 8;
    /// ACK packets sent by the responder.
    pub const TX_ACKS: u16 = 9;
    /// NAK packets sent by the responder.
    pub const TX_NAKS: u16 = 10;
    /// ACK/NAK packets received by the requester.
    pub const RX_ACKS: u16 = 11;
    /// CQEs written to host memory.
    pub const CQES: u16 = 12;
    /// Request packets sent.
    pub const TX_REQUESTS: u16 = 13;
    /// WQEs failed locally (bad lkey, local bounds, unsupported opcode).
    pub const LOCAL_ERRORS: u16 = 14;
    /// Dropped: a request that breaks the RC sequencing rules (MIDDLE/LAST without FIRST,
    /// wrong segment length, FIRST while a message is open); answered with NAK invalid request.
    pub const DROP_INV_REQ: u16 = 15;
    /// Duplicate requests (PSN behind the expected one): not executed again, re-acknowledged.
    pub const RX_DUPLICATES: u16 = 16;
    /// Go-back-N restarts of the requester (after a sequence NAK or a local ACK timeout).
    pub const RETRANSMITS: u16 = 17;
    /// Local ACK timeouts.
    pub const TIMEOUTS: u16 = 18;
    /// PSN sequence error NAKs queued by the responder (one per gap; the other NAK codes are
    /// one per [`DROP_KEY`] and [`DROP_INV_REQ`]).
    pub const TX_NAK_SEQ: u16 = 19;
    /// NAKs received by the requester, by AETH code (IBTA Vol 1 Table 45): PSN sequence error.
    pub const RX_NAK_SEQ: u16 = 20;
    /// NAKs received: invalid request.
    pub const RX_NAK_INV_REQ: u16 = 21;
    /// NAKs received: remote access error.
    pub const RX_NAK_REM_ACCESS: u16 = 22;
    /// NAKs received: remote operational error.
    pub const RX_NAK_REM_OP: u16 = 23;
    /// RNR NAKs sent by the responder (a SEND found no receive WQE).
    pub const TX_RNR_NAKS: u16 = 24;
    /// RNR NAKs received by the requester.
    pub const RX_RNR_NAKS: u16 = 25;
    /// Counters `0..EVENTS` count events (32-bit, wrapping); the ones after them are the
    /// halves of 64-bit byte counts.
    pub const EVENTS: u16 = 26;
    /// Bytes of the frames sent, Ethernet header through ICRC (no preamble, FCS or gap): bits
    /// 31:0 of a 64-bit count. Read HI, LO, HI and again if HI moved.
    pub const TX_BYTES_LO: u16 = 26;
    /// Bits 63:32 of the sent-bytes count.
    pub const TX_BYTES_HI: u16 = 27;
    /// Bytes of the frames received from the MAC (every frame, good or dropped), counted as
    /// [`TX_BYTES_LO`]: bits 31:0.
    pub const RX_BYTES_LO: u16 = 28;
    /// Bits 63:32 of the received-bytes count.
    pub const RX_BYTES_HI: u16 = 29;
    /// Number of counter registers.
    pub const COUNT: u16 = 30;

    /// Human-readable names, indexed by counter.
    pub const NAMES: [&str; COUNT as usize] = [
        "rx_frames",
        "tx_frames",
        "rx_roce_ok",
        "drop_icrc",
        "drop_malformed",
        "drop_unknown_qp",
        "drop_key",
        "drop_psn",
        "drop_rx_overflow",
        "tx_acks",
        "tx_naks",
        "rx_acks",
        "cqes",
        "tx_requests",
        "local_errors",
        "drop_inv_req",
        "rx_duplicates",
        "retransmits",
        "timeouts",
        "tx_nak_seq",
        "rx_nak_seq",
        "rx_nak_inv_req",
        "rx_nak_rem_access",
        "rx_nak_rem_op",
        "tx_rnr_naks",
        "rx_rnr_naks",
        "tx_bytes_lo",
        "tx_bytes_hi",
        "rx_bytes_lo",
        "rx_bytes_hi",
    ];
}
