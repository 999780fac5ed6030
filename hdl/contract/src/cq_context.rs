//! CQ context, written through [`crate::regs::CMD`] with [`crate::regs::cmd_op::WRITE_CQ`].
//!
//! A CQ is a ring of `2^LOG_SIZE` CQEs of [`crate::cqe::BYTES`] bytes in host memory. The NIC
//! writes CQE `n` (counting from 0 since the command) at `BASE + (n mod size) * BYTES` with
//! owner bit `!(n >> LOG_SIZE) & 1`, so the driver polls host memory, never MMIO.
//!
//! **Completion events** (IBTA Vol 1 11.4.2.2, `ibv_req_notify_cq(3)`): the command also
//! disarms the CQ. After an arm ([`crate::regs::CQ_ARM`]) the NIC raises one event for the CQ
//! on its interrupt vector [`VECTOR`] (see [`crate::regs::irq`]) and disarms it again.
use crate::field::{check_disjoint, Field};

/// 1 when the CQ exists.
pub const VALID: Field = Field::at_bit(0, 1);
/// log2 of the number of CQEs in the ring.
pub const LOG_SIZE: Field = Field::at_bit(8, 5);
/// Interrupt vector (MSI-X table entry) of the CQ's completion events, 0..[`crate::regs::IRQ_VECTORS`]
/// (`comp_vector` of `ibv_create_cq(3)`).
pub const VECTOR: Field = Field::at_bit(16, 5);
/// IOVA of the ring, aligned to [`crate::cqe::BYTES`].
pub const BASE: Field = Field::at_bit(64, 64);

const _: () = assert!(check_disjoint(&[VALID, LOG_SIZE, VECTOR, BASE], 512));
const _: () = assert!(1u64 << VECTOR.width == crate::regs::IRQ_VECTORS as u64);
