//! The world (wires, pcap, host DMA) with scripted Rust NIC cores in place of the RTL, so frame
//! timing and DMA error paths are checked exactly, independently of what the RTL does today.
mod common;

use common::{frame, DmaOp, FakeNic};
use pcap_file::pcap::PcapReader;
use pcap_file::{DataLink, TsResolution};
use rnic_sim::{FaultConfig, Iova, SimConfig, Topology, World};

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
    w.run_until(|_| seen.lock().unwrap().rx.len() == 3, 2000).unwrap();
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
    let seen = seen.lock().unwrap();
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
    w.run_until(|_| seen_a.lock().unwrap().rx.len() == 1 && seen_b.lock().unwrap().rx.len() == 2, 2000).unwrap();
    assert_eq!(w.captured_frames(), 3);
    w.finish().unwrap();
    assert_eq!(seen_a.lock().unwrap().rx[0].1, frame(1500, 20));
    assert_eq!(seen_b.lock().unwrap().rx[1].1, frame(64, 11));
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
    w.run_until(|_| seen.lock().unwrap().rx.len() == 80, 100_000).unwrap();
    let s = w.stats();
    assert!(s.nics[0].tx.stalled_cycles > 0, "tready must have been low");
    let max = s.links[0].stats.max_fifo_bytes;
    // tready is judged before a beat, so the last accepted beat may take it past 16 KiB.
    assert!(max < 16 * 1024 + 64 && max > 12 * 1024, "fifo high-water mark {max}");
    let got: Vec<Vec<u8>> = seen.lock().unwrap().rx.iter().map(|x| x.1.clone()).collect();
    assert_eq!(got, frames, "in order, none lost");
    // The wire was the bottleneck: consecutive arrivals are one wire time apart (1524 bytes =
    // 12192 bits = 30.48 cycles), never closer.
    let arrivals: Vec<u64> = seen.lock().unwrap().rx.iter().map(|x| x.0).collect();
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
    w.run_until(|_| seen.lock().unwrap().dma.len() == 4, 5000).unwrap();
    w.memory_mut(0).unwrap().unmap(mapped).unwrap();

    let seen = seen.lock().unwrap();
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
            faults: FaultConfig {
                seed,
                drop_probability: 0.2,
                corrupt_probability: 0.2,
                duplicate_probability: 0.0,
                ..FaultConfig::default()
            },
            ..SimConfig::default()
        };
        let mut w = World::with_cores(vec![core], cfg, Topology::Loopback).unwrap();
        w.step_n(3000);
        let rx = seen.lock().unwrap().rx.clone();
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
