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
/// Contract version implemented by this RTL and driver. Minor 2 added the capability
/// registers [`QP_CAPS`], [`SEND_CAPS`], [`SRQ_CAPS`] and [`FEATURES`]; minor 3 the completion
/// events: [`CQ_ARM`], the CQ context's [`crate::cq_context::VECTOR`] and the interrupt
/// registers [`IRQ_MASK`], [`IRQ_PENDING`], [`IRQ_MODERATION`]; minor 4 the QP-affiliated
/// asynchronous events and [`ASYNC_EVENT_CQ`]; minor 5 UD QPs (the QP context's
/// [`crate::qp_context::QP_TYPE`] and `QKEY`, the WQE's `UD_*` address, the CQE's
/// [`crate::cqe::SRC_QP`]) and the [`counter::DROP_NO_RWQE`] counter; minor 6 the raw
/// Ethernet path ([`raw`], [`features::RAW_ETH`], [`counter::DROP_RAW`]); minor 7 CQ overrun
/// detection: the consumer-index doorbell [`CQ_CI`], the [`counter::DROP_CQ_OVERRUN`] counter
/// and `IBV_EVENT_CQ_ERR` on [`ASYNC_EVENT_CQ`] (the byte counters moved up by one each time);
/// minor 8 the send-queue-drain state: the QP context's [`crate::qp_context::SQ_DRAIN`] and
/// [`crate::qp_context::SQD_NOTIFY`], and `IBV_EVENT_SQ_DRAINED` on [`ASYNC_EVENT_CQ`].
pub const VERSION_VALUE: u32 = 0x0000_0008;
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

/// Queue-pair limits (read-only; fields in [`qp_caps`], value [`QP_CAPS_VALUE`]): what
/// `ibv_query_device(3)` reports as `max_qp_wr`, `max_sge`, `max_qp_rd_atom` and
/// `max_qp_init_rd_atom`, and the receive-side `max_recv_sge`.
pub const QP_CAPS: u16 = 0x0020;
/// Send-side limits (read-only; fields in [`send_caps`], value [`SEND_CAPS_VALUE`]): the inline
/// data a WQE holds (`ibv_qp_cap.max_inline_data`).
pub const SEND_CAPS: u16 = 0x0024;
/// Shared-receive-queue limits (read-only; fields in [`srq_caps`], value [`SRQ_CAPS_VALUE`]):
/// `ibv_device_attr.max_srq_wr` and `max_srq_sge`.
pub const SRQ_CAPS: u16 = 0x0028;
/// Feature flags and the atomicity guarantee (read-only; bits in [`features`], value
/// [`FEATURES_VALUE`]): which transports and optional verbs the RTL implements.
pub const FEATURES: u16 = 0x002C;
/// Engine status (read-only; fields in [`status`]): where the engines' state machines are and
/// which of the queues between them are full or empty, sampled in the cycle the read is
/// answered. For diagnosing a NIC that stopped making progress; its layout may change with the
/// RTL between versions.
pub const STATUS: u16 = 0x0030;
// 0x0034..0x003F: free for further read-only registers.

/// Fields of [`STATUS`].
pub mod status {
    /// RX engine state (bits 5:0).
    pub const RX_STATE_SHIFT: u32 = 0;
    /// TX scheduler state (bits 13:8).
    pub const TX_STATE_SHIFT: u32 = 8;
    /// CQ writer state (bits 18:16).
    pub const CQ_STATE_SHIFT: u32 = 16;
    /// Write-job FIFO empty (bit 20), READ-response FIFO full (21), RX descriptor FIFO empty
    /// (22), TX job FIFO empty (23), RX writer idle (24), go-back-N FIFO empty (25), no ACK
    /// waiting (26: the ACK FIFO empty and none held for coalescing), a TX frame waiting for
    /// the MAC (27).
    pub const FLAGS_SHIFT: u32 = 20;
}

/// log2 of the largest SQ in WQEs: the QP context's 4-bit SQ_LOG_SIZE allows 2^15, and the
/// 16-bit producer index of [`SQ_DOORBELL`] must tell a full ring from an empty one.
pub const LOG_MAX_SQ_WR: u32 = 15;
/// log2 of the largest RQ (and SRQ) in receive WQEs, for the same two reasons (RQ_LOG_SIZE,
/// [`RQ_DOORBELL`]).
pub const LOG_MAX_RQ_WR: u32 = 15;
/// Largest `max_rd_atomic` / `max_dest_rd_atomic` the NIC honours: READs and atomics a QP has
/// outstanding as requester, and takes as responder (the QP context's MAX_RD_ATOMIC and
/// MAX_DEST_RD_ATOMIC are taken as 1..=16, within the in-flight window).
pub const MAX_RD_ATOMIC: u32 = 16;

// The limits follow from the record formats: a log size fits its context field, a full ring
// of 2^15 differs from an empty one in a 16-bit producer index, the READ window fits the
// in-flight table, and every field fits its bits.
const _: () = assert!(LOG_MAX_SQ_WR as u64 <= crate::qp_context::SQ_LOG_SIZE.max() && LOG_MAX_SQ_WR < 16);
const _: () = assert!(LOG_MAX_RQ_WR as u64 <= crate::qp_context::RQ_LOG_SIZE.max() && LOG_MAX_RQ_WR < 16);
const _: () = assert!(MAX_RD_ATOMIC as usize <= 1 << crate::LOG_MAX_INFLIGHT_WQES);
const _: () = assert!(crate::wqe::MAX_SGE < 256 && crate::recv_wqe::MAX_SGE < 256 && crate::wqe::MAX_INLINE < 65536);

/// [`QP_CAPS`] fields.
pub mod qp_caps {
    /// Bits 3:0: log2 of the largest SQ in WQEs ([`super::LOG_MAX_SQ_WR`]).
    pub const LOG_MAX_SQ_WR_SHIFT: u32 = 0;
    /// Bits 7:4: log2 of the largest RQ in receive WQEs ([`super::LOG_MAX_RQ_WR`]).
    pub const LOG_MAX_RQ_WR_SHIFT: u32 = 4;
    /// Bits 15:8: gather entries per send WQE ([`crate::wqe::MAX_SGE`]).
    pub const MAX_SEND_SGE_SHIFT: u32 = 8;
    /// Bits 23:16: scatter entries per receive WQE ([`crate::recv_wqe::MAX_SGE`]).
    pub const MAX_RECV_SGE_SHIFT: u32 = 16;
    /// Bits 31:24: largest `max_rd_atomic` / `max_dest_rd_atomic` ([`super::MAX_RD_ATOMIC`]).
    pub const MAX_RD_ATOMIC_SHIFT: u32 = 24;
}

/// What [`QP_CAPS`] reads.
pub const QP_CAPS_VALUE: u32 = LOG_MAX_SQ_WR << qp_caps::LOG_MAX_SQ_WR_SHIFT
    | LOG_MAX_RQ_WR << qp_caps::LOG_MAX_RQ_WR_SHIFT
    | (crate::wqe::MAX_SGE as u32) << qp_caps::MAX_SEND_SGE_SHIFT
    | (crate::recv_wqe::MAX_SGE as u32) << qp_caps::MAX_RECV_SGE_SHIFT
    | MAX_RD_ATOMIC << qp_caps::MAX_RD_ATOMIC_SHIFT;

/// [`SEND_CAPS`] fields.
pub mod send_caps {
    /// Bits 15:0: inline data bytes a WQE holds ([`crate::wqe::MAX_INLINE`]).
    pub const MAX_INLINE_SHIFT: u32 = 0;
}

/// What [`SEND_CAPS`] reads.
pub const SEND_CAPS_VALUE: u32 = (crate::wqe::MAX_INLINE as u32) << send_caps::MAX_INLINE_SHIFT;

/// [`SRQ_CAPS`] fields.
pub mod srq_caps {
    /// Bits 3:0: log2 of the largest SRQ in receive WQEs ([`super::LOG_MAX_RQ_WR`]).
    pub const LOG_MAX_SRQ_WR_SHIFT: u32 = 0;
    /// Bits 15:8: scatter entries per SRQ receive WQE ([`crate::recv_wqe::MAX_SGE`]).
    pub const MAX_SRQ_SGE_SHIFT: u32 = 8;
}

/// What [`SRQ_CAPS`] reads.
pub const SRQ_CAPS_VALUE: u32 =
    LOG_MAX_RQ_WR << srq_caps::LOG_MAX_SRQ_WR_SHIFT | (crate::recv_wqe::MAX_SGE as u32) << srq_caps::MAX_SRQ_SGE_SHIFT;

/// [`FEATURES`] bits.
pub mod features {
    /// Bit 0: reliable connection QPs (IBTA Vol 1 9.7).
    pub const RC: u32 = 1 << 0;
    /// Bit 1: shared receive queues ([`crate::srq_context`]) with the limit event.
    pub const SRQ: u32 = 1 << 1;
    /// Bit 2: COMPARE SWAP and FETCH ADD as requester and responder (IBTA Vol 1 9.4.5).
    pub const ATOMICS: u32 = 1 << 2;
    /// Bit 3: unreliable datagram QPs (IBTA Vol 1 9.8): SEND ONLY with a DETH, sent and
    /// received (the GRH area, SRC_QP in the CQE), Q_Key checked ([`crate::qp_context::QP_TYPE`]).
    pub const UD: u32 = 1 << 3;
    /// Bit 4: CQ arming and completion events (`ibv_req_notify_cq(3)`): [`super::CQ_ARM`]
    /// and the interrupt output ([`super::irq`]).
    pub const CQ_EVENTS: u32 = 1 << 4;
    /// Bit 5: the responder answers a SEND that finds no receive WQE with an RNR NAK
    /// (`IBV_DEVICE_RC_RNR_NAK_GEN`).
    pub const RNR_NAK_GEN: u32 = 1 << 5;
    /// Bits 9:8: the atomicity guarantee as `enum ibv_atomic_cap` (0 none, 1 `IBV_ATOMIC_HCA`:
    /// atomic against other atomics of this NIC, not against the CPU; 2 `IBV_ATOMIC_GLOB`).
    pub const ATOMIC_CAP_SHIFT: u32 = 8;
    /// `IBV_ATOMIC_HCA`.
    pub const ATOMIC_HCA: u32 = 1;
    /// Bit 6: the raw Ethernet path ([`super::raw`]): a queue of received frames that are
    /// not RoCEv2 (ARP and other control frames), read by MMIO, and frames the driver sends.
    pub const RAW_ETH: u32 = 1 << 6;
}

/// What [`FEATURES`] reads: RC, SRQ, UD, atomics with `IBV_ATOMIC_HCA`, CQ events, RNR NAK
/// generation, the raw Ethernet path.
pub const FEATURES_VALUE: u32 = features::RC
    | features::SRQ
    | features::UD
    | features::ATOMICS
    | features::CQ_EVENTS
    | features::RNR_NAK_GEN
    | features::RAW_ETH
    | features::ATOMIC_HCA << features::ATOMIC_CAP_SHIFT;

/// SQ doorbell: write `qpn << 16 | sq_producer_index` (the producer index counts WQEs posted,
/// modulo 2^16). The NIC fetches WQEs from the QP's SQ ring up to that index.
pub const SQ_DOORBELL: u16 = 0x0100;

/// The fields of the [`SQ_DOORBELL`] and [`RQ_DOORBELL`] word.
pub mod doorbell {
    /// Bits 15:0: the producer index, WQEs posted modulo 2^16.
    pub const PI_BITS: u32 = 16;
    /// Bits 31:16: the QPN (an SRQ's number for an SRQ's RQ doorbell).
    pub const QPN_SHIFT: u32 = 16;

    /// The doorbell word `qpn << 16 | pi mod 2^16` (`pi` counts WQEs posted; its bits above
    /// 15 are dropped, as the NIC counts modulo 2^16).
    pub const fn word(qpn: u32, pi: u32) -> u32 {
        qpn << QPN_SHIFT | (pi & ((1 << PI_BITS) - 1))
    }
}

/// RQ doorbell: write `qpn << 16 | rq_producer_index` (receive WQEs posted, modulo 2^16). The
/// responder consumes receive WQEs from the QP's RQ ring up to that index; a SEND that finds
/// none is answered with an RNR NAK.
pub const RQ_DOORBELL: u16 = 0x0104;

/// CQ arm doorbell (`ibv_req_notify_cq(3)`, IBTA Vol 1 11.4.2.2): write
/// `cqn << 24 | solicited << 23 | consumer index mod 2^23` (fields in [`cq_arm`]). The consumer
/// index counts the CQEs the driver has taken from the CQ since its `WRITE_CQ`.
///
/// If the CQ already holds a CQE the driver has not consumed (any CQE; with `solicited`, a
/// solicited one), the NIC raises the CQ's event at once; otherwise it arms the CQ, and the
/// next CQE it places in the CQ (with `solicited`: the next solicited CQE, i.e. a receive
/// completion of a message whose last packet had BTH.SE set, or any CQE with an error status)
/// raises the event and disarms it. One event per arm. Arming for the next CQE while armed for
/// solicited ones widens the arm; the reverse keeps it wide. Because the consumer index is
/// compared, a CQE placed just before the arm still wakes the driver (no lost wake-up between
/// its last poll and the arm). The write's response comes once the NIC took the arm (a few
/// cycles), so an arm is in effect when the MMIO write returns.
pub const CQ_ARM: u16 = 0x0108;

/// Fields of [`CQ_ARM`].
pub mod cq_arm {
    /// Bits 22:0: the driver's consumer index modulo 2^23.
    pub const CI_BITS: u32 = 23;
    /// Bit 23: only a solicited CQE raises the event (`solicited_only` of
    /// `ibv_req_notify_cq(3)`).
    pub const SOLICITED: u32 = 1 << 23;
    /// Bits 31:24: the CQ number.
    pub const CQN_SHIFT: u32 = 24;
}

/// CQ consumer-index doorbell: write `cqn << 24 | consumer index mod 2^23` (the fields of
/// [`cq_arm`] without its solicited bit, which must be 0). The consumer index counts the CQEs
/// the driver has taken from the CQ since its `WRITE_CQ`, as in [`CQ_ARM`], which reports it
/// too.
///
/// **CQ overrun** (IBTA Vol 1 11.4.2.1, `IBV_EVENT_CQ_ERR` of ibv_get_async_event(3)): the NIC
/// keeps, per CQ, the last consumer index reported by this doorbell or by [`CQ_ARM`] (0 after
/// `WRITE_CQ`). It places CQE `n` of a CQ only while `(n - ci) mod 2^23 < 2^LOG_SIZE`; a CQE
/// that finds the ring full by that index is not written (nothing in the ring is
/// overwritten), is counted in [`counter::DROP_CQ_OVERRUN`] and puts the CQ in error: every
/// later CQE for it is dropped and counted too, until the next `WRITE_CQ` of the CQ. The first
/// drop of each error raises [`crate::verbs::event_type::CQ_ERR`] as an event CQE on the
/// [`ASYNC_EVENT_CQ`] (QP_NUM the overrun CQ's number) while its ENABLE is set, unless the
/// overrun CQ is that event CQ itself (then the drop is only counted). A dropped CQE's other
/// duties are kept: the ACK/NAK of a receive completion is still sent.
///
/// The index the NIC knows may lag the driver's: a driver reports it often enough that the
/// ring never looks full while the program keeps within the CQ's `cqe` (see the driver's
/// `CompletionQueue`). The write's response comes once the NIC took the index (a few cycles),
/// and it is in effect for every CQE the NIC starts placing after that.
pub const CQ_CI: u16 = 0x010C;

/// Number of interrupt vectors (MSI-X table entries) of the NIC: its `irq_vector` output has
/// 5 bits, and [`IRQ_MASK`] / [`IRQ_PENDING`] one bit per vector.
pub const IRQ_VECTORS: u32 = 32;

/// Per-vector interrupt mask (read-write, bit `v` masks vector `v`, 0 after reset): a masked
/// vector keeps its events pending in [`IRQ_PENDING`] and raises one interrupt when unmasked,
/// like an MSI-X table entry's mask bit and the PBA (PCI Local Bus Specification 3.0 6.8.2).
pub const IRQ_MASK: u16 = 0x0110;
/// Pending interrupts (read-only, bit `v` = vector `v` has an event not yet sent: masked,
/// held by [`IRQ_MODERATION`], or waiting for the PCIe core).
pub const IRQ_PENDING: u16 = 0x0114;
/// Interrupt moderation (read-write, 0 after reset): bits 15:0 are a window in units of
/// [`irq::MODERATION_UNIT_CYCLES`] core cycles; each vector sends at most one interrupt per
/// window (events within it coalesce into one interrupt at the window's end). 0 turns
/// moderation off: each event is sent as soon as the output is free.
pub const IRQ_MODERATION: u16 = 0x0118;
/// The device's asynchronous event CQ (read-write, 0 after reset; fields in [`async_event_cq`]):
/// while [`async_event_cq::ENABLE`] is set, the NIC writes each QP-affiliated asynchronous event
/// (ibv_get_async_event(3); IBTA Vol 1 11.6.3) as an event CQE to CQ [`async_event_cq::CQN_MASK`]
/// of this register: OPCODE [`crate::verbs::wc_opcode::ASYNC_EVENT`], STATUS the
/// [`crate::verbs::event_type`], QP_NUM the QP, BYTE_LEN 0 (the CQE layout of the SRQ limit
/// event, [`crate::srq_context`]). Like any CQE it raises the CQ's completion event if the CQ
/// is armed ([`CQ_ARM`]), so a driver blocks on the CQ's interrupt vector. While ENABLE is
/// clear the NIC raises no QP event. The events and what raises them:
/// - [`crate::verbs::event_type::QP_REQ_ERR`]: the responder moved the QP to ERR after a NAK
///   invalid request (a class C error, IBTA Vol 1 9.9.3: opcode out of sequence, a READ or
///   atomic beyond `max_dest_rd_atomic`) or a receive that a message overran
///   (`IBV_WC_LOC_LEN_ERR`, which also NAKs invalid request);
/// - [`crate::verbs::event_type::QP_ACCESS_ERR`]: the responder moved the QP to ERR after a
///   NAK remote access error (a refused rkey, access or bounds) or a receive WQE whose scatter
///   entry its lkey does not cover (`IBV_WC_LOC_PROT_ERR`);
/// - [`crate::verbs::event_type::QP_FATAL`] (a local work queue catastrophic error, IBTA Vol 1
///   11.6.3): the requester could not read a send WQE (its DMA read was answered SLVERR or
///   DECERR: an IOMMU fault, a ring no longer mapped). The WQE completes with
///   `IBV_WC_LOC_QP_OP_ERR` (its wr_id is what the read returned, zero from the simulator) and
///   nothing of it is sent; the QP enters ERR;
/// - none when the requester moves the QP to ERR for any other reason (retries or RNR retries
///   exhausted, a NAK with an error code, a local error of a send WQE): the error completion
///   reports it;
/// - [`crate::verbs::event_type::COMM_EST`]: the first request packet (the expected PSN)
///   arrived on the QP while its context said RTR (IBTA Vol 1 11.6.3.1), once per RTR
///   (INIT_RQ_PSN or RESET re-arms it);
/// - [`crate::verbs::event_type::QP_LAST_WQE_REACHED`]: a QP on an SRQ entered ERR, by the NIC
///   or by the driver's WRITE_QP with state ERR (IBTA Vol 1 10.2.9.5, 11.6.3.1): it takes no
///   further SRQ WQE. It follows the error event of the same QP;
/// - [`crate::verbs::event_type::SQ_DRAINED`]: a QP moved to SQD
///   ([`crate::qp_context::SQ_DRAIN`]) with [`crate::qp_context::SQD_NOTIFY`] has every work
///   request its requester started completed (IBTA Vol 1 11.6.3.1), once per move to SQD; not
///   if the QP enters ERR first.
///
/// Events wait in a 64-entry queue inside the NIC (each QP raises each of them at most once per
/// connection, and the queue is served before new packets); one that finds fewer than two
/// free entries is lost. A driver-initiated move to ERR raises no error event (only
/// LAST_WQE_REACHED).
///
/// The CQ writer adds [`crate::verbs::event_type::CQ_ERR`]: a CQ overran (see [`CQ_CI`]); its
/// event CQE has QP_NUM the overrun CQ's number, once per CQ error. It does not go through the
/// 64-entry queue (the CQ writer holds one such event at a time, and places it before the next
/// CQE), and it is solicited (wakes a solicited-only arm). If the event CQ is itself full, the
/// event is dropped and counted in [`counter::DROP_CQ_OVERRUN`] like any CQE.
pub const ASYNC_EVENT_CQ: u16 = 0x011C;
// 0x0120..0x01FF: free.

/// Fields of [`ASYNC_EVENT_CQ`].
pub mod async_event_cq {
    /// Bits 7:0: the CQ number.
    pub const CQN_MASK: u32 = 0xFF;
    /// Bit 31: QP-affiliated events are raised.
    pub const ENABLE: u32 = 1 << 31;
}

/// The interrupt output of the NIC top (`irq_valid`, `irq_vector`, `irq_ready`): an MSI-X-style
/// message request to the PCIe core, held until `irq_ready`.
pub mod irq {
    /// Width of `irq_vector` in bits.
    pub const VECTOR_BITS: u32 = 5;
    /// Core cycles per unit of [`super::IRQ_MODERATION`] (1.024 µs at 250 MHz).
    pub const MODERATION_UNIT_CYCLES: u32 = 256;
    /// Bits of [`super::IRQ_MODERATION`] that hold the window.
    pub const MODERATION_BITS: u32 = 16;
}
const _: () = assert!(1 << irq::VECTOR_BITS == IRQ_VECTORS);

/// The raw Ethernet path: frames that are not RoCEv2 packets (ARP, IEEE 802.3 control, any
/// EtherType but IPv4 UDP to port 4791), in and out, for the driver's own protocols (ARP for
/// `rdma_resolve_addr(3)`, RFC 826). Both directions carry frames of one datapath beat, at most
/// [`raw::MAX_FRAME_BYTES`] bytes without the FCS: enough for ARP (42 bytes, 60 with padding).
///
/// **Receive:** a frame from the MAC that is not a RoCEv2 packet, arrives whole in one beat
/// with a good FCS, and is addressed to the port's MAC ([`MAC_LO`]) or to the broadcast
/// address is appended to a queue of [`raw::RX_SLOTS`] frames inside the NIC. One that finds
/// the queue full, a longer non-RoCE frame to the port, or one with a bad FCS is dropped and
/// counted in [`counter::DROP_RAW`]; a non-RoCE frame to the port counts in one of the two,
/// never in [`counter::DROP_MALFORMED`]. The driver
/// reads [`RAW_RX_STATUS`], the head frame's words at [`RAW_RX_DATA`], and [`RAW_RX_POP`]s it.
///
/// **Send:** the driver writes the frame's bytes to [`RAW_TX_DATA`] and its length to
/// [`RAW_TX_SEND`]; the NIC sends it between two RoCE frames, as it is (no ICRC, no header of
/// its own; the MAC adds the FCS). It counts in [`counter::TX_FRAMES`] and the TX byte count.
pub mod raw {
    /// Largest raw frame in bytes (one 64-byte beat of the datapath), FCS excluded.
    pub const MAX_FRAME_BYTES: u32 = 64;
    /// Shortest frame on the wire without the FCS (IEEE 802.3): a shorter [`super::RAW_TX_SEND`]
    /// length is sent as this many bytes, the bytes after the frame as staged.
    pub const MIN_FRAME_BYTES: u32 = 60;
    /// Frames the receive queue holds.
    pub const RX_SLOTS: u32 = 8;
    /// [`super::RAW_RX_STATUS`] bits 15:0: frames the queue has taken since reset, modulo 2^16.
    pub const RX_TAKEN_MASK: u32 = 0xFFFF;
    /// [`super::RAW_RX_STATUS`] bits 22:16: the length in bytes of the frame at the head.
    pub const RX_LEN_SHIFT: u32 = 16;
    /// Mask of the head frame's length after the shift.
    pub const RX_LEN_MASK: u32 = 0x7F;
    /// [`super::RAW_RX_STATUS`] bit 31: a frame is at the head of the queue.
    pub const RX_HEAD_VALID: u32 = 1 << 31;
    /// Words of [`super::RAW_TX_DATA`] and [`super::RAW_RX_DATA`].
    pub const DATA_WORDS: usize = 16;
}
const _: () = assert!(raw::MAX_FRAME_BYTES as usize == 4 * raw::DATA_WORDS);
const _: () = assert!(raw::MAX_FRAME_BYTES as usize == crate::DATAPATH_BYTES);

/// Raw frame to send, 16 write-only words at `RAW_TX_DATA + 4*i`: word `i` holds frame bytes
/// `4i..4i+3`, byte `4i` in bits 7:0 (wire order: byte 0 is the first byte of the destination
/// MAC). The words keep their values after a send.
pub const RAW_TX_DATA: u16 = 0x0800;
/// Send the staged raw frame: write its length in bytes (bits 6:0; below
/// [`raw::MIN_FRAME_BYTES`] it is sent as that many, above [`raw::MAX_FRAME_BYTES`] as that
/// many). The write's response comes once the NIC has taken the frame (at most one frame waits
/// to be sent), so the staging words can be rewritten as soon as it returns.
pub const RAW_TX_SEND: u16 = 0x0840;
/// The received raw frame at the head of the queue, 16 read-only words at `RAW_RX_DATA + 4*i`,
/// laid out as [`RAW_TX_DATA`]; bytes past its length read as received (padding) or 0.
pub const RAW_RX_DATA: u16 = 0x0880;
/// Raw receive queue status (read-only; fields in [`raw`]): head valid, head length, frames
/// taken.
pub const RAW_RX_STATUS: u16 = 0x08C0;
/// Write any value: the head frame leaves the raw receive queue (no effect when it is empty).
pub const RAW_RX_POP: u16 = 0x08C4;

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
    /// opcode, MAC-signalled FCS error), except the non-RoCE frames to the port, which the raw
    /// path counts ([`super::raw`], [`DROP_RAW`]).
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
    /// CQEs the engines completed (work completions, flushes), whether placed in their CQ or
    /// dropped by [`DROP_CQ_OVERRUN`]; not the asynchronous event CQEs.
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
    /// UD SENDs dropped for want of a receive WQE that takes them: none posted on their QP
    /// (or its SRQ), or the one at the head too short for the message (IBTA Vol 1 9.8.3,
    /// 10.8.3.3 class D: a UD responder drops them silently and keeps the WQE; an RC SEND gets
    /// an RNR NAK or completes in error instead).
    pub const DROP_NO_RWQE: u16 = 26;
    /// Non-RoCE frames to the port that the raw receive queue ([`super::raw`]) could not take:
    /// the queue was full, the frame was longer than one beat, or its FCS was bad.
    pub const DROP_RAW: u16 = 27;
    /// CQEs not written because their CQ was full or in error (a CQ overrun, see
    /// [`super::CQ_CI`]): completions and asynchronous event CQEs alike.
    pub const DROP_CQ_OVERRUN: u16 = 28;
    /// Counters `0..EVENTS` count events (32-bit, wrapping); the ones after them are the
    /// halves of 64-bit byte counts.
    pub const EVENTS: u16 = 29;
    /// Bytes of the frames sent, Ethernet header through ICRC (no preamble, FCS or gap): bits
    /// 31:0 of a 64-bit count. Read HI, LO, HI and again if HI moved.
    pub const TX_BYTES_LO: u16 = 29;
    /// Bits 63:32 of the sent-bytes count.
    pub const TX_BYTES_HI: u16 = 30;
    /// Bytes of the frames received from the MAC (every frame, good or dropped), counted as
    /// [`TX_BYTES_LO`]: bits 31:0.
    pub const RX_BYTES_LO: u16 = 31;
    /// Bits 63:32 of the received-bytes count.
    pub const RX_BYTES_HI: u16 = 32;
    /// Number of counter registers.
    pub const COUNT: u16 = 33;

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
        "drop_no_rwqe",
        "drop_raw",
        "drop_cq_overrun",
        "tx_bytes_lo",
        "tx_bytes_hi",
        "rx_bytes_lo",
        "rx_bytes_hi",
    ];
}
