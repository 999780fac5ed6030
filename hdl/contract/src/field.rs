//! Bit ranges inside little-endian records (WQE, CQE, context staging vectors).

/// A bit range `[lsb, lsb + width)` of a little-endian record of up to 512 bits.
///
/// Widths are at most 64 bits, so a field's value travels as a `u64`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field {
    /// Index of the least-significant bit in the record.
    pub lsb: usize,
    /// Width in bits (1 ..= 64).
    pub width: usize,
}

impl Field {
    /// A field at byte offset `byte` of `width` bits.
    pub const fn at_byte(byte: usize, width: usize) -> Field {
        Field { lsb: byte * 8, width }
    }

    /// A field at bit offset `lsb` of `width` bits.
    pub const fn at_bit(lsb: usize, width: usize) -> Field {
        Field { lsb, width }
    }

    /// The largest value the field holds.
    pub const fn max(self) -> u64 {
        if self.width == 64 {
            u64::MAX
        } else {
            (1u64 << self.width) - 1
        }
    }

    /// One past the field's most-significant bit.
    pub const fn end(self) -> usize {
        self.lsb + self.width
    }

    /// Writes `value` (truncated to the field's width) into `record`, a little-endian byte buffer.
    ///
    /// # Panics
    /// If the record is shorter than the field's end: records are fixed-size, so this is a
    /// programming error, not a runtime condition.
    pub fn put(self, record: &mut [u8], value: u64) {
        let value = value & self.max();
        for i in 0..self.width {
            let bit = self.lsb + i;
            let byte = &mut record[bit / 8];
            if (value >> i) & 1 == 1 {
                *byte |= 1 << (bit % 8);
            } else {
                *byte &= !(1 << (bit % 8));
            }
        }
    }

    /// Reads the field from `record`, a little-endian byte buffer.
    pub fn get(self, record: &[u8]) -> u64 {
        let mut value = 0u64;
        for i in 0..self.width {
            let bit = self.lsb + i;
            if (record[bit / 8] >> (bit % 8)) & 1 == 1 {
                value |= 1 << i;
            }
        }
        value
    }
}

/// Asserts at compile time that `fields` do not overlap and fit in `bits`.
pub const fn check_disjoint(fields: &[Field], bits: usize) -> bool {
    let mut i = 0;
    while i < fields.len() {
        if fields[i].end() > bits || fields[i].width == 0 || fields[i].width > 64 {
            return false;
        }
        let mut j = i + 1;
        while j < fields.len() {
            let (a, b) = (fields[i], fields[j]);
            if a.lsb < b.end() && b.lsb < a.end() {
                return false;
            }
            j += 1;
        }
        i += 1;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn put_get_round_trip_across_bytes() {
        let mut rec = [0u8; 16];
        let f = Field::at_bit(5, 24);
        f.put(&mut rec, 0xABCDEF);
        assert_eq!(f.get(&rec), 0xABCDEF);
        assert_eq!(rec[0], 0xEF << 5 & 0xFF);
        // Neighbouring bits are untouched.
        let g = Field::at_bit(0, 5);
        assert_eq!(g.get(&rec), 0);
        g.put(&mut rec, 0x1F);
        assert_eq!(f.get(&rec), 0xABCDEF);
    }

    #[test]
    fn put_truncates_to_width() {
        let mut rec = [0u8; 8];
        Field::at_byte(1, 4).put(&mut rec, 0xFF);
        assert_eq!(rec, [0, 0x0F, 0, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn overlap_is_detected() {
        assert!(check_disjoint(&[Field::at_bit(0, 8), Field::at_bit(8, 8)], 16));
        assert!(!check_disjoint(&[Field::at_bit(0, 9), Field::at_bit(8, 8)], 16));
        assert!(!check_disjoint(&[Field::at_bit(10, 8)], 16));
    }
}
