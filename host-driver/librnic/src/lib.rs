//! `librnic`: the verbs C ABI of rnic, built as a drop-in `libibverbs.so.1`.
//!
//! Programs compiled against rdma-core 44's `<infiniband/verbs.h>` (Debian bookworm's
//! `ibv_devinfo`, `ibv_devices`, `ibv_rc_pingpong`, perftest) run unmodified with
//! `LD_LIBRARY_PATH` pointing at a directory holding this library as `libibverbs.so.1`; their
//! devices are the ones `RNIC_DEVICE` names (see `rnic::devlist`: `sim` = one in-process
//! simulated NIC whose port is looped back, `sim:N` = N NICs of one world cabled in pairs).
//!
//! Every call goes through the `rnic` driver: the structs the program sees ([`abi`], with
//! rdma-core's exact layouts) are the first field of a Rust object that holds the driver's
//! verbs object. `ibv_post_send`, `ibv_post_recv`, `ibv_poll_cq` are inline in the header and
//! reach the driver through `struct ibv_context_ops`; `ibv_query_port` through
//! `struct verbs_context`. One process-wide lock serializes the calls (the driver's objects are
//! single-threaded).
//!
//! Completion channels and CQ events (`ibv_create_comp_channel`, `ibv_req_notify_cq` through
//! `ibv_context_ops`, `ibv_get_cq_event`, `ibv_ack_cq_events`) are the driver's
//! [`rnic::CompletionChannel`]: the channel's `fd` is the driver's epoll fd of its CQs'
//! interrupt eventfds.
//!
//! RC and UD QPs: a UD QP (`IBV_QPT_UD`) sends to address handles (`ibv_create_ah`, the
//! peer's IPv4-mapped GID; `ibv_create_ah_from_wc` from a receive's GRH area) and its receive
//! completions carry `IBV_WC_GRH` and `src_qp` (docs/driver.md).
//!
//! Not supported yet (they need RTL the NIC does not have, issue 15): UC, XRC and raw packet
//! QPs, multicast, memory windows, the extended verbs (`ibv_qp_to_qp_ex`,
//! `ibv_create_cq_ex`): they fail with `EOPNOTSUPP`.
#![allow(clippy::missing_safety_doc)]

pub mod abi;
mod verbs;

pub use verbs::status_strings;
