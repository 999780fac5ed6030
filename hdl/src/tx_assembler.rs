//! TX request assembly: Ethernet/IPv4/UDP/BTH/RETH headers in front of DMA-read payload.
use crate::bswap::Bswap64;
use crate::header_builder::HeaderBuilder;
use crate::records::TxJob;
use crate::reset_fifo::ResetFifo;
use rust_hdl::prelude::*;

/// Where [`TxAssembler`] is with the packet whose chunks go into the gearbox. (Declared in
/// the order of the numbers the states had before they were named, so the encoding is the
/// same.)
#[derive(Copy, Clone, Debug, PartialEq, LogicState)]
pub enum AsmState {
    /// The first header chunk, or waiting for a header.
    Header,
    /// The second header chunk (a header longer than 64 bytes).
    Header2,
    /// The current payload piece's beats.
    Payload,
    /// The pad chunk (1–3 zero bytes, BTH.PadCnt).
    Pad,
    /// The idle cycle after every packet.
    Gap,
    /// Waiting for the packet's next payload piece (its piece record is not in yet).
    WaitPiece,
}

/// Builds request frames (without ICRC) from [`TxJob`]s and payload beats, into a
/// [`crate::gearbox::Gearbox`].
///
/// Jobs go from the job FIFO into the [`HeaderBuilder`] pipeline as soon as it has room
/// (`job_read`), ahead of their turn, so the next packet's header is ready when the current
/// packet ends. Per job: the header (54 bytes, +16 with a RETH, +4 with an ImmDt or AETH, +28
/// with an AtomicETH, +12 with an AETH and AtomicAckETH, +8 with a DETH) as one or two chunks, then the
/// payload: the job's pieces from the piece FIFO (`skip | len << 6 | last << 19`, one per
/// payload read job or inline piece, the last flagged; a packet gathered from several SGEs has
/// several), each `ceil((skip + len) / 64)` beats in the order the DMA read returns them (an
/// inline piece's from the inline-data FIFO, `pay_inline`), then the pad bytes
/// (0-3 zeros, BTH.PadCnt) that make the payload a multiple of 4 bytes. A job with `plen` 0
/// has no piece. IPv4 Total Length, the IPv4 header checksum and UDP Length are computed by the
/// header builder; UDP checksum is 0 (Annex A17.4.5.2 allows it for RoCEv2).
///
/// Each piece's geometry (beats, first and last beat lengths) is computed ahead, in two
/// registered stages behind the piece FIFO, so every chunk's skip, length and last flag come
/// from registers; the next piece is ready while the current one streams, so a piece starts
/// in the cycle after the previous one's last beat (or the header's last chunk).
///
/// Timing: a job read from the FIFO has its header ready 4 cycles later (header builder
/// latency); then one chunk per cycle while the gearbox is ready, and one idle cycle after each
/// packet: a packet of `n` payload beats costs `n + 2` cycles (+1 with a RETH, +1 with pad), the
/// same pace as before the header builder was pipelined. The idle cycle is kept on purpose: without
/// it a NIC sends MTU-256 packets faster than a peer's RX writer (one cycle per job plus the
/// payload beats) stores them, and the peer's packet buffer overflows (rtl_bringup,
/// `writes_of_every_size_class_at_every_path_mtu`).
#[derive(LogicBlock)]
pub struct TxAssembler {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub src_mac: Signal<In, Bits<48>>,
    pub src_ip: Signal<In, Bits<32>>,
    pub job_valid: Signal<In, Bit>,
    pub job: Signal<In, TxJob>,
    pub job_read: Signal<Out, Bit>,
    pub pay_valid: Signal<In, Bit>,
    pub pay_data: Signal<In, Bits<512>>,
    pub pay_ready: Signal<Out, Bit>,
    /// The payload piece being sent is inline data (bit 20 of its record): `pay_valid` /
    /// `pay_data` / `pay_ready` are then the inline-data FIFO's, not the DMA read's (a
    /// register, set as the piece starts; `top` multiplexes on it).
    pub pay_inline: Signal<Out, Bit>,
    /// Payload pieces (first-word fall-through FIFO): `skip | len << 6 | last << 19 | inline
    /// << 20`.
    pub pg_empty: Signal<In, Bit>,
    pub pg_data: Signal<In, Bits<21>>,
    pub pg_read: Signal<Out, Bit>,
    pub g_valid: Signal<Out, Bit>,
    pub g_ready: Signal<In, Bit>,
    pub g_data: Signal<Out, Bits<512>>,
    pub g_skip: Signal<Out, Bits<7>>,
    pub g_len: Signal<Out, Bits<7>>,
    pub g_last: Signal<Out, Bit>,
    /// The last packet of a new READ's or atomic's response of local QP `rsp_done_qpn` went
    /// into the gearbox (one-cycle pulse; [`TxJob`] `rsp_last`).
    pub rsp_done: Signal<Out, Bit>,
    pub rsp_done_qpn: Signal<Out, Bits<6>>,
    /// A UD SEND of local QP `ud_done_qpn` with PSN `ud_done_psn` went into the gearbox, its
    /// payload read from host memory (one-cycle pulse; [`TxJob`] `has_deth`): the WQE can
    /// complete.
    pub ud_done: Signal<Out, Bit>,
    pub ud_done_qpn: Signal<Out, Bits<6>>,
    pub ud_done_psn: Signal<Out, Bits<24>>,
    /// Room for 9 more `ud_done` reports (registered by the caller): no job is taken without
    /// it, so the 8 packets the tag FIFO holds can always report.
    pub ud_room: Signal<In, Bit>,
    /// The scheduler's go-back-N rewinds per QP, mod 2 ([`TxJob`] `epoch`): a request packet
    /// (`drop_ok`) whose stamp differs when it is about to leave is dropped (its payload beats
    /// are taken and discarded): the rewind resends it.
    pub req_epoch: Signal<In, Bits<64>>,
    /// A request packet was dropped that way (one-cycle pulse, at its last chunk).
    pub cnt_stale: Signal<Out, Bit>,
    /// Each job's `rsp_last | rsp_qpn << 1 | has_deth << 7 | psn << 8 | drop_ok << 32 | epoch
    /// << 33`, from when the header builder takes it until its packet's last chunk leaves
    /// (jobs and packets keep their order).
    tag_fifo: ResetFifo<Bits<34>, 3, 4, 1>,
    /// The tag FIFO's head packet is stale (registered each cycle: the head changes only
    /// after a packet's last chunk, and the idle cycle that follows every packet gives this
    /// a cycle before the next packet's first chunk).
    stale_r: DFF<Bit>,
    /// The packet being sent is dropped (latched at its first chunk).
    drop_r: DFF<Bit>,
    ep_sh: Signal<Local, Bits<64>>,
    /// This cycle's packet is dropped; the gearbox's ready, or a dropped packet's.
    dr: Signal<Local, Bit>,
    rdy: Signal<Local, Bit>,
    gv: Signal<Local, Bit>,
    state: DFF<AsmState>,
    // The payload beat being sent: skip, length, last; beats left; the last beat's length.
    bs: DFF<Bits<6>>,
    bl: DFF<Bits<7>>,
    blast: DFF<Bit>,
    left: DFF<Bits<8>>,
    last_len: DFF<Bits<7>>,
    pad: DFF<Bits<2>>,
    /// The payload piece being sent ends the packet's payload / is inline data.
    p_last: DFF<Bit>,
    p_inl: DFF<Bit>,
    // Piece geometry, stage A (as read: skip, length, last, end = skip + length) and stage B
    // (first beat's length, beats, single beat, last beat's length).
    qa_v: DFF<Bit>,
    qa_skip: DFF<Bits<6>>,
    qa_len: DFF<Bits<13>>,
    qa_last: DFF<Bit>,
    qa_inl: DFF<Bit>,
    qa_end: DFF<Bits<14>>,
    qb_v: DFF<Bit>,
    qb_skip: DFF<Bits<6>>,
    qb_first: DFF<Bits<7>>,
    qb_beats: DFF<Bits<8>>,
    qb_single: DFF<Bit>,
    qb_last_len: DFF<Bits<7>>,
    qb_last: DFF<Bit>,
    qb_inl: DFF<Bit>,
    hb: HeaderBuilder,
    j_va: Signal<Local, Bits<64>>,
    j_rkey: Signal<Local, Bits<32>>,
    j_len: Signal<Local, Bits<32>>,
    j_plen: Signal<Local, Bits<13>>,
    j_ext4: Signal<Local, Bits<32>>,
    reth: Signal<Local, Bits<128>>,
    j_swap: Signal<Local, Bits<64>>,
    j_cmp: Signal<Local, Bits<64>>,
    swap_be: Signal<Local, Bits<64>>,
    cmp_be: Signal<Local, Bits<64>>,
    va_bswap: Bswap64,
    swap_bswap: Bswap64,
    cmp_bswap: Bswap64,
    hdr_bits: Signal<Local, Bits<704>>,
    t_tag: Signal<Local, Bits<48>>,
    t_plen: Signal<Local, Bits<13>>,
    pg_skip: Signal<Local, Bits<6>>,
    pg_len: Signal<Local, Bits<13>>,
    qa_beats: Signal<Local, Bits<14>>,
    take: Signal<Local, Bit>,
    a_to_b: Signal<Local, Bit>,
    t_empty: Signal<Local, Bit>,
    h_len: Signal<Local, Bits<7>>,
    h_two: Signal<Local, Bit>,
    pop: Signal<Local, Bit>,
}

impl Default for TxAssembler {
    fn default() -> Self {
        Self {
            clock: Default::default(),
            reset: Default::default(),
            src_mac: Default::default(),
            src_ip: Default::default(),
            job_valid: Default::default(),
            job: Default::default(),
            job_read: Default::default(),
            pay_valid: Default::default(),
            pay_data: Default::default(),
            pay_ready: Default::default(),
            pg_empty: Default::default(),
            pg_data: Default::default(),
            pg_read: Default::default(),
            g_valid: Default::default(),
            g_ready: Default::default(),
            g_data: Default::default(),
            g_skip: Default::default(),
            g_len: Default::default(),
            g_last: Default::default(),
            rsp_done: Default::default(),
            rsp_done_qpn: Default::default(),
            ud_done: Default::default(),
            ud_done_qpn: Default::default(),
            ud_done_psn: Default::default(),
            ud_room: Default::default(),
            req_epoch: Default::default(),
            cnt_stale: Default::default(),
            tag_fifo: Default::default(),
            stale_r: Default::default(),
            drop_r: Default::default(),
            ep_sh: Default::default(),
            dr: Default::default(),
            rdy: Default::default(),
            gv: Default::default(),
            state: Default::default(),
            bs: Default::default(),
            bl: Default::default(),
            blast: Default::default(),
            left: Default::default(),
            last_len: Default::default(),
            pad: Default::default(),
            p_last: Default::default(),
            p_inl: Default::default(),
            pay_inline: Default::default(),
            qa_v: Default::default(),
            qa_skip: Default::default(),
            qa_len: Default::default(),
            qa_last: Default::default(),
            qa_inl: Default::default(),
            qa_end: Default::default(),
            qb_v: Default::default(),
            qb_skip: Default::default(),
            qb_first: Default::default(),
            qb_beats: Default::default(),
            qb_single: Default::default(),
            qb_last_len: Default::default(),
            qb_last: Default::default(),
            qb_inl: Default::default(),
            hb: Default::default(),
            j_va: Default::default(),
            j_rkey: Default::default(),
            j_len: Default::default(),
            j_plen: Default::default(),
            j_ext4: Default::default(),
            reth: Default::default(),
            j_swap: Default::default(),
            j_cmp: Default::default(),
            swap_be: Default::default(),
            cmp_be: Default::default(),
            va_bswap: Default::default(),
            swap_bswap: Default::default(),
            cmp_bswap: Default::default(),
            hdr_bits: Default::default(),
            t_tag: Default::default(),
            t_plen: Default::default(),
            pg_skip: Default::default(),
            pg_len: Default::default(),
            qa_beats: Default::default(),
            take: Default::default(),
            a_to_b: Default::default(),
            t_empty: Default::default(),
            h_len: Default::default(),
            h_two: Default::default(),
            pop: Default::default(),
        }
    }
}

impl Logic for TxAssembler {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            state,
            stale_r,
            drop_r,
            bs,
            bl,
            blast,
            left,
            last_len,
            pad,
            p_last,
            p_inl,
            qa_v,
            qa_skip,
            qa_len,
            qa_last,
            qa_inl,
            qa_end,
            qb_v,
            qb_skip,
            qb_first,
            qb_beats,
            qb_single,
            qb_last_len,
            qb_last,
            qb_inl
        );
        clock!(self, clock, hb, tag_fifo);
        self.tag_fifo.reset.next = self.reset.val();
        self.hb.reset.next = self.reset.val();
        // ---- Jobs into the header builder, ahead of their turn ----
        self.hb.in_valid.next = self.job_valid.val() & !self.tag_fifo.full.val() & self.ud_room.val();
        self.job_read.next =
            self.job_valid.val() & self.hb.in_ready.val() & !self.tag_fifo.full.val() & self.ud_room.val();
        self.tag_fifo.write.next = self.job_read.val();
        self.tag_fifo.data_in.next = bit_cast::<34, 1>(self.job.val().rsp_last)
            | (bit_cast::<34, 6>(self.job.val().rsp_qpn) << 1)
            | (bit_cast::<34, 1>(self.job.val().has_deth) << 7)
            | (bit_cast::<34, 24>(self.job.val().psn) << 8)
            | (bit_cast::<34, 1>(self.job.val().drop_ok) << 32)
            | (bit_cast::<34, 1>(self.job.val().epoch) << 33);
        self.hb.src_mac.next = self.src_mac.val();
        self.hb.src_ip.next = self.src_ip.val();
        self.hb.dest_mac.next = self.job.val().dest_mac;
        self.hb.dest_ip.next = self.job.val().dest_ip;
        self.hb.udp_sport.next = self.job.val().udp_sport;
        self.hb.pkey.next = self.job.val().pkey;
        self.hb.opcode.next = self.job.val().opcode;
        self.hb.dest_qpn.next = self.job.val().dest_qpn;
        self.hb.ackreq.next = self.job.val().ackreq;
        self.hb.se.next = self.job.val().se;
        self.hb.psn.next = self.job.val().psn;
        self.hb.plen.next = self.job.val().plen;
        self.hb.ext_len.next = 0.into();
        self.hb.ext.next = 0.into();
        self.j_ext4.next = self.job.val().ext4;
        if self.job.val().has_ext4.any() {
            // ImmDt or AETH alone (already in wire order).
            self.hb.ext_len.next = 4.into();
            self.hb.ext.next = bit_cast::<224, 32>(self.j_ext4.val());
        }
        self.j_va.next = self.job.val().reth_va;
        self.j_rkey.next = self.job.val().reth_rkey;
        self.j_len.next = self.job.val().reth_len;
        // RETH: VA (8 bytes), R_Key (4), DMA Length (4), all big-endian.
        self.va_bswap.x.next = self.j_va.val();
        self.reth.next = bit_cast::<128, 64>(self.va_bswap.y.val())
            | (bit_cast::<128, 8>(self.j_rkey.val().get_bits::<8>(24)) << 64)
            | (bit_cast::<128, 8>(self.j_rkey.val().get_bits::<8>(16)) << 72)
            | (bit_cast::<128, 8>(self.j_rkey.val().get_bits::<8>(8)) << 80)
            | (bit_cast::<128, 8>(self.j_rkey.val().get_bits::<8>(0)) << 88)
            | (bit_cast::<128, 8>(self.j_len.val().get_bits::<8>(24)) << 96)
            | (bit_cast::<128, 8>(self.j_len.val().get_bits::<8>(16)) << 104)
            | (bit_cast::<128, 8>(self.j_len.val().get_bits::<8>(8)) << 112)
            | (bit_cast::<128, 8>(self.j_len.val().get_bits::<8>(0)) << 120);
        if self.job.val().has_reth.any() {
            self.hb.ext_len.next = 16.into();
            self.hb.ext.next = bit_cast::<224, 128>(self.reth.val());
            if self.job.val().has_ext4.any() {
                // RDMA WRITE ONLY with immediate: the ImmDt follows the RETH.
                self.hb.ext_len.next = 20.into();
                self.hb.ext.next =
                    bit_cast::<224, 128>(self.reth.val()) | (bit_cast::<224, 32>(self.j_ext4.val()) << 128);
            }
        }
        // Atomic operands, big-endian on the wire.
        self.j_swap.next = self.job.val().at_swap;
        self.j_cmp.next = self.job.val().at_cmp;
        self.swap_bswap.x.next = self.j_swap.val();
        self.swap_be.next = self.swap_bswap.y.val();
        self.cmp_bswap.x.next = self.j_cmp.val();
        self.cmp_be.next = self.cmp_bswap.y.val();
        if self.job.val().has_atomic_eth.any() {
            // AtomicETH: VA, R_Key (the RETH's first 12 bytes), Swap/Add Data, Compare Data.
            self.hb.ext_len.next = 28.into();
            self.hb.ext.next = bit_cast::<224, 96>(self.reth.val().get_bits::<96>(0))
                | (bit_cast::<224, 64>(self.swap_be.val()) << 96)
                | (bit_cast::<224, 64>(self.cmp_be.val()) << 160);
        }
        if self.job.val().has_deth.any() {
            // UD: DETH (Q_Key, reserved byte, source QP; IBTA Vol 1 9.3.3), then the ImmDt.
            // The Q_Key's bytes are the RETH's R_Key bytes, already in wire order.
            self.hb.ext_len.next = 8.into();
            self.hb.ext.next = bit_cast::<224, 32>(self.reth.val().get_bits::<32>(64))
                | (bit_cast::<224, 6>(self.job.val().rsp_qpn) << 56);
            if self.job.val().has_ext4.any() {
                self.hb.ext_len.next = 12.into();
                self.hb.ext.next = bit_cast::<224, 32>(self.reth.val().get_bits::<32>(64))
                    | (bit_cast::<224, 6>(self.job.val().rsp_qpn) << 56)
                    | (bit_cast::<224, 32>(self.j_ext4.val()) << 64);
            }
        }
        if self.job.val().has_atomic_ack.any() {
            // AETH, then AtomicAckETH: the original remote data.
            self.hb.ext_len.next = 12.into();
            self.hb.ext.next = bit_cast::<224, 32>(self.j_ext4.val()) | (bit_cast::<224, 64>(self.swap_be.val()) << 32);
        }
        // Tag: plen (a packet without payload has no piece).
        self.j_plen.next = self.job.val().plen;
        self.hb.tag_in.next = bit_cast::<48, 13>(self.j_plen.val());

        // ---- The header at the builder's output ----
        self.hdr_bits.next = self.hb.hdr.val().into();
        self.t_tag.next = self.hb.tag_out.val();
        self.t_plen.next = self.t_tag.val().get_bits::<13>(0);

        self.take.next = false;
        self.t_empty.next = self.t_plen.val() == 0;
        self.h_len.next = self.hb.hlen.val();
        self.h_two.next = self.h_len.val() > 64;

        // ---- Chunks into the gearbox ----
        // A stale request packet (see `req_epoch`) goes through the states as if the gearbox
        // were always ready, and nothing of it reaches the gearbox.
        self.ep_sh.next = self.req_epoch.val() >> bit_cast::<64, 6>(self.tag_fifo.data_out.val().get_bits::<6>(1));
        self.stale_r.d.next = self.tag_fifo.data_out.val().get_bit(32)
            & !self.tag_fifo.empty.val()
            & (self.ep_sh.val().get_bit(0) != self.tag_fifo.data_out.val().get_bit(33));
        self.dr.next = self.drop_r.q.val();
        if self.state.q.val() == AsmState::Header {
            self.dr.next = self.stale_r.q.val();
            self.drop_r.d.next = self.stale_r.q.val();
        }
        self.rdy.next = self.g_ready.val() | self.dr.val();
        self.hb.out_ready.next = false;
        self.pop.next = false;
        self.pay_ready.next = false;
        self.pay_inline.next = self.p_inl.q.val();
        self.gv.next = false;
        self.g_data.next = self.hdr_bits.val().get_bits::<512>(0);
        self.g_skip.next = 0.into();
        self.g_len.next = 64.into();
        self.g_last.next = false;
        match self.state.q.val() {
            AsmState::Header => {
                self.gv.next = self.hb.out_valid.val();
                if !self.h_two.val() {
                    self.g_len.next = self.h_len.val();
                }
                self.g_last.next = self.t_empty.val() & !self.h_two.val();
                if self.hb.out_valid.val() & self.rdy.val() {
                    if self.h_two.val() {
                        self.state.d.next = AsmState::Header2;
                    } else {
                        self.pop.next = true;
                    }
                }
            }
            AsmState::Header2 => {
                self.gv.next = true;
                self.g_data.next = bit_cast::<512, 192>(self.hdr_bits.val().get_bits::<192>(512));
                self.g_len.next = self.h_len.val() - 64;
                self.g_last.next = self.t_empty.val();
                if self.rdy.val() {
                    self.pop.next = true;
                }
            }
            AsmState::Payload => {
                self.gv.next = self.pay_valid.val();
                self.pay_ready.next = self.rdy.val();
                self.g_data.next = self.pay_data.val();
                self.g_skip.next = bit_cast::<7, 6>(self.bs.q.val());
                self.g_len.next = self.bl.q.val();
                self.g_last.next = self.blast.q.val() & self.p_last.q.val() & (self.pad.q.val() == 0);
                if self.pay_valid.val() & self.rdy.val() {
                    self.bs.d.next = 0.into();
                    self.left.d.next = self.left.q.val() - 1;
                    self.blast.d.next = self.left.q.val() == 2;
                    self.bl.d.next = 64.into();
                    if self.left.q.val() == 2 {
                        self.bl.d.next = self.last_len.q.val();
                    }
                    if self.blast.q.val() {
                        if !self.p_last.q.val() {
                            // The packet's next piece (from another SGE).
                            self.take.next = self.qb_v.q.val();
                            if !self.qb_v.q.val() {
                                self.state.d.next = AsmState::WaitPiece;
                            }
                        } else if self.pad.q.val() != 0 {
                            self.state.d.next = AsmState::Pad;
                        } else {
                            self.state.d.next = AsmState::Gap;
                        }
                    }
                }
            }
            AsmState::WaitPiece => {
                if self.qb_v.q.val() {
                    self.take.next = true;
                    self.state.d.next = AsmState::Payload;
                }
            }
            AsmState::Pad => {
                self.gv.next = true;
                self.g_data.next = 0.into();
                self.g_len.next = bit_cast::<7, 2>(self.pad.q.val());
                self.g_last.next = true;
                if self.rdy.val() {
                    self.state.d.next = AsmState::Gap;
                }
            }
            AsmState::Gap => {
                self.state.d.next = AsmState::Header;
            }
        }
        self.g_valid.next = self.gv.val() & !self.dr.val();
        // A packet's last chunk went (or was dropped): its tag leaves too.
        self.tag_fifo.read.next = self.gv.val() & self.rdy.val() & self.g_last.val();
        self.cnt_stale.next = self.tag_fifo.read.val() & self.dr.val();
        self.rsp_done.next = self.tag_fifo.read.val() & self.tag_fifo.data_out.val().get_bit(0);
        self.rsp_done_qpn.next = self.tag_fifo.data_out.val().get_bits::<6>(1);
        self.ud_done.next = self.tag_fifo.read.val() & self.tag_fifo.data_out.val().get_bit(7);
        self.ud_done_qpn.next = self.tag_fifo.data_out.val().get_bits::<6>(1);
        self.ud_done_psn.next = self.tag_fifo.data_out.val().get_bits::<24>(8);
        // The header has gone: its payload's first piece follows.
        if self.pop.val() {
            self.hb.out_ready.next = true;
            self.pad.d.next = self.hb.pad.val();
            if self.t_empty.val() {
                self.state.d.next = AsmState::Gap;
            } else if self.qb_v.q.val() {
                self.take.next = true;
                self.state.d.next = AsmState::Payload;
            } else {
                self.state.d.next = AsmState::WaitPiece;
            }
        }
        // A piece starts: its geometry from stage B.
        if self.take.val() {
            self.qb_v.d.next = false;
            self.bs.d.next = self.qb_skip.q.val();
            self.left.d.next = self.qb_beats.q.val();
            self.blast.d.next = self.qb_single.q.val();
            self.bl.d.next = self.qb_first.q.val();
            self.last_len.d.next = self.qb_last_len.q.val();
            self.p_last.d.next = self.qb_last.q.val();
            self.p_inl.d.next = self.qb_inl.q.val();
        }
        // ---- Payload pieces, sized ahead in two stages ----
        // Stage B takes stage A's piece when empty or in the cycle its own piece starts, and
        // stage A reads the FIFO when empty or in the cycle it hands over, so pieces of one
        // beat follow each other without a gap.
        self.a_to_b.next = self.qa_v.q.val() & (!self.qb_v.q.val() | self.take.val());
        self.pg_read.next = !self.pg_empty.val() & (!self.qa_v.q.val() | self.a_to_b.val());
        self.pg_skip.next = self.pg_data.val().get_bits::<6>(0);
        self.pg_len.next = self.pg_data.val().get_bits::<13>(6);
        if self.pg_read.val() {
            self.qa_v.d.next = true;
            self.qa_skip.d.next = self.pg_skip.val();
            self.qa_len.d.next = self.pg_len.val();
            self.qa_last.d.next = self.pg_data.val().get_bit(19);
            self.qa_inl.d.next = self.pg_data.val().get_bit(20);
            self.qa_end.d.next = bit_cast::<14, 6>(self.pg_skip.val()) + bit_cast::<14, 13>(self.pg_len.val());
        }
        self.qa_beats.next = (self.qa_end.q.val() + 63) >> 6;
        if self.a_to_b.val() {
            self.qa_v.d.next = self.pg_read.val();
            self.qb_v.d.next = true;
            self.qb_skip.d.next = self.qa_skip.q.val();
            self.qb_beats.d.next = self.qa_beats.val().get_bits::<8>(0);
            self.qb_single.d.next = self.qa_end.q.val() <= 64;
            // A single beat carries the whole piece; otherwise the first carries 64 - skip.
            self.qb_first.d.next = 64_u64 - bit_cast::<7, 6>(self.qa_skip.q.val());
            if self.qa_end.q.val() <= 64 {
                self.qb_first.d.next = self.qa_len.q.val().get_bits::<7>(0);
            }
            self.qb_last_len.d.next = bit_cast::<7, 6>(self.qa_end.q.val().get_bits::<6>(0));
            if self.qa_end.q.val().get_bits::<6>(0) == 0 {
                self.qb_last_len.d.next = 64.into();
            }
            self.qb_last.d.next = self.qa_last.q.val();
            self.qb_inl.d.next = self.qa_inl.q.val();
        }
        if self.reset.val() {
            self.state.d.next = AsmState::Header;
            self.qa_v.d.next = false;
            self.qb_v.d.next = false;
        }
    }
}
