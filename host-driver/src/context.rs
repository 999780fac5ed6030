//! [`Context`]: an opened device (`ibv_open_device(3)`), its port address and its resource
//! tables.
use std::cell::{Cell, RefCell};
use std::fmt;
use std::net::Ipv4Addr;
use std::rc::{Rc, Weak};
use std::time::{Duration, Instant};

use rnic_contract::regs::{self, caps, counter, features, qp_caps, send_caps, srq_caps};

use crate::channel::CompletionChannel;
use crate::cq::CompletionQueue;
use crate::device::Device;
use crate::error::{Error, Result};
use crate::event::EventQueue;
use crate::pd::ProtectionDomain;
use crate::srq::{self, AsyncEvent, SrqInner};

/// An Ethernet MAC address, byte 0 first on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize)]
pub struct MacAddr(pub [u8; 6]);

impl fmt::Display for MacAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let m = self.0;
        write!(f, "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}", m[0], m[1], m[2], m[3], m[4], m[5])
    }
}

/// The addresses of the NIC's single port: source MAC and IPv4 address of every RoCEv2 packet it
/// sends (the GID of a RoCEv2 port is its IPv4-mapped IPv6 address).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PortAddr {
    /// Source MAC address.
    pub mac: MacAddr,
    /// Source IPv4 address.
    pub ip: Ipv4Addr,
}

impl PortAddr {
    /// A conventional address for NIC `i` of a simulated world: locally administered MAC
    /// `02:00:00:00:00:<i+1>` and IPv4 `192.0.2.<i+1>` (TEST-NET-1, RFC 5737: the frames only
    /// ever exist on the simulated wire).
    pub fn for_sim_nic(i: usize) -> Self {
        let n = (i % 254) as u8 + 1;
        let ip = Ipv4Addr::new(192, 0, 2, n);
        Self { mac: Self::sim_mac_of(ip), ip }
    }

    /// The MAC [`for_sim_nic`](Self::for_sim_nic) gives the port of IPv4 address `ip`:
    /// `02:00:00:00:00:<last octet>`. How a host that knows only a simulated peer's IP (or GID)
    /// addresses it while rnic resolves no addresses (no ARP).
    pub fn sim_mac_of(ip: Ipv4Addr) -> MacAddr {
        MacAddr([0x02, 0, 0, 0, 0, ip.octets()[3]])
    }
}

/// The identification and capability registers of a device, as read from BAR0: what
/// [`Context::query_device`](crate::Context::query_device) turns into `ibv_device_attr`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct DeviceInfo {
    /// `ID` register (0x524E4943, "RNIC", when it is an rnic).
    pub id: u32,
    /// `VERSION` register: contract `major << 16 | minor`.
    pub version: u32,
    /// Raw `CAPS` register.
    pub caps: u32,
    /// `CLOCK_MHZ` register: core clock in MHz.
    pub clock_mhz: u32,
    /// log2 of the number of QP contexts.
    pub log_qps: u8,
    /// log2 of the number of MR key-table entries.
    pub log_mrs: u8,
    /// log2 of the number of CQ contexts.
    pub log_cqs: u8,
    /// log2 of the number of WQEs a QP may have unacknowledged.
    pub log_inflight: u8,
    /// Datapath width in bytes.
    pub datapath_bytes: u8,
    /// Raw `QP_CAPS` register.
    pub qp_caps: u32,
    /// log2 of the largest SQ, in WQEs (`QP_CAPS` 3:0).
    pub log_max_sq_wr: u8,
    /// log2 of the largest RQ, in receive WQEs (`QP_CAPS` 7:4).
    pub log_max_rq_wr: u8,
    /// Gather entries per send WQE (`QP_CAPS` 15:8).
    pub max_send_sge: u8,
    /// Scatter entries per receive WQE (`QP_CAPS` 23:16).
    pub max_recv_sge: u8,
    /// Largest `max_rd_atomic` / `max_dest_rd_atomic` (`QP_CAPS` 31:24).
    pub max_rd_atomic: u8,
    /// Inline data bytes per WQE (`SEND_CAPS` 15:0).
    pub max_inline: u16,
    /// log2 of the largest SRQ, in receive WQEs (`SRQ_CAPS` 3:0).
    pub log_max_srq_wr: u8,
    /// Scatter entries per SRQ receive WQE (`SRQ_CAPS` 15:8).
    pub max_srq_sge: u8,
    /// Raw `FEATURES` register (bits in [`rnic_contract::regs::features`]).
    pub features: u32,
}

impl DeviceInfo {
    /// Reads ID, VERSION, CAPS, CLOCK_MHZ and the capability registers QP_CAPS, SEND_CAPS,
    /// SRQ_CAPS and FEATURES (8 MMIO reads) without judging them.
    ///
    /// # Errors
    /// Backend MMIO errors.
    pub fn read(dev: &dyn Device) -> Result<Self> {
        let id = dev.mmio_read32(regs::ID)?;
        let version = dev.mmio_read32(regs::VERSION)?;
        let c = dev.mmio_read32(regs::CAPS)?;
        let clock_mhz = dev.mmio_read32(regs::CLOCK_MHZ)?;
        let q = dev.mmio_read32(regs::QP_CAPS)?;
        let send = dev.mmio_read32(regs::SEND_CAPS)?;
        let srq = dev.mmio_read32(regs::SRQ_CAPS)?;
        let features = dev.mmio_read32(regs::FEATURES)?;
        let f = |v: u32, shift: u32, mask: u32| (v >> shift & mask) as u8;
        Ok(Self {
            qp_caps: q,
            log_max_sq_wr: f(q, qp_caps::LOG_MAX_SQ_WR_SHIFT, 0xF),
            log_max_rq_wr: f(q, qp_caps::LOG_MAX_RQ_WR_SHIFT, 0xF),
            max_send_sge: f(q, qp_caps::MAX_SEND_SGE_SHIFT, 0xFF),
            max_recv_sge: f(q, qp_caps::MAX_RECV_SGE_SHIFT, 0xFF),
            max_rd_atomic: f(q, qp_caps::MAX_RD_ATOMIC_SHIFT, 0xFF),
            max_inline: (send >> send_caps::MAX_INLINE_SHIFT & 0xFFFF) as u16,
            log_max_srq_wr: f(srq, srq_caps::LOG_MAX_SRQ_WR_SHIFT, 0xF),
            max_srq_sge: f(srq, srq_caps::MAX_SRQ_SGE_SHIFT, 0xFF),
            features,
            id,
            version,
            caps: c,
            clock_mhz,
            log_qps: (c >> caps::LOG_QPS_SHIFT & 0xF) as u8,
            log_mrs: (c >> caps::LOG_MRS_SHIFT & 0xF) as u8,
            log_cqs: (c >> caps::LOG_CQS_SHIFT & 0xF) as u8,
            log_inflight: (c >> caps::LOG_INFLIGHT_SHIFT & 0xF) as u8,
            datapath_bytes: (c >> caps::DATAPATH_BYTES_SHIFT & 0xFF) as u8,
        })
    }

    /// Contract major version (`VERSION` bits 31:16).
    pub fn major(&self) -> u16 {
        (self.version >> 16) as u16
    }

    /// Contract minor version (`VERSION` bits 15:0).
    pub fn minor(&self) -> u16 {
        self.version as u16
    }

    /// True if the NIC sets `bit` of FEATURES (a [`rnic_contract::regs::features`] flag).
    pub fn has_feature(&self, bit: u32) -> bool {
        self.features & bit == bit
    }

    /// The atomicity guarantee, FEATURES bits 9:8, as `enum ibv_atomic_cap` (0 none, 1 HCA,
    /// 2 global).
    pub fn atomic_cap(&self) -> u8 {
        (self.features >> features::ATOMIC_CAP_SHIFT & 3) as u8
    }

    /// Checks that this driver can drive the device: ID must read "RNIC", the contract major
    /// version must equal the driver's ([`regs::VERSION_VALUE`]) and the minor must be at
    /// least [`MIN_MINOR`] (the capability registers); a newer minor is fine.
    ///
    /// # Errors
    /// `Error::Open` (ENODEV) saying which register disagrees, with a hint.
    pub fn check_compatible(&self) -> Result<()> {
        self.check_compatible_for("the device")
    }

    /// As [`check_compatible`](Self::check_compatible), naming `device` in the error.
    ///
    /// # Errors
    /// `Error::Open` with [`OpenError::NotAnRnic`](crate::backend::OpenError::NotAnRnic) or
    /// [`OpenError::ContractVersion`](crate::backend::OpenError::ContractVersion) (ENODEV).
    pub fn check_compatible_for(&self, device: &str) -> Result<()> {
        use crate::backend::OpenError;
        if self.id != regs::ID_VALUE {
            return Err(OpenError::NotAnRnic { device: device.to_owned(), id: self.id }.into());
        }
        let want_major = (regs::VERSION_VALUE >> 16) as u16;
        if self.major() != want_major {
            return Err(OpenError::ContractVersion {
                device: device.to_owned(),
                version: self.version,
                nic_major: self.major(),
                nic_minor: self.minor(),
                driver_major: want_major,
            }
            .into());
        }
        if self.minor() < MIN_MINOR {
            return Err(Error::NoDevice(format!(
                "the NIC implements contract version {}.{}, this driver needs {want_major}.{MIN_MINOR} or later (the capability registers QP_CAPS..FEATURES)",
                self.major(),
                self.minor()
            )));
        }
        Ok(())
    }
}

/// The oldest contract minor version this driver drives: 2, the first with the capability
/// registers it reads to size queues ([`regs::QP_CAPS`] .. [`regs::FEATURES`]).
pub const MIN_MINOR: u16 = 2;

/// A snapshot of the NIC's statistics counters ([`regs::counter`]), read by MMIO.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counters {
    /// Values indexed by [`regs::counter`] index.
    pub values: [u32; counter::COUNT as usize],
}

impl Default for Counters {
    fn default() -> Self {
        Self { values: [0; counter::COUNT as usize] }
    }
}

impl Counters {
    /// The value of the counter called `name` (see [`regs::counter::NAMES`]).
    pub fn get(&self, name: &str) -> Option<u32> {
        counter::NAMES.iter().position(|n| *n == name).map(|i| self.values[i])
    }

    /// `(name, value)` pairs in index order.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, u32)> + '_ {
        counter::NAMES.iter().copied().zip(self.values.iter().copied())
    }

    /// Bytes of the frames the NIC sent (Ethernet header through ICRC), a 64-bit count.
    pub fn tx_bytes(&self) -> u64 {
        self.wide(counter::TX_BYTES_LO)
    }

    /// Bytes of the frames the NIC received (every frame, good or dropped), a 64-bit count.
    pub fn rx_bytes(&self) -> u64 {
        self.wide(counter::RX_BYTES_LO)
    }

    fn wide(&self, lo: u16) -> u64 {
        u64::from(self.values[usize::from(lo)]) | u64::from(self.values[usize::from(lo) + 1]) << 32
    }
}

impl serde::Serialize for Counters {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        // The event counters by name, then the byte counts as 64-bit numbers.
        let mut m = s.serialize_map(Some(usize::from(counter::EVENTS) + 2))?;
        for (k, v) in self.iter().take(usize::from(counter::EVENTS)) {
            m.serialize_entry(k, &v)?;
        }
        m.serialize_entry("tx_bytes", &self.tx_bytes())?;
        m.serialize_entry("rx_bytes", &self.rx_bytes())?;
        m.end()
    }
}

/// Which table entries are in use.
#[derive(Debug)]
pub(crate) struct Tables {
    qps: Vec<bool>,
    cqs: Vec<bool>,
    /// MR slots: in use, and the tag of the last registration.
    mrs: Vec<(bool, u8)>,
    next_pd: u32,
    /// Interrupt vectors given to CQs with a completion channel (bit v = vector v).
    vectors: u64,
}

/// QP numbers 0 and 1 are the special QPs of IB (SMI, GSI); RC QPs start at 2.
pub(crate) const FIRST_QPN: usize = 2;

impl Tables {
    fn new(info: &DeviceInfo) -> Self {
        let n = |log: u8, contract: usize| 1usize << usize::from(log).min(contract);
        Self {
            qps: vec![false; n(info.log_qps, rnic_contract::LOG_NUM_QPS)],
            cqs: vec![false; n(info.log_cqs, rnic_contract::LOG_NUM_CQS)],
            mrs: vec![(false, 0); n(info.log_mrs, rnic_contract::LOG_NUM_MRS)],
            next_pd: 1,
            vectors: 0,
        }
    }

    /// A free interrupt vector below `count`.
    pub(crate) fn alloc_vector(&mut self, count: u16) -> Result<u8> {
        let n = u32::from(count).min(rnic_contract::regs::IRQ_VECTORS);
        let v = (0..n).find(|&v| self.vectors >> v & 1 == 0).ok_or_else(|| {
            Error::NoMemory(format!("all {n} interrupt vectors are in use by CQs with a completion channel"))
        })?;
        self.vectors |= 1 << v;
        Ok(v as u8)
    }

    /// Takes vector `v` out of the ones [`alloc_vector`](Self::alloc_vector) hands out.
    pub(crate) fn reserve_vector(&mut self, v: u8) {
        self.vectors |= 1 << v;
    }

    pub(crate) fn free_vector(&mut self, v: u8) {
        self.vectors &= !(1u64 << v);
    }

    pub(crate) fn alloc_qpn(&mut self) -> Result<u32> {
        let total = self.qps.len();
        let i = (FIRST_QPN..total).find(|&i| !self.qps[i]).ok_or_else(|| {
            Error::NoMemory(format!(
                "all {} RC QP contexts (QPN {FIRST_QPN}..{total}) are in use",
                total.saturating_sub(FIRST_QPN)
            ))
        })?;
        self.qps[i] = true;
        Ok(i as u32)
    }

    /// Takes QP number 1, the GSI QP's (IBTA Vol 1 13.5), which [`alloc_qpn`](Self::alloc_qpn)
    /// never hands out.
    pub(crate) fn alloc_gsi_qpn(&mut self) -> Result<u32> {
        match self.qps.get_mut(1) {
            Some(s) if !*s => {
                *s = true;
                Ok(1)
            }
            _ => Err(Error::NoMemory("QP 1 (the GSI QP) already exists on this port".into())),
        }
    }

    pub(crate) fn free_qpn(&mut self, qpn: u32) {
        if let Some(s) = self.qps.get_mut(qpn as usize) {
            *s = false;
        }
    }

    pub(crate) fn alloc_cqn(&mut self) -> Result<u32> {
        let i = self
            .cqs
            .iter()
            .position(|u| !u)
            .ok_or_else(|| Error::NoMemory(format!("all {} CQ contexts are in use", self.cqs.len())))?;
        self.cqs[i] = true;
        Ok(i as u32)
    }

    pub(crate) fn free_cqn(&mut self, cqn: u32) {
        if let Some(s) = self.cqs.get_mut(cqn as usize) {
            *s = false;
        }
    }

    /// A free key-table slot and the next tag for it: `(index, tag)`. Tags skip 0 so no key is 0.
    pub(crate) fn alloc_mr(&mut self) -> Result<(u8, u8)> {
        let i = self.mrs.iter().position(|(used, _)| !used).ok_or_else(|| {
            Error::NoMemory(format!("all {} memory-region key-table entries are in use", self.mrs.len()))
        })?;
        let (used, tag) = &mut self.mrs[i];
        *used = true;
        *tag = match tag.wrapping_add(1) {
            0 => 1,
            t => t,
        };
        Ok((i as u8, *tag))
    }

    pub(crate) fn free_mr(&mut self, index: u8) {
        if let Some((used, _)) = self.mrs.get_mut(usize::from(index)) {
            *used = false;
        }
    }

    pub(crate) fn alloc_pd(&mut self) -> Result<u32> {
        let pd = self.next_pd;
        if pd > 0xFF_FFFF {
            return Err(Error::NoMemory("protection-domain numbers (24 bits) exhausted".into()));
        }
        self.next_pd += 1;
        Ok(pd)
    }
}

/// State shared by every object of a context.
pub(crate) struct CtxInner {
    pub(crate) dev: Rc<dyn Device>,
    pub(crate) info: DeviceInfo,
    pub(crate) port: Cell<Option<PortAddr>>,
    pub(crate) tables: RefCell<Tables>,
    /// The SRQs created on this context, for [`Context::poll_async_event`].
    pub(crate) srqs: RefCell<Vec<Weak<SrqInner>>>,
    /// The device's asynchronous event queue (QP events), when the NIC has one (contract
    /// minor [`ASYNC_EVENTS_MINOR`] and up).
    pub(crate) events: Option<EventQueue>,
}

/// The contract minor version that added the QP-affiliated asynchronous events and
/// [`regs::ASYNC_EVENT_CQ`].
pub const ASYNC_EVENTS_MINOR: u16 = 4;

/// An opened rnic device: the root of every verbs object (`struct ibv_context`).
///
/// Cheap to clone (a reference-counted handle); objects created from it keep it alive.
#[derive(Clone)]
pub struct Context {
    pub(crate) inner: Rc<CtxInner>,
}

impl fmt::Debug for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Context").field("device", &self.inner.dev.name()).field("port", &self.inner.port.get()).finish()
    }
}

impl Context {
    /// Opens `device` (`ibv_open_device(3)`): reads ID, VERSION, CAPS and CLOCK_MHZ and checks
    /// that this driver speaks the device's contract. The port address is not set; call
    /// [`set_port_addr`](Self::set_port_addr) before connecting QPs, or use
    /// [`open_with_port`](Self::open_with_port).
    ///
    /// # Errors
    /// [`Error::NoDevice`] if ID or the contract major version disagree; backend MMIO errors.
    pub fn open(device: impl Device + 'static) -> Result<Self> {
        Self::open_shared(Rc::new(device))
    }

    /// As [`open`](Self::open), for a device already shared as `Rc<dyn Device>`.
    ///
    /// # Errors
    /// As [`open`](Self::open).
    pub fn open_shared(dev: Rc<dyn Device>) -> Result<Self> {
        let info = DeviceInfo::read(&*dev)?;
        info.check_compatible_for(&dev.name())?;
        let tables = RefCell::new(Tables::new(&info));
        // The event queue takes a CQ for the life of the context (ibv_get_async_event(3)
        // reports events from open on), so `max_cq` counts one fewer.
        // With interrupts it also takes the backend's highest vector, so that
        // `get_async_event` sleeps until the NIC writes an event.
        let events = if info.minor() >= ASYNC_EVENTS_MINOR {
            let cqn = tables.borrow_mut().alloc_cqn()?;
            let n = u32::from(dev.interrupt_vectors()).min(regs::IRQ_VECTORS);
            let vector = n.checked_sub(1).filter(|&v| dev.interrupt_fd(v as u16).is_some()).map(|v| v as u8);
            if let Some(v) = vector {
                tables.borrow_mut().reserve_vector(v);
            }
            Some(EventQueue::new(&dev, cqn, vector)?)
        } else {
            None
        };
        Ok(Self {
            inner: Rc::new(CtxInner {
                dev,
                info,
                port: Cell::new(None),
                tables,
                srqs: RefCell::new(Vec::new()),
                events,
            }),
        })
    }

    /// Opens `device` and sets its port address (see [`set_port_addr`](Self::set_port_addr)).
    ///
    /// # Errors
    /// As [`open`](Self::open) and [`set_port_addr`](Self::set_port_addr).
    pub fn open_with_port(device: impl Device + 'static, port: PortAddr) -> Result<Self> {
        let ctx = Self::open(device)?;
        ctx.set_port_addr(port)?;
        Ok(ctx)
    }

    /// Programs the port's source MAC (MAC_LO/MAC_HI, byte 0 in bits 7:0) and IPv4 address
    /// (IPV4_ADDR, first octet in bits 31:24), and remembers them for [`crate::Endpoint`]s.
    /// Multicast MACs and the unspecified or broadcast IPv4 addresses are refused.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an unusable address; backend MMIO errors.
    pub fn set_port_addr(&self, port: PortAddr) -> Result<()> {
        if port.mac.0[0] & 1 == 1 {
            return Err(Error::inval(format!("port MAC {} is a multicast address", port.mac)));
        }
        if port.ip.is_unspecified() || port.ip.is_broadcast() || port.ip.is_multicast() {
            return Err(Error::inval(format!("port IPv4 address {} cannot be a unicast source", port.ip)));
        }
        let m = port.mac.0;
        let dev = &*self.inner.dev;
        dev.mmio_write32(regs::MAC_LO, u32::from_le_bytes([m[0], m[1], m[2], m[3]]))?;
        dev.mmio_write32(regs::MAC_HI, u32::from_le_bytes([m[4], m[5], 0, 0]))?;
        dev.mmio_write32(regs::IPV4_ADDR, crate::records::ip_to_u32(port.ip))?;
        self.inner.port.set(Some(port));
        Ok(())
    }

    /// The port address set by [`set_port_addr`](Self::set_port_addr), if any.
    pub fn port_addr(&self) -> Option<PortAddr> {
        self.inner.port.get()
    }

    /// What the device reported when it was opened.
    pub fn device_info(&self) -> DeviceInfo {
        self.inner.info
    }

    /// The device backend.
    pub fn device(&self) -> &Rc<dyn Device> {
        &self.inner.dev
    }

    /// Allocates a protection domain (`ibv_alloc_pd(3)`).
    ///
    /// # Errors
    /// [`Error::NoMemory`] when the 24-bit PD numbers are exhausted.
    pub fn alloc_pd(&self) -> Result<ProtectionDomain> {
        let pdn = self.inner.tables.borrow_mut().alloc_pd()?;
        Ok(ProtectionDomain::new(Rc::clone(&self.inner), pdn))
    }

    /// Polls one asynchronous event, if any (`ibv_get_async_event(3)` without blocking): first
    /// the QP events the NIC wrote to the context's event queue
    /// ([`AsyncEvent::Qp`], in the order raised), then each SRQ's limit event from a CQ of
    /// that SRQ, in SRQ creation order. Events need no acknowledgement
    /// (`ibv_ack_async_event`): they hold no resource.
    ///
    /// # Errors
    /// Backend errors reading the event rings.
    pub fn poll_async_event(&self) -> Result<Option<AsyncEvent>> {
        if let Some(q) = &self.inner.events {
            if let Some(e) = q.poll()? {
                if let AsyncEvent::SrqLimitReached { srq_num, .. } = e {
                    srq::disarmed(&self.inner.srqs, srq_num);
                }
                return Ok(Some(e));
            }
        }
        srq::poll_async_event(&self.inner.srqs)
    }

    /// Whether the NIC reports QP-affiliated asynchronous events to this context (contract
    /// minor [`ASYNC_EVENTS_MINOR`] and up).
    pub fn has_qp_events(&self) -> bool {
        self.inner.events.is_some()
    }

    /// The MSI-X vector the event queue's interrupts come on (see
    /// [`get_async_event_timeout`](Self::get_async_event_timeout)); `None` when the backend
    /// has no interrupts or the NIC no event queue.
    pub fn async_event_vector(&self) -> Option<u16> {
        self.inner.events.as_ref().and_then(|q| q.vector).map(u16::from)
    }

    /// Waits for the next asynchronous event (`ibv_get_async_event(3)`, which blocks).
    ///
    /// # Errors
    /// Backend errors; never returns while no event comes.
    pub fn get_async_event(&self) -> Result<AsyncEvent> {
        loop {
            if let Some(e) = self.get_async_event_timeout(Duration::from_secs(1))? {
                return Ok(e);
            }
        }
    }

    /// Waits up to `timeout` (wall-clock) for the next asynchronous event. With interrupts the
    /// thread sleeps on the event queue's vector: it arms the queue's CQ (`CQ_ARM` with its
    /// consumer index, so an event written since the last poll fires at once), polls once more,
    /// then waits in `Device::wait_interrupts` (the in-process simulator runs its world
    /// meanwhile). Without interrupts it polls, calling `Device::poll_progress` between polls.
    ///
    /// # Errors
    /// Backend errors.
    pub fn get_async_event_timeout(&self, timeout: Duration) -> Result<Option<AsyncEvent>> {
        let end = Instant::now() + timeout;
        loop {
            if let Some(e) = self.poll_async_event()? {
                return Ok(Some(e));
            }
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            match self.inner.events.as_ref().and_then(|q| q.vector.map(|v| (q, v))) {
                Some((q, v)) => {
                    q.arm()?;
                    if let Some(e) = self.poll_async_event()? {
                        return Ok(Some(e));
                    }
                    self.inner.dev.wait_interrupts(&[u16::from(v)], left)?;
                }
                None => self.inner.dev.poll_progress(),
            }
        }
    }

    /// Polls for an asynchronous event until one arrives or `budget_cycles` NIC cycles pass
    /// (a bounded `ibv_get_async_event(3)`).
    ///
    /// # Errors
    /// [`Error::TimedOut`] when the budget runs out; backend errors.
    pub fn wait_async_event(&self, budget_cycles: u64) -> Result<AsyncEvent> {
        let start = self.inner.dev.now_cycles();
        loop {
            if let Some(e) = self.poll_async_event()? {
                return Ok(e);
            }
            self.inner.dev.poll_progress();
            if self.inner.dev.now_cycles().saturating_sub(start) >= budget_cycles {
                return Err(Error::TimedOut(format!("no asynchronous event within {budget_cycles} cycles")));
            }
        }
    }

    /// Creates a completion queue of at least `min_cqe` entries, rounded up to a power of two
    /// (`ibv_create_cq(3)`): allocates and zeroes the ring (a zeroed ring reads empty), then
    /// commits the CQ context (WRITE_CQ with VALID, LOG_SIZE, BASE), which resets the NIC's
    /// producer index. See [`CompletionQueue`] for sizing.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for `min_cqe` of 0 or above [`crate::cq::MAX_CQE`];
    /// [`Error::NoMemory`] when no CQ context or DMA memory is free; backend errors.
    pub fn create_cq(&self, min_cqe: usize) -> Result<CompletionQueue> {
        CompletionQueue::new(Rc::clone(&self.inner), min_cqe, None)
    }

    /// Creates a completion event channel (`ibv_create_comp_channel(3)`).
    ///
    /// # Errors
    /// [`Error::NotSupported`] if the backend delivers no interrupts or the NIC has no CQ
    /// events; [`Error::Io`] if epoll(7) fails.
    pub fn create_comp_channel(&self) -> Result<CompletionChannel> {
        CompletionChannel::new(Rc::clone(&self.inner))
    }

    /// Creates a CQ whose completion events go to `channel` (`ibv_create_cq(3)` with a
    /// `channel`), on an interrupt vector of its own ([`CompletionQueue::comp_vector`]).
    ///
    /// # Errors
    /// As [`create_cq`](Self::create_cq); [`Error::NoMemory`] when every interrupt vector is
    /// taken by such a CQ; [`Error::InvalidArgument`] for a channel of another context.
    pub fn create_cq_with_channel(&self, min_cqe: usize, channel: &CompletionChannel) -> Result<CompletionQueue> {
        CompletionQueue::new(Rc::clone(&self.inner), min_cqe, Some(channel))
    }

    /// Writes the per-vector interrupt masks ([`regs::IRQ_MASK`]; bit v masks vector v: its
    /// events wait in [`interrupt_pending`](Self::interrupt_pending) until unmasked).
    ///
    /// # Errors
    /// Backend MMIO errors.
    pub fn set_interrupt_mask(&self, mask: u32) -> Result<()> {
        self.inner.dev.mmio_write32(regs::IRQ_MASK, mask)
    }

    /// Reads the per-vector interrupt masks.
    ///
    /// # Errors
    /// Backend MMIO errors.
    pub fn interrupt_mask(&self) -> Result<u32> {
        self.inner.dev.mmio_read32(regs::IRQ_MASK)
    }

    /// Reads the pending-interrupt bits ([`regs::IRQ_PENDING`]).
    ///
    /// # Errors
    /// Backend MMIO errors.
    pub fn interrupt_pending(&self) -> Result<u32> {
        self.inner.dev.mmio_read32(regs::IRQ_PENDING)
    }

    /// Sets interrupt moderation ([`regs::IRQ_MODERATION`]): each vector sends at most one
    /// interrupt per window of `units` × [`regs::irq::MODERATION_UNIT_CYCLES`] core cycles;
    /// 0 turns it off.
    ///
    /// # Errors
    /// Backend MMIO errors.
    pub fn set_interrupt_moderation(&self, units: u16) -> Result<()> {
        self.inner.dev.mmio_write32(regs::IRQ_MODERATION, u32::from(units))
    }

    /// Reads one statistics counter (`COUNTERS + 4 * index`, index from [`regs::counter`]).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an index ≥ [`counter::COUNT`]; backend MMIO errors.
    pub fn counter(&self, index: u16) -> Result<u32> {
        if index >= counter::COUNT {
            return Err(Error::inval(format!("counter index {index} (the NIC has {})", counter::COUNT)));
        }
        self.inner.dev.mmio_read32(regs::COUNTERS + 4 * index)
    }

    /// Reads every statistics counter (one MMIO read each; not for the fast path). A 64-bit
    /// byte count is read high, low, high, again while the high half moved, so its halves
    /// belong together.
    ///
    /// # Errors
    /// Backend MMIO errors.
    pub fn counters(&self) -> Result<Counters> {
        let mut c = Counters::default();
        let read = |i: u16| self.inner.dev.mmio_read32(regs::COUNTERS + 4 * i);
        for i in 0..counter::EVENTS {
            c.values[usize::from(i)] = read(i)?;
        }
        for lo in [counter::TX_BYTES_LO, counter::RX_BYTES_LO] {
            let (l, h) = loop {
                let h = read(lo + 1)?;
                let l = read(lo)?;
                if read(lo + 1)? == h {
                    break (l, h);
                }
            };
            c.values[usize::from(lo)] = l;
            c.values[usize::from(lo) + 1] = h;
        }
        Ok(c)
    }
}
