//! `pool_server_ev`: `pool_server` driven by completion events instead of busy polling. Its
//! CQ has a completion channel (`ibv_create_comp_channel`); the loop arms the CQ
//! (`ibv_req_notify_cq`), polls it empty, then sleeps in poll(2) on the channel's fd and on the
//! TCP socket of the connection exchange, takes the event (`ibv_get_cq_event`), acknowledges it
//! (`ibv_ack_cq_events`) and arms again. The send buffers of its responses come from a free
//! list and go back to it on their `IBV_WC_SEND` completion, by wr_id.
//!
//! rnic has no connection manager yet, so there is no CM event channel fd to put in the same
//! poll set; the exchange socket stands in for it (its end of file is the client's
//! DISCONNECTED). When the CM lands, its `rdma_event_channel` fd takes that place.
//!
//! ```text
//! pool_server_ev --device vfio-user:D/nic1.sock
//! pool_client --device vfio-user:D/nic0.sock
//! ```
use std::process::ExitCode;

use clap::Parser;

#[path = "common/pool_srv.rs"]
mod pool_srv;

/// pool_server_ev: the pool server on a completion channel in a poll(2) loop.
#[derive(Parser, Debug)]
#[command(name = "pool_server_ev")]
struct Args {
    #[command(flatten)]
    server: pool_srv::ServerArgs,
}

fn main() -> ExitCode {
    let a = Args::parse();
    match pool_srv::run(&a.server, true) {
        Ok(t) => {
            println!(
                "pool_server_ev: {} client(s), {} doorbells, {} bytes verified, {} wrong, {} receives reposted on the SRQ, {} send buffers freed on IBV_WC_SEND, {} completion events for {} completions",
                t.clients, t.doorbells, t.verified, t.bad, t.reposted, t.sends_freed, t.events, t.completions
            );
            if t.bad == 0 && t.doorbells > 0 && t.events > 0 {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("pool_server_ev: {e}");
            ExitCode::FAILURE
        }
    }
}
