//! RX ingress: parse, ICRC check and store-and-forward packet buffer.
use crate::bswap::Bswap64;
use crate::crc::blocks::{init_skipping, Crc32D512, Crc32ResidueZeros};
use crate::icrc::{first_beat_and, first_beat_or, SKIPPED_BYTES};
use crate::numbers::Numbers;
use crate::records::{RoceHeader, RxDesc};
use rust_hdl::prelude::*;

// The opcode table in `update` matches literals (a `match` arm must be one) and gives each its
// extension headers' length (RETH 16, ImmDt 4, AETH 4, AtomicETH 28, AtomicAckETH 8, DETH 8
// bytes): both must be the contract's (IBTA Vol 1 9.2, Table 37; 9.3).
const _: () = {
    use rnic_contract::bth::len;
    assert!(crate::numbers::BTH_OPCODE_LITERALS);
    assert!(len::RETH == 16 && len::IMMDT == 4 && len::AETH == 4 && len::DETH == 8);
};

/// log2 of the packet buffer size in 64-byte beats (1024 beats = 64 KiB, fifteen 4 KiB-MTU
/// packets).
pub const LOG_BUFFER_BEATS: usize = 10;

/// Largest frame accepted, in bytes: 4096-byte MTU payload plus every header (80 beats).
pub const MAX_FRAME_BYTES: u64 = 64 * 80;

/// Cycles from a frame's `tlast` beat at the input to its verdict (the descriptor write or a
/// `cnt_*` pulse), and from any beat at the input to its packet-buffer write.
pub const LATENCY: usize = 3;

/// The ICRC residue: the raw CRC register after a message followed by its own ICRC
/// (least-significant byte first). A received frame is intact iff its covered bytes and ICRC
/// leave this value.
pub fn icrc_residue() -> u32 {
    crate::crc::reference::residue()
}

/// Receives frames from the MAC (no back-pressure), one beat per cycle.
///
/// From the first beat it parses and checks Ethernet (EtherType 0x0800), IPv4 (version 4, no
/// options, not a fragment, header checksum, Total Length at most [`MAX_FRAME_BYTES`] − 14),
/// UDP (destination port 4791, length consistent with IPv4 Total Length) and BTH (TVer 0, a
/// supported opcode: every RC SEND and RDMA WRITE opcode with or without immediate, RDMA READ
/// REQUEST, READ RESPONSE FIRST/MIDDLE/LAST/ONLY, ACKNOWLEDGE, ATOMIC ACKNOWLEDGE, COMPARE
/// SWAP or FETCH ADD, UD SEND ONLY with or without immediate; payload length = Total Length − headers − pad − ICRC ≥ 0); the RETH is
/// taken from bytes 54..70 (second beat), the AETH from bytes 54..58, the ImmDt from bytes
/// 54..58 or, after a RETH, 70..74, or after a DETH (bytes 54..62), 62..66, the AtomicETH from bytes 54..82, the AtomicAckETH from
/// bytes 58..66 (IBTA Vol 1 9.3.4, 9.3.5). Every beat of the frame is written into the packet buffer (at the
/// frame's place, only into free space) while the ICRC is computed; the frame's last beat gives
/// the verdict. Only a frame that passes every check (and the MAC's FCS, `tuser` = 0) becomes
/// a [`RxDesc`] and keeps its buffer space (the next frame is written over anything else); a
/// bad frame is dropped and counted by reason (`cnt_*` pulses: malformed, ICRC, overflow), so a
/// bad packet never reaches the RX engine, let alone host memory. Ethernet padding after Total
/// Length is ignored.
///
/// ICRC check: the CRC register runs over the frame's covered bytes and the received ICRC (the
/// bytes past Total Length zeroed in the last beat); the frame is intact iff the register after
/// the zero-padded last beat equals [`Crc32ResidueZeros`]`(zeros)`, the residue followed by the
/// padding's zero bytes, a constant looked up ahead — the same test as un-zeroing the register
/// and comparing with the residue, without the un-zero matrix on the path.
///
/// Pipeline (one beat per cycle, no stall), [`LATENCY`] = 3 cycles:
/// 1. input register: the beat with bytes past Total Length zeroed (byte masks from the IPv4
///    Total Length of a first beat or from the bytes still expected), the last byte's `tkeep`,
///    the padding of the beat that ends the frame, and the first beat's parse in two halves
///    (field compares, header length, two partial sums of the IPv4 header);
/// 2. the CRC register (64-byte step), the residue table for the beat's padding, the end of
///    the parse (checksum, lengths, beat count);
/// 3. the ICRC compare and the frame's verdict flags;
///
/// then the packet-buffer write and, on the frame's last beat, the descriptor write or the
/// drop counter pulse (with the descriptor FIFO's `desc_full` and the buffer space). Depth: at
/// most 6 LUT6 levels from a register or input to a register.
///
/// Buffer: 2^[`LOG_BUFFER_BEATS`] beats of 512 bits in block RAM, freed by the RX engine's
/// read pointer `rd_ptr`. A frame is accepted only if all its beats fit at its first beat
/// (`wr_ptr - rd_ptr + nbeats <= 1024`); a beat is written only into a free slot.
#[derive(LogicBlock)]
pub struct RxIngress {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub tdata: Signal<In, Bits<512>>,
    pub tkeep: Signal<In, Bits<64>>,
    pub tlast: Signal<In, Bit>,
    pub tvalid: Signal<In, Bit>,
    pub tuser: Signal<In, Bit>,
    /// Packet buffer read port (synchronous: data one cycle after the address).
    pub buf_raddr: Signal<In, Bits<10>>,
    pub buf_rdata: Signal<Out, Bits<512>>,
    /// The RX engine's release pointer (beats, modulo 512).
    pub rd_ptr: Signal<In, Bits<11>>,
    pub desc_full: Signal<In, Bit>,
    pub desc_write: Signal<Out, Bit>,
    /// A packet's checks passed last cycle (a register): `desc_write` may rise this cycle.
    /// Other writers of the descriptor FIFO write only while it is low.
    pub desc_try: Signal<Out, Bit>,
    pub desc: Signal<Out, RxDesc>,
    pub cnt_rx_frame: Signal<Out, Bit>,
    pub cnt_malformed: Signal<Out, Bit>,
    pub cnt_icrc: Signal<Out, Bit>,
    pub cnt_overflow: Signal<Out, Bit>,
    buffer: RAM<Bits<512>, 10>,
    crc: Crc32D512,
    target: Crc32ResidueZeros,
    // ---- Input side: frame tracking on the raw stream ----
    fi_in_frame: DFF<Bit>,
    /// Bytes of the frame after the beats seen so far (saturates at 0).
    fi_rem: DFF<Bits<16>>,
    // ---- Stage 1 registers (`a_`) ----
    a_valid: DFF<Bit>,
    a_last: DFF<Bit>,
    a_user: DFF<Bit>,
    a_first: DFF<Bit>,
    a_crc_end: DFF<Bit>,
    a_zeros: DFF<Bits<6>>,
    a_lk: DFF<Bits<64>>,
    a_data: DFF<Bits<512>>,
    a_ok1: DFF<Bit>,
    a_ok2: DFF<Bit>,
    a_ipl: DFF<Bits<16>>,
    a_ipl_hi: DFF<Bit>,
    a_iplm20: DFF<Bits<16>>,
    a_udpl: DFF<Bits<16>>,
    a_hdr: DFF<Bits<16>>,
    a_hlen: DFF<Bits<7>>,
    a_s0: DFF<Bits<20>>,
    a_s1: DFF<Bits<20>>,
    // ---- Stage 2 registers (`b_`) and the CRC register ----
    crc_state: DFF<Bits<32>>,
    b_valid: DFF<Bit>,
    b_last: DFF<Bit>,
    b_user: DFF<Bit>,
    b_first: DFF<Bit>,
    b_crc_end: DFF<Bit>,
    b_complete: DFF<Bit>,
    b_target: DFF<Bits<32>>,
    b_data: DFF<Bits<512>>,
    b_ok: DFF<Bit>,
    b_nb: DFF<Bits<8>>,
    b_plen: DFF<Bits<13>>,
    b_hlen: DFF<Bits<7>>,
    /// Frame verdicts so far, on the stage-2 stream.
    fb_ok: DFF<Bit>,
    fb_complete: DFF<Bit>,
    fb_crc: DFF<Bit>,
    // ---- Stage 3 registers (`c_`) ----
    c_valid: DFF<Bit>,
    c_last: DFF<Bit>,
    c_first: DFF<Bit>,
    c_data: DFF<Bits<512>>,
    c_nb: DFF<Bits<8>>,
    c_nbm1: DFF<Bits<11>>,
    c_plen: DFF<Bits<13>>,
    c_hlen: DFF<Bits<7>>,
    /// The frame ends with this beat: counted, and malformed / passes / fails the ICRC only.
    c_end: DFF<Bit>,
    c_malf: DFF<Bit>,
    c_pass: DFF<Bit>,
    c_badcrc: DFF<Bit>,
    // ---- Buffer and descriptor side ----
    wr_ptr: DFF<Bits<11>>,
    k: DFF<Bits<8>>,
    wa: DFF<Bits<11>>,
    fits_r: DFF<Bit>,
    nb_r: DFF<Bits<8>>,
    opcode_r: DFF<Bits<8>>,
    /// The frame is a UD SEND ONLY (`RxDesc::ud`), kept from its first beat.
    ud_r: DFF<Bit>,
    /// The first beat's BTH opcode is a UD SEND ONLY (0x64, 0x65).
    c_ud: Signal<Local, Bit>,
    hlen_r: DFF<Bits<7>>,
    ackreq_r: DFF<Bit>,
    /// BTH.SE of the frame being stored.
    se_r: DFF<Bit>,
    plen_r: DFF<Bits<13>>,
    dqpn_r: DFF<Bits<24>>,
    psn_r: DFF<Bits<24>>,
    ext_lo_r: DFF<Bits<80>>,
    ext_hi_r: DFF<Bits<144>>,
    // ---- Stage 1 logic (from the input) ----
    first0: Signal<Local, Bit>,
    h0: Signal<Local, RoceHeader>,
    ipl: Signal<Local, Bits<16>>,
    ipl6: Signal<Local, Bits<6>>,
    ipl_hi: Signal<Local, Bit>,
    rem6: Signal<Local, Bits<6>>,
    rem_hi: Signal<Local, Bit>,
    m64: Signal<Local, Bits<64>>,
    m512: Signal<Local, Bits<512>>,
    c_flags: Signal<Local, Bits<8>>,
    c_pad: Signal<Local, Bits<16>>,
    c_ext_len: Signal<Local, Bits<16>>,
    c_supported: Signal<Local, Bit>,
    // ---- Stage 2 logic ----
    csum_x: Signal<Local, Bits<20>>,
    csum_ok: Signal<Local, Bit>,
    a_ipl6: Signal<Local, Bits<7>>,
    a_hdr6: Signal<Local, Bits<7>>,
    hdr_ok: Signal<Local, Bit>,
    // ---- Stage 3 logic ----
    ok_cur: Signal<Local, Bit>,
    complete_cur: Signal<Local, Bit>,
    crc_cur: Signal<Local, Bit>,
    malformed: Signal<Local, Bit>,
    b_endv: Signal<Local, Bit>,
    // ---- Buffer and descriptor logic ----
    kk: Signal<Local, Bits<8>>,
    addr: Signal<Local, Bits<11>>,
    slot_used: Signal<Local, Bits<11>>,
    used: Signal<Local, Bits<11>>,
    fits_first: Signal<Local, Bits<11>>,
    fits_cur: Signal<Local, Bit>,
    nb_cur: Signal<Local, Bits<8>>,
    hc: Signal<Local, RoceHeader>,
    c_dqpn_w: Signal<Local, Bits<24>>,
    c_psn_w: Signal<Local, Bits<24>>,
    c_ackreq_w: Signal<Local, Bits<8>>,
    c_flags_w: Signal<Local, Bits<8>>,
    ext: Signal<Local, Bits<224>>,
    imm_hi: Signal<Local, Bit>,
    at_a: Signal<Local, Bits<64>>,
    at_b: Signal<Local, Bits<64>>,
    va_bswap: Bswap64,
    swap_bswap: Bswap64,
    cmp_bswap: Bswap64,
    c_init: Constant<Bits<32>>,
    c_and: Constant<Bits<512>>,
    c_or: Constant<Bits<512>>,
    c_ones64: Constant<Bits<64>>,
    c_ones512: Constant<Bits<512>>,
    /// Ones from byte 14 up: shifted left by Total Length mod 64 and inverted, the bytes below
    /// 14 + Total Length.
    c_hdr64: Constant<Bits<64>>,
    c_hdr512: Constant<Bits<512>>,
    c_fifty: Constant<Bits<6>>,
    /// Largest IPv4 Total Length accepted: [`MAX_FRAME_BYTES`] - 14.
    c_max_ipl: Constant<Bits<16>>,
    /// The contract's numbers ([`crate::numbers`]).
    nums: Numbers,
}

impl Default for RxIngress {
    fn default() -> Self {
        let ones64 = Bits::<64>::from(u64::MAX);
        let mut ones512 = Bits::<512>::default();
        for w in 0..8 {
            ones512 = ones512 | (bit_cast::<512, 64>(ones64) << (64 * w as u64));
        }
        Self {
            nums: Default::default(),
            clock: Default::default(),
            reset: Default::default(),
            tdata: Default::default(),
            tkeep: Default::default(),
            tlast: Default::default(),
            tvalid: Default::default(),
            tuser: Default::default(),
            buf_raddr: Default::default(),
            buf_rdata: Default::default(),
            rd_ptr: Default::default(),
            desc_full: Default::default(),
            desc_write: Default::default(),
            desc_try: Default::default(),
            desc: Default::default(),
            cnt_rx_frame: Default::default(),
            cnt_malformed: Default::default(),
            cnt_icrc: Default::default(),
            cnt_overflow: Default::default(),
            buffer: Default::default(),
            crc: Default::default(),
            target: Default::default(),
            fi_in_frame: Default::default(),
            fi_rem: Default::default(),
            a_valid: Default::default(),
            a_last: Default::default(),
            a_user: Default::default(),
            a_first: Default::default(),
            a_crc_end: Default::default(),
            a_zeros: Default::default(),
            a_lk: Default::default(),
            a_data: Default::default(),
            a_ok1: Default::default(),
            a_ok2: Default::default(),
            a_ipl: Default::default(),
            a_ipl_hi: Default::default(),
            a_iplm20: Default::default(),
            a_udpl: Default::default(),
            a_hdr: Default::default(),
            a_hlen: Default::default(),
            a_s0: Default::default(),
            a_s1: Default::default(),
            crc_state: Default::default(),
            b_valid: Default::default(),
            b_last: Default::default(),
            b_user: Default::default(),
            b_first: Default::default(),
            b_crc_end: Default::default(),
            b_complete: Default::default(),
            b_target: Default::default(),
            b_data: Default::default(),
            b_ok: Default::default(),
            b_nb: Default::default(),
            b_plen: Default::default(),
            b_hlen: Default::default(),
            fb_ok: Default::default(),
            fb_complete: Default::default(),
            fb_crc: Default::default(),
            c_valid: Default::default(),
            c_last: Default::default(),
            c_first: Default::default(),
            c_data: Default::default(),
            c_nb: Default::default(),
            c_nbm1: Default::default(),
            c_plen: Default::default(),
            c_hlen: Default::default(),
            c_end: Default::default(),
            c_malf: Default::default(),
            c_pass: Default::default(),
            c_badcrc: Default::default(),
            wr_ptr: Default::default(),
            k: Default::default(),
            wa: Default::default(),
            fits_r: Default::default(),
            nb_r: Default::default(),
            opcode_r: Default::default(),
            ud_r: Default::default(),
            c_ud: Default::default(),
            hlen_r: Default::default(),
            ackreq_r: Default::default(),
            se_r: Default::default(),
            plen_r: Default::default(),
            dqpn_r: Default::default(),
            psn_r: Default::default(),
            ext_lo_r: Default::default(),
            ext_hi_r: Default::default(),
            first0: Default::default(),
            h0: Default::default(),
            ipl: Default::default(),
            ipl6: Default::default(),
            ipl_hi: Default::default(),
            rem6: Default::default(),
            rem_hi: Default::default(),
            m64: Default::default(),
            m512: Default::default(),
            c_flags: Default::default(),
            c_pad: Default::default(),
            c_ext_len: Default::default(),
            c_supported: Default::default(),
            csum_x: Default::default(),
            csum_ok: Default::default(),
            a_ipl6: Default::default(),
            a_hdr6: Default::default(),
            hdr_ok: Default::default(),
            ok_cur: Default::default(),
            complete_cur: Default::default(),
            crc_cur: Default::default(),
            malformed: Default::default(),
            b_endv: Default::default(),
            kk: Default::default(),
            addr: Default::default(),
            slot_used: Default::default(),
            used: Default::default(),
            fits_first: Default::default(),
            fits_cur: Default::default(),
            nb_cur: Default::default(),
            hc: Default::default(),
            c_dqpn_w: Default::default(),
            c_psn_w: Default::default(),
            c_ackreq_w: Default::default(),
            c_flags_w: Default::default(),
            ext: Default::default(),
            imm_hi: Default::default(),
            at_a: Default::default(),
            at_b: Default::default(),
            va_bswap: Default::default(),
            swap_bswap: Default::default(),
            cmp_bswap: Default::default(),
            c_init: Constant::new((init_skipping(SKIPPED_BYTES) as u64).to_bits()),
            c_and: Constant::new(first_beat_and()),
            c_or: Constant::new(first_beat_or()),
            c_ones64: Constant::new(ones64),
            c_ones512: Constant::new(ones512),
            c_hdr64: Constant::new(ones64 << 14_u64),
            c_hdr512: Constant::new(ones512 << 112_u64),
            c_fifty: Constant::new(50_u64.to_bits()),
            c_max_ipl: Constant::new((MAX_FRAME_BYTES - 14).to_bits()),
        }
    }
}

impl Logic for RxIngress {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            fi_in_frame,
            fi_rem,
            a_valid,
            a_last,
            a_user,
            a_first,
            a_crc_end,
            a_zeros,
            a_lk,
            a_data,
            a_ok1,
            a_ok2,
            a_ipl,
            a_ipl_hi,
            a_iplm20,
            a_udpl,
            a_hdr,
            a_hlen,
            a_s0,
            a_s1,
            crc_state,
            b_valid,
            b_last,
            b_user,
            b_first,
            b_crc_end,
            b_complete,
            b_target,
            b_data,
            b_ok,
            b_nb,
            b_plen,
            b_hlen,
            fb_ok,
            fb_complete,
            fb_crc,
            c_valid,
            c_last,
            c_first,
            c_data,
            c_nb,
            c_nbm1,
            c_plen,
            c_hlen,
            c_end,
            c_malf,
            c_pass,
            c_badcrc,
            wr_ptr,
            k,
            wa,
            fits_r,
            nb_r,
            opcode_r,
            ud_r,
            hlen_r,
            ackreq_r,
            se_r,
            plen_r,
            dqpn_r,
            psn_r,
            ext_lo_r,
            ext_hi_r
        );
        self.buffer.read_clock.next = self.clock.val();
        self.buffer.write_clock.next = self.clock.val();
        self.buffer.read_address.next = self.buf_raddr.val();
        self.buf_rdata.next = self.buffer.read_data.val();

        // ==== Stage 1: from the input beat ====
        self.first0.next = !self.fi_in_frame.q.val();
        self.h0.next = bit_cast::<704, 512>(self.tdata.val()).into();
        self.ipl.next = (self.h0.val().ip_len >> 8) | (self.h0.val().ip_len << 8);
        self.ipl6.next = self.ipl.val().get_bits::<6>(0);
        self.ipl_hi.next = self.ipl.val().get_bits::<10>(6).any();
        self.rem6.next = self.fi_rem.q.val().get_bits::<6>(0);
        self.rem_hi.next = self.fi_rem.q.val().get_bits::<10>(6).any();
        // Byte masks of the frame's bytes in this beat: below 14 + Total Length in a first
        // beat, below the bytes still expected in a later one.
        self.m64.next = self.c_ones64.val();
        self.m512.next = self.c_ones512.val();
        if self.first0.val() {
            if !self.ipl_hi.val() {
                self.m64.next = !(self.c_hdr64.val() << bit_cast::<64, 6>(self.ipl6.val()));
                self.m512.next = !(self.c_hdr512.val() << (bit_cast::<512, 6>(self.ipl6.val()) << 3));
            }
        } else if !self.rem_hi.val() {
            self.m64.next = !(self.c_ones64.val() << bit_cast::<64, 6>(self.rem6.val()));
            self.m512.next = !(self.c_ones512.val() << (bit_cast::<512, 6>(self.rem6.val()) << 3));
        }
        self.a_data.d.next = self.tdata.val() & self.m512.val();
        // The last byte of the frame in this beat must be kept (the MAC delivered it).
        self.a_lk.d.next = (self.m64.val() & !(self.m64.val() >> 1)) & self.tkeep.val();
        self.a_valid.d.next = self.tvalid.val();
        self.a_last.d.next = self.tlast.val();
        self.a_user.d.next = self.tuser.val();
        self.a_first.d.next = self.first0.val();
        // The beat that holds the frame's last byte, and its zero padding (64 - bytes) mod 64.
        if self.first0.val() {
            self.a_crc_end.d.next = !self.ipl_hi.val() & (self.ipl6.val() <= 50);
            self.a_zeros.d.next = self.c_fifty.val() - self.ipl6.val();
        } else {
            self.a_crc_end.d.next = (!self.rem_hi.val() & self.rem6.val().any()) | (self.fi_rem.q.val() == 64);
            self.a_zeros.d.next = (!self.rem6.val()) + 1;
        }
        if self.tvalid.val() {
            self.fi_in_frame.d.next = !self.tlast.val();
            if self.first0.val() {
                self.fi_rem.d.next = 0.into();
                if self.ipl.val() >= 50 {
                    self.fi_rem.d.next = self.ipl.val() - 50;
                }
            } else {
                self.fi_rem.d.next = 0.into();
                if self.rem_hi.val() {
                    self.fi_rem.d.next = self.fi_rem.q.val() - 64;
                }
            }
        }
        // First-beat parse, first half (used when `a_first`).
        self.c_flags.next = self.h0.val().bth_flags;
        self.c_pad.next = bit_cast::<16, 2>(self.c_flags.val().get_bits::<2>(4));
        // Supported opcodes and the extension headers after their BTH (IBTA Vol 1 Table 38):
        // RETH 16, ImmDt 4, AETH 4 bytes.
        self.c_ext_len.next = 0.into();
        self.c_supported.next = true;
        match self.h0.val().bth_opcode.index() {
            // SEND FIRST/MIDDLE/LAST/ONLY, RDMA WRITE MIDDLE/LAST, READ RESPONSE MIDDLE.
            0 => {}  // 0x00
            1 => {}  // 0x01
            2 => {}  // 0x02
            4 => {}  // 0x04
            7 => {}  // 0x07
            8 => {}  // 0x08
            14 => {} // 0x0E
            // ImmDt: SEND LAST/ONLY and RDMA WRITE LAST with immediate.
            3 => {
                // 0x03
                self.c_ext_len.next = 4.into();
            }
            5 => {
                // 0x05
                self.c_ext_len.next = 4.into();
            }
            9 => {
                // 0x09
                self.c_ext_len.next = 4.into();
            }
            // RETH: RDMA WRITE FIRST/ONLY, RDMA READ REQUEST.
            6 => {
                // 0x06
                self.c_ext_len.next = 16.into();
            }
            10 => {
                // 0x0A
                self.c_ext_len.next = 16.into();
            }
            12 => {
                // 0x0C
                self.c_ext_len.next = 16.into();
            }
            // RETH + ImmDt: RDMA WRITE ONLY with immediate.
            11 => {
                // 0x0B
                self.c_ext_len.next = 20.into();
            }
            // AETH: READ RESPONSE FIRST/LAST/ONLY, ACKNOWLEDGE.
            13 => {
                // 0x0D
                self.c_ext_len.next = 4.into();
            }
            15 => {
                // 0x0F
                self.c_ext_len.next = 4.into();
            }
            16 => {
                // 0x10
                self.c_ext_len.next = 4.into();
            }
            17 => {
                // 0x11
                self.c_ext_len.next = 4.into();
            }
            // AETH + AtomicAckETH: ATOMIC ACKNOWLEDGE.
            18 => {
                // 0x12
                self.c_ext_len.next = 12.into();
            }
            // AtomicETH: COMPARE SWAP, FETCH ADD.
            19 => {
                // 0x13
                self.c_ext_len.next = 28.into();
            }
            20 => {
                // 0x14
                self.c_ext_len.next = 28.into();
            }
            // DETH: UD SEND ONLY; DETH + ImmDt: UD SEND ONLY with immediate (9.8, 9.3.3).
            100 => {
                // 0x64
                self.c_ext_len.next = 8.into();
            }
            101 => {
                // 0x65
                self.c_ext_len.next = 12.into();
            }
            _ => {
                self.c_supported.next = false;
            }
        }
        self.a_ok1.d.next = (self.h0.val().eth_type == 0x0008)
            & (self.h0.val().ip_vihl == 0x45)
            & (self.h0.val().ip_proto == 0x11)
            & ((self.h0.val().ip_frag & 0xFF3F) == 0)
            & (self.h0.val().udp_dport == self.nums.val().udp_dport_roce);
        self.a_ok2.d.next = (self.c_flags.val().get_bits::<4>(0) == 0)
            & self.c_supported.val()
            & (self.ipl.val() <= self.c_max_ipl.val());
        self.a_ipl.d.next = self.ipl.val();
        // Total Length ≥ 128 (the headers are at most 44 + 28 + 3 = 75 bytes, so below that
        // the low 7 bits decide).
        self.a_ipl_hi.d.next = self.ipl.val().get_bits::<9>(7).any();
        self.a_iplm20.d.next = self.ipl.val() - 20;
        self.a_udpl.d.next = (self.h0.val().udp_len >> 8) | (self.h0.val().udp_len << 8);
        // IP(20) + UDP(8) + BTH(12) + ICRC(4) = 44, plus extension headers and pad.
        self.a_hdr.d.next = self.c_ext_len.val() + self.c_pad.val() + 44;
        self.a_hlen.d.next = bit_cast::<7, 16>(self.c_ext_len.val() + 54);
        // One's-complement sum of the IPv4 header, in two halves of five words (the sum is
        // byte-order independent, RFC 1071: the words are taken as stored).
        self.a_s0.d.next = bit_cast::<20, 16>(self.tdata.val().get_bits::<16>(112))
            + bit_cast::<20, 16>(self.tdata.val().get_bits::<16>(128))
            + bit_cast::<20, 16>(self.tdata.val().get_bits::<16>(144))
            + bit_cast::<20, 16>(self.tdata.val().get_bits::<16>(160))
            + bit_cast::<20, 16>(self.tdata.val().get_bits::<16>(176));
        self.a_s1.d.next = bit_cast::<20, 16>(self.tdata.val().get_bits::<16>(192))
            + bit_cast::<20, 16>(self.tdata.val().get_bits::<16>(208))
            + bit_cast::<20, 16>(self.tdata.val().get_bits::<16>(224))
            + bit_cast::<20, 16>(self.tdata.val().get_bits::<16>(240))
            + bit_cast::<20, 16>(self.tdata.val().get_bits::<16>(256));

        // ==== Stage 2: CRC register, residue table, end of the parse ====
        self.crc.state_in.next = self.crc_state.q.val();
        self.crc.data.next = self.a_data.q.val();
        if self.a_first.q.val() {
            self.crc.state_in.next = self.c_init.val();
            self.crc.data.next = (self.a_data.q.val() & self.c_and.val()) | self.c_or.val();
        }
        if self.a_valid.q.val() {
            self.crc_state.d.next = self.crc.state_out.val();
        }
        self.target.zeros.next = self.a_zeros.q.val();
        self.b_target.d.next = self.target.state_out.val();
        self.b_complete.d.next = self.a_lk.q.val().any();
        // The sum of the ten words is X = H * 65536 + L (H <= 9); its one's-complement fold is
        // 0xFFFF iff L + H == 0xFFFF, i.e. iff L ^ H == 0xFFFF.
        self.csum_x.next = self.a_s0.q.val() + self.a_s1.q.val();
        self.csum_ok.next =
            (self.csum_x.val().get_bits::<16>(0) ^ bit_cast::<16, 4>(self.csum_x.val().get_bits::<4>(16))) == 0xFFFF;
        // Total Length >= the headers (44..63 bytes): a 6-bit compare below 64.
        self.a_ipl6.next = self.a_ipl.q.val().get_bits::<7>(0);
        self.a_hdr6.next = self.a_hdr.q.val().get_bits::<7>(0);
        self.hdr_ok.next = self.a_ipl_hi.q.val() | (self.a_ipl6.val() >= self.a_hdr6.val());
        self.b_ok.d.next = self.a_ok1.q.val()
            & self.a_ok2.q.val()
            & self.csum_ok.val()
            & (self.a_udpl.q.val() == self.a_iplm20.q.val())
            & self.hdr_ok.val();
        self.b_nb.d.next = bit_cast::<8, 16>((self.a_ipl.q.val() + 77) >> 6);
        self.b_plen.d.next = bit_cast::<13, 16>(self.a_ipl.q.val() - self.a_hdr.q.val());
        self.b_hlen.d.next = self.a_hlen.q.val();
        self.b_valid.d.next = self.a_valid.q.val();
        self.b_last.d.next = self.a_last.q.val();
        self.b_user.d.next = self.a_user.q.val();
        self.b_first.d.next = self.a_first.q.val();
        self.b_crc_end.d.next = self.a_crc_end.q.val();
        self.b_data.d.next = self.a_data.q.val();

        // ==== Stage 3: ICRC compare, frame verdict ====
        self.ok_cur.next = self.fb_ok.q.val();
        self.complete_cur.next = self.fb_complete.q.val();
        self.crc_cur.next = self.fb_crc.q.val();
        if self.b_first.q.val() {
            self.ok_cur.next = self.b_ok.q.val();
            self.complete_cur.next = false;
            self.crc_cur.next = false;
        }
        if self.b_crc_end.q.val() {
            self.complete_cur.next = self.b_complete.q.val();
            self.crc_cur.next = self.crc_state.q.val() == self.b_target.q.val();
        }
        if self.b_valid.q.val() {
            self.fb_ok.d.next = self.ok_cur.val();
            self.fb_complete.d.next = self.complete_cur.val();
            self.fb_crc.d.next = self.crc_cur.val();
        }
        self.malformed.next = !self.ok_cur.val() | self.b_user.q.val() | !self.complete_cur.val();
        self.b_endv.next = self.b_valid.q.val() & self.b_last.q.val();
        self.c_end.d.next = self.b_endv.val();
        self.c_malf.d.next = self.b_endv.val() & self.malformed.val();
        self.c_pass.d.next = self.b_endv.val() & !self.malformed.val() & self.crc_cur.val();
        self.c_badcrc.d.next = self.b_endv.val() & !self.malformed.val() & !self.crc_cur.val();
        self.c_valid.d.next = self.b_valid.q.val();
        self.c_last.d.next = self.b_last.q.val();
        self.c_first.d.next = self.b_first.q.val();
        self.c_data.d.next = self.b_data.q.val();
        self.c_nb.d.next = self.b_nb.q.val();
        self.c_nbm1.d.next = bit_cast::<11, 8>(self.b_nb.q.val()) - 1;
        self.c_plen.d.next = self.b_plen.q.val();
        self.c_hlen.d.next = self.b_hlen.q.val();

        // ==== Buffer write, descriptor, verdict ====
        self.kk.next = self.k.q.val();
        self.addr.next = self.wa.q.val();
        self.nb_cur.next = self.nb_r.q.val();
        if self.c_first.q.val() {
            self.kk.next = 0.into();
            self.addr.next = self.wr_ptr.q.val();
            self.nb_cur.next = self.c_nb.q.val();
        }
        // A slot is free iff it is less than 1024 beats ahead of the release pointer.
        self.slot_used.next = self.addr.val() - self.rd_ptr.val();
        self.buffer.write_enable.next = self.c_valid.q.val() & !self.slot_used.val().get_bit(10);
        self.buffer.write_address.next = self.addr.val().get_bits::<10>(0);
        self.buffer.write_data.next = self.c_data.q.val();
        // Space: every beat of the frame fits (checked at its first beat). A one-beat frame
        // fits iff the slot at `wr_ptr` is free.
        self.used.next = self.wr_ptr.q.val() - self.rd_ptr.val();
        self.fits_first.next = (self.wr_ptr.q.val() + self.c_nbm1.q.val()) - self.rd_ptr.val();
        self.fits_cur.next = self.fits_r.q.val();
        if self.c_first.q.val() {
            self.fits_cur.next = !self.used.val().get_bit(10);
        }

        // Descriptor (used on the last beat).
        self.hc.next = bit_cast::<704, 512>(self.c_data.q.val()).into();
        self.c_dqpn_w.next = self.hc.val().bth_dqpn;
        self.c_ackreq_w.next = self.hc.val().bth_ackreq;
        self.c_flags_w.next = self.hc.val().bth_flags;
        self.c_psn_w.next = self.hc.val().bth_psn;
        self.ext.next =
            bit_cast::<224, 80>(self.ext_lo_r.q.val()) | (bit_cast::<224, 144>(self.ext_hi_r.q.val()) << 80);
        if self.kk.val() == 1 {
            self.ext.next = bit_cast::<224, 80>(self.ext_lo_r.q.val())
                | (bit_cast::<224, 144>(self.c_data.q.val().get_bits::<144>(0)) << 80);
        }
        if self.c_first.q.val() {
            self.ext.next = bit_cast::<224, 80>(self.c_data.q.val().get_bits::<80>(432));
        }
        self.desc.next.start = self.wr_ptr.q.val().get_bits::<10>(0);
        self.desc.next.nbeats = self.nb_cur.val();
        self.desc.next.opcode = self.opcode_r.q.val();
        self.desc.next.hlen = self.hlen_r.q.val();
        self.desc.next.ackreq = bit_cast::<1, 1>(self.ackreq_r.q.val().into());
        self.desc.next.plen = self.plen_r.q.val();
        self.desc.next.se = bit_cast::<1, 1>(self.se_r.q.val().into());
        self.desc.next.dest_qpn = self.dqpn_r.q.val();
        self.desc.next.psn = self.psn_r.q.val();
        self.desc.next.ud = bit_cast::<1, 1>(self.ud_r.q.val().into());
        // A UD SEND ONLY goes on as the RC SEND ONLY it resembles (0x64 → 0x04, 0x65 → 0x05),
        // flagged `ud`.
        self.c_ud.next = (self.hc.val().bth_opcode == self.nums.val().op_ud_send_only)
            | (self.hc.val().bth_opcode == self.nums.val().op_ud_send_only_with_immediate);
        if self.c_first.q.val() {
            self.desc.next.opcode = self.hc.val().bth_opcode;
            self.desc.next.ud = bit_cast::<1, 1>(self.c_ud.val().into());
            if self.c_ud.val() {
                self.desc.next.opcode = self.hc.val().bth_opcode & 0x1F;
            }
            self.desc.next.hlen = self.c_hlen.q.val();
            self.desc.next.ackreq = self.c_ackreq_w.val().get_bits::<1>(7);
            self.desc.next.se = self.c_flags_w.val().get_bits::<1>(7);
            self.desc.next.plen = self.c_plen.q.val();
            self.desc.next.dest_qpn = (bit_cast::<24, 8>(self.c_dqpn_w.val().get_bits::<8>(16)))
                | (bit_cast::<24, 8>(self.c_dqpn_w.val().get_bits::<8>(8)) << 8)
                | (bit_cast::<24, 8>(self.c_dqpn_w.val().get_bits::<8>(0)) << 16);
            self.desc.next.psn = (bit_cast::<24, 8>(self.c_psn_w.val().get_bits::<8>(16)))
                | (bit_cast::<24, 8>(self.c_psn_w.val().get_bits::<8>(8)) << 8)
                | (bit_cast::<24, 8>(self.c_psn_w.val().get_bits::<8>(0)) << 16);
        }
        // RETH (VA, R_Key, DMA Length) and AETH (syndrome, MSN) from wire order.
        self.va_bswap.x.next = self.ext.val().get_bits::<64>(0);
        self.desc.next.reth_va = self.va_bswap.y.val();
        self.desc.next.reth_rkey = (bit_cast::<32, 8>(self.ext.val().get_bits::<8>(64)) << 24)
            | (bit_cast::<32, 8>(self.ext.val().get_bits::<8>(72)) << 16)
            | (bit_cast::<32, 8>(self.ext.val().get_bits::<8>(80)) << 8)
            | bit_cast::<32, 8>(self.ext.val().get_bits::<8>(88));
        self.desc.next.reth_len = (bit_cast::<32, 8>(self.ext.val().get_bits::<8>(96)) << 24)
            | (bit_cast::<32, 8>(self.ext.val().get_bits::<8>(104)) << 16)
            | (bit_cast::<32, 8>(self.ext.val().get_bits::<8>(112)) << 8)
            | bit_cast::<32, 8>(self.ext.val().get_bits::<8>(120));
        self.desc.next.aeth_syndrome = self.ext.val().get_bits::<8>(0);
        self.desc.next.aeth_msn = (bit_cast::<24, 8>(self.ext.val().get_bits::<8>(8)) << 16)
            | (bit_cast::<24, 8>(self.ext.val().get_bits::<8>(16)) << 8)
            | bit_cast::<24, 8>(self.ext.val().get_bits::<8>(24));
        // ImmDt: after the RETH in RDMA WRITE ONLY with immediate, else first.
        self.imm_hi.next = self.desc.val().opcode == self.nums.val().op_rdma_write_only_with_immediate;
        self.desc.next.imm = self.ext.val().get_bits::<32>(0);
        if self.imm_hi.val() {
            self.desc.next.imm = self.ext.val().get_bits::<32>(128);
        }
        if self.desc.val().ud.any() {
            // After the DETH.
            self.desc.next.imm = self.ext.val().get_bits::<32>(64);
        }
        // AtomicETH Swap/Add Data (ext bytes 12..20) and Compare Data (20..28); an ATOMIC
        // ACKNOWLEDGE's Original Remote Data (bytes 4..12, after the AETH) in `at_swap`.
        self.at_a.next = self.ext.val().get_bits::<64>(96);
        if self.desc.val().opcode == self.nums.val().op_atomic_acknowledge {
            self.at_a.next = self.ext.val().get_bits::<64>(32);
        }
        self.at_b.next = self.ext.val().get_bits::<64>(160);
        self.swap_bswap.x.next = self.at_a.val();
        self.desc.next.at_swap = self.swap_bswap.y.val();
        self.cmp_bswap.x.next = self.at_b.val();
        self.desc.next.at_cmp = self.cmp_bswap.y.val();

        // Verdict on the frame's last beat: malformed, then overflow, then ICRC.
        self.cnt_rx_frame.next = self.c_end.q.val();
        self.cnt_malformed.next = self.c_malf.q.val();
        self.cnt_overflow.next =
            (self.c_pass.q.val() | self.c_badcrc.q.val()) & (!self.fits_cur.val() | self.desc_full.val());
        self.cnt_icrc.next = self.c_badcrc.q.val() & self.fits_cur.val() & !self.desc_full.val();
        self.desc_write.next = self.c_pass.q.val() & self.fits_cur.val() & !self.desc_full.val();
        self.desc_try.next = self.c_pass.q.val();
        if self.desc_write.val() {
            self.wr_ptr.d.next = self.wr_ptr.q.val() + bit_cast::<11, 8>(self.nb_cur.val());
        }
        if self.c_valid.q.val() {
            if self.kk.val() != 255 {
                self.k.d.next = self.kk.val() + 1;
                self.wa.d.next = self.addr.val() + 1;
            }
            if self.c_first.q.val() {
                self.fits_r.d.next = !self.fits_first.val().get_bit(10);
                self.nb_r.d.next = self.c_nb.q.val();
                self.opcode_r.d.next = self.desc.val().opcode;
                self.ud_r.d.next = self.desc.val().ud.any();
                self.hlen_r.d.next = self.desc.val().hlen;
                self.ackreq_r.d.next = self.desc.val().ackreq.any();
                self.se_r.d.next = self.desc.val().se.any();
                self.plen_r.d.next = self.desc.val().plen;
                self.dqpn_r.d.next = self.desc.val().dest_qpn;
                self.psn_r.d.next = self.desc.val().psn;
                self.ext_lo_r.d.next = self.c_data.q.val().get_bits::<80>(432);
            }
            if self.kk.val() == 1 {
                self.ext_hi_r.d.next = self.c_data.q.val().get_bits::<144>(0);
            }
            if self.c_last.q.val() {
                self.k.d.next = 0.into();
            }
        }
        if self.reset.val() {
            self.fi_in_frame.d.next = false;
            self.a_valid.d.next = false;
            self.b_valid.d.next = false;
            self.c_valid.d.next = false;
            self.c_end.d.next = false;
            self.c_malf.d.next = false;
            self.c_pass.d.next = false;
            self.c_badcrc.d.next = false;
            self.k.d.next = 0.into();
            self.wr_ptr.d.next = 0.into();
        }
    }
}
