//! `pool_server`: the server of the pool + doorbell demo, waiting for completions by busy
//! polling (`ibv_poll_cq` in a loop). It lends slices of one registered region to clients
//! (`REQ_ALLOC` / `RESP_ALLOC` over SEND / RECV, a bitmap of slices), receives on an SRQ whose
//! receives it reposts, and on every `IBV_WC_RECV_RDMA_WITH_IMM` (a client's doorbell) reads
//! and checks the batch the client wrote. Clients connect through the CM (in band, on QP1);
//! the loop runs the CM every millisecond to see their `DISCONNECTED`. See docs/examples.md
//! for the walk-through.
//!
//! ```text
//! pool_server --device vfio-user:D/nic1.sock
//! pool_client --device vfio-user:D/nic0.sock
//! ```
use std::process::ExitCode;

use clap::Parser;

#[path = "common/pool_srv.rs"]
mod pool_srv;

/// pool_server: slices of a registered pool lent to clients, doorbells by WRITE_WITH_IMM (polling).
#[derive(Parser, Debug)]
#[command(name = "pool_server")]
struct Args {
    #[command(flatten)]
    server: pool_srv::ServerArgs,
}

fn main() -> ExitCode {
    let a = Args::parse();
    match pool_srv::run(&a.server, false) {
        Ok(t) => {
            println!(
                "pool_server: {} client(s), {} doorbells, {} bytes verified, {} wrong, {} receives reposted on the SRQ, {} send buffers freed on IBV_WC_SEND, {} DISCONNECTED",
                t.clients, t.doorbells, t.verified, t.bad, t.reposted, t.sends_freed, t.disconnects
            );
            if t.bad == 0 && t.doorbells > 0 {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("pool_server: {e}");
            ExitCode::FAILURE
        }
    }
}
