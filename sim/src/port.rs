//! External ports: a NIC's Ethernet port attached to something outside the [`crate::World`]
//! (a NIC in another process over SimBricks, a SimBricks switch, a QEMU guest, a TAP device)
//! instead of an in-process [`crate::Link`].
//!
//! The world keeps modelling its own side of the wire: frames the NIC transmits are paced at the
//! line rate and pass the fault injector on the world's outbound link (as on an in-process
//! link, but without latency), and the port receives each frame with the instant its last bit
//! left the wire. What happens after that is the port's business:
//!
//! * A **synchronised** port ([`PortTiming::Synchronized`], SimBricks) adds its link latency and
//!   timestamps every frame; frames arriving from the peer carry the instant they reach the NIC,
//!   and are presented from the first cycle starting at or after it, exactly as an in-process
//!   link presents them. The world never steps past the instant up to which the port knows every
//!   frame that can still reach it (conservative synchronisation: [`ExternalPort::receive`]
//!   blocks until the peer's messages cover it), so a run split over processes gives the same
//!   cycles as the one-process run.
//! * A **real-time** port ([`PortTiming::RealTime`], the bridges) exchanges plain frames with the
//!   outside world, which has no notion of simulated time. The world then runs no faster than
//!   wall-clock time, and serialises arriving frames onto an inbound wire of its own (line-rate
//!   pacing, the fault injector) before the NIC sees them.
use std::collections::VecDeque;

use crate::config::{LinkConfig, SimConfig, CYCLE_NS};
use crate::nic::Nic;
use crate::stream::RxFrame;
use crate::wire::{Flying, Link, StartedFrame};
use crate::SimError;

/// ps per clock cycle.
pub(crate) const CYCLE_PS: u64 = CYCLE_NS * 1000;

/// How a port's far side keeps time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PortTiming {
    /// The far side is a simulator in lock step with this world: frames carry timestamps and
    /// [`ExternalPort::receive`] waits until everything due is known. Deterministic.
    Synchronized,
    /// The far side lives in wall-clock time: frames arrive when they arrive, the world is paced
    /// to never run ahead of wall-clock time. Not deterministic.
    RealTime,
}

/// A frame arriving from a port.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortFrame {
    /// Arrival instant at the NIC's receive MAC in ps since cycle 0 (synchronised ports); the
    /// `until_ps` of the [`ExternalPort::receive`] call that returned it (real-time ports).
    pub at_ps: u64,
    /// The frame from the destination MAC address, without FCS.
    pub data: Vec<u8>,
}

/// Counters of a port (what its protocol saw; the world's own wire counters are in
/// [`PortReport`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PortStats {
    /// Frames handed to the far side.
    pub tx_frames: u64,
    /// Bytes of those frames.
    pub tx_bytes: u64,
    /// Frames that could not be handed over (too large for the transport, transport full, far
    /// side gone).
    pub tx_dropped: u64,
    /// Frames received from the far side.
    pub rx_frames: u64,
    /// Bytes of those frames.
    pub rx_bytes: u64,
    /// Malformed messages or frames received and discarded (bad length, unknown type, frames
    /// shorter than an Ethernet header).
    pub rx_malformed: u64,
    /// Synchronisation messages sent (SimBricks).
    pub syncs_sent: u64,
    /// Synchronisation messages received (SimBricks).
    pub syncs_received: u64,
    /// Wall-clock µs spent waiting for the far side (synchronised ports).
    pub wait_us: u64,
    /// The far side said it leaves (SimBricks terminate) or closed its connection.
    pub peer_left: bool,
}

/// The far side of a NIC's Ethernet port when it is not another NIC of the same world.
///
/// The world calls, at the end of every cycle it simulates (or of every window of cycles, see
/// `SimConfig::threads`): [`send`](Self::send) for each frame whose last bit left its outbound
/// wire, then [`advance`](Self::advance) with the instant simulated so far, then
/// [`receive`](Self::receive) for the frames to present from the next cycle on. Times are ps since
/// the world's cycle 0 (1 cycle = 4000 ps).
pub trait ExternalPort: Send {
    /// What the port is attached to, for messages (e.g. `SimBricks listener /tmp/a.sock`).
    fn describe(&self) -> String;

    /// How the far side keeps time.
    fn timing(&self) -> PortTiming;

    /// A frame the NIC transmitted, whose last bit left the world's wire at `at_ps`; calls come
    /// in non-decreasing `at_ps`.
    ///
    /// # Errors
    /// A transport failure that ends the port (the world then detaches it and reports the
    /// error). A frame that merely cannot be carried is dropped and counted instead.
    fn send(&mut self, frame: &[u8], at_ps: u64) -> Result<(), SimError>;

    /// The world has simulated every instant before `now_ps` and sent every frame that left
    /// before it. A synchronised port tells its peer (SimBricks sync message).
    ///
    /// # Errors
    /// As [`send`](Self::send).
    fn advance(&mut self, now_ps: u64) -> Result<(), SimError>;

    /// Appends to `out` the frames that arrive at or before `until_ps`, in arrival order.
    /// Synchronised ports block until they know every such frame (the peer's messages have
    /// passed `until_ps`); real-time ports return what has arrived so far without blocking.
    ///
    /// # Errors
    /// The peer went away without saying so, or sent nothing for longer than the port's
    /// timeout; other transport failures.
    fn receive(&mut self, until_ps: u64, out: &mut Vec<PortFrame>) -> Result<(), SimError>;

    /// The instant before which the port knows every arriving frame now, without blocking (it
    /// reads what the peer has sent so far). The world uses it to choose how many cycles it may
    /// run before it must call [`receive`](Self::receive) again. Real-time ports and peers that
    /// do not synchronise: `u64::MAX` (the default).
    fn horizon_ps(&mut self) -> u64 {
        u64::MAX
    }

    /// Counters.
    fn stats(&self) -> PortStats;

    /// Tells the far side that this end leaves (SimBricks terminate message). Idempotent.
    ///
    /// # Errors
    /// Transport failures (the port is closed anyway).
    fn close(&mut self) -> Result<(), SimError>;
}

/// How a port's outbound wire identifies itself to the fault injector, so that a NIC split off
/// into its own process draws the same faults as in the one-process world.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PortOptions {
    /// Index of the fault RNG stream of the outbound wire: the index the link from this NIC has
    /// in the one-process world (with [`crate::Topology::BackToBack`], NIC `k` transmits on
    /// link `k`). `None`: the NIC's index in this world.
    pub link_index: Option<usize>,
    /// The NIC number that [`crate::FaultConfig::drop_frames`] names for this NIC's frames.
    /// `None`: the NIC's index in this world.
    pub nic_label: Option<usize>,
}

/// Statistics of an attached port.
#[derive(Clone, Debug, PartialEq)]
pub struct PortReport {
    /// The NIC whose port it is.
    pub nic: usize,
    /// [`ExternalPort::describe`].
    pub describe: String,
    /// The world's outbound wire to the port (pacing and faults; `delivered` = handed to the port).
    pub outbound: crate::LinkStats,
    /// The world's inbound wire from a real-time port (pacing and faults of arriving frames).
    pub inbound: Option<crate::LinkStats>,
    /// Frames the outbound wire corrupted: they are discarded instead of being sent, as the far
    /// MAC would discard them on a bad FCS (SimBricks and bridged frames carry no FCS).
    pub corrupt_discarded: u64,
    /// Frames that arrived from a real-time port while its inbound wire already held
    /// [`crate::LinkConfig::tx_fifo_bytes`] × 64 bytes (a switch buffer overflowing), discarded.
    pub inbound_overflow: u64,
    /// The port's own counters.
    pub port: PortStats,
}

/// Longest window a threaded world runs without taking the frames a real-time port received
/// (125 cycles = 500 ns, the default wire latency).
const REALTIME_WINDOW_CYCLES: u64 = 125;

/// Fault-stream offset of a real-time port's inbound wire (distinct from every outbound wire).
const INBOUND_STREAM: usize = 0x4000_0000;

/// The world's side of an attached port: its wires and the frames between them and the port.
pub(crate) struct PortLane {
    pub(crate) port: Box<dyn ExternalPort>,
    pub(crate) timing: PortTiming,
    /// Pacing and faults of the NIC's frames; latency 0 (a synchronised port adds its own).
    pub(crate) out: Link,
    /// Real-time ports: pacing and faults of arriving frames; latency 0.
    pub(crate) inbound: Option<Link>,
    /// Synchronised ports: frames received, not yet due.
    arrivals: VecDeque<PortFrame>,
    /// Frames that left the outbound wire, to hand to the port.
    pub(crate) to_send: Vec<Flying>,
    corrupt_discarded: u64,
    inbound_overflow: u64,
    inbound_cap: usize,
    /// The port failed: it is no longer called; frames to it are lost.
    pub(crate) failed: bool,
    scratch_rx: Vec<PortFrame>,
    scratch_frames: Vec<RxFrame>,
}

impl PortLane {
    pub(crate) fn new(
        nic: usize,
        port: Box<dyn ExternalPort>,
        opts: PortOptions,
        config: &SimConfig,
    ) -> Result<Self, SimError> {
        let timing = port.timing();
        let wire = LinkConfig { latency_ns: 0, ..config.link.clone() };
        let index = opts.link_index.unwrap_or(nic);
        let label = opts.nic_label.unwrap_or(nic);
        let out = Link::with_drop_label(nic, nic, index, label, &wire, &config.faults)?;
        let inbound = match timing {
            PortTiming::RealTime => {
                Some(Link::with_drop_label(nic, nic, INBOUND_STREAM + index, usize::MAX, &wire, &config.faults)?)
            }
            PortTiming::Synchronized => None,
        };
        Ok(Self {
            port,
            timing,
            out,
            inbound,
            arrivals: VecDeque::new(),
            to_send: Vec::new(),
            corrupt_discarded: 0,
            inbound_overflow: 0,
            inbound_cap: config.link.tx_fifo_bytes.saturating_mul(64),
            failed: false,
            scratch_rx: Vec::new(),
            scratch_frames: Vec::new(),
        })
    }

    /// End of cycle `now`, outbound: frames leaving the outbound wire are queued for the port.
    pub(crate) fn end_cycle_out(&mut self, now: u64, started: Option<&mut Vec<StartedFrame>>) {
        self.out.advance_timed(now, started, &mut self.to_send);
    }

    /// End of cycle `now`, inbound: arrivals due by the end of the cycle (already received from
    /// the port) go to the NIC's receiver.
    pub(crate) fn end_cycle_in(&mut self, now: u64, started: Option<&mut Vec<StartedFrame>>, nic: &mut Nic) {
        match &mut self.inbound {
            Some(inbound) => {
                inbound.advance(now, started, &mut self.scratch_frames);
                for f in self.scratch_frames.drain(..) {
                    nic.push_rx(f);
                }
            }
            None => {
                let due = (now + 1) * CYCLE_PS;
                while self.arrivals.front().is_some_and(|f| f.at_ps <= due) {
                    let Some(f) = self.arrivals.pop_front() else {
                        break;
                    };
                    nic.push_rx(RxFrame { data: f.data, bad_fcs: false });
                }
            }
        }
    }

    /// Hands the queued frames to the port and tells it that time reached `now_ps`.
    pub(crate) fn flush(&mut self, now_ps: u64) -> Result<(), SimError> {
        if self.failed {
            self.to_send.clear();
            return Ok(());
        }
        for f in self.to_send.drain(..) {
            if f.frame.bad_fcs {
                // No FCS travels with the frame: discard it as the far MAC would.
                self.corrupt_discarded += 1;
                continue;
            }
            let at = self.out.bits_to_ps(f.deliver_at);
            self.port.send(&f.frame.data, at)?;
        }
        self.port.advance(now_ps)
    }

    /// Cycles from cycle `t` the port lets the world run before it needs news from the peer
    /// (at least 1: the caller then blocks in [`receive`](Self::receive)).
    pub(crate) fn allowed_cycles(&mut self, t: u64) -> u64 {
        if self.failed {
            return u64::MAX;
        }
        if self.timing == PortTiming::RealTime {
            // Frames from outside are taken at least every REALTIME_WINDOW_CYCLES.
            return REALTIME_WINDOW_CYCLES;
        }
        let h = self.port.horizon_ps();
        // The largest w with (t + w) * CYCLE_PS < h.
        (h.saturating_sub(1) / CYCLE_PS).saturating_sub(t).max(1)
    }

    /// Takes the frames that arrive at or before `until_ps` (blocking for synchronised ports); a
    /// real-time port's frames enter the inbound wire as if received in cycle `end_cycle`.
    pub(crate) fn receive(&mut self, until_ps: u64, end_cycle: u64) -> Result<(), SimError> {
        if self.failed {
            return Ok(());
        }
        self.scratch_rx.clear();
        self.port.receive(until_ps, &mut self.scratch_rx)?;
        match &mut self.inbound {
            Some(inbound) => {
                for f in self.scratch_rx.drain(..) {
                    if inbound.fifo_bytes() >= self.inbound_cap {
                        self.inbound_overflow += 1;
                    } else {
                        inbound.push(f.data, end_cycle);
                    }
                }
            }
            None => self.arrivals.extend(self.scratch_rx.drain(..)),
        }
        Ok(())
    }

    pub(crate) fn is_quiet(&self) -> bool {
        self.out.in_flight() == 0
            && self.to_send.is_empty()
            && self.arrivals.is_empty()
            && self.inbound.as_ref().is_none_or(|l| l.in_flight() == 0)
    }

    pub(crate) fn report(&self, nic: usize) -> PortReport {
        PortReport {
            nic,
            describe: self.port.describe(),
            outbound: self.out.stats(),
            inbound: self.inbound.as_ref().map(Link::stats),
            corrupt_discarded: self.corrupt_discarded,
            inbound_overflow: self.inbound_overflow,
            port: self.port.stats(),
        }
    }
}
