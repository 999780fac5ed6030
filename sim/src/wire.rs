//! The Ethernet wire model: one [`Link`] carries frames in one direction from a NIC's transmit
//! MAC to a NIC's receive MAC; a full-duplex cable between two NICs is two links.
//!
//! Timing is exact, counted in bit times of the line rate (at 100 Gb/s one bit = 10 ps, one
//! 4 ns clock cycle = 400 bits):
//! - A frame of N bytes (no FCS) occupies `(max(N, 60) + 24) * 8` bits of wire time: preamble+SFD
//!   8, FCS 4, inter-frame gap 12, short frames padded to the 64-byte minimum.
//! - Store and forward: a frame may start once its last beat has been accepted from the NIC (at
//!   the end of that cycle) and the wire is free; frames never overlap.
//! - It reaches the peer's RX stream at `start + wire time + latency`: from the first cycle that
//!   begins at or after that instant, one beat per cycle, behind any frame still being presented.
//! - Back-pressure: the transmit MAC holds frames not yet started plus the frame being received;
//!   it deasserts `tready` while those bytes reach `tx_fifo_bytes` (16 KiB by default).
//!
//! Faults ([`FaultConfig`]) are decided per frame from a seeded ChaCha8 stream when the frame is
//! queued (drop, corrupt, duplicate, reorder), so a run is reproducible. A reordered frame gets
//! extra latency; frames reach the receiver in order of arrival time (ties keep wire order).
use std::collections::VecDeque;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::config::{FaultConfig, LinkConfig, CYCLE_NS};
use crate::stream::RxFrame;
use crate::SimError;

/// Statistics of one link direction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkStats {
    /// Frames serialised onto the wire (duplicates included).
    pub frames: u64,
    /// Bytes of those frames (no FCS, no padding).
    pub bytes: u64,
    /// Wire time used, in bit times (divide by the rate in Gb/s for ns).
    pub busy_bits: u64,
    /// Frames delivered to the receiver.
    pub delivered: u64,
    /// Frames lost by fault injection.
    pub dropped: u64,
    /// Frames corrupted by fault injection (delivered with bad FCS).
    pub corrupted: u64,
    /// Extra copies created by fault injection.
    pub duplicated: u64,
    /// Frames delayed by fault injection (overtaken by later frames).
    pub reordered: u64,
    /// Most bytes the transmit MAC held at once (frames not yet started), in bytes.
    pub max_fifo_bytes: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    Deliver,
    Drop,
    /// Flip bit `bit` (0..8) of byte `byte`.
    Corrupt {
        byte: usize,
        bit: u8,
    },
}

#[derive(Debug)]
struct Scheduled {
    start: u64,
    end: u64,
    data: Vec<u8>,
    fate: Fate,
    /// A fault-injected copy (not shown in captures).
    copy: bool,
    /// Extra latency from reordering, in bit times (0: none).
    delay_bits: u64,
}

/// A frame that has left the transmit MAC and travels to the receiver: due at `deliver_at`
/// (bit times since cycle 0).
#[derive(Debug)]
pub(crate) struct Flying {
    pub(crate) deliver_at: u64,
    pub(crate) frame: RxFrame,
}

/// A frame that started serialising, as reported to a capture.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StartedFrame {
    /// Start of serialisation in bit times since cycle 0.
    pub start_bits: u64,
    /// Start of serialisation in ns since cycle 0 (rounded down).
    pub start_ns: u64,
    /// Index of the link.
    pub link: usize,
    /// The frame as transmitted.
    pub data: Vec<u8>,
}

/// The transmitting end of a link: the MAC's FIFO, fault decisions and serialisation. Owned by
/// the thread that steps the transmitting NIC.
#[derive(Debug)]
pub(crate) struct TxHalf {
    /// Frames pushed so far, ARP frames not counted (the ordinal of the next one, for scripted
    /// drops).
    pushed: u64,
    /// Which of `FaultConfig::drop_first_matching` already dropped their frame on this link.
    matched: Vec<bool>,
    /// The NIC that `FaultConfig::drop_frames` names for this link's frames.
    drop_label: usize,
    index: usize,
    bits_per_cycle: u64,
    latency_bits: u64,
    rate_gbps: u64,
    overhead_bytes: u64,
    min_frame_bytes: u64,
    fifo_capacity: usize,
    faults: FaultConfig,
    rng: ChaCha8Rng,
    waiting: VecDeque<Scheduled>,
    waiting_bytes: usize,
    free_at: u64,
    stats: LinkStats,
}

/// The receiving end of a link: frames in flight, ordered by arrival. Owned by the thread that
/// steps the receiving NIC.
#[derive(Debug)]
pub(crate) struct RxHalf {
    flying: VecDeque<Flying>,
    delivered: u64,
    bits_per_cycle: u64,
}

/// One direction of an Ethernet link, from NIC `from`'s TX to NIC `to`'s RX.
#[derive(Debug)]
pub struct Link {
    /// Transmitting NIC.
    pub from: usize,
    /// Receiving NIC.
    pub to: usize,
    pub(crate) tx: TxHalf,
    pub(crate) rx: RxHalf,
}

impl Link {
    /// A link from NIC `from` to NIC `to`; `index` distinguishes links (fault RNG stream, pcap).
    ///
    /// # Errors
    /// [`SimError::InvalidArgument`] for a zero rate, a fault probability outside 0–1, or
    /// reordering with a zero `reorder_delay_ns`.
    pub fn new(from: usize, to: usize, index: usize, cfg: &LinkConfig, faults: &FaultConfig) -> Result<Self, SimError> {
        Self::with_drop_label(from, to, index, from, cfg, faults)
    }

    /// As [`new`](Self::new), with the NIC number that [`FaultConfig::drop_frames`] must name to
    /// drop this link's frames given explicitly (`new` uses `from`). A world split over
    /// processes uses it so that a NIC keeps the fault identity it has in the one-process world.
    ///
    /// # Errors
    /// As [`new`](Self::new).
    pub fn with_drop_label(
        from: usize,
        to: usize,
        index: usize,
        drop_label: usize,
        cfg: &LinkConfig,
        faults: &FaultConfig,
    ) -> Result<Self, SimError> {
        if cfg.rate_gbps == 0 || cfg.rate_gbps > 1_000_000 {
            return Err(SimError::InvalidArgument(format!("link rate {} Gb/s", cfg.rate_gbps)));
        }
        for (name, p) in [
            ("drop", faults.drop_probability),
            ("corrupt", faults.corrupt_probability),
            ("duplicate", faults.duplicate_probability),
            ("reorder", faults.reorder_probability),
        ] {
            if !(0.0..=1.0).contains(&p) {
                return Err(SimError::InvalidArgument(format!("{name} probability {p} is not in 0..=1")));
            }
        }
        if faults.reorder_probability > 0.0 && faults.reorder_delay_ns == 0 {
            return Err(SimError::InvalidArgument("reordering needs reorder_delay_ns >= 1".into()));
        }
        let latency_bits = cfg
            .latency_ns
            .checked_mul(cfg.rate_gbps)
            .ok_or_else(|| SimError::InvalidArgument(format!("link latency {} ns", cfg.latency_ns)))?;
        let seed = faults.seed ^ (index as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let tx = TxHalf {
            drop_label,
            index,
            bits_per_cycle: CYCLE_NS * cfg.rate_gbps,
            latency_bits,
            rate_gbps: cfg.rate_gbps,
            overhead_bytes: cfg.overhead_bytes,
            min_frame_bytes: cfg.min_frame_bytes,
            fifo_capacity: cfg.tx_fifo_bytes,
            faults: faults.clone(),
            pushed: 0,
            matched: vec![false; faults.drop_first_matching.len()],
            rng: ChaCha8Rng::seed_from_u64(seed),
            waiting: VecDeque::new(),
            waiting_bytes: 0,
            free_at: 0,
            stats: LinkStats::default(),
        };
        let rx = RxHalf { flying: VecDeque::new(), delivered: 0, bits_per_cycle: tx.bits_per_cycle };
        Ok(Self { from, to, tx, rx })
    }

    /// Bit times per clock cycle (400 at 100 Gb/s).
    pub fn bits_per_cycle(&self) -> u64 {
        self.tx.bits_per_cycle
    }

    /// Wire time of a frame of `len` bytes (no FCS), in bit times.
    pub fn wire_bits(&self, len: usize) -> u64 {
        self.tx.wire_bits(len)
    }

    /// Converts bit times to ns (rounded down).
    pub fn bits_to_ns(&self, bits: u64) -> u64 {
        bits / self.tx.rate_gbps
    }

    /// Converts bit times to ps, rounded up (exact at 1, 2, 4, 5, 8, 10, 20, 25, 40, 50, 100,
    /// 125, 200, 250, 500 and 1000 Gb/s).
    pub fn bits_to_ps(&self, bits: u64) -> u64 {
        (bits * 1000).div_ceil(self.tx.rate_gbps)
    }

    /// Statistics so far.
    pub fn stats(&self) -> LinkStats {
        LinkStats { delivered: self.rx.delivered, ..self.tx.stats }
    }

    /// Bytes held by the transmit MAC: frames queued that have not started serialising.
    pub fn fifo_bytes(&self) -> usize {
        self.tx.waiting_bytes
    }

    /// Frames on the wire or in the receiving MAC, not yet handed to the receiver.
    pub fn in_flight(&self) -> usize {
        self.tx.waiting.len() + self.rx.flying.len()
    }

    /// `tready` for the transmitting NIC's next cycle, given the bytes of the frame it is in the
    /// middle of sending.
    pub fn tx_ready(&self, partial_bytes: usize) -> bool {
        self.tx.tx_ready(partial_bytes)
    }

    /// Queues a frame whose last beat was accepted in cycle `end_cycle`.
    pub fn push(&mut self, data: Vec<u8>, end_cycle: u64) {
        self.tx.push(data, end_cycle);
    }

    /// Advances the link to the end of cycle `now`: frames starting by then leave the transmit
    /// MAC (reported in `started` when capturing), and frames due by then are appended to
    /// `delivered`, to be presented from cycle `now + 1`.
    pub fn advance(&mut self, now: u64, started: Option<&mut Vec<StartedFrame>>, delivered: &mut Vec<RxFrame>) {
        let rx = &mut self.rx;
        self.tx.serialise(now, started, |f| rx.fly(f));
        self.rx.deliver((now + 1) * self.tx.bits_per_cycle, |f| delivered.push(f.frame));
    }

    /// As [`advance`](Self::advance), handing over each delivered frame with its exact arrival
    /// instant in bit times since cycle 0 (for ports that pass frames on with timestamps).
    pub(crate) fn advance_timed(
        &mut self,
        now: u64,
        started: Option<&mut Vec<StartedFrame>>,
        delivered: &mut Vec<Flying>,
    ) {
        let rx = &mut self.rx;
        self.tx.serialise(now, started, |f| rx.fly(f));
        self.rx.deliver((now + 1) * self.tx.bits_per_cycle, |f| delivered.push(f));
    }
}

impl TxHalf {
    fn wire_bits(&self, len: usize) -> u64 {
        ((len as u64).max(self.min_frame_bytes) + self.overhead_bytes) * 8
    }

    pub(crate) fn bits_per_cycle(&self) -> u64 {
        self.bits_per_cycle
    }

    /// The shortest time a frame pushed in a cycle needs to reach the receiver, in bit times:
    /// the wire time of a minimum-size frame plus the latency.
    pub(crate) fn min_transit_bits(&self) -> u64 {
        self.wire_bits(0) + self.latency_bits
    }

    pub(crate) fn tx_ready(&self, partial_bytes: usize) -> bool {
        self.waiting_bytes + partial_bytes < self.fifo_capacity
    }

    pub(crate) fn push(&mut self, data: Vec<u8>, end_cycle: u64) {
        let ready = end_cycle.saturating_add(1).saturating_mul(self.bits_per_cycle);
        let fate = self.decide_fate(&data);
        let duplicate = !self.faults.is_none() && self.rng.gen::<f64>() < self.faults.duplicate_probability;
        let copy = duplicate.then(|| data.clone());
        let delay_bits = self.decide_delay();
        self.schedule(data, ready, fate, false, delay_bits);
        if let Some(c) = copy {
            self.stats.duplicated += 1;
            let delay_bits = self.decide_delay();
            self.schedule(c, ready, Fate::Deliver, true, delay_bits);
        }
    }

    fn decide_fate(&mut self, data: &[u8]) -> Fate {
        let len = data.len();
        // ARP frames (EtherType 0x0806, the NICs' address resolution) do not count, so that a
        // scripted drop names the same frame whether or not ARP ran first.
        let arp = data.get(12..14) == Some(&[0x08, 0x06][..]);
        let ordinal = if arp { u64::MAX } else { self.pushed };
        self.pushed += u64::from(!arp);
        if self.faults.is_none() {
            return Fate::Deliver;
        }
        if self.faults.drop_frames.contains(&(self.drop_label, ordinal)) {
            return Fate::Drop;
        }
        for (k, (nic, offset, bytes)) in self.faults.drop_first_matching.iter().enumerate() {
            if *nic == self.drop_label
                && !self.matched[k]
                && data.get(*offset..offset + bytes.len()) == Some(&bytes[..])
            {
                self.matched[k] = true;
                return Fate::Drop;
            }
        }
        if self.rng.gen::<f64>() < self.faults.drop_probability {
            return Fate::Drop;
        }
        if len > 0 && self.rng.gen::<f64>() < self.faults.corrupt_probability {
            let byte = self.rng.gen_range(0..len);
            let bit = self.rng.gen_range(0..8u8);
            return Fate::Corrupt { byte, bit };
        }
        Fate::Deliver
    }

    /// Extra latency of a reordered frame, in bit times; 0 for most frames.
    fn decide_delay(&mut self) -> u64 {
        if self.faults.reorder_probability > 0.0 && self.rng.gen::<f64>() < self.faults.reorder_probability {
            self.stats.reordered += 1;
            self.rng.gen_range(1..=self.faults.reorder_delay_ns) * self.rate_gbps
        } else {
            0
        }
    }

    fn schedule(&mut self, data: Vec<u8>, ready: u64, fate: Fate, copy: bool, delay_bits: u64) {
        let start = ready.max(self.free_at);
        let end = start + self.wire_bits(data.len());
        self.free_at = end;
        self.waiting_bytes += data.len();
        self.stats.max_fifo_bytes = self.stats.max_fifo_bytes.max(self.waiting_bytes);
        self.waiting.push_back(Scheduled { start, end, data, fate, copy, delay_bits });
    }

    /// Frames starting by the end of cycle `now` leave the transmit MAC: reported in `started`
    /// when capturing, and handed to `fly` (with their arrival time) unless the wire loses them.
    pub(crate) fn serialise(
        &mut self,
        now: u64,
        mut started: Option<&mut Vec<StartedFrame>>,
        mut fly: impl FnMut(Flying),
    ) {
        let boundary = now.saturating_add(1).saturating_mul(self.bits_per_cycle);
        while self.waiting.front().is_some_and(|s| s.start <= boundary) {
            let Some(s) = self.waiting.pop_front() else {
                break;
            };
            self.waiting_bytes -= s.data.len();
            self.stats.frames += 1;
            self.stats.bytes += s.data.len() as u64;
            self.stats.busy_bits += s.end - s.start;
            if let Some(st) = started.as_deref_mut() {
                if !s.copy {
                    st.push(StartedFrame {
                        start_bits: s.start,
                        start_ns: s.start / self.rate_gbps,
                        link: self.index,
                        data: s.data.clone(),
                    });
                }
            }
            let deliver_at = s.end + self.latency_bits + s.delay_bits;
            match s.fate {
                Fate::Drop => self.stats.dropped += 1,
                Fate::Deliver => fly(Flying { deliver_at, frame: RxFrame { data: s.data, bad_fcs: false } }),
                Fate::Corrupt { byte, bit } => {
                    self.stats.corrupted += 1;
                    let mut data = s.data;
                    if let Some(b) = data.get_mut(byte) {
                        *b ^= 1 << bit;
                    }
                    fly(Flying { deliver_at, frame: RxFrame { data, bad_fcs: true } });
                }
            }
        }
    }
}

impl RxHalf {
    pub(crate) fn bits_per_cycle(&self) -> u64 {
        self.bits_per_cycle
    }

    /// Puts a frame in flight, behind every frame that arrives no later than it.
    pub(crate) fn fly(&mut self, f: Flying) {
        let at = self.flying.partition_point(|g| g.deliver_at <= f.deliver_at);
        self.flying.insert(at, f);
    }

    /// Hands every frame due at or before `boundary` (bit times) to `out`, in arrival order.
    pub(crate) fn deliver(&mut self, boundary: u64, mut out: impl FnMut(Flying)) {
        while self.flying.front().is_some_and(|f| f.deliver_at <= boundary) {
            let Some(f) = self.flying.pop_front() else {
                break;
            };
            self.delivered += 1;
            out(f);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link() -> Link {
        Link::new(0, 1, 0, &LinkConfig::default(), &FaultConfig::default()).unwrap()
    }

    /// Runs the link until `n` frames were delivered; returns (cycle of delivery, started frames).
    fn run(l: &mut Link, until: u64) -> (Vec<(u64, RxFrame)>, Vec<StartedFrame>) {
        let mut got = Vec::new();
        let mut started = Vec::new();
        for now in 0..until {
            let mut d = Vec::new();
            l.advance(now, Some(&mut started), &mut d);
            got.extend(d.into_iter().map(|f| (now + 1, f)));
        }
        (got, started)
    }

    #[test]
    fn a_1000_byte_frame_takes_20_48_cycles_of_wire_time() {
        let mut l = link();
        assert_eq!(l.wire_bits(1000), 1024 * 8);
        assert_eq!(l.wire_bits(10), 84 * 8, "short frames padded to 60 bytes + 24 overhead");
        l.push(vec![0; 1000], 9);
        let (got, started) = run(&mut l, 400);
        // Ready at the end of cycle 9 = bit 4000; wire time 8192 bits = 20.48 cycles.
        assert_eq!(started[0].start_bits, 4000);
        assert_eq!(started[0].start_ns, 40);
        assert_eq!(l.stats().busy_bits, 8192);
        assert_eq!(l.bits_to_ns(l.stats().busy_bits), 81);
        // Delivered at 4000 + 8192 + 500 ns * 100 = 62192 bits = cycle 155.48 -> cycle 156.
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].0, 156);
    }

    #[test]
    fn back_to_back_frames_do_not_overlap_and_time_is_exact() {
        let mut l = link();
        for _ in 0..3 {
            l.push(vec![0; 1000], 0);
        }
        let (got, started) = run(&mut l, 400);
        let starts: Vec<u64> = started.iter().map(|s| s.start_bits).collect();
        assert_eq!(starts, vec![400, 400 + 8192, 400 + 2 * 8192]);
        let cycles: Vec<u64> = got.iter().map(|g| g.0).collect();
        // (400 + k*8192 + 8192 + 50000) / 400, rounded up.
        assert_eq!(cycles, vec![147, 167, 188]);
        assert_eq!(l.stats().frames, 3);
        assert_eq!(l.stats().busy_bits, 3 * 8192);
    }

    #[test]
    fn latency_is_configurable() {
        let cfg = LinkConfig { latency_ns: 0, ..LinkConfig::default() };
        let mut l = Link::new(0, 1, 0, &cfg, &FaultConfig::default()).unwrap();
        l.push(vec![1; 60], 0);
        let (got, _) = run(&mut l, 10);
        // 400 + 84*8 = 1072 bits -> cycle 2.68 -> 3.
        assert_eq!(got[0].0, 3);
    }

    #[test]
    fn fifo_back_pressure() {
        let mut l = link();
        assert!(l.tx_ready(16 * 1024 - 1));
        assert!(!l.tx_ready(16 * 1024));
        for i in 0..20 {
            l.push(vec![0; 1000], i);
        }
        // Nothing has started yet (no advance): 20 000 bytes held.
        assert!(!l.tx_ready(0));
        let mut d = Vec::new();
        l.advance(0, None, &mut d);
        assert_eq!(l.fifo_bytes(), 19_000);
        // Frame k starts at 400 + 8192k bits; after cycle 100 (bit 40400), frames 0..=4 started.
        l.advance(100, None, &mut d);
        assert_eq!(l.fifo_bytes(), 15_000);
        assert!(l.tx_ready(0));
        assert_eq!(l.stats().max_fifo_bytes, 20_000);
    }

    #[test]
    fn faults_are_seeded_and_counted() {
        let faults = FaultConfig {
            seed: 7,
            drop_probability: 0.3,
            corrupt_probability: 0.3,
            duplicate_probability: 0.1,
            ..FaultConfig::default()
        };
        let outcome = |seed: u64| {
            let mut l = Link::new(0, 1, 0, &LinkConfig::default(), &FaultConfig { seed, ..faults.clone() }).unwrap();
            for i in 0..200u64 {
                l.push(vec![i as u8; 100], i * 10);
            }
            let (got, _) = run(&mut l, 5000);
            (got, l.stats())
        };
        let (a, sa) = outcome(7);
        let (b, sb) = outcome(7);
        let (_, sc) = outcome(8);
        assert_eq!(a, b);
        assert_eq!(sa, sb);
        assert_ne!(sa, sc);
        assert!(sa.dropped > 20 && sa.corrupted > 20 && sa.duplicated > 5, "{sa:?}");
        assert_eq!(sa.delivered, 200 + sa.duplicated - sa.dropped);
        let bad = a.iter().filter(|(_, f)| f.bad_fcs).count() as u64;
        assert_eq!(bad, sa.corrupted);
        for (_, f) in a.iter().filter(|(_, f)| f.bad_fcs) {
            // Sent frames were one repeated byte: a corrupted one has exactly two distinct values.
            let orig = f.data.iter().copied().fold([0u32; 256], |mut h, x| {
                h[x as usize] += 1;
                h
            });
            assert_eq!(orig.iter().filter(|&&c| c > 0).count(), 2, "exactly one byte changed");
            assert!(orig.contains(&1), "exactly one byte changed");
        }
    }

    #[test]
    fn reordered_frames_are_overtaken_and_nothing_is_lost() {
        // 300 frames of 1000 bytes, back to back (one every ~82 ns of wire time), 20 % of
        // them delayed by up to 1000 ns.
        let faults =
            FaultConfig { seed: 3, reorder_probability: 0.2, reorder_delay_ns: 1000, ..FaultConfig::default() };
        let mut l = Link::new(0, 1, 0, &LinkConfig::default(), &faults).unwrap();
        for i in 0..300u64 {
            let mut f = vec![0u8; 1000];
            f[..8].copy_from_slice(&i.to_le_bytes());
            l.push(f, i * 20);
        }
        let (got, started) = run(&mut l, 20_000);
        let order: Vec<u64> = got.iter().map(|(_, f)| u64::from_le_bytes(f.data[..8].try_into().unwrap())).collect();
        let s = l.stats();
        assert!(s.reordered > 30, "{s:?}");
        assert_eq!(s.delivered, 300);
        // Every frame arrives exactly once, some out of order; captures keep wire order.
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..300).collect::<Vec<_>>());
        let inversions = order.windows(2).filter(|w| w[0] > w[1]).count();
        assert!(inversions > 10, "only {inversions} frames overtaken");
        let wire: Vec<u64> = started.iter().map(|f| u64::from_le_bytes(f.data[..8].try_into().unwrap())).collect();
        assert_eq!(wire, (0..300).collect::<Vec<_>>());
        // No frame is late by more than the configured delay plus its queueing.
        for (cycle, f) in &got {
            let i = u64::from_le_bytes(f.data[..8].try_into().unwrap());
            assert!(*cycle <= started[i as usize].start_ns / 4 + 1000 / 4 + 400, "frame {i} at cycle {cycle}");
        }
    }

    #[test]
    fn reordering_needs_a_delay() {
        let f = FaultConfig { reorder_probability: 0.1, reorder_delay_ns: 0, ..FaultConfig::default() };
        assert!(Link::new(0, 1, 0, &LinkConfig::default(), &f).is_err());
        let f = FaultConfig { reorder_probability: 1.1, ..FaultConfig::default() };
        assert!(Link::new(0, 1, 0, &LinkConfig::default(), &f).is_err());
    }

    #[test]
    fn scripted_drops_hit_exactly_the_named_frames_of_the_named_sender() {
        let faults = FaultConfig { drop_frames: vec![(0, 3), (0, 5), (1, 0)], ..FaultConfig::default() };
        let mut l = Link::new(0, 1, 0, &LinkConfig::default(), &faults).unwrap();
        for i in 0..8u64 {
            l.push(vec![i as u8; 100], i * 10);
            if i == 1 {
                // An ARP frame between them is not counted, and not dropped.
                let mut arp = vec![0xAA; 60];
                arp[12..14].copy_from_slice(&[0x08, 0x06]);
                l.push(arp, i * 10 + 5);
            }
        }
        let (got, _) = run(&mut l, 5000);
        let firsts: Vec<u8> = got.iter().map(|(_, f)| f.data[0]).collect();
        assert_eq!(firsts, vec![0, 1, 0xAA, 2, 4, 6, 7]);
        assert_eq!(l.stats().dropped, 2);
    }

    #[test]
    fn a_drop_by_content_takes_the_first_matching_frame_of_its_sender_only() {
        // Frames 2 and 5 carry the pattern at offset 20; NIC 1's rule names another sender.
        let faults = FaultConfig {
            drop_first_matching: vec![(0, 20, vec![0x5A, 0xA5]), (1, 0, vec![3])],
            ..FaultConfig::default()
        };
        let mut l = Link::new(0, 1, 0, &LinkConfig::default(), &faults).unwrap();
        for i in 0..7u64 {
            let mut f = vec![i as u8; 100];
            if i == 2 || i == 5 {
                f[20..22].copy_from_slice(&[0x5A, 0xA5]);
            }
            l.push(f, i * 10);
        }
        let (got, _) = run(&mut l, 5000);
        let firsts: Vec<u8> = got.iter().map(|(_, f)| f.data[0]).collect();
        assert_eq!(firsts, vec![0, 1, 3, 4, 5, 6]);
        assert_eq!(l.stats().dropped, 1);
    }

    #[test]
    fn bad_parameters_are_errors() {
        assert!(
            Link::new(0, 1, 0, &LinkConfig { rate_gbps: 0, ..LinkConfig::default() }, &FaultConfig::default()).is_err()
        );
        let f = FaultConfig { drop_probability: 1.5, ..FaultConfig::default() };
        assert!(Link::new(0, 1, 0, &LinkConfig::default(), &f).is_err());
        let f = FaultConfig { drop_probability: f64::NAN, ..FaultConfig::default() };
        assert!(Link::new(0, 1, 0, &LinkConfig::default(), &f).is_err());
    }
}
