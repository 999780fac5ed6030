//! Bit-exact software model of the CRC-32 register, and GF(2) 32×32 matrix helpers.
//!
//! The register convention is the raw, reflected LFSR (polynomial 0xEDB88320, the bit-reversed
//! form of IEEE 802.3's 0x04C11DB7), fed least-significant bit of each byte first, with no initial
//! value and no final complement: zlib's `crc32(data) == !step(0xFFFF_FFFF, data)`.
//!
//! Because there is no init or final inversion, `step` is *linear* over GF(2) in the pair
//! (state, data): `step(a ^ b, x ^ y) == step(a, x) ^ step(b, y)`. Everything the generator in
//! [`super::verilog`] emits follows from that: each output bit is the parity of some state bits
//! and some data bits.

/// The reflected CRC-32 polynomial (IEEE 802.3, zlib, Ethernet FCS, RoCEv2 ICRC).
pub const POLY: u32 = 0xEDB8_8320;

/// A 32×32 matrix over GF(2). Row `i` is a mask: bit `i` of `M·x` is the parity of `m[i] & x`.
pub type Mat32 = [u32; 32];

/// One bit of the LFSR: shift in `bit` (0 or 1).
#[inline]
fn step_bit(state: u32, bit: u32) -> u32 {
    let t = (state ^ bit) & 1;
    (state >> 1) ^ (POLY & t.wrapping_neg())
}

/// Runs the CRC register over `bytes` (byte 0 first, least-significant bit of each byte first).
///
/// No init or final inversion: `crc32fast::hash(d) == !step(0xFFFF_FFFF, d)`.
#[must_use]
pub fn step(state: u32, bytes: &[u8]) -> u32 {
    let mut s = state;
    for &b in bytes {
        for k in 0..8 {
            s = step_bit(s, u32::from(b >> k) & 1);
        }
    }
    s
}

/// The inverse of one zero-bit LFSR step.
///
/// Forward (input bit 0): `s' = (s >> 1) ^ (s & 1 ? POLY : 0)`. Since `POLY` has bit 31 set and
/// `s >> 1` has bit 31 clear, `s'[31] == s[0]`, which recovers the shifted-out bit.
#[inline]
fn unstep_zero_bit(next: u32) -> u32 {
    let lsb = next >> 31;
    ((next ^ (POLY & lsb.wrapping_neg())) << 1) | lsb
}

/// The unique register `R` with `step(R, &[0; n]) == state`: undoes `n` zero bytes.
///
/// Runs the LFSR backwards, 8·n steps (see [`zero_bytes_matrix`] and [`inverse`] for the matrix
/// form the hardware uses).
#[must_use]
pub fn unzero(state: u32, n: usize) -> u32 {
    let mut s = state;
    for _ in 0..8 * n {
        s = unstep_zero_bit(s);
    }
    s
}

/// The register to start with so that `n` leading bytes which the hardware has *zeroed* do not
/// count: `step(init_skipping(n), &[0; n]) == 0xFFFF_FFFF`, hence
/// `step(init_skipping(n), [0; n] ++ rest) == step(0xFFFF_FFFF, rest)`.
#[must_use]
pub fn init_skipping(n_leading: usize) -> u32 {
    unzero(0xFFFF_FFFF, n_leading)
}

/// `step(state, &[0; n])`: the register after `n` zero bytes.
#[must_use]
pub fn zeros(state: u32, n: usize) -> u32 {
    step(state, &vec![0; n])
}

/// The CRC-32 residue: the raw register after any message followed by its own CRC (the
/// complement of `step(0xFFFF_FFFF, message)`, least-significant byte first), when the register
/// started at `0xFFFF_FFFF`. A receiver that runs the register over message and CRC and finds
/// this value knows both arrived intact (0xDEBB_20E3, the bit-reversed form of 0xC704DD7B).
#[must_use]
pub fn residue() -> u32 {
    let msg = [0u8; 1];
    let crc = !step(0xFFFF_FFFF, &msg);
    let mut all = msg.to_vec();
    all.extend_from_slice(&crc.to_le_bytes());
    step(0xFFFF_FFFF, &all)
}

/// The identity matrix.
#[must_use]
pub fn identity() -> Mat32 {
    std::array::from_fn(|i| 1u32 << i)
}

/// `m · x` over GF(2).
#[must_use]
pub fn mat_vec(m: &Mat32, x: u32) -> u32 {
    let mut y = 0;
    for (i, row) in m.iter().enumerate() {
        y |= ((row & x).count_ones() & 1) << i;
    }
    y
}

/// `a · b` over GF(2) (apply `b` first, then `a`).
#[must_use]
pub fn mat_mul(a: &Mat32, b: &Mat32) -> Mat32 {
    // Column j of a·b is a·(column j of b); build the product from its columns.
    let cols_b: [u32; 32] = std::array::from_fn(|j| column(b, j));
    let mut out = [0u32; 32];
    for (j, &cb) in cols_b.iter().enumerate() {
        let c = mat_vec(a, cb);
        for (i, row) in out.iter_mut().enumerate() {
            *row |= ((c >> i) & 1) << j;
        }
    }
    out
}

/// Column `j` of `m` as a vector.
#[must_use]
pub fn column(m: &Mat32, j: usize) -> u32 {
    let mut c = 0;
    for (i, row) in m.iter().enumerate() {
        c |= ((row >> j) & 1) << i;
    }
    c
}

/// The matrix of a GF(2)-linear map `f`, probed on the unit vectors.
#[must_use]
pub fn matrix_of(f: impl Fn(u32) -> u32) -> Mat32 {
    let mut m = [0u32; 32];
    for j in 0..32 {
        let c = f(1 << j);
        for (i, row) in m.iter_mut().enumerate() {
            *row |= ((c >> i) & 1) << j;
        }
    }
    m
}

/// `m^e` by repeated squaring.
#[must_use]
pub fn mat_pow(m: &Mat32, mut e: u64) -> Mat32 {
    let mut result = identity();
    let mut base = *m;
    while e > 0 {
        if e & 1 == 1 {
            result = mat_mul(&base, &result);
        }
        base = mat_mul(&base, &base);
        e >>= 1;
    }
    result
}

/// The inverse over GF(2) by Gauss–Jordan elimination, or `None` if `m` is singular.
#[must_use]
pub fn inverse(m: &Mat32) -> Option<Mat32> {
    let mut a = *m;
    let mut inv = identity();
    for col in 0..32 {
        let pivot = (col..32).find(|&r| (a[r] >> col) & 1 == 1)?;
        a.swap(col, pivot);
        inv.swap(col, pivot);
        for r in 0..32 {
            if r != col && (a[r] >> col) & 1 == 1 {
                a[r] ^= a[col];
                inv[r] ^= inv[col];
            }
        }
    }
    Some(inv)
}

/// The matrix `Z_n` of `state ↦ step(state, &[0; n])`.
#[must_use]
pub fn zero_bytes_matrix(n: usize) -> Mat32 {
    mat_pow(&matrix_of(|s| step(s, &[0])), n as u64)
}

/// The matrix `Z_n⁻¹` of `state ↦ unzero(state, n)`, computed by matrix inversion (independently
/// of [`unzero`], which runs the LFSR backwards).
#[must_use]
pub fn unzero_matrix(n: usize) -> Mat32 {
    inverse(&zero_bytes_matrix(n)).expect("the zero-byte CRC map is invertible (POLY has bit 31)")
}

/// Masks for one 64-byte beat: for output bit `i`, `(data_mask[i], state_mask[i])` such that
/// `step(s, d)[i] == parity(d_bits & data_mask[i]) ^ parity(s & state_mask[i])`, where `d_bits`
/// is the 512-bit little-endian number whose byte `k` is `d[k]` (bit `8k + b` = bit `b` of byte
/// `k`). `data_mask[i]` is given as 8 little-endian 64-bit words.
#[must_use]
pub fn beat_masks(beat_bytes: usize) -> (Vec<Vec<u64>>, Mat32) {
    let nbits = beat_bytes * 8;
    let words = nbits.div_ceil(64);
    let mut data_masks = vec![vec![0u64; words]; 32];
    let mut msg = vec![0u8; beat_bytes];
    for j in 0..nbits {
        msg[j / 8] = 1 << (j % 8);
        let c = step(0, &msg);
        msg[j / 8] = 0;
        for (i, dm) in data_masks.iter_mut().enumerate() {
            dm[j / 64] |= u64::from((c >> i) & 1) << (j % 64);
        }
    }
    let zeros = vec![0u8; beat_bytes];
    let state_masks = matrix_of(|s| step(s, &zeros));
    (data_masks, state_masks)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_matches_zlib_check_value() {
        // The CRC-32 catalogue check value.
        assert_eq!(!step(0xFFFF_FFFF, b"123456789"), 0xCBF4_3926);
        assert_eq!(step(0, &[]), 0);
    }

    /// `step` in terms of crc32fast, whose "initial" value is the complemented register.
    fn crc32fast_step(state: u32, bytes: &[u8]) -> u32 {
        let mut h = crc32fast::Hasher::new_with_initial(!state);
        h.update(bytes);
        !h.finalize()
    }

    #[test]
    fn step_matches_crc32fast() {
        let mut seed = 0x0123_4567_89AB_CDEFu64;
        let mut next = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            seed >> 32
        };
        for len in [0usize, 1, 3, 14, 63, 64, 65, 200, 1500] {
            let data: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            assert_eq!(crc32fast::hash(&data), !step(0xFFFF_FFFF, &data), "len={len}");
            let s = next() as u32;
            assert_eq!(crc32fast_step(s, &data), step(s, &data), "len={len}");
            // Undoing trailing zeros of a zero-padded message gives the unpadded CRC.
            let mut padded = data.clone();
            padded.resize(len + 37, 0);
            assert_eq!(unzero(crc32fast_step(s, &padded), 37), crc32fast_step(s, &data));
        }
    }

    #[test]
    fn unzero_inverts_zero_bytes() {
        let mut x = 0x1234_5678u32;
        for n in [0usize, 1, 2, 3, 7, 14, 63, 64, 100, 4096] {
            x = x.wrapping_mul(0x9E37_79B9).rotate_left(5) ^ n as u32;
            assert_eq!(step(unzero(x, n), &vec![0; n]), x, "n={n}");
            assert_eq!(unzero(step(x, &vec![0; n]), n), x, "n={n}");
        }
    }

    #[test]
    fn matrices_agree_with_lfsr() {
        for n in [0usize, 1, 2, 4, 8, 16, 32, 64, 13] {
            let z = zero_bytes_matrix(n);
            let u = unzero_matrix(n);
            assert_eq!(mat_mul(&z, &u), identity());
            for x in [1u32, 0xFFFF_FFFF, 0xDEAD_BEEF, 0x8000_0001] {
                assert_eq!(mat_vec(&z, x), step(x, &vec![0; n]));
                assert_eq!(mat_vec(&u, x), unzero(x, n));
            }
        }
        assert!(inverse(&[0u32; 32]).is_none());
    }

    #[test]
    fn beat_masks_reproduce_step() {
        let (dm, sm) = beat_masks(64);
        let mut seed = 7u64;
        for _ in 0..20 {
            let mut d = [0u8; 64];
            for b in d.iter_mut() {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                *b = (seed >> 56) as u8;
            }
            let s = (seed >> 13) as u32;
            let words: Vec<u64> = (0..8).map(|w| u64::from_le_bytes(d[8 * w..8 * w + 8].try_into().unwrap())).collect();
            let mut out = 0u32;
            for i in 0..32 {
                let p: u32 = dm[i].iter().zip(&words).map(|(m, x)| (m & x).count_ones()).sum();
                out |= ((p ^ (sm[i] & s).count_ones()) & 1) << i;
            }
            assert_eq!(out, step(s, &d));
        }
    }

    #[test]
    fn residue_is_message_independent() {
        assert_eq!(residue(), 0xDEBB_20E3);
        let mut seed = 99u64;
        for len in [1usize, 5, 64, 301] {
            let msg: Vec<u8> = (0..len)
                .map(|_| {
                    seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
                    (seed >> 56) as u8
                })
                .collect();
            let mut all = msg.clone();
            all.extend_from_slice(&(!step(0xFFFF_FFFF, &msg)).to_le_bytes());
            assert_eq!(step(0xFFFF_FFFF, &all), residue(), "len={len}");
            // Zero padding: unzero(x, z) == residue iff x == zeros(residue, z).
            for z in [0usize, 1, 17, 63] {
                let mut padded = all.clone();
                padded.resize(all.len() + z, 0);
                assert_eq!(step(0xFFFF_FFFF, &padded), zeros(residue(), z));
            }
        }
    }

    #[test]
    fn init_skipping_cancels_zeroed_prefix() {
        let rest = b"RoCEv2 payload";
        for n in [0usize, 1, 14, 63, 64, 65] {
            let mut msg = vec![0u8; n];
            msg.extend_from_slice(rest);
            assert_eq!(step(init_skipping(n), &msg), step(0xFFFF_FFFF, rest));
        }
    }
}
