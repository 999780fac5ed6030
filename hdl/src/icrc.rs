//! RoCEv2 ICRC: the invariant-field masks shared by the TX inserter and the RX checker, and the
//! TX inserter itself.
//!
//! The ICRC covers (Annex A17.3.3) 8 bytes of 0xFF standing for the InfiniBand LRH, then the IP
//! header with TOS, TTL and header checksum as all ones, the UDP header with its checksum as all
//! ones, the BTH with byte 4 (FECN/BECN/reserved) as all ones, and every later byte up to the
//! ICRC. In a frame's first beat the Ethernet header occupies bytes 0..14: bytes 6..14 stand in
//! for the 8 pseudo-LRH bytes (set to 0xFF), and bytes 0..6 are zeroed and skipped by starting
//! the CRC from [`crate::crc::blocks::init_skipping`]`(6)`.
use crate::crc::blocks::{init_skipping, Crc32D512, Crc32UnzeroTable};
use rust_hdl::prelude::*;

/// Frame byte offsets the ICRC sees as 0xFF (pseudo-LRH, IP TOS/TTL/checksum, UDP checksum,
/// BTH byte 4).
pub const ONES_BYTES: [usize; 16] = [6, 7, 8, 9, 10, 11, 12, 13, 15, 22, 24, 25, 40, 41, 46, 46];
/// Leading frame bytes that do not count (destination MAC).
pub const SKIPPED_BYTES: usize = 6;

/// The first-beat AND mask (zeroes the skipped bytes).
pub fn first_beat_and() -> Bits<512> {
    let mut m = Bits::<512>::default();
    for b in SKIPPED_BYTES..64 {
        m = m | (bit_cast::<512, 8>(0xFF_u64.to_bits()) << (8 * b as u64));
    }
    m
}

/// The first-beat OR mask (forces the invariant-masked bytes to 0xFF).
pub fn first_beat_or() -> Bits<512> {
    let mut m = Bits::<512>::default();
    for b in ONES_BYTES {
        m = m | (bit_cast::<512, 8>(0xFF_u64.to_bits()) << (8 * b as u64));
    }
    m
}

/// Cycles from a beat's acceptance (`in_valid & in_ready`) to the same beat on the output
/// register (`out_valid`), when `out_ready` does not hold it back.
pub const LATENCY: usize = 4;

/// Appends the ICRC to each frame of an internal stream (data, byte count, last).
///
/// Input frames are Ethernet/IPv4/UDP/BTH/... without ICRC, byte `k` of a beat in bits
/// `8k+7..8k`, `in_count` valid bytes (1..=64, all beats but the last full). The output is the
/// same frame with 4 more bytes: the ICRC, least-significant byte first.
///
/// Pipeline, [`LATENCY`] = 4 cycles from acceptance to the output register:
/// 1. the beat with the bytes past `in_count` zeroed, its count, and the last beat's padding
///    (`64 - in_count`) mod 64;
/// 2. the CRC register after the beat (64-byte step from `init_skipping(6)` on a frame's first
///    beat, with the invariant-field masks);
/// 3. the ICRC: the complement of the register after the frame's last beat, its padding undone
///    ([`Crc32UnzeroTable`]);
/// 4. the output register: the beat, with the ICRC placed after the last beat's bytes.
///
/// Flow control: the whole pipeline moves when the output register can take a beat
/// (`in_ready = !(spill pending) & (!out_valid | out_ready)`), so with `out_ready` high it takes
/// one beat per cycle, plus one cycle for a frame whose last beat has more than 60 bytes (the
/// ICRC spills into an extra output beat). Beats are never dropped or reordered. Depth: at most
/// 6 LUT6 levels from an input or register to a register.
#[derive(LogicBlock)]
pub struct IcrcInsert {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub in_valid: Signal<In, Bit>,
    pub in_ready: Signal<Out, Bit>,
    pub in_data: Signal<In, Bits<512>>,
    pub in_count: Signal<In, Bits<7>>,
    pub in_last: Signal<In, Bit>,
    pub out_valid: Signal<Out, Bit>,
    pub out_ready: Signal<In, Bit>,
    pub out_data: Signal<Out, Bits<512>>,
    pub out_count: Signal<Out, Bits<7>>,
    pub out_last: Signal<Out, Bit>,
    crc: Crc32D512,
    unzero: Crc32UnzeroTable,
    in_frame: DFF<Bit>,
    // Stage 1: masked beat.
    v1: DFF<Bit>,
    d1: DFF<Bits<512>>,
    c1: DFF<Bits<7>>,
    l1: DFF<Bit>,
    f1: DFF<Bit>,
    z1: DFF<Bits<6>>,
    // Stage 2: CRC register after the beat.
    state: DFF<Bits<32>>,
    v2: DFF<Bit>,
    d2: DFF<Bits<512>>,
    c2: DFF<Bits<7>>,
    l2: DFF<Bit>,
    z2: DFF<Bits<6>>,
    // Stage 3: the ICRC of a last beat.
    v3: DFF<Bit>,
    d3: DFF<Bits<512>>,
    c3: DFF<Bits<7>>,
    l3: DFF<Bit>,
    icrc3: DFF<Bits<32>>,
    // Output register and the spilled ICRC bytes.
    ov: DFF<Bit>,
    od: DFF<Bits<512>>,
    oc: DFF<Bits<7>>,
    ol: DFF<Bit>,
    xv: DFF<Bit>,
    xd: DFF<Bits<32>>,
    xc: DFF<Bits<7>>,
    adv: Signal<Local, Bit>,
    accept: Signal<Local, Bit>,
    tail_zeros: Signal<Local, Bits<7>>,
    c_and: Constant<Bits<512>>,
    c_or: Constant<Bits<512>>,
    c_init: Constant<Bits<32>>,
    c_ones512: Constant<Bits<512>>,
}

impl Default for IcrcInsert {
    fn default() -> Self {
        let mut ones512 = Bits::<512>::default();
        for w in 0..8 {
            ones512 = ones512 | (bit_cast::<512, 64>(u64::MAX.to_bits()) << (64 * w as u64));
        }
        Self {
            clock: Default::default(),
            reset: Default::default(),
            in_valid: Default::default(),
            in_ready: Default::default(),
            in_data: Default::default(),
            in_count: Default::default(),
            in_last: Default::default(),
            out_valid: Default::default(),
            out_ready: Default::default(),
            out_data: Default::default(),
            out_count: Default::default(),
            out_last: Default::default(),
            crc: Default::default(),
            unzero: Default::default(),
            in_frame: Default::default(),
            v1: Default::default(),
            d1: Default::default(),
            c1: Default::default(),
            l1: Default::default(),
            f1: Default::default(),
            z1: Default::default(),
            state: Default::default(),
            v2: Default::default(),
            d2: Default::default(),
            c2: Default::default(),
            l2: Default::default(),
            z2: Default::default(),
            v3: Default::default(),
            d3: Default::default(),
            c3: Default::default(),
            l3: Default::default(),
            icrc3: Default::default(),
            ov: Default::default(),
            od: Default::default(),
            oc: Default::default(),
            ol: Default::default(),
            xv: Default::default(),
            xd: Default::default(),
            xc: Default::default(),
            adv: Default::default(),
            accept: Default::default(),
            tail_zeros: Default::default(),
            c_and: Constant::new(first_beat_and()),
            c_or: Constant::new(first_beat_or()),
            c_init: Constant::new((init_skipping(SKIPPED_BYTES) as u64).to_bits()),
            c_ones512: Constant::new(ones512),
        }
    }
}

impl Logic for IcrcInsert {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, in_frame, v1, d1, c1, l1, f1, z1, state, v2, d2, c2, l2, z2, v3, d3, c3, l3, icrc3, ov, od,
            oc, ol, xv, xd, xc
        );
        // The pipeline moves when the output register can take a beat.
        self.adv.next = !self.xv.q.val() & (!self.ov.q.val() | self.out_ready.val());
        self.in_ready.next = self.adv.val();
        self.accept.next = self.in_valid.val() & self.adv.val();
        self.out_valid.next = self.ov.q.val();
        self.out_data.next = self.od.q.val();
        self.out_count.next = self.oc.q.val();
        self.out_last.next = self.ol.q.val();

        // Stage 2 logic: the CRC step of the stage-1 beat.
        self.crc.state_in.next = self.state.q.val();
        self.crc.data.next = self.d1.q.val();
        if self.f1.q.val() {
            self.crc.state_in.next = self.c_init.val();
            self.crc.data.next = (self.d1.q.val() & self.c_and.val()) | self.c_or.val();
        }
        // Stage 3 logic: undo the last beat's zero padding.
        self.unzero.state_in.next = self.state.q.val();
        self.unzero.zeros.next = self.z2.q.val();
        self.tail_zeros.next = 64_u64 - self.c3.q.val();

        if self.ov.q.val() & self.out_ready.val() {
            self.ov.d.next = false;
            if self.xv.q.val() {
                // The ICRC bytes that did not fit in the frame's last beat.
                self.ov.d.next = true;
                self.od.d.next = bit_cast::<512, 32>(self.xd.q.val());
                self.oc.d.next = self.xc.q.val();
                self.ol.d.next = true;
                self.xv.d.next = false;
            }
        }
        if self.adv.val() {
            // Stage 1 <- input.
            self.v1.d.next = self.accept.val();
            self.d1.d.next =
                self.in_data.val() & !(self.c_ones512.val() << (bit_cast::<512, 7>(self.in_count.val()) << 3));
            self.c1.d.next = self.in_count.val();
            self.l1.d.next = self.in_last.val();
            self.f1.d.next = !self.in_frame.q.val();
            self.z1.d.next = bit_cast::<6, 7>(64_u64 - self.in_count.val());
            if self.accept.val() {
                self.in_frame.d.next = !self.in_last.val();
            }
            // Stage 2 <- stage 1.
            self.v2.d.next = self.v1.q.val();
            self.d2.d.next = self.d1.q.val();
            self.c2.d.next = self.c1.q.val();
            self.l2.d.next = self.l1.q.val();
            self.z2.d.next = self.z1.q.val();
            if self.v1.q.val() {
                self.state.d.next = self.crc.state_out.val();
            }
            // Stage 3 <- stage 2.
            self.v3.d.next = self.v2.q.val();
            self.d3.d.next = self.d2.q.val();
            self.c3.d.next = self.c2.q.val();
            self.l3.d.next = self.l2.q.val();
            self.icrc3.d.next = !self.unzero.state_out.val();
            // Output <- stage 3.
            if self.v3.q.val() {
                self.ov.d.next = true;
                self.od.d.next = self.d3.q.val();
                self.oc.d.next = self.c3.q.val();
                self.ol.d.next = false;
                if self.l3.q.val() {
                    self.od.d.next = self.d3.q.val()
                        | (bit_cast::<512, 32>(self.icrc3.q.val()) << (bit_cast::<512, 7>(self.c3.q.val()) << 3));
                    if self.c3.q.val() > 60 {
                        self.oc.d.next = 64.into();
                        self.xv.d.next = true;
                        self.xd.d.next = self.icrc3.q.val() >> (bit_cast::<32, 7>(self.tail_zeros.val()) << 3);
                        self.xc.d.next = self.c3.q.val() - 60;
                    } else {
                        self.oc.d.next = self.c3.q.val() + 4;
                        self.ol.d.next = true;
                    }
                }
            }
        }
        if self.reset.val() {
            self.ov.d.next = false;
            self.xv.d.next = false;
            self.v1.d.next = false;
            self.v2.d.next = false;
            self.v3.d.next = false;
            self.in_frame.d.next = false;
        }
    }
}
