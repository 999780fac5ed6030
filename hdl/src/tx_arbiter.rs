//! TX frame arbiter: ACK/NAK frames from the responder between request frames.
use crate::header_builder::HeaderBuilder;
use crate::numbers::Numbers;
use crate::records::AckJob;
use rust_hdl::prelude::*;

/// Merges request frames (from the assembler's gearbox) and ACK/NAK frames into one stream.
///
/// Arbitration is per frame: at a frame boundary a pending ACK goes first (ACKs are small and
/// unblock the peer's completions), else the next request frame passes through beat by beat.
/// An ACK frame is one beat: Ethernet/IPv4/UDP/BTH (opcode ACKNOWLEDGE, 0x11) and the AETH
/// (syndrome, MSN), 58 bytes before the ICRC.
///
/// ACK jobs leave the ACK FIFO (`ack_read`) into a [`HeaderBuilder`] pipeline as soon as it has
/// room; an ACK is pending once its frame is built, in registers. The output is a one-level
/// mux of registered data (the built ACK frame, or the request beat from the gearbox's output
/// register).
///
/// Timing: combinational pass-through of request beats (0 cycles); an ACK frame is ready 4
/// cycles after its job was read (header builder latency) and takes one cycle on the output.
#[derive(LogicBlock, Default)]
pub struct TxArbiter {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub src_mac: Signal<In, Bits<48>>,
    pub src_ip: Signal<In, Bits<32>>,
    pub req_valid: Signal<In, Bit>,
    pub req_ready: Signal<Out, Bit>,
    pub req_data: Signal<In, Bits<512>>,
    pub req_count: Signal<In, Bits<7>>,
    pub req_last: Signal<In, Bit>,
    pub ack_valid: Signal<In, Bit>,
    pub ack: Signal<In, AckJob>,
    pub ack_read: Signal<Out, Bit>,
    pub out_valid: Signal<Out, Bit>,
    pub out_ready: Signal<In, Bit>,
    pub out_data: Signal<Out, Bits<512>>,
    pub out_count: Signal<Out, Bits<7>>,
    pub out_last: Signal<Out, Bit>,
    in_req: DFF<Bit>,
    hb: HeaderBuilder,
    a_msn: Signal<Local, Bits<24>>,
    ack_hdr: Signal<Local, Bits<704>>,
    /// The contract's numbers ([`crate::numbers`]).
    nums: Numbers,
}

impl Logic for TxArbiter {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, in_req);
        clock!(self, clock, hb);
        self.hb.reset.next = self.reset.val();
        self.hb.in_valid.next = self.ack_valid.val();
        self.ack_read.next = self.ack_valid.val() & self.hb.in_ready.val();
        self.hb.tag_in.next = 0.into();
        self.hb.src_mac.next = self.src_mac.val();
        self.hb.src_ip.next = self.src_ip.val();
        self.hb.dest_mac.next = self.ack.val().dest_mac;
        self.hb.dest_ip.next = self.ack.val().dest_ip;
        self.hb.udp_sport.next = self.ack.val().udp_sport;
        self.hb.pkey.next = self.ack.val().pkey;
        self.hb.opcode.next = self.nums.val().op_acknowledge;
        self.hb.dest_qpn.next = self.ack.val().dest_qpn;
        self.hb.ackreq.next = 0.into();
        self.hb.se.next = 0.into();
        self.hb.psn.next = self.ack.val().psn;
        self.hb.plen.next = 0.into();
        self.hb.ext_len.next = 4.into();
        self.a_msn.next = self.ack.val().msn;
        // AETH: syndrome, then the MSN big-endian.
        self.hb.ext.next = bit_cast::<224, 8>(self.ack.val().syndrome)
            | (bit_cast::<224, 8>(self.a_msn.val().get_bits::<8>(16)) << 8)
            | (bit_cast::<224, 8>(self.a_msn.val().get_bits::<8>(8)) << 16)
            | (bit_cast::<224, 8>(self.a_msn.val().get_bits::<8>(0)) << 24);

        self.ack_hdr.next = self.hb.hdr.val().into();
        self.hb.out_ready.next = false;
        self.req_ready.next = false;
        self.out_valid.next = false;
        self.out_data.next = self.req_data.val();
        self.out_count.next = self.req_count.val();
        self.out_last.next = self.req_last.val();
        if !self.in_req.q.val() & self.hb.out_valid.val() {
            self.out_valid.next = true;
            self.out_data.next = self.ack_hdr.val().get_bits::<512>(0);
            self.out_count.next = self.hb.hlen.val();
            self.out_last.next = true;
            self.hb.out_ready.next = self.out_ready.val();
        } else {
            self.out_valid.next = self.req_valid.val();
            self.req_ready.next = self.out_ready.val();
            if self.req_valid.val() & self.out_ready.val() {
                self.in_req.d.next = !self.req_last.val();
            }
        }
        if self.reset.val() {
            self.in_req.d.next = false;
        }
    }
}
