//! `krdma_sr`: krdma's send/receive test, node0 (server) and node1 (client) as two processes
//! of the easy API. The client sends `--iters` messages of `--size` bytes, each with its own
//! pattern; the server checks each one and sends it back; the client checks the echo.
//!
//! ```text
//! krdma_sr --device vfio-user:D/nic1.sock --role server
//! krdma_sr --device vfio-user:D/nic0.sock --role client --addr 192.0.2.2:7471
//! ```
use std::process::ExitCode;

use clap::Parser;
use rnic_easy::{connect, listen, Connection, Options};

mod common;
use common::{pattern, Role, Side};

/// krdma_sr: SEND/RECV ping-pong of checked messages over the easy API.
#[derive(Parser, Debug)]
#[command(name = "krdma_sr")]
struct Args {
    #[command(flatten)]
    side: Side,
    /// Messages (1..=100000).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    iters: u64,
    /// Bytes per message (0..=65536).
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u32).range(0..=65536))]
    size: u32,
}

fn run(a: &Args) -> Result<String, String> {
    let size = a.size as usize;
    let opts = Options { msg_size: size.max(1), recv_depth: 8, ..Options::default() };
    let mut c: Connection = match a.side.role {
        Role::Server => {
            let l = listen(&a.side.device, a.side.addr(), opts).map_err(|e| e.to_string())?;
            l.accept().map_err(|e| e.to_string())?
        }
        Role::Client => connect(&a.side.device, a.side.addr(), opts).map_err(|e| e.to_string())?,
    };
    let p = c.peer_endpoint();
    println!("connected: local QPN {:#08x}, remote QPN {:#08x} at {}", c.local_endpoint().qpn, p.qpn, p.ip);
    let dev = c.context().device().clone();
    let t0 = dev.now_cycles();
    for i in 0..a.iters {
        match a.side.role {
            Role::Server => {
                let m = c.recv().map_err(|e| format!("message {i}: {e}"))?;
                if m != pattern(i, size) {
                    return Err(format!("message {i}: {} bytes, not the pattern", m.len()));
                }
                c.send(&m).map_err(|e| format!("reply {i}: {e}"))?;
            }
            Role::Client => {
                let m = pattern(i, size);
                c.send(&m).map_err(|e| format!("message {i}: {e}"))?;
                let back = c.recv().map_err(|e| format!("reply {i}: {e}"))?;
                if back != m {
                    return Err(format!("reply {i}: {} bytes, not the message sent", back.len()));
                }
            }
        }
    }
    // Simulated time over vfio-user (the server's clock page), at the NIC's clock.
    let us = (dev.now_cycles() - t0) as f64 / f64::from(c.context().device_info().clock_mhz.max(1));
    c.close().map_err(|e| e.to_string())?;
    Ok(match a.side.role {
        Role::Server => format!("krdma_sr server: {} messages of {size} bytes received, verified and echoed", a.iters),
        Role::Client => format!(
            "krdma_sr client: {} round trips of {size} bytes verified, {:.2} us per round trip",
            a.iters,
            us / a.iters as f64
        ),
    })
}

fn main() -> ExitCode {
    let a = Args::parse();
    match run(&a) {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("krdma_sr: {e}");
            ExitCode::FAILURE
        }
    }
}
