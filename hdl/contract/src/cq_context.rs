//! CQ context, written through [`crate::regs::CMD`] with [`crate::regs::cmd_op::WRITE_CQ`].
//!
//! A CQ is a ring of `2^LOG_SIZE` CQEs of [`crate::cqe::BYTES`] bytes in host memory. The NIC
//! writes CQE `n` (counting from 0 since the command) at `BASE + (n mod size) * BYTES` with
//! owner bit `!(n >> LOG_SIZE) & 1`, so the driver polls host memory, never MMIO.
use crate::field::{check_disjoint, Field};

/// 1 when the CQ exists.
pub const VALID: Field = Field::at_bit(0, 1);
/// log2 of the number of CQEs in the ring.
pub const LOG_SIZE: Field = Field::at_bit(8, 5);
/// IOVA of the ring, aligned to [`crate::cqe::BYTES`].
pub const BASE: Field = Field::at_bit(64, 64);

const _: () = assert!(check_disjoint(&[VALID, LOG_SIZE, BASE], 512));
