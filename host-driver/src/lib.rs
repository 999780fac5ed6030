//! `rnic`: the host driver of the rnic RoCEv2 NIC, with the ibverbs programming model.
//!
//! The driver does what a driver on a real board does and nothing else: it writes and reads
//! BAR0 registers (MMIO), builds WQEs and context records in host memory, rings doorbells and
//! polls CQEs in host memory. Every packet, key check, payload move and completion is the NIC's
//! work, done by its RTL (in the simulator: the Verilated RTL). See `docs/driver.md`.
//!
//! Objects mirror ibverbs (rust-ibverbs' builder style):
//! [`Context`] (`ibv_open_device`) → [`ProtectionDomain`] (`ibv_alloc_pd`) →
//! [`MemoryRegion`] (`ibv_reg_mr`), [`CompletionQueue`] (`ibv_create_cq`, `ibv_poll_cq`),
//! [`QueuePair`] (`ibv_create_qp`, `ibv_modify_qp`, `ibv_post_send`, `ibv_post_recv`,
//! `ibv_query_qp`), and
//! [`Endpoint`]s to connect two RC QPs.
//!
//! Of the NIC the crate knows only the register contract (`rnic-contract`); a [`Device`]
//! backend gives it one. With the cargo feature `sim` (off by default), `rnic::sim::SimDevice`
//! is one NIC of an in-process Verilator simulation (`rnic-sim`, which builds the model with
//! Verilator) and `rnic::sim::sim_pair` two of them cabled back to back; without it the crate
//! builds no simulator, and a program brings its own backend. The `rnic` command-line tool and
//! its `perf` tests are the `rnic-tools` package (`host-driver/tools/`).
#![cfg_attr(
    feature = "sim",
    doc = r##"
With the `sim` feature, an RDMA WRITE between two simulated hosts:

```
use rnic::{sim::sim_pair, AccessFlags, Context, PortAddr, SendWr};
# fn main() -> Result<(), rnic::Error> {
let (_world, dev_a, dev_b) = sim_pair(rnic::sim::SimConfig::default())?;
let (a, b) = (Context::open_with_port(dev_a, PortAddr::for_sim_nic(0))?,
              Context::open_with_port(dev_b, PortAddr::for_sim_nic(1))?);
let (pd_a, pd_b) = (a.alloc_pd()?, b.alloc_pd()?);
let mut src = vec![7u8; 4096];
let mut dst = vec![0u8; 4096];
let src_mr = pd_a.register(&mut src, AccessFlags::LOCAL_WRITE)?;
let dst_mr = pd_b.register(&mut dst, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE)?;
let (cq_a, cq_b) = (a.create_cq(64)?, b.create_cq(64)?);
let mut qp_a = pd_a.create_qp(&cq_a).build()?;
let mut qp_b = pd_b.create_qp(&cq_b).build()?;
let (ep_a, ep_b) = (qp_a.endpoint()?, qp_b.endpoint()?.with_buffer(&dst_mr));
qp_a.connect(&ep_b)?;
qp_b.connect(&ep_a)?;
let remote = ep_b.buffer.unwrap();
qp_a.post_send_one(SendWr::rdma_write(1, src_mr.sge(0..4096)?, remote.at(0)).signaled(true))?;
let mut wc = [rnic::WorkCompletion::default(); 1];
cq_a.poll_wait(&mut wc, 1_000_000)?;
assert!(wc[0].status.is_success());
# Ok(()) }
```
"##
)]
#![warn(missing_docs)]

pub mod backend;
pub mod channel;
pub mod cm;
pub mod context;
pub mod cq;
pub mod device;
pub mod devlist;
pub mod error;
pub mod event;
pub mod mr;
pub mod pci;
pub mod pd;
pub mod qp;
pub mod qp_attr;
pub mod query;
pub mod raw;
pub mod records;
#[cfg(feature = "sim")]
pub mod sim;
pub mod srq;
pub mod wr;

#[cfg(test)]
mod mock;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_srq;
#[cfg(test)]
mod tests_verbs;

pub use backend::{open_device, DeviceSpec, OpenError};
pub use channel::CompletionChannel;
pub use context::{Context, Counters, DeviceInfo, MacAddr, PortAddr};
pub use cq::{CompletionQueue, WcFlags, WcOpcode, WcStatus, WorkCompletion};
pub use device::{Device, DmaBuffer, Iova};
pub use devlist::{get_device_list, DeviceEntry, DeviceList};
pub use error::{Errno, Error, IoKind, PostError, Refused, Result};
pub use event::AsyncEventType;
pub use mr::{AccessFlags, MemoryRegion};
pub use pd::ProtectionDomain;
pub use qp::{
    AddressHandle, AddressVector, ConnectOptions, Endpoint, Mtu, QpAttr, QpAttrMask, QpBuilder, QpCap, QpState, QpType,
    QueuePair, RecvWr, RemoteAddr, RemoteBuffer, SendFlags, SendWr, Sge, UdDest, WrOpcode,
};
pub use query::{AtomicCap, DeviceAttr, DeviceCapFlags, Gid, GidType, PortAttr, PortState};
#[cfg(feature = "sim")]
pub use sim::SimDevice;
pub use srq::{AsyncEvent, SharedReceiveQueue, SrqAttr};
