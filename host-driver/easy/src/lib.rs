//! `rnic-easy`: an easy RC connection API over the rnic verbs, in the shape of krdma's kernel API
//! (`krdma_connect`, `krdma_listen`, `krdma_accept`, `krdma_send`, `krdma_receive`,
//! `krdma_read`, `krdma_write`, `krdma_release`).
//!
//! ```no_run
//! # fn main() -> rnic_easy::Result<()> {
//! use rnic_easy::{connect, listen, Options};
//! // Process 1, on NIC 1 of `rnic sim serve --nics 2 --socket-dir /tmp/d` (192.0.2.2):
//! let l = listen("vfio-user:/tmp/d/nic1.sock", "0.0.0.0:7471", Options::default())?;
//! let mut c = l.accept()?;
//! let msg = c.recv()?; // a buffer, its receive reposted for you
//! c.send(&msg)?;
//! # Ok(()) }
//! # fn client() -> rnic_easy::Result<()> {
//! # use rnic_easy::{connect, Options};
//! // Process 2, on NIC 0 (192.0.2.1), connecting to NIC 1's address:
//! let mut c = connect("vfio-user:/tmp/d/nic0.sock", "192.0.2.2:7471", Options::default())?;
//! c.send(b"hello")?;
//! assert_eq!(c.recv()?, b"hello");
//! c.close()?; // DISCONNECTED on both sides
//! # Ok(()) }
//! ```
//!
//! **How two sides meet.** In band, through the port's connection manager (`rnic::cm`,
//! docs/cm.md): [`listen`] is `rdma_bind_addr` + `rdma_listen` on the port's CM,
//! [`connect`] is `rdma_resolve_addr` + `rdma_resolve_route` + `rdma_create_qp` +
//! `rdma_connect`, and [`Listener::accept`] is `rdma_get_request` + `rdma_create_qp` +
//! `rdma_accept`; the REQ, REP and RTU travel as IB CM MADs on QP1 of the two NICs, and the CM
//! moves both QPs to RTS. What the CM does not carry itself (the receive buffer size and the
//! buffer advertised for the peer's RDMA READ / WRITE: address, rkey, length) rides in the
//! private data of the REQ and the REP ([`cm::Advert`]). Every receive is posted before the
//! REQ or REP goes out, so either side may send as soon as it is connected. The address to
//! connect to is the server NIC's IPv4 address and the listening port; the peer's MAC comes
//! from the CM's neighbor table (on a simulated NIC the simulator's rule,
//! `02:00:00:00:00:<last octet>`).
//!
//! Nothing runs behind the caller: the CM moves while a call of this crate waits
//! ([`cm::Cm::pump`], which also answers the peer's disconnect), so a peer's `close` or drop
//! ends this side's wait with [`EasyError::Disconnected`].
//!
//! Every call maps to ibverbs calls, named in its documentation; sizes are in bytes, timeouts in
//! wall time. Errors are [`EasyError`]. Everything a connection holds is released when it is
//! dropped (QP first, then its memory regions, CQs and PD).
#![warn(missing_docs)]

pub mod cm;
pub mod conn;
pub mod error;
pub mod pool;
pub mod region;

pub use cm::{Advert, Cm};
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
/// yet. `rnic perf --device` and the CM's neighbor table on a simulated NIC use the same rule.
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
