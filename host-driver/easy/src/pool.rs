//! The pool + doorbell demo's pieces (`pool_server`, `pool_server_ev`, `pool_client`; see
//! docs/examples.md): a bitmap allocator of fixed-size slices of one registered region, and
//! the control messages the client and server exchange by SEND / RECV.
//!
//! A client asks for bytes (`REQ_ALLOC`), the server answers with a run of slices
//! (`RESP_ALLOC`: remote address, rkey, length); the client streams unsignaled RDMA WRITEs into
//! it and rings a doorbell every N writes — a signaled RDMA WRITE WITH IMMEDIATE whose
//! immediate names the batch, which consumes one of the server's receives and completes there
//! as `IBV_WC_RECV_RDMA_WITH_IMM`; the server then reads and checks the batch's bytes. At the
//! end the client frees the run (`REQ_FREE`) and learns from `RESP_FREE` how many bytes the
//! server verified.

/// A bitmap allocator of `n` ≤ 64 equal slices: bit `i` set = slice `i` in use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlicePool {
    used: u64,
    slices: u32,
    slice_size: u64,
}

impl SlicePool {
    /// A pool of `slices` (1..=64) slices of `slice_size` bytes, all free.
    ///
    /// # Panics
    /// Never; `slices` is clamped to 1..=64.
    pub fn new(slices: u32, slice_size: u64) -> Self {
        Self { used: 0, slices: slices.clamp(1, 64), slice_size }
    }

    /// Bytes per slice.
    pub fn slice_size(&self) -> u64 {
        self.slice_size
    }

    /// Slices in the pool.
    pub fn slices(&self) -> u32 {
        self.slices
    }

    /// Free slices.
    pub fn free(&self) -> u32 {
        self.slices - self.used.count_ones()
    }

    /// The bitmap (bit `i` = slice `i` in use).
    pub fn bitmap(&self) -> u64 {
        self.used
    }

    fn mask(first: u32, count: u32) -> u64 {
        if count >= 64 {
            u64::MAX
        } else {
            ((1u64 << count) - 1) << first
        }
    }

    /// Allocates the lowest run of consecutive free slices that holds `bytes` (first fit);
    /// returns `(first slice, slice count)`, or `None` if no run is free (or `bytes` is 0).
    pub fn alloc(&mut self, bytes: u64) -> Option<(u32, u32)> {
        if bytes == 0 {
            return None;
        }
        let count = u32::try_from(bytes.div_ceil(self.slice_size)).ok()?;
        if count > self.slices {
            return None;
        }
        (0..=self.slices - count).find_map(|first| {
            let m = Self::mask(first, count);
            (self.used & m == 0).then(|| {
                self.used |= m;
                (first, count)
            })
        })
    }

    /// Frees `count` slices from `first`. Returns false (and frees nothing) if any of them was
    /// not allocated or the run is outside the pool.
    pub fn release(&mut self, first: u32, count: u32) -> bool {
        if count == 0 || first.checked_add(count).is_none_or(|end| end > self.slices) {
            return false;
        }
        let m = Self::mask(first, count);
        if self.used & m != m {
            return false;
        }
        self.used &= !m;
        true
    }
}

/// Bytes of every control message.
pub const MSG_BYTES: usize = 32;

/// A control message (little-endian fields in a [`MSG_BYTES`]-byte buffer).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Msg {
    /// Client → server: allocate `bytes`, to be written in writes of `chunk` bytes.
    ReqAlloc {
        /// Bytes wanted.
        bytes: u64,
        /// Bytes per RDMA WRITE of the stream (write `w` lands at offset `w × chunk`).
        chunk: u32,
    },
    /// Server → client: the run allocated (`ok` false: none free; the rest is 0).
    RespAlloc {
        /// An allocation was made.
        ok: bool,
        /// First slice.
        first: u32,
        /// Slices.
        count: u32,
        /// Remote virtual address of the run.
        addr: u64,
        /// rkey of the pool region.
        rkey: u32,
        /// Length of the run, bytes.
        len: u32,
    },
    /// Client → server: free the run.
    ReqFree {
        /// First slice.
        first: u32,
        /// Slices.
        count: u32,
    },
    /// Server → client: the run was freed (`ok`) after `verified` bytes of it were checked, of
    /// which `bad` were wrong.
    RespFree {
        /// The run was allocated and is now free.
        ok: bool,
        /// Bytes checked on doorbells.
        verified: u64,
        /// Bytes that did not match.
        bad: u64,
    },
}

impl Msg {
    /// The message's bytes.
    pub fn encode(&self) -> [u8; MSG_BYTES] {
        let mut b = [0u8; MSG_BYTES];
        let put32 = |b: &mut [u8; MSG_BYTES], at: usize, v: u32| b[at..at + 4].copy_from_slice(&v.to_le_bytes());
        let put64 = |b: &mut [u8; MSG_BYTES], at: usize, v: u64| b[at..at + 8].copy_from_slice(&v.to_le_bytes());
        match *self {
            Msg::ReqAlloc { bytes, chunk } => {
                put32(&mut b, 0, 1);
                put64(&mut b, 8, bytes);
                put32(&mut b, 16, chunk);
            }
            Msg::RespAlloc { ok, first, count, addr, rkey, len } => {
                put32(&mut b, 0, 2);
                put32(&mut b, 4, u32::from(ok));
                put64(&mut b, 8, addr);
                put32(&mut b, 16, rkey);
                put32(&mut b, 20, len);
                put32(&mut b, 24, first);
                put32(&mut b, 28, count);
            }
            Msg::ReqFree { first, count } => {
                put32(&mut b, 0, 3);
                put32(&mut b, 24, first);
                put32(&mut b, 28, count);
            }
            Msg::RespFree { ok, verified, bad } => {
                put32(&mut b, 0, 4);
                put32(&mut b, 4, u32::from(ok));
                put64(&mut b, 8, verified);
                put64(&mut b, 16, bad);
            }
        }
        b
    }

    /// Parses a message.
    ///
    /// # Errors
    /// A description of what is wrong (length, type).
    pub fn decode(b: &[u8]) -> Result<Msg, String> {
        if b.len() != MSG_BYTES {
            return Err(format!("a control message has {MSG_BYTES} bytes, not {}", b.len()));
        }
        let g32 = |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
        let g64 = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
        Ok(match g32(0) {
            1 => Msg::ReqAlloc { bytes: g64(8), chunk: g32(16) },
            2 => Msg::RespAlloc {
                ok: g32(4) != 0,
                addr: g64(8),
                rkey: g32(16),
                len: g32(20),
                first: g32(24),
                count: g32(28),
            },
            3 => Msg::ReqFree { first: g32(24), count: g32(28) },
            4 => Msg::RespFree { ok: g32(4) != 0, verified: g64(8), bad: g64(16) },
            t => return Err(format!("unknown control message type {t}")),
        })
    }
}

/// The doorbell's immediate data: batch number in bits 15:0, writes in the batch in 31:16.
pub fn doorbell_imm(batch: u16, writes: u16) -> u32 {
    u32::from(writes) << 16 | u32::from(batch)
}

/// The (batch, writes) of a doorbell's immediate data.
pub fn doorbell_fields(imm: u32) -> (u16, u16) {
    (imm as u16, (imm >> 16) as u16)
}

/// Byte `i` of write `w` of the stream (what the server checks).
pub fn stream_byte(w: u64, i: usize) -> u8 {
    (w.wrapping_mul(13) as u8).wrapping_add(i as u8).wrapping_add((i >> 8) as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_fit_runs_and_release() {
        let mut p = SlicePool::new(8, 4096);
        assert_eq!(p.alloc(4096 * 3), Some((0, 3)));
        assert_eq!(p.alloc(1), Some((3, 1)));
        assert_eq!(p.alloc(4097), Some((4, 2)));
        assert_eq!(p.bitmap(), 0b11_1111);
        assert_eq!(p.free(), 2);
        assert_eq!(p.alloc(4096 * 3), None, "two slices left");
        assert!(p.release(0, 3));
        assert!(!p.release(0, 3), "double free refused");
        assert!(!p.release(6, 4), "past the end refused");
        assert!(!p.release(2, 3), "partly free run refused, nothing freed");
        assert_eq!(p.bitmap(), 0b11_1000);
        assert_eq!(p.alloc(4096 * 2), Some((0, 2)), "first fit reuses the freed run");
        assert_eq!(p.alloc(0), None);
        let mut full = SlicePool::new(64, 1);
        assert_eq!(full.alloc(64), Some((0, 64)));
        assert_eq!(full.bitmap(), u64::MAX);
        assert!(full.release(0, 64));
    }

    #[test]
    fn messages_round_trip_and_bad_ones_are_refused() {
        let msgs = [
            Msg::ReqAlloc { bytes: 12345, chunk: 512 },
            Msg::RespAlloc { ok: true, first: 3, count: 2, addr: 0xdead_beef_0000, rkey: 0x301, len: 8192 },
            Msg::ReqFree { first: 3, count: 2 },
            Msg::RespFree { ok: true, verified: 8192, bad: 1 },
        ];
        for m in msgs {
            assert_eq!(Msg::decode(&m.encode()), Ok(m));
        }
        assert!(Msg::decode(&[0u8; 31]).is_err());
        assert!(Msg::decode(&[9u8; 32]).is_err());
        assert_eq!(doorbell_fields(doorbell_imm(7, 8)), (7, 8));
    }
}
