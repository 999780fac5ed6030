//! What the two-sided example programs share: the device / role / address options.
#![allow(dead_code)]

use clap::{Args, ValueEnum};
use rnic_easy::parse_device;

/// Which side a program is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Role {
    /// Listens and waits for the client (krdma's node0).
    #[value(alias = "node0")]
    Server,
    /// Connects to the server (krdma's node1).
    #[value(alias = "node1")]
    Client,
}

/// `--device`, `--role`, `--addr`.
#[derive(Args, Debug, Clone)]
pub struct Side {
    /// The NIC (`sim`, `vfio-user:PATH` of `rnic sim serve`, `vfio:BDF`).
    #[arg(long, env = "RNIC_DEVICE", value_parser = parse_device)]
    pub device: String,
    /// server (node0) or client (node1).
    #[arg(long, value_enum)]
    pub role: Role,
    /// The CM address: the server listens on it (default 0.0.0.0:7471, i.e. its port's own
    /// IPv4 address), the client connects to it (default 192.0.2.2:7471: NIC 1 of `rnic sim
    /// serve`, the server's NIC).
    #[arg(long)]
    pub addr: Option<String>,
}

impl Side {
    /// The address for this role.
    pub fn addr(&self) -> String {
        self.addr.clone().unwrap_or_else(|| match self.role {
            Role::Server => "0.0.0.0:7471".into(),
            Role::Client => "192.0.2.2:7471".into(),
        })
    }
}

/// Byte `i` of message `n`'s pattern.
pub fn pattern_byte(n: u64, i: usize) -> u8 {
    (i as u64).wrapping_mul(31).wrapping_add(n.wrapping_mul(7)) as u8
}

/// Message `n`'s pattern, `len` bytes.
pub fn pattern(n: u64, len: usize) -> Vec<u8> {
    (0..len).map(|i| pattern_byte(n, i)).collect()
}
