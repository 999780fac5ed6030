//! Work requests: `struct ibv_send_wr` ([`SendWr`]), `struct ibv_recv_wr` ([`RecvWr`]),
//! `struct ibv_sge` ([`Sge`]), `enum ibv_wr_opcode`, `enum ibv_send_flags`, and the receive-WQE
//! writer shared by QPs and SRQs. Re-exported by [`crate::qp`].
#[cfg(doc)]
use crate::qp::QueuePair;
use std::marker::PhantomData;

use rnic_contract::{recv_wqe, verbs};

#[cfg(doc)]
use crate::cq::WcStatus;
use crate::device::DmaBuffer;
use crate::error::{Error, PostError, Result};
#[cfg(doc)]
use crate::mr::MemoryRegion;
#[cfg(doc)]
use crate::qp::MAX_RECV_SGE;
use crate::qp::{MAX_INLINE_DATA, MAX_SEND_SGE};
use crate::records::{put_sge, RecvWqe};

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

    pub(crate) fn needs_remote(self) -> bool {
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
    pub(crate) len: usize,
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

/// An address handle (`struct ibv_ah`, `ibv_create_ah(3)` from
/// [`crate::ProtectionDomain::create_ah`]): where a UD SEND goes, on a RoCEv2 port the peer's
/// IPv4 address (its GID is the IPv4-mapped IPv6 address) and its MAC (or the next hop's).
/// Used only with QPs of the same protection domain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AddressHandle {
    pub(crate) av: crate::qp_attr::AddressVector,
    pub(crate) pdn: u32,
}

impl AddressHandle {
    /// The address vector it was created from.
    pub fn attr(&self) -> crate::qp_attr::AddressVector {
        self.av
    }
}

/// The UD part of a send work request (`ibv_send_wr.wr.ud`): the address handle, the remote
/// QPN (24 bits) and the remote Q_Key (with bit 31 set, the QP's own Q_Key is sent instead,
/// IBTA Vol 1 10.2.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UdDest {
    /// Where the datagram goes (`wr.ud.ah`).
    pub ah: AddressHandle,
    /// The destination QPN, 24 bits (`wr.ud.remote_qpn`; BTH.DestQP).
    pub remote_qpn: u32,
    /// The Q_Key sent in the DETH (`wr.ud.remote_qkey`); bit 31 set: the QP's own.
    pub remote_qkey: u32,
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
    /// UD QPs: where the SEND goes ([`SendWr::with_ud`]); ignored on an RC QP.
    pub ud: Option<UdDest>,
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
            ud: None,
        }
    }

    /// Addresses a SEND on a UD QP (`ibv_send_wr.wr.ud`): to QP `remote_qpn` behind `ah`,
    /// with Q_Key `remote_qkey` (bit 31 set: the QP's own Q_Key).
    pub fn with_ud(mut self, ah: &AddressHandle, remote_qpn: u32, remote_qkey: u32) -> Self {
        self.ud = Some(UdDest { ah: *ah, remote_qpn, remote_qkey });
        self
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
