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

/// The fields of an lkey or rkey, a 32-bit word (`ibv_mr.lkey`, RETH.R_Key, AtomicETH.R_Key):
/// `index << 8 | tag`. A key whose bits above the index are not zero names no entry and is
/// refused like a stale one (IBTA Vol 1 10.6.3: an invalid key).
pub mod key {
    use super::INDEX_BITS;
    use crate::field::{check_disjoint, Field};

    /// Bits 7:0: the tag, compared with the entry's [`super::TAG`].
    pub const TAG: Field = Field::at_bit(0, 8);
    /// The key-table index, above the tag ([`INDEX_BITS`] bits).
    pub const INDEX: Field = Field::at_bit(8, INDEX_BITS);
    /// The bits above the index: zero in every key the NIC hands out.
    pub const ABOVE: Field = Field::at_bit(8 + INDEX_BITS, 32 - 8 - INDEX_BITS);

    /// The key `index << 8 | tag`. An `index` of `1 << INDEX_BITS` or more is not masked: its
    /// high bits land in [`ABOVE`], and the NIC refuses the key.
    pub const fn word(index: u32, tag: u8) -> u32 {
        index << INDEX.lsb | tag as u32
    }

    const _: () = assert!(check_disjoint(&[TAG, INDEX, ABOVE], 32));
    const _: () = assert!(ABOVE.end() == 32);
}

const _: () = assert!(check_disjoint(&[VALID, ACCESS, TAG, PD, VA, LENGTH, IOVA], 512));

#[cfg(test)]
mod tests {
    use super::key;

    #[test]
    fn a_key_is_index_then_tag() {
        let k = key::word(5, 0xA7);
        assert_eq!(k, 0x5A7);
        let b = k.to_le_bytes();
        assert_eq!(key::TAG.get(&b), 0xA7);
        assert_eq!(key::INDEX.get(&b), 5);
        assert_eq!(key::ABOVE.get(&b), 0);
        let past = key::word(1 << super::INDEX_BITS, 0).to_le_bytes();
        assert_eq!((key::INDEX.get(&past), key::ABOVE.get(&past)), (0, 1));
    }
}
