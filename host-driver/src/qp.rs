//! [`QueuePair`] (RC): creation (`ibv_create_qp(3)`), state transitions (`ibv_modify_qp(3)`,
//! IBTA Vol 1 11.2.4.2 / 10.3.1), `ibv_post_send(3)`, `ibv_post_recv(3)` and connection setup
//! by [`Endpoint`]s.
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::marker::PhantomData;
use std::net::Ipv4Addr;
use std::rc::Rc;
use std::sync::atomic::{fence, Ordering};

use rnic_contract::{recv_wqe, regs, verbs, wqe};

use crate::context::MacAddr;
use crate::cq::{CompletionQueue, CqInner, WcStatus};
use crate::device::DmaBuffer;
use crate::error::{Error, PostError, Result};
use crate::mr::{AccessFlags, MemoryRegion};
use crate::pd::ProtectionDomain;
use crate::records::{put_sge, write_context, QpContext, RecvWqe, Wqe};
use crate::srq::{SharedReceiveQueue, SrqInner, SrqShared};

/// Largest SQ, in WQEs (the context's SQ_LOG_SIZE is 4 bits).
pub const MAX_SEND_WR: u32 = 1 << 15;
/// Largest RQ, in receive WQEs (the context's RQ_LOG_SIZE is 4 bits; the RQ doorbell's 16-bit
/// producer index must tell a full ring from an empty one).
pub const MAX_RECV_WR: u32 = 1 << 15;
/// Scatter entries per receive WR (`max_recv_sge`): what the largest receive WQE (256 bytes)
/// holds ([`rnic_contract::recv_wqe::MAX_SGE`], 15). The NIC scatters an incoming message over
/// the entries in order, skipping zero-length ones; a message longer than their sum completes
/// with [`WcStatus::LocLenErr`] (IBTA Vol 1 9.7.4.1.3, 10.8.3).
pub const MAX_RECV_SGE: u32 = recv_wqe::MAX_SGE as u32;
/// Gather entries per send WR (`max_send_sge`): what the NIC's per-WQE gather list holds
/// ([`rnic_contract::wqe::MAX_SGE`]).
pub const MAX_SEND_SGE: u32 = wqe::MAX_SGE as u32;
/// Inline bytes per send WR (`max_inline_data`): what a 512-byte WQE holds after its first
/// slot ([`rnic_contract::wqe::MAX_INLINE`]).
pub const MAX_INLINE_DATA: u32 = wqe::MAX_INLINE as u32;
/// Largest `max_rd_atomic` / `max_dest_rd_atomic` accepted.
pub const MAX_RD_ATOMIC: u8 = 16;
/// The only P_Key of the port's table (index 0): the default partition, full membership.
pub const DEFAULT_PKEY: u16 = 0xFFFF;
/// Largest PSN (24 bits).
pub const PSN_MASK: u32 = 0xFF_FFFF;

/// `enum ibv_qp_state`, with the ibverbs numbering.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, serde::Serialize)]
#[repr(u8)]
pub enum QpState {
    /// 0: reset, no resources in use.
    #[default]
    Reset = 0,
    /// 1: initialised; receives may be posted.
    Init = 1,
    /// 2: ready to receive.
    Rtr = 2,
    /// 3: ready to send.
    Rts = 3,
    /// 4: send queue drained (not supported by this NIC).
    Sqd = 4,
    /// 5: send queue error (not used by RC).
    Sqe = 5,
    /// 6: error: outstanding work requests are flushed.
    Err = 6,
}

/// `enum ibv_mtu`: path MTU, payload bytes per packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, serde::Serialize)]
#[repr(u8)]
pub enum Mtu {
    /// 256 bytes.
    Mtu256 = 1,
    /// 512 bytes.
    Mtu512 = 2,
    /// 1024 bytes.
    Mtu1024 = 3,
    /// 2048 bytes.
    Mtu2048 = 4,
    /// 4096 bytes.
    #[default]
    Mtu4096 = 5,
}

impl Mtu {
    /// Payload bytes per packet.
    pub fn bytes(self) -> u32 {
        128 << (self as u32)
    }

    /// The MTU of `bytes` payload bytes (256, 512, 1024, 2048 or 4096).
    pub fn from_bytes(bytes: u32) -> Option<Self> {
        Some(match bytes {
            256 => Self::Mtu256,
            512 => Self::Mtu512,
            1024 => Self::Mtu1024,
            2048 => Self::Mtu2048,
            4096 => Self::Mtu4096,
            _ => return None,
        })
    }
}

bitflags::bitflags! {
    /// `enum ibv_qp_attr_mask`: which fields of a [`QpAttr`] a modify carries (ibverbs values).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
    pub struct QpAttrMask: u32 {
        /// `qp_state`.
        const STATE = 1 << 0;
        /// `cur_qp_state`.
        const CUR_STATE = 1 << 1;
        /// `en_sqd_async_notify` (not supported).
        const EN_SQD_ASYNC_NOTIFY = 1 << 2;
        /// `qp_access_flags`.
        const ACCESS_FLAGS = 1 << 3;
        /// `pkey_index`.
        const PKEY_INDEX = 1 << 4;
        /// `port_num`.
        const PORT = 1 << 5;
        /// `qkey` (UD only).
        const QKEY = 1 << 6;
        /// `ah_attr`: the address vector.
        const AV = 1 << 7;
        /// `path_mtu`.
        const PATH_MTU = 1 << 8;
        /// `timeout`.
        const TIMEOUT = 1 << 9;
        /// `retry_cnt`.
        const RETRY_CNT = 1 << 10;
        /// `rnr_retry`.
        const RNR_RETRY = 1 << 11;
        /// `rq_psn`.
        const RQ_PSN = 1 << 12;
        /// `max_rd_atomic`.
        const MAX_QP_RD_ATOMIC = 1 << 13;
        /// `alt_ah_attr` etc. (automatic path migration, not supported).
        const ALT_PATH = 1 << 14;
        /// `min_rnr_timer`.
        const MIN_RNR_TIMER = 1 << 15;
        /// `sq_psn`.
        const SQ_PSN = 1 << 16;
        /// `max_dest_rd_atomic`.
        const MAX_DEST_RD_ATOMIC = 1 << 17;
        /// `path_mig_state` (not supported).
        const PATH_MIG_STATE = 1 << 18;
        /// `cap` (resizing, not supported).
        const CAP = 1 << 19;
        /// `dest_qp_num`.
        const DEST_QPN = 1 << 20;
    }
}

/// The address vector of an RC QP on a RoCEv2 port (`struct ibv_ah_attr`, reduced to what the
/// NIC puts in the Ethernet and IPv4 headers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AddressVector {
    /// Peer's (or next hop's) MAC address.
    pub dest_mac: MacAddr,
    /// Peer's IPv4 address (its GID is the IPv4-mapped IPv6 address).
    pub dest_ip: Ipv4Addr,
}

impl Default for AddressVector {
    fn default() -> Self {
        Self { dest_mac: MacAddr::default(), dest_ip: Ipv4Addr::UNSPECIFIED }
    }
}

/// `struct ibv_qp_cap`: the sizes of a QP.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct QpCap {
    /// SQ entries (a power of two).
    pub max_send_wr: u32,
    /// RQ entries (a power of two; 0: the QP has no receive queue).
    pub max_recv_wr: u32,
    /// SGEs per send WR (1).
    pub max_send_sge: u32,
    /// Scatter entries per receive WR: what the QP's receive WQE holds (3, 7 or 15, at least
    /// the `max_recv_sge` asked for) with a receive queue, else 0.
    pub max_recv_sge: u32,
    /// Inline data bytes (0: not supported).
    pub max_inline_data: u32,
}

/// `struct ibv_qp_attr` (RC fields): the attributes [`QueuePair::modify`] sets, selected by a
/// [`QpAttrMask`], and [`QueuePair::query_qp`] reports. Units: PSNs are 24-bit, `timeout` is
/// the exponent of 4.096 µs × 2^timeout, `min_rnr_timer` an RNR timer code (PROTOCOL.md),
/// `retry_cnt` and `rnr_retry` counts (7 = infinite RNR retries).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct QpAttr {
    /// Target state (with [`QpAttrMask::STATE`]).
    pub qp_state: QpState,
    /// Assumed current state (with [`QpAttrMask::CUR_STATE`]); must match.
    pub cur_qp_state: QpState,
    /// Path MTU.
    pub path_mtu: Mtu,
    /// Remote access granted to incoming requests (REMOTE_WRITE / READ / ATOMIC).
    pub qp_access_flags: AccessFlags,
    /// P_Key table index (only 0: P_Key 0xFFFF).
    pub pkey_index: u16,
    /// Port number (only 1).
    pub port_num: u8,
    /// Address vector of the peer.
    pub ah_attr: AddressVector,
    /// Peer's QP number (24 bits).
    pub dest_qp_num: u32,
    /// First PSN expected from the peer (24 bits).
    pub rq_psn: u32,
    /// First PSN sent (24 bits).
    pub sq_psn: u32,
    /// Outstanding RDMA READ/atomic requests as initiator (≤ [`MAX_RD_ATOMIC`]).
    pub max_rd_atomic: u8,
    /// Outstanding RDMA READ/atomic requests as responder (≤ [`MAX_RD_ATOMIC`]).
    pub max_dest_rd_atomic: u8,
    /// RNR NAK timer code (0..=31).
    pub min_rnr_timer: u8,
    /// Local ACK timeout exponent (0..=31, 0 = infinite).
    pub timeout: u8,
    /// Transport retries (0..=7).
    pub retry_cnt: u8,
    /// RNR retries (0..=7, 7 = infinite).
    pub rnr_retry: u8,
    /// Sizes (reported by [`QueuePair::query_qp`]; not modifiable).
    pub cap: QpCap,
}

/// The attributes a modify must carry and may carry for an RC QP going from `cur` to `next`
/// (IBTA Vol 1 Table 91 as in Linux `ib_modify_qp_is_ok`), `None` if the transition is not
/// allowed. [`QpAttrMask::STATE`] is not part of either set. Transitions involving SQD/SQE and
/// the optional alternate-path attributes are not supported by this NIC, so they are absent.
///
/// | from → to | required | optional |
/// |---|---|---|
/// | RESET → INIT | PKEY_INDEX, PORT, ACCESS_FLAGS | – |
/// | INIT → INIT | – | PKEY_INDEX, PORT, ACCESS_FLAGS |
/// | INIT → RTR | AV, PATH_MTU, DEST_QPN, RQ_PSN, MAX_DEST_RD_ATOMIC, MIN_RNR_TIMER | ACCESS_FLAGS, PKEY_INDEX |
/// | RTR → RTS | SQ_PSN, TIMEOUT, RETRY_CNT, RNR_RETRY, MAX_QP_RD_ATOMIC | CUR_STATE, ACCESS_FLAGS, MIN_RNR_TIMER |
/// | RTS → RTS | – | CUR_STATE, ACCESS_FLAGS, MIN_RNR_TIMER |
/// | any → RESET, any → ERR | – | – |
pub fn transition_masks(cur: QpState, next: QpState) -> Option<(QpAttrMask, QpAttrMask)> {
    use QpAttrMask as M;
    use QpState::*;
    let none = M::empty();
    Some(match (cur, next) {
        (_, Reset) | (_, Err) => (none, none),
        (Reset, Init) => (M::PKEY_INDEX | M::PORT | M::ACCESS_FLAGS, none),
        (Init, Init) => (none, M::PKEY_INDEX | M::PORT | M::ACCESS_FLAGS),
        (Init, Rtr) => (
            M::AV | M::PATH_MTU | M::DEST_QPN | M::RQ_PSN | M::MAX_DEST_RD_ATOMIC | M::MIN_RNR_TIMER,
            M::ACCESS_FLAGS | M::PKEY_INDEX,
        ),
        (Rtr, Rts) => (
            M::SQ_PSN | M::TIMEOUT | M::RETRY_CNT | M::RNR_RETRY | M::MAX_QP_RD_ATOMIC,
            M::CUR_STATE | M::ACCESS_FLAGS | M::MIN_RNR_TIMER,
        ),
        (Rts, Rts) => (none, M::CUR_STATE | M::ACCESS_FLAGS | M::MIN_RNR_TIMER),
        _ => return None,
    })
}

/// Checks a modify of an RC QP in state `cur` (`ibv_modify_qp(3)` rules) and returns the next
/// state. Pure: touches no device, so a refused modify changes nothing.
///
/// # Errors
/// [`Error::InvalidArgument`] for a transition that is not allowed, a required attribute that
/// is missing, an attribute the transition does not allow, a `cur_qp_state` that is not the
/// current state, or an attribute value out of range.
pub fn validate_modify(cur: QpState, attr: &QpAttr, mask: QpAttrMask) -> Result<QpState> {
    use QpAttrMask as M;
    let next = if mask.contains(M::STATE) { attr.qp_state } else { cur };
    let (required, optional) = transition_masks(cur, next).ok_or_else(|| {
        Error::inval(format!("RC QP transition {cur:?} -> {next:?} is not allowed (or not supported)"))
    })?;
    let given = mask - M::STATE;
    let missing = required - given;
    if !missing.is_empty() {
        return Err(Error::inval(format!("{cur:?} -> {next:?} requires {missing:?} in the attribute mask")));
    }
    let extra = given - required - optional;
    if !extra.is_empty() {
        return Err(Error::inval(format!("{cur:?} -> {next:?} does not allow {extra:?} in the attribute mask")));
    }
    if mask.contains(M::CUR_STATE) && attr.cur_qp_state != cur {
        return Err(Error::inval(format!("cur_qp_state is {:?} but the QP is in {cur:?}", attr.cur_qp_state)));
    }
    let range = |on: M, v: u32, max: u32, what: &str| -> Result<()> {
        if mask.contains(on) && v > max {
            return Err(Error::inval(format!("{what} = {v} is out of range (0..={max})")));
        }
        Ok(())
    };
    if mask.contains(M::PKEY_INDEX) && attr.pkey_index != 0 {
        return Err(Error::inval(format!(
            "pkey_index {} does not exist (the P_Key table has one entry, 0xFFFF)",
            attr.pkey_index
        )));
    }
    if mask.contains(M::PORT) && attr.port_num != 1 {
        return Err(Error::inval(format!("port_num {} does not exist (the NIC has port 1)", attr.port_num)));
    }
    if mask.contains(M::AV) {
        let av = &attr.ah_attr;
        if av.dest_mac.0[0] & 1 == 1
            || av.dest_ip.is_unspecified()
            || av.dest_ip.is_broadcast()
            || av.dest_ip.is_multicast()
        {
            return Err(Error::inval(format!("address vector {} / {} is not a unicast peer", av.dest_mac, av.dest_ip)));
        }
    }
    range(M::DEST_QPN, attr.dest_qp_num, PSN_MASK, "dest_qp_num")?;
    range(M::RQ_PSN, attr.rq_psn, PSN_MASK, "rq_psn")?;
    range(M::SQ_PSN, attr.sq_psn, PSN_MASK, "sq_psn")?;
    range(M::MAX_QP_RD_ATOMIC, attr.max_rd_atomic.into(), MAX_RD_ATOMIC.into(), "max_rd_atomic")?;
    range(M::MAX_DEST_RD_ATOMIC, attr.max_dest_rd_atomic.into(), MAX_RD_ATOMIC.into(), "max_dest_rd_atomic")?;
    range(M::MIN_RNR_TIMER, attr.min_rnr_timer.into(), 31, "min_rnr_timer")?;
    range(M::TIMEOUT, attr.timeout.into(), 31, "timeout")?;
    range(M::RETRY_CNT, attr.retry_cnt.into(), 7, "retry_cnt")?;
    range(M::RNR_RETRY, attr.rnr_retry.into(), 7, "rnr_retry")?;
    Ok(next)
}

/// Copies the fields selected by `mask` from `from` into `to`.
fn apply(to: &mut QpAttr, from: &QpAttr, mask: QpAttrMask) {
    use QpAttrMask as M;
    if mask.contains(M::ACCESS_FLAGS) {
        to.qp_access_flags = from.qp_access_flags;
    }
    if mask.contains(M::PKEY_INDEX) {
        to.pkey_index = from.pkey_index;
    }
    if mask.contains(M::PORT) {
        to.port_num = from.port_num;
    }
    if mask.contains(M::AV) {
        to.ah_attr = from.ah_attr;
    }
    if mask.contains(M::PATH_MTU) {
        to.path_mtu = from.path_mtu;
    }
    if mask.contains(M::DEST_QPN) {
        to.dest_qp_num = from.dest_qp_num;
    }
    if mask.contains(M::RQ_PSN) {
        to.rq_psn = from.rq_psn;
    }
    if mask.contains(M::SQ_PSN) {
        to.sq_psn = from.sq_psn;
    }
    if mask.contains(M::MAX_QP_RD_ATOMIC) {
        to.max_rd_atomic = from.max_rd_atomic;
    }
    if mask.contains(M::MAX_DEST_RD_ATOMIC) {
        to.max_dest_rd_atomic = from.max_dest_rd_atomic;
    }
    if mask.contains(M::MIN_RNR_TIMER) {
        to.min_rnr_timer = from.min_rnr_timer;
    }
    if mask.contains(M::TIMEOUT) {
        to.timeout = from.timeout;
    }
    if mask.contains(M::RETRY_CNT) {
        to.retry_cnt = from.retry_cnt;
    }
    if mask.contains(M::RNR_RETRY) {
        to.rnr_retry = from.rnr_retry;
    }
}

/// `enum ibv_wr_opcode` (ibv_post_send(3)). The driver passes the opcode to the NIC unchanged;
/// the NIC completes one it does not implement with [`WcStatus::LocQpOpErr`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum WrOpcode {
    /// `IBV_WR_RDMA_WRITE`.
    RdmaWrite = verbs::wr_opcode::RDMA_WRITE,
    /// `IBV_WR_RDMA_WRITE_WITH_IMM`.
    RdmaWriteWithImm = verbs::wr_opcode::RDMA_WRITE_WITH_IMM,
    /// `IBV_WR_SEND`.
    Send = verbs::wr_opcode::SEND,
    /// `IBV_WR_SEND_WITH_IMM`.
    SendWithImm = verbs::wr_opcode::SEND_WITH_IMM,
    /// `IBV_WR_RDMA_READ`: the remote buffer (as many bytes as the local SGEs add up to) is
    /// copied into the local SGEs in order, up to the QP's `max_send_sge` of them (IBTA Vol 1
    /// 9.4.3, 10.7.2.2); each region must grant
    /// [`AccessFlags::LOCAL_WRITE`](crate::AccessFlags::LOCAL_WRITE).
    RdmaRead = verbs::wr_opcode::RDMA_READ,
    /// `IBV_WR_ATOMIC_CMP_AND_SWP`: the responder compares the 8-byte little-endian u64 at the
    /// remote address with [`SendWr::compare_add`] and, if equal, replaces it with
    /// [`SendWr::swap`]; the original value lands in the 8-byte local SGE (IBTA Vol 1 9.4.5,
    /// COMPARE SWAP with an AtomicETH). Completes with [`crate::WcOpcode::CompSwap`].
    AtomicCmpAndSwp = verbs::wr_opcode::ATOMIC_CMP_AND_SWP,
    /// `IBV_WR_ATOMIC_FETCH_AND_ADD`: the responder adds [`SendWr::compare_add`] (mod 2^64) to
    /// the 8-byte little-endian u64 at the remote address; the original value lands in the
    /// 8-byte local SGE (IBTA Vol 1 9.4.5, FETCH ADD with an AtomicETH). Completes with
    /// [`crate::WcOpcode::FetchAdd`].
    AtomicFetchAndAdd = verbs::wr_opcode::ATOMIC_FETCH_AND_ADD,
}

impl WrOpcode {
    /// The `ibv_wc_opcode` of this WR's send completion (ibv_poll_cq(3)): a WRITE (with or
    /// without immediate) completes as `IBV_WC_RDMA_WRITE`, a SEND as `IBV_WC_SEND`, a READ as
    /// `IBV_WC_RDMA_READ`, the atomics as `IBV_WC_COMP_SWAP` / `IBV_WC_FETCH_ADD`.
    pub fn wc_opcode(self) -> crate::WcOpcode {
        use crate::WcOpcode as W;
        match self {
            Self::RdmaWrite | Self::RdmaWriteWithImm => W::RdmaWrite,
            Self::Send | Self::SendWithImm => W::Send,
            Self::RdmaRead => W::RdmaRead,
            Self::AtomicCmpAndSwp => W::CompSwap,
            Self::AtomicFetchAndAdd => W::FetchAdd,
        }
    }

    /// The opcode of ibverbs number `v` (`enum ibv_wr_opcode`), if this NIC knows it.
    pub fn from_raw(v: u32) -> Option<Self> {
        use verbs::wr_opcode as o;
        let v = u8::try_from(v).ok()?;
        Some(match v {
            o::RDMA_WRITE => Self::RdmaWrite,
            o::RDMA_WRITE_WITH_IMM => Self::RdmaWriteWithImm,
            o::SEND => Self::Send,
            o::SEND_WITH_IMM => Self::SendWithImm,
            o::RDMA_READ => Self::RdmaRead,
            o::ATOMIC_CMP_AND_SWP => Self::AtomicCmpAndSwp,
            o::ATOMIC_FETCH_AND_ADD => Self::AtomicFetchAndAdd,
            _ => return None,
        })
    }

    fn needs_remote(self) -> bool {
        !matches!(self, Self::Send | Self::SendWithImm)
    }

    /// True for the two atomics (`IBV_WR_ATOMIC_CMP_AND_SWP`, `IBV_WR_ATOMIC_FETCH_AND_ADD`).
    pub fn is_atomic(self) -> bool {
        matches!(self, Self::AtomicCmpAndSwp | Self::AtomicFetchAndAdd)
    }
}

bitflags::bitflags! {
    /// `enum ibv_send_flags`.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
    pub struct SendFlags: u8 {
        /// `IBV_SEND_FENCE`.
        const FENCE = 1;
        /// `IBV_SEND_SIGNALED`: generate a CQE on success.
        const SIGNALED = 2;
        /// `IBV_SEND_SOLICITED`.
        const SOLICITED = 4;
        /// `IBV_SEND_INLINE`: the data travels in the WQE (see [`SendWr::with_inline`]).
        const INLINE = 8;
    }
}

/// A scatter/gather element (`struct ibv_sge`): `length` bytes at virtual address `addr` of the
/// region with key `lkey`. Made by [`MemoryRegion::sge`], which borrows the MR for `'mr`, or
/// by [`Sge::raw`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sge<'mr> {
    /// Virtual address of the first byte.
    pub addr: u64,
    /// Length in bytes (≤ 2^31).
    pub length: u32,
    /// Local key.
    pub lkey: u32,
    _mr: PhantomData<&'mr ()>,
}

impl Sge<'_> {
    pub(crate) fn from_parts(addr: u64, length: u32, lkey: u32) -> Self {
        Self { addr, length, lkey, _mr: PhantomData }
    }
}

impl Sge<'static> {
    /// An SGE from raw values, checked by nobody but the NIC (a bad key or range completes with
    /// [`WcStatus::LocProtErr`]). The NIC can only reach memory that is registered, so this is
    /// safe, but the bytes it names are not kept alive by a borrow: prefer
    /// [`MemoryRegion::sge`].
    pub fn raw(addr: u64, length: u32, lkey: u32) -> Self {
        Self::from_parts(addr, length, lkey)
    }
}

/// A remote virtual address and the rkey that grants access to it (the RETH of an RDMA
/// request). Not checked locally: the responder's NIC checks it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RemoteAddr {
    /// Remote virtual address.
    pub addr: u64,
    /// Remote key.
    pub rkey: u32,
}

/// Inline data of a send WR: up to [`MAX_INLINE_DATA`] bytes copied into the WR, then into the
/// WQE by `post_send` (`IBV_SEND_INLINE`, ibv_post_send(3)).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct InlineData {
    len: usize,
    bytes: [u8; MAX_INLINE_DATA as usize],
}

impl InlineData {
    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

impl std::fmt::Debug for InlineData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "InlineData({} bytes)", self.len)
    }
}

/// A send work request (`struct ibv_send_wr`). Build with [`SendWr::rdma_write`],
/// [`SendWr::rdma_read`], [`SendWr::send`], [`SendWr::atomic_cmp_and_swp`] or
/// [`SendWr::atomic_fetch_and_add`] and the `with_*` methods ([`SendWr::with_sg_list`] for a
/// gather list, [`SendWr::with_inline`] for inline data).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SendWr<'mr> {
    /// Returned in the work completion.
    pub wr_id: u64,
    /// Operation.
    pub opcode: WrOpcode,
    /// Flags (SIGNALED...).
    pub flags: SendFlags,
    /// Gather list: `sg_list[..num_sge]` are the local data, in order (`num_sge` 0:
    /// zero-length). An RDMA READ scatters its response into them (zero-length entries
    /// skipped); an atomic takes exactly one, of 8 bytes.
    pub sg_list: [Sge<'mr>; MAX_SEND_SGE as usize],
    /// Number of valid entries in `sg_list` (at most the QP's `max_send_sge`).
    pub num_sge: usize,
    /// Inline data, sent instead of `sg_list` when [`SendFlags::INLINE`] is set.
    pub inline: Option<InlineData>,
    /// Remote address for RDMA operations.
    pub remote: Option<RemoteAddr>,
    /// Immediate data (for the `*WithImm` opcodes).
    pub imm_data: u32,
    /// Atomics: `wr.atomic.compare_add` — the value IBV_WR_ATOMIC_CMP_AND_SWP compares with,
    /// or the addend of IBV_WR_ATOMIC_FETCH_AND_ADD (AtomicETH Compare Data / Add Data). 0 for
    /// other opcodes.
    pub compare_add: u64,
    /// Atomics: `wr.atomic.swap` — the value IBV_WR_ATOMIC_CMP_AND_SWP writes when the compare
    /// matched (AtomicETH Swap Data). 0 for other opcodes.
    pub swap: u64,
}

impl<'mr> SendWr<'mr> {
    /// An unsignaled RDMA WRITE of `sge` to `remote`.
    pub fn rdma_write(wr_id: u64, sge: Sge<'mr>, remote: RemoteAddr) -> Self {
        Self::new(wr_id, WrOpcode::RdmaWrite, Some(sge), Some(remote))
    }

    fn new(wr_id: u64, opcode: WrOpcode, sge: Option<Sge<'mr>>, remote: Option<RemoteAddr>) -> Self {
        let mut sg_list = [Sge::from_parts(0, 0, 0); MAX_SEND_SGE as usize];
        if let Some(s) = sge {
            sg_list[0] = s;
        }
        Self {
            wr_id,
            opcode,
            flags: SendFlags::empty(),
            sg_list,
            num_sge: usize::from(sge.is_some()),
            inline: None,
            remote,
            imm_data: 0,
            compare_add: 0,
            swap: 0,
        }
    }

    /// The first SGE, if any.
    pub fn sge(&self) -> Option<Sge<'mr>> {
        (self.num_sge > 0).then(|| self.sg_list[0])
    }

    /// Replaces the gather list with `sges` (`ibv_send_wr.sg_list`): for SEND and RDMA WRITE
    /// the message is their bytes in order; an RDMA READ's response fills them in order (the
    /// READ's length is their sum). Zero-length entries are skipped. The NIC checks each
    /// entry's key, PD and bounds (and LOCAL_WRITE for a READ) before anything is sent, and
    /// completes the WR with [`WcStatus::LocProtErr`] if one fails.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for more than [`MAX_SEND_SGE`] entries
    /// ([`QueuePair::post_send`] accepts at most the QP's `max_send_sge`, and only one SGE
    /// for an atomic).
    pub fn with_sg_list(mut self, sges: &[Sge<'mr>]) -> Result<Self> {
        if sges.len() > MAX_SEND_SGE as usize {
            return Err(Error::inval(format!("a send WR holds at most {MAX_SEND_SGE} SGEs, not {}", sges.len())));
        }
        self.sg_list = [Sge::from_parts(0, 0, 0); MAX_SEND_SGE as usize];
        self.sg_list[..sges.len()].copy_from_slice(sges);
        self.num_sge = sges.len();
        Ok(self)
    }

    /// Sends `data` inline (`IBV_SEND_INLINE`): the bytes are copied into the WR now and into
    /// the WQE by `post_send`, so no memory region is involved and the caller's buffer is free
    /// at once; the NIC reads them from the SQ ring. For SEND and RDMA WRITE (with or without
    /// immediate); the QP must be built with `max_inline_data ≥ data.len()`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for more than [`MAX_INLINE_DATA`] bytes.
    pub fn with_inline(mut self, data: &[u8]) -> Result<Self> {
        if data.len() > MAX_INLINE_DATA as usize {
            return Err(Error::inval(format!(
                "inline data of {} bytes: a WQE holds at most {MAX_INLINE_DATA}",
                data.len()
            )));
        }
        let mut bytes = [0u8; MAX_INLINE_DATA as usize];
        bytes[..data.len()].copy_from_slice(data);
        self.inline = Some(InlineData { len: data.len(), bytes });
        self.flags.insert(SendFlags::INLINE);
        Ok(self)
    }

    /// An unsignaled RDMA READ (`IBV_WR_RDMA_READ`, ibv_post_send(3)) of `sge.length` bytes at
    /// `remote` into `sge` (or a zero-length READ with `None`). For a READ into several local
    /// buffers, replace the list with [`with_sg_list`](Self::with_sg_list): the READ's length
    /// (the RETH DMA length) is then the sum of the SGE lengths, and the response bytes fill
    /// the non-empty SGEs in order, up to the QP's `max_send_sge` entries. The remote region
    /// needs REMOTE_READ, every local one LOCAL_WRITE (else the NIC completes the WR with
    /// [`WcStatus::LocProtErr`] and sends nothing); the local bytes are the NIC's to write
    /// until the completion ([`crate::WcOpcode::RdmaRead`], `byte_len` = the sum). The NIC
    /// keeps 4 READ lists per QP, so a READ with several SGEs waits there while 4 READs or
    /// atomics of the QP are outstanding (results are unchanged).
    pub fn rdma_read(wr_id: u64, sge: impl Into<Option<Sge<'mr>>>, remote: RemoteAddr) -> Self {
        Self::new(wr_id, WrOpcode::RdmaRead, sge.into(), Some(remote))
    }

    /// An unsignaled atomic compare and swap (`IBV_WR_ATOMIC_CMP_AND_SWP`, ibv_post_send(3);
    /// IBTA Vol 1 9.4.5): the responder's NIC reads the 8-byte little-endian u64 at `remote`
    /// (8-byte aligned, in a region and QP granting REMOTE_ATOMIC), writes `swap` there iff it
    /// equals `compare`, and returns the original value, which the local NIC writes into `sge`
    /// as a little-endian u64. `sge` must be exactly 8 bytes of a region with LOCAL_WRITE; the
    /// bytes are the NIC's to write until the completion ([`crate::WcOpcode::CompSwap`],
    /// `byte_len` 8). Nothing is checked here: the NIC reports a wrong SGE length
    /// ([`WcStatus::LocLenErr`]), a bad local key or access ([`WcStatus::LocProtErr`]), a
    /// misaligned remote address ([`WcStatus::RemInvReqErr`]) and a refused rkey or range
    /// ([`WcStatus::RemAccessErr`]).
    pub fn atomic_cmp_and_swp(wr_id: u64, sge: Sge<'mr>, remote: RemoteAddr, compare: u64, swap: u64) -> Self {
        Self { compare_add: compare, swap, ..Self::new(wr_id, WrOpcode::AtomicCmpAndSwp, Some(sge), Some(remote)) }
    }

    /// An unsignaled atomic fetch and add (`IBV_WR_ATOMIC_FETCH_AND_ADD`, ibv_post_send(3);
    /// IBTA Vol 1 9.4.5): the responder's NIC adds `add` (wrapping, mod 2^64) to the 8-byte
    /// little-endian u64 at `remote` and returns the original value into `sge`. The rules for
    /// `sge` and `remote` and the errors are those of
    /// [`atomic_cmp_and_swp`](Self::atomic_cmp_and_swp); the completion is
    /// [`crate::WcOpcode::FetchAdd`] with `byte_len` 8.
    pub fn atomic_fetch_and_add(wr_id: u64, sge: Sge<'mr>, remote: RemoteAddr, add: u64) -> Self {
        Self { compare_add: add, ..Self::new(wr_id, WrOpcode::AtomicFetchAndAdd, Some(sge), Some(remote)) }
    }

    /// An unsignaled SEND (`IBV_WR_SEND`) of `sge`, or of zero bytes with `None`: the peer's
    /// NIC scatters it into the next receive WR of its RQ. `remote` is unused.
    pub fn send(wr_id: u64, sge: impl Into<Option<Sge<'mr>>>) -> Self {
        Self::new(wr_id, WrOpcode::Send, sge.into(), None)
    }

    /// Sets or clears [`SendFlags::SIGNALED`].
    pub fn signaled(mut self, on: bool) -> Self {
        self.flags.set(SendFlags::SIGNALED, on);
        self
    }

    /// Replaces the opcode.
    pub fn with_opcode(mut self, opcode: WrOpcode) -> Self {
        self.opcode = opcode;
        self
    }

    /// Replaces the flags.
    pub fn with_flags(mut self, flags: SendFlags) -> Self {
        self.flags = flags;
        self
    }

    /// Sets the immediate data.
    pub fn with_imm(mut self, imm: u32) -> Self {
        self.imm_data = imm;
        self
    }
}

/// A receive work request (`struct ibv_recv_wr`): where the NIC scatters the next incoming
/// SEND. `sg_list[..num_sge]` are the scatter entries (at most the QP's `max_recv_sge`, up to
/// [`MAX_RECV_SGE`]): the NIC fills entry 0 first, then entry 1, and so on (zero-length entries
/// are skipped; a packet's bytes may straddle two entries), and checks every entry of nonzero
/// length (a valid lkey of the QP's PD granting LOCAL_WRITE, inside its region) before writing
/// any byte; with `num_sge` 0 only a zero-length message fits. Build with
/// [`RecvWr::new`], [`RecvWr::zero_length`] or [`RecvWr::with_sg_list`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecvWr<'mr> {
    /// Returned in the receive completion.
    pub wr_id: u64,
    /// Scatter entries (those past `num_sge` are ignored).
    pub sg_list: [Sge<'mr>; recv_wqe::MAX_SGE],
    /// Number of valid entries in `sg_list` (at most the QP's `max_recv_sge`).
    pub num_sge: usize,
}

impl<'mr> RecvWr<'mr> {
    /// A receive of at most `sge.length` bytes into `sge`.
    pub fn new(wr_id: u64, sge: Sge<'mr>) -> Self {
        let mut sg_list = [Sge::from_parts(0, 0, 0); recv_wqe::MAX_SGE];
        sg_list[0] = sge;
        Self { wr_id, sg_list, num_sge: 1 }
    }

    /// A receive without a buffer: it accepts only a zero-length SEND.
    pub fn zero_length(wr_id: u64) -> Self {
        Self { wr_id, sg_list: [Sge::from_parts(0, 0, 0); recv_wqe::MAX_SGE], num_sge: 0 }
    }

    /// A receive with the scatter list `sges` (as `ibv_recv_wr.sg_list`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for more than [`rnic_contract::recv_wqe::MAX_SGE`] entries
    /// (what a receive WQE can hold; [`QueuePair::post_recv`] accepts at most the QP's
    /// `max_recv_sge`).
    pub fn with_sg_list(wr_id: u64, sges: &[Sge<'mr>]) -> Result<Self> {
        if sges.len() > recv_wqe::MAX_SGE {
            return Err(Error::inval(format!(
                "a receive WR holds at most {} scatter entries, not {}",
                recv_wqe::MAX_SGE,
                sges.len()
            )));
        }
        let mut wr = Self::zero_length(wr_id);
        wr.sg_list[..sges.len()].copy_from_slice(sges);
        wr.num_sge = sges.len();
        Ok(wr)
    }
}

/// Checks receive WR `i` against a queue's `max_sge` (entries, each ≤ 2^31 bytes).
fn check_recv_wr(i: usize, wr: &RecvWr<'_>, max_sge: u32) -> Result<()> {
    if wr.num_sge > max_sge as usize {
        return Err(Error::inval(format!(
            "receive WR {i}: {} scatter entries, the queue takes at most max_recv_sge = {max_sge}",
            wr.num_sge
        )));
    }
    if let Some(s) = wr.sg_list[..wr.num_sge].iter().find(|s| s.length > 1 << 31) {
        return Err(Error::inval(format!("receive WR {i}: SGE length {} exceeds 2^31", s.length)));
    }
    Ok(())
}

/// How many of `wrs` can be posted to a queue (`what`, of `size` entries, `free` of them free,
/// `max_sge` entries per WR): the count before the first WR that is malformed or finds no
/// room, and the error for that WR.
pub(crate) fn recv_prefix(
    wrs: &[RecvWr<'_>],
    max_sge: u32,
    free: usize,
    size: u32,
    what: &str,
) -> (usize, Option<PostError>) {
    for (i, wr) in wrs.iter().enumerate() {
        if i == free {
            let error =
                Error::NoMemory(format!("{what} is full: receive WR {i} finds none of its {size} entries free"));
            return (i, Some(PostError { bad_wr: i, error }));
        }
        if let Err(error) = check_recv_wr(i, wr, max_sge) {
            return (i, Some(PostError { bad_wr: i, error }));
        }
    }
    (wrs.len(), None)
}

/// Writes `wrs` (already checked, see [`recv_prefix`]) as receive WQEs of `stride` bytes into
/// the ring of `size` entries at producer index `start` onwards (whole WQEs: nothing of an
/// earlier lap survives). The caller checked for room and rings the doorbell. On a backend
/// error, `bad_wr` is the WR whose WQE was not written (the ones before it were).
pub(crate) fn write_recv_wqes(
    ring: &DmaBuffer,
    stride: usize,
    size: u32,
    _max_sge: u32,
    start: u64,
    wrs: &[RecvWr<'_>],
) -> std::result::Result<(), PostError> {
    let mask = u64::from(size) - 1;
    for (k, wr) in wrs.iter().enumerate() {
        let sge = if wr.num_sge > 0 { wr.sg_list[0] } else { Sge::from_parts(0, 0, 0) };
        let w = RecvWqe {
            wr_id: wr.wr_id,
            num_sge: wr.num_sge as u8,
            sge_addr: sge.addr,
            sge_length: sge.length,
            sge_lkey: sge.lkey,
        };
        let mut buf = vec![0u8; stride];
        buf[..recv_wqe::BYTES].copy_from_slice(&w.pack());
        for (j, g) in wr.sg_list[..wr.num_sge].iter().enumerate().skip(1) {
            put_sge(&mut buf, recv_wqe::sge_offset(j), g.addr, g.length, g.lkey);
        }
        let slot = ((start + k as u64) & mask) as usize;
        ring.write(slot * stride, &buf).map_err(|error| PostError { bad_wr: k, error })?;
    }
    Ok(())
}

/// A work request on the SQ that has not been retired by a completion.
#[derive(Clone, Copy, Debug)]
struct Outstanding {
    wr_id: u64,
    signaled: bool,
}

/// The part of a QP its CQs update when they poll a completion: the state (an error
/// completion moves it to ERR) and the work requests not yet retired.
#[derive(Debug, Default)]
pub(crate) struct QpShared {
    state: QpState,
    outstanding: VecDeque<Outstanding>,
    /// Receive WRs posted and not yet completed, oldest first: their wr_ids.
    recv: VecDeque<u64>,
    /// Completions that matched no outstanding work request.
    stray: u64,
    /// The SRQ the QP receives from: its receive completions retire the SRQ's WRs.
    srq: Option<Rc<RefCell<SrqShared>>>,
}

impl QpShared {
    /// Send and receive work requests not yet retired (receives taken from an SRQ are the
    /// SRQ's and counted there).
    pub(crate) fn pending(&self) -> (usize, usize) {
        let srq = self.srq.as_ref().map_or(0, |s| s.borrow().outstanding);
        (self.outstanding.len(), self.recv.len() + srq)
    }

    /// Retires the work requests finished by a completion of `wr_id`: the oldest outstanding
    /// one with that id that produces a CQE (signaled, or any on error) and every older one
    /// (RC completes in order). An error moves the QP to ERR (IBTA 10.3.1).
    pub(crate) fn complete(&mut self, wr_id: u64, status: WcStatus) {
        let err = !status.is_success();
        match self.outstanding.iter().position(|o| o.wr_id == wr_id && (o.signaled || err)) {
            Some(p) => {
                self.outstanding.drain(..=p);
            }
            None => self.stray += 1,
        }
        if err {
            self.state = QpState::Err;
        }
    }

    /// Retires the receive WR finished by a receive completion of `wr_id`. The NIC consumes
    /// receive WQEs in order and completes every one it consumes, so it is the oldest
    /// outstanding receive with that id (older ones, which should not exist, are retired too).
    /// An error moves the QP to ERR (IBTA 10.8.3.3: a responder error is fatal to the QP).
    pub(crate) fn complete_recv(&mut self, wr_id: u64, status: WcStatus) {
        if let Some(srq) = &self.srq {
            // Taken from the SRQ: any QP's receive completion frees one of its slots.
            let mut s = srq.borrow_mut();
            match s.outstanding.checked_sub(1) {
                Some(n) => s.outstanding = n,
                None => self.stray += 1,
            }
            if !status.is_success() {
                self.state = QpState::Err;
            }
            return;
        }
        match self.recv.iter().position(|&w| w == wr_id) {
            Some(p) => {
                self.recv.drain(..=p);
            }
            None => self.stray += 1,
        }
        if !status.is_success() {
            self.state = QpState::Err;
        }
    }
}

/// Options of [`QueuePair::connect_with`]; `Default` gives the values [`QueuePair::connect`]
/// uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnectOptions {
    /// Path MTU (default 4096).
    pub path_mtu: Mtu,
    /// Remote access this QP grants (default REMOTE_WRITE | REMOTE_READ).
    pub access: AccessFlags,
    /// Local ACK timeout exponent (default 14: 4.096 µs × 2^14 ≈ 67 ms, perftest's value).
    pub timeout: u8,
    /// Transport retries (default 7).
    pub retry_cnt: u8,
    /// RNR retries (default 7: infinite).
    pub rnr_retry: u8,
    /// RNR timer code (default 12: 0.64 ms).
    pub min_rnr_timer: u8,
    /// Outstanding READ/atomic as initiator (default 1).
    pub max_rd_atomic: u8,
    /// Outstanding READ/atomic as responder (default 1).
    pub max_dest_rd_atomic: u8,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        Self {
            path_mtu: Mtu::Mtu4096,
            access: AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_READ,
            timeout: 14,
            retry_cnt: 7,
            rnr_retry: 7,
            min_rnr_timer: 12,
            max_rd_atomic: 1,
            max_dest_rd_atomic: 1,
        }
    }
}

/// A buffer a peer advertises for RDMA: its virtual address, rkey and length.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RemoteBuffer {
    /// Virtual address of the first byte.
    pub addr: u64,
    /// Remote key.
    pub rkey: u32,
    /// Length in bytes.
    pub len: u64,
}

impl RemoteBuffer {
    /// The remote address `offset` bytes into the buffer. Not bounds-checked: the responder
    /// checks (so tests can aim past the end on purpose).
    pub fn at(&self, offset: u64) -> RemoteAddr {
        RemoteAddr { addr: self.addr.wrapping_add(offset), rkey: self.rkey }
    }
}

/// What one side tells the other to connect an RC QP (what perftest exchanges over TCP):
/// QP number, first PSN it will send, port MAC and IPv4 address, and optionally a buffer the
/// peer may access. Serializable, so it can travel over any channel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Endpoint {
    /// QP number.
    pub qpn: u32,
    /// First PSN this QP sends (the peer's `rq_psn`).
    pub psn: u32,
    /// Port MAC address.
    pub mac: MacAddr,
    /// Port IPv4 address.
    pub ip: Ipv4Addr,
    /// An advertised buffer.
    pub buffer: Option<RemoteBuffer>,
}

impl Endpoint {
    /// Advertises `mr` (address, rkey, length) with this endpoint.
    pub fn with_buffer(mut self, mr: &MemoryRegion<'_>) -> Self {
        self.buffer = Some(RemoteBuffer { addr: mr.addr(), rkey: mr.rkey(), len: mr.len() as u64 });
        self
    }
}

/// Builder of an RC queue pair (`ibv_create_qp(3)` with `struct ibv_qp_init_attr`), from
/// [`ProtectionDomain::create_qp`]. The receive CQ is the send CQ unless
/// [`set_recv_cq`](Self::set_recv_cq) names another.
#[derive(Clone)]
pub struct QpBuilder {
    pd: ProtectionDomain,
    cq: Rc<CqInner>,
    recv_cq: Rc<CqInner>,
    max_send_wr: u32,
    max_send_sge: u32,
    max_recv_wr: u32,
    max_recv_sge: u32,
    max_inline_data: u32,
    sq_sig_all: bool,
    srq: Option<Rc<SrqInner>>,
}

impl QpBuilder {
    pub(crate) fn new(pd: ProtectionDomain, cq: &CompletionQueue) -> Self {
        Self {
            pd,
            cq: Rc::clone(&cq.inner),
            recv_cq: Rc::clone(&cq.inner),
            max_send_wr: 64,
            max_send_sge: 1,
            max_recv_wr: 0,
            max_recv_sge: 1,
            max_inline_data: 0,
            sq_sig_all: false,
            srq: None,
        }
    }

    /// Receive from `srq` (`ibv_qp_init_attr.srq`) instead of an RQ of the QP's own:
    /// `max_recv_wr` must stay 0, `post_recv` on the QP fails, and the receive CQ must have
    /// room for the SRQ's size, counted once however many of the SRQ's QPs use that CQ (each
    /// SRQ WQE completes once). The QP keeps the SRQ alive.
    pub fn set_srq(mut self, srq: &SharedReceiveQueue<'_>) -> Self {
        self.srq = Some(Rc::clone(&srq.inner));
        self
    }

    /// The CQ of receive completions (`ibv_qp_init_attr.recv_cq`; default: the send CQ). It
    /// must have room for the RQ (see [`CompletionQueue`]).
    pub fn set_recv_cq(mut self, cq: &CompletionQueue) -> Self {
        self.recv_cq = Rc::clone(&cq.inner);
        self
    }

    /// SQ entries (default 64; rounded up to a power of two, at most [`MAX_SEND_WR`]). The send
    /// CQ must have room for it (see [`CompletionQueue`]).
    pub fn set_max_send_wr(mut self, n: u32) -> Self {
        self.max_send_wr = n;
        self
    }

    /// SGEs per send WR (default 1, at most [`MAX_SEND_SGE`]). More SGEs make larger WQEs
    /// (see [`rnic_contract::wqe::log_stride_for`]); `query_qp` reports what they hold.
    pub fn set_max_send_sge(mut self, n: u32) -> Self {
        self.max_send_sge = n;
        self
    }

    /// RQ entries (default 0: no receive queue, so incoming SENDs are answered with RNR NAKs;
    /// rounded up to a power of two, at most [`MAX_RECV_WR`]). The receive CQ must have room
    /// for it.
    pub fn set_max_recv_wr(mut self, n: u32) -> Self {
        self.max_recv_wr = n;
        self
    }

    /// Scatter entries per receive WR (default 1; at most [`MAX_RECV_SGE`], 15). It sizes the
    /// receive WQE: 64 bytes for up to 3 entries, 128 for up to 7, 256 for up to 15
    /// ([`rnic_contract::recv_wqe::log_stride_for`]); `query_qp` reports what that size holds.
    pub fn set_max_recv_sge(mut self, n: u32) -> Self {
        self.max_recv_sge = n;
        self
    }

    /// Inline bytes per send WR (default 0, at most [`MAX_INLINE_DATA`]).
    pub fn set_max_inline_data(mut self, n: u32) -> Self {
        self.max_inline_data = n;
        self
    }

    /// Signal every work request, whatever its flags (`sq_sig_all`).
    pub fn set_sq_sig_all(mut self, on: bool) -> Self {
        self.sq_sig_all = on;
        self
    }

    /// Creates the QP in RESET: allocates a QP number, the SQ ring and, with
    /// `max_recv_wr > 0`, the RQ ring (zeroed DMA memory, power-of-two entries of the smallest
    /// WQE size that holds `max_send_sge` SGEs and `max_inline_data` bytes, or `max_recv_sge`
    /// scatter entries), reserves room on the send and receive CQs, writes its context (state RESET,
    /// SEND_CQ / SQ ring, RECV_CQ / RQ ring) and rings the RQ doorbell with producer index 0
    /// (the NIC keeps the last RQ producer index of a QP number across QPs).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for sizes out of range, a CQ of another context, or a CQ too
    /// small for its QPs; [`Error::NotSupported`] for more SGEs or inline bytes than the NIC
    /// takes ([`MAX_SEND_SGE`], [`MAX_INLINE_DATA`], [`MAX_RECV_SGE`]);
    /// [`Error::NoMemory`] when no QP context or DMA memory is free; backend errors.
    pub fn build<'mr>(self) -> Result<QueuePair<'mr>> {
        let ctx = Rc::clone(&self.pd.inner.ctx);
        if !Rc::ptr_eq(&ctx, &self.cq.ctx) {
            return Err(Error::inval("the send CQ belongs to another context"));
        }
        if !Rc::ptr_eq(&ctx, &self.recv_cq.ctx) {
            return Err(Error::inval("the receive CQ belongs to another context"));
        }
        if self.max_send_wr == 0 || self.max_send_wr > MAX_SEND_WR {
            return Err(Error::inval(format!("max_send_wr must be 1..={MAX_SEND_WR}, not {}", self.max_send_wr)));
        }
        if self.max_recv_wr > MAX_RECV_WR {
            return Err(Error::inval(format!("max_recv_wr must be 0..={MAX_RECV_WR}, not {}", self.max_recv_wr)));
        }
        if self.max_send_sge > MAX_SEND_SGE {
            return Err(Error::NotSupported(format!(
                "max_send_sge {}: the NIC gathers at most {MAX_SEND_SGE} SGEs per WQE",
                self.max_send_sge
            )));
        }
        if self.max_recv_sge > MAX_RECV_SGE {
            return Err(Error::NotSupported(format!(
                "max_recv_sge {}: a receive WQE holds at most {MAX_RECV_SGE} scatter entries",
                self.max_recv_sge
            )));
        }
        if self.max_inline_data > MAX_INLINE_DATA {
            return Err(Error::NotSupported(format!(
                "max_inline_data {}: a WQE holds at most {MAX_INLINE_DATA} inline bytes",
                self.max_inline_data
            )));
        }
        let size = self.max_send_wr.next_power_of_two();
        let sq_log = size.trailing_zeros() as u8;
        let sq_log_stride = wqe::log_stride_for(self.max_send_sge as usize, self.max_inline_data as usize);
        let sq_stride = wqe::stride(sq_log_stride);
        // The ring is page-aligned, so no WQE (at most 512 bytes) crosses a 4 KiB boundary.
        let ring = DmaBuffer::new(&ctx.dev, size as usize * sq_stride, 4096)?;
        ring.write(0, &vec![0u8; size as usize * sq_stride])?;
        if let Some(srq) = &self.srq {
            if self.max_recv_wr != 0 {
                return Err(Error::inval("a QP on an SRQ has no receive queue of its own: leave max_recv_wr at 0"));
            }
            if !Rc::ptr_eq(&srq.pd.inner, &self.pd.inner) {
                return Err(Error::inval("the SRQ belongs to another protection domain"));
            }
        }
        let rq_size = if self.max_recv_wr == 0 { 0 } else { self.max_recv_wr.next_power_of_two() };
        let rq_log_stride = recv_wqe::log_stride_for(self.max_recv_sge as usize);
        let rq_stride = recv_wqe::stride(rq_log_stride);
        let rq_ring = if rq_size == 0 {
            None
        } else {
            let r = DmaBuffer::new(&ctx.dev, rq_size as usize * rq_stride, 4096)?;
            r.write(0, &vec![0u8; rq_size as usize * rq_stride])?;
            Some(r)
        };
        let qpn = ctx.tables.borrow_mut().alloc_qpn()?;
        let shared = Rc::new(RefCell::new(QpShared {
            srq: self.srq.as_ref().map(|s| Rc::clone(&s.shared)),
            ..QpShared::default()
        }));
        // Receive completions of a QP on an SRQ are reserved per SRQ (attach_srq), not per QP.
        let recv_entries = if self.srq.is_some() { 0 } else { rq_size };
        let undo = |qpn: u32| {
            self.cq.detach(qpn);
            self.recv_cq.detach(qpn);
            ctx.tables.borrow_mut().free_qpn(qpn);
        };
        let attached = if Rc::ptr_eq(&self.cq, &self.recv_cq) {
            self.cq.attach(qpn, &shared, (size + recv_entries) as usize)
        } else {
            self.cq
                .attach(qpn, &shared, size as usize)
                .and_then(|()| self.recv_cq.attach(qpn, &shared, recv_entries as usize))
        };
        let attached = match (&self.srq, attached) {
            (Some(s), Ok(())) => self.recv_cq.attach_srq(qpn, s.srqn, s.size as usize),
            (_, r) => r,
        };
        if let Err(e) = attached {
            undo(qpn);
            return Err(e);
        }
        let base = QpContext {
            state: QpState::Reset as u8,
            pd: self.pd.pdn(),
            pkey: DEFAULT_PKEY,
            udp_sport: udp_sport(qpn),
            send_cq: self.cq.cqn as u8,
            sq_log_size: sq_log,
            sq_log_stride: sq_log_stride as u8,
            sq_base: ring.iova().0,
            recv_cq: self.recv_cq.cqn as u8,
            rq_log_size: if rq_size == 0 { 0 } else { rq_size.trailing_zeros() as u8 },
            rq_log_stride: rq_log_stride as u8,
            rq_base: rq_ring.as_ref().map_or(0, |r| r.iova().0),
            ..QpContext::default()
        };
        // On an SRQ the context names it and describes its ring.
        let base = match &self.srq {
            Some(s) => QpContext {
                use_srq: true,
                srqn: s.srqn as u8,
                rq_log_size: s.size.trailing_zeros() as u8,
                rq_log_stride: s.log_stride,
                rq_base: s.ring.iova().0,
                ..base
            },
            None => base,
        };
        // (The NIC empties its RQ indices itself on a context write in RESET.)
        let committed = write_context(&*ctx.dev, regs::cmd_op::WRITE_QP, qpn as u8, &base.pack());
        if let Err(e) = committed {
            undo(qpn);
            return Err(e);
        }
        let cap = QpCap {
            max_send_wr: size,
            max_recv_wr: rq_size,
            // What the WQE size holds (ibv_create_qp(3) may report more than asked for).
            max_send_sge: if sq_stride == wqe::BYTES {
                1
            } else {
                (((sq_stride - wqe::INLINE_DATA) / 16 + 1) as u32).min(MAX_SEND_SGE)
            },
            max_recv_sge: if rq_size == 0 { 0 } else { (recv_wqe::max_sge(rq_log_stride) as u32).min(MAX_RECV_SGE) },
            max_inline_data: (sq_stride - wqe::INLINE_DATA) as u32,
        };
        let port_ip = ctx.port.get().map_or(0, |p| u32::from(p.ip));
        crate::pd::count(&self.pd.inner.qps, true);
        Ok(QueuePair {
            pd: self.pd,
            cq: self.cq,
            recv_cq: self.recv_cq,
            sq: shared,
            ring,
            rq_ring,
            qpn,
            sq_size: size,
            rq_size,
            sq_stride,
            rq_stride,
            _srq: self.srq,
            sq_sig_all: self.sq_sig_all,
            pi: Cell::new(0),
            rq_pi: Cell::new(0),
            attr: QpAttr { cap, ..QpAttr::default() },
            hw: base,
            local_psn: initial_psn(qpn, port_ip),
            released: false,
            _mr: PhantomData,
        })
    }
}

/// UDP source port of a QP's packets: `0xC000 | hash(qpn) & 0x3FFF` (RoCEv2 flow entropy,
/// Annex A17.4.5.1).
pub fn udp_sport(qpn: u32) -> u16 {
    let h = qpn.wrapping_mul(0x9E37_79B1);
    0xC000 | ((h >> 16) as u16 & 0x3FFF)
}

/// A deterministic, well-spread first PSN for a QP (perftest draws it at random; determinism
/// keeps simulations reproducible).
fn initial_psn(qpn: u32, salt: u32) -> u32 {
    let mut z = (u64::from(qpn) << 32 | u64::from(salt)).wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    ((z ^ (z >> 31)) as u32) & PSN_MASK
}

/// A reliable-connected queue pair with a send queue and, if built with `max_recv_wr > 0`, a
/// receive queue.
///
/// `'mr` is the lifetime of the memory regions its work requests use: [`post_send`] and
/// [`post_recv`] take SGEs that borrow their MR for `'mr`, so every MR a QP has used outlives
/// the QP, and the NIC can never DMA a buffer whose borrow has ended (declare MRs before the
/// QP). Dropping the QP moves it to RESET (the NIC stops using it) and frees its rings and
/// number.
///
/// [`post_send`]: QueuePair::post_send
/// [`post_recv`]: QueuePair::post_recv
pub struct QueuePair<'mr> {
    pd: ProtectionDomain,
    cq: Rc<CqInner>,
    recv_cq: Rc<CqInner>,
    sq: Rc<RefCell<QpShared>>,
    ring: DmaBuffer,
    rq_ring: Option<DmaBuffer>,
    qpn: u32,
    sq_size: u32,
    /// RQ entries (0: no receive queue).
    rq_size: u32,
    /// Bytes per WQE in the SQ ring and per receive WQE in the RQ ring.
    sq_stride: usize,
    rq_stride: usize,
    /// The SRQ it receives from, kept alive while the NIC may use it.
    _srq: Option<Rc<SrqInner>>,
    sq_sig_all: bool,
    /// WQEs posted since the last RESET (the doorbell carries it mod 2^16).
    pi: Cell<u64>,
    /// Receive WQEs posted since the last RESET (the RQ doorbell carries it mod 2^16).
    rq_pi: Cell<u64>,
    attr: QpAttr,
    hw: QpContext,
    local_psn: u32,
    /// Set once the QP was destroyed (by `destroy` or drop).
    released: bool,
    /// Invariant in `'mr`, see the type's documentation.
    _mr: PhantomData<Cell<&'mr ()>>,
}

impl std::fmt::Debug for QueuePair<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueuePair")
            .field("qpn", &self.qpn)
            .field("state", &self.state())
            .field("outstanding", &self.outstanding())
            .finish()
    }
}

impl<'mr> QueuePair<'mr> {
    /// The QP number (24-bit in BTH; < 2^LOG_NUM_QPS on this NIC).
    pub fn qp_num(&self) -> u32 {
        self.qpn
    }

    /// The current state as the driver knows it (an error completion moves it to ERR).
    pub fn state(&self) -> QpState {
        self.sq.borrow().state
    }

    /// Send work requests posted and not yet retired by a completion.
    pub fn outstanding(&self) -> usize {
        self.sq.borrow().outstanding.len()
    }

    /// Receive work requests posted and not yet retired by their receive completion (their RQ
    /// slots are in use).
    pub fn recv_outstanding(&self) -> usize {
        self.sq.borrow().recv.len()
    }

    /// SQ entries (a power of two).
    pub fn sq_capacity(&self) -> usize {
        self.sq_size as usize
    }

    /// RQ entries (a power of two, or 0 without a receive queue).
    pub fn rq_capacity(&self) -> usize {
        self.rq_size as usize
    }

    /// The protection domain.
    pub fn pd(&self) -> &ProtectionDomain {
        &self.pd
    }

    /// The first PSN this QP sends after [`connect`](Self::connect) (what its [`Endpoint`]
    /// advertises).
    pub fn local_psn(&self) -> u32 {
        self.local_psn
    }

    /// The attributes (`ibv_query_qp(3)`): the state, every attribute set so far and the sizes.
    pub fn query_qp(&self) -> QpAttr {
        QpAttr { qp_state: self.state(), cur_qp_state: self.state(), ..self.attr }
    }

    /// Modifies the QP (`ibv_modify_qp(3)`): checks `mask` against the RC transition table
    /// ([`transition_masks`]) and the values ([`validate_modify`]), then rewrites the whole QP
    /// context (WRITE_QP) with the new state. `RQ_PSN` in the mask sets INIT_RQ_PSN (the NIC
    /// reloads its expected PSN), `SQ_PSN` sets INIT_SQ_PSN (it reloads its next PSN and resets
    /// the SQ indices and, on the responder side, its RQ consumer index). A transition to RESET
    /// forgets every outstanding send and receive work request without a completion, as in
    /// ibverbs (the NIC empties its RQ producer index on the RESET context write, and INIT→RTR
    /// starts its consumer index at 0). A transition to ERR makes the NIC complete every
    /// outstanding send and receive work request with `IBV_WC_WR_FLUSH_ERR`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] as [`validate_modify`] — then nothing changed and no MMIO
    /// happened; backend errors of the context write (the QP keeps its old state).
    pub fn modify(&mut self, attr: &QpAttr, mask: QpAttrMask) -> Result<()> {
        let cur = self.state();
        let next = validate_modify(cur, attr, mask)?;
        let mut a = self.attr;
        if next == QpState::Reset {
            a = QpAttr { cap: self.attr.cap, ..QpAttr::default() };
        } else {
            apply(&mut a, attr, mask);
        }
        a.qp_state = next;
        a.cur_qp_state = next;
        let hw = QpContext {
            state: next as u8,
            init_sq_psn: mask.contains(QpAttrMask::SQ_PSN),
            init_rq_psn: mask.contains(QpAttrMask::RQ_PSN),
            path_mtu: if next == QpState::Reset { 0 } else { a.path_mtu as u8 },
            access: (a.qp_access_flags.bits() & 0xE) as u8,
            dest_qpn: a.dest_qp_num,
            sq_psn: a.sq_psn,
            rq_psn: a.rq_psn,
            dest_ip: a.ah_attr.dest_ip,
            dest_mac: a.ah_attr.dest_mac.0,
            timeout: a.timeout,
            retry_cnt: a.retry_cnt,
            rnr_retry: a.rnr_retry,
            min_rnr_timer: a.min_rnr_timer,
            max_rd_atomic: a.max_rd_atomic,
            max_dest_rd_atomic: a.max_dest_rd_atomic,
            ..self.hw
        };
        write_context(&*self.pd.inner.ctx.dev, regs::cmd_op::WRITE_QP, self.qpn as u8, &hw.pack())?;
        self.hw = QpContext { init_sq_psn: false, init_rq_psn: false, ..hw };
        self.attr = a;
        {
            let mut sq = self.sq.borrow_mut();
            sq.state = next;
            if next == QpState::Reset {
                sq.outstanding.clear();
                sq.recv.clear();
                self.pi.set(0);
                self.rq_pi.set(0);
            }
        }
        Ok(())
    }

    /// This QP's side of a connection, to hand to the peer. Fill in a buffer with
    /// [`Endpoint::with_buffer`].
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if the context has no port address
    /// ([`crate::Context::set_port_addr`]).
    pub fn endpoint(&self) -> Result<Endpoint> {
        let port = self.pd.inner.ctx.port.get().ok_or_else(|| {
            Error::inval("the port address is not set (Context::set_port_addr), so there is no endpoint to advertise")
        })?;
        Ok(Endpoint { qpn: self.qpn, psn: self.local_psn, mac: port.mac, ip: port.ip, buffer: None })
    }

    /// Connects to `remote` with [`ConnectOptions::default`]; see
    /// [`connect_with`](Self::connect_with).
    ///
    /// # Errors
    /// As [`connect_with`](Self::connect_with).
    pub fn connect(&mut self, remote: &Endpoint) -> Result<()> {
        self.connect_with(remote, &ConnectOptions::default())
    }

    /// Takes a QP in RESET to RTS towards `remote` with the three modifies of an RC connection:
    /// RESET→INIT (pkey_index 0, port 1, access), INIT→RTR (address vector from the endpoint,
    /// path MTU, dest QPN, rq_psn = the peer's PSN, max_dest_rd_atomic, min_rnr_timer) and
    /// RTR→RTS (sq_psn = [`local_psn`](Self::local_psn), timeout, retry counts,
    /// max_rd_atomic). On failure the QP is moved back to RESET.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if the QP is not in RESET or a value is out of range; backend
    /// errors.
    pub fn connect_with(&mut self, remote: &Endpoint, opts: &ConnectOptions) -> Result<()> {
        use QpAttrMask as M;
        if self.state() != QpState::Reset {
            return Err(Error::inval(format!("connect needs a QP in RESET, QP {} is in {:?}", self.qpn, self.state())));
        }
        let attr = QpAttr {
            qp_state: QpState::Init,
            pkey_index: 0,
            port_num: 1,
            qp_access_flags: opts.access,
            path_mtu: opts.path_mtu,
            ah_attr: AddressVector { dest_mac: remote.mac, dest_ip: remote.ip },
            dest_qp_num: remote.qpn,
            rq_psn: remote.psn,
            sq_psn: self.local_psn,
            max_rd_atomic: opts.max_rd_atomic,
            max_dest_rd_atomic: opts.max_dest_rd_atomic,
            min_rnr_timer: opts.min_rnr_timer,
            timeout: opts.timeout,
            retry_cnt: opts.retry_cnt,
            rnr_retry: opts.rnr_retry,
            ..QpAttr::default()
        };
        let steps = [
            (QpState::Init, M::STATE | M::PKEY_INDEX | M::PORT | M::ACCESS_FLAGS),
            (
                QpState::Rtr,
                M::STATE | M::AV | M::PATH_MTU | M::DEST_QPN | M::RQ_PSN | M::MAX_DEST_RD_ATOMIC | M::MIN_RNR_TIMER,
            ),
            (QpState::Rts, M::STATE | M::SQ_PSN | M::TIMEOUT | M::RETRY_CNT | M::RNR_RETRY | M::MAX_QP_RD_ATOMIC),
        ];
        for (state, mask) in steps {
            if let Err(e) = self.modify(&QpAttr { qp_state: state, ..attr }, mask) {
                let _ = self.modify(&QpAttr { qp_state: QpState::Reset, ..attr }, M::STATE);
                return Err(e);
            }
        }
        Ok(())
    }

    /// Checks one work request; `i` is its index in the list.
    fn check_wr(&self, i: usize, wr: &SendWr<'mr>) -> Result<()> {
        let cap = &self.attr.cap;
        if wr.flags.contains(SendFlags::INLINE) {
            let Some(data) = &wr.inline else {
                return Err(Error::inval(format!("WR {i}: IBV_SEND_INLINE without data (use SendWr::with_inline)")));
            };
            if !matches!(
                wr.opcode,
                WrOpcode::Send | WrOpcode::SendWithImm | WrOpcode::RdmaWrite | WrOpcode::RdmaWriteWithImm
            ) {
                return Err(Error::inval(format!(
                    "WR {i}: IBV_SEND_INLINE is for SEND and RDMA WRITE, not {:?}",
                    wr.opcode
                )));
            }
            if data.len > cap.max_inline_data as usize {
                return Err(Error::inval(format!(
                    "WR {i}: {} inline bytes, the QP takes at most max_inline_data = {}",
                    data.len, cap.max_inline_data
                )));
            }
        }
        if wr.opcode.needs_remote() && wr.remote.is_none() {
            return Err(Error::inval(format!("WR {i}: {:?} needs a remote address and rkey", wr.opcode)));
        }
        if !wr.flags.contains(SendFlags::INLINE) {
            if wr.num_sge > cap.max_send_sge as usize {
                return Err(Error::inval(format!(
                    "WR {i}: {} SGEs, the QP takes at most max_send_sge = {}",
                    wr.num_sge, cap.max_send_sge
                )));
            }
            if wr.num_sge > 1 && wr.opcode.is_atomic() {
                return Err(Error::inval(format!(
                    "WR {i}: {:?} with {} SGEs: the NIC writes an atomic's result into one SGE",
                    wr.opcode, wr.num_sge
                )));
            }
            let sges = &wr.sg_list[..wr.num_sge];
            if let Some(s) = sges.iter().find(|s| s.length > 1 << 31) {
                return Err(Error::inval(format!("WR {i}: SGE length {} exceeds 2^31", s.length)));
            }
            let total: u64 = sges.iter().map(|s| u64::from(s.length)).sum();
            if total > 1 << 31 {
                return Err(Error::inval(format!("WR {i}: the SGEs add up to {total} bytes, over 2^31")));
            }
        }
        Ok(())
    }

    /// Posts send work requests (`ibv_post_send(3)`): writes one WQE per request into the SQ
    /// ring in host memory, then rings the doorbell once (`SQ_DOORBELL = qpn << 16 | pi`).
    /// A request is signaled if it has [`SendFlags::SIGNALED`] or the QP was built with
    /// `sq_sig_all`. The SGEs borrow their MRs for the QP's lifetime `'mr`.
    ///
    /// As in ibverbs, the list is posted up to the first request that cannot be: the requests
    /// before it are posted (one doorbell for them), it and the rest are not, and
    /// [`PostError::bad_wr`] is its index.
    ///
    /// # Errors
    /// [`PostError`] carrying [`Error::InvalidArgument`] if the QP is not in RTS or ERR (in ERR
    /// the NIC completes the requests with `IBV_WC_WR_FLUSH_ERR`, as ibv_post_send(3) allows;
    /// `bad_wr` 0) or a request is malformed (no remote address for an RDMA opcode; INLINE
    /// without data, over `max_inline_data` or on a READ or atomic; more SGEs than
    /// `max_send_sge`, or more than one on an atomic; an SGE or their sum over 2^31 bytes);
    /// [`Error::NoMemory`] at the first request the SQ has no free entry for (poll the CQ to
    /// retire some); backend errors at the request whose WQE could not be written (or 0 if
    /// the doorbell failed: then nothing was posted).
    pub fn post_send(&mut self, wrs: &[SendWr<'mr>]) -> std::result::Result<(), PostError> {
        let state = self.state();
        if !matches!(state, QpState::Rts | QpState::Err) {
            return Err(PostError {
                bad_wr: 0,
                error: Error::inval(format!("post_send needs RTS (or ERR), QP {} is in {state:?}", self.qpn)),
            });
        }
        let free = self.sq_size as usize - self.outstanding();
        let mut stop = None;
        for (i, wr) in wrs.iter().enumerate() {
            if i == free {
                stop = Some(PostError {
                    bad_wr: i,
                    error: Error::NoMemory(format!(
                        "SQ of QP {} is full: WR {i} finds none of its {} entries free",
                        self.qpn, self.sq_size
                    )),
                });
                break;
            }
            if let Err(error) = self.check_wr(i, wr) {
                stop = Some(PostError { bad_wr: i, error });
                break;
            }
        }
        let n = stop.as_ref().map_or(wrs.len(), |e| e.bad_wr);
        let start = self.pi.get();
        let mask = u64::from(self.sq_size) - 1;
        let mut written = 0;
        for (k, wr) in wrs[..n].iter().enumerate() {
            let signaled = self.sq_sig_all || wr.flags.contains(SendFlags::SIGNALED);
            let mut flags = wr.flags;
            flags.set(SendFlags::SIGNALED, signaled);
            let remote = wr.remote.unwrap_or(RemoteAddr { addr: 0, rkey: 0 });
            let inline = wr.inline.filter(|_| wr.flags.contains(SendFlags::INLINE));
            let sges = if inline.is_some() { &[][..] } else { &wr.sg_list[..wr.num_sge] };
            let sge = sges.first().copied().unwrap_or(Sge::from_parts(0, 0, 0));
            let w = Wqe {
                wr_id: wr.wr_id,
                opcode: wr.opcode as u8,
                send_flags: flags.bits(),
                num_sge: sges.len() as u8,
                imm_data: wr.imm_data,
                remote_addr: remote.addr,
                rkey: remote.rkey,
                sge_addr: sge.addr,
                // With IBV_SEND_INLINE this is the inline length (wqe::INLINE_LENGTH).
                sge_length: inline.map_or(sge.length, |d| d.len as u32),
                sge_lkey: sge.lkey,
                compare_add: wr.compare_add,
                swap: wr.swap,
            };
            // The whole WQE, so no stale SGE or inline byte of an earlier lap survives.
            let mut buf = vec![0u8; self.sq_stride];
            buf[..wqe::BYTES].copy_from_slice(&w.pack());
            for (j, g) in sges.iter().enumerate().skip(1) {
                put_sge(&mut buf, wqe::sge_offset(j), g.addr, g.length, g.lkey);
            }
            if let Some(d) = inline {
                buf[wqe::INLINE_DATA..wqe::INLINE_DATA + d.len].copy_from_slice(d.as_slice());
            }
            let slot = ((start + k as u64) & mask) as usize;
            if let Err(error) = self.ring.write(slot * self.sq_stride, &buf) {
                stop = Some(PostError { bad_wr: k, error });
                break;
            }
            written = k + 1;
        }
        if written == 0 {
            return stop.map_or(Ok(()), Err);
        }
        let pi = start + written as u64;
        // The WQEs must be in memory before the NIC hears of them.
        fence(Ordering::SeqCst);
        let doorbell = self.qpn << 16 | (pi & 0xFFFF) as u32;
        if let Err(error) = self.pd.inner.ctx.dev.mmio_write32(regs::SQ_DOORBELL, doorbell) {
            return Err(PostError { bad_wr: 0, error });
        }
        self.pi.set(pi);
        let mut sq = self.sq.borrow_mut();
        for wr in &wrs[..written] {
            let signaled = self.sq_sig_all || wr.flags.contains(SendFlags::SIGNALED);
            sq.outstanding.push_back(Outstanding { wr_id: wr.wr_id, signaled });
        }
        stop.map_or(Ok(()), Err)
    }

    /// Posts one work request; see [`post_send`](Self::post_send).
    ///
    /// # Errors
    /// As [`post_send`](Self::post_send), as a plain [`Error`].
    pub fn post_send_one(&mut self, wr: SendWr<'mr>) -> Result<()> {
        self.post_send(std::slice::from_ref(&wr)).map_err(Error::from)
    }

    /// Posts receive work requests (`ibv_post_recv(3)`): writes one receive WQE per request
    /// into the RQ ring in host memory (WR_ID, NUM_SGE, its scatter entries), then rings the RQ
    /// doorbell once (`RQ_DOORBELL = qpn << 16 | rq_pi mod 2^16`, `rq_pi` = receive WRs
    /// posted since RESET). The NIC consumes them in order, one per incoming SEND message,
    /// scatters the message over the request's entries in order (a zero-length entry is
    /// skipped; a message longer than the entries together completes with
    /// [`WcStatus::LocLenErr`]), and writes a receive completion (opcode [`crate::WcOpcode::Recv`], `byte_len` = message
    /// length) to the QP's receive CQ; a slot is reused only after that completion was polled.
    /// Receives may be posted from INIT on, before the QP is connected. The SGEs borrow their
    /// MRs for the QP's lifetime `'mr`; the region needs [`AccessFlags::LOCAL_WRITE`] (the NIC
    /// checks it, and the key, PD and bounds of every entry of nonzero length, when a message
    /// arrives: a failing entry completes the receive with [`WcStatus::LocProtErr`] and nothing
    /// is written).
    ///
    /// As in ibverbs, the list is posted up to the first request that cannot be (see
    /// [`post_send`](Self::post_send)); [`PostError::bad_wr`] is its index.
    ///
    /// # Errors
    /// [`PostError`] carrying [`Error::InvalidArgument`] if the QP is in RESET (in ERR the NIC
    /// completes the requests with `IBV_WC_WR_FLUSH_ERR`) or has no receive queue (`bad_wr` 0),
    /// or a request has more than `max_recv_sge` ([`MAX_RECV_SGE`]) scatter entries or an entry
    /// over 2^31 bytes; [`Error::NoMemory`] at the first request the RQ has no free entry for
    /// (poll the receive CQ to retire some); backend errors (see
    /// [`post_send`](Self::post_send)).
    pub fn post_recv(&mut self, wrs: &[RecvWr<'mr>]) -> std::result::Result<(), PostError> {
        let state = self.state();
        if state == QpState::Reset {
            return Err(PostError {
                bad_wr: 0,
                error: Error::inval(format!("post_recv needs INIT, RTR, RTS or ERR, QP {} is in RESET", self.qpn)),
            });
        }
        let Some(ring) = &self.rq_ring else {
            return Err(PostError {
                bad_wr: 0,
                error: Error::inval(format!("QP {} has no receive queue (built with max_recv_wr 0)", self.qpn)),
            });
        };
        let free = self.rq_size as usize - self.recv_outstanding();
        let what = format!("RQ of QP {}", self.qpn);
        let (n, stop) = recv_prefix(wrs, self.attr.cap.max_recv_sge, free, self.rq_size, &what);
        let start = self.rq_pi.get();
        let (written, stop) =
            match write_recv_wqes(ring, self.rq_stride, self.rq_size, self.attr.cap.max_recv_sge, start, &wrs[..n]) {
                Ok(()) => (n, stop),
                Err(e) => (e.bad_wr, Some(e)),
            };
        if written == 0 {
            return stop.map_or(Ok(()), Err);
        }
        let pi = start + written as u64;
        // The receive WQEs must be in memory before the NIC hears of them.
        fence(Ordering::SeqCst);
        let doorbell = self.qpn << 16 | (pi & 0xFFFF) as u32;
        if let Err(error) = self.pd.inner.ctx.dev.mmio_write32(regs::RQ_DOORBELL, doorbell) {
            return Err(PostError { bad_wr: 0, error });
        }
        self.rq_pi.set(pi);
        self.sq.borrow_mut().recv.extend(wrs[..written].iter().map(|w| w.wr_id));
        stop.map_or(Ok(()), Err)
    }

    /// Posts one receive work request; see [`post_recv`](Self::post_recv).
    ///
    /// # Errors
    /// As [`post_recv`](Self::post_recv), as a plain [`Error`].
    pub fn post_recv_one(&mut self, wr: RecvWr<'mr>) -> Result<()> {
        self.post_recv(std::slice::from_ref(&wr)).map_err(Error::from)
    }

    /// Completions of this QP that matched no outstanding work request (should stay 0).
    pub fn stray_completions(&self) -> u64 {
        self.sq.borrow().stray
    }
}

impl QueuePair<'_> {
    /// Destroys the QP (`ibv_destroy_qp(3)`) and reports what dropping it cannot: the context
    /// write with state RESET that stops the NIC using its rings and MRs. Its CQ reservations
    /// and number are freed either way.
    ///
    /// # Errors
    /// Backend errors of the context write.
    pub fn destroy(mut self) -> Result<()> {
        self.release()
    }

    fn release(&mut self) -> Result<()> {
        if self.released {
            return Ok(());
        }
        self.released = true;
        let ctx = &self.pd.inner.ctx;
        let reset = QpContext { state: QpState::Reset as u8, init_sq_psn: false, init_rq_psn: false, ..self.hw };
        let r = write_context(&*ctx.dev, regs::cmd_op::WRITE_QP, self.qpn as u8, &reset.pack());
        self.cq.detach(self.qpn);
        self.recv_cq.detach(self.qpn);
        ctx.tables.borrow_mut().free_qpn(self.qpn);
        crate::pd::count(&self.pd.inner.qps, false);
        r
    }
}

impl Drop for QueuePair<'_> {
    fn drop(&mut self) {
        // RESET stops the NIC using the rings and the MRs; errors cannot be reported here.
        let _ = self.release();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mtu_codes_match_ibverbs() {
        assert_eq!(Mtu::Mtu256 as u8, verbs::mtu::MTU_256);
        assert_eq!(Mtu::Mtu4096 as u8, verbs::mtu::MTU_4096);
        for m in [Mtu::Mtu256, Mtu::Mtu512, Mtu::Mtu1024, Mtu::Mtu2048, Mtu::Mtu4096] {
            assert_eq!(Some(m.bytes()), verbs::mtu::bytes(m as u8));
            assert_eq!(Mtu::from_bytes(m.bytes()), Some(m));
        }
        assert_eq!(Mtu::from_bytes(1500), None);
    }

    #[test]
    fn qp_states_match_ibverbs() {
        assert_eq!(QpState::Reset as u8, verbs::qp_state::RESET);
        assert_eq!(QpState::Init as u8, verbs::qp_state::INIT);
        assert_eq!(QpState::Rtr as u8, verbs::qp_state::RTR);
        assert_eq!(QpState::Rts as u8, verbs::qp_state::RTS);
        assert_eq!(QpState::Err as u8, verbs::qp_state::ERR);
    }

    #[test]
    fn udp_sport_is_in_the_rocev2_range() {
        for q in 0..64 {
            assert_eq!(udp_sport(q) & 0xC000, 0xC000);
        }
        assert_ne!(udp_sport(2), udp_sport(3));
    }

    #[test]
    fn completion_retires_up_to_the_signaled_wr() {
        let mut sq = QpShared { state: QpState::Rts, ..QpShared::default() };
        for (id, s) in [(1, false), (2, false), (3, true), (4, false), (5, true)] {
            sq.outstanding.push_back(Outstanding { wr_id: id, signaled: s });
        }
        sq.complete(3, WcStatus::Success);
        assert_eq!(sq.outstanding.len(), 2);
        // An unsignaled WR's id on success matches nothing: stray, nothing retired.
        sq.complete(4, WcStatus::Success);
        assert_eq!(sq.stray, 1);
        assert_eq!(sq.outstanding.len(), 2);
        // An error completes even an unsignaled WR and moves the QP to ERR.
        sq.complete(4, WcStatus::LocProtErr);
        assert_eq!(sq.outstanding.len(), 1);
        assert_eq!(sq.state, QpState::Err);
        sq.complete(5, WcStatus::WrFlushErr);
        assert!(sq.outstanding.is_empty());
    }

    #[test]
    fn receive_completions_retire_in_order() {
        let mut q = QpShared { state: QpState::Rts, ..QpShared::default() };
        q.recv.extend([10, 11, 10, 12]);
        q.complete_recv(10, WcStatus::Success);
        assert_eq!(q.recv, [11, 10, 12], "the oldest receive with that id");
        q.complete_recv(11, WcStatus::Success);
        q.complete_recv(99, WcStatus::Success);
        assert_eq!((q.stray, q.recv.len()), (1, 2));
        assert_eq!(q.state, QpState::Rts);
        q.complete_recv(10, WcStatus::LocLenErr);
        assert_eq!(q.recv, [12]);
        assert_eq!(q.state, QpState::Err, "a receive error moves the QP to ERR");
    }
}
