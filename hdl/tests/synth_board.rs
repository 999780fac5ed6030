//! The U250 board shell (`hdl/src/board`) elaborates: yosys passes the synthesis check on it
//! with the vendor IP stubbed, and its Verilog lints clean in Verilator like the core's.
use rnic_hdl::board;

use std::path::{Path, PathBuf};
use std::process::Command;

/// Generates the board's Verilog on a thread with a 64 MiB stack: rust-hdl's generator
/// recurses through every block level, and the board (shell → core → engines → sub-blocks)
/// outgrew a test thread's default 2 MiB once the core gained its atomics and counter blocks
/// (stack overflow in a fresh-clone CI run; `rnic-hdl-gen` runs on the 8 MiB main thread).
fn generate_board(dir: &Path) -> Vec<PathBuf> {
    let dir = dir.to_path_buf();
    std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(move || board::generate(&dir).expect("generate the board"))
        .unwrap()
        .join()
        .unwrap()
}

fn work_dir(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn board_passes_the_synthesis_check() {
    let dir = work_dir("synth_board");
    generate_board(&dir.join("verilog"));
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/synth.sh");
    let out = Command::new("bash")
        .arg(&script)
        .args(["--check", "--verilog"])
        .arg(dir.join("verilog"))
        .arg("--out")
        .arg(dir.join("out"))
        .output()
        .expect("run scripts/synth.sh");
    let log = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "board fails the synthesis check:\n{log}");
}

#[test]
fn board_lints_clean_in_verilator() {
    let dir = work_dir("synth_board_lint");
    let files = generate_board(&dir);
    // The same waivers as scripts/lint-verilog.sh, for the same rust-hdl reasons.
    let out = Command::new("verilator")
        .args(["--lint-only", "-Wall", "-Wno-WIDTH", "-Wno-DECLFILENAME", "-Wno-UNUSED"])
        .args(["-Wno-UNOPTFLAT", "-DRNIC_STUB_VENDOR_IP", "--top-module", "top"])
        .args(&files)
        .output()
        .expect("run verilator (scripts/setup.sh installs it)");
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "verilator lint:\n{log}");
}

// ---- behaviour of our board HDL in rust-hdl's simulator (two clocks where it matters) ----

use board::bar0::Bar0Bridge;
use board::cdc::{MacRxCdc, MacTxCdc};
use rust_hdl::prelude::*;

/// Half periods in ps: core 250 MHz, MAC 322.265625 MHz.
const CORE_HALF: u64 = 2000;
const MAC_HALF: u64 = 1552;

/// Deterministic xorshift, so a failure replays.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

fn beat_tag(frame: usize, beat: usize) -> u64 {
    ((frame as u64) << 16) | beat as u64
}

#[derive(LogicBlock, Default)]
struct TxBench {
    pub core_clock: Signal<In, Clock>,
    pub mac_clock: Signal<In, Clock>,
    pub dut: MacTxCdc,
}

impl Logic for TxBench {
    #[hdl_gen]
    fn update(&mut self) {
        self.dut.core_clock.next = self.core_clock.val();
        self.dut.mac_clock.next = self.mac_clock.val();
    }
}

/// Frames written with random stalls mid-frame (DMA waits) leave the MAC side whole, in order
/// and without a gap once started (a gap would be a CMAC underflow), under random `tready`.
#[test]
fn tx_cdc_forwards_whole_frames_without_gaps() {
    let lens: Vec<usize> = {
        let mut r = Rng(7);
        (0..24).map(|_| 1 + (r.next() % 66) as usize).collect()
    };
    let expect = lens.clone();
    let mut uut = TxBench::default();
    for s in [&mut uut.dut.s_tvalid, &mut uut.dut.s_tlast, &mut uut.dut.core_reset] {
        s.connect();
    }
    uut.dut.s_tdata.connect();
    uut.dut.s_tkeep.connect();
    uut.dut.mac_reset.connect();
    uut.dut.m_tready.connect();
    uut.connect_all();
    let mut sim = Simulation::new();
    sim.add_clock(CORE_HALF, |x: &mut Box<TxBench>| x.core_clock.next = !x.core_clock.val());
    sim.add_clock(MAC_HALF, |x: &mut Box<TxBench>| x.mac_clock.next = !x.mac_clock.val());
    sim.add_testbench(move |mut sim: Sim<TxBench>| {
        let mut x = sim.init()?;
        let mut r = Rng(11);
        wait_clock_true!(sim, core_clock, x);
        for (f, &len) in lens.iter().enumerate() {
            let mut b = 0;
            while b < len {
                if r.chance(30) {
                    x.dut.s_tvalid.next = false;
                    wait_clock_cycle!(sim, core_clock, x);
                    continue;
                }
                x.dut.s_tvalid.next = true;
                x.dut.s_tdata.next = beat_tag(f, b).to_bits();
                x.dut.s_tkeep.next = u64::MAX.to_bits();
                x.dut.s_tlast.next = b + 1 == len;
                let taken = x.dut.s_tready.val();
                wait_clock_cycle!(sim, core_clock, x);
                if taken {
                    b += 1;
                }
            }
        }
        x.dut.s_tvalid.next = false;
        sim.done(x)
    });
    sim.add_testbench(move |mut sim: Sim<TxBench>| {
        let mut x = sim.init()?;
        let mut r = Rng(13);
        wait_clock_true!(sim, mac_clock, x);
        let mut frame = 0usize;
        let mut beat = 0usize;
        while frame < expect.len() {
            let ready = !r.chance(20);
            x.dut.m_tready.next = ready;
            // Mid-frame, valid must never drop.
            sim_assert!(sim, beat == 0 || x.dut.m_tvalid.val(), x);
            if ready && x.dut.m_tvalid.val() {
                let tag = x.dut.m_tdata.val().get_bits::<32>(0).to_u64();
                sim_assert_eq!(sim, tag, beat_tag(frame, beat), x);
                let last = x.dut.m_tlast.val();
                sim_assert_eq!(sim, last, beat + 1 == expect[frame], x);
                beat += 1;
                if last {
                    frame += 1;
                    beat = 0;
                }
            }
            wait_clock_cycle!(sim, mac_clock, x);
        }
        sim.done(x)
    });
    sim.run(Box::new(uut), 40_000_000).unwrap();
}

#[derive(LogicBlock, Default)]
struct RxBench {
    pub core_clock: Signal<In, Clock>,
    pub mac_clock: Signal<In, Clock>,
    pub dut: MacRxCdc,
}

impl Logic for RxBench {
    #[hdl_gen]
    fn update(&mut self) {
        self.dut.core_clock.next = self.core_clock.val();
        self.dut.mac_clock.next = self.mac_clock.val();
    }
}

/// MAC-clock cycles a frame of `beats` 64-byte beats occupies on a 100 Gb/s wire (plus FCS,
/// preamble and inter-frame gap, 24 bytes): the CMAC cannot deliver frames faster than this.
fn wire_cycles(beats: usize) -> usize {
    ((64 * beats + 24) as f64 * 8.0 * 322.265625 / 100_000.0).ceil() as usize
}

/// Runs MacRxCdc with the MAC writing `lens` frames at 100G line rate (each frame's beats back
/// to back, then idle until the wire time is used up, plus random extra idle) and returns the
/// frames the core side saw, as (frame, beats, tuser).
fn rx_run(lens: Vec<usize>, core_half: u64) -> Vec<(usize, usize, bool)> {
    let mut uut = RxBench::default();
    uut.dut.s_tdata.connect();
    uut.dut.s_tkeep.connect();
    uut.dut.s_tlast.connect();
    uut.dut.s_tuser.connect();
    uut.dut.s_tvalid.connect();
    uut.dut.mac_reset.connect();
    uut.connect_all();
    let n = lens.len();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen_tb = seen.clone();
    let mac_done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mac_done_tb = mac_done.clone();
    let mut sim = Simulation::new();
    sim.add_clock(core_half, |x: &mut Box<RxBench>| x.core_clock.next = !x.core_clock.val());
    sim.add_clock(MAC_HALF, |x: &mut Box<RxBench>| x.mac_clock.next = !x.mac_clock.val());
    sim.add_testbench(move |mut sim: Sim<RxBench>| {
        let mut x = sim.init()?;
        let mut r = Rng(17);
        wait_clock_true!(sim, mac_clock, x);
        for (f, &len) in lens.iter().enumerate() {
            for b in 0..len {
                x.dut.s_tvalid.next = true;
                x.dut.s_tdata.next = beat_tag(f, b).to_bits();
                x.dut.s_tkeep.next = u64::MAX.to_bits();
                x.dut.s_tlast.next = b + 1 == len;
                x.dut.s_tuser.next = b + 1 == len && f % 5 == 0;
                wait_clock_cycle!(sim, mac_clock, x);
            }
            x.dut.s_tvalid.next = false;
            for _ in len..wire_cycles(len) {
                wait_clock_cycle!(sim, mac_clock, x);
            }
            while r.chance(30) {
                wait_clock_cycle!(sim, mac_clock, x);
            }
        }
        mac_done_tb.store(true, std::sync::atomic::Ordering::SeqCst);
        sim.done(x)
    });
    sim.add_testbench(move |mut sim: Sim<RxBench>| {
        let mut x = sim.init()?;
        wait_clock_true!(sim, core_clock, x);
        // Each frame must arrive whole: beats 0..len of one frame, nothing glued to it.
        let (mut cur, mut beats, mut idle) = (None::<usize>, 0usize, 0usize);
        while idle < 400 || !mac_done.load(std::sync::atomic::Ordering::SeqCst) {
            if x.dut.m_tvalid.val() {
                idle = 0;
                let tag = x.dut.m_tdata.val().get_bits::<32>(0).to_u64();
                let (f, b) = ((tag >> 16) as usize, (tag & 0xFFFF) as usize);
                sim_assert!(sim, f < n, x);
                if cur.is_none() {
                    cur = Some(f);
                }
                sim_assert_eq!(sim, Some(f), cur, x);
                sim_assert_eq!(sim, b, beats, x);
                beats += 1;
                if x.dut.m_tlast.val() {
                    seen_tb.lock().unwrap().push((f, beats, x.dut.m_tuser.val()));
                    cur = None;
                    beats = 0;
                }
            } else {
                idle += 1;
            }
            wait_clock_cycle!(sim, core_clock, x);
        }
        sim.done(x)
    });
    sim.run(Box::new(uut), 200_000_000).unwrap();
    let v = seen.lock().unwrap().clone();
    v
}

#[test]
fn rx_cdc_delivers_every_frame_whole_at_core_speed() {
    let mut r = Rng(5);
    let lens: Vec<usize> = (0..30).map(|_| 1 + (r.next() % 66) as usize).collect();
    let seen = rx_run(lens.clone(), CORE_HALF);
    let expect: Vec<(usize, usize, bool)> = lens.iter().enumerate().map(|(f, &l)| (f, l, f % 5 == 0)).collect();
    assert_eq!(seen, expect);
}

/// With the core side 8× too slow the FIFO fills: whole frames are dropped at admission, and
/// every frame that does arrive is complete and in order.
#[test]
fn rx_cdc_drops_whole_frames_when_the_core_falls_behind() {
    let lens = vec![60usize; 24];
    let seen = rx_run(lens.clone(), CORE_HALF * 8);
    assert!(seen.len() < lens.len(), "expected drops, all {} frames arrived", seen.len());
    assert!(seen.len() >= 4, "only {} frames arrived", seen.len());
    let mut last = None;
    for &(f, beats, _) in &seen {
        assert_eq!(beats, 60, "frame {f} arrived cut");
        assert!(last.map_or(true, |l| f > l), "frames out of order: {seen:?}");
        last = Some(f);
    }
}

#[derive(LogicBlock, Default)]
struct Bar0Bench {
    pub clock: Signal<In, Clock>,
    pub dut: Bar0Bridge,
}

impl Logic for Bar0Bench {
    #[hdl_gen]
    fn update(&mut self) {
        self.dut.clock.next = self.clock.val();
    }
}

/// The bridge turns 512-bit AXI4 writes into one AXI4-Lite write per strobed 32-bit lane and
/// assembles reads lane by lane, against a register file model on the AXI4-Lite side.
#[test]
fn bar0_bridge_splits_and_assembles_lanes() {
    let mut uut = Bar0Bench::default();
    for s in [
        &mut uut.dut.awvalid,
        &mut uut.dut.wvalid,
        &mut uut.dut.bready,
        &mut uut.dut.arvalid,
        &mut uut.dut.rready,
        &mut uut.dut.reset,
        &mut uut.dut.l_awready,
        &mut uut.dut.l_wready,
        &mut uut.dut.l_bvalid,
        &mut uut.dut.l_arready,
        &mut uut.dut.l_rvalid,
    ] {
        s.connect();
    }
    uut.dut.awid.connect();
    uut.dut.awaddr.connect();
    uut.dut.awlen.connect();
    uut.dut.awsize.connect();
    uut.dut.wdata.connect();
    uut.dut.wstrb.connect();
    uut.dut.arid.connect();
    uut.dut.araddr.connect();
    uut.dut.arlen.connect();
    uut.dut.arsize.connect();
    uut.dut.l_bresp.connect();
    uut.dut.l_rdata.connect();
    uut.dut.l_rresp.connect();
    uut.connect_all();
    let writes = std::sync::Arc::new(std::sync::Mutex::new(Vec::<(u64, u64, u64)>::new()));
    let writes_tb = writes.clone();
    let mut sim = Simulation::new();
    sim.add_clock(CORE_HALF, |x: &mut Box<Bar0Bench>| x.clock.next = !x.clock.val());
    // AXI4-Lite side: a register file whose reads return 0xA000_0000 | address.
    sim.add_testbench(move |mut sim: Sim<Bar0Bench>| {
        let mut x = sim.init()?;
        wait_clock_true!(sim, clock, x);
        for _ in 0..600 {
            x.dut.l_awready.next = false;
            x.dut.l_wready.next = false;
            x.dut.l_bvalid.next = false;
            x.dut.l_arready.next = false;
            x.dut.l_rvalid.next = false;
            if x.dut.l_awvalid.val() && x.dut.l_wvalid.val() {
                x.dut.l_awready.next = true;
                x.dut.l_wready.next = true;
                writes_tb.lock().unwrap().push((
                    x.dut.l_awaddr.val().to_u64(),
                    x.dut.l_wdata.val().to_u64(),
                    x.dut.l_wstrb.val().to_u64(),
                ));
                wait_clock_cycle!(sim, clock, x);
                x.dut.l_awready.next = false;
                x.dut.l_wready.next = false;
                x.dut.l_bvalid.next = true;
                x.dut.l_bresp.next = 0.into();
                x = sim.watch(|x| x.dut.l_bready.val(), x)?;
                wait_clock_cycle!(sim, clock, x);
                continue;
            }
            if x.dut.l_arvalid.val() {
                let a = x.dut.l_araddr.val().to_u64();
                x.dut.l_arready.next = true;
                wait_clock_cycle!(sim, clock, x);
                x.dut.l_arready.next = false;
                x.dut.l_rvalid.next = true;
                x.dut.l_rdata.next = (0xA000_0000u64 | a).to_bits();
                x.dut.l_rresp.next = 0.into();
                x = sim.watch(|x| x.dut.l_rready.val(), x)?;
                wait_clock_cycle!(sim, clock, x);
                continue;
            }
            wait_clock_cycle!(sim, clock, x);
        }
        sim.done(x)
    });
    // AXI4 side: a 4-byte write to lane 13, an 8-byte write over lanes 2-3, then a 4-byte read
    // of 0x0108 and an 8-byte read of 0x0210.
    sim.add_testbench(move |mut sim: Sim<Bar0Bench>| {
        let mut x = sim.init()?;
        wait_clock_true!(sim, clock, x);
        for (addr, size, strb, data) in [
            (0x1234u64, 2u64, 0xFu64 << 52, (0xDEAD_BEEFu64, 13usize)),
            (0x0048, 3, 0xFFu64 << 8, (0x1111_2222_3333_4444, 2)),
        ] {
            x.dut.awvalid.next = true;
            x.dut.awid.next = 5.into();
            x.dut.awaddr.next = addr.to_bits();
            x.dut.awlen.next = 0.into();
            x.dut.awsize.next = size.to_bits();
            x = sim.watch(|x| x.dut.awready.val(), x)?;
            wait_clock_cycle!(sim, clock, x);
            x.dut.awvalid.next = false;
            x.dut.wvalid.next = true;
            let word: Bits<512> = data.0.to_bits();
            x.dut.wdata.next = word << (32 * data.1 as u64);
            x.dut.wstrb.next = strb.to_bits();
            x = sim.watch(|x| x.dut.wready.val(), x)?;
            wait_clock_cycle!(sim, clock, x);
            x.dut.wvalid.next = false;
            x.dut.bready.next = true;
            x = sim.watch(|x| x.dut.bvalid.val(), x)?;
            sim_assert_eq!(sim, x.dut.bid.val().to_u64(), 5, x);
            sim_assert_eq!(sim, x.dut.bresp.val().to_u64(), 0, x);
            wait_clock_cycle!(sim, clock, x);
            x.dut.bready.next = false;
        }
        for (addr, size, lanes) in [(0x0108u64, 2u64, vec![2usize]), (0x0210, 3, vec![4, 5])] {
            x.dut.arvalid.next = true;
            x.dut.arid.next = 9.into();
            x.dut.araddr.next = addr.to_bits();
            x.dut.arlen.next = 0.into();
            x.dut.arsize.next = size.to_bits();
            x = sim.watch(|x| x.dut.arready.val(), x)?;
            wait_clock_cycle!(sim, clock, x);
            x.dut.arvalid.next = false;
            x.dut.rready.next = true;
            x = sim.watch(|x| x.dut.rvalid.val(), x)?;
            sim_assert!(sim, x.dut.rlast.val(), x);
            sim_assert_eq!(sim, x.dut.rid.val().to_u64(), 9, x);
            for lane in lanes {
                let got = x.dut.rdata.val().get_bits::<32>(32 * lane).to_u64();
                let want = 0xA000_0000u64 | ((addr & 0xFFC0) + 4 * lane as u64);
                sim_assert_eq!(sim, got, want, x);
            }
            wait_clock_cycle!(sim, clock, x);
            x.dut.rready.next = false;
        }
        sim.done(x)
    });
    sim.run(Box::new(uut), 10_000_000).unwrap();
    let w = writes.lock().unwrap().clone();
    assert_eq!(
        w,
        vec![(0x1234, 0xDEAD_BEEF, 0xF), (0x0048, 0x3333_4444, 0xF), (0x004C, 0x1111_2222, 0xF)],
        "AXI4-Lite writes"
    );
}
