//! The generated CRC-32 cores synthesize in yosys, and their LUT6 depth stays within a 250 MHz
//! budget (4–6 LUT levels per stage on UltraScale+).
//!
//! Each test maps one core with `synth -flatten; abc -lut 6; opt_clean` and measures the longest
//! path with `ltp -noff`; run with `--nocapture` to see the figures.
use rnic_hdl::crc::blocks::{Crc32D512, Crc32Unzero};
use rnic_hdl::crc::verilog;
use rust_hdl::prelude::*;
use std::path::{Path, PathBuf};
use std::process::Command;

fn work_dir(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn yosys(dir: &Path, script: &str) -> String {
    let out = Command::new("yosys")
        .current_dir(dir)
        .args(["-p", script])
        .output()
        .unwrap_or_else(|e| panic!("cannot run yosys (run scripts/setup.sh): {e}"));
    let log = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    std::fs::write(dir.join("yosys.log"), &log).unwrap();
    assert!(out.status.success(), "yosys failed:\n{}", &log[log.len().saturating_sub(4000)..]);
    log
}

/// (LUT6 count, LUT levels) of module `top` after LUT mapping.
fn luts_and_depth(dir: &Path, files: &[&str], top: &str) -> (u64, u64) {
    let log = yosys(
        dir,
        &format!("read_verilog {}; synth -top {top} -flatten; abc -lut 6; opt_clean; stat; ltp -noff", files.join(" ")),
    );
    let luts = log
        .lines()
        .filter_map(|l| l.trim().strip_prefix("$lut"))
        .filter_map(|n| n.trim().parse::<u64>().ok())
        .next_back()
        .expect("no $lut count in stat");
    let depth = log
        .lines()
        .filter_map(|l| l.split_once("(length=").map(|(_, r)| r.trim_end_matches("):")))
        .filter_map(|n| n.parse::<u64>().ok())
        .next_back()
        .expect("no ltp result");
    (luts, depth)
}

#[test]
fn d512_synthesizes_in_few_lut_levels() {
    let dir = work_dir("crc_yosys_d512");
    std::fs::write(dir.join("cores.v"), verilog::cores()).unwrap();
    let (luts, depth) = luts_and_depth(&dir, &["cores.v"], verilog::D512_MODULE);
    eprintln!("crc_yosys: {}: {luts} LUT6, {depth} levels", verilog::D512_MODULE);
    assert!(depth <= 5, "{} is {depth} LUT levels deep", verilog::D512_MODULE);
    assert!((1000..=3000).contains(&luts), "{luts} LUT6: the core changed shape");
}

#[test]
fn unzero_table_synthesizes_in_few_lut_levels() {
    let dir = work_dir("crc_yosys_unzero_table");
    std::fs::write(dir.join("cores.v"), verilog::cores()).unwrap();
    let (luts, depth) = luts_and_depth(&dir, &["cores.v"], verilog::UNZERO_TABLE_MODULE);
    eprintln!("crc_yosys: {}: {luts} LUT6, {depth} levels", verilog::UNZERO_TABLE_MODULE);
    assert!(depth <= 5, "{} is {depth} LUT levels deep", verilog::UNZERO_TABLE_MODULE);
}

#[test]
fn residue_zeros_table_is_one_lut_level() {
    let dir = work_dir("crc_yosys_residue_zeros");
    std::fs::write(dir.join("cores.v"), verilog::cores()).unwrap();
    let (luts, depth) = luts_and_depth(&dir, &["cores.v"], verilog::RESIDUE_ZEROS_MODULE);
    eprintln!("crc_yosys: {}: {luts} LUT6, {depth} levels", verilog::RESIDUE_ZEROS_MODULE);
    // Each output bit is a function of the six `zeros` bits: one LUT6.
    assert_eq!(depth, 1, "{} is {depth} LUT levels deep", verilog::RESIDUE_ZEROS_MODULE);
    assert!(luts <= 32, "{luts} LUT6 for a 32-bit table of 64 entries");
}

#[test]
fn unzero_chain_block_synthesizes() {
    // The rust-hdl block itself as the top: its wrapper chains the six stage modules.
    let dir = work_dir("crc_yosys_unzero_chain");
    let mut b = Crc32Unzero::default();
    b.connect_all();
    std::fs::write(dir.join("top.v"), generate_verilog(&b)).unwrap();
    std::fs::write(dir.join("cores.v"), verilog::cores()).unwrap();
    let (luts, depth) = luts_and_depth(&dir, &["top.v", "cores.v"], "top");
    eprintln!("crc_yosys: Crc32Unzero (6-stage chain): {luts} LUT6, {depth} levels");
    assert!(depth >= 2 && luts > 0);
}

/// Two wrapper instances plus the cores file once: yosys accepts the hierarchy (a duplicated
/// module would be a hard error here).
#[test]
fn two_instances_elaborate_in_yosys() {
    #[derive(LogicBlock, Default)]
    struct Two {
        pub state: Signal<In, Bits<32>>,
        pub data: Signal<In, Bits<512>>,
        pub out_a: Signal<Out, Bits<32>>,
        pub out_b: Signal<Out, Bits<32>>,
        a: Crc32D512,
        b: Crc32D512,
    }
    impl Logic for Two {
        #[hdl_gen]
        fn update(&mut self) {
            self.a.state_in.next = self.state.val();
            self.a.data.next = self.data.val();
            self.b.state_in.next = self.a.state_out.val();
            self.b.data.next = self.data.val();
            self.out_a.next = self.a.state_out.val();
            self.out_b.next = self.b.state_out.val();
        }
    }
    let dir = work_dir("crc_yosys_two");
    let mut t = Two::default();
    t.connect_all();
    std::fs::write(dir.join("top.v"), generate_verilog(&t)).unwrap();
    std::fs::write(dir.join("cores.v"), verilog::cores()).unwrap();
    let log = yosys(&dir, "read_verilog top.v cores.v; hierarchy -check -top top");
    assert!(!log.contains("Re-definition"), "{log}");
}
