//! The generated CRC-32 cores and their rust-hdl wrappers, checked in Verilator.
//!
//! - `cores_and_wrappers_match_crc32fast_in_verilator`: a rust-hdl test top (two `Crc32D512`,
//!   one `Crc32Unzero`, one `Crc32UnzeroTable`, one `Crc32ResidueZeros`) plus `cores()` plus a
//!   generated self-checking testbench, built with `verilator --binary`. Vectors come from
//!   crc32fast (random beats and states, every data and state bit alone, which pins every mask
//!   bit, every `zeros` 0..63 end to end; the residue table for every `zeros`, with the residue
//!   taken from crc32fast and checked by padding real frames). Deliberately corrupted copies of
//!   three cores run beside the real ones and must be caught, which proves the testbench can
//!   fail.
//! - `wrapped_top_lints_clean_with_cores_once`: the rust-hdl output plus `cores()` passes
//!   `verilator --lint-only -Wall` (MODDUP and SELRANGE stay on).
//! - `cores_lint_clean_alone`: each core module is clean under `-Wall -Wno-DECLFILENAME`.
//! - `blocks_simulate_in_rust_hdl`: the blocks' simulation models agree with crc32fast.
use rnic_hdl::crc::blocks::{init_skipping, Crc32D512, Crc32ResidueZeros, Crc32Unzero, Crc32UnzeroTable};
use rnic_hdl::crc::reference::unzero;
use rnic_hdl::crc::verilog;
use rust_hdl::prelude::*;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// The raw register update in terms of crc32fast (its "initial" value is the complement).
fn crc_step(state: u32, bytes: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new_with_initial(!state);
    h.update(bytes);
    !h.finalize()
}

/// splitmix64: deterministic vectors without another dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn u32(&mut self) -> u32 {
        self.next() as u32
    }
    fn beat(&mut self) -> [u8; 64] {
        let mut b = [0u8; 64];
        for c in b.chunks_mut(8) {
            c.copy_from_slice(&self.next().to_le_bytes());
        }
        b
    }
}

/// Hex digits of a 64-byte beat as a 512-bit Verilog number (byte 63 first).
fn beat_hex(b: &[u8; 64]) -> String {
    b.iter().rev().map(|x| format!("{x:02x}")).collect()
}

fn tool(name: &str) -> String {
    let ok = Command::new(name).arg("--version").output().map(|o| o.status.success());
    assert!(
        matches!(ok, Ok(true)),
        "{name} is not installed: run scripts/setup.sh (Verilator >= 5.006 and yosys are required)"
    );
    name.to_string()
}

fn work_dir(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Test top: two datapath instances (the MODDUP case) and both unzero variants.
#[derive(LogicBlock, Default)]
struct CrcTestTop {
    pub state_a: Signal<In, Bits<32>>,
    pub data_a: Signal<In, Bits<512>>,
    pub out_a: Signal<Out, Bits<32>>,
    pub state_b: Signal<In, Bits<32>>,
    pub data_b: Signal<In, Bits<512>>,
    pub out_b: Signal<Out, Bits<32>>,
    pub u_state: Signal<In, Bits<32>>,
    pub zeros: Signal<In, Bits<6>>,
    pub out_chain: Signal<Out, Bits<32>>,
    pub out_table: Signal<Out, Bits<32>>,
    pub rz_zeros: Signal<In, Bits<6>>,
    pub out_rz: Signal<Out, Bits<32>>,
    crc_a: Crc32D512,
    crc_b: Crc32D512,
    unz_chain: Crc32Unzero,
    unz_table: Crc32UnzeroTable,
    rz: Crc32ResidueZeros,
}

impl Logic for CrcTestTop {
    #[hdl_gen]
    fn update(&mut self) {
        self.crc_a.state_in.next = self.state_a.val();
        self.crc_a.data.next = self.data_a.val();
        self.out_a.next = self.crc_a.state_out.val();
        self.crc_b.state_in.next = self.state_b.val();
        self.crc_b.data.next = self.data_b.val();
        self.out_b.next = self.crc_b.state_out.val();
        self.unz_chain.state_in.next = self.u_state.val();
        self.unz_chain.zeros.next = self.zeros.val();
        self.out_chain.next = self.unz_chain.state_out.val();
        self.unz_table.state_in.next = self.u_state.val();
        self.unz_table.zeros.next = self.zeros.val();
        self.out_table.next = self.unz_table.state_out.val();
        self.rz.zeros.next = self.rz_zeros.val();
        self.out_rz.next = self.rz.state_out.val();
    }
}

fn test_top_verilog() -> String {
    let mut top = CrcTestTop::default();
    top.connect_all();
    generate_verilog(&top)
}

/// Deliberately wrong copies of two cores, instantiated beside the real ones.
const MUTANT_D512: &str = "rnic_crc32_d512_mutant";
const MUTANT_K3: &str = "rnic_crc32_unzero_k3_mutant";
const MUTANT_RZ: &str = "rnic_crc32_residue_zeros_mutant";

/// The CRC-32 residue from crc32fast alone: the raw register after a message and its CRC.
fn residue_crc32fast() -> u32 {
    let msg = b"any message";
    let mut all = msg.to_vec();
    all.extend_from_slice(&crc32fast::hash(msg).to_le_bytes());
    crc_step(0xFFFF_FFFF, &all)
}

fn mutants() -> String {
    let mut v = verilog::d512_module_named(MUTANT_D512, Some((17, 300)));
    v.push_str(&verilog::unzero_stage_module_named(MUTANT_K3, 3, Some((5, 9))));
    // A table built from a residue with one bit wrong.
    v.push_str(&verilog::zeros_table_module_named(MUTANT_RZ, residue_crc32fast() ^ (1 << 11)));
    v
}

struct Vectors {
    /// {state, data, expected}: 576 bits.
    d: Vec<String>,
    /// {state, zero-padded data, zeros (8 bits), expected}: 584 bits.
    e: Vec<String>,
    /// {state, zeros (8 bits), expected}: 72 bits.
    u: Vec<String>,
    /// {state, enable (8 bits), expected k5..k0}: 232 bits.
    s: Vec<String>,
    /// {zeros (8 bits), expected}: 40 bits.
    r: Vec<String>,
}

fn vectors() -> Vectors {
    let mut rng = Rng(0x1CC0_2024);
    let mut d = Vec::new();
    let mut push_d = |s: u32, b: &[u8; 64], exp: u32| {
        d.push(format!("{s:08x}{}{exp:08x}", beat_hex(b)));
    };
    // Every data bit alone (state 0) and every state bit alone (data 0): by linearity these pin
    // every mask bit of the datapath core.
    for j in 0..512 {
        let mut b = [0u8; 64];
        b[j / 8] = 1 << (j % 8);
        push_d(0, &b, crc_step(0, &b));
    }
    for j in 0..32 {
        push_d(1 << j, &[0; 64], crc_step(1 << j, &[0; 64]));
    }
    push_d(0, &[0; 64], 0);
    push_d(0xFFFF_FFFF, &[0xFF; 64], crc_step(0xFFFF_FFFF, &[0xFF; 64]));
    for _ in 0..256 {
        let (s, b) = (rng.u32(), rng.beat());
        push_d(s, &b, crc_step(s, &b));
    }
    // A first beat whose leading bytes are zeroed and must not count (init_skipping).
    for n in [1usize, 14, 42, 63] {
        let mut b = rng.beat();
        b[..n].fill(0);
        push_d(init_skipping(n), &b, crc_step(0xFFFF_FFFF, &b[n..]));
    }

    // End to end: a last beat with n valid bytes, zero-padded, then `zeros = 64 - n` undone.
    let mut e = Vec::new();
    for z in 0..64usize {
        for _ in 0..4 {
            let (s, mut b) = (rng.u32(), rng.beat());
            let n = 64 - z;
            b[n..].fill(0);
            let exp = crc_step(s, &b[..n]);
            e.push(format!("{s:08x}{}{z:02x}{exp:08x}", beat_hex(&b)));
        }
    }

    // Unzero alone, from random registers; the expectation is checked against crc32fast.
    let mut u = Vec::new();
    for z in 0..64usize {
        for _ in 0..4 {
            let s = rng.u32();
            let exp = unzero(s, z);
            assert_eq!(crc_step(exp, &vec![0; z]), s);
            u.push(format!("{s:08x}{z:02x}{exp:08x}"));
        }
    }

    // Each stage alone: every state bit alone (pins the matrices), random states, enable 0/1.
    let mut s = Vec::new();
    let mut push_s = |st: u32, en: bool| {
        let mut line = format!("{st:08x}{:02x}", u8::from(en));
        for k in (0..verilog::UNZERO_STAGES).rev() {
            let exp = if en { unzero(st, 1 << k) } else { st };
            if en {
                assert_eq!(crc_step(exp, &vec![0; 1 << k]), st);
            }
            let _ = write!(line, "{exp:08x}");
        }
        s.push(line);
    };
    for j in 0..32 {
        push_s(1 << j, true);
    }
    for _ in 0..16 {
        let st = rng.u32();
        push_s(st, true);
        push_s(st, false);
    }
    // The residue after `zeros` zero bytes: a frame and its CRC, zero-padded, leave exactly
    // this register, and un-zeroing it gives the residue back.
    let res = residue_crc32fast();
    let mut r = Vec::new();
    for z in 0..64usize {
        let exp = crc_step(res, &vec![0; z]);
        let mut frame = rng.beat().to_vec();
        frame.truncate(13 + z % 40);
        let crc = crc32fast::hash(&frame);
        frame.extend_from_slice(&crc.to_le_bytes());
        frame.resize(frame.len() + z, 0);
        assert_eq!(crc_step(0xFFFF_FFFF, &frame), exp, "z={z}");
        assert_eq!(unzero(exp, z), res);
        r.push(format!("{z:02x}{exp:08x}"));
    }
    Vectors { d, e, u, s, r }
}

fn write_mem(path: &Path, lines: &[String]) {
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
}

fn testbench(dir: &Path, v: &Vectors) -> String {
    let mem = |n: &str| dir.join(n).display().to_string();
    let mut stage_insts = String::new();
    for k in 0..verilog::UNZERO_STAGES {
        let _ = writeln!(
            stage_insts,
            "  wire [31:0] s_out{k};\n  {} st{k}(.state_in(s_in), .enable(s_en), .state_out(s_out{k}));",
            verilog::unzero_module(k)
        );
    }
    let mut stage_checks = String::new();
    for k in 0..verilog::UNZERO_STAGES {
        let _ = writeln!(
            stage_checks,
            "      checks = checks + 1;\n      if (s_out{k} !== vs[i][{hi}:{lo}]) begin\n        $display(\"MISMATCH unzero_k{k} vector %0d: got %h expected %h\", i, s_out{k}, vs[i][{hi}:{lo}]);\n        errors = errors + 1;\n      end",
            hi = 32 * k + 31,
            lo = 32 * k
        );
    }
    format!(
        r#"// Generated by hdl/tests/crc_verilator.rs: self-checking testbench of the CRC-32 cores.
module tb;
  localparam ND = {nd}, NE = {ne}, NU = {nu}, NS = {ns}, NR = {nr};
  reg [575:0] vd [0:ND-1];
  reg [583:0] ve [0:NE-1];
  reg [71:0]  vu [0:NU-1];
  reg [231:0] vs [0:NS-1];
  reg [39:0]  vr [0:NR-1];

  reg  [31:0]  state_a, state_b, u_state, s_in;
  reg  [511:0] data_a, data_b;
  reg  [5:0]   zeros, rz_zeros;
  reg          s_en;
  wire [31:0]  out_a, out_b, out_chain, out_table, out_rz, mut_d, mut_s, mut_r;

  top dut(.state_a(state_a), .data_a(data_a), .out_a(out_a),
          .state_b(state_b), .data_b(data_b), .out_b(out_b),
          .u_state(u_state), .zeros(zeros), .out_chain(out_chain), .out_table(out_table),
          .rz_zeros(rz_zeros), .out_rz(out_rz));
{stage_insts}
  {MUTANT_D512} md(.state_in(state_a), .data(data_a), .state_out(mut_d));
  {MUTANT_K3} ms(.state_in(s_in), .enable(s_en), .state_out(mut_s));
  {MUTANT_RZ} mr(.zeros(rz_zeros), .state_out(mut_r));

  integer i, j, errors, checks, caught_d, caught_s, caught_r;
  initial begin
    $readmemh("{md}", vd);
    $readmemh("{me}", ve);
    $readmemh("{mu}", vu);
    $readmemh("{ms}", vs);
    $readmemh("{mr}", vr);
    errors = 0; checks = 0; caught_d = 0; caught_s = 0; caught_r = 0;

    // Datapath: instance a gets vector i, instance b vector i+1 (same time, two instances).
    for (i = 0; i < ND; i = i + 1) begin
      j = (i + 1) % ND;
      state_a = vd[i][575:544]; data_a = vd[i][543:32];
      state_b = vd[j][575:544]; data_b = vd[j][543:32];
      #1;
      checks = checks + 2;
      if (out_a !== vd[i][31:0]) begin
        $display("MISMATCH d512 a vector %0d: got %h expected %h", i, out_a, vd[i][31:0]);
        errors = errors + 1;
      end
      if (out_b !== vd[j][31:0]) begin
        $display("MISMATCH d512 b vector %0d: got %h expected %h", j, out_b, vd[j][31:0]);
        errors = errors + 1;
      end
      if (mut_d !== vd[i][31:0]) caught_d = caught_d + 1;
    end

    // End to end: full-beat CRC of a zero-padded last beat, then both unzero variants.
    for (i = 0; i < NE; i = i + 1) begin
      state_b = ve[i][583:552]; data_b = ve[i][551:40]; zeros = ve[i][37:32];
      #1;
      u_state = out_b;
      #1;
      checks = checks + 2;
      if (out_chain !== ve[i][31:0]) begin
        $display("MISMATCH end-to-end chain vector %0d zeros %0d: got %h expected %h", i, zeros, out_chain, ve[i][31:0]);
        errors = errors + 1;
      end
      if (out_table !== ve[i][31:0]) begin
        $display("MISMATCH end-to-end table vector %0d zeros %0d: got %h expected %h", i, zeros, out_table, ve[i][31:0]);
        errors = errors + 1;
      end
    end

    // Unzero alone.
    for (i = 0; i < NU; i = i + 1) begin
      u_state = vu[i][71:40]; zeros = vu[i][37:32];
      #1;
      checks = checks + 2;
      if (out_chain !== vu[i][31:0]) begin
        $display("MISMATCH unzero chain vector %0d zeros %0d: got %h expected %h", i, zeros, out_chain, vu[i][31:0]);
        errors = errors + 1;
      end
      if (out_table !== vu[i][31:0]) begin
        $display("MISMATCH unzero table vector %0d zeros %0d: got %h expected %h", i, zeros, out_table, vu[i][31:0]);
        errors = errors + 1;
      end
    end

    // Each stage alone.
    for (i = 0; i < NS; i = i + 1) begin
      s_in = vs[i][231:200]; s_en = vs[i][192];
      #1;
{stage_checks}
      if (mut_s !== vs[i][127:96]) caught_s = caught_s + 1;
    end

    // Residue after zeros.
    for (i = 0; i < NR; i = i + 1) begin
      rz_zeros = vr[i][37:32];
      #1;
      checks = checks + 1;
      if (out_rz !== vr[i][31:0]) begin
        $display("MISMATCH residue_zeros zeros %0d: got %h expected %h", rz_zeros, out_rz, vr[i][31:0]);
        errors = errors + 1;
      end
      if (mut_r !== vr[i][31:0]) caught_r = caught_r + 1;
    end

    $display("CHECKS %0d ERRORS %0d MUTANT_D512_CAUGHT %0d MUTANT_K3_CAUGHT %0d MUTANT_RZ_CAUGHT %0d", checks, errors, caught_d, caught_s, caught_r);
    if (errors == 0) $display("PASS");
    else $display("FAIL");
    $finish;
  end
endmodule
"#,
        nd = v.d.len(),
        ne = v.e.len(),
        nu = v.u.len(),
        ns = v.s.len(),
        nr = v.r.len(),
        mr = mem("vr.hex"),
        md = mem("vd.hex"),
        me = mem("ve.hex"),
        mu = mem("vu.hex"),
        ms = mem("vs.hex"),
    )
}

fn run(cmd: &mut Command) -> (bool, String) {
    let out = cmd.output().unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text)
}

/// The number after `key ` in the testbench's summary line.
fn summary_field(log: &str, key: &str) -> u64 {
    let line = log.lines().find(|l| l.starts_with("CHECKS ")).expect("no summary line");
    let mut it = line.split_whitespace();
    while let Some(w) = it.next() {
        if w == key {
            return it.next().unwrap().parse().unwrap();
        }
    }
    panic!("no {key} in {line}");
}

#[test]
fn cores_and_wrappers_match_crc32fast_in_verilator() {
    let verilator = tool("verilator");
    let dir = work_dir("crc_verilator");
    let v = vectors();
    write_mem(&dir.join("vd.hex"), &v.d);
    write_mem(&dir.join("ve.hex"), &v.e);
    write_mem(&dir.join("vu.hex"), &v.u);
    write_mem(&dir.join("vs.hex"), &v.s);
    write_mem(&dir.join("vr.hex"), &v.r);
    std::fs::write(dir.join("tb.v"), testbench(&dir, &v)).unwrap();
    std::fs::write(dir.join("top.v"), test_top_verilog()).unwrap();
    std::fs::write(dir.join("rnic_crc_cores.v"), verilog::cores()).unwrap();
    std::fs::write(dir.join("mutants.v"), mutants()).unwrap();

    let t0 = Instant::now();
    let (ok, log) = run(Command::new(&verilator)
        .current_dir(&dir)
        .args(["--binary", "--top-module", "tb", "-Wall", "-Wno-DECLFILENAME", "-Wno-UNUSED"])
        .args(["-Wno-WIDTH", "--Mdir", "obj", "-o", "Vtb", "-j", "2"])
        .args(["tb.v", "top.v", "rnic_crc_cores.v", "mutants.v"]));
    let build = t0.elapsed();
    assert!(ok, "verilator --binary failed:\n{log}");
    eprintln!("crc_verilator: verilator --binary build took {:.1} s", build.as_secs_f64());

    let t1 = Instant::now();
    let (ok, out) = run(Command::new(dir.join("obj/Vtb")).current_dir(&dir));
    eprintln!("crc_verilator: simulation took {:.2} s", t1.elapsed().as_secs_f64());
    let mismatches: Vec<&str> = out.lines().filter(|l| l.contains("MISMATCH")).collect();
    assert!(mismatches.is_empty(), "{} mismatches:\n{}", mismatches.len(), mismatches.join("\n"));
    assert!(ok, "testbench exited with an error:\n{out}");
    assert!(out.lines().any(|l| l.trim() == "PASS"), "no PASS:\n{out}");
    let expected_checks =
        2 * v.d.len() + 2 * v.e.len() + 2 * v.u.len() + verilog::UNZERO_STAGES * v.s.len() + v.r.len();
    assert_eq!(summary_field(&out, "CHECKS"), expected_checks as u64, "{out}");
    assert_eq!(summary_field(&out, "ERRORS"), 0);
    // The corrupted cores must be caught, or the vectors are too weak to notice a wrong mask.
    assert!(summary_field(&out, "MUTANT_D512_CAUGHT") > 0, "wrong d512 mask not caught:\n{out}");
    assert!(summary_field(&out, "MUTANT_K3_CAUGHT") > 0, "wrong unzero mask not caught:\n{out}");
    assert_eq!(
        summary_field(&out, "MUTANT_RZ_CAUGHT"),
        v.r.len() as u64,
        "a residue table from a wrong residue not caught everywhere:\n{out}"
    );
}

#[test]
fn wrapped_top_lints_clean_with_cores_once() {
    let verilator = tool("verilator");
    let dir = work_dir("crc_lint_top");
    let top = test_top_verilog();
    // The wrappers carry no module text: the cores come once, from their own file.
    assert!(!top.contains("module rnic_crc32"), "a wrapper emitted core text");
    assert_eq!(top.matches("rnic_crc32_d512 core(").count(), 2);
    std::fs::write(dir.join("top.v"), &top).unwrap();
    std::fs::write(dir.join("rnic_crc_cores.v"), verilog::cores()).unwrap();
    let (ok, log) = run(Command::new(&verilator)
        .current_dir(&dir)
        .args(["--lint-only", "-Wall", "-Wno-DECLFILENAME", "-Wno-UNUSED", "-Wno-WIDTH"])
        .args(["--top-module", "top", "top.v", "rnic_crc_cores.v"]));
    assert!(ok, "lint of rust-hdl top + cores failed:\n{log}");
    assert!(!log.contains("%Warning"), "{log}");
}

#[test]
fn cores_lint_clean_alone() {
    let verilator = tool("verilator");
    let dir = work_dir("crc_lint_cores");
    std::fs::write(dir.join("rnic_crc_cores.v"), verilog::cores()).unwrap();
    let tops = [
        verilog::D512_MODULE.to_string(),
        verilog::UNZERO_TABLE_MODULE.to_string(),
        verilog::RESIDUE_ZEROS_MODULE.to_string(),
    ]
    .into_iter()
    .chain((0..verilog::UNZERO_STAGES).map(verilog::unzero_module));
    for top in tops {
        let (ok, log) = run(Command::new(&verilator)
            .current_dir(&dir)
            .args(["--lint-only", "-Wall", "-Wno-DECLFILENAME", "--top-module", &top])
            .arg("rnic_crc_cores.v"));
        assert!(ok && !log.contains("%Warning"), "lint of {top} failed:\n{log}");
    }
}

#[test]
fn blocks_simulate_in_rust_hdl() {
    let mut sim = Simulation::new();
    sim.add_testbench(move |mut ep: Sim<CrcTestTop>| {
        let mut x = ep.init()?;
        let mut rng = Rng(42);
        for z in [0usize, 1, 5, 17, 63] {
            let (s, mut b) = (rng.u32(), rng.beat());
            b[64 - z..].fill(0);
            let mut data = Bits::<512>::default();
            for (w, c) in b.chunks(8).enumerate() {
                let word = Bits::<512>::from(u64::from_le_bytes(c.try_into().unwrap()));
                data = data | (word << (64 * w) as u64);
            }
            x.state_a.next = Bits::<32>::from(u64::from(s));
            x.data_a.next = data;
            x.state_b.next = 0.into();
            x.data_b.next = 0.into();
            x.u_state.next = Bits::<32>::from(u64::from(crc_step(s, &b)));
            x.zeros.next = Bits::<6>::from(z as u64);
            x.rz_zeros.next = Bits::<6>::from(z as u64);
            x = ep.wait(1, x)?;
            sim_assert_eq!(ep, x.out_rz.val().to_u32(), crc_step(residue_crc32fast(), &vec![0; z]), x);
            sim_assert_eq!(ep, x.out_a.val().to_u32(), crc_step(s, &b), x);
            sim_assert_eq!(ep, x.out_b.val().to_u32(), 0, x);
            sim_assert_eq!(ep, x.out_chain.val().to_u32(), crc_step(s, &b[..64 - z]), x);
            sim_assert_eq!(ep, x.out_table.val().to_u32(), crc_step(s, &b[..64 - z]), x);
        }
        ep.done(x)
    });
    let mut top = CrcTestTop::default();
    top.connect_all();
    sim.run(Box::new(top), 100).unwrap();
}
