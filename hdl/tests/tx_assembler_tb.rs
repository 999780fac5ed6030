//! `TxAssembler` feeding a `Gearbox` (wired as in the NIC's top level, in a test top defined
//! here) in Verilator, against the reference codec.
//!
//! A job's extension headers come from its flags: `has_reth` puts the RETH fields after the BTH,
//! `has_ext4` the 4 bytes of `ext4` (an ImmDt or an AETH, wire order) after the RETH if any,
//! else right after the BTH; `has_atomic_eth` an AtomicETH (`reth_va`, `reth_rkey`, `at_swap`,
//! `at_cmp`, big-endian) and `has_atomic_ack` an AETH (`ext4`, with `has_ext4` set as the
//! scheduler sets it) and an AtomicAckETH (`at_swap`). Jobs without a flag carry garbage in the
//! fields it would select (an atomic job's `reth_len`, a non-atomic job's `at_swap`/`at_cmp`).
//! Every frame is checked against the codec's frame for the same fields (minus the ICRC; the
//! codec's `AtomicPacketRepr` for the atomics) field by field (length = header + plen + pad
//! with a 54/58/66/70/74/82-byte header, IPv4 Total Length, UDP Length, PadCnt, RETH at bytes
//! 54..70, ImmDt / AETH at 54..58 or, after a RETH, 70..74, AtomicETH at 54..82, AtomicAckETH
//! at 58..66, payload right after), byte for byte, and parsed back once an ICRC is appended.
//!
//! - `jobs_become_codec_frames`: random jobs (RC RDMA WRITE FIRST/MIDDLE/LAST/ONLY and LAST/ONLY
//!   WITH IMMEDIATE, READ REQUEST, SEND FIRST/LAST/ONLY and LAST/ONLY WITH IMMEDIATE, READ
//!   RESPONSE FIRST/MIDDLE/LAST/ONLY, ATOMIC ACKNOWLEDGE, COMPARE SWAP, FETCH ADD (no payload),
//!   UC SEND/WRITE with and without immediate; payload 0..=4096 bytes; every host alignment
//!   `pay_skip` 0..63) with payload beats read from a host
//!   buffer (garbage around the payload) arriving with random gaps, jobs arriving at random
//!   times and random `out_ready` back-pressure: each output frame is right as above; each
//!   job takes exactly `ceil((pay_skip + plen) / 64)` payload beats.
//! - `extension_header_layouts`: each header layout (none; ImmDt alone; AETH alone; RETH; RETH
//!   + ImmDt) with payloads 0..=72 and lengths around the beat boundaries, and the atomic ones
//!   (AtomicETH: 82 bytes; AETH + AtomicAckETH: 66 bytes; both a full first chunk and a second
//!   one, no payload), with and without back-pressure.
//! - `atomic_jobs_become_codec_frames`: COMPARE SWAP, FETCH ADD and ATOMIC ACKNOWLEDGE jobs
//!   with random operands (all-ones and all-zeros too), back to back and among 0..=200-byte
//!   WRITEs and SENDs, each frame the codec's 82- or 66-byte frame.
//! - `back_to_back_jobs_keep_pace`: with everything ready, a packet of `n` payload beats costs
//!   at most `n + 3` cycles (+1 when the header is longer than a beat: a RETH or an atomic's
//!   headers, +1 with pad; an ImmDt or AETH alone costs nothing, the header still fits one
//!   chunk): one chunk per cycle and one idle cycle
//!   per packet, plus at most the gearbox's one-cycle wait when a frame's final bytes span two
//!   beats; the first frame waits only for the pipeline (header builder 4 cycles, gearbox 4).
mod harness;

use harness::codec::{self, assert_frame_eq, AnyPacket};
use harness::{pack_fields, Dut, Port, Rng};
use rnic_firmware_tests::wire::{AtomicPacketRepr, RethRepr, RocePacketRepr};
use rnic_hdl::gearbox::Gearbox;
use rnic_hdl::records::TxJob;
use rnic_hdl::tx_assembler::TxAssembler;
use rust_hdl::prelude::*;
use std::collections::VecDeque;

/// The assembler and its gearbox, as `top.rs` wires them.
#[derive(LogicBlock, Default)]
struct AsmTop {
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
    pub out_valid: Signal<Out, Bit>,
    pub out_ready: Signal<In, Bit>,
    pub out_data: Signal<Out, Bits<512>>,
    pub out_count: Signal<Out, Bits<7>>,
    pub out_last: Signal<Out, Bit>,
    assembler: TxAssembler,
    packer: Gearbox,
}

impl Logic for AsmTop {
    #[hdl_gen]
    fn update(&mut self) {
        clock!(self, clock, assembler, packer);
        self.assembler.reset.next = self.reset.val();
        self.packer.reset.next = self.reset.val();
        self.assembler.src_mac.next = self.src_mac.val();
        self.assembler.src_ip.next = self.src_ip.val();
        self.assembler.job_valid.next = self.job_valid.val();
        self.assembler.job.next = self.job.val();
        self.job_read.next = self.assembler.job_read.val();
        self.assembler.pay_valid.next = self.pay_valid.val();
        self.assembler.pay_data.next = self.pay_data.val();
        self.pay_ready.next = self.assembler.pay_ready.val();
        self.packer.in_valid.next = self.assembler.g_valid.val();
        self.assembler.g_ready.next = self.packer.in_ready.val();
        self.packer.in_data.next = self.assembler.g_data.val();
        self.packer.in_skip.next = self.assembler.g_skip.val();
        self.packer.in_len.next = self.assembler.g_len.val();
        self.packer.in_last.next = self.assembler.g_last.val();
        self.out_valid.next = self.packer.out_valid.val();
        self.packer.out_ready.next = self.out_ready.val();
        self.out_data.next = self.packer.out_data.val();
        self.out_count.next = self.packer.out_count.val();
        self.out_last.next = self.packer.out_last.val();
    }
}

struct Pins {
    job_valid: Port,
    job: Port,
    job_read: Port,
    pay_valid: Port,
    pay_data: Port,
    pay_ready: Port,
    out_valid: Port,
    out_ready: Port,
    out_data: Port,
    out_count: Port,
    out_last: Port,
}

/// One job: its record, the frame the codec emits for it, and its payload beats.
struct Case {
    /// The TxJob fields: (offset, width, value).
    job: Vec<(usize, usize, u64)>,
    op: u8,
    plen: usize,
    skip: usize,
    want: Vec<u8>,
    beats: Vec<[u8; 64]>,
    /// The header is longer than one beat (a RETH or an atomic's extension headers).
    two_chunks: bool,
    pad: bool,
    /// The reference frame's meaning (lengths filled in).
    repr: AnyPacket,
}

/// Opcodes the assembler is given: RDMA WRITE FIRST/MIDDLE/LAST/ONLY with and without
/// immediate, READ REQUEST, SEND FIRST/LAST/ONLY with and without immediate, READ RESPONSE
/// FIRST/MIDDLE/LAST/ONLY, ATOMIC ACKNOWLEDGE, COMPARE SWAP, FETCH ADD (RC), and UC
/// SEND/WRITE with and without immediate.
const OPCODES: [u8; 25] = [
    0x06, 0x07, 0x08, 0x09, 0x0A, 0x0B, 0x0C, 0x00, 0x02, 0x03, 0x04, 0x05, 0x0D, 0x0E, 0x0F, 0x10, 0x12, 0x13, 0x14,
    0x26, 0x28, 0x2A, 0x23, 0x29, 0x2B,
];

fn is_atomic(op: u8) -> bool {
    matches!(op, 0x12..=0x14)
}

/// A payload length for `op`: a whole MTU for FIRST/MIDDLE packets, none for a READ request.
fn random_plen(rng: &mut Rng, op: u8) -> usize {
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

fn make_case(rng: &mut Rng, src_mac: [u8; 6], src_ip: std::net::Ipv4Addr) -> Case {
    let op = *rng.pick(&OPCODES);
    let plen = random_plen(rng, op);
    make_case_of(rng, src_mac, src_ip, op, plen)
}

/// A job for `op` with `plen` payload bytes: its extension headers from the codec (a RETH in
/// the RETH fields, an ImmDt or AETH in `ext4`); fields the job's flags leave unused hold
/// garbage, as a scheduler may leave them.
fn make_case_of(rng: &mut Rng, src_mac: [u8; 6], src_ip: std::net::Ipv4Addr, op: u8, plen: usize) -> Case {
    if is_atomic(op) {
        assert_eq!(plen, 0, "atomic frames carry no payload");
        let mut a = codec::atomic_repr(rng, op);
        a.eth.src_addr = src_mac;
        a.ipv4.src_addr = src_ip;
        return make_atomic_case(rng, a);
    }
    let mut r = codec::nic_style_repr(rng, op);
    r.eth.src_addr = src_mac;
    r.ipv4.src_addr = src_ip;
    codec::add_ext_headers(rng, &mut r);
    r.payload = rng.bytes(plen);
    let skip = rng.range(0, 63) as usize;
    let nbeats = if plen == 0 { 0 } else { (skip + plen).div_ceil(64) };
    let mut host = rng.bytes(64 * nbeats);
    if plen > 0 {
        host[skip..skip + plen].copy_from_slice(&r.payload);
    }
    let beats = host.chunks(64).map(|c| c.try_into().unwrap()).collect();
    let reth = r.reth.clone().unwrap_or(RethRepr { virt_addr: rng.next_u64(), rkey: rng.u32(), dma_len: rng.u32() });
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
        (l.get_my_offset_pay_skip(), l.get_my_width_pay_skip(), skip as u64),
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
        skip,
        want,
        beats,
        two_chunks: r.reth.is_some(),
        pad: r.pad_len() != 0,
        repr: AnyPacket::Roce(r),
    }
}

/// A job for the atomic frame `a` (no payload): COMPARE SWAP / FETCH ADD with `has_atomic_eth`
/// (VA and R_Key in the RETH fields, `reth_len` garbage), ATOMIC ACKNOWLEDGE with
/// `has_atomic_ack` and `has_ext4` (the AETH in `ext4`, the original value in `at_swap`, VA,
/// R_Key, length and `at_cmp` garbage), as the scheduler builds them.
fn make_atomic_case(rng: &mut Rng, mut a: AtomicPacketRepr) -> Case {
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
        beats: Vec::new(),
        two_chunks: true,
        pad: false,
        repr: AnyPacket::Atomic(a),
    }
}

/// Checks `got` (a frame without ICRC) field by field where the extension headers change the
/// layout, then byte for byte against the codec's frame, then that it parses once the ICRC is
/// appended.
fn check_frame(got: &[u8], c: &Case, ctx: &str) {
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

/// The assembler model, its pins, the test's random generator (after drawing the NIC's own
/// addresses), those addresses and the seed to print in failures.
fn setup(seed: u64) -> (Dut, Pins, Rng, [u8; 6], std::net::Ipv4Addr, u64) {
    let mut dut = Dut::build::<AsmTop>("tx_assembler").expect("build the assembler + gearbox model");
    let names = [
        "job_valid", "job", "job_read", "pay_valid", "pay_data", "pay_ready", "out_valid", "out_ready", "out_data",
        "out_count", "out_last",
    ];
    let q: Vec<Port> = names.iter().map(|n| dut.port(n)).collect();
    let p = Pins {
        job_valid: q[0],
        job: q[1],
        job_read: q[2],
        pay_valid: q[3],
        pay_data: q[4],
        pay_ready: q[5],
        out_valid: q[6],
        out_ready: q[7],
        out_data: q[8],
        out_count: q[9],
        out_last: q[10],
    };
    let mut rng = Rng::from_env(seed);
    let seed = rng.0;
    let mac = codec::random_mac(&mut rng);
    let ip = codec::random_ip(&mut rng);
    dut.set("src_mac", codec::mac_bits(mac));
    dut.set("src_ip", codec::ip_bits(ip));
    dut.reset(2);
    (dut, p, rng, mac, ip, seed)
}

/// Runs the cases; returns the output frames and the cycle count. Percent chances per cycle:
/// a queued job becomes visible (`p_job`), a payload beat is offered (`p_pay`), `out_ready`.
fn run(dut: &mut Dut, p: &Pins, rng: &mut Rng, cases: &[Case], p_job: u64, p_pay: u64, p_out: u64) -> (Vec<Vec<u8>>, u64) {
    let mut jobs: VecDeque<&Case> = VecDeque::new();
    let mut pending = cases.iter().collect::<VecDeque<_>>();
    // The payload stream of every job taken so far, in order (as the DMA returns it: beats of
    // a job may come before the assembler needs them, never before the job was read).
    let mut stream: VecDeque<[u8; 64]> = VecDeque::new();
    let mut beats_taken = vec![0usize; cases.len()];
    let mut job_of_beat: VecDeque<usize> = VecDeque::new();
    let mut taken_jobs = 0usize;
    let mut frames = Vec::new();
    let mut cur = Vec::new();
    let mut cycles = 0u64;
    while frames.len() < cases.len() {
        cycles += 1;
        assert!(cycles < 100_000 + 200 * cases.len() as u64, "no progress: {} frames", frames.len());
        if !pending.is_empty() && rng.chance(p_job, 100) {
            jobs.push_back(pending.pop_front().unwrap());
        }
        dut.set_bit(p.job_valid, !jobs.is_empty());
        if let Some(c) = jobs.front() {
            let w = dut.width(p.job);
            dut.set_wide(p.job, &pack_fields(w, &c.job));
        } else {
            let w = dut.width(p.job);
            let mut junk = rng.bytes(w.div_ceil(8));
            if w % 8 != 0 {
                *junk.last_mut().unwrap() &= (1u8 << (w % 8)) - 1;
            }
            dut.set_wide(p.job, &junk);
        }
        let pv = !stream.is_empty() && rng.chance(p_pay, 100);
        dut.set_bit(p.pay_valid, pv);
        match stream.front() {
            Some(beat) if pv => dut.set_wide(p.pay_data, beat),
            _ => dut.set_wide(p.pay_data, &rng.bytes(64)),
        }
        let or = rng.chance(p_out, 100);
        dut.set_bit(p.out_ready, or);
        dut.eval();
        if dut.get_bit(p.job_read) {
            let c = jobs.pop_front().expect("job_read with no job");
            for beat in &c.beats {
                stream.push_back(*beat);
                job_of_beat.push_back(taken_jobs);
            }
            taken_jobs += 1;
        }
        if pv && dut.get_bit(p.pay_ready) {
            stream.pop_front();
            let j = job_of_beat.pop_front().unwrap();
            beats_taken[j] += 1;
            // A job's beats are consumed only while its own frame is being built.
            assert!(j >= frames.len(), "cycle {cycles}: beat of job {j} taken after its frame ended");
        }
        if or && dut.get_bit(p.out_valid) {
            let n = dut.get(p.out_count) as usize;
            let last = dut.get_bit(p.out_last);
            assert!(last || n == 64, "a non-last beat with {n} bytes");
            cur.extend_from_slice(&dut.get_wide(p.out_data)[..n]);
            if last {
                let i = frames.len();
                assert_eq!(beats_taken[i], cases[i].beats.len(), "frame {i}: payload beats taken");
                frames.push(std::mem::take(&mut cur));
            }
        }
        dut.tick();
    }
    assert!(stream.is_empty(), "{} payload beats left over", stream.len());
    (frames, cycles)
}

#[test]
fn jobs_become_codec_frames() {
    for (round, (pj, pp, po)) in [(100, 100, 100), (30, 60, 70), (80, 90, 25)].into_iter().enumerate() {
        let (mut dut, p, mut rng, mac, ip, seed) = setup(0x7A55_0000 + round as u64);
        let cases: Vec<Case> = (0..250).map(|_| make_case(&mut rng, mac, ip)).collect();
        let (frames, cycles) = run(&mut dut, &p, &mut rng, &cases, pj, pp, po);
        for (i, (got, c)) in frames.iter().zip(&cases).enumerate() {
            let ctx = format!("round {round} frame {i}: opcode {:#04x} plen {} skip {} (seed {seed:#x})", c.op, c.plen, c.skip);
            check_frame(got, c, &ctx);
        }
        eprintln!("tx_assembler: {} frames in {cycles} cycles (job {pj}%, payload {pp}%, out {po}%)", cases.len());
    }
}

#[test]
fn extension_header_layouts() {
    // Every header layout the job flags select, with payloads that end the frame on each side
    // of the beat boundaries: none (54 bytes), ImmDt (SEND ONLY / RDMA WRITE LAST WITH
    // IMMEDIATE) or AETH (READ RESPONSE FIRST / LAST / ONLY) alone (58), RETH (RDMA WRITE ONLY,
    // READ REQUEST: 70), RETH + ImmDt (RDMA WRITE ONLY WITH IMMEDIATE: 74, a 10-byte second
    // header chunk).
    // The atomics: AETH + AtomicAckETH (ATOMIC ACKNOWLEDGE: 66) and AtomicETH (COMPARE SWAP,
    // FETCH ADD: 82), no payload.
    let layouts: [(u8, usize); 11] = [
        (0x04, 54), (0x05, 58), (0x09, 58), (0x0D, 58), (0x10, 58), (0x0A, 70), (0x0C, 70), (0x0B, 74), (0x12, 66),
        (0x13, 82), (0x14, 82),
    ];
    for (round, (pj, pp, po)) in [(100, 100, 100), (50, 70, 60)].into_iter().enumerate() {
        let (mut dut, p, mut rng, mac, ip, seed) = setup(0x7A55_2000 + round as u64);
        let mut cases = Vec::new();
        for (op, hlen) in layouts {
            let plens: Vec<usize> = if op == 0x0C || is_atomic(op) {
                vec![0; 6]
            } else {
                (0..=72).chain([120, 127, 128, 129, 180, 192, 1000, 4093, 4096]).collect()
            };
            for plen in plens {
                let c = make_case_of(&mut rng, mac, ip, op, plen);
                assert_eq!(54 + c.repr.ext_len(), hlen, "opcode {op:#04x}");
                cases.push(c);
            }
        }
        let (frames, cycles) = run(&mut dut, &p, &mut rng, &cases, pj, pp, po);
        for (i, (got, c)) in frames.iter().zip(&cases).enumerate() {
            let ctx = format!("round {round} frame {i}: opcode {:#04x} plen {} skip {} (seed {seed:#x})", c.op, c.plen, c.skip);
            check_frame(got, c, &ctx);
        }
        eprintln!("tx_assembler: {} layout frames in {cycles} cycles", cases.len());
    }
}

#[test]
fn back_to_back_jobs_keep_pace() {
    let (mut dut, p, mut rng, mac, ip, _) = setup(0x7A55_1000);
    let cases: Vec<Case> = (0..200).map(|_| make_case(&mut rng, mac, ip)).collect();
    let budget: u64 = cases
        .iter()
        .map(|c| c.beats.len() as u64 + 3 + u64::from(c.two_chunks) + u64::from(c.pad))
        .sum();
    let (frames, cycles) = run(&mut dut, &p, &mut rng, &cases, 100, 100, 100);
    assert_eq!(frames.len(), cases.len());
    eprintln!("tx_assembler: {} frames in {cycles} cycles, budget {budget}", cases.len());
    // Pipeline fill: job -> header (4) -> gearbox (4) -> first beat out, plus the tick count's
    // first and last cycle.
    assert!(cycles <= budget + 10, "{cycles} cycles, budget {budget}");
}

#[test]
fn atomic_jobs_become_codec_frames() {
    for (round, (pj, pp, po)) in [(100, 100, 100), (40, 70, 50)].into_iter().enumerate() {
        let (mut dut, p, mut rng, mac, ip, seed) = setup(0x7A55_3000 + round as u64);
        let mut cases = Vec::new();
        for i in 0..200 {
            let op = if i % 3 == 2 { *rng.pick(&[0x04u8, 0x0A, 0x0B, 0x05]) } else { *rng.pick(&[0x12u8, 0x13, 0x14]) };
            if is_atomic(op) {
                let mut a = codec::atomic_repr(&mut rng, op);
                a.eth.src_addr = mac;
                a.ipv4.src_addr = ip;
                // Operand corners: all ones, all zeros, one byte set.
                let corner = match i % 7 {
                    0 => Some(u64::MAX),
                    1 => Some(0),
                    2 => Some(0x80u64 << (8 * (i % 8))),
                    _ => None,
                };
                if let Some(v) = corner {
                    if let Some(e) = a.atomic_eth.as_mut() {
                        e.swap_add = v;
                        e.compare = !v;
                        e.virt_addr = v;
                    }
                    if let Some(o) = a.atomic_ack_eth.as_mut() {
                        o.orig_data = v;
                    }
                }
                cases.push(make_atomic_case(&mut rng, a));
            } else {
                let plen = rng.range(0, 200) as usize;
                cases.push(make_case_of(&mut rng, mac, ip, op, plen));
            }
        }
        let (frames, cycles) = run(&mut dut, &p, &mut rng, &cases, pj, pp, po);
        for (i, (got, c)) in frames.iter().zip(&cases).enumerate() {
            let ctx = format!("round {round} frame {i}: opcode {:#04x} plen {} (seed {seed:#x})", c.op, c.plen);
            check_frame(got, c, &ctx);
        }
        eprintln!("tx_assembler: {} atomic-mix frames in {cycles} cycles", cases.len());
    }
}
