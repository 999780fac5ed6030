//! `enum ibv_event_type` (ibv_get_async_event(3)): the kinds of asynchronous events, with
//! `Display` giving exactly `ibv_event_type_str(3)`'s text (rdma-core 44).
//!
//! Today the NIC raises only [`AsyncEventType::SrqLimitReached`] ([`crate::AsyncEvent`]);
//! the QP, CQ and port events need the RTL's event queue (issue 15) and will arrive through
//! the same [`crate::Context::poll_async_event`].
use std::fmt;

/// `enum ibv_event_type`, with the ibverbs numbering.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum AsyncEventType {
    /// 0 `IBV_EVENT_CQ_ERR`: a CQ overran.
    CqErr = 0,
    /// 1 `IBV_EVENT_QP_FATAL`.
    QpFatal = 1,
    /// 2 `IBV_EVENT_QP_REQ_ERR`.
    QpReqErr = 2,
    /// 3 `IBV_EVENT_QP_ACCESS_ERR`.
    QpAccessErr = 3,
    /// 4 `IBV_EVENT_COMM_EST`.
    CommEst = 4,
    /// 5 `IBV_EVENT_SQ_DRAINED`.
    SqDrained = 5,
    /// 6 `IBV_EVENT_PATH_MIG`.
    PathMig = 6,
    /// 7 `IBV_EVENT_PATH_MIG_ERR`.
    PathMigErr = 7,
    /// 8 `IBV_EVENT_DEVICE_FATAL`.
    DeviceFatal = 8,
    /// 9 `IBV_EVENT_PORT_ACTIVE`.
    PortActive = 9,
    /// 10 `IBV_EVENT_PORT_ERR`.
    PortErr = 10,
    /// 11 `IBV_EVENT_LID_CHANGE`.
    LidChange = 11,
    /// 12 `IBV_EVENT_PKEY_CHANGE`.
    PkeyChange = 12,
    /// 13 `IBV_EVENT_SM_CHANGE`.
    SmChange = 13,
    /// 14 `IBV_EVENT_SRQ_ERR`.
    SrqErr = 14,
    /// 15 `IBV_EVENT_SRQ_LIMIT_REACHED`.
    SrqLimitReached = 15,
    /// 16 `IBV_EVENT_QP_LAST_WQE_REACHED`.
    QpLastWqeReached = 16,
    /// 17 `IBV_EVENT_CLIENT_REREGISTER`.
    ClientReregister = 17,
    /// 18 `IBV_EVENT_GID_CHANGE`.
    GidChange = 18,
    /// 19 `IBV_EVENT_WQ_FATAL`.
    WqFatal = 19,
}

const ALL: [(AsyncEventType, &str); 20] = [
    (AsyncEventType::CqErr, "CQ error"),
    (AsyncEventType::QpFatal, "local work queue catastrophic error"),
    (AsyncEventType::QpReqErr, "invalid request local work queue error"),
    (AsyncEventType::QpAccessErr, "local access violation work queue error"),
    (AsyncEventType::CommEst, "communication established"),
    (AsyncEventType::SqDrained, "send queue drained"),
    (AsyncEventType::PathMig, "path migrated"),
    (AsyncEventType::PathMigErr, "path migration request error"),
    (AsyncEventType::DeviceFatal, "local catastrophic error"),
    (AsyncEventType::PortActive, "port active"),
    (AsyncEventType::PortErr, "port error"),
    (AsyncEventType::LidChange, "LID change"),
    (AsyncEventType::PkeyChange, "P_Key change"),
    (AsyncEventType::SmChange, "SM change"),
    (AsyncEventType::SrqErr, "SRQ catastrophic error"),
    (AsyncEventType::SrqLimitReached, "SRQ limit reached"),
    (AsyncEventType::QpLastWqeReached, "last WQE reached"),
    (AsyncEventType::ClientReregister, "client reregistration"),
    (AsyncEventType::GidChange, "GID table change"),
    (AsyncEventType::WqFatal, "WQ fatal"),
];

impl AsyncEventType {
    /// The event type of ibverbs number `v`, if ibverbs names one.
    pub fn from_raw(v: u32) -> Option<Self> {
        ALL.get(v as usize).map(|e| e.0)
    }

    /// `ibv_event_type_str(3)` of ibverbs number `v` ("unknown" for numbers it does not name).
    pub fn str_of(v: u32) -> &'static str {
        ALL.get(v as usize).map_or("unknown", |e| e.1)
    }
}

impl fmt::Display for AsyncEventType {
    /// Exactly `ibv_event_type_str(3)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(Self::str_of(*self as u32))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_names_line_up() {
        for (i, (t, _)) in ALL.iter().enumerate() {
            assert_eq!(*t as u32, i as u32);
            assert_eq!(AsyncEventType::from_raw(i as u32), Some(*t));
        }
        assert_eq!(AsyncEventType::SrqLimitReached.to_string(), "SRQ limit reached");
        assert_eq!(AsyncEventType::str_of(20), "unknown");
        assert_eq!(
            AsyncEventType::SrqLimitReached as u32,
            u32::from(rnic_contract::verbs::event_type::SRQ_LIMIT_REACHED)
        );
    }
}
