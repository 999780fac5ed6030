//! A vfio-user server for the simulated rnic NIC (`rnic sim serve`): each NIC of one simulated
//! [`rnic_sim::World`] is a PCI function on a Unix socket, which a vfio-user client (the `rnic`
//! driver's `vfio-user:` backend, or QEMU's `vfio-user-pci`) drives like hardware behind VFIO.
//! See docs/pcie.md.
//!
//! - [`config_space`]: the PCI configuration space (IDs, BARs, MSI-X capability).
//! - [`iova`]: the client's memory, mapped by `DMA_MAP` page by page, as the NIC's DMA target.
//! - [`msix`]: the MSI-X table, PBA and the client's eventfds.
//! - [`server`]: the threads: the free-running world and one server per socket.
#![warn(missing_docs)]

pub mod config_space;
pub mod iova;
pub mod msix;
pub mod server;

pub use server::{serve, ServeError, ServeHandle, ServeOptions, ServeStats};
