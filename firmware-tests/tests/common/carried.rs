//! Two hosts whose NICs have no wire between them (`Topology::Unconnected`): the test carries
//! every frame itself, so it can read, hold, drop, duplicate, reorder, rewrite or invent frames
//! on the way (the requester fuzz and the QP-reuse tests). Carried frames are paced like the
//! 100 Gb/s wire of the simulator (`(max(len, 60) + 24) × 8` bits at 400 bits per cycle) after
//! a latency of [`LATENCY_CYCLES`], in order per direction, so a pass-through carrier behaves
//! like the simulator's own back-to-back cable.
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;

use rnic::sim::SimDevice;
use rnic::{CompletionQueue, Context, PortAddr, ProtectionDomain, WorkCompletion};
use rnic_sim::{SimConfig, Topology, World};

/// Cycles from the moment a frame is taken from a NIC's outbox to the first cycle it can be
/// presented at the other NIC (500 ns, the simulator's default link latency).
pub const LATENCY_CYCLES: u64 = 125;

/// Cycles stepped between two visits of the carrier.
pub const CARRY_EVERY: u64 = 16;

/// The two directions: 0 = from NIC 0 (A) to NIC 1 (B), 1 = from B to A.
pub type Dir = usize;

/// Frames on their way in one direction: (first cycle they may be presented, bytes).
type Transit = VecDeque<(u64, Vec<u8>)>;

/// Decides what becomes of a frame `dir` carries: the frames to deliver instead (none: lost;
/// the frame itself: passed on; several: duplicated or invented).
pub trait Carrier {
    /// Called once per frame a NIC transmitted, in transmission order per NIC.
    fn carry(&mut self, dir: Dir, frame: Vec<u8>) -> Vec<Vec<u8>>;
    /// Called on every visit (every [`CARRY_EVERY`] cycles) with the cycle count: frames to
    /// deliver now that were held back earlier, per direction.
    fn release(&mut self, _now: u64) -> Vec<(Dir, Vec<u8>)> {
        Vec::new()
    }
}

/// Passes every frame on unchanged.
pub struct PassThrough;

impl Carrier for PassThrough {
    fn carry(&mut self, _dir: Dir, frame: Vec<u8>) -> Vec<Vec<u8>> {
        vec![frame]
    }
}

/// Two hosts on an unconnected world: A is NIC 0, B is NIC 1, each with a PD and a 256-entry
/// CQ.
pub struct Carried {
    pub world: Rc<RefCell<World>>,
    pub a: Context,
    pub b: Context,
    pub pa: ProtectionDomain,
    pub pb: ProtectionDomain,
    pub ca: CompletionQueue,
    pub cb: CompletionQueue,
    /// Frames on their way, per direction: (first cycle they may be presented, bytes).
    transit: RefCell<[Transit; 2]>,
    /// Per direction, the cycle at which the modelled wire is free again.
    wire_free: [Cell<u64>; 2],
    /// Frames delivered per direction.
    pub delivered: [Cell<u64>; 2],
}

impl Carried {
    /// Both hosts on an unconnected world built from `cfg` (its link faults do not apply: no
    /// link exists).
    pub fn new(cfg: SimConfig) -> Self {
        let world =
            Rc::new(RefCell::new(World::with_topology(2, cfg, Topology::Unconnected).expect("simulated world")));
        let da = SimDevice::new(Rc::clone(&world), 0).unwrap();
        let db = SimDevice::new(Rc::clone(&world), 1).unwrap();
        let a = Context::open_with_port(da, PortAddr::for_sim_nic(0)).expect("open NIC 0");
        let b = Context::open_with_port(db, PortAddr::for_sim_nic(1)).expect("open NIC 1");
        let (pa, pb) = (a.alloc_pd().unwrap(), b.alloc_pd().unwrap());
        let (ca, cb) = (a.create_cq(256).unwrap(), b.create_cq(256).unwrap());
        Carried {
            world,
            a,
            b,
            pa,
            pb,
            ca,
            cb,
            transit: RefCell::new([VecDeque::new(), VecDeque::new()]),
            wire_free: [Cell::new(0), Cell::new(0)],
            delivered: [Cell::new(0), Cell::new(0)],
        }
    }

    /// The world's clock.
    pub fn now(&self) -> u64 {
        self.world.borrow().cycles()
    }

    /// Takes the frames both NICs transmitted, passes each through `c`, queues what it returns
    /// (and what it releases) on the modelled wire, and presents the frames whose time has come.
    pub fn visit(&self, c: &mut dyn Carrier) {
        let mut w = self.world.borrow_mut();
        let now = w.cycles();
        let mut out: Vec<(Dir, Vec<u8>)> = Vec::new();
        for dir in 0..2 {
            for f in w.take_tx_frames(dir).unwrap() {
                out.extend(c.carry(dir, f.data).into_iter().map(|d| (dir, d)));
            }
        }
        out.extend(c.release(now));
        let mut transit = self.transit.borrow_mut();
        for (dir, data) in out {
            let bits = (data.len().max(60) as u64 + 24) * 8;
            let start = (now + LATENCY_CYCLES).max(self.wire_free[dir].get());
            let end = start + bits.div_ceil(400);
            self.wire_free[dir].set(end);
            transit[dir].push_back((end, data));
        }
        for (dir, q) in transit.iter_mut().enumerate() {
            while q.front().is_some_and(|(t, _)| *t <= now) {
                let (_, data) = q.pop_front().unwrap();
                w.inject_rx_frame(1 - dir, data, false).unwrap();
                self.delivered[dir].set(self.delivered[dir].get() + 1);
            }
        }
    }

    /// Steps the world `cycles` cycles, visiting the carrier every [`CARRY_EVERY`].
    pub fn run(&self, cycles: u64, c: &mut dyn Carrier) {
        let mut left = cycles;
        while left > 0 {
            let n = left.min(CARRY_EVERY);
            self.world.borrow_mut().step_n(n);
            self.visit(c);
            left -= n;
        }
    }

    /// Polls `cq` until `n` completions arrived (taking no more), carrying frames through `c`
    /// meanwhile; returns what arrived when `budget` cycles have passed, even if fewer.
    pub fn poll(&self, cq: &CompletionQueue, n: usize, budget: u64, c: &mut dyn Carrier) -> Vec<WorkCompletion> {
        let mut got = Vec::new();
        let mut wcs = [WorkCompletion::default(); 16];
        let start = self.now();
        while got.len() < n && self.now() - start <= budget {
            let k = cq.poll(&mut wcs[..(n - got.len()).min(16)]).unwrap();
            got.extend_from_slice(&wcs[..k]);
            if k == 0 {
                self.run(CARRY_EVERY, c);
            }
        }
        got
    }

    /// As [`poll`](Self::poll), but panics (with both NICs' counters) if fewer than `n` arrive.
    pub fn wait(
        &self,
        cq: &CompletionQueue,
        n: usize,
        budget: u64,
        c: &mut dyn Carrier,
        what: &str,
    ) -> Vec<WorkCompletion> {
        let got = self.poll(cq, n, budget, c);
        if got.len() < n {
            panic!(
                "{what}: CQ {} returned {} of {n} completions within {budget} cycles: {got:?}\n{}",
                cq.cqn(),
                got.len(),
                self.diag()
            );
        }
        got
    }

    /// The non-zero counters of both NICs, for panic messages.
    pub fn diag(&self) -> String {
        let (ca, cb) = (self.a.counters().unwrap(), self.b.counters().unwrap());
        format!("NIC 0 counters: {:?}\nNIC 1 counters: {:?}", super::nonzero(&ca), super::nonzero(&cb))
    }
}

/// A parsed RoCEv2 frame, split where a lying peer rewrites it: the headers up to the BTH, the
/// BTH fields, the AETH if the opcode carries one, and the bytes after (payload, or the
/// AtomicAckETH of an ATOMIC ACKNOWLEDGE). [`Frame::emit`] builds a frame from it with every
/// length, checksum and the ICRC recomputed, so the NIC parses whatever it says.
#[derive(Clone, Debug)]
pub struct Frame {
    /// Ethernet, IPv4, UDP and BTH (opcode, PSN and the rest) as parsed.
    pub hdr: rnic_firmware_tests::wire::RocePacketRepr,
    /// (syndrome, MSN) of the AETH, when the opcode carries one.
    pub aeth: Option<(u8, u32)>,
    /// The bytes after the BTH and AETH, without pad.
    pub body: Vec<u8>,
}

/// True for the opcodes whose packets carry an AETH: READ RESPONSE FIRST, LAST, ONLY,
/// ACKNOWLEDGE, ATOMIC ACKNOWLEDGE.
pub fn has_aeth(opcode: u8) -> bool {
    matches!(opcode, 0x0D | 0x0F | 0x10 | 0x11 | 0x12)
}

impl Frame {
    /// Parses an RC frame (any opcode our codec or its atomic form reads); `None` otherwise.
    pub fn parse(data: &[u8]) -> Option<Frame> {
        use rnic_firmware_tests::wire::{AtomicPacketRepr, RocePacketRepr};
        let mut hdr = match RocePacketRepr::parse(data) {
            Ok(r) => r,
            Err(_) => {
                let a = AtomicPacketRepr::parse(data).ok()?;
                RocePacketRepr {
                    eth: a.eth,
                    ipv4: a.ipv4,
                    udp: a.udp,
                    bth: a.bth,
                    reth: None,
                    aeth: None,
                    immdt: None,
                    payload: a.ext_bytes(),
                }
            }
        };
        let mut body = std::mem::take(&mut hdr.payload);
        let mut aeth = hdr.aeth.take().map(|a| (a.syndrome, a.msn));
        if aeth.is_none() && has_aeth(hdr.bth.opcode.0) {
            // ATOMIC ACKNOWLEDGE: AETH then AtomicAckETH, both read as payload above.
            let a = body.get(..4)?;
            aeth = Some((a[0], u32::from_be_bytes([0, a[1], a[2], a[3]])));
            body.drain(..4);
        }
        // Other extension headers (RETH, ImmDt) stay in the body of requests.
        if let Some(r) = hdr.reth.take() {
            let mut b = [0u8; 16];
            r.emit(&mut rnic_firmware_tests::wire::RethPacket::new_unchecked(&mut b[..]));
            body.splice(0..0, b);
        }
        if let Some(i) = hdr.immdt.take() {
            let at = if has_reth(hdr.bth.opcode.0) { 16 } else { 0 };
            body.splice(at..at, i.data.to_be_bytes());
        }
        Some(Frame { hdr, aeth, body })
    }

    /// BTH opcode.
    pub fn opcode(&self) -> u8 {
        self.hdr.bth.opcode.0
    }

    /// BTH PSN.
    pub fn psn(&self) -> u32 {
        self.hdr.bth.psn
    }

    /// BTH destination QP.
    pub fn dest_qp(&self) -> u32 {
        self.hdr.bth.dest_qp
    }

    /// Sets the opcode; an AETH is added (syndrome 0x1F, MSN 0) when the new opcode carries one
    /// and the frame has none, and removed when it carries none.
    pub fn set_opcode(&mut self, op: u8) {
        self.hdr.bth.opcode = rnic_firmware_tests::wire::Opcode(op);
        if has_aeth(op) {
            self.aeth.get_or_insert((0x1F, 0));
        } else {
            self.aeth = None;
        }
    }

    /// The frame's bytes: the headers as they are, the AETH (if any) and the body, with every
    /// length, PadCnt, the IPv4 checksum and the ICRC recomputed.
    pub fn emit(&self) -> Vec<u8> {
        let mut r = self.hdr.clone();
        let mut payload = Vec::with_capacity(4 + self.body.len());
        if let Some((s, m)) = self.aeth {
            payload.push(s);
            payload.extend_from_slice(&m.to_be_bytes()[1..]);
        }
        payload.extend_from_slice(&self.body);
        r.reth = None;
        r.aeth = None;
        r.immdt = None;
        r.payload = payload;
        r.emit()
    }
}

/// True for the request opcodes with a RETH (WRITE FIRST, WRITE ONLY (with immediate), READ
/// REQUEST).
pub fn has_reth(opcode: u8) -> bool {
    matches!(opcode, 0x06 | 0x0A | 0x0B | 0x0C)
}

/// PSN `a` is at or before PSN `b` in 24-bit serial order (IBTA Vol 1 9.7.2).
pub fn psn_le(a: u32, b: u32) -> bool {
    b.wrapping_sub(a) & 0xFF_FFFF < 0x80_0000
}

/// The later of `cur` and `p` in 24-bit serial order (`p` if there is no `cur`).
pub fn serial_max(cur: Option<u32>, p: u32) -> Option<u32> {
    Some(match cur {
        Some(c) if psn_le(p, c) => c,
        _ => p,
    })
}

/// A carrier from a closure over the parsed frames of the responder (direction 1, B to A):
/// the frames it returns are emitted again (ICRC recomputed); everything else passes.
pub struct FnCarrier<F: FnMut(Frame) -> Vec<Frame>>(pub F);

impl<F: FnMut(Frame) -> Vec<Frame>> Carrier for FnCarrier<F> {
    fn carry(&mut self, dir: Dir, frame: Vec<u8>) -> Vec<Vec<u8>> {
        match (dir, Frame::parse(&frame)) {
            (1, Some(f)) => (self.0)(f).iter().map(Frame::emit).collect(),
            _ => vec![frame],
        }
    }
}
