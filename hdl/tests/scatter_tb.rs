//! `Scatter` (a packet's payload walked over a list of translated entries, one write job per
//! piece) in Verilator against a model.
//!
//! The testbench plays the RX engine: it holds the list in a block-RAM model (the entry at
//! the index shows one cycle after the index does), steps the index on `advance`, and carries
//! the cursor from one packet to the next, either as the entry's address and bytes left (the
//! receive scatter, a READ response after the READ's first) or as the list entry plus the bytes
//! used of it (`load_entry`: a READ's first response).
//!
//! - `packets_fill_the_list_in_order`: thousands of packets of random lengths (1 byte to the
//!   whole list) over random lists of 1 to 15 entries, with the write-job FIFO full at random:
//!   the pieces are exactly the model's (address, packet offset, length), each written once,
//!   only the last frees the packet's beats and carries its ACK request, `done` comes once with
//!   it, and the cursor after each packet is the model's.
//! - `a_packet_ending_at_an_entry_end_leaves_the_entry_for_the_next`: the next packet steps
//!   over the used-up entry without writing a job.
//! - `the_timing_is_the_engine_loops_own`: first piece 1 cycle after `start` (2 with
//!   `load_entry`), then 2 cycles per piece and 2 more per entry change.
mod harness;

use harness::{Dut, Rng};
use rnic_hdl::scatter::Scatter;

/// One list entry: IOVA and length in bytes.
#[derive(Clone, Copy, Debug)]
struct Entry {
    iova: u64,
    len: u32,
}

/// The cursor between packets: the entry index, bytes used of it.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Cursor {
    k: usize,
    used: u32,
}

/// A piece as the block shows it: host address, byte offset into the packet, length, beats to
/// free, ACK request.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Piece {
    addr: u64,
    off: u64,
    len: u64,
    release: u64,
    ack: bool,
}

/// The pieces a packet of `plen` bytes after `hlen` header bytes becomes, and the cursor after
/// it: each piece is `min(entry left, payload left)` bytes; an entry the payload runs past is
/// left at once, one it ends at is left by the next packet.
fn model(list: &[Entry], mut c: Cursor, hlen: u64, plen: u32, nbeats: u64, ack: bool) -> (Vec<Piece>, Cursor) {
    let mut pieces = Vec::new();
    let mut left = plen;
    let mut off = hlen;
    while left > 0 {
        let e = list[c.k];
        let room = e.len - c.used;
        if room == 0 {
            c = Cursor { k: c.k + 1, used: 0 };
            continue;
        }
        let take = room.min(left);
        let last = take == left;
        pieces.push(Piece {
            addr: e.iova + c.used as u64,
            off,
            len: take as u64,
            release: if last { nbeats } else { 0 },
            ack: last && ack,
        });
        off += take as u64;
        left -= take;
        c.used += take;
        if !last {
            c = Cursor { k: c.k + 1, used: 0 };
        }
    }
    (pieces, c)
}

struct Tb {
    dut: Dut,
    list: Vec<Entry>,
    /// The engine's index and the block-RAM's read data (the entry at last cycle's index).
    k: usize,
    rd: Entry,
}

/// One cycle's outputs, read before the edge.
struct Out {
    write: bool,
    advance: bool,
    done: bool,
    piece: Piece,
    /// `next_addr`, `next_rem`, `next_used`.
    next: (u64, u64, u64),
}

/// What one packet's walk produced.
struct Walk {
    pieces: Vec<Piece>,
    /// Cycles from `start` to each piece's `job_write` (start's cycle is 0).
    at: Vec<u64>,
    /// The cursor outputs in the cycle of `done`.
    next: (u64, u64, u64),
}

impl Tb {
    fn new() -> Tb {
        let mut dut = Dut::build::<Scatter>("scatter").expect("build Scatter");
        dut.reset(2);
        Tb { dut, list: Vec::new(), k: 0, rd: Entry { iova: 0, len: 0 } }
    }

    /// A new list; the engine's index at its entry 0, which the RAM model already shows.
    fn load_list(&mut self, list: Vec<Entry>) {
        self.list = list;
        self.k = 0;
        self.rd = self.list[0];
    }

    /// One cycle: inputs set, outputs read before the edge, then the edge (the RAM model
    /// reads at this cycle's index; `advance` steps the index).
    fn cycle(&mut self, room: bool) -> Out {
        let d = &mut self.dut;
        let mut word = self.rd.iova.to_le_bytes().to_vec();
        word.extend_from_slice(&self.rd.len.to_le_bytes());
        d.set_wide("entry", &word);
        d.set_bit("job_room", room);
        d.eval();
        let out = Out {
            write: d.get_bit("job_write"),
            advance: d.get_bit("advance"),
            done: d.get_bit("done"),
            piece: Piece {
                addr: d.get("p_addr"),
                off: d.get("p_off"),
                len: d.get("p_plen"),
                release: d.get("p_release"),
                ack: d.get_bit("p_ack"),
            },
            next: (d.get("next_addr"), d.get("next_rem"), d.get("next_used")),
        };
        assert!(!out.write || room, "a job written with the FIFO full");
        d.tick();
        d.set_bit("start", false);
        self.rd = self.list.get(self.k).copied().unwrap_or(Entry { iova: 0xDEAD_0000, len: 0 });
        if out.advance {
            self.k += 1;
        }
        out
    }

    /// Walks one packet from cursor `c`, given as address and room (or, with `load`, as the
    /// entry at the index plus the bytes used of it), with the write-job FIFO full at random
    /// (one cycle in `full_in`; never with 0).
    #[allow(clippy::too_many_arguments)]
    fn walk(
        &mut self,
        c: Cursor,
        load: bool,
        hlen: u64,
        plen: u32,
        nbeats: u64,
        ack: bool,
        full_in: u64,
        rng: &mut Rng,
    ) -> Walk {
        assert_eq!(self.k, c.k, "the engine's index is the cursor's");
        let e = self.list[c.k];
        let d = &mut self.dut;
        d.set_bit("start", true);
        d.set_bit("load_entry", load);
        // The inputs the other form does not use hold junk.
        d.set("addr_in", if load { 0x5555 } else { e.iova + c.used as u64 });
        d.set("rem_in", if load { 7 } else { (e.len - c.used) as u64 });
        d.set("used_in", if load { c.used as u64 } else { 0x77 });
        d.set("plen", plen as u64);
        d.set("hlen", hlen);
        d.set("nbeats", nbeats);
        d.set_bit("ack", ack);
        let mut w = Walk { pieces: Vec::new(), at: Vec::new(), next: (0, 0, 0) };
        for t in 0..2_000u64 {
            let room = full_in == 0 || !rng.chance(1, full_in);
            let out = self.cycle(room);
            if out.write {
                w.pieces.push(out.piece);
                w.at.push(t);
            }
            if out.done {
                assert!(out.write, "done without the last piece's write");
                w.next = out.next;
                return w;
            }
        }
        panic!("packet of {plen} bytes from {c:?} never finished");
    }
}

fn random_list(rng: &mut Rng) -> Vec<Entry> {
    let n = rng.range(1, 15) as usize;
    (0..n)
        .map(|i| Entry { iova: 0x1_0000_0000 * (i as u64 + 1) + rng.range(0, 0xFFFF), len: rng.range(1, 600) as u32 })
        .collect()
}

#[test]
fn packets_fill_the_list_in_order() {
    let mut tb = Tb::new();
    let mut rng = Rng::from_env(0x5CA7_0001);
    let (mut packets, mut pieces_seen, mut loads, mut splits) = (0u32, 0usize, 0u32, 0u32);
    for _list in 0..150 {
        tb.load_list(random_list(&mut rng));
        let total: u32 = tb.list.iter().map(|e| e.len).sum();
        let mut c = Cursor { k: 0, used: 0 };
        let mut filled = 0u32;
        while filled < total {
            let plen = (rng.range(1, 700) as u32).min(total - filled).min(8191);
            let hlen = rng.range(12, 80);
            let nbeats = rng.range(1, 140);
            let ack = rng.chance(1, 2);
            let load = rng.chance(1, 3);
            let full_in = [0, 2, 5][rng.range(0, 2) as usize];
            let (want, after) = model(&tb.list, c, hlen, plen, nbeats, ack);
            let w = tb.walk(c, load, hlen, plen, nbeats, ack, full_in, &mut rng);
            let next = w.next;
            assert_eq!(w.pieces, want, "packet {packets}: {plen} bytes from {c:?} over {:?}", tb.list);
            // The cursor after the packet: its entry is the engine's index.
            assert_eq!(tb.k, after.k, "packet {packets}: entry after");
            let e = tb.list[after.k];
            assert_eq!(next.0, e.iova + after.used as u64, "packet {packets}: next_addr");
            assert_eq!(next.1, (e.len - after.used) as u64, "packet {packets}: next_rem");
            if load {
                assert_eq!(next.2, after.used as u64, "packet {packets}: next_used");
                loads += 1;
            }
            splits += (want.len() > 1) as u32;
            pieces_seen += want.len();
            filled += plen;
            c = after;
            packets += 1;
            // A quiet cycle or two between packets, as the engine's other states take.
            for _ in 0..rng.range(0, 2) {
                let out = tb.cycle(true);
                assert!(!out.write && !out.advance && !out.done, "the block moved while idle");
            }
        }
    }
    assert!(packets > 1_000 && splits > 300 && loads > 300, "{packets} packets, {splits} split, {loads} loaded");
    assert!(pieces_seen > packets as usize);
}

#[test]
fn a_packet_ending_at_an_entry_end_leaves_the_entry_for_the_next() {
    let mut tb = Tb::new();
    let mut rng = Rng::from_env(0x5CA7_0002);
    tb.load_list(vec![Entry { iova: 0x1000, len: 100 }, Entry { iova: 0x9000, len: 50 }]);
    let w = tb.walk(Cursor { k: 0, used: 0 }, false, 40, 100, 3, true, 0, &mut rng);
    assert_eq!(w.pieces, vec![Piece { addr: 0x1000, off: 40, len: 100, release: 3, ack: true }]);
    assert_eq!(tb.k, 0, "the used-up entry is still current");
    assert_eq!(w.next.1, 0, "no room left in it");
    let w = tb.walk(Cursor { k: 0, used: 100 }, false, 40, 30, 2, false, 0, &mut rng);
    assert_eq!(w.pieces, vec![Piece { addr: 0x9000, off: 40, len: 30, release: 2, ack: false }]);
    assert_eq!(tb.k, 1);
}

#[test]
fn the_timing_is_the_engine_loops_own() {
    let mut tb = Tb::new();
    let mut rng = Rng::from_env(0x5CA7_0003);
    tb.load_list(vec![
        Entry { iova: 0x1000, len: 64 },
        Entry { iova: 0x2000, len: 64 },
        Entry { iova: 0x3000, len: 64 },
    ]);
    // 150 bytes over three entries of 64: pieces at start + 1, then + 4 each (job, list read,
    // entry taken, split).
    let w = tb.walk(Cursor { k: 0, used: 0 }, false, 20, 150, 4, false, 0, &mut rng);
    assert_eq!(w.at, vec![1, 5, 9]);
    assert_eq!(w.pieces.iter().map(|p| p.len).collect::<Vec<_>>(), vec![64, 64, 22]);
    assert_eq!(w.next.0, 0x3000 + 22);
    // With `load_entry` the cursor is taken from the list entry first: one cycle more.
    tb.load_list(vec![Entry { iova: 0x8000, len: 1000 }]);
    let w = tb.walk(Cursor { k: 0, used: 300 }, true, 20, 100, 4, false, 0, &mut rng);
    assert_eq!(w.at, vec![2]);
    assert_eq!(w.pieces, vec![Piece { addr: 0x8000 + 300, off: 20, len: 100, release: 4, ack: false }]);
}
