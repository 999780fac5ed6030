//! The easy API's error type.
use std::time::Duration;

use rnic::WcStatus;

/// Everything an easy-API call can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EasyError {
    /// A verb failed (the driver's error, with its errno: [`rnic::Error::errno`]).
    #[error("verbs: {0}")]
    Verbs(#[from] rnic::Error),
    /// A TCP socket of [`crate::tcp_connect`] failed (what `rc_pingpong`'s out-of-band
    /// exchange uses; the easy connections themselves meet through the CM).
    #[error("TCP ({what}): {source}")]
    Exchange {
        /// The step that failed.
        what: &'static str,
        /// The socket error.
        #[source]
        source: std::io::Error,
    },
    /// The peer's connection message (the private data of its REQ or REP) is not one this
    /// crate understands.
    #[error("protocol: {0}")]
    Protocol(String),
    /// The peer's CM refused the connection with a REJ (IBTA Vol 1 12.6.7, Table 112;
    /// `RDMA_CM_EVENT_REJECTED`): reason 8 (invalid service ID) means nobody listens on that
    /// port, 28 that the server's consumer rejected it (its `private_data` may say why).
    #[error("{addr} refused the connection: REJ reason {reason}{}{}", reject_text(*.reason), pdata_text(.private_data))]
    Rejected {
        /// The address connected to.
        addr: std::net::SocketAddrV4,
        /// The REJ's reason.
        reason: u16,
        /// The REJ's private data, without its zero padding.
        private_data: Vec<u8>,
    },
    /// The peer cannot be reached: an address that is no RDMA neighbor (loopback, multicast,
    /// no MAC known: `RDMA_CM_EVENT_ADDR_ERROR`).
    #[error("{addr} is unreachable: {why}")]
    Unreachable {
        /// The address.
        addr: std::net::SocketAddrV4,
        /// Why.
        why: String,
    },
    /// The peer disconnected (`RDMA_CM_EVENT_DISCONNECTED`: its DREQ, or its id destroyed):
    /// the QP is in the error state and its outstanding work requests were flushed.
    #[error("the peer disconnected (RDMA_CM_EVENT_DISCONNECTED) during {op}")]
    Disconnected {
        /// The operation that found out ("send", "recv", "write", "read").
        op: &'static str,
    },
    /// A work request completed with an error status (`ibv_wc.status` other than
    /// `IBV_WC_SUCCESS`); `status` prints as `ibv_wc_status_str` does. The QP is in the error
    /// state afterwards: the connection can only be dropped.
    #[error("{op} completed with status {status} (wr_id {wr_id})")]
    Completion {
        /// The operation ("send", "recv", "write", "read").
        op: &'static str,
        /// The completion status.
        status: WcStatus,
        /// The work request's id.
        wr_id: u64,
    },
    /// No completion arrived within the connection's timeout (wall time).
    #[error("timed out after {after:?} waiting for the {op} completion")]
    TimedOut {
        /// The operation waited for.
        op: &'static str,
        /// How long it waited.
        after: Duration,
    },
    /// A message longer than the peer's receive buffers (its `msg_size`, bytes): posting it
    /// would complete with `IBV_WC_REM_INV_REQ_ERR` on this side and break the connection.
    #[error("a {len}-byte message exceeds the peer's {max}-byte receive buffers")]
    MessageTooLong {
        /// Bytes asked for.
        len: usize,
        /// The peer's receive buffer size, bytes.
        max: usize,
    },
    /// `read` / `write` on a connection whose peer advertised no buffer (its `rw_size` was 0),
    /// or `local_read` / `local_write` on one that advertises none.
    #[error("no {0} buffer: set Options::rw_size on both sides to advertise one at connect time")]
    NoBuffer(&'static str),
    /// A range outside a buffer (`offset + len > size`, bytes).
    #[error("{len} bytes at offset {offset} are outside the {size}-byte {what} buffer")]
    OutOfBounds {
        /// Which buffer ("remote", "local", "staging").
        what: &'static str,
        /// Offset, bytes.
        offset: u64,
        /// Length, bytes.
        len: usize,
        /// Size of the buffer, bytes.
        size: u64,
    },
}

impl From<rnic::PostError> for EasyError {
    fn from(e: rnic::PostError) -> Self {
        EasyError::Verbs(e.into())
    }
}

/// The easy API's result type.
pub type Result<T, E = EasyError> = std::result::Result<T, E>;

fn reject_text(reason: u16) -> &'static str {
    use rnic::cm::reject_reason as r;
    match reason {
        r::TIMEOUT => " (timeout)",
        r::INVALID_SERVICE_ID => " (invalid service ID: nobody listens on that port)",
        r::INVALID_TRANSPORT_TYPE => " (invalid transport type)",
        r::STALE_CONNECTION => " (stale connection)",
        r::INVALID_MTU => " (invalid MTU)",
        r::CONSUMER => " (consumer reject)",
        _ => "",
    }
}

fn pdata_text(p: &[u8]) -> String {
    if p.is_empty() {
        String::new()
    } else {
        format!(", private data {:?}", String::from_utf8_lossy(p))
    }
}

pub(crate) fn xerr(what: &'static str) -> impl FnOnce(std::io::Error) -> EasyError {
    move |source| EasyError::Exchange { what, source }
}
