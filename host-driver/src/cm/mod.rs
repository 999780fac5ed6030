//! Communication management (IBTA Vol 1 ch. 12; RoCEv2 per Annex A17; librdmacm's RDMA IP
//! CM service, Annex A11): the connection messages a CM exchanges in MADs on QP1.
//!
//! - [`mad`]: the wire format of REQ, MRA, REP, RTU, REJ, DREQ and DREP, checked against
//!   Wireshark's dissector;
//! - [`engine`]: the sans-IO protocol engine ([`CmEngine`]) that sends, resends and answers
//!   them and reports rdma_cm-shaped events ([`CmEvent`]); the caller carries its MADs on QP1
//!   and gives it the time (docs/cm.md);
//! - [`types`]: the engine's parameters, events, states and errors;
//! - [`port`]: QP1 (the GSI QP: UD, QP number 1, Q_Key `GSI_QKEY`) carrying the engine's
//!   MADs;
//! - [`arp`]: the neighbor table and ARP (RFC 826) on the port's raw Ethernet path;
//! - [`channel`] and [`id`]: the librdmacm-shaped API on top ([`EventChannel`],
//!   [`RdmaCmId`], `rdma_cm(7)`): resolve, connect, listen, accept, reject, disconnect, and
//!   events with private data. Progress is [`EventChannel::process`], which
//!   [`EventChannel::get_cm_event`] runs while it waits (docs/cm.md).
pub mod arp;
pub mod channel;
pub mod engine;
pub mod id;
pub mod mad;
pub mod port;
pub mod types;

pub use arp::{ArpStats, Neighbors};
pub use channel::{ChannelConfig, CmEventType, EventChannel, RdmaCmEvent};
pub use engine::{CmConfig, CmEngine};
pub use id::{ConnParam, RdmaCmId};
pub use port::AgentStats;
pub use types::{
    cm_timeout_ns, reject_reason, AcceptParams, CmError, CmEvent, CmId, CmState, CmStats, ConnectParams,
    ConnectRequest, ConnectResponse, MadAddr, OutMad, REQ_USER_PRIVATE_DATA,
};

#[cfg(test)]
mod engine_proptests;
#[cfg(test)]
mod engine_tests;
