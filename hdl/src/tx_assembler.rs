//! TX request assembly: Ethernet/IPv4/UDP/BTH/RETH headers in front of DMA-read payload.
use crate::header_builder::HeaderBuilder;
use crate::records::TxJob;
use rust_hdl::prelude::*;

/// Builds request frames (without ICRC) from [`TxJob`]s and payload beats, into a
/// [`crate::gearbox::Gearbox`].
///
/// Per job: the header (54 bytes, 70 with a RETH) is built in the cycle the job is taken and
/// sent as one or two chunks, then the payload beats (in the order the DMA read returns them,
/// `ceil((pay_skip + plen) / 64)` beats), then the pad bytes (0-3 zeros, BTH.PadCnt) that make
/// the payload a multiple of 4 bytes. IPv4 Total Length, the IPv4 header checksum and UDP
/// Length are computed here; UDP checksum is 0 (Annex A17.4.5.2 allows it for RoCEv2).
///
/// Timing: 1 cycle to take a job, then one chunk per cycle while the gearbox is ready: a
/// packet of `n` payload beats costs `n + 1` cycles (+1 with a RETH, +1 with pad).
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
    pub g_valid: Signal<Out, Bit>,
    pub g_ready: Signal<In, Bit>,
    pub g_data: Signal<Out, Bits<512>>,
    pub g_skip: Signal<Out, Bits<7>>,
    pub g_len: Signal<Out, Bits<7>>,
    pub g_last: Signal<Out, Bit>,
    state: DFF<Bits<3>>,
    hdr: DFF<Bits<640>>,
    hlen: DFF<Bits<7>>,
    pad: DFF<Bits<2>>,
    rem: DFF<Bits<13>>,
    skip: DFF<Bits<6>>,
    first: DFF<Bit>,
    hb: HeaderBuilder,
    beat_skip: Signal<Local, Bits<7>>,
    beat_len: Signal<Local, Bits<13>>,
    j_va: Signal<Local, Bits<64>>,
    j_rkey: Signal<Local, Bits<32>>,
    j_len: Signal<Local, Bits<32>>,
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
            g_valid: Default::default(),
            g_ready: Default::default(),
            g_data: Default::default(),
            g_skip: Default::default(),
            g_len: Default::default(),
            g_last: Default::default(),
            state: Default::default(),
            hdr: Default::default(),
            hlen: Default::default(),
            pad: Default::default(),
            rem: Default::default(),
            skip: Default::default(),
            first: Default::default(),
            hb: Default::default(),
            beat_skip: Default::default(),
            beat_len: Default::default(),
            j_len: Default::default(),
            j_rkey: Default::default(),
            j_va: Default::default(),
        }
    }
}

// States.
// 0 idle, 1 first header chunk, 2 second header chunk, 3 payload, 4 pad.

impl Logic for TxAssembler {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, state, hdr, hlen, pad, rem, skip, first);
        // Header of the job at the FIFO head.
        self.hb.src_mac.next = self.src_mac.val();
        self.hb.src_ip.next = self.src_ip.val();
        self.hb.dest_mac.next = self.job.val().dest_mac;
        self.hb.dest_ip.next = self.job.val().dest_ip;
        self.hb.udp_sport.next = self.job.val().udp_sport;
        self.hb.pkey.next = self.job.val().pkey;
        self.hb.opcode.next = self.job.val().opcode;
        self.hb.dest_qpn.next = self.job.val().dest_qpn;
        self.hb.ackreq.next = self.job.val().ackreq;
        self.hb.psn.next = self.job.val().psn;
        self.hb.plen.next = self.job.val().plen;
        self.hb.ext_len.next = 0.into();
        self.hb.ext.next = 0.into();
        self.j_va.next = self.job.val().reth_va;
        self.j_rkey.next = self.job.val().reth_rkey;
        self.j_len.next = self.job.val().reth_len;
        if self.job.val().has_reth.any() {
            // RETH: VA (8 bytes), R_Key (4), DMA Length (4), all big-endian.
            self.hb.ext_len.next = 16.into();
            self.hb.ext.next = (bit_cast::<128, 8>(self.j_va.val().get_bits::<8>(56)))
                | (bit_cast::<128, 8>(self.j_va.val().get_bits::<8>(48)) << 8)
                | (bit_cast::<128, 8>(self.j_va.val().get_bits::<8>(40)) << 16)
                | (bit_cast::<128, 8>(self.j_va.val().get_bits::<8>(32)) << 24)
                | (bit_cast::<128, 8>(self.j_va.val().get_bits::<8>(24)) << 32)
                | (bit_cast::<128, 8>(self.j_va.val().get_bits::<8>(16)) << 40)
                | (bit_cast::<128, 8>(self.j_va.val().get_bits::<8>(8)) << 48)
                | (bit_cast::<128, 8>(self.j_va.val().get_bits::<8>(0)) << 56)
                | (bit_cast::<128, 8>(self.j_rkey.val().get_bits::<8>(24)) << 64)
                | (bit_cast::<128, 8>(self.j_rkey.val().get_bits::<8>(16)) << 72)
                | (bit_cast::<128, 8>(self.j_rkey.val().get_bits::<8>(8)) << 80)
                | (bit_cast::<128, 8>(self.j_rkey.val().get_bits::<8>(0)) << 88)
                | (bit_cast::<128, 8>(self.j_len.val().get_bits::<8>(24)) << 96)
                | (bit_cast::<128, 8>(self.j_len.val().get_bits::<8>(16)) << 104)
                | (bit_cast::<128, 8>(self.j_len.val().get_bits::<8>(8)) << 112)
                | (bit_cast::<128, 8>(self.j_len.val().get_bits::<8>(0)) << 120);
        }

        // Chunk sequencing.
        self.job_read.next = false;
        self.pay_ready.next = false;
        self.g_valid.next = false;
        self.g_data.next = self.hdr.q.val().get_bits::<512>(0);
        self.g_skip.next = 0.into();
        self.g_len.next = 64.into();
        self.g_last.next = false;
        self.beat_skip.next = 0.into();
        if self.first.q.val() {
            self.beat_skip.next = bit_cast::<7, 6>(self.skip.q.val());
        }
        self.beat_len.next = 64.into();
        if self.rem.q.val() < (64_u64 - bit_cast::<13, 7>(self.beat_skip.val())) {
            self.beat_len.next = self.rem.q.val();
        } else {
            self.beat_len.next = 64_u64 - bit_cast::<13, 7>(self.beat_skip.val());
        }
        match self.state.q.val().index() {
            0 => {
                if self.job_valid.val() {
                    self.job_read.next = true;
                    self.hdr.d.next = self.hb.hdr.val().into();
                    self.hlen.d.next = self.hb.hlen.val();
                    self.pad.d.next = self.hb.pad.val();
                    self.rem.d.next = self.job.val().plen;
                    self.skip.d.next = self.job.val().pay_skip;
                    self.first.d.next = true;
                    self.state.d.next = 1.into();
                }
            }
            1 => {
                self.g_valid.next = true;
                if self.hlen.q.val() < 64 {
                    self.g_len.next = self.hlen.q.val();
                }
                self.g_last.next = (self.rem.q.val() == 0) & (self.hlen.q.val() <= 64);
                if self.g_ready.val() {
                    if self.hlen.q.val() > 64 {
                        self.state.d.next = 2.into();
                    } else if self.rem.q.val() != 0 {
                        self.state.d.next = 3.into();
                    } else {
                        self.state.d.next = 0.into();
                    }
                }
            }
            2 => {
                self.g_valid.next = true;
                self.g_data.next = bit_cast::<512, 128>(self.hdr.q.val().get_bits::<128>(512));
                self.g_len.next = self.hlen.q.val() - 64;
                self.g_last.next = self.rem.q.val() == 0;
                if self.g_ready.val() {
                    if self.rem.q.val() != 0 {
                        self.state.d.next = 3.into();
                    } else {
                        self.state.d.next = 0.into();
                    }
                }
            }
            3 => {
                self.g_valid.next = self.pay_valid.val();
                self.pay_ready.next = self.g_ready.val();
                self.g_data.next = self.pay_data.val();
                self.g_skip.next = self.beat_skip.val();
                self.g_len.next = self.beat_len.val().get_bits::<7>(0);
                self.g_last.next = (self.rem.q.val() == self.beat_len.val()) & (self.pad.q.val() == 0);
                if self.pay_valid.val() & self.g_ready.val() {
                    self.rem.d.next = self.rem.q.val() - self.beat_len.val();
                    self.first.d.next = false;
                    if self.rem.q.val() == self.beat_len.val() {
                        if self.pad.q.val() != 0 {
                            self.state.d.next = 4.into();
                        } else {
                            self.state.d.next = 0.into();
                        }
                    }
                }
            }
            4 => {
                self.g_valid.next = true;
                self.g_data.next = 0.into();
                self.g_len.next = bit_cast::<7, 2>(self.pad.q.val());
                self.g_last.next = true;
                if self.g_ready.val() {
                    self.state.d.next = 0.into();
                }
            }
            _ => {
                self.state.d.next = 0.into();
            }
        }
        if self.reset.val() {
            self.state.d.next = 0.into();
        }
    }
}
