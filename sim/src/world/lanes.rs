//! Stepping the NICs of one world on several threads (`SimConfig::threads`).
//!
//! Each NIC is a *lane*: the NIC itself, the transmitting end of its outbound wire, the
//! receiving ends of its inbound wires, its outbox and its external port. Within one cycle the
//! lanes do not interact: a NIC's inputs for cycle *t* come from its own state and from frames
//! that arrived before *t*. Across cycles they interact only through frames on the wires, and a
//! frame that starts serialising at cycle *t* cannot arrive before `t + lookahead` (the wire time
//! of a minimum-size frame plus the link latency: 126 cycles at 100 Gb/s and 500 ns). So the
//! lanes run a *window* of up to `lookahead` cycles on their own; frames that started on a wire
//! during the window wait in a transit list and join the receiving end's queue when the window
//! ends, before anything could be due. Every frame reaches the same receiver at the same cycle in
//! the same order as when the world steps one cycle at a time on one thread, and the capture is
//! written in the same order, so results are identical.
//!
//! External ports bound the window further: a synchronised port lets the world run only up to
//! the instant before which it knows every arriving frame ([`crate::ExternalPort::horizon_ps`]).
use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::Instant;

use super::gang::Gang;
use super::{World, OUTBOX_FRAMES};
use crate::nic::Nic;
use crate::port::{PortLane, CYCLE_PS};
use crate::stream::TxFrame;
use crate::wire::{Flying, RxHalf, StartedFrame, TxHalf};

/// One NIC and the pieces of the world only it touches during a window.
struct Lane<'a> {
    nic: &'a mut Nic,
    tx: Option<(&'a mut TxHalf, &'a mut Vec<Flying>)>,
    rx: Vec<&'a mut RxHalf>,
    outbox: &'a mut VecDeque<TxFrame>,
    outbox_dropped: u64,
    port: Option<&'a mut PortLane>,
    capturing: bool,
    started: Vec<StartedFrame>,
    frames: Vec<TxFrame>,
}

impl Lane<'_> {
    /// One cycle of this NIC, as `World::step_inner` does it for every NIC.
    fn cycle(&mut self, now: u64) {
        if let Some((tx, _)) = &self.tx {
            self.nic.set_tx_ready(tx.tx_ready(self.nic.tx_partial_bytes()));
        } else if let Some(p) = &self.port {
            self.nic.set_tx_ready(p.out.tx_ready(self.nic.tx_partial_bytes()));
        }
        self.nic.cycle();
        self.nic.drain_tx_frames_into(&mut self.frames);
        for f in self.frames.drain(..) {
            if let Some((tx, _)) = &mut self.tx {
                tx.push(f.data, f.end_cycle);
            } else if let Some(p) = &mut self.port {
                p.out.push(f.data, f.end_cycle);
            } else {
                if self.outbox.len() >= OUTBOX_FRAMES {
                    self.outbox.pop_front();
                    self.outbox_dropped += 1;
                }
                self.outbox.push_back(f);
            }
        }
        let started = if self.capturing { Some(&mut self.started) } else { None };
        if let Some((tx, transit)) = &mut self.tx {
            tx.serialise(now, started, |f| transit.push(f));
        }
        for rx in &mut self.rx {
            let boundary = (now + 1) * rx.bits_per_cycle();
            let nic = &mut *self.nic;
            rx.deliver(boundary, |f| nic.push_rx(f.frame));
        }
        if let Some(p) = &mut self.port {
            p.end_cycle_out(now, if self.capturing { Some(&mut self.started) } else { None });
            p.end_cycle_in(now, if self.capturing { Some(&mut self.started) } else { None }, self.nic);
        }
    }
}

impl World {
    /// Steps `k` cycles on the thread pool, in windows.
    pub(super) fn step_windows(&mut self, mut k: u64) {
        while k > 0 {
            let t = self.cycle;
            let mut w = k.min(self.window);
            for p in self.ports.iter_mut().flatten() {
                w = w.min(p.allowed_cycles(t));
            }
            // Frames due in this window's cycles, before it starts: every NIC's frames up to
            // cycle t were sent when the previous window ended.
            let until = (t + w) * CYCLE_PS;
            for i in 0..self.ports.len() {
                let Some(p) = &mut self.ports[i] else {
                    continue;
                };
                if let Err(e) = p.receive(until, t.saturating_sub(1)) {
                    self.fail_port(i, e);
                }
            }
            self.pace_to(t + w);
            self.run_window(t, w);
            self.cycle += w;
            k -= w;
            let now_ps = self.cycle * CYCLE_PS;
            for i in 0..self.ports.len() {
                let Some(p) = &mut self.ports[i] else {
                    continue;
                };
                if let Err(e) = p.flush(now_ps) {
                    self.fail_port(i, e);
                }
            }
        }
    }

    /// Runs cycles `t..t + w` of every lane in parallel, then hands the frames that started on
    /// the wires to their receiving ends and writes the capture.
    fn run_window(&mut self, t: u64, w: u64) {
        let capturing = self.pcap.is_some();
        let mut lanes: Vec<Lane<'_>> = Vec::with_capacity(self.nics.len());
        for ((nic, outbox), port) in self.nics.iter_mut().zip(self.outboxes.iter_mut()).zip(self.ports.iter_mut()) {
            lanes.push(Lane {
                nic,
                tx: None,
                rx: Vec::new(),
                outbox,
                outbox_dropped: 0,
                port: port.as_mut(),
                capturing,
                started: Vec::new(),
                frames: Vec::new(),
            });
        }
        for (link, transit) in self.links.iter_mut().zip(self.transit.iter_mut()) {
            let (from, to) = (link.from, link.to);
            lanes[from].tx = Some((&mut link.tx, transit));
            lanes[to].rx.push(&mut link.rx);
        }
        let threads = self.pool.as_ref().map_or(1, Gang::threads);
        let per = lanes.len().div_ceil(threads);
        let run = |group: &mut [Lane<'_>]| {
            for now in t..t + w {
                for lane in group.iter_mut() {
                    lane.cycle(now);
                }
            }
        };
        let parallel = self.pool.is_some() && lanes.len() > 1 && self.tuner.mode() == 1;
        let t0 = Instant::now();
        match &self.pool {
            Some(gang) if parallel => {
                let groups: Vec<Mutex<&mut [Lane<'_>]>> = lanes.chunks_mut(per).map(Mutex::new).collect();
                gang.run(&|k| {
                    if let Some(g) = groups.get(k) {
                        run(&mut g.lock().unwrap_or_else(std::sync::PoisonError::into_inner));
                    }
                });
            }
            _ => run(&mut lanes),
        }
        self.tuner.record(usize::from(parallel), t0.elapsed().as_nanos() as f64 / w as f64);
        let mut started = Vec::new();
        for lane in &mut lanes {
            self.outbox_dropped += lane.outbox_dropped;
            started.append(&mut lane.started);
        }
        drop(lanes);
        for (link, transit) in self.links.iter_mut().zip(self.transit.iter_mut()) {
            for f in transit.drain(..) {
                link.rx.fly(f);
            }
        }
        if !started.is_empty() {
            self.scratch_started = started;
            self.write_capture();
        }
    }
}

/// Chooses, window by window, between stepping the lanes on the gang and stepping them all on
/// the caller's thread. Handing a one-cycle window to another thread pays off only when a second
/// core is really free; on a machine whose other core is busy it can halve the speed. The
/// results are the same either way (the lanes do not depend on which thread runs them); only
/// the wall time differs, so the tuner keeps the faster schedule: it runs the current one,
/// tries the other for `PROBE` windows out of every `PERIOD`, and keeps whichever costs fewer
/// wall-clock ns per cycle (moving averages).
#[derive(Debug)]
pub(super) struct Tuner {
    /// Moving average of wall ns per simulated cycle: [on the caller, on the gang]; 0 = none yet.
    ns: [f64; 2],
    /// The schedule in use: 0 on the caller, 1 on the gang.
    current: usize,
    windows: u32,
}

impl Default for Tuner {
    fn default() -> Self {
        Self { ns: [0.0; 2], current: 1, windows: 0 }
    }
}

impl Tuner {
    const PERIOD: u32 = 256;
    const PROBE: u32 = 16;

    /// The schedule for the next window (0 on the caller, 1 on the gang).
    fn mode(&self) -> usize {
        if self.windows % Self::PERIOD >= Self::PERIOD - Self::PROBE {
            1 - self.current
        } else {
            self.current
        }
    }

    fn record(&mut self, mode: usize, ns_per_cycle: f64) {
        let e = &mut self.ns[mode];
        *e = if *e == 0.0 { ns_per_cycle } else { 0.9 * *e + 0.1 * ns_per_cycle };
        self.windows = self.windows.wrapping_add(1);
        if self.windows % Self::PERIOD == 0 && self.ns[0] > 0.0 && self.ns[1] > 0.0 {
            self.current = usize::from(self.ns[1] < self.ns[0]);
        }
    }

    /// True when the schedule in use is the gang.
    pub(super) fn on_gang(&self) -> bool {
        self.current == 1
    }
}
