//! Ethernet/IPv4/UDP/BTH header construction, shared by request and ACK frames.
use crate::records::RoceHeader;
use rust_hdl::prelude::*;

/// Builds the first 54 bytes of a RoCEv2 frame plus up to 16 bytes of extension headers.
///
/// Inputs are numbers (MAC addresses as stored by [`rnic_contract::regs::MAC_LO`], byte 0 in
/// bits 7:0; IPv4 addresses first octet in bits 31:24); `ext` is already in wire byte order
/// and `ext_len` says how many of its bytes are present (0, 4 or 16). Outputs: the header
/// ([`RoceHeader`], wire order), its length in bytes (`hlen`) and BTH.PadCnt (`pad`) for a
/// payload of `plen` bytes. IPv4: no options, DF set, TTL 64, ID 0, header checksum per
/// RFC 791; UDP destination port 4791, checksum 0 (Annex A17.4.5.2); BTH: SE = M = 0,
/// TVer 0, FECN = BECN = 0.
///
/// Combinational (0 cycles): an adder tree of nine 16-bit terms and byte swaps.
#[derive(LogicBlock)]
pub struct HeaderBuilder {
    pub src_mac: Signal<In, Bits<48>>,
    pub src_ip: Signal<In, Bits<32>>,
    pub dest_mac: Signal<In, Bits<48>>,
    pub dest_ip: Signal<In, Bits<32>>,
    pub udp_sport: Signal<In, Bits<16>>,
    pub pkey: Signal<In, Bits<16>>,
    pub opcode: Signal<In, Bits<8>>,
    pub dest_qpn: Signal<In, Bits<24>>,
    pub ackreq: Signal<In, Bits<1>>,
    pub psn: Signal<In, Bits<24>>,
    pub ext: Signal<In, Bits<128>>,
    pub ext_len: Signal<In, Bits<5>>,
    pub plen: Signal<In, Bits<13>>,
    pub hdr: Signal<Out, RoceHeader>,
    pub hlen: Signal<Out, Bits<7>>,
    pub pad: Signal<Out, Bits<2>>,
    pad16: Signal<Local, Bits<16>>,
    ip_len: Signal<Local, Bits<16>>,
    udp_len: Signal<Local, Bits<16>>,
    csum_sum: Signal<Local, Bits<20>>,
    csum_fold: Signal<Local, Bits<20>>,
    csum_total: Signal<Local, Bits<20>>,
    csum: Signal<Local, Bits<16>>,
    zero_hdr: Constant<RoceHeader>,
}

impl Default for HeaderBuilder {
    fn default() -> Self {
        Self {
            src_mac: Default::default(),
            src_ip: Default::default(),
            dest_mac: Default::default(),
            dest_ip: Default::default(),
            udp_sport: Default::default(),
            pkey: Default::default(),
            opcode: Default::default(),
            dest_qpn: Default::default(),
            ackreq: Default::default(),
            psn: Default::default(),
            ext: Default::default(),
            ext_len: Default::default(),
            plen: Default::default(),
            hdr: Default::default(),
            hlen: Default::default(),
            pad: Default::default(),
            pad16: Default::default(),
            ip_len: Default::default(),
            udp_len: Default::default(),
            csum_sum: Default::default(),
            csum_fold: Default::default(),
            csum_total: Default::default(),
            csum: Default::default(),
            zero_hdr: Constant::new(RoceHeader::default()),
        }
    }
}

impl Logic for HeaderBuilder {
    #[hdl_gen]
    fn update(&mut self) {
        self.pad16.next = (0_u64 - bit_cast::<16, 13>(self.plen.val())) & 3;
        self.pad.next = self.pad16.val().get_bits::<2>(0);
        self.hlen.next = bit_cast::<7, 5>(self.ext_len.val()) + 54;
        // IP(20) + UDP(8) + BTH(12) + ICRC(4) = 44.
        self.ip_len.next = bit_cast::<16, 5>(self.ext_len.val())
            + bit_cast::<16, 13>(self.plen.val())
            + self.pad16.val()
            + 44;
        self.udp_len.next = self.ip_len.val() - 20;
        // IPv4 header checksum (RFC 791): one's-complement sum of the ten 16-bit words.
        self.csum_sum.next = bit_cast::<20, 16>(0x4500.into())
            + bit_cast::<20, 16>(self.ip_len.val())
            + bit_cast::<20, 16>(0x4000.into())
            + bit_cast::<20, 16>(0x4011.into())
            + bit_cast::<20, 16>(self.src_ip.val().get_bits::<16>(16))
            + bit_cast::<20, 16>(self.src_ip.val().get_bits::<16>(0))
            + bit_cast::<20, 16>(self.dest_ip.val().get_bits::<16>(16))
            + bit_cast::<20, 16>(self.dest_ip.val().get_bits::<16>(0));
        self.csum_fold.next = (self.csum_sum.val() & 0xFFFF) + (self.csum_sum.val() >> 16);
        self.csum_total.next = (self.csum_fold.val() & 0xFFFF) + (self.csum_fold.val() >> 16);
        self.csum.next = !self.csum_total.val().get_bits::<16>(0);

        self.hdr.next = self.zero_hdr.val();
        self.hdr.next.eth_dst = self.dest_mac.val();
        self.hdr.next.eth_src = self.src_mac.val();
        self.hdr.next.eth_type = 0x0008.into();
        self.hdr.next.ip_vihl = 0x45.into();
        self.hdr.next.ip_len = (self.ip_len.val() >> 8) | (self.ip_len.val() << 8);
        self.hdr.next.ip_frag = 0x0040.into();
        self.hdr.next.ip_ttl = 0x40.into();
        self.hdr.next.ip_proto = 0x11.into();
        self.hdr.next.ip_csum = (self.csum.val() >> 8) | (self.csum.val() << 8);
        self.hdr.next.ip_src = (bit_cast::<32, 8>(self.src_ip.val().get_bits::<8>(24)))
            | (bit_cast::<32, 8>(self.src_ip.val().get_bits::<8>(16)) << 8)
            | (bit_cast::<32, 8>(self.src_ip.val().get_bits::<8>(8)) << 16)
            | (bit_cast::<32, 8>(self.src_ip.val().get_bits::<8>(0)) << 24);
        self.hdr.next.ip_dst = (bit_cast::<32, 8>(self.dest_ip.val().get_bits::<8>(24)))
            | (bit_cast::<32, 8>(self.dest_ip.val().get_bits::<8>(16)) << 8)
            | (bit_cast::<32, 8>(self.dest_ip.val().get_bits::<8>(8)) << 16)
            | (bit_cast::<32, 8>(self.dest_ip.val().get_bits::<8>(0)) << 24);
        self.hdr.next.udp_sport = (self.udp_sport.val() >> 8) | (self.udp_sport.val() << 8);
        self.hdr.next.udp_dport = 0xB712.into();
        self.hdr.next.udp_len = (self.udp_len.val() >> 8) | (self.udp_len.val() << 8);
        self.hdr.next.bth_opcode = self.opcode.val();
        self.hdr.next.bth_flags = bit_cast::<8, 16>(self.pad16.val()) << 4;
        self.hdr.next.bth_pkey = (self.pkey.val() >> 8) | (self.pkey.val() << 8);
        self.hdr.next.bth_dqpn = (bit_cast::<24, 8>(self.dest_qpn.val().get_bits::<8>(16)))
            | (bit_cast::<24, 8>(self.dest_qpn.val().get_bits::<8>(8)) << 8)
            | (bit_cast::<24, 8>(self.dest_qpn.val().get_bits::<8>(0)) << 16);
        self.hdr.next.bth_ackreq = bit_cast::<8, 1>(self.ackreq.val()) << 7;
        self.hdr.next.bth_psn = (bit_cast::<24, 8>(self.psn.val().get_bits::<8>(16)))
            | (bit_cast::<24, 8>(self.psn.val().get_bits::<8>(8)) << 8)
            | (bit_cast::<24, 8>(self.psn.val().get_bits::<8>(0)) << 16);
        self.hdr.next.ext = self.ext.val();
    }
}
