//! `pool_server_ev`: `pool_server` driven by events instead of busy polling, as issue 15 asks:
//! "completion channel + CM event fd in one poll loop". Its CQ has a completion channel
//! (`ibv_create_comp_channel`); the loop arms the CQ (`ibv_req_notify_cq`), polls it empty,
//! then sleeps in poll(2) on the completion channel's fd and the CM event channel's fd
//! (`rdma_event_channel.fd`), takes a CQ event (`ibv_get_cq_event`), acknowledges it
//! (`ibv_ack_cq_events`) and arms again; on the CM fd it takes the CM's events, where the
//! client's disconnect arrives as `RDMA_CM_EVENT_DISCONNECTED`. The send buffers of its
//! responses come from a free list and go back to it on their `IBV_WC_SEND` completion, by
//! wr_id.
//!
//! rnic's CM has no thread or interrupt of its own: it moves only when the program runs it
//! (`EventChannel::process`), and its fd becomes readable when that queued an event, not when
//! a MAD lands on QP1. So the loop runs `process` every turn and bounds each poll(2) at 2 ms;
//! a DREQ is answered within one turn. (The connection itself is accepted with
//! `rnic_easy::Cm::accept_qp`, which runs the CM while it waits.)
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
                "pool_server_ev: {} client(s), {} doorbells, {} bytes verified, {} wrong, {} receives reposted on the SRQ, {} send buffers freed on IBV_WC_SEND, {} completion events for {} completions, {} DISCONNECTED from {} CM fd wakeups",
                t.clients, t.doorbells, t.verified, t.bad, t.reposted, t.sends_freed, t.events, t.completions, t.disconnects, t.cm_fd_wakeups
            );
            if t.bad == 0 && t.doorbells > 0 && t.events > 0 && t.disconnects == u64::from(t.clients) {
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
