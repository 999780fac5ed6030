//! The host side of the NIC's AXI4 DMA master: an AXI4 slave that serves reads and writes from a
//! [`crate::HostMemory`] (or any other [`DmaMemory`]), with configurable latency, in plain Rust (testable without Verilator).
//!
//! Semantics (see docs/simulator.md):
//! - Bursts: INCR only, `len + 1` beats (1–256) of `2^size` bytes (`size` ≤ 6: 64-byte bus).
//!   The first beat may be unaligned: only the bytes from the address to the end of its
//!   `2^size` block are meaningful (AXI "unaligned transfer"); later beats are aligned.
//! - Reads: up to `dma_max_outstanding_reads` bursts queued (`arready` low when full); data is
//!   returned in request order, one beat per cycle, the first beat `dma_read_latency_cycles` after
//!   the AR handshake. `rid` echoes `arid`.
//! - Writes: AW and W are accepted independently (W beats before their AW are buffered, up to
//!   `dma_write_buffer_beats`); bytes are written under `wstrb` when the beat is accepted; the B
//!   response follows `dma_write_latency_cycles` after the last beat.
//! - Errors: a burst not entirely inside one mapping gets DECERR (reads return zero data) and
//!   touches no memory; a non-INCR burst or `size` > 6 gets SLVERR; writing past the end of an
//!   external buffer (inside its last page) is discarded and answered SLVERR. Each erroneous burst
//!   counts once in [`DmaStats::errors`]. Nothing here panics on any input.
//! - AXI rule breaks that are still served (a burst crossing a 4 KiB boundary, strobes outside
//!   the beat's lanes, `wlast` on the wrong beat, a B/R handshake without a burst) count in
//!   [`DmaStats::protocol_violations`].
//!
//! Handshakes: [`AxiSlave::drive`] sets this side's signals for a cycle from state only;
//! [`AxiSlave::observe`] then sees both sides' values for that cycle and performs every transfer
//! whose valid and ready were both high.
use std::collections::VecDeque;

use crate::config::{SimConfig, BUS_BYTES};
use crate::dma::DmaMemory;
use crate::ffi::{bytes_to_wide, wide_to_bytes, NicInputs, NicOutputs};

/// AXI response OKAY.
pub const RESP_OKAY: u32 = 0;
/// AXI response SLVERR (slave error).
pub const RESP_SLVERR: u32 = 2;
/// AXI response DECERR (decode error: no mapping at the address).
pub const RESP_DECERR: u32 = 3;
/// AXI burst type INCR.
pub const BURST_INCR: u32 = 1;

/// DMA statistics of one NIC's host.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DmaStats {
    /// Meaningful bytes returned by successful read beats.
    pub read_bytes: u64,
    /// Bytes written to host memory (strobed and applied).
    pub write_bytes: u64,
    /// Read bursts accepted (AR handshakes).
    pub read_bursts: u64,
    /// Write bursts accepted (AW handshakes).
    pub write_bursts: u64,
    /// Bursts answered with SLVERR or DECERR.
    pub errors: u64,
    /// AXI protocol rule breaks by the NIC (served anyway where possible).
    pub protocol_violations: u64,
}

/// Parameters of the host's AXI slave, in cycles and counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DmaConfig {
    /// Cycles from AR handshake to the first read beat (at least 1).
    pub read_latency_cycles: u64,
    /// Cycles from the last W beat to the B response (at least 1).
    pub write_latency_cycles: u64,
    /// Read bursts queued before `arready` goes low.
    pub max_outstanding_reads: usize,
    /// Write bursts (accepted, response not yet taken) before `awready` goes low.
    pub max_outstanding_writes: usize,
    /// W beats buffered ahead of their AW before `wready` goes low.
    pub write_buffer_beats: usize,
}

impl From<&SimConfig> for DmaConfig {
    fn from(c: &SimConfig) -> Self {
        Self {
            read_latency_cycles: c.dma_read_latency_cycles,
            write_latency_cycles: c.dma_write_latency_cycles,
            max_outstanding_reads: c.dma_max_outstanding_reads,
            max_outstanding_writes: c.dma_max_outstanding_writes,
            write_buffer_beats: c.dma_write_buffer_beats,
        }
    }
}

impl Default for DmaConfig {
    fn default() -> Self {
        Self::from(&SimConfig::default())
    }
}

/// Geometry of an INCR burst.
#[derive(Clone, Copy, Debug)]
struct Burst {
    addr: u64,
    size: u32,
    beats: u32,
}

impl Burst {
    fn nbytes(&self) -> u64 {
        1u64 << self.size.min(6)
    }
    /// Address of beat `i`: the start address for beat 0, aligned addresses after it.
    fn beat_addr(&self, i: u32) -> u64 {
        if i == 0 {
            self.addr
        } else {
            (self.addr & !(self.nbytes() - 1)).wrapping_add(u64::from(i) * self.nbytes())
        }
    }
    /// Byte lanes `lower..=upper` of beat `i` on the 64-byte bus.
    fn lanes(&self, i: u32) -> (usize, usize) {
        let a = self.beat_addr(i);
        let lower = (a % BUS_BYTES as u64) as usize;
        let upper = ((a & !(self.nbytes() - 1)) % BUS_BYTES as u64) as usize + self.nbytes() as usize - 1;
        (lower, upper.min(BUS_BYTES - 1))
    }
    /// Byte length of `[addr, end of last beat)`, or None on address overflow.
    fn span(&self) -> Option<u64> {
        let end = (self.addr & !(self.nbytes() - 1)).checked_add(u64::from(self.beats) * self.nbytes())?;
        Some(end - self.addr)
    }
    fn crosses_4k(&self) -> bool {
        match self.span() {
            Some(len) => self.addr / 4096 != (self.addr + len - 1) / 4096,
            None => true,
        }
    }
}

/// Checks a burst: its response code if it cannot be served at all.
fn check_burst(mem: &dyn DmaMemory, b: &Burst, burst_type: u32, violations: &mut u64) -> u32 {
    if burst_type != BURST_INCR || b.size > 6 {
        *violations += 1;
        return RESP_SLVERR;
    }
    let Some(span) = b.span() else { return RESP_DECERR };
    if b.crosses_4k() {
        *violations += 1;
    }
    if !mem.is_mapped(b.addr, span) {
        return RESP_DECERR;
    }
    RESP_OKAY
}

#[derive(Debug)]
struct ReadBurst {
    id: u32,
    burst: Burst,
    next: u32,
    ready_at: u64,
    resp: u32,
    error_counted: bool,
}

#[derive(Debug)]
struct WriteBurst {
    id: u32,
    burst: Burst,
    done: u32,
    resp: u32,
    error_counted: bool,
    violation_counted: bool,
}

#[derive(Debug)]
struct WBeat {
    data: [u32; 16],
    strb: u64,
    last: bool,
}

#[derive(Debug)]
struct BResp {
    id: u32,
    resp: u32,
    ready_at: u64,
}

/// The host's AXI4 slave for one NIC. See the module documentation for its semantics.
#[derive(Debug)]
pub struct AxiSlave {
    cfg: DmaConfig,
    reads: VecDeque<ReadBurst>,
    /// The read beat currently presented (data, resp), until its handshake.
    rbeat: Option<([u32; 16], u32)>,
    writes: VecDeque<WriteBurst>,
    wbuf: VecDeque<WBeat>,
    bresps: VecDeque<BResp>,
    stats: DmaStats,
}

impl AxiSlave {
    /// An idle slave.
    pub fn new(cfg: DmaConfig) -> Self {
        Self {
            cfg,
            reads: VecDeque::new(),
            rbeat: None,
            writes: VecDeque::new(),
            wbuf: VecDeque::new(),
            bresps: VecDeque::new(),
            stats: DmaStats::default(),
        }
    }

    /// Statistics since creation.
    pub fn stats(&self) -> DmaStats {
        self.stats
    }

    /// True when no burst is in flight.
    pub fn is_idle(&self) -> bool {
        self.reads.is_empty() && self.writes.is_empty() && self.wbuf.is_empty() && self.bresps.is_empty()
    }

    /// Forgets every burst in flight (the NIC was reset). Memory is unchanged.
    pub fn reset(&mut self) {
        self.reads.clear();
        self.rbeat = None;
        self.writes.clear();
        self.wbuf.clear();
        self.bresps.clear();
    }

    /// Sets the slave's `m_axi_*` inputs of the NIC for cycle `now`, from state only.
    pub fn drive(&mut self, now: u64, mem: &dyn DmaMemory, inp: &mut NicInputs) {
        inp.m_axi_arready = u32::from(self.reads.len() < self.cfg.max_outstanding_reads);
        inp.m_axi_awready = u32::from(self.writes.len() + self.bresps.len() < self.cfg.max_outstanding_writes);
        inp.m_axi_wready = u32::from(self.wbuf.len() < self.cfg.write_buffer_beats);

        inp.m_axi_rvalid = 0;
        if let Some(rb) = self.reads.front_mut() {
            if rb.ready_at <= now {
                if self.rbeat.is_none() {
                    self.rbeat = Some(Self::read_beat(mem, rb, &mut self.stats));
                }
                if let Some((data, resp)) = &self.rbeat {
                    inp.m_axi_rvalid = 1;
                    inp.m_axi_rid = rb.id;
                    inp.m_axi_rdata = *data;
                    inp.m_axi_rresp = *resp;
                    inp.m_axi_rlast = u32::from(rb.next + 1 == rb.burst.beats);
                }
            }
        }

        inp.m_axi_bvalid = 0;
        if let Some(b) = self.bresps.front() {
            if b.ready_at <= now {
                inp.m_axi_bvalid = 1;
                inp.m_axi_bid = b.id;
                inp.m_axi_bresp = b.resp;
            }
        }
    }

    /// Reads the data of the next beat of `rb` from memory.
    fn read_beat(mem: &dyn DmaMemory, rb: &mut ReadBurst, stats: &mut DmaStats) -> ([u32; 16], u32) {
        let mut bytes = [0u8; BUS_BYTES];
        let mut resp = rb.resp;
        if resp == RESP_OKAY {
            let (lower, upper) = rb.burst.lanes(rb.next);
            let n = (upper - lower + 1) as u64;
            // Re-check per beat: the driver may have unmapped the buffer since the AR.
            if mem.dma_read(rb.burst.beat_addr(rb.next), &mut bytes[lower..=upper]) {
                stats.read_bytes += n;
            } else {
                bytes = [0u8; BUS_BYTES];
                resp = RESP_DECERR;
            }
        }
        if resp != RESP_OKAY && !rb.error_counted {
            rb.error_counted = true;
            stats.errors += 1;
        }
        let mut data = [0u32; 16];
        bytes_to_wide(&bytes, &mut data);
        (data, resp)
    }

    /// Performs the transfers of cycle `now`: `inp` holds what [`drive`](Self::drive) set,
    /// `out` what the NIC drove in the same cycle.
    pub fn observe(&mut self, now: u64, mem: &mut dyn DmaMemory, inp: &NicInputs, out: &NicOutputs) {
        // AR
        if out.m_axi_arvalid & 1 == 1 && inp.m_axi_arready == 1 {
            let burst =
                Burst { addr: out.m_axi_araddr, size: out.m_axi_arsize & 7, beats: (out.m_axi_arlen & 0xFF) + 1 };
            let resp = check_burst(mem, &burst, out.m_axi_arburst & 3, &mut self.stats.protocol_violations);
            self.stats.read_bursts += 1;
            self.reads.push_back(ReadBurst {
                id: out.m_axi_arid & 0xF,
                burst,
                next: 0,
                ready_at: now + self.cfg.read_latency_cycles.max(1),
                resp,
                error_counted: false,
            });
        }
        // R
        if inp.m_axi_rvalid == 1 && out.m_axi_rready & 1 == 1 {
            self.rbeat = None;
            if let Some(rb) = self.reads.front_mut() {
                rb.next += 1;
                if rb.next >= rb.burst.beats {
                    self.reads.pop_front();
                }
            }
        }
        // AW
        if out.m_axi_awvalid & 1 == 1 && inp.m_axi_awready == 1 {
            let burst =
                Burst { addr: out.m_axi_awaddr, size: out.m_axi_awsize & 7, beats: (out.m_axi_awlen & 0xFF) + 1 };
            let resp = check_burst(mem, &burst, out.m_axi_awburst & 3, &mut self.stats.protocol_violations);
            self.stats.write_bursts += 1;
            self.writes.push_back(WriteBurst {
                id: out.m_axi_awid & 0xF,
                burst,
                done: 0,
                resp,
                error_counted: false,
                violation_counted: false,
            });
        }
        // W
        if out.m_axi_wvalid & 1 == 1 && inp.m_axi_wready == 1 {
            self.wbuf.push_back(WBeat { data: out.m_axi_wdata, strb: out.m_axi_wstrb, last: out.m_axi_wlast & 1 == 1 });
        }
        // Pair buffered W beats with their bursts, in order.
        while !self.writes.is_empty() && !self.wbuf.is_empty() {
            let (Some(wb), Some(beat)) = (self.writes.front_mut(), self.wbuf.pop_front()) else { break };
            Self::write_beat(mem, wb, &beat, &mut self.stats);
            wb.done += 1;
            if wb.done >= wb.burst.beats {
                if wb.resp != RESP_OKAY && !wb.error_counted {
                    self.stats.errors += 1;
                }
                let b = BResp { id: wb.id, resp: wb.resp, ready_at: now + self.cfg.write_latency_cycles.max(1) };
                self.bresps.push_back(b);
                self.writes.pop_front();
            }
        }
        // B
        if inp.m_axi_bvalid == 1 && out.m_axi_bready & 1 == 1 {
            self.bresps.pop_front();
        }
        // Responses nobody asked for cannot happen from this side; a ready without valid is fine.
    }

    /// Applies one W beat to its burst.
    fn write_beat(mem: &mut dyn DmaMemory, wb: &mut WriteBurst, beat: &WBeat, stats: &mut DmaStats) {
        let i = wb.done;
        let is_last = i + 1 == wb.burst.beats;
        if beat.last != is_last && !wb.violation_counted {
            wb.violation_counted = true;
            stats.protocol_violations += 1;
        }
        if wb.resp != RESP_OKAY {
            return;
        }
        let (lower, upper) = wb.burst.lanes(i);
        let n = upper - lower + 1;
        let lane_mask = if n >= 64 { u64::MAX } else { ((1u64 << n) - 1) << lower };
        if beat.strb & !lane_mask != 0 && !wb.violation_counted {
            wb.violation_counted = true;
            stats.protocol_violations += 1;
        }
        let mask = (beat.strb & lane_mask) >> lower;
        if mask == 0 {
            return;
        }
        let mut bytes = [0u8; BUS_BYTES];
        wide_to_bytes(&beat.data, &mut bytes);
        let addr = wb.burst.beat_addr(i);
        if !mem.is_mapped(addr, n as u64) {
            wb.resp = RESP_DECERR;
            return;
        }
        if !mem.dma_write_masked(addr, &bytes[lower..=upper], mask) {
            wb.resp = RESP_SLVERR;
        }
        // Bytes past an external buffer's end were discarded; count the ones written.
        stats.write_bytes += u64::from(mask.count_ones());
    }
}

#[cfg(test)]
mod tests {
    //! The slave against a scripted Rust master, without Verilator.
    use super::*;
    use crate::host_memory::{HostMemory, Iova};

    /// A minimal AXI4 master: issues one burst at a time and collects responses.
    struct Fake {
        slave: AxiSlave,
        mem: HostMemory,
        now: u64,
        inp: NicInputs,
        out: NicOutputs,
    }

    impl Fake {
        fn new(cfg: DmaConfig) -> Self {
            Self {
                slave: AxiSlave::new(cfg),
                mem: HostMemory::new(),
                now: 0,
                inp: NicInputs::default(),
                out: NicOutputs::default(),
            }
        }
        /// One cycle with the master's signals already in `self.out`.
        fn cycle(&mut self) {
            self.slave.drive(self.now, &self.mem, &mut self.inp);
            self.slave.observe(self.now, &mut self.mem, &self.inp, &self.out);
            self.now += 1;
        }
        /// Reads a burst; returns (beats of bytes, resps, cycle of the AR handshake, cycle of first beat).
        fn read(&mut self, addr: u64, len: u32, size: u32) -> (Vec<[u8; 64]>, Vec<u32>, u64, u64) {
            self.out.m_axi_arvalid = 1;
            self.out.m_axi_araddr = addr;
            self.out.m_axi_arlen = len;
            self.out.m_axi_arsize = size;
            self.out.m_axi_arburst = BURST_INCR;
            self.out.m_axi_arid = 5;
            self.out.m_axi_rready = 1;
            let mut beats = Vec::new();
            let mut resps = Vec::new();
            let (mut ar_at, mut first) = (None, None);
            for _ in 0..10_000 {
                let t = self.now;
                self.slave.drive(t, &self.mem, &mut self.inp);
                let ar_hs = self.out.m_axi_arvalid == 1 && self.inp.m_axi_arready == 1;
                let r_hs = self.inp.m_axi_rvalid == 1;
                self.slave.observe(t, &mut self.mem, &self.inp, &self.out);
                if ar_hs {
                    ar_at = Some(t);
                    self.out.m_axi_arvalid = 0;
                }
                if r_hs {
                    assert_eq!(self.inp.m_axi_rid, 5);
                    first.get_or_insert(t);
                    let mut b = [0u8; 64];
                    wide_to_bytes(&self.inp.m_axi_rdata, &mut b);
                    beats.push(b);
                    resps.push(self.inp.m_axi_rresp);
                    if self.inp.m_axi_rlast == 1 {
                        self.now += 1;
                        return (beats, resps, ar_at.unwrap(), first.unwrap());
                    }
                }
                self.now += 1;
            }
            panic!("read did not finish");
        }
        /// Writes a burst of `beats` (data, strobe); returns (bresp, cycles from last W to B).
        fn write(&mut self, addr: u64, size: u32, beats: &[([u8; 64], u64)]) -> (u32, u64) {
            self.out.m_axi_awvalid = 1;
            self.out.m_axi_awaddr = addr;
            self.out.m_axi_awlen = beats.len() as u32 - 1;
            self.out.m_axi_awsize = size;
            self.out.m_axi_awburst = BURST_INCR;
            self.out.m_axi_awid = 3;
            self.out.m_axi_bready = 1;
            let mut next = 0;
            let mut last_w = 0;
            for _ in 0..10_000 {
                let t = self.now;
                if next < beats.len() {
                    self.out.m_axi_wvalid = 1;
                    bytes_to_wide(&beats[next].0, &mut self.out.m_axi_wdata);
                    self.out.m_axi_wstrb = beats[next].1;
                    self.out.m_axi_wlast = u32::from(next + 1 == beats.len());
                } else {
                    self.out.m_axi_wvalid = 0;
                }
                self.slave.drive(t, &self.mem, &mut self.inp);
                let aw_hs = self.out.m_axi_awvalid == 1 && self.inp.m_axi_awready == 1;
                let w_hs = self.out.m_axi_wvalid == 1 && self.inp.m_axi_wready == 1;
                let b_hs = self.inp.m_axi_bvalid == 1;
                self.slave.observe(t, &mut self.mem, &self.inp, &self.out);
                if aw_hs {
                    self.out.m_axi_awvalid = 0;
                }
                if w_hs {
                    next += 1;
                    last_w = t;
                }
                self.now += 1;
                if b_hs {
                    assert_eq!(self.inp.m_axi_bid, 3);
                    return (self.inp.m_axi_bresp, t - last_w);
                }
            }
            panic!("write did not finish");
        }
    }

    fn pattern(seed: u8) -> [u8; 64] {
        std::array::from_fn(|i| seed.wrapping_add(i as u8))
    }

    #[test]
    fn aligned_burst_round_trip_with_latencies() {
        let cfg = DmaConfig { read_latency_cycles: 64, write_latency_cycles: 32, ..DmaConfig::default() };
        let mut f = Fake::new(cfg);
        let a = f.mem.alloc(4096, 4096).unwrap();
        let beats: Vec<_> = (0..4).map(|i| (pattern(i * 64), u64::MAX)).collect();
        let (bresp, b_lat) = f.write(a.0, 6, &beats);
        assert_eq!(bresp, RESP_OKAY);
        assert_eq!(b_lat, 32);
        let mut back = [0u8; 256];
        f.mem.read(a, &mut back).unwrap();
        assert_eq!(back.to_vec(), (0..=255u8).collect::<Vec<_>>());
        let (data, resps, ar_at, first) = f.read(a.0, 3, 6);
        assert_eq!(first - ar_at, 64, "first beat exactly read_latency cycles after AR");
        assert_eq!(resps, vec![RESP_OKAY; 4]);
        for (i, b) in data.iter().enumerate() {
            assert_eq!(*b, pattern(i as u8 * 64));
        }
        let s = f.slave.stats();
        assert_eq!((s.read_bytes, s.write_bytes, s.errors, s.protocol_violations), (256, 256, 0, 0));
        assert!(f.slave.is_idle());
    }

    #[test]
    fn unaligned_first_beat_and_strobes() {
        let mut f = Fake::new(DmaConfig::default());
        let a = f.mem.alloc(4096, 4096).unwrap();
        f.mem.write(a, &[0xEE; 256]).unwrap();
        // Start at offset 10: beat 0 covers lanes 10..63, beat 1 lanes 0..63 with strobes 0..19.
        let (resp, _) = f.write(a.0 + 10, 6, &[(pattern(0), !0x3FF), (pattern(64), 0xF_FFFF)]);
        assert_eq!(resp, RESP_OKAY);
        let mut back = [0u8; 128];
        f.mem.read(a, &mut back).unwrap();
        assert_eq!(&back[..10], &[0xEE; 10]);
        assert_eq!(&back[10..64], &pattern(0)[10..]);
        assert_eq!(&back[64..84], &pattern(64)[..20]);
        assert_eq!(&back[84..], &[0xEE; 44]);
        assert_eq!(f.slave.stats().write_bytes, 54 + 20);
        assert_eq!(f.slave.stats().protocol_violations, 0);
        // Unaligned read: lanes below the start address are zero.
        let (data, _, _, _) = f.read(a.0 + 10, 1, 6);
        assert_eq!(&data[0][..10], &[0; 10]);
        assert_eq!(&data[0][10..], &back[10..64]);
        assert_eq!(&data[1][..], &back[64..128]);
        assert_eq!(f.slave.stats().read_bytes, 54 + 64);
    }

    #[test]
    fn narrow_beats_use_their_lanes() {
        let mut f = Fake::new(DmaConfig::default());
        let a = f.mem.alloc(64, 64).unwrap();
        // size 2 (4 bytes per beat), 3 beats from offset 8: lanes 8..11, 12..15, 16..19.
        let mut beat = [0u8; 64];
        beat[8..20].copy_from_slice(b"abcdefghijkl");
        let (resp, _) = f.write(a.0 + 8, 2, &[(beat, 0xF << 8), (beat, 0xF << 12), (beat, 0xF << 16)]);
        assert_eq!(resp, RESP_OKAY);
        let mut back = [0u8; 12];
        f.mem.read(a.offset(8), &mut back).unwrap();
        assert_eq!(&back, b"abcdefghijkl");
    }

    #[test]
    fn unmapped_addresses_get_decerr_and_touch_nothing() {
        let mut f = Fake::new(DmaConfig::default());
        let a = f.mem.alloc(4096, 4096).unwrap();
        // Entirely unmapped.
        let (resp, _) = f.write(0x42, 6, &[(pattern(1), u64::MAX)]);
        assert_eq!(resp, RESP_DECERR);
        // Overrunning the mapping into the guard page: nothing written, even the mapped part.
        let (resp, _) = f.write(a.0 + 4096 - 64, 6, &[(pattern(1), u64::MAX), (pattern(2), u64::MAX)]);
        assert_eq!(resp, RESP_DECERR);
        let mut back = [0u8; 64];
        f.mem.read(a.offset(4096 - 64), &mut back).unwrap();
        assert_eq!(back, [0; 64]);
        let (data, resps, _, _) = f.read(u64::MAX - 63, 0, 6);
        assert_eq!(resps, vec![RESP_DECERR]);
        assert_eq!(data[0], [0; 64]);
        let s = f.slave.stats();
        assert_eq!(s.errors, 3);
        assert_eq!(s.write_bytes, 0);
    }

    #[test]
    fn write_past_external_buffer_end_is_discarded() {
        let mut buf = vec![0u8; 100];
        let mut f = Fake::new(DmaConfig::default());
        // SAFETY: `buf` outlives `f` and is only read after the writes.
        let iova = unsafe { f.mem.map_external(buf.as_mut_ptr(), buf.len()) }.unwrap();
        let (resp, _) = f.write(iova.0 + 64, 6, &[(pattern(0), u64::MAX)]);
        assert_eq!(resp, RESP_SLVERR);
        let (resp, _) = f.write(iova.0, 6, &[(pattern(0), u64::MAX)]);
        assert_eq!(resp, RESP_OKAY);
        drop(f);
        assert_eq!(&buf[..64], &pattern(0)[..]);
        assert_eq!(&buf[64..100], &pattern(0)[..36]);
    }

    #[test]
    fn outstanding_reads_are_bounded_and_in_order() {
        let cfg = DmaConfig { max_outstanding_reads: 4, read_latency_cycles: 10, ..DmaConfig::default() };
        let mut f = Fake::new(cfg);
        let a = f.mem.alloc(4096, 4096).unwrap();
        for i in 0..8u8 {
            f.mem.write(a.offset(u64::from(i) * 64), &pattern(i)).unwrap();
        }
        // Issue 8 single-beat reads back to back with rready low: only 4 are accepted.
        f.out.m_axi_rready = 0;
        f.out.m_axi_arburst = BURST_INCR;
        f.out.m_axi_arsize = 6;
        f.out.m_axi_arlen = 0;
        let mut accepted = 0u64;
        for _ in 0..20 {
            f.out.m_axi_arvalid = 1;
            f.out.m_axi_araddr = a.0 + accepted * 64;
            f.slave.drive(f.now, &f.mem, &mut f.inp);
            if f.inp.m_axi_arready == 1 {
                accepted += 1;
            }
            f.slave.observe(f.now, &mut f.mem, &f.inp, &f.out);
            f.now += 1;
        }
        assert_eq!(accepted, 4);
        // Drain: data comes back in order, one beat per cycle.
        f.out.m_axi_arvalid = 0;
        f.out.m_axi_rready = 1;
        let mut got = Vec::new();
        for _ in 0..10 {
            f.slave.drive(f.now, &f.mem, &mut f.inp);
            if f.inp.m_axi_rvalid == 1 {
                let mut b = [0u8; 64];
                wide_to_bytes(&f.inp.m_axi_rdata, &mut b);
                got.push(b);
            }
            f.slave.observe(f.now, &mut f.mem, &f.inp, &f.out);
            f.now += 1;
        }
        assert_eq!(got, (0..4).map(pattern).collect::<Vec<_>>());
        assert!(f.slave.is_idle());
    }

    #[test]
    fn write_data_before_address_is_buffered() {
        let mut f = Fake::new(DmaConfig::default());
        let a = f.mem.alloc(128, 64).unwrap();
        f.out.m_axi_wvalid = 1;
        bytes_to_wide(&pattern(9), &mut f.out.m_axi_wdata);
        f.out.m_axi_wstrb = u64::MAX;
        f.out.m_axi_wlast = 1;
        f.cycle();
        f.out.m_axi_wvalid = 0;
        f.cycle();
        assert_eq!(f.mem.read_u32(a).unwrap(), 0);
        f.out.m_axi_awvalid = 1;
        f.out.m_axi_awaddr = a.0;
        f.out.m_axi_awlen = 0;
        f.out.m_axi_awsize = 6;
        f.out.m_axi_awburst = BURST_INCR;
        f.cycle();
        let mut back = [0u8; 64];
        f.mem.read(Iova(a.0), &mut back).unwrap();
        assert_eq!(back, pattern(9));
    }
}
