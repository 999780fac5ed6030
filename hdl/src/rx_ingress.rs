//! RX ingress: parse, ICRC check and store-and-forward packet buffer.
use crate::crc::blocks::{init_skipping, Crc32D512, Crc32UnzeroTable};
use crate::icrc::{first_beat_and, first_beat_or, SKIPPED_BYTES};
use crate::records::{RoceHeader, RxDesc};
use rust_hdl::prelude::*;

/// log2 of the packet buffer size in 64-byte beats (256 beats = 16 KiB, three 4 KiB-MTU
/// packets).
pub const LOG_BUFFER_BEATS: usize = 8;

/// Largest frame accepted, in bytes: 4096-byte MTU payload plus every header (80 beats).
pub const MAX_FRAME_BYTES: u64 = 64 * 80;

/// The ICRC residue: the raw CRC register after a message followed by its own ICRC
/// (least-significant byte first). A received frame is intact iff its covered bytes and ICRC
/// leave this value.
pub fn icrc_residue() -> u32 {
    use crate::crc::reference::step;
    let msg = [0u8; 1];
    let crc = !step(0xFFFF_FFFF, &msg);
    let mut all = msg.to_vec();
    all.extend_from_slice(&crc.to_le_bytes());
    step(0xFFFF_FFFF, &all)
}

/// Receives frames from the MAC (no back-pressure), one beat per cycle.
///
/// From the first beat it parses and checks Ethernet (EtherType 0x0800), IPv4 (version 4, no
/// options, not a fragment, header checksum), UDP (destination port 4791, length consistent
/// with IPv4 Total Length) and BTH (TVer 0, a supported opcode: RDMA WRITE FIRST/MIDDLE/LAST/
/// ONLY or ACKNOWLEDGE; payload length = Total Length − headers − pad − ICRC ≥ 0); the RETH
/// is taken from bytes 54..70 (second beat), the AETH from bytes 54..58. Every beat of the
/// frame up to Total Length is written into the packet buffer while the ICRC is computed;
/// the frame's last beat gives the verdict. Only a frame that passes every check (and the
/// MAC's FCS, `tuser` = 0) becomes a [`RxDesc`] and keeps its buffer space; anything else is
/// dropped and counted by reason (`cnt_*` pulses: malformed, ICRC, overflow), so a bad packet
/// never reaches the RX engine, let alone host memory. Ethernet padding after Total Length is
/// ignored.
///
/// Timing: 1 beat per cycle, no stall; the descriptor is written in the cycle of `tlast`.
/// Buffer: 2^[`LOG_BUFFER_BEATS`] beats of 512 bits in block RAM, freed by the RX engine's
/// read pointer `rd_ptr`.
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
    pub buf_raddr: Signal<In, Bits<8>>,
    pub buf_rdata: Signal<Out, Bits<512>>,
    /// The RX engine's release pointer (beats, modulo 512).
    pub rd_ptr: Signal<In, Bits<9>>,
    pub desc_full: Signal<In, Bit>,
    pub desc_write: Signal<Out, Bit>,
    pub desc: Signal<Out, RxDesc>,
    pub cnt_rx_frame: Signal<Out, Bit>,
    pub cnt_malformed: Signal<Out, Bit>,
    pub cnt_icrc: Signal<Out, Bit>,
    pub cnt_overflow: Signal<Out, Bit>,
    buffer: RAM<Bits<512>, 8>,
    crc: Crc32D512,
    unzero: Crc32UnzeroTable,
    wr_ptr: DFF<Bits<9>>,
    in_frame: DFF<Bit>,
    k: DFF<Bits<8>>,
    keep: DFF<Bit>,
    p_ok: DFF<Bit>,
    p_space: DFF<Bit>,
    end_r: DFF<Bits<16>>,
    nb_r: DFF<Bits<8>>,
    crc_state: DFF<Bits<32>>,
    crc_ok_r: DFF<Bit>,
    complete_r: DFF<Bit>,
    opcode_r: DFF<Bits<8>>,
    hlen_r: DFF<Bits<7>>,
    ackreq_r: DFF<Bit>,
    plen_r: DFF<Bits<13>>,
    dqpn_r: DFF<Bits<24>>,
    psn_r: DFF<Bits<24>>,
    ext_lo_r: DFF<Bits<80>>,
    ext_hi_r: DFF<Bits<48>>,
    // Beat-0 parse (combinational).
    h0: Signal<Local, RoceHeader>,
    c_ip_len: Signal<Local, Bits<16>>,
    c_udp_len: Signal<Local, Bits<16>>,
    c_flags: Signal<Local, Bits<8>>,
    c_pad: Signal<Local, Bits<16>>,
    c_ext_len: Signal<Local, Bits<16>>,
    c_supported: Signal<Local, Bit>,
    c_hdr_total: Signal<Local, Bits<16>>,
    c_plen: Signal<Local, Bits<16>>,
    c_end: Signal<Local, Bits<16>>,
    c_nb: Signal<Local, Bits<16>>,
    c_csum_sum: Signal<Local, Bits<20>>,
    c_csum_fold: Signal<Local, Bits<20>>,
    c_csum_total: Signal<Local, Bits<20>>,
    c_ok: Signal<Local, Bit>,
    c_used: Signal<Local, Bits<9>>,
    c_space: Signal<Local, Bit>,
    c_dqpn_w: Signal<Local, Bits<24>>,
    c_psn_w: Signal<Local, Bits<24>>,
    // Per beat.
    first: Signal<Local, Bit>,
    kk: Signal<Local, Bits<8>>,
    cur_end: Signal<Local, Bits<16>>,
    cur_nb: Signal<Local, Bits<8>>,
    cur_ok: Signal<Local, Bit>,
    cur_space: Signal<Local, Bit>,
    cur_keep: Signal<Local, Bit>,
    rem_bytes: Signal<Local, Bits<16>>,
    cnt: Signal<Local, Bits<8>>,
    masked: Signal<Local, Bits<512>>,
    is_crc_end: Signal<Local, Bit>,
    verdict_now: Signal<Local, Bit>,
    complete_now: Signal<Local, Bit>,
    cur_crc_ok: Signal<Local, Bit>,
    cur_complete: Signal<Local, Bit>,
    ext: Signal<Local, Bits<128>>,
    c_init: Constant<Bits<32>>,
    c_and: Constant<Bits<512>>,
    c_or: Constant<Bits<512>>,
    c_residue: Constant<Bits<32>>,
    c_max_end: Constant<Bits<16>>,
    tail_zeros: Signal<Local, Bits<8>>,
    keep_shift: Signal<Local, Bits<64>>,
    buf_waddr: Signal<Local, Bits<9>>,
    c_ackreq_w: Signal<Local, Bits<8>>,
}

impl Default for RxIngress {
    fn default() -> Self {
        Self {
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
            desc: Default::default(),
            cnt_rx_frame: Default::default(),
            cnt_malformed: Default::default(),
            cnt_icrc: Default::default(),
            cnt_overflow: Default::default(),
            buffer: Default::default(),
            crc: Default::default(),
            unzero: Default::default(),
            wr_ptr: Default::default(),
            in_frame: Default::default(),
            k: Default::default(),
            keep: Default::default(),
            p_ok: Default::default(),
            p_space: Default::default(),
            end_r: Default::default(),
            nb_r: Default::default(),
            crc_state: Default::default(),
            crc_ok_r: Default::default(),
            complete_r: Default::default(),
            opcode_r: Default::default(),
            hlen_r: Default::default(),
            ackreq_r: Default::default(),
            plen_r: Default::default(),
            dqpn_r: Default::default(),
            psn_r: Default::default(),
            ext_lo_r: Default::default(),
            ext_hi_r: Default::default(),
            h0: Default::default(),
            c_ip_len: Default::default(),
            c_udp_len: Default::default(),
            c_flags: Default::default(),
            c_pad: Default::default(),
            c_ext_len: Default::default(),
            c_supported: Default::default(),
            c_hdr_total: Default::default(),
            c_plen: Default::default(),
            c_end: Default::default(),
            c_nb: Default::default(),
            c_csum_sum: Default::default(),
            c_csum_fold: Default::default(),
            c_csum_total: Default::default(),
            c_ok: Default::default(),
            c_used: Default::default(),
            c_space: Default::default(),
            c_dqpn_w: Default::default(),
            c_psn_w: Default::default(),
            first: Default::default(),
            kk: Default::default(),
            cur_end: Default::default(),
            cur_nb: Default::default(),
            cur_ok: Default::default(),
            cur_space: Default::default(),
            cur_keep: Default::default(),
            rem_bytes: Default::default(),
            cnt: Default::default(),
            masked: Default::default(),
            is_crc_end: Default::default(),
            verdict_now: Default::default(),
            complete_now: Default::default(),
            cur_crc_ok: Default::default(),
            cur_complete: Default::default(),
            ext: Default::default(),
            c_init: Constant::new((init_skipping(SKIPPED_BYTES) as u64).to_bits()),
            c_and: Constant::new(first_beat_and()),
            c_or: Constant::new(first_beat_or()),
            c_residue: Constant::new((icrc_residue() as u64).to_bits()),
            c_max_end: Constant::new(MAX_FRAME_BYTES.to_bits()),
    tail_zeros: Default::default(),
            keep_shift: Default::default(),
            buf_waddr: Default::default(),
            c_ackreq_w: Default::default(),
                }
    }
}

impl Logic for RxIngress {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, wr_ptr, in_frame, k, keep, p_ok, p_space, end_r, nb_r, crc_state,
            crc_ok_r, complete_r, opcode_r, hlen_r, ackreq_r, plen_r, dqpn_r, psn_r, ext_lo_r,
            ext_hi_r
        );
        self.buffer.read_clock.next = self.clock.val();
        self.buffer.write_clock.next = self.clock.val();
        self.buffer.read_address.next = self.buf_raddr.val();
        self.buf_rdata.next = self.buffer.read_data.val();

        // ---- Parse of a first beat (combinational) ----
        self.h0.next = bit_cast::<640, 512>(self.tdata.val()).into();
        self.c_ip_len.next = (self.h0.val().ip_len >> 8) | (self.h0.val().ip_len << 8);
        self.c_udp_len.next = (self.h0.val().udp_len >> 8) | (self.h0.val().udp_len << 8);
        self.c_flags.next = self.h0.val().bth_flags;
        self.c_pad.next = bit_cast::<16, 2>(self.c_flags.val().get_bits::<2>(4));
        self.c_ext_len.next = 0.into();
        self.c_supported.next = false;
        if (self.h0.val().bth_opcode == 0x06) | (self.h0.val().bth_opcode == 0x0A) {
            self.c_ext_len.next = 16.into();
            self.c_supported.next = true;
        }
        if (self.h0.val().bth_opcode == 0x07) | (self.h0.val().bth_opcode == 0x08) {
            self.c_supported.next = true;
        }
        if self.h0.val().bth_opcode == 0x11 {
            self.c_ext_len.next = 4.into();
            self.c_supported.next = true;
        }
        // IP(20) + UDP(8) + BTH(12) + ICRC(4) = 44, plus extension headers and pad.
        self.c_hdr_total.next = self.c_ext_len.val() + self.c_pad.val() + 44;
        self.c_plen.next = self.c_ip_len.val() - self.c_hdr_total.val();
        self.c_end.next = self.c_ip_len.val() + 14;
        self.c_nb.next = (self.c_end.val() + 63) >> 6;
        // One's-complement sum of the IPv4 header including its checksum must be 0xFFFF; the
        // sum is byte-order independent (RFC 1071), so the words are taken as stored.
        self.c_csum_sum.next = bit_cast::<20, 16>(self.tdata.val().get_bits::<16>(112))
            + bit_cast::<20, 16>(self.tdata.val().get_bits::<16>(128))
            + bit_cast::<20, 16>(self.tdata.val().get_bits::<16>(144))
            + bit_cast::<20, 16>(self.tdata.val().get_bits::<16>(160))
            + bit_cast::<20, 16>(self.tdata.val().get_bits::<16>(176))
            + bit_cast::<20, 16>(self.tdata.val().get_bits::<16>(192))
            + bit_cast::<20, 16>(self.tdata.val().get_bits::<16>(208))
            + bit_cast::<20, 16>(self.tdata.val().get_bits::<16>(224))
            + bit_cast::<20, 16>(self.tdata.val().get_bits::<16>(240))
            + bit_cast::<20, 16>(self.tdata.val().get_bits::<16>(256));
        self.c_csum_fold.next = (self.c_csum_sum.val() & 0xFFFF) + (self.c_csum_sum.val() >> 16);
        self.c_csum_total.next = (self.c_csum_fold.val() & 0xFFFF) + (self.c_csum_fold.val() >> 16);
        self.c_ok.next = (self.h0.val().eth_type == 0x0008)
            & (self.h0.val().ip_vihl == 0x45)
            & (self.h0.val().ip_proto == 0x11)
            & ((self.h0.val().ip_frag & 0xFF3F) == 0)
            & (self.c_csum_total.val() == 0xFFFF)
            & (self.h0.val().udp_dport == 0xB712)
            & (self.c_udp_len.val() == (self.c_ip_len.val() - 20))
            & (self.c_flags.val().get_bits::<4>(0) == 0)
            & self.c_supported.val()
            & (self.c_ip_len.val() >= self.c_hdr_total.val())
            & (self.c_end.val() <= self.c_max_end.val());
        self.c_used.next = self.wr_ptr.q.val() - self.rd_ptr.val();
        self.c_space.next =
            (bit_cast::<16, 9>(self.c_used.val()) + self.c_nb.val()) <= 256;
        self.c_dqpn_w.next = self.h0.val().bth_dqpn;
        self.c_ackreq_w.next = self.h0.val().bth_ackreq;
        self.c_psn_w.next = self.h0.val().bth_psn;

        // ---- Per beat ----
        self.first.next = !self.in_frame.q.val();
        self.kk.next = self.k.q.val();
        self.cur_end.next = self.end_r.q.val();
        self.cur_nb.next = self.nb_r.q.val();
        self.cur_ok.next = self.p_ok.q.val();
        self.cur_space.next = self.p_space.q.val();
        self.cur_keep.next = self.keep.q.val();
        if self.first.val() {
            self.kk.next = 0.into();
            self.cur_end.next = self.c_end.val();
            self.cur_nb.next = self.c_nb.val().get_bits::<8>(0);
            self.cur_ok.next = self.c_ok.val();
            self.cur_space.next = self.c_space.val();
            self.cur_keep.next = self.c_ok.val() & self.c_space.val();
        }
        self.rem_bytes.next = self.cur_end.val() - (bit_cast::<16, 8>(self.kk.val()) << 6);
        self.cnt.next = 64.into();
        if self.rem_bytes.val() < 64 {
            self.cnt.next = self.rem_bytes.val().get_bits::<8>(0);
        }
        self.masked.next = self.tdata.val()
            & ((bit_cast::<512, 1>(1.into()) << (bit_cast::<512, 8>(self.cnt.val()) << 3)) - 1);
        self.crc.state_in.next = self.crc_state.q.val();
        self.crc.data.next = self.masked.val();
        if self.first.val() {
            self.crc.state_in.next = self.c_init.val();
            self.crc.data.next = (self.masked.val() & self.c_and.val()) | self.c_or.val();
        }
        self.unzero.state_in.next = self.crc.state_out.val();
        self.tail_zeros.next = 64_u64 - self.cnt.val();
        self.unzero.zeros.next = self.tail_zeros.val().get_bits::<6>(0);
        self.is_crc_end.next = (bit_cast::<16, 8>(self.kk.val()) + 1) == bit_cast::<16, 8>(self.cur_nb.val());
        self.verdict_now.next = self.unzero.state_out.val() == self.c_residue.val();
        self.keep_shift.next = self.tkeep.val() >> (bit_cast::<64, 8>(self.cnt.val()) - 1);
        self.complete_now.next = self.keep_shift.val().get_bit(0);
        self.cur_crc_ok.next = self.crc_ok_r.q.val();
        self.cur_complete.next = self.complete_r.q.val();
        if self.is_crc_end.val() {
            self.cur_crc_ok.next = self.verdict_now.val();
            self.cur_complete.next = self.complete_now.val();
        }

        // Buffer write.
        self.buffer.write_enable.next = self.tvalid.val()
            & self.cur_keep.val()
            & (self.kk.val() < self.cur_nb.val());
        self.buf_waddr.next = self.wr_ptr.q.val() + bit_cast::<9, 8>(self.kk.val());
        self.buffer.write_address.next = self.buf_waddr.val().get_bits::<8>(0);
        self.buffer.write_data.next = self.tdata.val();

        // Descriptor (used on the last beat).
        self.ext.next = bit_cast::<128, 80>(self.ext_lo_r.q.val())
            | (bit_cast::<128, 48>(self.ext_hi_r.q.val()) << 80);
        if self.kk.val() == 1 {
            self.ext.next = bit_cast::<128, 80>(self.ext_lo_r.q.val())
                | (bit_cast::<128, 48>(self.tdata.val().get_bits::<48>(0)) << 80);
        }
        if self.first.val() {
            self.ext.next = bit_cast::<128, 80>(self.tdata.val().get_bits::<80>(432));
        }
        self.desc.next.start = self.wr_ptr.q.val().get_bits::<8>(0);
        self.desc.next.nbeats = self.cur_nb.val();
        self.desc.next.opcode = self.opcode_r.q.val();
        self.desc.next.hlen = self.hlen_r.q.val();
        self.desc.next.ackreq = bit_cast::<1, 1>(self.ackreq_r.q.val().into());
        self.desc.next.plen = self.plen_r.q.val();
        self.desc.next.rsvd0 = 0.into();
        self.desc.next.dest_qpn = self.dqpn_r.q.val();
        self.desc.next.psn = self.psn_r.q.val();
        if self.first.val() {
            self.desc.next.opcode = self.h0.val().bth_opcode;
            self.desc.next.hlen = bit_cast::<7, 16>(self.c_ext_len.val() + 54);
            self.desc.next.ackreq = self.c_ackreq_w.val().get_bits::<1>(7);
            self.desc.next.plen = self.c_plen.val().get_bits::<13>(0);
            self.desc.next.dest_qpn = (bit_cast::<24, 8>(self.c_dqpn_w.val().get_bits::<8>(16)))
                | (bit_cast::<24, 8>(self.c_dqpn_w.val().get_bits::<8>(8)) << 8)
                | (bit_cast::<24, 8>(self.c_dqpn_w.val().get_bits::<8>(0)) << 16);
            self.desc.next.psn = (bit_cast::<24, 8>(self.c_psn_w.val().get_bits::<8>(16)))
                | (bit_cast::<24, 8>(self.c_psn_w.val().get_bits::<8>(8)) << 8)
                | (bit_cast::<24, 8>(self.c_psn_w.val().get_bits::<8>(0)) << 16);
        }
        // RETH (VA, R_Key, DMA Length) and AETH (syndrome, MSN) from wire order.
        self.desc.next.reth_va = (bit_cast::<64, 8>(self.ext.val().get_bits::<8>(0)) << 56)
            | (bit_cast::<64, 8>(self.ext.val().get_bits::<8>(8)) << 48)
            | (bit_cast::<64, 8>(self.ext.val().get_bits::<8>(16)) << 40)
            | (bit_cast::<64, 8>(self.ext.val().get_bits::<8>(24)) << 32)
            | (bit_cast::<64, 8>(self.ext.val().get_bits::<8>(32)) << 24)
            | (bit_cast::<64, 8>(self.ext.val().get_bits::<8>(40)) << 16)
            | (bit_cast::<64, 8>(self.ext.val().get_bits::<8>(48)) << 8)
            | bit_cast::<64, 8>(self.ext.val().get_bits::<8>(56));
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

        // ---- Sequencing ----
        self.desc_write.next = false;
        self.cnt_rx_frame.next = false;
        self.cnt_malformed.next = false;
        self.cnt_icrc.next = false;
        self.cnt_overflow.next = false;
        if self.tvalid.val() {
            if self.kk.val() != 255 {
                self.k.d.next = self.kk.val() + 1;
            }
            self.in_frame.d.next = true;
            if self.kk.val() < self.cur_nb.val() {
                self.crc_state.d.next = self.crc.state_out.val();
            }
            if self.is_crc_end.val() {
                self.crc_ok_r.d.next = self.verdict_now.val();
                self.complete_r.d.next = self.complete_now.val();
            }
            if self.first.val() {
                self.p_ok.d.next = self.c_ok.val();
                self.p_space.d.next = self.c_space.val();
                self.keep.d.next = self.c_ok.val() & self.c_space.val();
                self.end_r.d.next = self.c_end.val();
                self.nb_r.d.next = self.c_nb.val().get_bits::<8>(0);
                self.opcode_r.d.next = self.desc.val().opcode;
                self.hlen_r.d.next = self.desc.val().hlen;
                self.ackreq_r.d.next = self.desc.val().ackreq.any();
                self.plen_r.d.next = self.desc.val().plen;
                self.dqpn_r.d.next = self.desc.val().dest_qpn;
                self.psn_r.d.next = self.desc.val().psn;
                self.ext_lo_r.d.next = self.tdata.val().get_bits::<80>(432);
                if !self.is_crc_end.val() {
                    self.crc_ok_r.d.next = false;
                    self.complete_r.d.next = false;
                }
            }
            if self.kk.val() == 1 {
                self.ext_hi_r.d.next = self.tdata.val().get_bits::<48>(0);
            }
            if self.tlast.val() {
                self.in_frame.d.next = false;
                self.k.d.next = 0.into();
                self.cnt_rx_frame.next = true;
                if !self.cur_ok.val() | self.tuser.val() | !self.cur_complete.val() {
                    self.cnt_malformed.next = true;
                } else if !self.cur_space.val() | self.desc_full.val() {
                    self.cnt_overflow.next = true;
                } else if !self.cur_crc_ok.val() {
                    self.cnt_icrc.next = true;
                } else {
                    self.desc_write.next = true;
                    self.wr_ptr.d.next = self.wr_ptr.q.val() + bit_cast::<9, 8>(self.cur_nb.val());
                }
            }
        }
        if self.reset.val() {
            self.in_frame.d.next = false;
            self.k.d.next = 0.into();
            self.wr_ptr.d.next = 0.into();
        }
    }
}
