//! Memory-region key-table entry, written through [`crate::regs::CMD`] with
//! [`crate::regs::cmd_op::WRITE_MR`] at index `key >> 8`.
//!
//! An lkey/rkey is `index << 8 | tag`: the NIC finds the entry by bits 15:8 and accepts the key
//! only if the entry is valid and its [`TAG`] equals bits 7:0, so a stale key of a deregistered
//! and re-registered slot is refused (IBTA Vol 1 10.6.3). A region is contiguous in IOVA space:
//! virtual address `va` translates to `IOVA + (va - VA)` after the bounds check
//! `VA <= va && va + len <= VA + LENGTH`.
use crate::field::{check_disjoint, Field};

/// 1 when the entry holds a registered region.
pub const VALID: Field = Field::at_bit(0, 1);
/// ibv_access_flags granted (LOCAL_WRITE = 1, REMOTE_WRITE = 2, REMOTE_READ = 4, ATOMIC = 8).
pub const ACCESS: Field = Field::at_bit(4, 4);
/// Key tag: bits 7:0 of the lkey/rkey.
pub const TAG: Field = Field::at_bit(8, 8);
/// Protection domain number of the region.
pub const PD: Field = Field::at_bit(16, 24);
/// Virtual address of the region's first byte, as the application sees it (RETH.VA space).
pub const VA: Field = Field::at_bit(64, 64);
/// Length of the region in bytes.
pub const LENGTH: Field = Field::at_bit(128, 64);
/// IOVA at which the region is mapped for DMA.
pub const IOVA: Field = Field::at_bit(192, 64);

/// Number of bits of a key that index the table.
pub const INDEX_BITS: usize = crate::LOG_NUM_MRS;

const _: () = assert!(check_disjoint(&[VALID, ACCESS, TAG, PD, VA, LENGTH, IOVA], 512));
