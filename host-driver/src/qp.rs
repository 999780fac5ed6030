//! [`QueuePair`] (RC): creation (`ibv_create_qp(3)`), state transitions (`ibv_modify_qp(3)`,
//! IBTA Vol 1 11.2.4.2 / 10.3.1), `ibv_post_send(3)`, `ibv_post_recv(3)` and connection setup
//! by [`Endpoint`]s.
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::marker::PhantomData;
use std::net::Ipv4Addr;
use std::rc::Rc;
use std::sync::atomic::{fence, Ordering};

use rnic_contract::{recv_wqe, regs, wqe};

use crate::context::MacAddr;
use crate::cq::{CompletionQueue, CqInner, Roles, WcStatus};
use crate::device::DmaBuffer;
use crate::error::{Error, PostError, Result};
use crate::mr::{AccessFlags, MemoryRegion};
use crate::pd::ProtectionDomain;
use crate::records::{put_sge, write_context, QpContext, Wqe};
use crate::srq::{SharedReceiveQueue, SrqInner, SrqShared};

pub(crate) use crate::qp_attr::apply;
pub use crate::qp_attr::{
    transition_masks, ud_transition_masks, validate_modify, validate_modify_for, AddressVector, Mtu, QpAttr,
    QpAttrMask, QpCap, QpState, QpType,
};
pub(crate) use crate::wr::{recv_prefix, write_recv_wqes};
pub use crate::wr::{AddressHandle, InlineData, RecvWr, RemoteAddr, SendFlags, SendWr, Sge, UdDest, WrOpcode};

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
    qp_type: QpType,
    /// Take QP number 1 (the GSI QP, for the CM layer) instead of a free one.
    gsi: bool,
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
            qp_type: QpType::Rc,
            gsi: false,
        }
    }

    /// Makes the QP the port's GSI QP (IBTA Vol 1 13.5, Annex A17): a UD QP with QP number 1,
    /// which the driver keeps out of [`Self::build`]'s allocation. Only the CM layer
    /// ([`crate::cm::EventChannel`]) creates it; a second one fails with `NoMemory`.
    pub(crate) fn gsi(mut self) -> Self {
        self.qp_type = QpType::Ud;
        self.gsi = true;
        self
    }

    /// The transport service (`ibv_qp_init_attr.qp_type`; default [`QpType::Rc`]). A UD QP
    /// sends SENDs of up to one packet of the port's MTU (4096 bytes) to the address each
    /// work request carries ([`SendWr::with_ud`]); its modifies follow
    /// [`ud_transition_masks`].
    pub fn set_qp_type(mut self, qp_type: QpType) -> Self {
        self.qp_type = qp_type;
        self
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
    /// scatter entries), attaches it to its CQs, writes its context (state RESET,
    /// SEND_CQ / SQ ring, RECV_CQ / RQ ring). No doorbell is rung: writing state RESET clears
    /// every per-QP index and state the NIC keeps, the RQ producer index included.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for sizes out of range or a CQ of another context;
    /// [`Error::NotSupported`] for more SGEs or inline bytes than the NIC
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
        let qpn =
            if self.gsi { ctx.tables.borrow_mut().alloc_gsi_qpn()? } else { ctx.tables.borrow_mut().alloc_qpn()? };
        let shared = Rc::new(RefCell::new(QpShared {
            srq: self.srq.as_ref().map(|s| Rc::clone(&s.shared)),
            ..QpShared::default()
        }));
        let undo = |qpn: u32| {
            self.cq.detach(qpn);
            self.recv_cq.detach(qpn);
            ctx.tables.borrow_mut().free_qpn(qpn);
        };
        // Nothing is reserved on the CQs: keeping within a CQ is the program's job, and the NIC
        // reports an overrun (IBV_EVENT_CQ_ERR).
        if Rc::ptr_eq(&self.cq, &self.recv_cq) {
            self.cq.attach(qpn, &shared, Roles { send: true, recv: true });
        } else {
            self.cq.attach(qpn, &shared, Roles { send: true, recv: false });
            self.recv_cq.attach(qpn, &shared, Roles { send: false, recv: true });
        }
        let base = QpContext {
            state: QpState::Reset as u8,
            qp_type: self.qp_type.code(),
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
            qp_type: self.qp_type,
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
    qp_type: QpType,
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

    /// The IOVA of the QP's SQ ring in host memory (the QP context's SQ_BASE), where the NIC
    /// reads the send WQEs; for tools and tests that look at the NIC's DMA.
    pub fn sq_ring_iova(&self) -> crate::device::Iova {
        self.ring.iova()
    }

    /// The transport service it was created with (`ibv_qp.qp_type`).
    pub fn qp_type(&self) -> QpType {
        self.qp_type
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
    /// happened; backend errors of the context write (the QP keeps its old state) or of the
    /// SQ doorbell rung after SQD → RTS (the QP is in RTS).
    pub fn modify(&mut self, attr: &QpAttr, mask: QpAttrMask) -> Result<()> {
        let cur = self.state();
        let next = validate_modify_for(self.qp_type, cur, attr, mask)?;
        let mut a = self.attr;
        if next == QpState::Reset {
            a = QpAttr { cap: self.attr.cap, ..QpAttr::default() };
        } else {
            apply(&mut a, attr, mask);
        }
        a.qp_state = next;
        a.cur_qp_state = next;
        // SQD: the NIC holds it as RTS with SQ_DRAIN (qp_context::STATE); the notify flag is
        // the RTS → SQD modify's, kept through SQD → SQD.
        let draining = next == QpState::Sqd;
        if !draining || (cur != QpState::Sqd && !mask.contains(QpAttrMask::EN_SQD_ASYNC_NOTIFY)) {
            a.en_sqd_async_notify = false;
        }
        let hw = QpContext {
            state: if draining { QpState::Rts as u8 } else { next as u8 },
            sq_drain: draining,
            sqd_notify: draining && a.en_sqd_async_notify,
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
        let hw = match self.qp_type {
            QpType::Rc => hw,
            // UD: no peer, no ACK timeout; the Q_Key where an RC QP keeps its peer's IP
            // (qp_context::QKEY); packets of up to the port's MTU (4096 bytes).
            QpType::Ud => QpContext {
                dest_ip: Ipv4Addr::from(a.qkey),
                path_mtu: if next == QpState::Reset { 0 } else { Mtu::Mtu4096 as u8 },
                timeout: 0,
                ..hw
            },
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
        if cur == QpState::Sqd && next == QpState::Rts {
            // The NIC held the WQEs rung in SQD: ring again so it serves them (its doorbell
            // table kept the index; this offers the QP to the requester once more). The QP is
            // in RTS even if this write fails.
            self.ring_sq_doorbell(self.pi.get())?;
        }
        Ok(())
    }

    /// Rings the SQ doorbell (`SQ_DOORBELL = qpn << 16 | pi mod 2^16`): the NIC serves the
    /// WQEs posted up to producer index `pi`.
    ///
    /// # Errors
    /// Backend errors of the MMIO write.
    fn ring_sq_doorbell(&self, pi: u64) -> Result<()> {
        let doorbell = regs::doorbell::word(self.qpn, pi as u32);
        self.pd.inner.ctx.dev.mmio_write32(regs::SQ_DOORBELL, doorbell)
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
        if self.qp_type == QpType::Ud {
            let Some(ud) = &wr.ud else {
                return Err(Error::inval(format!("WR {i}: a UD QP needs an address (SendWr::with_ud)")));
            };
            if ud.ah.pdn != self.pd.pdn() {
                return Err(Error::inval(format!(
                    "WR {i}: the address handle is of PD {}, the QP of PD {}",
                    ud.ah.pdn,
                    self.pd.pdn()
                )));
            }
            if ud.remote_qpn > PSN_MASK {
                return Err(Error::inval(format!("WR {i}: remote QPN {:#x} is over 24 bits", ud.remote_qpn)));
            }
        } else if wr.opcode.needs_remote() && wr.remote.is_none() {
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
            if let Some(s) = sges.iter().find(|s| s.length > rnic_contract::MAX_MSG_SZ) {
                return Err(Error::inval(format!("WR {i}: SGE length {} exceeds 2^31", s.length)));
            }
            let total: u64 = sges.iter().map(|s| u64::from(s.length)).sum();
            if total > u64::from(rnic_contract::MAX_MSG_SZ) {
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
    /// [`PostError`] carrying [`Error::InvalidArgument`] if the QP is not in RTS, SQD or ERR (in SQD
    /// the WQEs wait for the move back to RTS; in ERR
    /// the NIC completes the requests with `IBV_WC_WR_FLUSH_ERR`, as ibv_post_send(3) allows;
    /// `bad_wr` 0) or a request is malformed (no remote address for an RDMA opcode; INLINE
    /// without data, over `max_inline_data` or on a READ or atomic; more SGEs than
    /// `max_send_sge`, or more than one on an atomic; an SGE or their sum over 2^31 bytes);
    /// [`Error::NoMemory`] at the first request the SQ has no free entry for (poll the send CQ
    /// to retire some; the CQ's room is not checked: see [`CompletionQueue`] on overruns);
    /// backend errors at the request whose WQE could not be written (or 0 if
    /// the doorbell failed: then nothing was posted).
    pub fn post_send(&mut self, wrs: &[SendWr<'mr>]) -> std::result::Result<(), PostError> {
        let state = self.state();
        if !matches!(state, QpState::Rts | QpState::Sqd | QpState::Err) {
            return Err(PostError {
                bad_wr: 0,
                error: Error::inval(format!("post_send needs RTS (or SQD, ERR), QP {} is in {state:?}", self.qpn)),
            });
        }
        let sq_free = self.sq_size as usize - self.outstanding();
        let mut stop = None;
        for (i, wr) in wrs.iter().enumerate() {
            if i == sq_free {
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
            if let (QpType::Ud, Some(ud)) = (self.qp_type, &wr.ud) {
                wqe::UD_REMOTE_QPN.put(&mut buf, ud.remote_qpn.into());
                wqe::UD_REMOTE_QKEY.put(&mut buf, ud.remote_qkey.into());
                wqe::UD_DEST_IP.put(&mut buf, u32::from(ud.ah.av.dest_ip).into());
                wqe::UD_DEST_MAC.put(&mut buf, crate::records::mac_to_u64(ud.ah.av.dest_mac.0));
            }
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
        if let Err(error) = self.ring_sq_doorbell(pi) {
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
    /// (poll the receive CQ to retire some; its room is not checked); backend errors (see
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
        let rq_free = self.rq_size as usize - self.recv_outstanding();
        let what = format!("RQ of QP {}", self.qpn);
        let (n, stop) = recv_prefix(wrs, self.attr.cap.max_recv_sge, rq_free, self.rq_size, &what);
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
        let doorbell = regs::doorbell::word(self.qpn, pi as u32);
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
    use rnic_contract::verbs;

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
