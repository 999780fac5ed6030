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

/// Appends the ICRC to each frame of an internal stream (data, byte count, last).
///
/// Input frames are Ethernet/IPv4/UDP/BTH/... without ICRC, byte `k` of a beat in bits
/// `8k+7..8k`, `in_count` valid bytes (1..=64, all beats but the last full). The output is the
/// same frame with 4 more bytes: the ICRC, least-significant byte first.
///
/// Timing: latency 1 cycle (registered output); initiation interval one beat per cycle, plus one
/// cycle for a frame whose last beat has more than 60 bytes (the ICRC spills into an extra
/// beat). Logic depth: the last beat passes masking, the 512-bit CRC (4 LUT levels) and the
/// zero-undo table (4 levels) before the output register: about 10 levels, the deepest path of
/// the TX side (to be split for 250 MHz closure).
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
    state: DFF<Bits<32>>,
    in_frame: DFF<Bit>,
    ov: DFF<Bit>,
    od: DFF<Bits<512>>,
    oc: DFF<Bits<7>>,
    ol: DFF<Bit>,
    xv: DFF<Bit>,
    xd: DFF<Bits<32>>,
    xc: DFF<Bits<7>>,
    masked: Signal<Local, Bits<512>>,
    tail_zeros: Signal<Local, Bits<8>>,
    icrc_value: Signal<Local, Bits<32>>,
    accept: Signal<Local, Bit>,
    c_and: Constant<Bits<512>>,
    c_or: Constant<Bits<512>>,
    c_init: Constant<Bits<32>>,
}

impl Default for IcrcInsert {
    fn default() -> Self {
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
            state: Default::default(),
            in_frame: Default::default(),
            ov: Default::default(),
            od: Default::default(),
            oc: Default::default(),
            ol: Default::default(),
            xv: Default::default(),
            xd: Default::default(),
            xc: Default::default(),
            masked: Default::default(),
            tail_zeros: Default::default(),
            icrc_value: Default::default(),
            accept: Default::default(),
            c_and: Constant::new(first_beat_and()),
            c_or: Constant::new(first_beat_or()),
            c_init: Constant::new((init_skipping(SKIPPED_BYTES) as u64).to_bits()),
        }
    }
}

impl Logic for IcrcInsert {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, state, in_frame, ov, od, oc, ol, xv, xd, xc);
        self.masked.next = self.in_data.val()
            & ((bit_cast::<512, 1>(1.into()) << (bit_cast::<512, 7>(self.in_count.val()) << 3))
                - 1);
        self.crc.state_in.next = self.state.q.val();
        self.crc.data.next = self.masked.val();
        if !self.in_frame.q.val() {
            self.crc.state_in.next = self.c_init.val();
            self.crc.data.next = (self.masked.val() & self.c_and.val()) | self.c_or.val();
        }
        self.unzero.state_in.next = self.crc.state_out.val();
        self.tail_zeros.next = 64_u64 - bit_cast::<8, 7>(self.in_count.val());
        self.unzero.zeros.next = self.tail_zeros.val().get_bits::<6>(0);
        self.icrc_value.next = !self.unzero.state_out.val();

        self.out_valid.next = self.ov.q.val();
        self.out_data.next = self.od.q.val();
        self.out_count.next = self.oc.q.val();
        self.out_last.next = self.ol.q.val();
        self.in_ready.next = !self.xv.q.val() & (!self.ov.q.val() | self.out_ready.val());
        self.accept.next = self.in_valid.val() & self.in_ready.val();
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
        if self.accept.val() {
            self.ov.d.next = true;
            self.od.d.next = self.in_data.val();
            self.oc.d.next = self.in_count.val();
            self.ol.d.next = false;
            self.in_frame.d.next = true;
            self.state.d.next = self.crc.state_out.val();
            if self.in_last.val() {
                self.in_frame.d.next = false;
                self.od.d.next = self.masked.val()
                    | (bit_cast::<512, 32>(self.icrc_value.val())
                        << (bit_cast::<512, 7>(self.in_count.val()) << 3));
                if self.in_count.val() > 60 {
                    self.oc.d.next = 64.into();
                    self.xv.d.next = true;
                    self.xd.d.next = self.icrc_value.val()
                        >> (bit_cast::<32, 8>(self.tail_zeros.val()) << 3);
                    self.xc.d.next = self.in_count.val() - 60;
                } else {
                    self.oc.d.next = self.in_count.val() + 4;
                    self.ol.d.next = true;
                }
            }
        }
        if self.reset.val() {
            self.ov.d.next = false;
            self.xv.d.next = false;
            self.in_frame.d.next = false;
        }
    }
}
