//! Communication management (IBTA Vol 1 ch. 12; RoCEv2 per Annex A17; librdmacm's RDMA IP
//! CM service, Annex A11): the connection messages a CM exchanges in MADs on QP1.
//!
//! - [`mad`]: the wire format of REQ, MRA, REP, RTU, REJ, DREQ and DREP, checked against
//!   Wireshark's dissector;
//! - [`engine`]: the sans-IO protocol engine ([`CmEngine`]) that sends, resends and answers
//!   them and reports rdma_cm-shaped events ([`CmEvent`]); the caller carries its MADs on QP1
//!   and gives it the time (docs/cm.md);
//! - [`types`]: the engine's parameters, events, states and errors.
//!
//! QP1 (UD receive in the NIC) is issue 15's; until it lands two rnic hosts connect by
//! exchanging `Endpoint`s, and the engine is exercised over an in-memory wire.
pub mod engine;
pub mod mad;
pub mod types;

pub use engine::{CmConfig, CmEngine};
pub use types::{
    cm_timeout_ns, reject_reason, AcceptParams, CmError, CmEvent, CmId, CmState, CmStats, ConnectParams,
    ConnectRequest, ConnectResponse, MadAddr, OutMad, REQ_USER_PRIVATE_DATA,
};

#[cfg(test)]
mod engine_proptests;
#[cfg(test)]
mod engine_tests;
