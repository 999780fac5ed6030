//! Builds the NIC model: generates the Verilog with `rnic_hdl::generate`, verilates it into a
//! static library, builds Verilator's runtime, compiles the C ABI shim (`csrc/nic_shim.cpp`) and
//! tells rustc to link all of it.
//!
//! Why not the `verilated`/`verilator` crates: they do not build against Verilator 5 (see
//! docs/simulator.md), so this script drives the `verilator` executable itself.
//!
//! Outputs in `OUT_DIR`: `verilog/` (generated sources), `obj/` (Verilator's build directory),
//! `libVrnic_nic.a` (the model), `libverilated_rt.a` (Verilator's runtime), the shim archive, and
//! `build_stats.json` (wall-clock seconds of each step, read by `rnic_sim::build_info`).
use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// The C++ class prefix of the verilated model (and the name of its header).
const PREFIX: &str = "Vrnic_nic";

fn main() {
    if let Err(e) = run() {
        // A build script reports failure by exiting non-zero; the message goes to the user.
        eprintln!("rnic-sim build: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=csrc/nic_shim.cpp");
    println!("cargo:rerun-if-changed=../hdl/src");
    println!("cargo:rerun-if-changed=../hdl/contract/src");
    println!("cargo:rerun-if-env-changed=VERILATOR");
    println!("cargo:rerun-if-env-changed=RNIC_SIM_VERILATOR_FLAGS");

    let out_dir = PathBuf::from(env::var("OUT_DIR").map_err(|e| format!("OUT_DIR: {e}"))?);
    let waveform = env::var_os("CARGO_FEATURE_WAVEFORM").is_some();
    let jobs = env::var("NUM_JOBS").unwrap_or_else(|_| "1".to_string());
    let verilator = env::var("VERILATOR").unwrap_or_else(|_| "verilator".to_string());

    // 1. Generate the Verilog.
    let t_gen = Instant::now();
    let verilog_dir = out_dir.join("verilog");
    let generated =
        rnic_hdl::generate(&verilog_dir).map_err(|e| format!("rnic_hdl::generate({}): {e}", verilog_dir.display()))?;
    if generated.sources.is_empty() {
        return Err("rnic_hdl::generate returned no Verilog sources".to_string());
    }
    let generate_seconds = t_gen.elapsed().as_secs_f64();

    // 2. Find Verilator.
    let root = verilator_root(&verilator)?;
    let include = root.join("include");

    // 3. Verilate and compile the model (Vrnic_nic__ALL.a).
    let obj_dir = out_dir.join("obj");
    fs::create_dir_all(&obj_dir).map_err(|e| format!("create {}: {e}", obj_dir.display()))?;
    let t_verilate = Instant::now();
    let mut cmd = Command::new(&verilator);
    cmd.args(["--cc", "--build", "-O3"])
        // rust-hdl's widgets emit `x + 32'h1` on narrower vectors (WIDTH), and its whole-struct
        // combinational blocks look circular to Verilator (UNOPTFLAT: a speed hint, not a bug;
        // Verilator iterates such logic until it settles). Every other warning (SELRANGE,
        // MODDUP, MULTIDRIVEN, ...) stays fatal because those catch real bugs.
        .args(["-Wno-WIDTH", "-Wno-UNOPTFLAT"])
        .args(["--prefix", PREFIX])
        .arg("--Mdir")
        .arg(&obj_dir)
        .args(["--top-module", rnic_hdl::TOP_MODULE])
        // rust-hdl emits no `timescale; make 1 time unit = 1 ps so waveform times are in ps.
        .args(["--timescale", "1ps/1ps"])
        .args(["--build-jobs", &jobs])
        // The default C++ optimisation of the model is -Os; -O3 is ~2x faster to simulate.
        .args(["-MAKEFLAGS", "OPT_FAST=-O3", "-MAKEFLAGS", "OPT_SLOW=-O1"])
        .args(["-CFLAGS", "-fPIC"]);
    if waveform {
        cmd.arg("--trace-fst");
    }
    // Escape hatch for experiments, whitespace-separated. No portable flag measured faster than
    // this set (docs/simulator.md, "Verilator build flags and simulation speed"); on a machine
    // that builds and runs the model itself, `-CFLAGS -march=native` is ~20 % faster with
    // AVX-512, but a model built so dies with SIGILL on another CPU (e.g. a cached CI target/).
    if let Ok(extra) = env::var("RNIC_SIM_VERILATOR_FLAGS") {
        cmd.args(extra.split_whitespace());
    }
    cmd.args(&generated.sources);
    // Verilating and compiling is the slow step; skip it when neither the Verilog, the flags nor
    // Verilator changed since the last successful build in this OUT_DIR (any edit under hdl/src,
    // even a test, reruns this script). The time reported is then the last real build's.
    let fingerprint = model_fingerprint(&cmd, &verilator, &generated.sources)?;
    let model_stamp = out_dir.join("model.stamp");
    let model_ar = obj_dir.join(format!("{PREFIX}__ALL.a"));
    let cached = fs::read_to_string(&model_stamp)
        .ok()
        .filter(|_| model_ar.exists())
        .and_then(|s| s.strip_prefix(&format!("{fingerprint:016x} ")).and_then(|t| t.trim().parse::<f64>().ok()));
    let (verilate_seconds, model_cached) = match cached {
        Some(secs) => (secs, true),
        None => {
            let _ = fs::remove_file(&model_stamp);
            run_command(&mut cmd, "verilator")?;
            let secs = t_verilate.elapsed().as_secs_f64();
            fs::write(&model_stamp, format!("{fingerprint:016x} {secs:.3}\n"))
                .map_err(|e| format!("write {}: {e}", model_stamp.display()))?;
            (secs, false)
        }
    };

    // 4. Verilator's runtime, built by the model's own makefile so the flags match. It depends
    //    only on the Verilator version and the tracing flags, not on the design, so it is rebuilt
    //    only when those change (saves ~4 s per RTL change).
    let t_runtime = Instant::now();
    let mut runtime_objs = vec!["verilated.o", "verilated_threads.o"];
    if waveform {
        runtime_objs.push("verilated_fst_c.o");
    }
    let rt_lib = out_dir.join("libverilated_rt.a");
    let rt_stamp = out_dir.join("verilated_rt.stamp");
    let stamp = format!("{} waveform={waveform}\n", verilator_version(&verilator)?);
    let rt_cached = fs::read_to_string(&rt_stamp)
        .ok()
        .filter(|_| rt_lib.exists())
        .and_then(|s| s.strip_prefix(&stamp).and_then(|t| t.trim().parse::<f64>().ok()));
    let runtime_cached = rt_cached.is_some();
    let runtime_seconds = if let Some(secs) = rt_cached {
        secs
    } else {
        let mut make = Command::new("make");
        make.arg("-C")
            .arg(&obj_dir)
            .arg("-f")
            .arg(format!("{PREFIX}.mk"))
            .arg(format!("-j{jobs}"))
            .arg("OPT_GLOBAL=-O2")
            .args(&runtime_objs);
        run_command(&mut make, "make (Verilator runtime)").map_err(|e| {
            if waveform {
                format!("{e}\n(feature `waveform` needs zlib headers: on Debian, apt-get install zlib1g-dev)")
            } else {
                e
            }
        })?;
        let _ = fs::remove_file(&rt_lib);
        let mut ar = Command::new(env::var("AR").unwrap_or_else(|_| "ar".to_string()));
        ar.arg("rcs").arg(&rt_lib);
        for o in &runtime_objs {
            ar.arg(obj_dir.join(o));
        }
        run_command(&mut ar, "ar (Verilator runtime)")?;
        let secs = t_runtime.elapsed().as_secs_f64();
        fs::write(&rt_stamp, format!("{stamp}{secs:.3}\n"))
            .map_err(|e| format!("write {}: {e}", rt_stamp.display()))?;
        secs
    };

    // 5. The model's archive with the `lib` prefix rustc's `static=` needs.
    let model_lib = out_dir.join(format!("lib{PREFIX}.a"));
    fs::copy(obj_dir.join(format!("{PREFIX}__ALL.a")), &model_lib)
        .map_err(|e| format!("copy the model archive: {e}"))?;

    // 6. The C ABI shim. Same defines as the model so the class layout agrees.
    let t_shim = Instant::now();
    let trace = if waveform { "1" } else { "0" };
    // Waveform dumps take their change flags from Verilator's own eval_step, which the fast
    // cycle bypasses at the rising edge: a waveform build evaluates the reference way.
    let fast_cycle = !waveform && fast_cycle_supported(&obj_dir, &verilator_version(&verilator)?);
    println!("cargo:rustc-env=RNIC_SIM_FAST_CYCLE_BUILT={}", u8::from(fast_cycle));
    let state_profile = state_profile_supported(&obj_dir);
    write_state_names(&generated.sources, &out_dir.join("state_names.rs"))?;
    cc::Build::new()
        .cpp(true)
        .cpp_link_stdlib(None) // linked explicitly below, after the static libraries
        .file("csrc/nic_shim.cpp")
        .include(&obj_dir)
        .include(&include)
        .include(include.join("vltstd"))
        .define("VM_COVERAGE", "0")
        .define("VM_SC", "0")
        .define("VM_TRACE", trace)
        .define("VM_TRACE_FST", trace)
        .define("VM_TRACE_VCD", "0")
        .define("RNIC_PREFIX_HEADER", Some(format!("\"{PREFIX}.h\"").as_str()))
        .define("RNIC_MODEL", PREFIX)
        .define("RNIC_ROOT", format!("{PREFIX}___024root").as_str())
        .define("RNIC_ROOT_HEADER", Some(format!("\"{PREFIX}___024root.h\"").as_str()))
        .define("RNIC_FAST_CYCLE", if fast_cycle { "1" } else { "0" })
        .define("RNIC_STATE_PROFILE", if state_profile { "1" } else { "0" })
        .flag_if_supported("-std=c++17")
        .flag_if_supported("-faligned-new")
        .flag_if_supported("-Wno-unused-parameter")
        .opt_level(2)
        .try_compile("rnic_nic_shim")
        .map_err(|e| format!("compile csrc/nic_shim.cpp: {e}"))?;
    let shim_seconds = t_shim.elapsed().as_secs_f64();

    // Link order: shim (emitted by cc above) -> model -> runtime -> C++ std/pthread/zlib.
    println!("cargo:rustc-link-search=native={}", out_dir.display());
    println!("cargo:rustc-link-lib=static={PREFIX}");
    println!("cargo:rustc-link-lib=static=verilated_rt");
    println!("cargo:rustc-link-lib=dylib=stdc++");
    println!("cargo:rustc-link-lib=dylib=pthread");
    if waveform {
        println!("cargo:rustc-link-lib=dylib=z");
    }

    let total = generate_seconds + verilate_seconds + runtime_seconds + shim_seconds;
    let sources: Vec<String> = generated.sources.iter().map(|p| json_string(&p.display().to_string())).collect();
    let stats = format!(
        "{{\n  \"generate_seconds\": {generate_seconds:.3},\n  \"verilate_seconds\": {verilate_seconds:.3},\n  \
         \"runtime_seconds\": {runtime_seconds:.3},\n  \"shim_seconds\": {shim_seconds:.3},\n  \
         \"total_seconds\": {total:.3},\n  \"model_cached\": {model_cached},\n  \
         \"runtime_cached\": {runtime_cached},\n  \"waveform\": {waveform},\n  \"jobs\": {},\n  \
         \"sources\": [{}]\n}}\n",
        json_string(&jobs),
        sources.join(", ")
    );
    fs::write(out_dir.join("build_stats.json"), stats).map_err(|e| format!("write build_stats.json: {e}"))?;
    Ok(())
}

/// `VERILATOR_ROOT` as reported by the installed Verilator.
fn verilator_root(verilator: &str) -> Result<PathBuf, String> {
    let out = Command::new(verilator).args(["--getenv", "VERILATOR_ROOT"]).output().map_err(|e| {
        format!(
            "cannot run `{verilator}` ({e}). Verilator >= 5.006 is required: run scripts/setup.sh \
             (or set VERILATOR=/path/to/verilator)"
        )
    })?;
    if !out.status.success() {
        return Err(format!("`{verilator} --getenv VERILATOR_ROOT` failed; run scripts/setup.sh"));
    }
    let root = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    if !root.join("include").join("verilated.h").exists() {
        return Err(format!("Verilator root {} has no include/verilated.h; run scripts/setup.sh", root.display()));
    }
    Ok(root)
}

/// FNV-1a over everything that determines the verilated model: Verilator's version, its
/// arguments and the contents of every source.
fn model_fingerprint(cmd: &Command, verilator: &str, sources: &[PathBuf]) -> Result<u64, String> {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for &b in bytes {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        // A separator so ("ab", "c") and ("a", "bc") differ.
        h ^= 0xFF;
        h = h.wrapping_mul(0x0100_0000_01b3);
    };
    eat(verilator_version(verilator)?.as_bytes());
    for a in cmd.get_args() {
        eat(a.as_encoded_bytes());
    }
    for src in sources {
        eat(&fs::read(src).map_err(|e| format!("read {}: {e}", src.display()))?);
    }
    Ok(h)
}

/// Verilator versions whose generated scheduler (`_eval`: an input-combinational loop, then the
/// active/NBA loop) the shim's fast cycle reproduces; `RNIC_SIM_FAST_CYCLE=1` forces it on for
/// another version (checked mode: `RNIC_SIM_EVAL=checked`), `=0` off.
const FAST_CYCLE_VERSIONS: &[&str] = &["Verilator 5.006 "];

/// True when the shim may skip evaluations it knows the result of (sim/csrc/nic_shim.cpp): a
/// known Verilator version whose generated model has the scheduling members and functions the
/// fast path uses.
fn fast_cycle_supported(obj_dir: &Path, version: &str) -> bool {
    println!("cargo:rerun-if-env-changed=RNIC_SIM_FAST_CYCLE");
    let forced = env::var("RNIC_SIM_FAST_CYCLE").ok();
    if forced.as_deref() == Some("0") {
        return false;
    }
    let known = FAST_CYCLE_VERSIONS.iter().any(|v| version.starts_with(v)) || forced.as_deref() == Some("1");
    let root = format!("{PREFIX}___024root");
    let header = fs::read_to_string(obj_dir.join(format!("{root}.h"))).unwrap_or_default();
    let members =
        ["__Vtrigrprev__TOP__clock;", "__VactTriggered;", "__VnbaTriggered;", "__VactIterCount;", "__VactContinue;"];
    let functions = ["___eval_triggers__act", "___eval_act", "___eval_nba"];
    let sources: String = fs::read_dir(obj_dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "cpp"))
        .filter_map(|p| fs::read_to_string(p).ok())
        .collect();
    known
        && members.iter().all(|m| header.contains(m))
        && functions.iter().all(|f| sources.contains(&format!("void {root}{f}({root}* vlSelf) {{")))
}

/// The engines' state registers the shim's state profile reads (`rnic_nic_state_profile_*`):
/// the TX scheduler's and the RX engine's `state` DFFs, as Verilator names their outputs.
const STATE_MEMBERS: [&str; 2] = ["top__DOT__txs__DOT__state__024q;", "top__DOT__rxe__DOT__state__024q;"];

/// True when the generated model keeps both state registers as members of its root class.
fn state_profile_supported(obj_dir: &Path) -> bool {
    let header = fs::read_to_string(obj_dir.join(format!("{PREFIX}___024root.h"))).unwrap_or_default();
    STATE_MEMBERS.iter().all(|m| header.contains(m))
}

/// Writes `TX_STATE_NAMES` and `RX_STATE_NAMES` (state code → variant name of `TxsState` and
/// `RxState`) into `out`, from the `localparam <Enum>$<Variant> = <code>;` lines rust-hdl emits
/// for each state enum, so the names always belong to the RTL that was built (all empty, with a
/// build warning, if there are none).
fn write_state_names(sources: &[PathBuf], out: &Path) -> Result<(), String> {
    let mut text = String::new();
    for path in sources {
        text += &fs::read_to_string(path).map_err(|e| format!("read {}: {e}", path.display()))?;
    }
    let mut rs = String::new();
    for (konst, enum_name) in [("TX_STATE_NAMES", "TxsState"), ("RX_STATE_NAMES", "RxState")] {
        let mut names = vec![String::new(); 64];
        let prefix = format!("localparam {enum_name}$");
        for line in text.lines().map(str::trim).filter(|l| l.starts_with(&prefix)) {
            let rest = &line[prefix.len()..];
            let Some((name, code)) = rest.trim_end_matches(';').split_once('=') else { continue };
            let code: usize = code.trim().parse().map_err(|e| format!("{line}: {e}"))?;
            if code < 64 {
                names[code] = name.trim().to_string();
            }
        }
        if names.iter().all(String::is_empty) {
            // A diagnostic, not worth failing the build: the profile then names codes only
            // (`profile::tests` fails, to say so).
            println!("cargo:warning=no `localparam {enum_name}$...` in the generated Verilog: state names unknown");
        }
        rs += &format!("/// `{enum_name}` variant names by state code (empty: no variant).\n");
        rs += &format!("pub const {konst}: [&str; 64] = {names:?};\n");
    }
    fs::write(out, rs).map_err(|e| format!("write {}: {e}", out.display()))
}

/// `verilator --version`, e.g. "Verilator 5.006 2023-01-22 rev (Debian 5.006-3)".
fn verilator_version(verilator: &str) -> Result<String, String> {
    let out = Command::new(verilator).arg("--version").output().map_err(|e| format!("{verilator} --version: {e}"))?;
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Runs `cmd`, forwarding its output to the build log; fails with its stderr tail.
fn run_command(cmd: &mut Command, what: &str) -> Result<(), String> {
    let out = cmd.output().map_err(|e| format!("cannot run {what}: {e}"))?;
    // Cargo shows a build script's output only on failure (or with -vv). Everything goes to
    // stderr: a tool's stdout line starting with `cargo:` must not be taken as a directive.
    eprint!("{}", String::from_utf8_lossy(&out.stdout));
    eprint!("{}", String::from_utf8_lossy(&out.stderr));
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = err.lines().rev().take(40).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        return Err(format!("{what} failed ({}):\n{}", out.status, tail.join("\n")));
    }
    Ok(())
}

fn json_string(s: &str) -> String {
    let mut o = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04x}", c as u32)),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}
