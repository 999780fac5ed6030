//! The world (wires, pcap, host DMA) with scripted Rust NIC cores in place of the RTL, so frame
//! timing and DMA error paths are checked exactly, independently of what the RTL does today.
use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

use pcap_file::pcap::PcapReader;
use pcap_file::{DataLink, TsResolution};
use rnic_sim::ffi::{bytes_to_wide, wide_to_bytes, NicInputs, NicOutputs};
use rnic_sim::{FaultConfig, Iova, NicCore, SimConfig, Topology, World};

/// What a fake core saw.
#[derive(Default, Debug)]
struct Seen {
    /// (cycle of the first beat, frame, tuser on the last beat)
    rx: Vec<(u64, Vec<u8>, bool)>,
    /// (op index, worst response, read data)
    dma: Vec<(usize, u32, Vec<u8>)>,
}

#[derive(Clone, Debug)]
enum DmaOp {
    /// One burst of `data.len() / 64` beats at a 64-byte-aligned address.
    Write { addr: u64, data: Vec<u8> },
    /// One burst of `beats` beats.
    Read { addr: u64, beats: u32 },
}

#[derive(Default, Debug, Clone, Copy, PartialEq)]
enum DmaPhase {
    #[default]
    Idle,
    Addr,
    Data(u32),
    Resp,
}

/// A NIC core that transmits queued frames as fast as `tready` allows, records received frames
/// and runs scripted DMA bursts, following the same cycle contract as the verilated model.
struct FakeNic {
    seen: Rc<RefCell<Seen>>,
    cycle: u64,
    tx: VecDeque<Vec<u8>>,
    tx_off: usize,
    rx_cur: Vec<u8>,
    rx_first: u64,
    ops: VecDeque<DmaOp>,
    op_index: usize,
    phase: DmaPhase,
    worst: u32,
    rdata: Vec<u8>,
}

impl FakeNic {
    fn boxed(tx: Vec<Vec<u8>>, ops: Vec<DmaOp>) -> (Box<dyn NicCore>, Rc<RefCell<Seen>>) {
        let seen = Rc::new(RefCell::new(Seen::default()));
        let core = FakeNic {
            seen: seen.clone(),
            cycle: 0,
            tx: tx.into(),
            tx_off: 0,
            rx_cur: Vec::new(),
            rx_first: 0,
            ops: ops.into(),
            op_index: 0,
            phase: DmaPhase::Idle,
            worst: 0,
            rdata: Vec::new(),
        };
        (Box::new(core), seen)
    }
}

impl NicCore for FakeNic {
    fn cycle(&mut self, i: &NicInputs, o: &mut NicOutputs) {
        let now = self.cycle;
        self.cycle += 1;
        if i.reset == 1 {
            *o = NicOutputs::default();
            return;
        }
        // ---- outputs for this cycle, from state ----
        *o = NicOutputs { m_axi_bready: 1, m_axi_rready: 1, ..NicOutputs::default() };
        if let Some(f) = self.tx.front() {
            let n = (f.len() - self.tx_off).min(64);
            let mut b = [0u8; 64];
            b[..n].copy_from_slice(&f[self.tx_off..self.tx_off + n]);
            bytes_to_wide(&b, &mut o.m_axis_tx_tdata);
            o.m_axis_tx_tkeep = if n == 64 { u64::MAX } else { (1 << n) - 1 };
            o.m_axis_tx_tlast = u32::from(self.tx_off + n == f.len());
            o.m_axis_tx_tvalid = 1;
        }
        if self.phase == DmaPhase::Idle && !self.ops.is_empty() {
            self.phase = DmaPhase::Addr;
            self.worst = 0;
            self.rdata.clear();
        }
        match (self.ops.front(), self.phase) {
            (Some(DmaOp::Write { addr, data }), DmaPhase::Addr) => {
                o.m_axi_awvalid = 1;
                o.m_axi_awaddr = *addr;
                o.m_axi_awlen = (data.len() / 64 - 1) as u32;
                o.m_axi_awsize = 6;
                o.m_axi_awburst = 1;
                o.m_axi_awid = 2;
            }
            (Some(DmaOp::Write { data, .. }), DmaPhase::Data(k)) => {
                let beats = (data.len() / 64) as u32;
                let mut b = [0u8; 64];
                b.copy_from_slice(&data[k as usize * 64..k as usize * 64 + 64]);
                bytes_to_wide(&b, &mut o.m_axi_wdata);
                o.m_axi_wstrb = u64::MAX;
                o.m_axi_wlast = u32::from(k + 1 == beats);
                o.m_axi_wvalid = 1;
            }
            (Some(DmaOp::Read { addr, beats }), DmaPhase::Addr) => {
                o.m_axi_arvalid = 1;
                o.m_axi_araddr = *addr;
                o.m_axi_arlen = beats - 1;
                o.m_axi_arsize = 6;
                o.m_axi_arburst = 1;
                o.m_axi_arid = 1;
            }
            _ => {}
        }
        // ---- rising edge ----
        if o.m_axis_tx_tvalid == 1 && i.m_axis_tx_tready == 1 {
            let n = o.m_axis_tx_tkeep.count_ones() as usize;
            self.tx_off += n;
            if o.m_axis_tx_tlast == 1 {
                self.tx.pop_front();
                self.tx_off = 0;
            }
        }
        if i.s_axis_rx_tvalid == 1 {
            if self.rx_cur.is_empty() {
                self.rx_first = now;
            }
            let mut b = [0u8; 64];
            wide_to_bytes(&i.s_axis_rx_tdata, &mut b);
            self.rx_cur.extend_from_slice(&b[..i.s_axis_rx_tkeep.count_ones() as usize]);
            if i.s_axis_rx_tlast == 1 {
                let f = std::mem::take(&mut self.rx_cur);
                self.seen.borrow_mut().rx.push((self.rx_first, f, i.s_axis_rx_tuser == 1));
            }
        }
        let finished = match (self.ops.front(), self.phase) {
            (Some(DmaOp::Write { .. }), DmaPhase::Addr) if i.m_axi_awready == 1 => {
                self.phase = DmaPhase::Data(0);
                false
            }
            (Some(DmaOp::Write { data, .. }), DmaPhase::Data(k)) if i.m_axi_wready == 1 => {
                self.phase = if k + 1 == (data.len() / 64) as u32 { DmaPhase::Resp } else { DmaPhase::Data(k + 1) };
                false
            }
            (Some(DmaOp::Write { .. }), DmaPhase::Resp) if i.m_axi_bvalid == 1 => {
                assert_eq!(i.m_axi_bid, 2);
                self.worst = i.m_axi_bresp;
                true
            }
            (Some(DmaOp::Read { .. }), DmaPhase::Addr) if i.m_axi_arready == 1 => {
                self.phase = DmaPhase::Resp;
                false
            }
            (Some(DmaOp::Read { .. }), DmaPhase::Resp) if i.m_axi_rvalid == 1 => {
                assert_eq!(i.m_axi_rid, 1);
                self.worst = self.worst.max(i.m_axi_rresp);
                let mut b = [0u8; 64];
                wide_to_bytes(&i.m_axi_rdata, &mut b);
                self.rdata.extend_from_slice(&b);
                i.m_axi_rlast == 1
            }
            _ => false,
        };
        if finished {
            self.ops.pop_front();
            self.seen.borrow_mut().dma.push((self.op_index, self.worst, std::mem::take(&mut self.rdata)));
            self.op_index += 1;
            self.phase = DmaPhase::Idle;
        }
    }
}

fn frame(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| seed.wrapping_add(i as u8)).collect()
}

fn temp_path(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("rnic-sim-{}-{name}", std::process::id()))
}

fn read_pcap(path: &std::path::Path) -> Vec<(u64, Vec<u8>)> {
    let mut r = PcapReader::new(std::fs::File::open(path).unwrap()).unwrap();
    assert_eq!(r.header().datalink, DataLink::ETHERNET);
    assert_eq!(r.header().ts_resolution, TsResolution::NanoSecond);
    let mut v = Vec::new();
    while let Some(p) = r.next_packet() {
        let p = p.unwrap();
        assert_eq!(p.orig_len as usize, p.data.len());
        v.push((p.timestamp.as_nanos() as u64, p.data.into_owned()));
    }
    v
}

#[test]
fn loopback_frames_follow_the_wire_timing_and_are_captured() {
    let frames = vec![frame(1000, 1), frame(1000, 2), frame(1000, 3)];
    let (core, seen) = FakeNic::boxed(frames.clone(), vec![]);
    let cfg = SimConfig::default();
    let mut w = World::with_cores(vec![core], cfg.clone(), Topology::Loopback).unwrap();
    let pcap = temp_path("loopback.pcap");
    w.capture_pcap(&pcap).unwrap();
    // Reset took cycles 0..16; the core sends from cycle 16: 16 beats per frame, back to back.
    assert_eq!(w.cycles(), cfg.reset_cycles);
    w.run_until(|_| seen.borrow().rx.len() == 3, 2000).unwrap();
    w.finish().unwrap();

    // Frame k's last beat is accepted in cycle 16 + 16k + 15, so it is ready at the start of
    // cycle 32 + 16k, i.e. bit (32 + 16k) * 400; the wire is busy 8192 bits per frame.
    let r = 400u64;
    let mut start = 0u64;
    let mut expect_starts = Vec::new();
    let mut expect_rx = Vec::new();
    for k in 0..3u64 {
        let ready = (32 + 16 * k) * r;
        start = ready.max(start);
        expect_starts.push(start / 100);
        let arrive = start + 8192 + 500 * 100;
        expect_rx.push(arrive.div_ceil(r));
        start += 8192;
    }
    let seen = seen.borrow();
    let got_rx: Vec<u64> = seen.rx.iter().map(|x| x.0).collect();
    assert_eq!(got_rx, expect_rx, "first RX beat in the first cycle at or after arrival");
    for (k, (_, data, bad)) in seen.rx.iter().enumerate() {
        assert_eq!(data, &frames[k]);
        assert!(!bad);
    }
    let link = w.stats().links[0];
    assert_eq!((link.from, link.to), (0, 0));
    assert_eq!(link.stats.busy_bits, 3 * 8192);
    assert_eq!(link.busy_ns, 245);

    let captured = read_pcap(&pcap);
    let ts: Vec<u64> = captured.iter().map(|c| c.0).collect();
    assert_eq!(ts, expect_starts);
    assert_eq!(captured.iter().map(|c| c.1.clone()).collect::<Vec<_>>(), frames);
    let _ = std::fs::remove_file(&pcap);
}

#[test]
fn back_to_back_is_full_duplex_and_the_capture_is_in_time_order() {
    let (a, seen_a) = FakeNic::boxed(vec![frame(200, 10), frame(64, 11)], vec![]);
    let (b, seen_b) = FakeNic::boxed(vec![frame(1500, 20)], vec![]);
    let mut w = World::with_cores(vec![a, b], SimConfig::default(), Topology::BackToBack).unwrap();
    let pcap = temp_path("b2b.pcap");
    w.capture_pcap(&pcap).unwrap();
    w.run_until(|_| seen_a.borrow().rx.len() == 1 && seen_b.borrow().rx.len() == 2, 2000).unwrap();
    assert_eq!(w.captured_frames(), 3);
    w.finish().unwrap();
    assert_eq!(seen_a.borrow().rx[0].1, frame(1500, 20));
    assert_eq!(seen_b.borrow().rx[1].1, frame(64, 11));
    let captured = read_pcap(&pcap);
    let ts: Vec<u64> = captured.iter().map(|c| c.0).collect();
    let mut sorted = ts.clone();
    sorted.sort();
    assert_eq!(ts, sorted);
    // NIC 0's first frame (4 beats) is ready at cycle 16 + 4 = 20; NIC 1's (24 beats) at 40.
    assert_eq!(ts[0], 20 * 4);
    assert_eq!(captured[0].1, frame(200, 10));
    let reports = w.link_reports();
    assert_eq!((reports[0].from, reports[0].to, reports[0].stats.frames), (0, 1, 2));
    assert_eq!((reports[1].from, reports[1].to, reports[1].stats.frames), (1, 0, 1));
    let _ = std::fs::remove_file(&pcap);
}

#[test]
fn a_full_transmit_fifo_back_pressures_the_nic() {
    let frames: Vec<Vec<u8>> = (0..80).map(|k| frame(1500, k)).collect();
    let (core, seen) = FakeNic::boxed(frames.clone(), vec![]);
    let mut w = World::with_cores(vec![core], SimConfig::default(), Topology::Loopback).unwrap();
    w.run_until(|_| seen.borrow().rx.len() == 80, 100_000).unwrap();
    let s = w.stats();
    assert!(s.nics[0].tx.stalled_cycles > 0, "tready must have been low");
    let max = s.links[0].stats.max_fifo_bytes;
    // tready is judged before a beat, so the last accepted beat may take it past 16 KiB.
    assert!(max < 16 * 1024 + 64 && max > 12 * 1024, "fifo high-water mark {max}");
    let got: Vec<Vec<u8>> = seen.borrow().rx.iter().map(|x| x.1.clone()).collect();
    assert_eq!(got, frames, "in order, none lost");
    // The wire was the bottleneck: consecutive arrivals are one wire time apart (1524 bytes =
    // 12192 bits = 30.48 cycles), never closer.
    let arrivals: Vec<u64> = seen.borrow().rx.iter().map(|x| x.0).collect();
    for pair in arrivals.windows(2).skip(10) {
        let d = pair[1] - pair[0];
        assert!(d == 30 || d == 31, "gap {d}");
    }
}

#[test]
fn dma_reaches_mapped_buffers_and_unmapped_addresses_get_errors() {
    let mut buf = vec![0u8; 256];
    let payload = frame(128, 7);
    // The IOVAs are deterministic: the first mapping of a world's host is at 0x1_0000_0000.
    let iova = 0x1_0000_0000u64;
    let ops = vec![
        DmaOp::Write { addr: iova + 64, data: payload.clone() },
        DmaOp::Read { addr: iova, beats: 4 },
        DmaOp::Read { addr: 0xDEAD_0000, beats: 2 },
        DmaOp::Write { addr: iova + 4096, data: frame(64, 1) },
    ];
    let (core, seen) = FakeNic::boxed(vec![], ops);
    let mut w = World::with_cores(vec![core], SimConfig::default(), Topology::Unconnected).unwrap();
    // SAFETY: `buf` outlives the world's use of it (unmapped before it is read) and is not
    // touched while the world steps.
    let mapped = unsafe { w.memory_mut(0).unwrap().map_external(buf.as_mut_ptr(), buf.len()) }.unwrap();
    assert_eq!(mapped, Iova(iova));
    w.run_until(|_| seen.borrow().dma.len() == 4, 5000).unwrap();
    w.memory_mut(0).unwrap().unmap(mapped).unwrap();

    let seen = seen.borrow();
    assert_eq!(seen.dma[0].1, 0, "write OKAY");
    assert_eq!(&buf[64..192], &payload[..], "the registered Vec changed in place");
    assert_eq!(&buf[..64], &[0u8; 64][..]);
    assert_eq!(seen.dma[1].1, 0, "read OKAY");
    assert_eq!(&seen.dma[1].2[64..192], &payload[..]);
    assert_eq!(seen.dma[2].1, 3, "unmapped read: DECERR");
    assert_eq!(seen.dma[2].2, vec![0u8; 128], "no data from unmapped space");
    assert_eq!(seen.dma[3].1, 3, "write into the guard page: DECERR");
    let d = w.stats().nics[0].dma;
    assert_eq!(d.errors, 2);
    assert_eq!(d.write_bytes, 128);
    assert_eq!(d.read_bytes, 256);
    assert_eq!(d.protocol_violations, 0);
}

#[test]
fn injected_faults_are_deterministic() {
    let run = |seed: u64| {
        let frames: Vec<Vec<u8>> = (0..30).map(|k| frame(100, k)).collect();
        let (core, seen) = FakeNic::boxed(frames, vec![]);
        let cfg = SimConfig {
            faults: FaultConfig { seed, drop_probability: 0.2, corrupt_probability: 0.2, duplicate_probability: 0.0, ..FaultConfig::default() },
            ..SimConfig::default()
        };
        let mut w = World::with_cores(vec![core], cfg, Topology::Loopback).unwrap();
        w.step_n(3000);
        let rx = seen.borrow().rx.clone();
        (rx, w.stats().links[0].stats)
    };
    let (a, sa) = run(1);
    let (b, _) = run(1);
    assert_eq!(a, b);
    assert_eq!(a.len() as u64, 30 - sa.dropped);
    assert_eq!(a.iter().filter(|x| x.2).count() as u64, sa.corrupted, "corrupted frames carry tuser");
    assert!(sa.dropped > 0 && sa.corrupted > 0);
}

#[test]
fn unconnected_ports_keep_frames_in_an_outbox() {
    let (core, _) = FakeNic::boxed(vec![frame(80, 1)], vec![]);
    let mut w = World::with_cores(vec![core], SimConfig::default(), Topology::Unconnected).unwrap();
    w.step_n(10);
    let out = w.take_tx_frames(0).unwrap();
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].data, frame(80, 1));
    assert_eq!(out[0].end_cycle, 16 + 1);
    w.inject_rx_frame(0, frame(70, 2), true).unwrap();
    w.step_n(3);
    assert_eq!(w.stats().nics[0].rx.bad_fcs_frames, 1);
    assert!(w.is_quiet());
}
