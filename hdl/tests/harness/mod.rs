//! Block-level Verilator harness: one rust-hdl block, its generated Verilog, a Verilated shared
//! library behind a generic C ABI, and a safe Rust handle to drive it cycle by cycle.
//!
//! ```ignore
//! mod harness;
//! use harness::Dut;
//! let mut dut = Dut::build::<Gearbox>("gearbox").expect("build");
//! dut.set("reset", 1);
//! dut.tick();
//! dut.set("reset", 0);
//! dut.set("in_valid", 1);
//! dut.set_wide("in_data", &[0xAB; 64]);
//! dut.eval();                 // combinational outputs settle
//! let v = dut.get("out_valid"); // values before the clock edge
//! dut.tick();                 // clock 0 -> eval -> clock 1 -> eval: DFFs update
//! ```
//!
//! How a block becomes a library:
//! 1. `generate_verilog` (top module `top`), plus [`rnic_hdl::crc::verilog::cores`] when the text
//!    instantiates an `rnic_crc32` core (the wrappers carry no module text; appending the cores
//!    to a design that does not use them would only add unused modules).
//! 2. The `module top(...)` port declarations give each port's name, direction and width.
//! 3. A C++ shim exposes `tb_new`, `tb_free`, `tb_set(port, words)`, `tb_get(port, words)`,
//!    `tb_eval`, `tb_tick` (clock low, eval, clock high, eval on the port named `clock`) and
//!    `tb_ports` (the port list it was generated for, checked at load time).
//! 4. `verilator --cc -O2 -Wno-WIDTH -Wno-UNOPTFLAT --prefix V<name> -Mdir ...`, the model's own
//!    makefile (model, `verilated.o`, `verilated_threads.o`, all `-fPIC`), then `g++ -shared`
//!    with hidden visibility so each library keeps its own copy of Verilator's runtime.
//! 5. `libloading` opens it.
//!
//! Libraries are cached under `target/block-tb/<name>-<hash>/` keyed by a hash of the Verilog,
//! the shim, the flags and the Verilator version: a rerun with unchanged RTL skips steps 3-4.
//! A file lock serialises builds of the same name across threads and test processes.
//!
//! Ports up to 64 bits are read and written as `u64` ([`Dut::set`], [`Dut::get`]); any port can
//! be read and written as little-endian bytes ([`Dut::set_wide`], [`Dut::get_wide`]: byte `k` =
//! bits `8k+7..8k`). Values that do not fit the port's width are a test bug and panic.
#![allow(dead_code)]

pub mod codec;
pub mod tables;

use rust_hdl::prelude::*;
use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// Bumped whenever the shim or the build recipe changes, so cached libraries are rebuilt.
const HARNESS_VERSION: &str = "block-tb-1";

/// Verilator flags of every model (rust-hdl's widgets emit WIDTH warnings from `+ 32'h1`, and
/// its whole-struct combinational blocks look circular: UNOPTFLAT; everything else stays fatal).
const VERILATOR_FLAGS: &[&str] = &["--cc", "-O2", "-Wno-WIDTH", "-Wno-UNOPTFLAT"];

/// Optimisation of the model's C++ (Verilator's default for the fast path is -Os).
const MAKE_FLAGS: &[&str] = &["OPT_FAST=-O2", "OPT_SLOW=-O1", "OPT_GLOBAL=-O2"];

/// Why a model could not be built or loaded.
#[derive(Debug, Clone)]
pub struct HarnessError(pub String);

impl fmt::Display for HarnessError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for HarnessError {}

fn err<T>(msg: impl Into<String>) -> Result<T, HarnessError> {
    Err(HarnessError(msg.into()))
}

/// A port of the top module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortInfo {
    pub name: String,
    pub width: usize,
    pub input: bool,
}

impl PortInfo {
    /// 32-bit words of the port's value.
    pub fn words(&self) -> usize {
        self.width.div_ceil(32)
    }
    /// Bytes of the port's value as [`Dut::get_wide`] returns it.
    pub fn bytes(&self) -> usize {
        self.width.div_ceil(8)
    }
}

/// A resolved port: index and width, to skip the name lookup in hot loops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Port {
    index: usize,
}

/// Anything that names a port: its name, or a [`Port`] from [`Dut::port`].
pub trait PortRef {
    fn resolve(&self, dut: &Dut) -> usize;
}

impl PortRef for &str {
    fn resolve(&self, dut: &Dut) -> usize {
        match dut.index.get(*self) {
            Some(i) => *i,
            None => panic!(
                "{}: no port named `{self}`; ports: {}",
                dut.name,
                dut.ports.iter().map(|p| p.name.as_str()).collect::<Vec<_>>().join(", ")
            ),
        }
    }
}

impl PortRef for Port {
    fn resolve(&self, _dut: &Dut) -> usize {
        self.index
    }
}

/// Parses the port declarations of `module top(...)` in rust-hdl's output, in argument order.
///
/// rust-hdl writes `module top(a,b,c);` and then one declaration per argument:
/// `input wire [N:0] name;`, `output reg name;` (`signed` possible, 1-bit ports have no range).
pub fn parse_top_ports(verilog: &str) -> Result<Vec<PortInfo>, HarnessError> {
    let start = match verilog.find("module top(") {
        Some(s) => s,
        None => return err("generated Verilog has no `module top(`"),
    };
    let body = &verilog[start..];
    let end = body.find("endmodule").unwrap_or(body.len());
    let body = &body[..end];
    let close = match body.find(");") {
        Some(c) => c,
        None => return err("cannot find the end of `module top(...)`"),
    };
    let args: Vec<&str> =
        body["module top(".len()..close].split(',').map(str::trim).filter(|s| !s.is_empty()).collect();
    let mut decls: HashMap<String, PortInfo> = HashMap::new();
    for line in body[close + 2..].lines() {
        let line = line.trim();
        let dir = if line.starts_with("input ") {
            true
        } else if line.starts_with("output ") {
            false
        } else {
            continue;
        };
        let line = line.trim_end_matches(';');
        let mut width = 1usize;
        let mut name = None;
        for tok in line.split_whitespace().skip(1) {
            match tok {
                "wire" | "reg" | "signed" => {}
                t if t.starts_with('[') => {
                    let inner = t.trim_start_matches('[').trim_end_matches(']');
                    let (hi, lo) =
                        inner.split_once(':').ok_or_else(|| HarnessError(format!("cannot parse range in `{line}`")))?;
                    let hi: usize = hi.parse().map_err(|_| HarnessError(format!("cannot parse range in `{line}`")))?;
                    if lo != "0" {
                        return err(format!("range not ending at 0 in `{line}`"));
                    }
                    width = hi + 1;
                }
                t => name = Some(t.to_string()),
            }
        }
        let name = name.ok_or_else(|| HarnessError(format!("no port name in `{line}`")))?;
        decls.insert(name.clone(), PortInfo { name, width, input: dir });
    }
    args.iter()
        .map(|a| decls.remove(*a).ok_or_else(|| HarnessError(format!("no declaration for port `{a}` of top"))))
        .collect()
}

/// FNV-1a, 64 bits: a stable hash for the cache key (std's hasher may change between releases).
fn fnv1a(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for b in p.iter().chain(&(p.len() as u64).to_le_bytes()) {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

fn cxx_type_bits(width: usize) -> usize {
    match width {
        0..=8 => 8,
        9..=16 => 16,
        17..=32 => 32,
        33..=64 => 64,
        _ => 0,
    }
}

/// The C++ shim for `ports` of the model class `class`.
fn shim_source(class: &str, ports: &[PortInfo]) -> String {
    use std::fmt::Write as _;
    let mut set = String::new();
    let mut get = String::new();
    for (i, p) in ports.iter().enumerate() {
        let top_mask = if p.width % 32 == 0 {
            "0xFFFFFFFFu".to_string()
        } else {
            format!("0x{:X}u", (1u64 << (p.width % 32)) - 1)
        };
        if p.width > 64 {
            let n = p.words();
            if p.input {
                let _ = writeln!(
                    set,
                    "    case {i}: for (int k = 0; k < {n}; ++k) m->{nm}[k] = w[k]; m->{nm}[{last}] &= {top_mask}; return 0;",
                    nm = p.name,
                    last = n - 1
                );
            }
            let _ =
                writeln!(get, "    case {i}: for (int k = 0; k < {n}; ++k) w[k] = m->{nm}[k]; return 0;", nm = p.name);
        } else if p.width > 32 {
            if p.input {
                let _ = writeln!(
                    set,
                    "    case {i}: m->{nm} = ((uint64_t)(w[1] & {top_mask}) << 32) | (uint64_t)w[0]; return 0;",
                    nm = p.name
                );
            }
            let _ = writeln!(
                get,
                "    case {i}: w[0] = (uint32_t)m->{nm}; w[1] = (uint32_t)(m->{nm} >> 32); return 0;",
                nm = p.name
            );
        } else {
            if p.input {
                let _ = writeln!(
                    set,
                    "    case {i}: m->{nm} = (uint{b}_t)(w[0] & {top_mask}); return 0;",
                    nm = p.name,
                    b = cxx_type_bits(p.width)
                );
            }
            let _ = writeln!(get, "    case {i}: w[0] = (uint32_t)m->{nm}; return 0;", nm = p.name);
        }
    }
    let sig: String =
        ports.iter().map(|p| format!("{}:{}:{};", if p.input { "i" } else { "o" }, p.width, p.name)).collect();
    let tick = if ports.iter().any(|p| p.name == "clock" && p.input && p.width == 1) {
        "t->m->clock = 0; t->m->eval(); t->ctx->timeInc(1); t->m->clock = 1; t->m->eval(); t->ctx->timeInc(1); return 0;"
    } else {
        "(void)t; return -1;"
    };
    format!(
        r#"// Generated by hdl/tests/harness: C ABI over the Verilated model {class}.
#include "{class}.h"
#include "verilated.h"
#include <cstdint>

namespace {{
struct Tb {{
    VerilatedContext* ctx;
    {class}* m;
}};
}}

#define TB_API extern "C" __attribute__((visibility("default")))

TB_API const char* tb_ports() {{ return "{sig}"; }}

TB_API void* tb_new() {{
    Tb* t = new Tb;
    t->ctx = new VerilatedContext;
    t->ctx->fatalOnError(false);
    t->m = new {class}(t->ctx, "top");
    return t;
}}

TB_API void tb_free(void* p) {{
    Tb* t = static_cast<Tb*>(p);
    t->m->final();
    delete t->m;
    delete t->ctx;
    delete t;
}}

TB_API void tb_eval(void* p) {{ static_cast<Tb*>(p)->m->eval(); }}

TB_API int tb_tick(void* p) {{
    Tb* t = static_cast<Tb*>(p);
    {tick}
}}

TB_API int tb_set(void* p, int port, const uint32_t* w) {{
    {class}* m = static_cast<Tb*>(p)->m;
    switch (port) {{
{set}    default: return -1;
    }}
}}

TB_API int tb_get(void* p, int port, uint32_t* w) {{
    {class}* m = static_cast<Tb*>(p)->m;
    switch (port) {{
{get}    default: return -1;
    }}
}}
"#
    )
}

fn tool_version(tool: &str) -> Result<String, HarnessError> {
    match Command::new(tool).arg("--version").output() {
        Ok(o) if o.status.success() => Ok(String::from_utf8_lossy(&o.stdout).trim().to_string()),
        _ => err(format!(
            "`{tool}` is not installed or does not run: run scripts/setup.sh (Verilator >= 5.006, g++ and make are required)"
        )),
    }
}

fn verilator_root() -> Result<PathBuf, HarnessError> {
    let out = Command::new("verilator")
        .args(["--getenv", "VERILATOR_ROOT"])
        .output()
        .map_err(|e| HarnessError(format!("cannot run verilator ({e}): run scripts/setup.sh")))?;
    let root = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    if !root.join("include/verilated.h").exists() {
        return err(format!("Verilator root {} has no include/verilated.h: run scripts/setup.sh", root.display()));
    }
    Ok(root)
}

fn run(cmd: &mut Command, what: &str, log: &Path) -> Result<(), HarnessError> {
    let out =
        cmd.output().map_err(|e| HarnessError(format!("cannot run {what} ({cmd:?}): {e}: run scripts/setup.sh")))?;
    let text = format!("$ {cmd:?}\n{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let _ = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .and_then(|mut f| std::io::Write::write_all(&mut f, text.as_bytes()));
    if !out.status.success() {
        let tail: Vec<&str> = text.lines().rev().take(60).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        return err(format!("{what} failed ({}), log {}:\n{}", out.status, log.display(), tail.join("\n")));
    }
    Ok(())
}

/// Where cached libraries live: `$RNIC_BLOCK_TB_DIR`, else `<target>/block-tb`.
pub fn cache_root() -> PathBuf {
    if let Some(d) = std::env::var_os("RNIC_BLOCK_TB_DIR") {
        return PathBuf::from(d);
    }
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    tmp.parent().unwrap_or(tmp).join("block-tb")
}

fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The Verilog of `block` as the harness builds it: rust-hdl's output, then the CRC cores if
/// the design instantiates any.
pub fn verilog_of<T: Block>(block: &T) -> String {
    let mut v = generate_verilog(block);
    if v.contains("rnic_crc32") {
        v.push_str("\n// ---- rnic_hdl::crc::verilog::cores() ----\n");
        v.push_str(&rnic_hdl::crc::verilog::cores());
    }
    v
}

/// Builds (or finds in the cache) the shared library of `verilog`; returns its path and ports.
pub fn build_library(name: &str, verilog: &str) -> Result<(PathBuf, Vec<PortInfo>), HarnessError> {
    if !valid_name(name) {
        return err(format!("model name `{name}` must be [A-Za-z0-9_]+"));
    }
    let ports = parse_top_ports(verilog)?;
    let class = format!("Vtb_{name}");
    let shim = shim_source(&class, &ports);
    let vversion = tool_version("verilator")?;
    let flags = format!("{VERILATOR_FLAGS:?}{MAKE_FLAGS:?}");
    let hash = fnv1a(&[
        HARNESS_VERSION.as_bytes(),
        verilog.as_bytes(),
        shim.as_bytes(),
        vversion.as_bytes(),
        flags.as_bytes(),
    ]);
    let root = cache_root();
    fs::create_dir_all(&root).map_err(|e| HarnessError(format!("create {}: {e}", root.display())))?;
    let dir = root.join(format!("{name}-{hash:016x}"));
    let lib = dir.join(format!("lib{class}.so"));

    // One builder per name at a time, across threads and processes.
    let lock_path = root.join(format!("{name}.lock"));
    let lock =
        fs::File::create(&lock_path).map_err(|e| HarnessError(format!("create {}: {e}", lock_path.display())))?;
    lock.lock().map_err(|e| HarnessError(format!("lock {}: {e}", lock_path.display())))?;
    if lib.exists() {
        return Ok((lib, ports));
    }

    tool_version("g++")?;
    tool_version("make")?;
    let vroot = verilator_root()?;
    let t0 = Instant::now();
    let _ = fs::remove_dir_all(&dir);
    let obj = dir.join("obj");
    fs::create_dir_all(&obj).map_err(|e| HarnessError(format!("create {}: {e}", obj.display())))?;
    let log = dir.join("build.log");
    let v_path = dir.join("top.v");
    fs::write(&v_path, verilog).map_err(|e| HarnessError(format!("write {}: {e}", v_path.display())))?;
    let shim_path = dir.join("shim.cpp");
    fs::write(&shim_path, &shim).map_err(|e| HarnessError(format!("write shim: {e}")))?;

    run(
        Command::new("verilator")
            .args(VERILATOR_FLAGS)
            .args(["--prefix", &class, "--top-module", "top", "--Mdir"])
            .arg(&obj)
            .args(["-CFLAGS", "-fPIC -fvisibility=hidden"])
            .arg(&v_path),
        "verilator",
        &log,
    )?;
    let jobs = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2).to_string();
    run(
        Command::new("make")
            .arg("-C")
            .arg(&obj)
            .arg("-f")
            .arg(format!("{class}.mk"))
            .arg(format!("-j{jobs}"))
            .args(MAKE_FLAGS)
            .arg(format!("{class}__ALL.a"))
            .args(["verilated.o", "verilated_threads.o"]),
        "make (Verilated model)",
        &log,
    )?;
    let tmp_lib = dir.join(format!("lib{class}.so.tmp"));
    let inc = vroot.join("include");
    run(
        Command::new("g++")
            .args(["-shared", "-fPIC", "-O2", "-std=c++17", "-fvisibility=hidden"])
            .args(["-faligned-new", "-Wno-unused-parameter"])
            .args(["-DVM_COVERAGE=0", "-DVM_SC=0", "-DVM_TRACE=0", "-DVM_TRACE_FST=0", "-DVM_TRACE_VCD=0"])
            .arg("-I")
            .arg(&obj)
            .arg("-I")
            .arg(&inc)
            .arg("-I")
            .arg(inc.join("vltstd"))
            .arg("-o")
            .arg(&tmp_lib)
            .arg(&shim_path)
            .arg(obj.join(format!("{class}__ALL.a")))
            .arg(obj.join("verilated.o"))
            .arg(obj.join("verilated_threads.o"))
            .args(["-Wl,-Bsymbolic", "-Wl,--exclude-libs,ALL", "-lpthread"]),
        "g++ (shared library)",
        &log,
    )?;
    fs::rename(&tmp_lib, &lib).map_err(|e| HarnessError(format!("rename {}: {e}", lib.display())))?;
    eprintln!("block-tb: built {name} in {:.1} s ({})", t0.elapsed().as_secs_f64(), dir.display());
    // Older builds of the same name are stale: drop them.
    if let Ok(rd) = fs::read_dir(&root) {
        for e in rd.flatten() {
            let fname = e.file_name().to_string_lossy().to_string();
            if let Some(rest) = fname.strip_prefix(&format!("{name}-")) {
                if rest.len() == 16 && rest.chars().all(|c| c.is_ascii_hexdigit()) && e.path() != dir {
                    let _ = fs::remove_dir_all(e.path());
                }
            }
        }
    }
    Ok((lib, ports))
}

type FnNew = unsafe extern "C" fn() -> *mut c_void;
type FnFree = unsafe extern "C" fn(*mut c_void);
type FnEval = unsafe extern "C" fn(*mut c_void);
type FnTick = unsafe extern "C" fn(*mut c_void) -> c_int;
type FnSet = unsafe extern "C" fn(*mut c_void, c_int, *const u32) -> c_int;
type FnGet = unsafe extern "C" fn(*mut c_void, c_int, *mut u32) -> c_int;
type FnPorts = unsafe extern "C" fn() -> *const c_char;

/// One instance of a Verilated block.
pub struct Dut {
    name: String,
    ports: Vec<PortInfo>,
    index: HashMap<String, usize>,
    handle: *mut c_void,
    f_free: FnFree,
    f_eval: FnEval,
    f_tick: FnTick,
    f_set: FnSet,
    f_get: FnGet,
    words: Vec<u32>,
    cycles: u64,
    // Last: the library must outlive the handle (fields drop in declaration order, and Drop
    // frees the handle first anyway).
    _lib: libloading::Library,
}

impl Dut {
    /// Builds `T::default()` (after `connect_all`) as model `name` and instantiates it.
    pub fn build<T: Block + Default>(name: &str) -> Result<Dut, HarnessError> {
        let mut block = T::default();
        block.connect_all();
        Self::build_block(name, &block)
    }

    /// Builds an already connected block.
    pub fn build_block<T: Block>(name: &str, block: &T) -> Result<Dut, HarnessError> {
        Self::from_verilog(name, &verilog_of(block))
    }

    /// Builds a model from Verilog text whose top module is `top` (with every core it needs).
    pub fn from_verilog(name: &str, verilog: &str) -> Result<Dut, HarnessError> {
        let (path, ports) = build_library(name, verilog)?;
        // SAFETY: the library was built by build_library from the shim above; its
        // initialisers are Verilator's and the C++ runtime's.
        let lib = unsafe { libloading::Library::new(&path) }
            .map_err(|e| HarnessError(format!("load {}: {e}", path.display())))?;
        // SAFETY: the symbol types match the shim's declarations.
        unsafe {
            let sym = |n: &[u8]| -> Result<*const c_void, HarnessError> {
                lib.get::<*const c_void>(n).map(|s| *s).map_err(|e| HarnessError(format!("{}: {e}", path.display())))
            };
            let f_ports: FnPorts = std::mem::transmute(sym(b"tb_ports\0")?);
            let f_new: FnNew = std::mem::transmute(sym(b"tb_new\0")?);
            let f_free: FnFree = std::mem::transmute(sym(b"tb_free\0")?);
            let f_eval: FnEval = std::mem::transmute(sym(b"tb_eval\0")?);
            let f_tick: FnTick = std::mem::transmute(sym(b"tb_tick\0")?);
            let f_set: FnSet = std::mem::transmute(sym(b"tb_set\0")?);
            let f_get: FnGet = std::mem::transmute(sym(b"tb_get\0")?);
            let sig = CStr::from_ptr(f_ports()).to_string_lossy().to_string();
            let expect: String =
                ports.iter().map(|p| format!("{}:{}:{};", if p.input { "i" } else { "o" }, p.width, p.name)).collect();
            if sig != expect {
                return err(format!(
                    "{}: library ports do not match the Verilog (stale cache?): {sig} vs {expect}",
                    path.display()
                ));
            }
            let handle = f_new();
            let index = ports.iter().enumerate().map(|(i, p)| (p.name.clone(), i)).collect();
            let maxw = ports.iter().map(PortInfo::words).max().unwrap_or(1);
            let mut dut = Dut {
                name: name.to_string(),
                ports,
                index,
                handle,
                f_free,
                f_eval,
                f_tick,
                f_set,
                f_get,
                words: vec![0; maxw.max(2)],
                cycles: 0,
                _lib: lib,
            };
            dut.eval();
            Ok(dut)
        }
    }

    /// The model's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Every port of `top`, in argument order.
    pub fn ports(&self) -> &[PortInfo] {
        &self.ports
    }

    /// Looks a port up once (panics if there is none).
    pub fn port(&self, name: &str) -> Port {
        Port { index: name.resolve(self) }
    }

    /// Whether a port of that name exists.
    pub fn has_port(&self, name: &str) -> bool {
        self.index.contains_key(name)
    }

    /// Width of a port in bits.
    pub fn width(&self, p: impl PortRef) -> usize {
        self.ports[p.resolve(self)].width
    }

    fn input(&self, p: &impl PortRef) -> usize {
        let i = p.resolve(self);
        assert!(self.ports[i].input, "{}: `{}` is an output", self.name, self.ports[i].name);
        i
    }

    /// Sets an input of up to 64 bits (panics if `value` does not fit).
    pub fn set(&mut self, p: impl PortRef, value: u64) {
        let i = self.input(&p);
        let w = self.ports[i].width;
        assert!(w <= 64, "{}: `{}` is {w} bits wide: use set_wide", self.name, self.ports[i].name);
        assert!(
            w == 64 || value >> w == 0,
            "{}: value {value:#x} does not fit `{}` ({w} bits)",
            self.name,
            self.ports[i].name
        );
        self.words[0] = value as u32;
        self.words[1] = (value >> 32) as u32;
        // SAFETY: handle is live; words holds at least the port's word count.
        let rc = unsafe { (self.f_set)(self.handle, i as c_int, self.words.as_ptr()) };
        assert_eq!(rc, 0, "tb_set failed");
    }

    /// Sets a boolean input.
    pub fn set_bit(&mut self, p: impl PortRef, value: bool) {
        self.set(p, u64::from(value));
    }

    /// Sets an input of any width from little-endian bytes (byte `k` = bits `8k+7..8k`).
    /// `bytes` may be shorter than the port (the rest is zero); bytes or bits beyond the port's
    /// width must be zero.
    pub fn set_wide(&mut self, p: impl PortRef, bytes: &[u8]) {
        let i = self.input(&p);
        let info = &self.ports[i];
        let nb = info.bytes();
        assert!(
            bytes.len() <= nb || bytes[nb..].iter().all(|b| *b == 0),
            "{}: {} bytes do not fit `{}` ({} bits)",
            self.name,
            bytes.len(),
            info.name,
            info.width
        );
        if !info.width.is_multiple_of(8) && bytes.len() >= nb {
            assert!(
                bytes[nb - 1] >> (info.width % 8) == 0,
                "{}: value does not fit `{}` ({} bits)",
                self.name,
                info.name,
                info.width
            );
        }
        let nw = info.words();
        for k in 0..nw {
            let mut w = [0u8; 4];
            for (j, b) in w.iter_mut().enumerate() {
                *b = bytes.get(4 * k + j).copied().unwrap_or(0);
            }
            self.words[k] = u32::from_le_bytes(w);
        }
        // SAFETY: as in set.
        let rc = unsafe { (self.f_set)(self.handle, i as c_int, self.words.as_ptr()) };
        assert_eq!(rc, 0, "tb_set failed");
    }

    /// Sets an input from a rust-hdl value (`Bits<N>`, or a `LogicStruct` record via `.into()`).
    pub fn set_bits<const N: usize>(&mut self, p: impl PortRef, value: Bits<N>) {
        self.set_wide(p, &bits_to_bytes(&value));
    }

    /// Reads a port of up to 64 bits.
    pub fn get(&mut self, p: impl PortRef) -> u64 {
        let i = p.resolve(self);
        let w = self.ports[i].width;
        assert!(w <= 64, "{}: `{}` is {w} bits wide: use get_wide", self.name, self.ports[i].name);
        // SAFETY: handle is live; words holds at least the port's word count.
        let rc = unsafe { (self.f_get)(self.handle, i as c_int, self.words.as_mut_ptr()) };
        assert_eq!(rc, 0, "tb_get failed");
        let lo = u64::from(self.words[0]);
        if w > 32 {
            lo | (u64::from(self.words[1]) << 32)
        } else {
            lo
        }
    }

    /// Reads a 1-bit port (or any port: nonzero).
    pub fn get_bit(&mut self, p: impl PortRef) -> bool {
        self.get(p) != 0
    }

    /// Reads any port as little-endian bytes (`ceil(width / 8)` of them).
    pub fn get_wide(&mut self, p: impl PortRef) -> Vec<u8> {
        let i = p.resolve(self);
        let info = &self.ports[i];
        let (nw, nb) = (info.words(), info.bytes());
        self.words[1] = 0;
        // SAFETY: as in get.
        let rc = unsafe { (self.f_get)(self.handle, i as c_int, self.words.as_mut_ptr()) };
        assert_eq!(rc, 0, "tb_get failed");
        let mut out = Vec::with_capacity(4 * nw);
        for w in &self.words[..nw] {
            out.extend_from_slice(&w.to_le_bytes());
        }
        out.truncate(nb);
        out
    }

    /// Reads a port as a rust-hdl value (`Bits<N>`; convert a record with `Rec::from(bits)`).
    pub fn get_bits<const N: usize>(&mut self, p: impl PortRef) -> Bits<N> {
        let bytes = self.get_wide(p);
        bytes_to_bits::<N>(&bytes)
    }

    /// Settles the combinational logic after inputs changed.
    pub fn eval(&mut self) {
        // SAFETY: handle is live.
        unsafe { (self.f_eval)(self.handle) }
    }

    /// One clock cycle: `clock` low, eval, high (rising edge: DFFs update), eval.
    pub fn tick(&mut self) {
        // SAFETY: handle is live.
        let rc = unsafe { (self.f_tick)(self.handle) };
        assert_eq!(rc, 0, "{}: tick() needs a 1-bit input named `clock`", self.name);
        self.cycles += 1;
    }

    /// `n` clock cycles with the inputs unchanged.
    pub fn ticks(&mut self, n: usize) {
        for _ in 0..n {
            self.tick();
        }
    }

    /// Clock cycles run so far.
    pub fn cycles(&self) -> u64 {
        self.cycles
    }

    /// Holds `reset` high for `cycles` clock cycles, then low (inputs otherwise unchanged).
    pub fn reset(&mut self, cycles: usize) {
        self.set("reset", 1);
        self.eval();
        self.ticks(cycles);
        self.set("reset", 0);
        self.eval();
    }
}

impl Drop for Dut {
    fn drop(&mut self) {
        // SAFETY: the handle came from tb_new of this library and is freed once.
        unsafe { (self.f_free)(self.handle) }
    }
}

/// A `Bits<N>` (or a record converted with `.into()`) as little-endian bytes.
pub fn bits_to_bytes<const N: usize>(b: &Bits<N>) -> Vec<u8> {
    let nb = N.div_ceil(8);
    let mut out = Vec::with_capacity(nb + 8);
    let mut off = 0;
    while off < N {
        let chunk = if N - off >= 64 {
            b.get_bits::<64>(off).to_u64()
        } else {
            // Fewer than 64 bits left: read them one by one (rare: only record tails).
            let mut v = 0u64;
            for k in 0..(N - off) {
                if b.get_bit(off + k) {
                    v |= 1 << k;
                }
            }
            v
        };
        out.extend_from_slice(&chunk.to_le_bytes());
        off += 64;
    }
    out.truncate(nb);
    out
}

/// Little-endian bytes as a `Bits<N>` (bytes beyond `N` bits are ignored).
pub fn bytes_to_bits<const N: usize>(bytes: &[u8]) -> Bits<N> {
    let word = |off: usize| {
        let mut w = [0u8; 8];
        for (j, x) in w.iter_mut().enumerate() {
            *x = bytes.get(off / 8 + j).copied().unwrap_or(0);
        }
        u64::from_le_bytes(w)
    };
    if N <= 64 {
        let v = word(0);
        let v = if N == 64 { v } else { v & ((1u64 << N) - 1) };
        return v.to_bits::<N>();
    }
    let mut out = Bits::<N>::default();
    let mut off = 0;
    while off < N {
        let mut v = word(off);
        if N - off < 64 {
            v &= (1u64 << (N - off)) - 1;
        }
        out = out | (Bits::<N>::from(v) << off as u64);
        off += 64;
    }
    out
}

/// Packs `(lsb offset, width, value)` fields into little-endian bytes (`total_bits` wide): how
/// tests build a record port value from a `LogicStruct`'s `get_my_offset_*` layout without
/// relying on its declared total width.
pub fn pack_fields(total_bits: usize, fields: &[(usize, usize, u64)]) -> Vec<u8> {
    let mut out = vec![0u8; total_bits.div_ceil(8)];
    for &(off, width, value) in fields {
        assert!(off + width <= total_bits, "field at {off}+{width} beyond {total_bits} bits");
        assert!(width == 64 || value >> width == 0, "value {value:#x} does not fit {width} bits");
        for k in 0..width {
            if value >> k & 1 == 1 {
                out[(off + k) / 8] |= 1 << ((off + k) % 8);
            }
        }
    }
    out
}

/// splitmix64: deterministic random test vectors without another dependency. The seed comes
/// from `$RNIC_TB_SEED` when set (print it in failures to reproduce a run).
#[derive(Debug, Clone)]
pub struct Rng(pub u64);

impl Rng {
    /// A generator seeded from `$RNIC_TB_SEED` if set, else from `default_seed`.
    pub fn from_env(default_seed: u64) -> Rng {
        let seed = std::env::var("RNIC_TB_SEED")
            .ok()
            .and_then(|s| {
                let s = s.trim();
                s.strip_prefix("0x").map(|h| u64::from_str_radix(h, 16).ok()).unwrap_or_else(|| s.parse().ok())
            })
            .unwrap_or(default_seed);
        Rng(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn u32(&mut self) -> u32 {
        self.next_u64() as u32
    }
    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        assert!(lo <= hi);
        lo + self.next_u64() % (hi - lo + 1)
    }
    /// True with probability `num/den`.
    pub fn chance(&mut self, num: u64, den: u64) -> bool {
        self.next_u64() % den < num
    }
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next_u64() as u8).collect()
    }
    pub fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[(self.next_u64() % xs.len() as u64) as usize]
    }
}
