//! RC queue-pair attributes (`struct ibv_qp_attr`, `enum ibv_qp_state`, `enum ibv_mtu`,
//! `enum ibv_qp_attr_mask`) and the `ibv_modify_qp(3)` transition rules (IBTA Vol 1 Table 91),
//! checked without touching a device. Re-exported by [`crate::qp`].
#[cfg(doc)]
use crate::qp::QueuePair;
use std::net::Ipv4Addr;

use crate::context::MacAddr;
use crate::error::{Error, Result};
use crate::mr::AccessFlags;
use crate::qp::{MAX_RD_ATOMIC, PSN_MASK};

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
    /// 4: send queue drain (IBTA Vol 1 10.3.1): the requester finishes the work requests it
    /// had started and starts no new one (requests posted meanwhile wait for RTS); the
    /// responder works as in RTS. With `en_sqd_async_notify` the NIC raises
    /// `IBV_EVENT_SQ_DRAINED` once the started ones have all completed.
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
        /// `en_sqd_async_notify` (RTS → SQD).
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

impl AddressVector {
    /// Whether it names one peer: a unicast MAC and an IPv4 address that is neither
    /// unspecified, broadcast nor multicast (RC paths and UD address handles both need one).
    pub fn is_unicast(&self) -> bool {
        self.dest_mac.0[0] & 1 == 0
            && !self.dest_ip.is_unspecified()
            && !self.dest_ip.is_broadcast()
            && !self.dest_ip.is_multicast()
    }
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
    /// Gather entries per send WR: what the QP's send WQE holds (at least the `max_send_sge`
    /// asked for, at most [`crate::qp::MAX_SEND_SGE`]).
    pub max_send_sge: u32,
    /// Scatter entries per receive WR: what the QP's receive WQE holds (3, 7 or 15, at least
    /// the `max_recv_sge` asked for) with a receive queue, else 0.
    pub max_recv_sge: u32,
    /// Inline data bytes per send WR (`IBV_SEND_INLINE`): what the QP's send WQE holds after
    /// its header (at least the `max_inline_data` asked for, at most
    /// [`crate::qp::MAX_INLINE_DATA`]).
    pub max_inline_data: u32,
}

/// The transport service of a QP (`enum ibv_qp_type`, `ibv_qp_init_attr.qp_type`), chosen
/// when it is created ([`crate::qp::QpBuilder::set_qp_type`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum QpType {
    /// Reliable connection, `IBV_QPT_RC` (IBTA Vol 1 9.7).
    #[default]
    Rc,
    /// Unreliable datagram, `IBV_QPT_UD` (IBTA Vol 1 9.8): SENDs of up to one path-MTU
    /// packet to the address handle and QP each work request names, with a Q_Key. The NIC
    /// sends them and completes them once sent; it does not yet receive them.
    Ud,
}

impl QpType {
    /// The `enum ibv_qp_type` value (IBV_QPT_RC = 2, IBV_QPT_UD = 4).
    pub fn ibv(self) -> u32 {
        match self {
            QpType::Rc => 2,
            QpType::Ud => 4,
        }
    }

    /// The QP context's [`rnic_contract::qp_context::QP_TYPE`] code.
    pub fn code(self) -> u8 {
        match self {
            QpType::Rc => rnic_contract::verbs::qp_type::RC,
            QpType::Ud => rnic_contract::verbs::qp_type::UD,
        }
    }
}

/// `struct ibv_qp_attr` (RC fields, and UD's `qkey`): the attributes [`QueuePair::modify`] sets, selected by a
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
    /// UD: the QP's Q_Key (with [`QpAttrMask::QKEY`]), sent by a work request whose own
    /// Q_Key has bit 31 set (IBTA Vol 1 10.2.5).
    pub qkey: u32,
    /// RTS → SQD (with [`QpAttrMask::EN_SQD_ASYNC_NOTIFY`]): raise `IBV_EVENT_SQ_DRAINED`
    /// when the send queue has drained.
    pub en_sqd_async_notify: bool,
    /// Sizes (reported by [`QueuePair::query_qp`]; not modifiable).
    pub cap: QpCap,
}

/// The attributes a modify must carry and may carry for an RC QP going from `cur` to `next`
/// (IBTA Vol 1 Table 91 as in Linux `ib_modify_qp_is_ok`), `None` if the transition is not
/// allowed. [`QpAttrMask::STATE`] is not part of either set. SQE and the alternate-path
/// attributes are not supported by this NIC, so they are absent.
/// SQD → SQD may change attributes before the drain has finished; IBTA Vol 1 10.3.1 leaves
/// what then happens to the requests in flight to the implementation: here the requester
/// resends them with the new attributes.
///
/// | from → to | required | optional |
/// |---|---|---|
/// | RESET → INIT | PKEY_INDEX, PORT, ACCESS_FLAGS | – |
/// | INIT → INIT | – | PKEY_INDEX, PORT, ACCESS_FLAGS |
/// | INIT → RTR | AV, PATH_MTU, DEST_QPN, RQ_PSN, MAX_DEST_RD_ATOMIC, MIN_RNR_TIMER | ACCESS_FLAGS, PKEY_INDEX |
/// | RTR → RTS | SQ_PSN, TIMEOUT, RETRY_CNT, RNR_RETRY, MAX_QP_RD_ATOMIC | CUR_STATE, ACCESS_FLAGS, MIN_RNR_TIMER |
/// | RTS → RTS | – | CUR_STATE, ACCESS_FLAGS, MIN_RNR_TIMER |
/// | RTS → SQD | – | EN_SQD_ASYNC_NOTIFY |
/// | SQD → RTS | – | CUR_STATE, ACCESS_FLAGS, MIN_RNR_TIMER |
/// | SQD → SQD | – | AV, TIMEOUT, RETRY_CNT, RNR_RETRY, MAX_QP_RD_ATOMIC, MAX_DEST_RD_ATOMIC, ACCESS_FLAGS, PKEY_INDEX, MIN_RNR_TIMER |
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
        (Rts, Sqd) => (none, M::EN_SQD_ASYNC_NOTIFY),
        (Sqd, Rts) => (none, M::CUR_STATE | M::ACCESS_FLAGS | M::MIN_RNR_TIMER),
        (Sqd, Sqd) => (
            none,
            M::AV
                | M::TIMEOUT
                | M::RETRY_CNT
                | M::RNR_RETRY
                | M::MAX_QP_RD_ATOMIC
                | M::MAX_DEST_RD_ATOMIC
                | M::ACCESS_FLAGS
                | M::PKEY_INDEX
                | M::MIN_RNR_TIMER,
        ),
        _ => return None,
    })
}

/// The attributes a modify must carry and may carry for a UD QP going from `cur` to `next`
/// (IBTA Vol 1 Table 91's UD column, as in Linux `ib_modify_qp_is_ok`), `None` if the
/// transition is not allowed:
///
/// | from → to | required | optional |
/// |---|---|---|
/// | RESET → INIT | PKEY_INDEX, PORT, QKEY | – |
/// | INIT → INIT | – | PKEY_INDEX, PORT, QKEY |
/// | INIT → RTR | – | PKEY_INDEX, QKEY |
/// | RTR → RTS | SQ_PSN | CUR_STATE, QKEY |
/// | RTS → RTS | – | CUR_STATE, QKEY |
/// | RTS → SQD | – | EN_SQD_ASYNC_NOTIFY |
/// | SQD → RTS | – | CUR_STATE, QKEY |
/// | SQD → SQD | – | PKEY_INDEX, QKEY |
/// | any → RESET, any → ERR | – | – |
pub fn ud_transition_masks(cur: QpState, next: QpState) -> Option<(QpAttrMask, QpAttrMask)> {
    use QpAttrMask as M;
    use QpState::*;
    let none = M::empty();
    Some(match (cur, next) {
        (_, Reset) | (_, Err) => (none, none),
        (Reset, Init) => (M::PKEY_INDEX | M::PORT | M::QKEY, none),
        (Init, Init) => (none, M::PKEY_INDEX | M::PORT | M::QKEY),
        (Init, Rtr) => (none, M::PKEY_INDEX | M::QKEY),
        (Rtr, Rts) => (M::SQ_PSN, M::CUR_STATE | M::QKEY),
        (Rts, Rts) => (none, M::CUR_STATE | M::QKEY),
        (Rts, Sqd) => (none, M::EN_SQD_ASYNC_NOTIFY),
        (Sqd, Rts) => (none, M::CUR_STATE | M::QKEY),
        (Sqd, Sqd) => (none, M::PKEY_INDEX | M::QKEY),
        _ => return None,
    })
}

/// Checks a modify of an RC QP in state `cur` (`ibv_modify_qp(3)` rules) and returns the next
/// state: [`validate_modify_for`] with [`QpType::Rc`].
///
/// # Errors
/// As [`validate_modify_for`].
pub fn validate_modify(cur: QpState, attr: &QpAttr, mask: QpAttrMask) -> Result<QpState> {
    validate_modify_for(QpType::Rc, cur, attr, mask)
}

/// Checks a modify of a QP of type `qp_type` in state `cur` (`ibv_modify_qp(3)` rules,
/// [`transition_masks`] or [`ud_transition_masks`]) and returns the next
/// state. Pure: touches no device, so a refused modify changes nothing.
///
/// # Errors
/// [`Error::InvalidArgument`] for a transition that is not allowed, a required attribute that
/// is missing, an attribute the transition does not allow, a `cur_qp_state` that is not the
/// current state, or an attribute value out of range.
pub fn validate_modify_for(qp_type: QpType, cur: QpState, attr: &QpAttr, mask: QpAttrMask) -> Result<QpState> {
    use QpAttrMask as M;
    let next = if mask.contains(M::STATE) { attr.qp_state } else { cur };
    let masks = match qp_type {
        QpType::Rc => transition_masks(cur, next),
        QpType::Ud => ud_transition_masks(cur, next),
    };
    let (required, optional) = masks.ok_or_else(|| {
        Error::inval(format!("{qp_type:?} QP transition {cur:?} -> {next:?} is not allowed (or not supported)"))
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
        if !av.is_unicast() {
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
pub(crate) fn apply(to: &mut QpAttr, from: &QpAttr, mask: QpAttrMask) {
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
    if mask.contains(M::QKEY) {
        to.qkey = from.qkey;
    }
    if mask.contains(M::EN_SQD_ASYNC_NOTIFY) {
        to.en_sqd_async_notify = from.en_sqd_async_notify;
    }
}
