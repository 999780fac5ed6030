//! `krdma_rw`: krdma's read/write test, node0 (server) and node1 (client) as two processes of
//! the easy API. Both sides advertise a buffer at connect time (`Options::rw_size`). The
//! server fills the last slot of its buffer; the client READs and checks it, then for each of
//! `--iters` slots WRITEs a pattern into the server's buffer and READs it back, and tells the
//! server with a SEND; the server's CPU then checks every slot the client wrote.
//!
//! ```text
//! krdma_rw --device vfio-user:D/nic1.sock --role server
//! krdma_rw --device vfio-user:D/nic0.sock --role client
//! ```
use std::process::ExitCode;

use clap::Parser;
use rnic_easy::{connect, listen, Options};

mod common;
use common::{pattern, Role, Side};

/// krdma_rw: RDMA WRITE / READ of the peer's advertised buffer over the easy API.
#[derive(Parser, Debug)]
#[command(name = "krdma_rw")]
struct Args {
    #[command(flatten)]
    side: Side,
    /// Slots written and read back (1..=1024).
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u64).range(1..=1024))]
    iters: u64,
    /// Bytes per slot (1..=65536).
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u32).range(1..=65536))]
    size: u32,
}

/// The server's own pattern in the last slot.
const SERVER_SEED: u64 = 0xA5A5;

fn run(a: &Args) -> Result<String, String> {
    let size = a.size as usize;
    // One slot per write, plus the server's slot at the end.
    let rw_size = size * (a.iters as usize + 1);
    let opts = Options { msg_size: 64, recv_depth: 4, rw_size, ..Options::default() };
    let s = |e: rnic_easy::EasyError| e.to_string();
    let mut c = match a.side.role {
        Role::Server => listen(&a.side.device, a.side.addr(), opts).and_then(|l| l.accept()).map_err(s)?,
        Role::Client => connect(&a.side.device, a.side.addr(), opts).map_err(s)?,
    };
    let peer = c.peer_buffer().ok_or("the peer advertised no buffer")?;
    println!(
        "connected: local QPN {:#08x}; peer buffer addr {:#x} rkey {:#x} len {}",
        c.local_endpoint().qpn,
        peer.addr,
        peer.rkey,
        peer.len
    );
    let last = a.iters as usize * size;
    match a.side.role {
        Role::Server => {
            c.local_write(last, &pattern(SERVER_SEED, size)).map_err(s)?;
            c.send(b"ready").map_err(s)?;
            let done = c.recv().map_err(s)?;
            if done != b"done" {
                return Err(format!("expected \"done\", got {:?}", String::from_utf8_lossy(&done)));
            }
            for i in 0..a.iters {
                let got = c.local_read(i as usize * size, size).map_err(s)?;
                if got != pattern(i, size) {
                    return Err(format!("slot {i} does not hold the client's pattern"));
                }
            }
            c.send(b"verified").map_err(s)?;
            c.close().map_err(s)?;
            Ok(format!("krdma_rw server: {} slots of {size} bytes written by the client verified", a.iters))
        }
        Role::Client => {
            if c.recv().map_err(s)? != b"ready" {
                return Err("expected \"ready\"".into());
            }
            if c.read(last as u64, size).map_err(s)? != pattern(SERVER_SEED, size) {
                return Err("the READ of the server's slot does not match its pattern".into());
            }
            let dev = c.context().device().clone();
            let t0 = dev.now_cycles();
            for i in 0..a.iters {
                let off = i * size as u64;
                let m = pattern(i, size);
                c.write(off, &m).map_err(|e| format!("write {i}: {e}"))?;
                if c.read(off, size).map_err(|e| format!("read {i}: {e}"))? != m {
                    return Err(format!("slot {i}: the READ back differs from the WRITE"));
                }
            }
            let us = (dev.now_cycles() - t0) as f64 / f64::from(c.context().device_info().clock_mhz.max(1));
            c.send(b"done").map_err(s)?;
            if c.recv().map_err(s)? != b"verified" {
                return Err("the server did not verify".into());
            }
            c.close().map_err(s)?;
            Ok(format!(
                "krdma_rw client: {} WRITE+READ pairs of {size} bytes verified, {:.2} us per pair; server verified",
                a.iters,
                us / a.iters as f64
            ))
        }
    }
}

fn main() -> ExitCode {
    let a = Args::parse();
    match run(&a) {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("krdma_rw: {e}");
            ExitCode::FAILURE
        }
    }
}
