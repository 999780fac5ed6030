//! The host's MMIO path to BAR0: an AXI4-Lite master that performs queued register reads and
//! writes one at a time, over as many cycles as the NIC takes.
//!
//! It is non-blocking: [`MmioMaster::submit`] queues a request and returns a ticket;
//! [`MmioMaster::take`] returns the completion once the response handshake happened. Blocking
//! helpers live on [`crate::World`], which steps every NIC and wire while it waits.
//!
//! Per request: a write drives `awvalid` and `wvalid` together (each dropped after its own
//! handshake) and holds `bready` high until the B handshake; a read drives `arvalid` until its
//! handshake and holds `rready` high until the R handshake. A new request starts in the cycle
//! after the previous one completed. All signals are decided from state before the cycle.
use std::collections::{HashMap, VecDeque};

use crate::ffi::{NicInputs, NicOutputs};

/// Identifies a submitted MMIO request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MmioTicket(pub u64);

/// An MMIO request on BAR0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MmioRequest {
    /// Read the 32-bit register at byte offset `addr`.
    Read {
        /// BAR0 byte offset.
        addr: u16,
    },
    /// Write `value` to byte offset `addr` under byte strobe `strb` (bit i = byte i; 0xF for a
    /// full word).
    Write {
        /// BAR0 byte offset.
        addr: u16,
        /// Data.
        value: u32,
        /// Byte strobes (4 bits).
        strb: u8,
    },
}

impl MmioRequest {
    /// The BAR0 byte offset.
    pub fn addr(&self) -> u16 {
        match *self {
            MmioRequest::Read { addr } | MmioRequest::Write { addr, .. } => addr,
        }
    }
    /// True for writes.
    pub fn is_write(&self) -> bool {
        matches!(self, MmioRequest::Write { .. })
    }
}

/// A finished MMIO request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MmioCompletion {
    /// What was asked.
    pub request: MmioRequest,
    /// Read data (0 for writes).
    pub value: u32,
    /// AXI response: 0 OKAY, 2 SLVERR, 3 DECERR.
    pub resp: u32,
    /// True if a reset of the NIC cut the request short (then `resp` is meaningless).
    pub aborted: bool,
    /// Cycle it was submitted.
    pub submitted_cycle: u64,
    /// Cycle of its response handshake (or of the abort).
    pub completed_cycle: u64,
}

/// MMIO statistics of one NIC.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MmioStats {
    /// Reads completed.
    pub reads: u64,
    /// Writes completed.
    pub writes: u64,
    /// Completions with a non-OKAY response.
    pub error_responses: u64,
    /// B or R valid from the NIC while no such response was expected (an AXI-Lite rule break).
    pub spurious_responses: u64,
}

#[derive(Debug)]
struct Active {
    ticket: u64,
    req: MmioRequest,
    submitted: u64,
    addr_done: bool,
    data_done: bool,
}

/// AXI4-Lite master for one NIC's BAR0.
#[derive(Debug, Default)]
pub struct MmioMaster {
    queue: VecDeque<(u64, MmioRequest, u64)>,
    active: Option<Active>,
    done: HashMap<u64, MmioCompletion>,
    next_ticket: u64,
    stats: MmioStats,
}

impl MmioMaster {
    /// An idle master.
    pub fn new() -> Self {
        Self::default()
    }

    /// Statistics since creation.
    pub fn stats(&self) -> MmioStats {
        self.stats
    }

    /// Queues `req`, submitted at cycle `now`; it starts after the requests queued before it.
    pub fn submit(&mut self, req: MmioRequest, now: u64) -> MmioTicket {
        let t = self.next_ticket;
        self.next_ticket += 1;
        self.queue.push_back((t, req, now));
        MmioTicket(t)
    }

    /// The completion of `ticket`, once (None while it is in flight, or if already taken).
    pub fn take(&mut self, ticket: MmioTicket) -> Option<MmioCompletion> {
        self.done.remove(&ticket.0)
    }

    /// True while `ticket` is queued or in progress.
    pub fn is_pending(&self, ticket: MmioTicket) -> bool {
        self.active.as_ref().is_some_and(|a| a.ticket == ticket.0) || self.queue.iter().any(|q| q.0 == ticket.0)
    }

    /// True when nothing is queued or in progress.
    pub fn is_idle(&self) -> bool {
        self.active.is_none() && self.queue.is_empty()
    }

    /// Gives up on `ticket`: removed if queued; if in progress, the master stops driving it (the
    /// bus may be left mid-transaction: only for a NIC that stopped answering). Returns whether it
    /// was pending.
    pub fn cancel(&mut self, ticket: MmioTicket) -> bool {
        if self.active.as_ref().is_some_and(|a| a.ticket == ticket.0) {
            self.active = None;
            return true;
        }
        let before = self.queue.len();
        self.queue.retain(|q| q.0 != ticket.0);
        before != self.queue.len()
    }

    /// Ends the request in progress, if any, as aborted (the NIC is being reset).
    pub fn abort_active(&mut self, now: u64) {
        if let Some(a) = self.active.take() {
            self.done.insert(
                a.ticket,
                MmioCompletion {
                    request: a.req,
                    value: 0,
                    resp: 0,
                    aborted: true,
                    submitted_cycle: a.submitted,
                    completed_cycle: now,
                },
            );
        }
    }

    /// Sets the `s_axil_*` inputs for the coming cycle. Starts the next queued request if idle and
    /// `may_start` (false while the NIC is in reset).
    pub fn drive(&mut self, inp: &mut NicInputs, may_start: bool) {
        if self.active.is_none() && may_start {
            if let Some((ticket, req, submitted)) = self.queue.pop_front() {
                self.active = Some(Active { ticket, req, submitted, addr_done: false, data_done: false });
            }
        }
        inp.s_axil_awvalid = 0;
        inp.s_axil_wvalid = 0;
        inp.s_axil_bready = 0;
        inp.s_axil_arvalid = 0;
        inp.s_axil_rready = 0;
        let Some(a) = &self.active else { return };
        match a.req {
            MmioRequest::Write { addr, value, strb } => {
                inp.s_axil_awaddr = u32::from(addr);
                inp.s_axil_awvalid = u32::from(!a.addr_done);
                inp.s_axil_wdata = value;
                inp.s_axil_wstrb = u32::from(strb & 0xF);
                inp.s_axil_wvalid = u32::from(!a.data_done);
                inp.s_axil_bready = 1;
            }
            MmioRequest::Read { addr } => {
                inp.s_axil_araddr = u32::from(addr);
                inp.s_axil_arvalid = u32::from(!a.addr_done);
                inp.s_axil_rready = 1;
            }
        }
    }

    /// Performs the handshakes of cycle `now` (`inp` as driven, `out` from the NIC).
    pub fn observe(&mut self, now: u64, inp: &NicInputs, out: &NicOutputs) {
        let bvalid = out.s_axil_bvalid & 1 == 1;
        let rvalid = out.s_axil_rvalid & 1 == 1;
        let Some(a) = &mut self.active else {
            if bvalid || rvalid {
                self.stats.spurious_responses += 1;
            }
            return;
        };
        let mut finished = None;
        // A response counts once its address (and, for writes, data) handshake happened, in an
        // earlier cycle or in this one (a combinational slave may answer in the same cycle).
        if a.req.is_write() {
            if inp.s_axil_awvalid == 1 && out.s_axil_awready & 1 == 1 {
                a.addr_done = true;
            }
            if inp.s_axil_wvalid == 1 && out.s_axil_wready & 1 == 1 {
                a.data_done = true;
            }
            if rvalid {
                self.stats.spurious_responses += 1;
            }
            if bvalid && inp.s_axil_bready == 1 {
                if a.addr_done && a.data_done {
                    finished = Some((0, out.s_axil_bresp & 3));
                } else {
                    self.stats.spurious_responses += 1;
                }
            }
        } else {
            if inp.s_axil_arvalid == 1 && out.s_axil_arready & 1 == 1 {
                a.addr_done = true;
            }
            if bvalid {
                self.stats.spurious_responses += 1;
            }
            if rvalid && inp.s_axil_rready == 1 {
                if a.addr_done {
                    finished = Some((out.s_axil_rdata, out.s_axil_rresp & 3));
                } else {
                    self.stats.spurious_responses += 1;
                }
            }
        }
        if let Some((value, resp)) = finished {
            if let Some(a) = self.active.take() {
                if a.req.is_write() {
                    self.stats.writes += 1;
                } else {
                    self.stats.reads += 1;
                }
                if resp != 0 {
                    self.stats.error_responses += 1;
                }
                self.done.insert(
                    a.ticket,
                    MmioCompletion {
                        request: a.req,
                        value,
                        resp,
                        aborted: false,
                        submitted_cycle: a.submitted,
                        completed_cycle: now,
                    },
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A register file slave with one cycle of latency on each channel.
    #[derive(Default)]
    struct Slave {
        regs: [u32; 4],
        b_pending: bool,
        r_pending: Option<u32>,
        aw: Option<u16>,
        w: Option<u32>,
    }

    impl Slave {
        fn outputs(&self) -> NicOutputs {
            NicOutputs {
                s_axil_awready: u32::from(self.aw.is_none()),
                s_axil_wready: u32::from(self.w.is_none()),
                s_axil_bvalid: u32::from(self.b_pending),
                s_axil_arready: u32::from(self.r_pending.is_none()),
                s_axil_rvalid: u32::from(self.r_pending.is_some()),
                s_axil_rdata: self.r_pending.unwrap_or(0),
                ..NicOutputs::default()
            }
        }
        fn edge(&mut self, i: &NicInputs, o: &NicOutputs) {
            if o.s_axil_bvalid == 1 && i.s_axil_bready == 1 {
                self.b_pending = false;
            }
            if o.s_axil_rvalid == 1 && i.s_axil_rready == 1 {
                self.r_pending = None;
            }
            if i.s_axil_awvalid == 1 && o.s_axil_awready == 1 {
                self.aw = Some(i.s_axil_awaddr as u16);
            }
            if i.s_axil_wvalid == 1 && o.s_axil_wready == 1 {
                self.w = Some(i.s_axil_wdata);
            }
            if let (Some(a), Some(d)) = (self.aw, self.w) {
                if !self.b_pending {
                    self.regs[usize::from(a / 4) % 4] = d;
                    self.aw = None;
                    self.w = None;
                    self.b_pending = true;
                }
            }
            if i.s_axil_arvalid == 1 && o.s_axil_arready == 1 {
                self.r_pending = Some(self.regs[(i.s_axil_araddr as usize / 4) % 4]);
            }
        }
    }

    #[test]
    fn queued_requests_complete_in_order() {
        let mut m = MmioMaster::new();
        let mut s = Slave::default();
        let w = m.submit(MmioRequest::Write { addr: 8, value: 0xABCD, strb: 0xF }, 0);
        let r = m.submit(MmioRequest::Read { addr: 8 }, 0);
        let mut inp = NicInputs::default();
        for now in 0..20 {
            m.drive(&mut inp, true);
            let out = s.outputs();
            m.observe(now, &inp, &out);
            s.edge(&inp, &out);
        }
        let wc = m.take(w).unwrap();
        let rc = m.take(r).unwrap();
        assert_eq!((wc.resp, rc.resp, rc.value), (0, 0, 0xABCD));
        assert!(wc.completed_cycle < rc.completed_cycle);
        assert!(m.take(r).is_none());
        assert_eq!(m.stats().reads, 1);
        assert_eq!(m.stats().writes, 1);
        assert!(m.is_idle());
    }

    #[test]
    fn cancel_and_abort() {
        let mut m = MmioMaster::new();
        let a = m.submit(MmioRequest::Read { addr: 0 }, 0);
        let b = m.submit(MmioRequest::Read { addr: 4 }, 0);
        assert!(m.cancel(b));
        let mut inp = NicInputs::default();
        m.drive(&mut inp, true);
        assert_eq!(inp.s_axil_arvalid, 1);
        m.abort_active(5);
        assert!(m.take(a).unwrap().aborted);
        assert!(m.is_idle());
    }
}
