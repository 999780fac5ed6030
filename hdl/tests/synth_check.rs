//! The generated core passes the synthesis check (`scripts/synth.sh --check`): it elaborates in
//! yosys with no inferred latch, no combinational loop, no multiple drivers and no
//! simulation-only construct. And the check is proven to bite: small rust-hdl blocks with a latch
//! or a combinational loop put in on purpose fail it.
//!
//! Cost: generating the core (~2 s) plus one yosys elaboration (~5 s) per design; the full
//! resource report (`scripts/synth.sh`, ~20 min) stays out of the test suite.
use rust_hdl::prelude::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn work_dir(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(d.join("verilog")).unwrap();
    d
}

/// Runs `scripts/synth.sh --check` on the Verilog in `dir/verilog`.
fn synth_check(dir: &Path) -> Output {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/synth.sh");
    Command::new("bash")
        .arg(&script)
        .arg("--check")
        .arg("--verilog")
        .arg(dir.join("verilog"))
        .arg("--out")
        .arg(dir.join("out"))
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()))
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr)
}

/// Writes the Verilog of `block` as the design `top` and runs the check on it.
fn check_block<B: Block>(name: &str, block: &mut B) -> Output {
    block.connect_all();
    let dir = work_dir(name);
    std::fs::write(dir.join("verilog/top.v"), generate_verilog(block)).unwrap();
    synth_check(&dir)
}

#[test]
fn generated_core_passes_the_synthesis_check() {
    let dir = work_dir("synth_check_core");
    rnic_hdl::generate(&dir.join("verilog")).expect("generate the core");
    let out = synth_check(&dir);
    let log = text(&out);
    eprintln!("{log}");
    assert!(out.status.success(), "the core fails the synthesis check:\n{log}");
    assert!(log.contains("synth-check: OK"), "{log}");
}

/// A clean block passes: the failures below come from the defects, not from the harness.
#[derive(LogicBlock, Default)]
struct Clean {
    pub clock: Signal<In, Clock>,
    pub en: Signal<In, Bit>,
    pub d: Signal<In, Bits<8>>,
    pub q: Signal<Out, Bits<8>>,
    held: Signal<Local, Bits<8>>,
    r: DFF<Bits<8>>,
}

impl Logic for Clean {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, r);
        self.held.next = self.r.q.val();
        if self.en.val() {
            self.held.next = self.d.val();
        }
        self.r.d.next = self.held.val();
        self.q.next = self.r.q.val();
    }
}

/// `held` is assigned only when `en` is set: a latch.
#[derive(LogicBlock, Default)]
struct Latch {
    pub clock: Signal<In, Clock>,
    pub en: Signal<In, Bit>,
    pub d: Signal<In, Bits<8>>,
    pub q: Signal<Out, Bits<8>>,
    held: Signal<Local, Bits<8>>,
    r: DFF<Bits<8>>,
}

impl Logic for Latch {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, r);
        if self.en.val() {
            self.held.next = self.d.val();
        }
        self.r.d.next = self.held.val();
        self.q.next = self.r.q.val();
    }
}

/// `acc` depends on itself within one cycle: a combinational loop inside one block.
#[derive(LogicBlock, Default)]
struct Loop {
    pub a: Signal<In, Bits<8>>,
    pub y: Signal<Out, Bits<8>>,
    acc: Signal<Local, Bits<8>>,
}

impl Logic for Loop {
    #[hdl_gen]
    fn update(&mut self) {
        self.acc.next = self.a.val() ^ self.acc.val();
        self.y.next = self.acc.val();
    }
}

/// Two pass-through blocks wired in a ring: a loop that exists only across the hierarchy.
#[derive(LogicBlock, Default)]
struct Pass {
    pub i: Signal<In, Bits<8>>,
    pub k: Signal<In, Bits<8>>,
    pub o: Signal<Out, Bits<8>>,
}

impl Logic for Pass {
    #[hdl_gen]
    fn update(&mut self) {
        self.o.next = self.i.val() + self.k.val();
    }
}

#[derive(LogicBlock, Default)]
struct Ring {
    pub k: Signal<In, Bits<8>>,
    pub y: Signal<Out, Bits<8>>,
    left: Pass,
    right: Pass,
}

impl Logic for Ring {
    #[hdl_gen]
    fn update(&mut self) {
        self.left.k.next = self.k.val();
        self.right.k.next = self.k.val();
        self.left.i.next = self.right.o.val();
        self.right.i.next = self.left.o.val();
        self.y.next = self.right.o.val();
    }
}

#[test]
fn clean_block_passes() {
    let out = check_block("synth_check_clean", &mut Clean::default());
    assert!(out.status.success(), "{}", text(&out));
}

#[test]
fn check_catches_a_latch() {
    let out = check_block("synth_check_latch", &mut Latch::default());
    let log = text(&out);
    assert!(!out.status.success(), "a latch passed the check:\n{log}");
    assert!(log.contains("inferred latches"), "{log}");
    assert!(log.contains("held"), "the report should name the latched signal:\n{log}");
}

#[test]
fn check_catches_a_combinational_loop() {
    // rust-hdl's generator refuses a loop inside one block (`LogicLoops`); write it unchecked to
    // prove that yosys catches it too.
    let mut block = Loop::default();
    block.connect_all();
    let dir = work_dir("synth_check_loop");
    std::fs::write(dir.join("verilog/top.v"), generate_verilog_unchecked(&block)).unwrap();
    let out = synth_check(&dir);
    let log = text(&out);
    assert!(!out.status.success(), "a combinational loop passed the check:\n{log}");
    assert!(log.contains("logic loop"), "{log}");
}

#[test]
fn check_catches_a_loop_across_blocks() {
    let out = check_block("synth_check_ring", &mut Ring::default());
    let log = text(&out);
    assert!(!out.status.success(), "a loop across blocks passed the check:\n{log}");
    assert!(log.contains("logic loop"), "{log}");
}
