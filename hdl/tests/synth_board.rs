//! The U250 board shell (`hdl/src/board`) elaborates: yosys passes the synthesis check on it
//! with the vendor IP stubbed, and its Verilog lints clean in Verilator like the core's.
//!
//! The board module is compiled into this test by path so the test does not depend on
//! `lib.rs` exporting it.
use rnic_hdl::{crc, top};
#[allow(dead_code)]
#[path = "../src/board/mod.rs"]
mod board;

use std::path::{Path, PathBuf};
use std::process::Command;

fn work_dir(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn board_passes_the_synthesis_check() {
    let dir = work_dir("synth_board");
    board::generate(&dir.join("verilog")).expect("generate the board");
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
    let files = board::generate(&dir).expect("generate the board");
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
