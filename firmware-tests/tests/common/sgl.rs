//! Scatter/gather layouts in a registered buffer, shared by the tests of lists the NIC
//! scatters into (receive WRs in `e2e_scatter.rs`, RDMA READs in `e2e_read_sges.rs`): where the
//! entries lie, the buffer a correct NIC leaves behind, and a comparison that names the entry
//! of the first wrong byte.
use rnic::{MemoryRegion, Sge};

/// The initial content of a buffer scattered into; `common::pattern` bytes are odd, so never
/// equal to it, and a byte outside every entry that is not this was written by mistake.
pub const GUARD: u8 = 0xEE;

/// Scatter entries as (offset in the buffer, length).
pub type Layout = Vec<(usize, usize)>;

/// The SGEs of `layout` in `mr`; zero-length entries get a junk address and lkey (the NIC must
/// skip them, not check them).
pub fn sges<'a>(mr: &'a MemoryRegion<'_>, layout: &Layout) -> Vec<Sge<'a>> {
    layout
        .iter()
        .map(|&(off, len)| {
            if len == 0 {
                Sge::raw(0xDEAD_0000 + off as u64, 0, 0x00FF_FF77)
            } else {
                mr.sge(off..off + len).unwrap()
            }
        })
        .collect()
}

/// A layout with entries of the given lengths, each after a gap of 1..=70 bytes from the
/// previous one, starting at an odd offset (varied by `seed`): entries are never adjacent and
/// start at every alignment.
pub fn spread(lens: &[usize], seed: usize) -> Layout {
    let mut off = 1 + seed % 13;
    lens.iter()
        .enumerate()
        .map(|(i, &len)| {
            let e = (off, len);
            off += len + 1 + (i * 37 + seed) % 70;
            e
        })
        .collect()
}

/// Bytes a buffer needs for `layout`, plus `slack` after its last entry.
pub fn buffer_len(layout: &Layout, slack: usize) -> usize {
    layout.iter().map(|&(o, l)| o + l).max().unwrap_or(0) + slack
}

/// The buffer as it must look after `msg` was scattered into `layout`: the message bytes in
/// the entries in order (the last ones possibly not full), everything else [`GUARD`].
pub fn expected(buf_len: usize, layout: &Layout, msg: &[u8]) -> Vec<u8> {
    let mut want = vec![GUARD; buf_len];
    let mut at = 0;
    for &(off, len) in layout {
        let n = len.min(msg.len() - at);
        want[off..off + n].copy_from_slice(&msg[at..at + n]);
        at += n;
    }
    assert_eq!(at, msg.len(), "the layout holds the message");
    want
}

/// Compares the whole buffer with what it must hold, naming the first wrong byte's entry (or
/// saying it lies outside every entry).
pub fn check_buffer(what: &str, got: &[u8], want: &[u8], layout: &Layout) {
    assert_eq!(got.len(), want.len(), "{what}: buffer length");
    if let Some(i) = got.iter().zip(want).position(|(a, b)| a != b) {
        let place = match layout.iter().position(|&(o, l)| o <= i && i < o + l) {
            Some(k) => format!("entry {k} (at +{}, byte {} of {})", layout[k].0, i - layout[k].0, layout[k].1),
            None => "outside every entry".to_string(),
        };
        panic!("{what}: buffer byte {i} ({place}) is {:#04x}, expected {:#04x}", got[i], want[i]);
    }
}
