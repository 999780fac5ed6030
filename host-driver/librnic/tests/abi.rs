//! librnic against rdma-core 44 itself (Debian bookworm: `libibverbs-dev`, `ibverbs-utils`;
//! `scripts/setup.sh` installs them):
//!
//! - `layout_matches_the_rdma_core_header`: a C file of `offsetof` / `sizeof` assertions,
//!   generated from the Rust structs, must compile against `<infiniband/verbs.h>`;
//! - `symbols_carry_rdma_core_versions`: `objdump -T` of the library shows every symbol of
//!   `libibverbs.symbols` at its version, as default (`@@`) version, each also exported by
//!   the system's libibverbs at that version, and covers every versioned libibverbs symbol
//!   Debian's `ibv_devinfo`, `ibv_devices`, `ibv_rc_pingpong`, `ibv_ud_pingpong`, `ib_write_bw` and
//!   librdmacm import;
//! - `strings_match_libibverbs`: one C program prints every status / event / port-state /
//!   node-type string and rate conversion, run on rdma-core's library and on librnic: same
//!   output;
//! - `c_program_on_one_looped_back_nic`: `tests/c/loopback.c`, compiled against the real
//!   header and linked with `-libverbs`, connects two RC QPs of one simulated NIC and moves
//!   and checks data (RDMA WRITE, READ, SEND with immediate, bad_wr, EBUSY, rereg_mr,
//!   resize_cq on the NIC: the completions after it land in the new ring; RTS → SQD with
//!   `en_sqd_async_notify`, `IBV_EVENT_SQ_DRAINED`, a WRITE held in SQD and resumed by RTS;
//!   an SRQ created,
//!   armed, posted to through the inline ibv_post_srq_recv and busy while a QP uses it;
//!   the responder's `IBV_EVENT_QP_ACCESS_ERR` from a blocking `ibv_get_async_event` whose
//!   `element.qp` is the program's own QP; a send CQ of cqe 1 left unpolled under three
//!   signaled WRITEs, posted without refusal, raises `IBV_EVENT_CQ_ERR` with `element.cq` the
//!   program's own CQ);
//! - `c_program_on_two_nics_of_one_world`: the same program with QP A on device 0 and QP B
//!   on device 1 of `RNIC_DEVICE=sim:2` (two NICs cabled back to back; each side its own PD,
//!   CQ and MRs; the peer's MAC found from the device list);
//! - `c_program_with_completion_events`: `tests/c/events.c` arms a CQ with a completion
//!   channel through the inline `ibv_req_notify_cq`, waits with `ibv_get_cq_event` (blocking,
//!   and non-blocking after O_NONBLOCK on the channel fd) and poll(2), checks solicited-only
//!   arming, `ibv_ack_cq_events` and the EBUSY rules of the destroys;
//! - `ud_program_on_one_looped_back_nic` / `ud_program_on_two_nics_of_one_world`:
//!   `tests/c/ud.c`, UD QPs and address handles (`ibv_create_ah`, `ibv_create_ah_from_wc`):
//!   a datagram's completion (`IBV_WC_GRH`, `byte_len` = payload + 40, `src_qp`), its payload
//!   40 bytes in and the IPv4 header in the GRH area, the answer (inline, with immediate, the
//!   QP's own Q_Key), a wrong Q_Key dropped, the UD modify rules and the refusals;
//! - `debian_ibv_devinfo_and_ibv_devices_run_unmodified`: the bookworm binaries list and
//!   describe the simulated NICs;
//! - `perftest_sets_up_on_librnic`: bookworm's `ib_write_bw` (perftest 4.5) loads with the
//!   stub `libmlx5.so.1` / `libefa.so.1`, and server and client (two processes, each with its
//!   own in-process NIC) create their resources, exchange QPN/PSN/rkey/GID over TCP and move
//!   their QPs to RTS; the transfer itself needs a wire between the two processes' NICs
//!   (a SimBricks link or the bridged wire), so the run is cut off there;
//! - `ibv_rc_pingpong_sets_up_on_librnic`: the same for bookworm's `ibv_rc_pingpong -g 1`
//!   (ibverbs-utils 44): both sides print their and the peer's QPN, PSN and GID.
mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

/// `target/<profile>`, where cargo put `libibverbs.so`.
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    exe.parent().and_then(Path::parent).expect("target/<profile>/deps/..").to_path_buf()
}

/// The library cargo built for this test run (`deps/`: `cargo test` does not copy it up to
/// `target/<profile>/`).
fn so_path() -> PathBuf {
    profile_dir().join("deps/libibverbs.so")
}

/// A directory with `libibverbs.so.1` and `librdmacm.so.1` → librnic (and the stub
/// `libmlx5.so.1` / `libefa.so.1`, when built), for `LD_LIBRARY_PATH`; one per call.
fn lib_dir() -> PathBuf {
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    common::librnic_dir(&CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed).to_string())
}

/// [`lib_dir`] with the stub providers perftest links, built here with cargo (they are
/// separate workspace packages).
fn lib_dir_with_stubs() -> PathBuf {
    let dir = lib_dir();
    let profile = profile_dir();
    let release = profile.file_name().is_some_and(|n| n == "release");
    let mut cmd = Command::new(env!("CARGO"));
    cmd.args(["build", "-q", "-p", "librnic-mlx5-stub", "-p", "librnic-efa-stub"]);
    if release {
        cmd.arg("--release");
    }
    let (ok, o, e) = run(&mut cmd);
    assert!(ok, "building the stub providers: {o}{e}");
    for (lib, soname) in [("libmlx5.so", "libmlx5.so.1"), ("libefa.so", "libefa.so.1")] {
        let link = dir.join(soname);
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(profile.join(lib), &link).unwrap();
    }
    dir
}

fn tmp(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name)
}

fn run(cmd: &mut Command) -> (bool, String, String) {
    let out = cmd.output().unwrap_or_else(|e| panic!("running {cmd:?}: {e} (scripts/setup.sh installs the tools)"));
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Compiles `tests/c/<name>.c` against the installed rdma-core header, linked with the
/// installed `-libverbs` (so the binary binds to rdma-core's symbol versions), as `<out>`
/// (tests running in parallel use different names).
fn compile(name: &str, out: &str) -> PathBuf {
    compile_with(name, out, &["-libverbs"])
}

/// [`compile`] with other libraries (`-lrdmacm -lpthread` for the CM programs, whose
/// `<rdma/rdma_cma.h>` comes with `librdmacm-dev`).
fn compile_with(name: &str, out: &str, libs: &[&str]) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c").join(format!("{name}.c"));
    let exe = tmp(out);
    let (ok, o, e) = run(Command::new("cc").args(["-O1", "-Wall", "-Werror", "-o"]).arg(&exe).arg(&src).args(libs));
    assert!(ok, "compiling {}: {o}{e} (needs libibverbs-dev, librdmacm-dev)", src.display());
    exe
}

/// Runs the C test `exe` with `args` on librnic (`RNIC_DEVICE=device`, no `RNIC_PEER`), checks
/// that it exits 0 and ends with "PASS", and returns its standard output.
fn passes_on_librnic(exe: &Path, args: &[&str], device: &str) -> String {
    let (ok, out, err) = run(Command::new(exe)
        .args(args)
        .env("LD_LIBRARY_PATH", lib_dir())
        .env("RNIC_DEVICE", device)
        .env_remove("RNIC_PEER"));
    assert!(ok && out.ends_with("PASS\n"), "{out}\n{err}");
    out
}

fn objdump_t(path: &Path) -> Vec<(String, String, bool)> {
    let (ok, out, err) = run(Command::new("objdump").arg("-T").arg(path));
    assert!(ok, "objdump -T {}: {err}", path.display());
    // "... DF .text ... IBVERBS_1.1 ibv_foo" (defined, default), "(IBVERBS_1.0) ibv_foo"
    // (defined, hidden version) or "*UND* ... (IBVERBS_1.1) ibv_foo" (needed).
    out.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.len() < 3 {
                return None;
            }
            let (ver, name) = (f[f.len() - 2], f[f.len() - 1]);
            let und = l.contains("*UND*");
            let v = ver.trim_start_matches('(').trim_end_matches(')');
            (v.starts_with("IBVERBS") || v.starts_with("RDMACM")).then(|| (v.to_string(), name.to_string(), und))
        })
        .collect()
}

const SYSTEM_LIB: &str = "/usr/lib/x86_64-linux-gnu/libibverbs.so.1";

#[test]
fn layout_matches_the_rdma_core_header() {
    let mut c = String::from("#include <stddef.h>\n#include <infiniband/verbs.h>\n#include <rdma/rdma_cma.h>\n");
    let mut n = 0;
    for (name, size, fields) in ibverbs::abi::layout() {
        if let Some(&(_, outer, member)) = ibverbs::abi::ANONYMOUS.iter().find(|a| a.0 == name) {
            // A member type with no C name: checked as a member of the struct that holds it.
            let outer = format!("struct {outer}");
            c += &format!("_Static_assert(sizeof((({outer} *)0)->{member}) == {size}, \"sizeof {name}\");\n");
            for (f, off) in fields {
                c += &format!(
                    "_Static_assert(offsetof({outer}, {member}.{f}) - offsetof({outer}, {member}) == {off}, \"{name}.{f}\");\n"
                );
                n += 1;
            }
            continue;
        }
        let name =
            if ibverbs::abi::UNIONS.contains(&name) { format!("union {name}") } else { format!("struct {name}") };
        let name = name.as_str();
        c += &format!("_Static_assert(sizeof({name}) == {size}, \"sizeof {name}: rust {size}\");\n");
        for (f, off) in fields {
            let bare = name.split(' ').nth(1).unwrap_or(name);
            let cf = ibverbs::abi::C_NAMES.iter().find(|(s, r, _)| *s == bare && *r == f).map_or(f, |x| x.2);
            c += &format!("_Static_assert(offsetof({name}, {cf}) == {off}, \"{name}.{cf}: rust offset {off}\");\n");
            n += 1;
        }
    }
    let file = tmp("layout.c");
    std::fs::write(&file, &c).unwrap();
    let (ok, o, e) = run(Command::new("cc").args(["-std=gnu11", "-c", "-o"]).arg(tmp("layout.o")).arg(&file));
    assert!(ok, "the Rust layouts disagree with <infiniband/verbs.h> / <rdma/rdma_cma.h>:\n{o}{e}");
    assert!(n > 260, "only {n} fields checked");
    // And a deliberately wrong offset must fail the same way (the check can fail).
    let bad = c.replace("offsetof(struct ibv_wc, byte_len) == 20", "offsetof(struct ibv_wc, byte_len) == 24");
    assert_ne!(bad, c);
    std::fs::write(&file, bad).unwrap();
    let (ok, _, _) = run(Command::new("cc").args(["-std=gnu11", "-c", "-o"]).arg(tmp("layout.o")).arg(&file));
    assert!(!ok, "a wrong offset compiled");
}

/// Checks that every `VERSION name` line of `list` (in this crate) is exported by librnic as
/// `name@@VERSION` and by rdma-core's `system` library as `name@VERSION`, and that there are
/// at least `min` of them; returns librnic's `objdump -T` rows.
fn listed_symbols_exported(list: &str, system: &str, min: usize) -> Vec<(String, String, bool)> {
    let ours = objdump_t(&so_path());
    let theirs = objdump_t(Path::new(system));
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(list)).unwrap();
    let mut count = 0;
    for line in text.lines().filter(|l| !l.trim().is_empty() && !l.starts_with('#')) {
        let (v, name) = line.split_once(' ').unwrap();
        assert!(ours.iter().any(|(ov, on, und)| ov == v && on == name && !und), "{name}@@{v} not exported by librnic");
        assert!(theirs.iter().any(|(sv, sn, und)| sv == v && sn == name && !und), "{system} exports no {name}@{v}");
        count += 1;
    }
    assert!(count >= min, "{count} symbols in {list}");
    ours
}

#[test]
fn symbols_carry_rdma_core_versions() {
    let ours = listed_symbols_exported("libibverbs.symbols", SYSTEM_LIB, 70);
    // Default versions: objdump prints a hidden version in parentheses.
    let (_, raw, _) = run(Command::new("objdump").arg("-T").arg(so_path()));
    assert!(raw.lines().any(|l| l.ends_with(" IBVERBS_1.1 ibv_get_device_list")), "ibv_get_device_list@@IBVERBS_1.1");
    assert!(raw.lines().any(|l| l.ends_with(" IBVERBS_PRIVATE_34 ibv_query_gid_type")));
    // Everything Debian's programs and librdmacm need from libibverbs.
    for bin in [
        "ibv_devinfo",
        "ibv_devices",
        "ibv_rc_pingpong",
        "ibv_ud_pingpong",
        "ib_write_bw",
        "ib_read_bw",
        "ib_send_bw",
        "ib_atomic_bw",
    ] {
        let path = which(bin);
        for (v, name, und) in objdump_t(&path) {
            if und && v.starts_with("IBVERBS") {
                assert!(ours.iter().any(|(ov, on, u)| *ov == v && *on == name && !u), "{bin} needs {name}@{v}");
            }
        }
    }
    for (v, name, und) in objdump_t(Path::new("/usr/lib/x86_64-linux-gnu/librdmacm.so.1")) {
        if und && v.starts_with("IBVERBS") {
            assert!(ours.iter().any(|(ov, on, u)| *ov == v && *on == name && !u), "librdmacm needs {name}@{v}");
        }
    }
}

#[test]
fn rdmacm_symbols_carry_rdma_core_versions() {
    let ours = listed_symbols_exported("librdmacm.symbols", SYSTEM_RDMACM, 40);
    // Everything Debian's rdmacm-utils programs that rnic runs import from librdmacm (and
    // libibverbs, which librnic also is).
    for bin in ["rping"] {
        let path = which(bin);
        for (v, name, und) in objdump_t(&path) {
            if und && (v.starts_with("RDMACM") || v.starts_with("IBVERBS")) {
                assert!(ours.iter().any(|(ov, on, u)| *ov == v && *on == name && !u), "{bin} needs {name}@{v}");
            }
        }
    }
}

/// Debian's librdmacm.
const SYSTEM_RDMACM: &str = "/usr/lib/x86_64-linux-gnu/librdmacm.so.1";

#[test]
fn rdma_event_str_matches_librdmacm() {
    let exe = compile_with("cm_strings", "cm-strings", &["-lrdmacm"]);
    let (ok, theirs, e) = run(&mut Command::new(&exe));
    assert!(ok, "{e}");
    let (ok, ours, e) = run(Command::new(&exe).env("LD_LIBRARY_PATH", lib_dir()));
    assert!(ok, "{e}");
    assert!(theirs.contains("9 RDMA_CM_EVENT_ESTABLISHED"), "{theirs}");
    assert_eq!(ours, theirs, "librnic vs librdmacm");
}

#[test]
fn c_program_connects_through_rdma_cm() {
    let exe = compile_with("cm", "cm-two", &["-lrdmacm", "-libverbs", "-lpthread"]);
    let out = passes_on_librnic(&exe, &[], "sim:2");
    assert!(out.contains("route: 192.0.2.1 -> 192.0.2.2, MTU 4096"), "{out}");
    assert!(out.contains("no listener: REJECTED status 8"), "{out}");
    assert!(out.contains("listener without a channel: REJECTED status 28"), "{out}");
    // The same binary on rdma-core with no RDMA device cannot resolve (no device has the
    // address): the run above was librnic's.
    let (ok, out, _) = run(Command::new(&exe).env_remove("LD_LIBRARY_PATH"));
    assert!(!ok && !out.contains("PASS"), "{out}");
}

fn which(bin: &str) -> PathBuf {
    for d in ["/usr/bin", "/usr/local/bin", "/bin"] {
        let p = Path::new(d).join(bin);
        if p.exists() {
            return p;
        }
    }
    panic!("{bin} is not installed (scripts/setup.sh installs ibverbs-utils and perftest)");
}

#[test]
fn strings_match_libibverbs() {
    let exe = compile("strings", "strings");
    let (ok, theirs, e) = run(&mut Command::new(&exe));
    assert!(ok, "{e}");
    let (ok, ours, e) = run(Command::new(&exe).env("LD_LIBRARY_PATH", lib_dir()));
    assert!(ok, "{e}");
    assert!(theirs.contains("wc 5 Work Request Flushed Error"), "{theirs}");
    for (a, b) in theirs.lines().zip(ours.lines()) {
        assert_eq!(b, a, "librnic vs libibverbs");
    }
    assert_eq!(theirs.lines().count(), ours.lines().count());
}

#[test]
fn c_program_on_one_looped_back_nic() {
    let exe = compile("loopback", "loopback-one");
    let out = passes_on_librnic(&exe, &[], "sim");
    assert!(out.contains("device rnic_0 guid 000000fffe000001"), "{out}");
    assert!(out.contains("gid[1] ::ffff:192.0.2.1"), "{out}");
    assert!(out.contains("status 10: remote access error"), "{out}");
    assert!(out.contains("async event: send queue drained on QP"), "{out}");
    assert!(out.contains("async event: local access violation work queue error on QP"), "{out}");
    assert!(out.contains("async event: CQ error on the CQ of cqe 1 after 3 WRITEs"), "{out}");
    // The same binary on rdma-core with no RDMA device finds none and fails: the test above
    // ran on librnic.
    let (ok, out, _) = run(Command::new(&exe).env_remove("LD_LIBRARY_PATH"));
    assert!(!ok && !out.contains("PASS"), "{out}");
}

#[test]
fn c_program_with_completion_events() {
    let exe = compile("events", "events-one");
    passes_on_librnic(&exe, &[], "sim");
}

#[test]
fn c_program_on_two_nics_of_one_world() {
    let exe = compile("loopback", "loopback-two");
    let out = passes_on_librnic(&exe, &["two"], "sim:2");
    assert!(out.contains("gid[1] ::ffff:192.0.2.1") && out.contains("gid[1] of B ::ffff:192.0.2.2"), "{out}");
    // One NIC whose port is not looped back and no second device: device 1 is missing.
    let (ok, out, _) = run(Command::new(&exe).arg("two").env("LD_LIBRARY_PATH", lib_dir()).env("RNIC_DEVICE", "sim"));
    assert!(!ok && out.contains("device list"), "{out}");
}

#[test]
fn ud_program_on_one_looped_back_nic() {
    let exe = compile("ud", "ud-one");
    let out = passes_on_librnic(&exe, &[], "sim");
    assert!(out.contains("recv: byte_len 1040, IBV_WC_GRH, src_qp "), "{out}");
    assert!(out.contains("answer: imm 0xabcd from QP "), "{out}");
}

#[test]
fn ud_program_on_two_nics_of_one_world() {
    let exe = compile("ud", "ud-two");
    let out = passes_on_librnic(&exe, &["two"], "sim:2");
    assert!(out.contains("recv: byte_len 1040, IBV_WC_GRH, src_qp "), "{out}");
}

#[test]
fn debian_ibv_devinfo_and_ibv_devices_run_unmodified() {
    let (ok, out, err) =
        run(Command::new(which("ibv_devices")).env("LD_LIBRARY_PATH", lib_dir()).env("RNIC_DEVICE", "sim:2"));
    assert!(ok, "{out}{err}");
    assert!(out.contains("rnic_0") && out.contains("000000fffe000001"), "{out}");
    assert!(out.contains("rnic_1") && out.contains("000000fffe000002"), "{out}");
    let (ok, out, err) =
        run(Command::new(which("ibv_devinfo")).arg("-v").env("LD_LIBRARY_PATH", lib_dir()).env("RNIC_DEVICE", "sim"));
    assert!(ok, "{out}{err}");
    let v = rnic_contract::regs::VERSION_VALUE;
    let fw_ver = format!("fw_ver:\t\t\t\t{}.{}", v >> 16, v & 0xFFFF);
    for want in [
        "hca_id:\trnic_0",
        &fw_ver,
        "node_guid:\t\t\t0000:00ff:fe00:0001",
        "max_qp_wr:\t\t\t32768",
        "max_sge:\t\t\t15",
        "max_qp_rd_atom:\t\t\t16",
        "atomic_cap:\t\t\tATOMIC_HCA (1)",
        "max_srq_sge:\t\t\t15",
        "state:\t\t\tPORT_ACTIVE (4)",
        "active_mtu:\t\t4096 (5)",
        "link_layer:\t\tEthernet",
        "active_width:\t\t4X (2)",
        "active_speed:\t\t25.0 Gbps (32)",
        "GID[  0]:\t\tfe80::ff:fe00:1, RoCE v2",
        "GID[  1]:\t\t::ffff:192.0.2.1, RoCE v2",
    ] {
        assert!(out.contains(want), "ibv_devinfo -v lacks {want:?}:\n{out}");
    }
}

#[test]
fn perftest_sets_up_on_librnic() {
    let dir = lib_dir_with_stubs();
    let port = (18600 + std::process::id() % 1000).to_string();
    let bw = which("ib_write_bw");
    let perf = |extra: &[&str]| {
        let mut c = Command::new("timeout");
        c.args(["8", "stdbuf", "-o0"]).arg(&bw).args(["-d", "rnic_0", "-x", "1", "-n", "5", "-p", &port]).args(extra);
        c.env("LD_LIBRARY_PATH", &dir).env("RNIC_DEVICE", "sim");
        c
    };
    let server = perf(&[]).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(700));
    let (_, client, cerr) = run(&mut perf(&["127.0.0.1"]));
    let server = server.wait_with_output().unwrap();
    let server = String::from_utf8_lossy(&server.stdout).into_owned();
    for (who, out) in [("client", &client), ("server", &server)] {
        for want in [
            "RDMA_Write BW Test",
            "Device         : rnic_0",
            "Link type       : Ethernet",
            "GID index       : 1",
            "local address: LID 0000 QPN 0x0002",
            "remote address: LID 0000 QPN 0x0002",
            "GID: 00:00:00:00:00:00:00:00:00:00:255:255:192:00:02:01",
            "#bytes     #iterations",
        ] {
            assert!(out.contains(want), "{who} lacks {want:?}:\n{out}\n{cerr}");
        }
    }
    assert!(!client.contains("Unable to Connect") && !client.contains("Couldn't"), "{client}");
}

#[test]
fn ibv_rc_pingpong_sets_up_on_librnic() {
    let dir = lib_dir();
    let port = (19600 + std::process::id() % 1000).to_string();
    let pp = which("ibv_rc_pingpong");
    let side = |extra: &[&str]| {
        let mut c = Command::new("timeout");
        c.args(["6", "stdbuf", "-o0"]).arg(&pp).args(["-d", "rnic_0", "-g", "1", "-n", "5", "-p", &port]).args(extra);
        c.env("LD_LIBRARY_PATH", &dir).env("RNIC_DEVICE", "sim");
        c
    };
    let server = side(&[]).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    let (_, client, cerr) = run(&mut side(&["127.0.0.1"]));
    let server = server.wait_with_output().unwrap();
    let server = String::from_utf8_lossy(&server.stdout).into_owned();
    for (who, out) in [("client", &client), ("server", &server)] {
        for want in [
            "local address:  LID 0x0000, QPN 0x000002",
            "remote address: LID 0x0000, QPN 0x000002",
            "GID ::ffff:192.0.2.1",
        ] {
            assert!(out.contains(want), "{who} lacks {want:?}:\n{out}\n{cerr}");
        }
    }
    assert!(!client.contains("Failed") && !client.contains("Couldn't"), "{client}\n{cerr}");
}
