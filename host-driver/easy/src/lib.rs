//! `rnic-easy`: an easy RC connection API over the rnic verbs, in the shape of krdma's kernel API
//! (`krdma_connect`, `krdma_listen`, `krdma_accept`, `krdma_send`, `krdma_receive`,
//! `krdma_read`, `krdma_write`, `krdma_release`).
//!
//! ```no_run
//! # fn main() -> rnic_easy::Result<()> {
//! use rnic_easy::{connect, listen, Options};
//! // Process 1, on NIC 1 of `rnic sim serve --nics 2 --socket-dir /tmp/d`:
//! let l = listen("vfio-user:/tmp/d/nic1.sock", "0.0.0.0:7471", Options::default())?;
//! let mut c = l.accept()?;
//! let msg = c.recv()?; // a buffer, its receive reposted for you
//! c.send(&msg)?;
//! # Ok(()) }
//! # fn client() -> rnic_easy::Result<()> {
//! # use rnic_easy::{connect, Options};
//! // Process 2, on NIC 0:
//! let mut c = connect("vfio-user:/tmp/d/nic0.sock", "127.0.0.1:7471", Options::default())?;
//! c.send(b"hello")?;
//! assert_eq!(c.recv()?, b"hello");
//! # Ok(()) }
//! ```
//!
//! **How two sides meet.** rnic has no connection manager yet (no librdmacm `rdma_cm` and no
//! UD QP1 for its MADs): [`connect`] and [`Listener::accept`] exchange the QP attributes
//! (QPN, first PSN, port MAC and IPv4 address, the advertised buffer's address, rkey and
//! length, the receive buffer size) as one JSON line each way over a TCP socket
//! ([`exchange`]), as `ibv_rc_pingpong` and perftest do, and then each side takes its QP
//! RESET→INIT→RTR→RTS (`ibv_modify_qp(3)`). The CM is the intended replacement for the TCP
//! exchange; the calls of this crate will keep their shape when it lands.
//!
//! Every call maps to ibverbs calls, named in its documentation; sizes are in bytes, timeouts in
//! wall time. Errors are [`EasyError`]. Everything a connection holds is released when it is
//! dropped (QP first, then its memory regions, CQs and PD).
#![warn(missing_docs)]

pub mod conn;
pub mod error;
pub mod exchange;
pub mod pool;
pub mod region;

pub use conn::{connect, connect_on_context, listen, open, tcp_connect, Connection, Listener, Options};
pub use error::{EasyError, Result};
pub use region::OwnedMr;

/// Parses `--device` values for the example programs: a device string as `rnic::open_device`
/// takes it (`sim`, `vfio-user:PATH`, `vfio:BDF`), checked for its scheme only.
///
/// # Errors
/// A message naming what is wrong with the string.
pub fn parse_device(s: &str) -> std::result::Result<String, String> {
    s.parse::<rnic::DeviceSpec>().map(|_| s.to_owned()).map_err(|e| e.to_string())
}

/// The MAC of a simulated port from its IPv4 address (`rnic::PortAddr::for_sim_nic`'s rule,
/// `02:00:00:00:00:<last octet>`): how a program that learned only the peer's GID (as
/// `ibv_rc_pingpong` does) addresses its frames, because rnic resolves no addresses (no ARP)
/// yet. `rnic perf --device` uses the same rule.
pub fn sim_mac_of(ip: std::net::Ipv4Addr) -> rnic::MacAddr {
    rnic::PortAddr::sim_mac_of(ip)
}

/// Polls `cq` (`ibv_poll_cq(3)`) until one completion arrives or `timeout` (wall time) passes.
///
/// # Errors
/// [`EasyError::TimedOut`] (with `op`); verbs errors reading the ring. An error *status* is
/// returned in the completion, not as an error.
pub fn poll_one(
    cq: &rnic::CompletionQueue,
    op: &'static str,
    timeout: std::time::Duration,
) -> Result<rnic::WorkCompletion> {
    let start = std::time::Instant::now();
    let mut wc = [rnic::WorkCompletion::default(); 1];
    loop {
        if cq.poll(&mut wc)? == 1 {
            return Ok(wc[0]);
        }
        if start.elapsed() >= timeout {
            return Err(EasyError::TimedOut { op, after: timeout });
        }
    }
}
