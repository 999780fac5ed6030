//! The TX assembler's test bench (`tx_assembler_tb.rs`): the DUT with its gearbox, the job and
//! payload feeds, the frame capture and the reference frames it compares with.
#![allow(dead_code)]

use crate::harness::codec::{self, assert_frame_eq, AnyPacket};
use crate::harness::{pack_fields, Dut, Port, Rng};
use rnic_firmware_tests::wire::{AtomicPacketRepr, ImmDtRepr, RethRepr, RocePacketRepr};
use rnic_hdl::gearbox::Gearbox;
use rnic_hdl::records::TxJob;
use rnic_hdl::tx_assembler::TxAssembler;
use rust_hdl::prelude::*;
use std::collections::VecDeque;

/// The piece FIFO, the assembler and its gearbox, as `top.rs` wires them (`pg_fifo`, `asm`,
/// `tx_gb`); the test drives the FIFO's write side. `pg_read`, `g_fire` (a chunk enters the
/// gearbox) and `g_last` (that chunk ends its frame) are monitors of internal signals.
#[derive(LogicBlock, Default)]
pub struct AsmTop {
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
    pub pg_write: Signal<In, Bit>,
    pub pg_data: Signal<In, Bits<21>>,
    pub il_write: Signal<In, Bit>,
    pub il_data: Signal<In, Bits<512>>,
    pub il_full: Signal<Out, Bit>,
    pub il_read: Signal<Out, Bit>,
    pub il_overflow: Signal<Out, Bit>,
    pub il_underflow: Signal<Out, Bit>,
    pub pg_full: Signal<Out, Bit>,
    pub pg_almost_full: Signal<Out, Bit>,
    pub pg_overflow: Signal<Out, Bit>,
    pub pg_underflow: Signal<Out, Bit>,
    pub pg_read: Signal<Out, Bit>,
    pub g_fire: Signal<Out, Bit>,
    pub g_last: Signal<Out, Bit>,
    pub out_valid: Signal<Out, Bit>,
    pub out_ready: Signal<In, Bit>,
    pub out_data: Signal<Out, Bits<512>>,
    pub out_count: Signal<Out, Bits<7>>,
    pub out_last: Signal<Out, Bit>,
    pub ud_room: Signal<In, Bit>,
    pub ud_done: Signal<Out, Bit>,
    pub ud_done_qpn: Signal<Out, Bits<6>>,
    pub ud_done_psn: Signal<Out, Bits<24>>,
    pub req_epoch: Signal<In, Bits<64>>,
    pub cnt_stale: Signal<Out, Bit>,
    pub pg_fifo: SynchronousFIFO<Bits<21>, 4, 5, 1>,
    pub il_fifo: SynchronousFIFO<Bits<512>, 4, 5, 4>,
    pub il_v: DFF<Bit>,
    pub il_d: DFF<Bits<512>>,
    pub il_take: Signal<Local, Bit>,
    pub il_rd: Signal<Local, Bit>,
    pub assembler: TxAssembler,
    pub packer: Gearbox,
}

impl Logic for AsmTop {
    #[hdl_gen]
    fn update(&mut self) {
        clock!(self, clock, pg_fifo, il_fifo, assembler, packer);
        dff_setup!(self, clock, il_v, il_d);
        self.assembler.reset.next = self.reset.val();
        self.packer.reset.next = self.reset.val();
        self.assembler.src_mac.next = self.src_mac.val();
        self.assembler.src_ip.next = self.src_ip.val();
        self.assembler.job_valid.next = self.job_valid.val();
        self.assembler.job.next = self.job.val();
        self.job_read.next = self.assembler.job_read.val();
        // As in `top.rs`: an inline piece's beats from the inline-data FIFO, the others from
        // the DMA read (`pay_*`).
        self.assembler.pay_valid.next = self.pay_valid.val();
        self.assembler.pay_data.next = self.pay_data.val();
        // (Through a register stage, `il_v`/`il_d`, refilled in the cycle it is taken.)
        self.il_take.next = self.assembler.pay_inline.val() & self.assembler.pay_ready.val() & self.il_v.q.val();
        self.il_rd.next = !self.il_fifo.empty.val() & (!self.il_v.q.val() | self.il_take.val());
        self.il_fifo.read.next = self.il_rd.val();
        self.il_v.d.next = self.il_rd.val() | (self.il_v.q.val() & !self.il_take.val());
        if self.il_rd.val() {
            self.il_d.d.next = self.il_fifo.data_out.val();
        }
        if self.reset.val() {
            self.il_v.d.next = false;
        }
        if self.assembler.pay_inline.val() {
            self.assembler.pay_valid.next = self.il_v.q.val();
            self.assembler.pay_data.next = self.il_d.q.val();
        }
        self.pay_ready.next = self.assembler.pay_ready.val() & !self.assembler.pay_inline.val();
        self.il_fifo.write.next = self.il_write.val();
        self.il_fifo.data_in.next = self.il_data.val();
        self.il_full.next = self.il_fifo.full.val();
        self.il_read.next = self.il_take.val();
        self.il_overflow.next = self.il_fifo.overflow.val();
        self.il_underflow.next = self.il_fifo.underflow.val();
        self.pg_fifo.write.next = self.pg_write.val();
        self.pg_fifo.data_in.next = self.pg_data.val();
        self.pg_full.next = self.pg_fifo.full.val();
        self.pg_almost_full.next = self.pg_fifo.almost_full.val();
        self.pg_overflow.next = self.pg_fifo.overflow.val();
        self.pg_underflow.next = self.pg_fifo.underflow.val();
        self.assembler.pg_empty.next = self.pg_fifo.empty.val();
        self.assembler.pg_data.next = self.pg_fifo.data_out.val();
        self.pg_fifo.read.next = self.assembler.pg_read.val();
        self.pg_read.next = self.assembler.pg_read.val();
        self.packer.in_valid.next = self.assembler.g_valid.val();
        self.assembler.g_ready.next = self.packer.in_ready.val();
        self.g_fire.next = self.assembler.g_valid.val() & self.packer.in_ready.val();
        self.g_last.next = self.assembler.g_last.val();
        self.packer.in_data.next = self.assembler.g_data.val();
        self.packer.in_skip.next = self.assembler.g_skip.val();
        self.packer.in_len.next = self.assembler.g_len.val();
        self.packer.in_last.next = self.assembler.g_last.val();
        self.out_valid.next = self.packer.out_valid.val();
        self.packer.out_ready.next = self.out_ready.val();
        self.out_data.next = self.packer.out_data.val();
        self.out_count.next = self.packer.out_count.val();
        self.out_last.next = self.packer.out_last.val();
        self.assembler.ud_room.next = self.ud_room.val();
        self.ud_done.next = self.assembler.ud_done.val();
        self.ud_done_qpn.next = self.assembler.ud_done_qpn.val();
        self.ud_done_psn.next = self.assembler.ud_done_psn.val();
        self.assembler.req_epoch.next = self.req_epoch.val();
        self.cnt_stale.next = self.assembler.cnt_stale.val();
    }
}

pub struct Pins {
    pub job_valid: Port,
    pub job: Port,
    pub job_read: Port,
    pub pay_valid: Port,
    pub pay_data: Port,
    pub pay_ready: Port,
    pub pg_write: Port,
    pub pg_data: Port,
    pub pg_full: Port,
    pub pg_almost_full: Port,
    pub pg_overflow: Port,
    pub pg_underflow: Port,
    pub pg_read: Port,
    pub g_fire: Port,
    pub g_last: Port,
    pub out_valid: Port,
    pub out_ready: Port,
    pub out_data: Port,
    pub out_count: Port,
    pub out_last: Port,
    pub cnt_stale: Port,
    pub il_write: Port,
    pub il_data: Port,
    pub il_full: Port,
    pub il_read: Port,
    pub il_overflow: Port,
    pub il_underflow: Port,
}

/// One payload piece: where its first byte sits in its first beat, its length, whether it ends
/// the packet's payload, its beats as the DMA read returns them (garbage around the piece), and
/// whether it is inline data (its beats come from the inline-data FIFO instead).
pub struct Piece {
    pub skip: usize,
    pub len: usize,
    pub last: bool,
    pub beats: Vec<[u8; 64]>,
    pub inline: bool,
}

impl Piece {
    /// The piece FIFO word: `skip | len << 6 | last << 19 | inline << 20`.
    pub fn word(&self) -> u64 {
        assert!(self.skip < 64 && (1..=4096).contains(&self.len));
        self.skip as u64 | (self.len as u64) << 6 | u64::from(self.last) << 19 | u64::from(self.inline) << 20
    }
}

/// Host memory the payload pieces are read from: random bytes, each piece written at a random
/// place with the given alignment, its beats read back with whatever lies around it.
pub struct Host(Vec<u8>);

impl Host {
    const BEATS: usize = 4096;

    pub fn new(rng: &mut Rng) -> Host {
        Host(rng.bytes(64 * Self::BEATS))
    }

    /// Writes `data` at a random address `≡ skip (mod 64)`; returns the piece with its beats.
    pub fn place(&mut self, rng: &mut Rng, skip: usize, data: &[u8], last: bool) -> Piece {
        let n = (skip + data.len()).div_ceil(64);
        let base = 64 * rng.range(0, (Self::BEATS - n) as u64) as usize;
        self.0[base + skip..base + skip + data.len()].copy_from_slice(data);
        let beats = self.0[base..base + 64 * n].chunks(64).map(|c| c.try_into().unwrap()).collect();
        Piece { skip, len: data.len(), last, beats, inline: false }
    }
}

/// One job: its record, the frame the codec emits for it, and its payload pieces.
pub struct Case {
    /// The TxJob fields: (offset, width, value).
    pub job: Vec<(usize, usize, u64)>,
    pub op: u8,
    pub plen: usize,
    /// The job's `pay_skip` (the single piece's skip, or garbage for a gathered payload).
    pub skip: usize,
    pub want: Vec<u8>,
    pub pieces: Vec<Piece>,
    /// Piece `l` (and so every later piece) is written only once the assembler waits for it:
    /// after the job's header has gone (`l` = 0) or its piece `l - 1` has been consumed.
    pub late: Option<usize>,
    /// The header is longer than one beat (a RETH or an atomic's extension headers).
    pub two_chunks: bool,
    pub pad: bool,
    /// The reference frame's meaning (lengths filled in).
    pub repr: AnyPacket,
    /// A stale request packet (`drop_ok` and an `epoch` other than its QP's in `req_epoch`):
    /// its pieces and beats are taken, nothing reaches the gearbox, `cnt_stale` pulses.
    pub drop: bool,
}

impl Case {
    /// Payload beats of the whole job.
    pub fn beats(&self) -> usize {
        self.pieces.iter().map(|p| p.beats.len()).sum()
    }

    /// Payload beats of the pieces before piece `k`.
    pub fn beats_before(&self, k: usize) -> usize {
        self.pieces[..k].iter().map(|p| p.beats.len()).sum()
    }

    /// Pieces other than the last that fit one beat.
    pub fn short_pieces(&self) -> usize {
        self.pieces.iter().filter(|p| !p.last && p.beats.len() == 1).count()
    }

    /// The pieces as `skip+len` pairs, for failure messages.
    pub fn geometry(&self) -> String {
        let g: Vec<String> = self.pieces.iter().map(|p| format!("{}+{}", p.skip, p.len)).collect();
        format!("[{}]", g.join(" "))
    }
}

/// Opcodes the assembler is given: RDMA WRITE FIRST/MIDDLE/LAST/ONLY with and without
/// immediate, READ REQUEST, SEND FIRST/LAST/ONLY with and without immediate, READ RESPONSE
/// FIRST/MIDDLE/LAST/ONLY, ATOMIC ACKNOWLEDGE, COMPARE SWAP, FETCH ADD (RC), and UC
/// SEND/WRITE with and without immediate.
pub const OPCODES: [u8; 25] = [
    0x06, 0x07, 0x08, 0x09, 0x0A, 0x0B, 0x0C, 0x00, 0x02, 0x03, 0x04, 0x05, 0x0D, 0x0E, 0x0F, 0x10, 0x12, 0x13, 0x14,
    0x26, 0x28, 0x2A, 0x23, 0x29, 0x2B,
];

pub fn is_atomic(op: u8) -> bool {
    matches!(op, 0x12..=0x14)
}

/// A payload length for `op`: a whole MTU for FIRST/MIDDLE packets, none for a READ request.
pub fn random_plen(rng: &mut Rng, op: u8) -> usize {
    match op {
        0x0C | 0x12 | 0x13 | 0x14 => 0,
        0x06 | 0x07 | 0x00 | 0x0D | 0x0E | 0x26 | 0x27 => *rng.pick(&[256usize, 512, 1024, 2048, 4096]),
        _ => match rng.range(0, 3) {
            0 => rng.range(0, 70) as usize,
            1 => 64 * rng.range(0, 64) as usize,
            _ => rng.range(0, 4096) as usize,
        }
        .min(4096),
    }
}

/// The NIC's own addresses, the host memory and the random generator cases are drawn from.
pub struct Gen {
    pub rng: Rng,
    pub host: Host,
    pub mac: [u8; 6],
    pub ip: std::net::Ipv4Addr,
    /// The seed, to print in failures.
    pub seed: u64,
}

pub fn make_case(g: &mut Gen) -> Case {
    let op = *g.rng.pick(&OPCODES);
    let plen = random_plen(&mut g.rng, op);
    make_case_of(g, op, plen)
}

/// A job for `op` with `plen` payload bytes in one piece at a random host alignment (the job's
/// `pay_skip`).
pub fn make_case_of(g: &mut Gen, op: u8, plen: usize) -> Case {
    let skip = g.rng.range(0, 63) as usize;
    let geometry: Vec<(usize, usize)> = if plen == 0 { Vec::new() } else { vec![(skip, plen)] };
    make_case_pieces(g, op, &geometry, skip)
}

/// A job for `op` whose payload is the pieces `geometry` (skip, length) concatenated, with
/// `pay_skip` in its record: its extension headers from the codec (a RETH in the RETH fields,
/// an ImmDt or AETH in `ext4`); fields the job's flags leave unused hold garbage, as a
/// scheduler may leave them.
pub fn make_case_pieces(g: &mut Gen, op: u8, geometry: &[(usize, usize)], pay_skip: usize) -> Case {
    let plen: usize = geometry.iter().map(|&(_, len)| len).sum();
    assert!(plen <= 4096, "opcode {op:#04x}: {plen} payload bytes");
    let rng = &mut g.rng;
    if is_atomic(op) {
        assert_eq!(plen, 0, "atomic frames carry no payload");
        let mut a = codec::atomic_repr(rng, op);
        a.eth.src_addr = g.mac;
        a.ipv4.src_addr = g.ip;
        return make_atomic_case(rng, a);
    }
    let mut r = codec::nic_style_repr(rng, op);
    r.eth.src_addr = g.mac;
    r.ipv4.src_addr = g.ip;
    codec::add_ext_headers(rng, &mut r);
    r.payload = rng.bytes(plen);
    let mut pieces = Vec::new();
    let mut at = 0;
    for (k, &(skip, len)) in geometry.iter().enumerate() {
        pieces.push(g.host.place(rng, skip, &r.payload[at..at + len], k + 1 == geometry.len()));
        at += len;
    }
    let reth = r.reth.unwrap_or(RethRepr { virt_addr: rng.next_u64(), rkey: rng.u32(), dma_len: rng.u32() });
    assert!(r.aeth.is_none() || r.immdt.is_none(), "opcode {op:#04x}: AETH and ImmDt");
    let ext4 = match (&r.immdt, &r.aeth) {
        (Some(i), _) => codec::imm_bits(i),
        (_, Some(a)) => codec::aeth_bits(a),
        _ => u64::from(rng.u32()),
    };
    let has_ext4 = r.immdt.is_some() || r.aeth.is_some();
    let l = TxJob::default();
    let job = vec![
        (l.get_my_offset_opcode(), l.get_my_width_opcode(), u64::from(op)),
        (l.get_my_offset_ackreq(), l.get_my_width_ackreq(), u64::from(r.bth.ack_req)),
        (l.get_my_offset_has_reth(), l.get_my_width_has_reth(), u64::from(r.reth.is_some())),
        (l.get_my_offset_has_ext4(), l.get_my_width_has_ext4(), u64::from(has_ext4)),
        (l.get_my_offset_psn(), l.get_my_width_psn(), u64::from(r.bth.psn)),
        (l.get_my_offset_dest_qpn(), l.get_my_width_dest_qpn(), u64::from(r.bth.dest_qp)),
        (l.get_my_offset_pkey(), l.get_my_width_pkey(), u64::from(r.bth.pkey)),
        (l.get_my_offset_udp_sport(), l.get_my_width_udp_sport(), u64::from(r.udp.src_port)),
        (l.get_my_offset_dest_ip(), l.get_my_width_dest_ip(), codec::ip_bits(r.ipv4.dst_addr)),
        (l.get_my_offset_dest_mac(), l.get_my_width_dest_mac(), codec::mac_bits(r.eth.dst_addr)),
        (l.get_my_offset_reth_va(), l.get_my_width_reth_va(), reth.virt_addr),
        (l.get_my_offset_reth_rkey(), l.get_my_width_reth_rkey(), u64::from(reth.rkey)),
        (l.get_my_offset_reth_len(), l.get_my_width_reth_len(), u64::from(reth.dma_len)),
        (l.get_my_offset_plen(), l.get_my_width_plen(), plen as u64),
        (l.get_my_offset_pay_skip(), l.get_my_width_pay_skip(), pay_skip as u64),
        (l.get_my_offset_ext4(), l.get_my_width_ext4(), ext4),
        // Not selected by a non-atomic job: garbage.
        (l.get_my_offset_at_swap(), l.get_my_width_at_swap(), rng.next_u64()),
        (l.get_my_offset_at_cmp(), l.get_my_width_at_cmp(), rng.next_u64()),
    ];
    let want = codec::strip_icrc(&r.emit());
    r.fill_lengths();
    Case {
        job,
        op,
        plen,
        skip: pay_skip,
        want,
        pieces,
        late: None,
        two_chunks: r.reth.is_some(),
        pad: r.pad_len() != 0,
        repr: AnyPacket::Roce(r),
        drop: false,
    }
}

/// A job for the atomic frame `a` (no payload): COMPARE SWAP / FETCH ADD with `has_atomic_eth`
/// (VA and R_Key in the RETH fields, `reth_len` garbage), ATOMIC ACKNOWLEDGE with
/// `has_atomic_ack` and `has_ext4` (the AETH in `ext4`, the original value in `at_swap`, VA,
/// R_Key, length and `at_cmp` garbage), as the scheduler builds them.
pub fn make_atomic_case(rng: &mut Rng, mut a: AtomicPacketRepr) -> Case {
    let op = a.bth.opcode.0;
    let skip = rng.range(0, 63) as usize;
    let ack = op == 0x12;
    let (va, rkey, swap, cmp) = match &a.atomic_eth {
        Some(e) => (e.virt_addr, u64::from(e.rkey), e.swap_add, e.compare),
        None => (rng.next_u64(), u64::from(rng.u32()), a.atomic_ack_eth.unwrap().orig_data, rng.next_u64()),
    };
    let ext4 = match &a.aeth {
        Some(x) => codec::aeth_bits(x),
        None => u64::from(rng.u32()),
    };
    let l = TxJob::default();
    let job = vec![
        (l.get_my_offset_opcode(), l.get_my_width_opcode(), u64::from(op)),
        (l.get_my_offset_ackreq(), l.get_my_width_ackreq(), u64::from(a.bth.ack_req)),
        (l.get_my_offset_has_reth(), l.get_my_width_has_reth(), 0),
        (l.get_my_offset_has_ext4(), l.get_my_width_has_ext4(), u64::from(ack)),
        (l.get_my_offset_has_atomic_eth(), l.get_my_width_has_atomic_eth(), u64::from(!ack)),
        (l.get_my_offset_has_atomic_ack(), l.get_my_width_has_atomic_ack(), u64::from(ack)),
        (l.get_my_offset_psn(), l.get_my_width_psn(), u64::from(a.bth.psn)),
        (l.get_my_offset_dest_qpn(), l.get_my_width_dest_qpn(), u64::from(a.bth.dest_qp)),
        (l.get_my_offset_pkey(), l.get_my_width_pkey(), u64::from(a.bth.pkey)),
        (l.get_my_offset_udp_sport(), l.get_my_width_udp_sport(), u64::from(a.udp.src_port)),
        (l.get_my_offset_dest_ip(), l.get_my_width_dest_ip(), codec::ip_bits(a.ipv4.dst_addr)),
        (l.get_my_offset_dest_mac(), l.get_my_width_dest_mac(), codec::mac_bits(a.eth.dst_addr)),
        (l.get_my_offset_reth_va(), l.get_my_width_reth_va(), va),
        (l.get_my_offset_reth_rkey(), l.get_my_width_reth_rkey(), rkey),
        (l.get_my_offset_reth_len(), l.get_my_width_reth_len(), u64::from(rng.u32())),
        (l.get_my_offset_plen(), l.get_my_width_plen(), 0),
        (l.get_my_offset_pay_skip(), l.get_my_width_pay_skip(), skip as u64),
        (l.get_my_offset_ext4(), l.get_my_width_ext4(), ext4),
        (l.get_my_offset_at_swap(), l.get_my_width_at_swap(), swap),
        (l.get_my_offset_at_cmp(), l.get_my_width_at_cmp(), cmp),
    ];
    let want = codec::strip_icrc(&a.emit());
    a.fill_lengths();
    Case {
        job,
        op,
        plen: 0,
        skip,
        want,
        pieces: Vec::new(),
        late: None,
        two_chunks: true,
        pad: false,
        repr: AnyPacket::Atomic(a),
        drop: false,
    }
}

/// Checks `got` (a frame without ICRC) field by field where the extension headers change the
/// layout, then byte for byte against the codec's frame, then that it parses once the ICRC is
/// appended.
pub fn check_frame(got: &[u8], c: &Case, ctx: &str) {
    let ext = c.repr.ext_bytes();
    let hlen = 54 + ext.len();
    assert!(matches!(ext.len(), 0 | 4 | 12 | 16 | 20 | 28), "{ctx}: {} extension bytes", ext.len());
    let pad = c.repr.pad_len();
    assert_eq!(got.len(), hlen + c.plen + pad, "{ctx}: frame length (header {hlen} bytes)");
    let total = usize::from(u16::from_be_bytes([got[16], got[17]]));
    assert_eq!(total, hlen - 14 + c.plen + pad + 4, "{ctx}: IPv4 Total Length");
    assert_eq!(usize::from(u16::from_be_bytes([got[38], got[39]])), total - 20, "{ctx}: UDP Length");
    assert_eq!(got[42], c.op, "{ctx}: BTH opcode");
    assert_eq!(usize::from((got[43] >> 4) & 3), pad, "{ctx}: BTH PadCnt");
    if let AnyPacket::Atomic(a) = &c.repr {
        if let Some(e) = &a.atomic_eth {
            assert_eq!(&got[54..62], &e.virt_addr.to_be_bytes(), "{ctx}: AtomicETH VA");
            assert_eq!(&got[62..66], &e.rkey.to_be_bytes(), "{ctx}: AtomicETH R_Key");
            assert_eq!(&got[66..74], &e.swap_add.to_be_bytes(), "{ctx}: AtomicETH Swap/Add Data");
            assert_eq!(&got[74..82], &e.compare.to_be_bytes(), "{ctx}: AtomicETH Compare Data");
        }
        if let (Some(x), Some(o)) = (&a.aeth, &a.atomic_ack_eth) {
            assert_eq!(got[54], x.syndrome, "{ctx}: AETH syndrome");
            assert_eq!(&got[55..58], &x.msn.to_be_bytes()[1..], "{ctx}: AETH MSN");
            assert_eq!(&got[58..66], &o.orig_data.to_be_bytes(), "{ctx}: AtomicAckETH");
        }
        assert_frame_eq(got, &c.want, ctx);
        let mut f = got.to_vec();
        f.extend_from_slice(&[0; 4]);
        rnic_firmware_tests::wire::icrc::fill(&mut f[14..]).unwrap();
        let parsed = AtomicPacketRepr::parse(&f).unwrap_or_else(|e| panic!("{ctx}: {e}"));
        assert_eq!(&parsed, a, "{ctx}: parsed fields");
        return;
    }
    let r = c.repr.roce().unwrap();
    if let Some(reth) = &r.reth {
        assert_eq!(&got[54..62], &reth.virt_addr.to_be_bytes(), "{ctx}: RETH VA");
        assert_eq!(&got[62..66], &reth.rkey.to_be_bytes(), "{ctx}: RETH R_Key");
        assert_eq!(&got[66..70], &reth.dma_len.to_be_bytes(), "{ctx}: RETH DMA Length");
    }
    let at = if r.reth.is_some() { 70 } else { 54 };
    if let Some(i) = &r.immdt {
        assert_eq!(&got[at..at + 4], &i.data.to_be_bytes(), "{ctx}: ImmDt at byte {at}");
    }
    if let Some(a) = &r.aeth {
        assert_eq!(got[at], a.syndrome, "{ctx}: AETH syndrome");
        assert_eq!(&got[at + 1..at + 4], &a.msn.to_be_bytes()[1..], "{ctx}: AETH MSN");
    }
    assert_eq!(&got[hlen..hlen + c.plen], &r.payload[..], "{ctx}: payload right after the headers");
    assert_frame_eq(got, &c.want, ctx);
    let mut f = got.to_vec();
    f.extend_from_slice(&[0; 4]);
    rnic_firmware_tests::wire::icrc::fill(&mut f[14..]).unwrap();
    let parsed = RocePacketRepr::parse(&f).unwrap_or_else(|e| panic!("{ctx}: {e}"));
    assert_eq!(&parsed, r, "{ctx}: parsed fields");
}

/// The assembler model, its pins and the case generator (the NIC's own addresses, drawn first,
/// are set on the model).
pub fn setup(seed: u64) -> (Dut, Pins, Gen) {
    let mut dut = Dut::build::<AsmTop>("tx_assembler").expect("build the piece FIFO + assembler + gearbox model");
    let names = [
        "job_valid",
        "job",
        "job_read",
        "pay_valid",
        "pay_data",
        "pay_ready",
        "pg_write",
        "pg_data",
        "pg_full",
        "pg_almost_full",
        "pg_overflow",
        "pg_underflow",
        "pg_read",
        "g_fire",
        "g_last",
        "out_valid",
        "out_ready",
        "out_data",
        "out_count",
        "out_last",
        "cnt_stale",
        "il_write",
        "il_data",
        "il_full",
        "il_read",
        "il_overflow",
        "il_underflow",
    ];
    let q: Vec<Port> = names.iter().map(|n| dut.port(n)).collect();
    let p = Pins {
        job_valid: q[0],
        job: q[1],
        job_read: q[2],
        pay_valid: q[3],
        pay_data: q[4],
        pay_ready: q[5],
        pg_write: q[6],
        pg_data: q[7],
        pg_full: q[8],
        pg_almost_full: q[9],
        pg_overflow: q[10],
        pg_underflow: q[11],
        pg_read: q[12],
        g_fire: q[13],
        g_last: q[14],
        out_valid: q[15],
        out_ready: q[16],
        out_data: q[17],
        out_count: q[18],
        out_last: q[19],
        cnt_stale: q[20],
        il_write: q[21],
        il_data: q[22],
        il_full: q[23],
        il_read: q[24],
        il_overflow: q[25],
        il_underflow: q[26],
    };
    let mut rng = Rng::from_env(seed);
    let seed = rng.0;
    let mac = codec::random_mac(&mut rng);
    let ip = codec::random_ip(&mut rng);
    let host = Host::new(&mut rng);
    dut.set("src_mac", codec::mac_bits(mac));
    dut.set("src_ip", codec::ip_bits(ip));
    dut.set("ud_room", 1);
    dut.reset(2);
    (dut, p, Gen { rng, host, mac, ip, seed })
}

/// Percent chances per cycle: a queued job becomes visible (`job`), a payload beat is offered
/// (`pay`), `out_ready` (`out`), the next piece is written (`piece`; only while the FIFO is not
/// full and the piece is not held back as late).
#[derive(Clone, Copy, Debug)]
pub struct Rates {
    pub job: u64,
    pub pay: u64,
    pub out: u64,
    pub piece: u64,
}

pub const READY: Rates = Rates { job: 100, pay: 100, out: 100, piece: 100 };

/// What [`run`] saw.
pub struct Outcome {
    pub frames: Vec<Vec<u8>>,
    pub cycles: u64,
    /// For each frame, the cycle its final chunk entered the gearbox.
    pub ends: Vec<u64>,
    /// Late pieces written (each once the assembler was waiting for it).
    pub late_writes: usize,
    /// Cycles with the piece FIFO full, almost full.
    pub full_cycles: u64,
    pub afull_cycles: u64,
}

/// Runs the cases and checks the handshakes on the way (see the file's doc comment).
pub fn run(dut: &mut Dut, p: &Pins, rng: &mut Rng, cases: &[Case], r: Rates) -> Outcome {
    run_with(dut, p, rng, cases, r, &mut |_: &mut Dut| {})
}

/// [`run`], calling `hook` once per cycle just before the clock edge.
pub fn run_with(
    dut: &mut Dut,
    p: &Pins,
    rng: &mut Rng,
    cases: &[Case],
    r: Rates,
    hook: &mut dyn FnMut(&mut Dut),
) -> Outcome {
    let n = cases.len();
    // The cases that become frames, in order (the others are dropped as stale).
    let sent: Vec<usize> = (0..n).filter(|&i| !cases[i].drop).collect();
    let mut jobs: VecDeque<&Case> = VecDeque::new();
    let mut pending = cases.iter().collect::<VecDeque<_>>();
    // Every piece, in order: (job, piece).
    let mut pieces: VecDeque<(usize, usize)> =
        cases.iter().enumerate().flat_map(|(i, c)| (0..c.pieces.len()).map(move |k| (i, k))).collect();
    let total_pieces = pieces.len();
    let mut pieces_read = 0usize;
    // The payload stream of every piece written so far, in order (as the DMA returns it: beats
    // of a piece may come long before the assembler needs them, never before the piece).
    let mut stream: VecDeque<[u8; 64]> = VecDeque::new();
    let mut job_of_beat: VecDeque<usize> = VecDeque::new();
    // Inline pieces' beats: still to write into the inline-data FIFO (one per cycle at most,
    // at the payload rate, from the cycle their piece is written), then in it.
    let mut il_pending: VecDeque<([u8; 64], usize)> = VecDeque::new();
    let mut il_job_of_beat: VecDeque<usize> = VecDeque::new();
    let mut beats_taken = vec![0usize; n];
    // The job whose chunks enter the gearbox, its header chunks so far, and whose headers have
    // gone whole.
    let mut asm_job = 0usize;
    let mut hdr_chunks = 0usize;
    let mut hdr_done = vec![false; n];
    let mut out =
        Outcome { frames: Vec::new(), cycles: 0, ends: Vec::new(), late_writes: 0, full_cycles: 0, afull_cycles: 0 };
    let limit = 100_000 + 30 * cases.iter().map(|c| c.beats() as u64 + 6).sum::<u64>();
    let mut cur = Vec::new();
    while out.frames.len() < sent.len() || asm_job < n {
        out.cycles += 1;
        let cycles = out.cycles;
        assert!(
            cycles < limit,
            "no progress: {} frames, {} of {total_pieces} pieces written",
            out.frames.len(),
            total_pieces - pieces.len()
        );
        if !pending.is_empty() && rng.chance(r.job, 100) {
            jobs.push_back(pending.pop_front().unwrap());
        }
        dut.set_bit(p.job_valid, !jobs.is_empty());
        if let Some(c) = jobs.front() {
            let w = dut.width(p.job);
            dut.set_wide(p.job, &pack_fields(w, &c.job));
        } else {
            let w = dut.width(p.job);
            let mut junk = rng.bytes(w.div_ceil(8));
            if !w.is_multiple_of(8) {
                *junk.last_mut().unwrap() &= (1u8 << (w % 8)) - 1;
            }
            dut.set_wide(p.job, &junk);
        }
        // The next piece, unless the FIFO is full (a registered flag: this cycle's) or it is
        // held back until the assembler waits for it.
        let mut write = None;
        if let Some(&(i, k)) = pieces.front() {
            let c = &cases[i];
            let held = match c.late {
                Some(0) if k == 0 => !hdr_done[i],
                Some(l) if l == k => beats_taken[i] < c.beats_before(k),
                _ => false,
            };
            if !held && !dut.get_bit(p.pg_full) && rng.chance(r.piece, 100) {
                write = Some((i, k));
            }
        }
        dut.set_bit(p.pg_write, write.is_some());
        match write {
            Some((i, k)) => dut.set(p.pg_data, cases[i].pieces[k].word()),
            None => dut.set(p.pg_data, rng.next_u64() & 0x1F_FFFF),
        }
        let il_w = !il_pending.is_empty() && !dut.get_bit(p.il_full) && rng.chance(r.pay, 100);
        dut.set_bit(p.il_write, il_w);
        match il_pending.front() {
            Some((beat, _)) if il_w => dut.set_wide(p.il_data, beat),
            _ => dut.set_wide(p.il_data, &rng.bytes(64)),
        }
        let pv = !stream.is_empty() && rng.chance(r.pay, 100);
        dut.set_bit(p.pay_valid, pv);
        match stream.front() {
            Some(beat) if pv => dut.set_wide(p.pay_data, beat),
            _ => dut.set_wide(p.pay_data, &rng.bytes(64)),
        }
        let or = rng.chance(r.out, 100);
        dut.set_bit(p.out_ready, or);
        dut.eval();
        if let Some((i, k)) = write {
            pieces.pop_front();
            let c = &cases[i];
            if c.late == Some(k) {
                out.late_writes += 1;
            }
            for beat in &c.pieces[k].beats {
                if c.pieces[k].inline {
                    il_pending.push_back((*beat, i));
                } else {
                    stream.push_back(*beat);
                    job_of_beat.push_back(i);
                }
            }
        }
        if il_w {
            let (_, i) = il_pending.pop_front().unwrap();
            il_job_of_beat.push_back(i);
        }
        if dut.get_bit(p.job_read) {
            jobs.pop_front().expect("job_read with no job");
        }
        if dut.get_bit(p.pg_read) {
            pieces_read += 1;
            assert!(
                pieces_read <= total_pieces - pieces.len(),
                "cycle {cycles}: piece {pieces_read} read before it was written"
            );
        }
        assert!(
            !dut.get_bit(p.pg_overflow) && !dut.get_bit(p.pg_underflow),
            "cycle {cycles}: piece FIFO over/underflow"
        );
        assert!(
            !dut.get_bit(p.il_overflow) && !dut.get_bit(p.il_underflow),
            "cycle {cycles}: inline-data FIFO over/underflow"
        );
        out.full_cycles += u64::from(dut.get_bit(p.pg_full));
        out.afull_cycles += u64::from(dut.get_bit(p.pg_almost_full));
        let dma_fire = pv && dut.get_bit(p.pay_ready);
        let il_fire = dut.get_bit(p.il_read);
        assert!(!(dma_fire && il_fire), "cycle {cycles}: a DMA beat and an inline beat taken together");
        let pay_fire = dma_fire || il_fire;
        let g_fire = dut.get_bit(p.g_fire);
        let dropping = asm_job < n && cases[asm_job].drop;
        assert!(!pay_fire || g_fire || dropping, "cycle {cycles}: a payload beat taken but no chunk into the gearbox");
        assert!(!(g_fire && dropping), "cycle {cycles}: a chunk of stale job {asm_job} reached the gearbox");
        if dropping {
            // Nothing of it is seen: its header counts as gone once it is this job's turn.
            hdr_done[asm_job] = true;
        }
        if pay_fire {
            let j = if il_fire {
                il_job_of_beat.pop_front().expect("an inline beat read from an empty FIFO")
            } else {
                stream.pop_front();
                job_of_beat.pop_front().unwrap()
            };
            beats_taken[j] += 1;
            // A job's beats are consumed only while its own frame's payload is being built.
            assert_eq!(j, asm_job, "cycle {cycles}: a beat of job {j} taken while job {asm_job}'s chunks go out");
            assert!(hdr_done[j], "cycle {cycles}: a beat of job {j} taken before its header went");
        }
        if g_fire {
            assert!(asm_job < n, "cycle {cycles}: a chunk after the last frame");
            let c = &cases[asm_job];
            if !pay_fire {
                if !hdr_done[asm_job] {
                    hdr_chunks += 1;
                    hdr_done[asm_job] = hdr_chunks == 1 + usize::from(c.two_chunks);
                } else {
                    assert!(
                        c.pad && beats_taken[asm_job] == c.beats(),
                        "cycle {cycles}: job {asm_job}: a chunk that is neither header, payload nor pad"
                    );
                }
            }
            if dut.get_bit(p.g_last) {
                assert!(!dut.get_bit(p.cnt_stale), "cycle {cycles}: a sent packet counted as stale");
                assert!(hdr_done[asm_job], "cycle {cycles}: job {asm_job} ended within its header");
                assert_eq!(
                    beats_taken[asm_job],
                    c.beats(),
                    "cycle {cycles}: job {asm_job} {}: payload beats taken at its end",
                    c.geometry()
                );
                out.ends.push(cycles);
                asm_job += 1;
                hdr_chunks = 0;
            }
        }
        if dut.get_bit(p.cnt_stale) {
            assert!(dropping, "cycle {cycles}: job {asm_job} counted as stale");
            assert_eq!(beats_taken[asm_job], cases[asm_job].beats(), "cycle {cycles}: stale job {asm_job}'s beats");
            asm_job += 1;
            hdr_chunks = 0;
        }
        if or && dut.get_bit(p.out_valid) {
            let cnt = dut.get(p.out_count) as usize;
            let last = dut.get_bit(p.out_last);
            assert!(last || cnt == 64, "a non-last beat with {cnt} bytes");
            cur.extend_from_slice(&dut.get_wide(p.out_data)[..cnt]);
            if last {
                let i = sent[out.frames.len()];
                assert_eq!(beats_taken[i], cases[i].beats(), "frame {i}: payload beats taken");
                out.frames.push(std::mem::take(&mut cur));
            }
        }
        hook(dut);
        dut.tick();
    }
    assert!(stream.is_empty(), "{} payload beats left over", stream.len());
    assert!(
        il_pending.is_empty() && il_job_of_beat.is_empty(),
        "{} inline beats left over",
        il_pending.len() + il_job_of_beat.len()
    );
    assert!(pieces.is_empty() && pieces_read == total_pieces, "{pieces_read} of {total_pieces} pieces read");
    out
}

/// Checks every frame of `out` against its case.
pub fn check_frames(out: &Outcome, cases: &[Case], what: &str, seed: u64) {
    let sent: Vec<&Case> = cases.iter().filter(|c| !c.drop).collect();
    assert_eq!(out.frames.len(), sent.len());
    for (i, (got, c)) in out.frames.iter().zip(sent).enumerate() {
        let ctx = format!(
            "{what} frame {i}: opcode {:#04x} plen {} pay_skip {} pieces {} late {:?} (seed {seed:#x})",
            c.op,
            c.plen,
            c.skip,
            c.geometry(),
            c.late
        );
        check_frame(got, c, &ctx);
    }
}

/// Opcodes with payload for gathered packets: RC RDMA WRITE and SEND of every kind, READ
/// RESPONSE (one piece in the NIC, but the assembler does not care), UC SEND/WRITE.
pub const PAYLOAD_OPCODES: [u8; 20] = [
    0x06, 0x07, 0x08, 0x09, 0x0A, 0x0B, 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x0D, 0x0E, 0x0F, 0x10, 0x26, 0x28, 0x2A,
    0x2B,
];

/// FIRST/MIDDLE opcodes: their payload is a whole MTU.
pub fn is_first_or_middle(op: u8) -> bool {
    matches!(op, 0x06 | 0x07 | 0x00 | 0x01 | 0x0D | 0x0E | 0x26 | 0x27)
}

/// A piece length at `skip`, at most `max`: 1 byte, ending exactly at a beat boundary, whole
/// beats, short, 64+ bytes or anything.
pub fn piece_len(rng: &mut Rng, skip: usize, max: usize) -> usize {
    let len = match rng.range(0, 5) {
        0 => 1,
        1 => 64 * rng.range(1, 4) as usize - skip,
        2 => 64 * rng.range(1, 4) as usize,
        3 => rng.range(1, 63) as usize,
        4 => rng.range(64, 1500) as usize,
        _ => rng.range(1, 4096) as usize,
    };
    len.clamp(1, max)
}

/// The pieces (skip, length) of a payload of `plen` bytes (0 for any length up to 4096) in
/// 1..=6 pieces.
pub fn random_geometry(rng: &mut Rng, plen: usize) -> Vec<(usize, usize)> {
    let k = rng.range(1, if plen == 0 { 6 } else { plen.min(6) as u64 }) as usize;
    let total = if plen == 0 { 4096 } else { plen };
    let mut left = total;
    let mut out = Vec::new();
    for i in 0..k {
        let skip = rng.range(0, 63) as usize;
        let rest = k - 1 - i;
        let len = if rest == 0 && plen != 0 { left } else { piece_len(rng, skip, left - rest) };
        out.push((skip, len));
        left -= len;
    }
    out
}

/// A random job for the gathered tests: mostly a payload of 1..=6 pieces (`pay_skip` garbage),
/// some jobs without payload; a quarter of those with pieces late when `late`.
pub fn gathered_case(g: &mut Gen, late: bool) -> Case {
    if g.rng.chance(15, 100) {
        let op = *g.rng.pick(&[0x0Cu8, 0x12, 0x13, 0x14, 0x04, 0x0A, 0x10]);
        return make_case_of(g, op, 0);
    }
    let op = *g.rng.pick(&PAYLOAD_OPCODES);
    let plen = if is_first_or_middle(op) { *g.rng.pick(&[256usize, 512, 1024, 2048, 4096]) } else { 0 };
    let geometry = random_geometry(&mut g.rng, plen);
    let pay_skip = g.rng.range(0, 63) as usize;
    let mut c = make_case_pieces(g, op, &geometry, pay_skip);
    if late && g.rng.chance(1, 4) {
        c.late = Some(g.rng.range(0, c.pieces.len() as u64 - 1) as usize);
    }
    c
}

/// For every skip 0..63, a packet of five pieces at that skip: 1 byte, up to the beat boundary
/// (`64 - skip`), 64 bytes, 64..=264 bytes and `128 - skip` bytes (two beats, ending at a
/// boundary); every other one after a job without payload.
pub fn skip_sweep(g: &mut Gen) -> Vec<Case> {
    let mut cases = Vec::new();
    for s in 0..64usize {
        if s % 2 == 1 {
            cases.push(make_case_of(g, 0x0C, 0));
        }
        let op = *g.rng.pick(&[0x04u8, 0x05, 0x0A, 0x0B, 0x08, 0x10]);
        let big = g.rng.range(64, 264) as usize;
        let geometry = [(s, 1), (s, 64 - s), (s, 64), (s, big), (s, 128 - s)];
        let pay_skip = g.rng.range(0, 63) as usize;
        let mut c = make_case_pieces(g, op, &geometry, pay_skip);
        c.late = if s % 4 == 0 { Some(s / 4 % 5) } else { None };
        cases.push(c);
    }
    cases
}

/// Gives half of `cases` at random `drop_ok` and each a random QP (`rsp_qpn`) and rewind
/// stamp (`epoch`): a `drop_ok` case whose stamp is not its QP's bit of `epochs` is stale.
pub fn stamp(g: &mut Gen, cases: &mut [Case], epochs: u64) {
    let l = TxJob::default();
    for c in cases {
        let (q, e, ok) = (g.rng.range(0, 63), g.rng.range(0, 1), g.rng.chance(1, 2));
        c.job.push((l.get_my_offset_rsp_qpn(), 6, q));
        c.job.push((l.get_my_offset_epoch(), 1, e));
        c.job.push((l.get_my_offset_drop_ok(), 1, u64::from(ok)));
        c.drop = ok && e != epochs >> q & 1;
    }
}

/// A packet whose whole payload is inline data (`IBV_SEND_INLINE`, at most 256 bytes, so one
/// packet): one piece at skip 0 flagged inline, its beats from the inline-data FIFO.
pub fn inline_case(g: &mut Gen) -> Case {
    let op = *g.rng.pick(&[0x0Au8, 0x0B, 0x04, 0x05]);
    let plen = match g.rng.range(0, 2) {
        0 => *g.rng.pick(&[1usize, 4, 63, 64, 65, 127, 128, 129, 192, 193, 255, 256]),
        _ => g.rng.range(1, 256) as usize,
    };
    let pay_skip = g.rng.range(0, 63) as usize;
    let mut c = make_case_pieces(g, op, &[(0, plen)], pay_skip);
    c.pieces[0].inline = true;
    c
}

/// Packets of `k` = 1..=6 pieces that each fit one beat (`skip + len <= 64`) and of `k` pieces
/// of 65..=600 bytes, ten of each, SEND ONLY.
pub fn short_and_long_piece_cases(g: &mut Gen) -> Vec<Case> {
    let mut cases = Vec::new();
    for k in 1..=6usize {
        for _ in 0..10 {
            let mut short = Vec::new();
            let mut long = Vec::new();
            for _ in 0..k {
                let s = g.rng.range(0, 63) as usize;
                short.push((s, g.rng.range(1, 64 - s as u64) as usize));
                long.push((s, g.rng.range(65, 600) as usize));
            }
            cases.push(make_case_pieces(g, 0x04, &short, 0));
            cases.push(make_case_pieces(g, 0x04, &long, 0));
        }
    }
    cases
}

/// Each packet's cost with everything ready: the cycles between its final chunk's entry into
/// the gearbox and the previous packet's (so the first packet, which waits for the pipeline,
/// has none), and its cost in the assembler docstring's model, `n + 2` (+1 with a header
/// longer than a beat, +1 with pad), `n` its payload beats.
pub fn packet_costs(cases: &[Case], out: &Outcome) -> Vec<(u64, u64)> {
    (1..cases.len())
        .map(|i| {
            let c = &cases[i];
            let model = c.beats() as u64 + 2 + u64::from(c.two_chunks) + u64::from(c.pad);
            (out.ends[i] - out.ends[i - 1], model)
        })
        .collect()
}

/// A UD SEND ONLY job (0x64, 0x65 with `imm`): the expected frame is the codec's RC SEND ONLY
/// frame whose payload is the DETH (Q_Key, a reserved byte, source QP `qpn`), the ImmDt and
/// the data, with the opcode replaced (the codec does not model DETH; the ICRC, which covers
/// the opcode, is not part of the assembler's output).
pub fn make_ud_case(g: &mut Gen, imm: Option<u32>, plen: usize, qkey: u32, qpn: u8) -> Case {
    let rng = &mut g.rng;
    let op = if imm.is_some() { 0x65 } else { 0x64 };
    let mut r = codec::nic_style_repr(rng, 0x04);
    r.eth.src_addr = g.mac;
    r.ipv4.src_addr = g.ip;
    r.bth.ack_req = false;
    let data = rng.bytes(plen);
    let mut pay = qkey.to_be_bytes().to_vec();
    pay.extend_from_slice(&[0, 0, 0, qpn]);
    if let Some(i) = imm {
        pay.extend_from_slice(&i.to_be_bytes());
    }
    pay.extend_from_slice(&data);
    r.payload = pay;
    let skip = rng.range(0, 63) as usize;
    let pieces = if plen == 0 { Vec::new() } else { vec![g.host.place(rng, skip, &data, true)] };
    let l = TxJob::default();
    let ext4 = imm.map_or(u64::from(rng.u32()), |i| codec::imm_bits(&ImmDtRepr { data: i }));
    let job = vec![
        (l.get_my_offset_opcode(), l.get_my_width_opcode(), u64::from(op)),
        (l.get_my_offset_has_deth(), l.get_my_width_has_deth(), 1),
        (l.get_my_offset_has_ext4(), l.get_my_width_has_ext4(), u64::from(imm.is_some())),
        (l.get_my_offset_psn(), l.get_my_width_psn(), u64::from(r.bth.psn)),
        (l.get_my_offset_dest_qpn(), l.get_my_width_dest_qpn(), u64::from(r.bth.dest_qp)),
        (l.get_my_offset_pkey(), l.get_my_width_pkey(), u64::from(r.bth.pkey)),
        (l.get_my_offset_udp_sport(), l.get_my_width_udp_sport(), u64::from(r.udp.src_port)),
        (l.get_my_offset_dest_ip(), l.get_my_width_dest_ip(), codec::ip_bits(r.ipv4.dst_addr)),
        (l.get_my_offset_dest_mac(), l.get_my_width_dest_mac(), codec::mac_bits(r.eth.dst_addr)),
        // The Q_Key rides in the RETH's R_Key; VA and length are garbage.
        (l.get_my_offset_reth_va(), l.get_my_width_reth_va(), rng.next_u64()),
        (l.get_my_offset_reth_rkey(), l.get_my_width_reth_rkey(), u64::from(qkey)),
        (l.get_my_offset_reth_len(), l.get_my_width_reth_len(), u64::from(rng.u32())),
        (l.get_my_offset_plen(), l.get_my_width_plen(), plen as u64),
        (l.get_my_offset_pay_skip(), l.get_my_width_pay_skip(), skip as u64),
        (l.get_my_offset_ext4(), l.get_my_width_ext4(), ext4),
        (l.get_my_offset_rsp_qpn(), l.get_my_width_rsp_qpn(), u64::from(qpn)),
        (l.get_my_offset_at_swap(), l.get_my_width_at_swap(), rng.next_u64()),
        (l.get_my_offset_at_cmp(), l.get_my_width_at_cmp(), rng.next_u64()),
    ];
    let mut want = codec::strip_icrc(&r.emit());
    want[42] = op;
    r.fill_lengths();
    let hdr = 54 + 8 + if imm.is_some() { 4 } else { 0 };
    Case {
        job,
        op,
        plen,
        skip,
        want,
        pieces,
        late: None,
        two_chunks: hdr > 64,
        pad: r.pad_len() != 0,
        repr: AnyPacket::Roce(r),
        drop: false,
    }
}

/// [`run`], also collecting every `ud_done` pulse's `(qpn, psn)` (sampled each cycle of the
/// run through the harness's per-cycle hook).
pub fn run_watching_ud(dut: &mut Dut, p: &Pins, rng: &mut Rng, cases: &[Case], r: Rates) -> (Outcome, Vec<(u64, u64)>) {
    let done = dut.port("ud_done");
    let qpn = dut.port("ud_done_qpn");
    let psn = dut.port("ud_done_psn");
    let mut seen = Vec::new();
    let out = run_with(dut, p, rng, cases, r, &mut |d: &mut Dut| {
        if d.get(done) == 1 {
            seen.push((d.get(qpn), d.get(psn)));
        }
    });
    (out, seen)
}
