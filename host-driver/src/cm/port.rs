//! The port's CM agent: QP1 (the GSI QP, IBTA Vol 1 13.5; RoCEv2 per Annex A17) carrying the
//! MADs of a [`CmEngine`].
//!
//! QP1 is a UD QP with QP number 1 and Q_Key [`GSI_QKEY`]. The agent keeps [`RECV_SLOTS`]
//! receive WQEs posted on it, each a [`RECV_SLOT_BYTES`]-byte buffer: the 40-byte GRH area
//! (the frame's IPv4 header in its last 20 bytes) followed by room for the largest datagram
//! (4096 bytes, the port's MTU), of which a MAD uses the first 256. A datagram of any size
//! therefore lands and is judged by the engine (a receive too long for its buffer would be a
//! LOC_LEN_ERR that moves QP1 to ERR); should QP1 reach ERR anyway, the agent takes it back
//! through RESET to RTS and posts its buffers again. Each receive
//! completion goes to [`CmEngine::handle_mad`] with the sender's GID (the IPv4-mapped source
//! address of that header) and QPN (`src_qp`); each MAD the engine wants sent goes out as a
//! UD SEND from one of [`SEND_SLOTS`] 256-byte send buffers to the peer's QP1, with an address
//! handle made once per peer. The engine's clock is the device's ([`crate::Device::now_cycles`]
//! at the NIC's core clock): simulated time in the simulator.
use std::collections::{HashMap, VecDeque};
use std::net::Ipv4Addr;

use super::arp::Neighbors;
use super::engine::{CmConfig, CmEngine};
use super::mad::{GSI_QKEY, MAD_BYTES};
use super::types::{CmEvent, MadAddr, OutMad};
use crate::context::{Context, MacAddr, PortAddr};
use crate::cq::{CompletionQueue, WcOpcode, WorkCompletion};
use crate::error::{Error, Result};
use crate::mr::{AccessFlags, MemoryRegion};
use crate::pd::ProtectionDomain;
use crate::qp::{AddressHandle, AddressVector, QpAttr, QpAttrMask, QpState, QueuePair, RecvWr, SendWr, Sge};

/// Bytes of the GRH area in front of a UD receive's payload (IBTA Vol 1 11.4.1.2).
pub const GRH_BYTES: usize = 40;
/// Bytes of the largest UD payload (one packet of the port's 4096-byte MTU).
pub const MAX_DATAGRAM: usize = 4096;
/// Bytes of one QP1 receive buffer: the GRH area and the largest datagram (a MAD is 256).
pub const RECV_SLOT_BYTES: usize = GRH_BYTES + MAX_DATAGRAM;
/// Receive WQEs QP1 keeps posted.
pub const RECV_SLOTS: usize = 16;
/// MADs QP1 may have in flight on its send queue; more wait in the agent's queue.
pub const SEND_SLOTS: usize = 16;
/// `wr_id` bit of QP1's send work requests (the low bits are the slot).
const SEND_WR: u64 = 1 << 32;

/// What the agent counted besides the engine's own [`super::CmStats`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AgentStats {
    /// MADs received on QP1 and given to the engine.
    pub mads_received: u64,
    /// MADs posted as UD SENDs on QP1.
    pub mads_sent: u64,
    /// MADs the engine wanted sent to an address with no known MAC (dropped).
    pub unresolved: u64,
    /// QP1 completions with an error status (a receive is posted again).
    pub errors: u64,
    /// Received datagrams that are not one MAD (shorter or longer than 256 bytes); they
    /// still go to the engine, which drops and counts them as malformed.
    pub not_a_mad: u64,
    /// Times QP1 was found in ERR and brought back to RTS.
    pub recoveries: u64,
}

/// QP1's buffers: a leaked boxed slice registered as one MR, freed after the MR is gone.
struct Buffers {
    mr: Option<MemoryRegion<'static>>,
    raw: *mut [u8],
}

impl Buffers {
    fn new(pd: &ProtectionDomain, len: usize) -> Result<Self> {
        let raw = Box::into_raw(vec![0u8; len].into_boxed_slice());
        // SAFETY: `raw` is a fresh allocation nothing else references; it is freed in `drop`
        // only after the MR (and with it the DMA mapping) is gone. The CPU reaches it only
        // through the MR's device copies (read_at / write_at).
        match unsafe { MemoryRegion::register_raw(pd, raw.cast::<u8>(), len, AccessFlags::LOCAL_WRITE) } {
            Ok(mr) => Ok(Self { mr: Some(mr), raw }),
            Err(e) => {
                // SAFETY: never registered, so ours alone.
                drop(unsafe { Box::from_raw(raw) });
                Err(e)
            }
        }
    }

    fn mr(&self) -> &MemoryRegion<'static> {
        self.mr.as_ref().expect("registered until drop")
    }
}

impl Drop for Buffers {
    fn drop(&mut self) {
        drop(self.mr.take());
        // SAFETY: the MR is deregistered (its drop aborts if the unmap fails), so the NIC can
        // no longer reach the memory.
        drop(unsafe { Box::from_raw(self.raw) });
    }
}

/// The CM agent of one port: QP1, its CQ and buffers, the engine, the address handles.
pub(crate) struct Agent {
    pub(crate) ctx: Context,
    pub(crate) pd: ProtectionDomain,
    pub(crate) port: PortAddr,
    // Field order is drop order: the QP goes before its CQ and buffers.
    qp1: QueuePair<'static>,
    cq: CompletionQueue,
    bufs: Buffers,
    free_send: Vec<usize>,
    waiting: VecDeque<OutMad>,
    pub(crate) engine: CmEngine,
    ahs: HashMap<Ipv4Addr, AddressHandle>,
    pub(crate) neighbors: Neighbors,
    /// Address resolutions ARP ended in the last [`Agent::process`] (the channel reports them).
    pub(crate) resolved: Vec<(Ipv4Addr, Option<MacAddr>)>,
    clock_mhz: u64,
    pub(crate) stats: AgentStats,
}

impl Agent {
    /// Creates QP1 on `ctx`'s port (UD, QPN 1, Q_Key [`GSI_QKEY`], RTS) with its own PD and
    /// CQ and posts its receive buffers; the engine gets `config`.
    pub(crate) fn new(ctx: &Context, config: CmConfig) -> Result<Self> {
        let port = ctx.port_addr().ok_or_else(|| {
            Error::inval("the port address is not set (Context::set_port_addr): the CM has no GID to use")
        })?;
        let pd = ctx.alloc_pd()?;
        let cq = ctx.create_cq(RECV_SLOTS + SEND_SLOTS)?;
        let mut qp1 =
            pd.create_qp(&cq).gsi().set_max_send_wr(SEND_SLOTS as u32).set_max_recv_wr(RECV_SLOTS as u32).build()?;
        gsi_to_rts(&mut qp1)?;
        let bufs = Buffers::new(&pd, RECV_SLOTS * RECV_SLOT_BYTES + SEND_SLOTS * MAD_BYTES)?;
        let mut agent = Self {
            ctx: ctx.clone(),
            pd,
            port,
            qp1,
            cq,
            bufs,
            free_send: (0..SEND_SLOTS).rev().collect(),
            waiting: VecDeque::new(),
            engine: CmEngine::new(config),
            ahs: HashMap::new(),
            neighbors: Neighbors::new(ctx.device().clock_is_simulated()),
            resolved: Vec::new(),
            clock_mhz: u64::from(ctx.device_info().clock_mhz.max(1)),
            stats: AgentStats::default(),
        };
        for slot in 0..RECV_SLOTS {
            agent.post_recv(slot)?;
        }
        Ok(agent)
    }

    /// Brings QP1 back from ERR (a receive error moves a QP there): RESET, then RTS again,
    /// every send buffer free and every receive posted again. MADs it was sending are lost;
    /// the engine's timers resend what matters.
    fn recover(&mut self) -> Result<()> {
        self.stats.recoveries += 1;
        let reset = QpAttr { qp_state: QpState::Reset, ..QpAttr::default() };
        self.qp1.modify(&reset, QpAttrMask::STATE)?;
        gsi_to_rts(&mut self.qp1)?;
        self.free_send = (0..SEND_SLOTS).rev().collect();
        for slot in 0..RECV_SLOTS {
            self.post_recv(slot)?;
        }
        Ok(())
    }

    /// QP1's QP number (1).
    pub(crate) fn qpn(&self) -> u32 {
        self.qp1.qp_num()
    }

    /// The engine's clock: the device's cycles in ns.
    pub(crate) fn now_ns(&self) -> u64 {
        self.ctx.device().now_cycles().saturating_mul(1000) / self.clock_mhz
    }

    fn post_recv(&mut self, slot: usize) -> Result<()> {
        let mr = self.bufs.mr();
        let addr = mr.addr() + (slot * RECV_SLOT_BYTES) as u64;
        let sge = Sge::raw(addr, RECV_SLOT_BYTES as u32, mr.lkey());
        self.qp1.post_recv_one(RecvWr::new(slot as u64, sge))
    }

    /// One round of work: takes QP1's completions, runs ARP on the raw path (answers,
    /// resolutions that ended go to `resolved`), feeds the received MADs to the engine (posting
    /// their buffers again), runs the engine's timers if due, and sends what it queued.
    /// Returns the engine's events, in order.
    pub(crate) fn process(&mut self) -> Result<Vec<CmEvent>> {
        let mut wcs = [WorkCompletion::default(); 16];
        let mut got = Vec::new();
        loop {
            let n = self.cq.poll(&mut wcs)?;
            got.extend_from_slice(&wcs[..n]);
            if n < wcs.len() {
                break;
            }
        }
        // ARP first: a client's ARP request comes before its REQ, so the REP finds its MAC.
        let ended = self.neighbors.service(&self.ctx, self.port, !got.is_empty())?;
        self.resolved.extend(ended);
        for wc in &got {
            self.completion(wc)?;
        }
        if self.qp1.state() == QpState::Err {
            self.recover()?;
        }
        let now = self.now_ns();
        if self.engine.next_timeout().is_some_and(|t| t <= now) {
            self.engine.handle_timeout(now);
        }
        self.flush()?;
        Ok(std::iter::from_fn(|| self.engine.poll_event()).collect())
    }

    fn completion(&mut self, wc: &WorkCompletion) -> Result<()> {
        if wc.wr_id & SEND_WR != 0 {
            self.free_send.push((wc.wr_id & 0xFFFF) as usize);
            if !wc.status.is_success() {
                self.stats.errors += 1;
            }
            return Ok(());
        }
        let slot = wc.wr_id as usize;
        if slot >= RECV_SLOTS {
            return Ok(());
        }
        if self.qp1.state() == QpState::Err {
            // A flushed receive: `recover` posts every buffer again.
            self.stats.errors += 1;
            return Ok(());
        }
        if wc.status.is_success() && wc.opcode == WcOpcode::Recv {
            let mut buf = vec![0u8; RECV_SLOT_BYTES];
            let len = (wc.byte_len as usize).min(RECV_SLOT_BYTES);
            if len != GRH_BYTES + MAD_BYTES {
                self.stats.not_a_mad += 1;
            }
            self.bufs.mr().read_at(slot * RECV_SLOT_BYTES, &mut buf[..len])?;
            // The GRH area's last 20 bytes are the IPv4 header: its source address at 12..16.
            let src = Ipv4Addr::new(buf[32], buf[33], buf[34], buf[35]);
            let from = MadAddr { gid: src.to_ipv6_mapped(), qpn: wc.src_qp };
            let now = self.now_ns();
            self.stats.mads_received += 1;
            self.engine.handle_mad(now, from, &buf[GRH_BYTES..len.max(GRH_BYTES)]);
        } else {
            self.stats.errors += 1;
        }
        self.post_recv(slot)
    }

    /// Posts the engine's outgoing MADs, as many as free send buffers allow.
    pub(crate) fn flush(&mut self) -> Result<()> {
        while let Some(out) = self.engine.poll_transmit() {
            self.waiting.push_back(out);
        }
        while !self.waiting.is_empty() {
            let Some(slot) = self.free_send.pop() else { break };
            let out = self.waiting.pop_front().expect("not empty");
            let Some(ip) = out.dest.gid.to_ipv4_mapped() else {
                self.stats.unresolved += 1;
                self.free_send.push(slot);
                continue;
            };
            if !self.ahs.contains_key(&ip) && self.neighbors.lookup(ip).is_none() && self.neighbors.is_resolving(ip) {
                // ARP is asking for this address: the MAD waits for the answer (or the timeout).
                self.free_send.push(slot);
                self.waiting.push_front(out);
                break;
            }
            let Some(ah) = self.ah(ip)? else {
                self.stats.unresolved += 1;
                self.free_send.push(slot);
                continue;
            };
            let off = RECV_SLOTS * RECV_SLOT_BYTES + slot * MAD_BYTES;
            self.bufs.mr().write_at(off, &out.mad)?;
            let mr = self.bufs.mr();
            let sge = Sge::raw(mr.addr() + off as u64, MAD_BYTES as u32, mr.lkey());
            let wr = SendWr::send(SEND_WR | slot as u64, sge).with_ud(&ah, out.dest.qpn, GSI_QKEY).signaled(true);
            if let Err(e) = self.qp1.post_send_one(wr) {
                self.free_send.push(slot);
                self.waiting.push_front(out);
                return Err(e);
            }
            self.stats.mads_sent += 1;
        }
        Ok(())
    }

    /// The address handle of `ip`'s port, made once.
    fn ah(&mut self, ip: Ipv4Addr) -> Result<Option<AddressHandle>> {
        if let Some(ah) = self.ahs.get(&ip) {
            return Ok(Some(*ah));
        }
        let Some(mac) = self.neighbors.resolve(ip) else { return Ok(None) };
        let ah = self.pd.create_ah(AddressVector { dest_mac: mac, dest_ip: ip })?;
        self.ahs.insert(ip, ah);
        Ok(Some(ah))
    }
}

/// Takes QP1 from RESET to RTS with ibverbs' UD transitions: INIT with the GSI Q_Key, RTR, RTS.
fn gsi_to_rts(qp1: &mut QueuePair<'static>) -> Result<()> {
    use QpAttrMask as M;
    let init = QpAttr { qp_state: QpState::Init, pkey_index: 0, port_num: 1, qkey: GSI_QKEY, ..QpAttr::default() };
    qp1.modify(&init, M::STATE | M::PKEY_INDEX | M::PORT | M::QKEY)?;
    qp1.modify(&QpAttr { qp_state: QpState::Rtr, ..QpAttr::default() }, M::STATE)?;
    qp1.modify(&QpAttr { qp_state: QpState::Rts, sq_psn: 0, ..QpAttr::default() }, M::STATE | M::SQ_PSN)
}
