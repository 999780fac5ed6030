//! `rdmatest`: the xv6 RDMA test suite in rnic form. Memory regions registered and
//! deregistered, QPs created and destroyed, an RDMA WRITE of the 0..255 pattern checked byte
//! for byte, and the error cases — invalid ids (bad lkey, rkey, QPN), out-of-bounds accesses,
//! permission violations — each asserting the exact ibverbs errno or work-completion status the
//! NIC returns. Prints `PASS` / `FAIL` per test and `Passed: N/N`; exits 1 if any failed.
//!
//! The requester QPs live on `--device`, the responder QPs on `--peer-device` (another NIC,
//! e.g. the other socket of `rnic sim serve --nics 2`), or on the same device when it is
//! omitted (then the port must be looped back: `--device sim`, or `rnic sim serve --link
//! loopback`). Every test builds a fresh QP pair and its own regions and releases them.
//!
//! ```text
//! cargo run --release -p rnic-easy --example rdmatest -- --device sim
//! cargo run --release -p rnic-easy --example rdmatest -- --device vfio-user:D/nic0.sock --peer-device vfio-user:D/nic1.sock
//! ```
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use rnic::{
    AccessFlags, CompletionQueue, ConnectOptions, Context, Errno, PortAddr, ProtectionDomain, QueuePair, SendWr, Sge,
    WcOpcode, WcStatus,
};
use rnic_easy::{parse_device, poll_one, OwnedMr};

/// rdmatest: MR, QP, WRITE-with-check and error tests on rnic (PASS/FAIL per test).
#[derive(Parser, Debug)]
#[command(name = "rdmatest")]
struct Args {
    /// Device of the requester QPs (`sim`, `vfio-user:PATH`, `vfio:BDF`).
    #[arg(long, env = "RNIC_DEVICE", value_parser = parse_device)]
    device: String,
    /// Device of the responder QPs (default: `--device`, whose port must be looped back).
    #[arg(long, value_parser = parse_device)]
    peer_device: Option<String>,
    /// Bytes of the pattern WRITE (1..=1048576).
    #[arg(long, default_value_t = 4096, value_parser = clap::value_parser!(u32).range(1..=1 << 20))]
    size: u32,
    /// Run only the tests whose name contains this.
    #[arg(long)]
    filter: Option<String>,
}

/// The two contexts.
struct Env {
    a: Context,
    b: Context,
    size: usize,
}

/// A connected QP pair, requester `qa` on `a`, responder `qb` on `b`.
struct Pair {
    qa: QueuePair<'static>,
    qb: QueuePair<'static>,
    cqa: CompletionQueue,
    _cqb: CompletionQueue,
    pda: ProtectionDomain,
    pdb: ProtectionDomain,
}

type TestResult = Result<String, String>;

/// A short ACK timeout (4.096 µs × 2^4 = 65.5 µs, 16 k cycles) and one retry, so that a
/// request nobody answers fails within tens of thousands of cycles.
fn short_timeout() -> ConnectOptions {
    ConnectOptions { timeout: 4, retry_cnt: 1, rnr_retry: 1, ..ConnectOptions::default() }
}

fn e<E: std::fmt::Display>(x: E) -> String {
    x.to_string()
}

impl Env {
    /// Builds and connects a pair; `ob` are the responder's options, `dest_qpn` replaces the
    /// responder's QPN in what the requester connects to.
    fn pair(&self, ob: ConnectOptions, dest_qpn: Option<u32>) -> Result<Pair, String> {
        let (pda, pdb) = (self.a.alloc_pd().map_err(e)?, self.b.alloc_pd().map_err(e)?);
        let (cqa, cqb) = (self.a.create_cq(16).map_err(e)?, self.b.create_cq(16).map_err(e)?);
        let mut qa = pda.create_qp(&cqa).set_max_send_wr(8).build().map_err(e)?;
        let mut qb = pdb.create_qp(&cqb).set_max_send_wr(8).set_max_recv_wr(8).build().map_err(e)?;
        let (ea, mut eb) = (qa.endpoint().map_err(e)?, qb.endpoint().map_err(e)?);
        if let Some(q) = dest_qpn {
            eb.qpn = q;
        }
        qa.connect_with(&eb, &short_timeout()).map_err(e)?;
        qb.connect_with(&ea, &ob).map_err(e)?;
        Ok(Pair { qa, qb, cqa, _cqb: cqb, pda, pdb })
    }

    fn default_pair(&self) -> Result<Pair, String> {
        self.pair(short_timeout(), None)
    }
}

/// Posts `wr` signaled on the requester and returns its completion.
fn run(p: &mut Pair, wr: SendWr<'static>) -> Result<rnic::WorkCompletion, String> {
    p.qa.post_send_one(wr.signaled(true)).map_err(e)?;
    poll_one(&p.cqa, "test", Duration::from_secs(60)).map_err(e)
}

/// Expects completion status `want` (and for success, opcode `op`).
fn expect(wc: rnic::WorkCompletion, want: WcStatus) -> TestResult {
    if wc.status == want {
        Ok(format!("completion status {want} ({})", want.as_raw()))
    } else {
        Err(format!("expected status {want}, got {} ({})", wc.status, wc.status.as_raw()))
    }
}

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| i as u8).collect()
}

fn rw() -> AccessFlags {
    AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_READ
}

fn expect_errno<T: std::fmt::Debug>(r: rnic::Result<T>, want: Errno, what: &str) -> Result<(), String> {
    match r {
        Err(err) if err.errno() == want => Ok(()),
        Err(err) => Err(format!("{what}: expected {want:?}, got {:?} ({err})", err.errno())),
        Ok(v) => Err(format!("{what}: expected {want:?}, it succeeded ({v:?})")),
    }
}

/// Registers and deregisters regions: keys distinct, a full key table refused with ENOMEM and
/// usable again after deregistration, a slot's old key not matching its new registration, bad
/// access and an empty buffer refused with EINVAL.
fn mr_register_deregister(env: &Env) -> TestResult {
    let pd = env.a.alloc_pd().map_err(e)?;
    let mut mrs = Vec::new();
    let full = loop {
        match OwnedMr::new(&pd, 4096, rw()) {
            Ok(m) => mrs.push(m),
            Err(rnic_easy::EasyError::Verbs(err)) => break err,
            Err(other) => return Err(other.to_string()),
        }
        if mrs.len() > 4096 {
            return Err("the key table never filled".into());
        }
    };
    if full.errno() != Errno::ENOMEM {
        return Err(format!("a full key table: expected ENOMEM, got {full}"));
    }
    let n = mrs.len();
    let mut keys: Vec<u32> = mrs.iter().map(|m| m.lkey()).collect();
    keys.sort_unstable();
    keys.dedup();
    if keys.len() != n {
        return Err(format!("{n} regions have only {} distinct lkeys", keys.len()));
    }
    let old_key = mrs[0].lkey();
    drop(mrs);
    let again = OwnedMr::new(&pd, 4096, rw()).map_err(e)?;
    if again.lkey() == old_key {
        return Err(format!("re-registration reused the key {old_key:#x}: a stale key would still match"));
    }
    again.deregister_owned().map_err(e)?;
    expect_errno(
        OwnedMr::new(&pd, 4096, AccessFlags::REMOTE_WRITE).map_err(|x| match x {
            rnic_easy::EasyError::Verbs(v) => v,
            o => rnic::Error::InvalidArgument(o.to_string()),
        }),
        Errno::EINVAL,
        "REMOTE_WRITE without LOCAL_WRITE",
    )?;
    let mut empty: [u8; 0] = [];
    expect_errno(pd.register(&mut empty, AccessFlags::LOCAL_WRITE), Errno::EINVAL, "an empty buffer")?;
    Ok(format!("{n} regions registered (then ENOMEM), deregistered, keys not reused, bad access/empty: EINVAL"))
}

/// Creates and destroys QPs: RESET after creation, distinct numbers, `destroy` succeeding,
/// the numbers usable again, a QP in RESET refusing a post (EINVAL).
fn qp_create_destroy(env: &Env) -> TestResult {
    let pd = env.a.alloc_pd().map_err(e)?;
    let cq = env.a.create_cq(64).map_err(e)?;
    let mut qps = Vec::new();
    for _ in 0..8 {
        let qp: QueuePair<'static> = pd.create_qp(&cq).set_max_send_wr(4).build().map_err(e)?;
        if qp.state() != rnic::QpState::Reset {
            return Err(format!("a new QP is in {:?}, not RESET", qp.state()));
        }
        qps.push(qp);
    }
    let mut nums: Vec<u32> = qps.iter().map(|q| q.qp_num()).collect();
    nums.sort_unstable();
    nums.dedup();
    if nums.len() != 8 {
        return Err(format!("8 QPs got {} distinct numbers", nums.len()));
    }
    let src = OwnedMr::new(&pd, 64, AccessFlags::LOCAL_WRITE).map_err(e)?;
    let wr = SendWr::send(1, src.sge(0..64).map_err(e)?);
    match qps[0].post_send_one(wr) {
        Err(err) if err.errno() == Errno::EINVAL => {}
        other => return Err(format!("post_send in RESET: expected EINVAL, got {other:?}")),
    }
    for qp in qps {
        qp.destroy().map_err(e)?;
    }
    let qp: QueuePair<'static> = pd.create_qp(&cq).build().map_err(e)?;
    qp.destroy().map_err(e)?;
    Ok(format!("8 QPs {}..{} created in RESET and destroyed; post in RESET: EINVAL", nums[0], nums[7]))
}

/// RDMA WRITE of `size` bytes of the 0..255 pattern; every byte of the target checked, and the
/// 64 bytes after it untouched; then READ back into a second region and checked again.
fn write_pattern(env: &Env) -> TestResult {
    let mut p = env.default_pair()?;
    let n = env.size;
    let src = OwnedMr::new(&p.pda, n, AccessFlags::LOCAL_WRITE).map_err(e)?;
    let back = OwnedMr::new(&p.pda, n, AccessFlags::LOCAL_WRITE).map_err(e)?;
    let dst = OwnedMr::new(&p.pdb, n + 64, rw()).map_err(e)?;
    src.write_at(0, &pattern(n)).map_err(e)?;
    let wc = run(&mut p, SendWr::rdma_write(1, src.sge(0..n).map_err(e)?, dst.remote_buffer().at(0)))?;
    expect(wc, WcStatus::Success)?;
    if wc.opcode != WcOpcode::RdmaWrite {
        return Err(format!("the completion's opcode is {:?}, not RDMA_WRITE", wc.opcode));
    }
    let got = dst.to_vec();
    if let Some(i) = (0..n).find(|&i| got[i] != i as u8) {
        return Err(format!("byte {i} is {:#04x}, expected {:#04x}", got[i], i as u8));
    }
    if got[n..].iter().any(|&b| b != 0) {
        return Err("the WRITE overran its target".into());
    }
    let wc = run(&mut p, SendWr::rdma_read(2, back.sge(0..n).map_err(e)?, dst.remote_buffer().at(0)))?;
    expect(wc, WcStatus::Success)?;
    if back.to_vec() != pattern(n) {
        return Err("the READ back differs from the pattern".into());
    }
    Ok(format!("{n} bytes of 0..255 written and verified, READ back verified"))
}

/// A WRITE whose SGE names a key no region has: the requester's NIC completes it with
/// IBV_WC_LOC_PROT_ERR (the lkey check, IBTA Vol 1 10.6.3.1 / C10-10).
fn bad_lkey(env: &Env) -> TestResult {
    let mut p = env.default_pair()?;
    let src = OwnedMr::new(&p.pda, 256, AccessFlags::LOCAL_WRITE).map_err(e)?;
    let dst = OwnedMr::new(&p.pdb, 256, rw()).map_err(e)?;
    let bad = Sge::raw(src.addr(), 256, src.lkey() ^ 0x0000_3F00);
    expect(run(&mut p, SendWr::rdma_write(1, bad, dst.remote_buffer().at(0)))?, WcStatus::LocProtErr)
}

/// A WRITE with an rkey no region has: the responder NAKs (remote access error) and the
/// requester completes with IBV_WC_REM_ACCESS_ERR (IBTA Vol 1 9.7.5.2.4, C9-49).
fn bad_rkey(env: &Env) -> TestResult {
    let mut p = env.default_pair()?;
    let src = OwnedMr::new(&p.pda, 256, AccessFlags::LOCAL_WRITE).map_err(e)?;
    let dst = OwnedMr::new(&p.pdb, 256, rw()).map_err(e)?;
    let mut remote = dst.remote_buffer().at(0);
    remote.rkey ^= 0x0000_3F00;
    expect(run(&mut p, SendWr::rdma_write(1, src.sge(0..256).map_err(e)?, remote))?, WcStatus::RemAccessErr)
}

/// A QP connected to a QPN nobody owns: the responder's NIC drops the packets (IBTA Vol 1
/// 9.6.1.5.1, invalid destination QP: silently dropped), so the requester's ACK timer expires
/// and after `retry_cnt` retries the WRITE completes with IBV_WC_RETRY_EXC_ERR.
fn bad_qpn(env: &Env) -> TestResult {
    let probe = env.default_pair()?;
    let unused = probe.qb.qp_num() + 20;
    drop(probe);
    let mut p = env.pair(short_timeout(), Some(unused))?;
    let src = OwnedMr::new(&p.pda, 256, AccessFlags::LOCAL_WRITE).map_err(e)?;
    let dst = OwnedMr::new(&p.pdb, 256, rw()).map_err(e)?;
    let r = expect(
        run(&mut p, SendWr::rdma_write(1, src.sge(0..256).map_err(e)?, dst.remote_buffer().at(0)))?,
        WcStatus::RetryExcErr,
    )?;
    if dst.to_vec().iter().any(|&b| b != 0) {
        return Err("a WRITE to another QPN reached the responder's region".into());
    }
    Ok(format!("{r}, destination QPN {unused:#x}"))
}

/// An SGE that runs 16 bytes past the end of its region: IBV_WC_LOC_PROT_ERR.
fn local_out_of_bounds(env: &Env) -> TestResult {
    let mut p = env.default_pair()?;
    let src = OwnedMr::new(&p.pda, 256, AccessFlags::LOCAL_WRITE).map_err(e)?;
    let dst = OwnedMr::new(&p.pdb, 256, rw()).map_err(e)?;
    let over = Sge::raw(src.addr() + 224, 48, src.lkey());
    expect(run(&mut p, SendWr::rdma_write(1, over, dst.remote_buffer().at(0)))?, WcStatus::LocProtErr)
}

/// A WRITE that runs 16 bytes past the end of the remote region: the responder's bounds check
/// NAKs it, IBV_WC_REM_ACCESS_ERR, and nothing of it lands.
fn remote_out_of_bounds(env: &Env) -> TestResult {
    let mut p = env.default_pair()?;
    let src = OwnedMr::new(&p.pda, 256, AccessFlags::LOCAL_WRITE).map_err(e)?;
    let dst = OwnedMr::new(&p.pdb, 256, rw()).map_err(e)?;
    src.write_at(0, &[0xAB; 256]).map_err(e)?;
    let r = expect(
        run(&mut p, SendWr::rdma_write(1, src.sge(0..64).map_err(e)?, dst.remote_buffer().at(208)))?,
        WcStatus::RemAccessErr,
    )?;
    if dst.to_vec().iter().any(|&b| b != 0) {
        return Err("part of an out-of-bounds WRITE landed".into());
    }
    Ok(r)
}

/// A WRITE into a region registered without REMOTE_WRITE: IBV_WC_REM_ACCESS_ERR.
fn no_remote_write(env: &Env) -> TestResult {
    let mut p = env.default_pair()?;
    let src = OwnedMr::new(&p.pda, 256, AccessFlags::LOCAL_WRITE).map_err(e)?;
    let dst = OwnedMr::new(&p.pdb, 256, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_READ).map_err(e)?;
    src.write_at(0, &[0xCD; 256]).map_err(e)?;
    let r = expect(
        run(&mut p, SendWr::rdma_write(1, src.sge(0..256).map_err(e)?, dst.remote_buffer().at(0)))?,
        WcStatus::RemAccessErr,
    )?;
    if dst.to_vec().iter().any(|&b| b != 0) {
        return Err("a WRITE without REMOTE_WRITE landed".into());
    }
    Ok(r)
}

/// A READ of a region registered without REMOTE_READ: IBV_WC_REM_ACCESS_ERR.
fn no_remote_read(env: &Env) -> TestResult {
    let mut p = env.default_pair()?;
    let dst = OwnedMr::new(&p.pda, 256, AccessFlags::LOCAL_WRITE).map_err(e)?;
    let src = OwnedMr::new(&p.pdb, 256, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE).map_err(e)?;
    expect(
        run(&mut p, SendWr::rdma_read(1, dst.sge(0..256).map_err(e)?, src.remote_buffer().at(0)))?,
        WcStatus::RemAccessErr,
    )
}

/// A READ whose response would land in a region registered without LOCAL_WRITE:
/// IBV_WC_LOC_PROT_ERR on the requester.
fn no_local_write(env: &Env) -> TestResult {
    let mut p = env.default_pair()?;
    let dst = OwnedMr::new(&p.pda, 256, AccessFlags::empty()).map_err(e)?;
    let src = OwnedMr::new(&p.pdb, 256, rw()).map_err(e)?;
    expect(
        run(&mut p, SendWr::rdma_read(1, dst.sge(0..256).map_err(e)?, src.remote_buffer().at(0)))?,
        WcStatus::LocProtErr,
    )
}

/// A WRITE to a responder QP whose access flags (`qp_access_flags`) grant only REMOTE_READ,
/// into a region that allows REMOTE_WRITE: the QP's permission check NAKs it,
/// IBV_WC_REM_ACCESS_ERR.
fn qp_without_remote_write(env: &Env) -> TestResult {
    let ob = ConnectOptions { access: AccessFlags::REMOTE_READ, ..short_timeout() };
    let mut p = env.pair(ob, None)?;
    let src = OwnedMr::new(&p.pda, 256, AccessFlags::LOCAL_WRITE).map_err(e)?;
    let dst = OwnedMr::new(&p.pdb, 256, rw()).map_err(e)?;
    expect(
        run(&mut p, SendWr::rdma_write(1, src.sge(0..256).map_err(e)?, dst.remote_buffer().at(0)))?,
        WcStatus::RemAccessErr,
    )
}

/// A region of the responder's context in another PD than its QP: the rkey is valid, the PD
/// check fails, IBV_WC_REM_ACCESS_ERR.
fn rkey_of_another_pd(env: &Env) -> TestResult {
    let mut p = env.default_pair()?;
    let other = env.b.alloc_pd().map_err(e)?;
    let src = OwnedMr::new(&p.pda, 256, AccessFlags::LOCAL_WRITE).map_err(e)?;
    let dst = OwnedMr::new(&other, 256, rw()).map_err(e)?;
    let _ = &p.pdb;
    expect(
        run(&mut p, SendWr::rdma_write(1, src.sge(0..256).map_err(e)?, dst.remote_buffer().at(0)))?,
        WcStatus::RemAccessErr,
    )
}

type Test = (&'static str, fn(&Env) -> TestResult);

const TESTS: &[Test] = &[
    ("mr_register_deregister", mr_register_deregister),
    ("qp_create_destroy", qp_create_destroy),
    ("write_pattern", write_pattern),
    ("bad_lkey", bad_lkey),
    ("bad_rkey", bad_rkey),
    ("bad_qpn", bad_qpn),
    ("local_out_of_bounds", local_out_of_bounds),
    ("remote_out_of_bounds", remote_out_of_bounds),
    ("no_remote_write", no_remote_write),
    ("no_remote_read", no_remote_read),
    ("no_local_write", no_local_write),
    ("qp_without_remote_write", qp_without_remote_write),
    ("rkey_of_another_pd", rkey_of_another_pd),
];

fn open_env(args: &Args) -> Result<Env, String> {
    let a = Context::open_shared(rnic::open_device(&args.device).map_err(e)?).map_err(e)?;
    a.set_port_addr(PortAddr::for_sim_nic(0)).map_err(e)?;
    let b = match &args.peer_device {
        Some(d) => {
            let b = Context::open_shared(rnic::open_device(d).map_err(e)?).map_err(e)?;
            b.set_port_addr(PortAddr::for_sim_nic(1)).map_err(e)?;
            b
        }
        None => a.clone(),
    };
    Ok(Env { a, b, size: args.size as usize })
}

fn main() -> ExitCode {
    let args = Args::parse();
    let env = match open_env(&args) {
        Ok(env) => env,
        Err(msg) => {
            eprintln!("rdmatest: {msg}");
            return ExitCode::FAILURE;
        }
    };
    println!(
        "rdmatest: requester on {}, responder on {}",
        args.device,
        args.peer_device.as_deref().unwrap_or("the same device (looped back)")
    );
    let (mut run_n, mut passed) = (0, 0);
    for (name, test) in TESTS {
        if args.filter.as_deref().is_some_and(|f| !name.contains(f)) {
            continue;
        }
        run_n += 1;
        match test(&env) {
            Ok(detail) => {
                passed += 1;
                println!("PASS {name}: {detail}");
            }
            Err(why) => println!("FAIL {name}: {why}"),
        }
    }
    println!("Passed: {passed}/{run_n}");
    if passed == run_n {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
