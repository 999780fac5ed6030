//! Ethernet/IPv4/UDP/BTH header construction, shared by request and ACK frames.
use crate::numbers::{Numbers, Zero};
use crate::records::RoceHeader;
use rust_hdl::prelude::*;

/// Builds the first 54 bytes of a RoCEv2 frame plus up to 28 bytes of extension headers.
///
/// Inputs are numbers (MAC addresses as stored by [`rnic_contract::regs::MAC_LO`], byte 0 in
/// bits 7:0; IPv4 addresses first octet in bits 31:24); `ext` is already in wire byte order
/// and `ext_len` says how many of its bytes are present (0, 4, 8, 12, 16, 20 or 28). Outputs: the header
/// ([`RoceHeader`], wire order), its length in bytes (`hlen`) and BTH.PadCnt (`pad`) for a
/// payload of `plen` bytes. IPv4: no options, DF set, TTL 64, ID 0, header checksum per
/// RFC 791; UDP destination port 4791, checksum 0 (Annex A17.4.5.2); BTH: SE from `se`,
/// M = 0, TVer 0, FECN = BECN = 0. `tag_in` rides along unchanged to `tag_out` (the caller's own
/// per-header data).
///
/// A pipeline with a valid/ready handshake on both sides (a request is taken when `in_valid`
/// and `in_ready`; a header leaves when `out_valid` and `out_ready`), all outputs registered:
/// 1. the inputs, registered as they come (no logic between the ports and the registers);
/// 2. IPv4 Total Length, the two address sums, PadCnt and `hlen`;
/// 3. the 19-bit two's-complement sum of the checksum's words, UDP Length;
/// 4. the one's-complement fold and the header itself.
///
/// Timing: latency 4 cycles (a request taken in cycle `t` is at the output in `t + 4` if the
/// output is free); a stage takes the next request whenever it is empty or its content moves
/// on, so bubbles close up. `in_ready` says a stage is free: it depends on registers only, not
/// on `out_ready`, so a full pipeline takes a new request only the cycle after its output
/// moved: initiation interval 1 per cycle until the 4 stages are full, 4 headers per 5 cycles
/// when both sides run flat out (every user needs at most one header per 2 cycles).
#[derive(LogicBlock, Default)]
pub struct HeaderBuilder {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub in_valid: Signal<In, Bit>,
    pub in_ready: Signal<Out, Bit>,
    pub src_mac: Signal<In, Bits<48>>,
    pub src_ip: Signal<In, Bits<32>>,
    pub dest_mac: Signal<In, Bits<48>>,
    pub dest_ip: Signal<In, Bits<32>>,
    pub udp_sport: Signal<In, Bits<16>>,
    pub pkey: Signal<In, Bits<16>>,
    pub opcode: Signal<In, Bits<8>>,
    pub dest_qpn: Signal<In, Bits<24>>,
    pub ackreq: Signal<In, Bits<1>>,
    /// BTH.SE, the Solicited Event bit (IBTA Vol 1 9.2.3).
    pub se: Signal<In, Bits<1>>,
    pub psn: Signal<In, Bits<24>>,
    pub ext: Signal<In, Bits<224>>,
    pub ext_len: Signal<In, Bits<5>>,
    pub plen: Signal<In, Bits<13>>,
    pub tag_in: Signal<In, Bits<48>>,
    pub out_valid: Signal<Out, Bit>,
    pub out_ready: Signal<In, Bit>,
    pub hdr: Signal<Out, RoceHeader>,
    pub hlen: Signal<Out, Bits<7>>,
    pub pad: Signal<Out, Bits<2>>,
    pub tag_out: Signal<Out, Bits<48>>,
    // Stage 1: the inputs (the header fields that need no arithmetic already in place).
    v1: DFF<Bit>,
    h1: DFF<Bits<704>>,
    plen1: DFF<Bits<13>>,
    ext_len1: DFF<Bits<5>>,
    src_ip1: DFF<Bits<32>>,
    dest_ip1: DFF<Bits<32>>,
    tag1: DFF<Bits<48>>,
    // Stage 2: lengths and partial sums.
    v2: DFF<Bit>,
    h2: DFF<Bits<704>>,
    ip_len2: DFF<Bits<16>>,
    src_sum2: DFF<Bits<17>>,
    dst_sum2: DFF<Bits<17>>,
    hlen2: DFF<Bits<7>>,
    pad2: DFF<Bits<2>>,
    tag2: DFF<Bits<48>>,
    // Stage 3: the checksum's words summed.
    v3: DFF<Bit>,
    h3: DFF<Bits<704>>,
    sum3: DFF<Bits<19>>,
    hlen3: DFF<Bits<7>>,
    pad3: DFF<Bits<2>>,
    tag3: DFF<Bits<48>>,
    // Stage 4: the header.
    v4: DFF<Bit>,
    h4: DFF<Bits<704>>,
    hlen4: DFF<Bits<7>>,
    pad4: DFF<Bits<2>>,
    tag4: DFF<Bits<48>>,
    ld1: Signal<Local, Bit>,
    ld2: Signal<Local, Bit>,
    ld3: Signal<Local, Bit>,
    ld4: Signal<Local, Bit>,
    x1: Signal<Local, RoceHeader>,
    x2: Signal<Local, RoceHeader>,
    x3: Signal<Local, RoceHeader>,
    x4: Signal<Local, RoceHeader>,
    pad16: Signal<Local, Bits<16>>,
    ip_len: Signal<Local, Bits<16>>,
    ip_len_q: Signal<Local, Bits<16>>,
    udp_len: Signal<Local, Bits<16>>,
    fold_lo: Signal<Local, Bits<17>>,
    fold_hi: Signal<Local, Bits<17>>,
    csum: Signal<Local, Bits<16>>,
    x1_flags: Signal<Local, Bits<8>>,
    h1_hdr: Signal<Local, RoceHeader>,
    zero_hdr: Zero<RoceHeader>,
    /// The contract's numbers ([`crate::numbers`]).
    nums: Numbers,
}

impl Logic for HeaderBuilder {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, v1, h1, plen1, ext_len1, src_ip1, dest_ip1, tag1, v2, h2, ip_len2, src_sum2, dst_sum2, hlen2,
            pad2, tag2, v3, h3, sum3, hlen3, pad3, tag3, v4, h4, hlen4, pad4, tag4
        );
        // A stage loads when it is empty or its content moves on (bubbles close up).
        self.ld4.next = !self.v4.q.val() | self.out_ready.val();
        self.ld3.next = !self.v3.q.val() | self.ld4.val();
        self.ld2.next = !self.v2.q.val() | self.ld3.val();
        self.ld1.next = !self.v1.q.val() | self.ld2.val();
        // Taken only into a free stage: `in_ready` never waits for `out_ready`.
        self.in_ready.next = !(self.v1.q.val() & self.v2.q.val() & self.v3.q.val() & self.v4.q.val());
        self.out_valid.next = self.v4.q.val();
        self.hdr.next = bit_cast::<704, 704>(self.h4.q.val()).into();
        self.hlen.next = self.hlen4.q.val();
        self.pad.next = self.pad4.q.val();
        self.tag_out.next = self.tag4.q.val();

        // ---- Stage 1: the fields that are only placed and byte-swapped ----
        self.x1.next = self.zero_hdr.val();
        self.x1.next.eth_dst = self.dest_mac.val();
        self.x1.next.eth_src = self.src_mac.val();
        self.x1.next.ip_src = (bit_cast::<32, 8>(self.src_ip.val().get_bits::<8>(24)))
            | (bit_cast::<32, 8>(self.src_ip.val().get_bits::<8>(16)) << 8)
            | (bit_cast::<32, 8>(self.src_ip.val().get_bits::<8>(8)) << 16)
            | (bit_cast::<32, 8>(self.src_ip.val().get_bits::<8>(0)) << 24);
        self.x1.next.ip_dst = (bit_cast::<32, 8>(self.dest_ip.val().get_bits::<8>(24)))
            | (bit_cast::<32, 8>(self.dest_ip.val().get_bits::<8>(16)) << 8)
            | (bit_cast::<32, 8>(self.dest_ip.val().get_bits::<8>(8)) << 16)
            | (bit_cast::<32, 8>(self.dest_ip.val().get_bits::<8>(0)) << 24);
        self.x1.next.udp_sport = (self.udp_sport.val() >> 8) | (self.udp_sport.val() << 8);
        self.x1.next.bth_opcode = self.opcode.val();
        self.x1.next.bth_pkey = (self.pkey.val() >> 8) | (self.pkey.val() << 8);
        self.x1.next.bth_dqpn = (bit_cast::<24, 8>(self.dest_qpn.val().get_bits::<8>(16)))
            | (bit_cast::<24, 8>(self.dest_qpn.val().get_bits::<8>(8)) << 8)
            | (bit_cast::<24, 8>(self.dest_qpn.val().get_bits::<8>(0)) << 16);
        self.x1.next.bth_ackreq = bit_cast::<8, 1>(self.ackreq.val()) << 7;
        self.x1.next.bth_flags = bit_cast::<8, 1>(self.se.val()) << 7;
        self.x1.next.bth_psn = (bit_cast::<24, 8>(self.psn.val().get_bits::<8>(16)))
            | (bit_cast::<24, 8>(self.psn.val().get_bits::<8>(8)) << 8)
            | (bit_cast::<24, 8>(self.psn.val().get_bits::<8>(0)) << 16);
        self.x1.next.ext = self.ext.val();
        if self.ld1.val() {
            self.v1.d.next = self.in_valid.val() & self.in_ready.val();
            self.h1.d.next = self.x1.val().into();
            self.plen1.d.next = self.plen.val();
            self.ext_len1.d.next = self.ext_len.val();
            self.src_ip1.d.next = self.src_ip.val();
            self.dest_ip1.d.next = self.dest_ip.val();
            self.tag1.d.next = self.tag_in.val();
        }

        // ---- Stage 2: lengths, PadCnt, the address halves summed ----
        self.pad16.next = (0_u64 - bit_cast::<16, 13>(self.plen1.q.val())) & 3;
        // IP(20) + UDP(8) + BTH(12) + ICRC(4) = 44, plus the extension headers, payload, pad.
        self.ip_len.next =
            ((bit_cast::<16, 13>(self.plen1.q.val()) + 3) & 0xFFFC) + (bit_cast::<16, 5>(self.ext_len1.q.val()) + 44);
        self.h1_hdr.next = bit_cast::<704, 704>(self.h1.q.val()).into();
        self.x1_flags.next = self.h1_hdr.val().bth_flags;
        self.x2.next = bit_cast::<704, 704>(self.h1.q.val()).into();
        self.x2.next.bth_flags = (self.x1_flags.val() & 0x80) | (bit_cast::<8, 16>(self.pad16.val()) << 4);
        if self.ld2.val() {
            self.v2.d.next = self.v1.q.val();
            self.h2.d.next = self.x2.val().into();
            self.ip_len2.d.next = self.ip_len.val();
            self.src_sum2.d.next = bit_cast::<17, 16>(self.src_ip1.q.val().get_bits::<16>(16))
                + bit_cast::<17, 16>(self.src_ip1.q.val().get_bits::<16>(0));
            self.dst_sum2.d.next = bit_cast::<17, 16>(self.dest_ip1.q.val().get_bits::<16>(16))
                + bit_cast::<17, 16>(self.dest_ip1.q.val().get_bits::<16>(0));
            self.hlen2.d.next = bit_cast::<7, 5>(self.ext_len1.q.val()) + 54;
            self.pad2.d.next = self.pad16.val().get_bits::<2>(0);
            self.tag2.d.next = self.tag1.q.val();
        }

        // ---- Stage 3: Total Length, UDP Length, and the sum of the ten header words ----
        // (0x4500 + 0x4000 + 0x4011 = 0xC511 are the constant words: version/IHL/TOS, flags,
        // TTL/protocol; the checksum word itself counts as 0.)
        self.ip_len_q.next = self.ip_len2.q.val();
        self.udp_len.next = self.ip_len_q.val() - 20;
        self.x3.next = bit_cast::<704, 704>(self.h2.q.val()).into();
        self.x3.next.ip_len = (self.ip_len_q.val() >> 8) | (self.ip_len_q.val() << 8);
        self.x3.next.udp_len = (self.udp_len.val() >> 8) | (self.udp_len.val() << 8);
        if self.ld3.val() {
            self.v3.d.next = self.v2.q.val();
            self.h3.d.next = self.x3.val().into();
            self.sum3.d.next = (bit_cast::<19, 17>(self.src_sum2.q.val()) + bit_cast::<19, 17>(self.dst_sum2.q.val()))
                + (bit_cast::<19, 16>(self.ip_len_q.val()) + 0xC511);
            self.hlen3.d.next = self.hlen2.q.val();
            self.pad3.d.next = self.pad2.q.val();
            self.tag3.d.next = self.tag2.q.val();
        }

        // ---- Stage 4: one's-complement fold (RFC 791) and the header ----
        // sum = lo16 + hi3 folds to at most 0x10006, so one end-around carry finishes it:
        // both candidates are computed and the carry picks one.
        self.fold_lo.next = bit_cast::<17, 16>(self.sum3.q.val().get_bits::<16>(0))
            + bit_cast::<17, 3>(self.sum3.q.val().get_bits::<3>(16));
        self.fold_hi.next = bit_cast::<17, 16>(self.sum3.q.val().get_bits::<16>(0))
            + bit_cast::<17, 3>(self.sum3.q.val().get_bits::<3>(16))
            + 1;
        self.csum.next = !self.fold_lo.val().get_bits::<16>(0);
        if self.fold_lo.val().get_bit(16) {
            self.csum.next = !self.fold_hi.val().get_bits::<16>(0);
        }
        self.x4.next = bit_cast::<704, 704>(self.h3.q.val()).into();
        self.x4.next.ip_csum = (self.csum.val() >> 8) | (self.csum.val() << 8);
        // The constant fields go in last (no register carries them).
        self.x4.next.eth_type = 0x0008.into();
        self.x4.next.ip_vihl = 0x45.into();
        self.x4.next.ip_frag = 0x0040.into();
        self.x4.next.ip_ttl = 0x40.into();
        self.x4.next.ip_proto = 0x11.into();
        self.x4.next.udp_dport = self.nums.val().udp_dport_roce;
        if self.ld4.val() {
            self.v4.d.next = self.v3.q.val();
            self.h4.d.next = self.x4.val().into();
            self.hlen4.d.next = self.hlen3.q.val();
            self.pad4.d.next = self.pad3.q.val();
            self.tag4.d.next = self.tag3.q.val();
        }

        if self.reset.val() {
            self.v1.d.next = false;
            self.v2.d.next = false;
            self.v3.d.next = false;
            self.v4.d.next = false;
        }
    }
}
