//! `TxArbiter` in Verilator: request frames pass through, ACK/NAK frames are built from
//! `AckJob`s and placed between them, checked against the reference codec.
//!
//! - `acks_between_request_frames`: random request frames (codec frames without ICRC, beats with
//!   random gaps) and random ACK jobs (any syndrome, MSN, PSN, peer addresses, arriving at
//!   random times) under random `out_ready`: the output is a sequence of whole frames; the
//!   request frames come out unchanged and in order, never interrupted; each ACK frame is the
//!   codec's ACKNOWLEDGE frame (AETH syndrome/MSN, NIC header conventions) minus its ICRC; ACKs
//!   keep their order, each is read (`ack_read`) exactly once and before its frame leaves, and an
//!   ACK whose frame is built (read from the FIFO at least `ACK_BUILD` cycles earlier, the header
//!   builder's latency) and waiting at a frame boundary goes before the next request frame.
mod harness;

use harness::codec::{self, assert_frame_eq};
use harness::{pack_fields, Dut, Port, Rng};
use rnic_firmware_tests::wire::{AethRepr, RocePacketRepr};
use rnic_hdl::records::AckJob;
use rnic_hdl::tx_arbiter::TxArbiter;
use std::collections::VecDeque;

struct Pins {
    req_valid: Port,
    req_ready: Port,
    req_data: Port,
    req_count: Port,
    req_last: Port,
    ack_valid: Port,
    ack: Port,
    ack_read: Port,
    out_valid: Port,
    out_ready: Port,
    out_data: Port,
    out_count: Port,
    out_last: Port,
}

/// An ACK job's fields and the frame (without ICRC) the codec makes of them.
struct Ack {
    fields: Vec<(usize, usize, u64)>,
    want: Vec<u8>,
}

fn make_ack(rng: &mut Rng, src_mac: [u8; 6], src_ip: std::net::Ipv4Addr) -> Ack {
    let mut r: RocePacketRepr = codec::nic_style_repr(rng, 0x11);
    r.eth.src_addr = src_mac;
    r.ipv4.src_addr = src_ip;
    r.bth.ack_req = false;
    let (rnr, any) = (0x20 | (rng.u32() as u8 & 0x1F), rng.u32() as u8);
    let syndrome = *rng.pick(&[0x1Fu8, 0x00, 0x60, 0x61, 0x62, 0x63, rnr, any]);
    r.aeth = Some(AethRepr { syndrome, msn: rng.u32() & 0xFF_FFFF });
    let a = AckJob::default();
    let aeth = r.aeth.clone().unwrap();
    let fields = vec![
        (a.get_my_offset_dest_mac(), a.get_my_width_dest_mac(), codec::mac_bits(r.eth.dst_addr)),
        (a.get_my_offset_dest_ip(), a.get_my_width_dest_ip(), codec::ip_bits(r.ipv4.dst_addr)),
        (a.get_my_offset_udp_sport(), a.get_my_width_udp_sport(), u64::from(r.udp.src_port)),
        (a.get_my_offset_pkey(), a.get_my_width_pkey(), u64::from(r.bth.pkey)),
        (a.get_my_offset_dest_qpn(), a.get_my_width_dest_qpn(), u64::from(r.bth.dest_qp)),
        (a.get_my_offset_psn(), a.get_my_width_psn(), u64::from(r.bth.psn)),
        (a.get_my_offset_syndrome(), a.get_my_width_syndrome(), u64::from(aeth.syndrome)),
        (a.get_my_offset_msn(), a.get_my_width_msn(), u64::from(aeth.msn)),
    ];
    Ack { fields, want: codec::strip_icrc(&r.emit()) }
}

fn make_request(rng: &mut Rng) -> Vec<u8> {
    let op = *rng.pick(&[0x06u8, 0x07, 0x08, 0x0A]);
    let mut r = codec::nic_style_repr(rng, op);
    codec::add_ext_headers(rng, &mut r);
    let plen = rng.range(0, 1500) as usize;
    r.payload = rng.bytes(plen);
    codec::strip_icrc(&r.emit())
}

/// Cycles from `ack_read` until the ACK frame is built and can be offered.
const ACK_BUILD: u64 = 4;

#[derive(Debug, PartialEq, Eq)]
enum Out {
    Req(usize),
    Ack(usize),
}

#[test]
fn acks_between_request_frames() {
    let mut dut = Dut::build::<TxArbiter>("tx_arbiter").expect("build the TX arbiter model");
    let names = [
        "req_valid",
        "req_ready",
        "req_data",
        "req_count",
        "req_last",
        "ack_valid",
        "ack",
        "ack_read",
        "out_valid",
        "out_ready",
        "out_data",
        "out_count",
        "out_last",
    ];
    let q: Vec<Port> = names.iter().map(|n| dut.port(n)).collect();
    let p = Pins {
        req_valid: q[0],
        req_ready: q[1],
        req_data: q[2],
        req_count: q[3],
        req_last: q[4],
        ack_valid: q[5],
        ack: q[6],
        ack_read: q[7],
        out_valid: q[8],
        out_ready: q[9],
        out_data: q[10],
        out_count: q[11],
        out_last: q[12],
    };
    let mut rng = Rng::from_env(0x7A2B_0001);
    let seed = rng.0;
    let mac = codec::random_mac(&mut rng);
    let ip = codec::random_ip(&mut rng);
    dut.set("src_mac", codec::mac_bits(mac));
    dut.set("src_ip", codec::ip_bits(ip));
    dut.reset(2);
    let ack_width = dut.width(p.ack);

    for (round, (p_req, p_ack, p_out)) in [(100u64, 10u64, 100u64), (60, 30, 50), (90, 60, 20)].into_iter().enumerate()
    {
        let reqs: Vec<Vec<u8>> = (0..150).map(|_| make_request(&mut rng)).collect();
        let acks: Vec<Ack> = (0..150).map(|_| make_ack(&mut rng, mac, ip)).collect();
        // Request beats (data, count, last, frame).
        let mut beats: VecDeque<([u8; 64], usize, bool)> = VecDeque::new();
        for f in &reqs {
            beats.extend(codec::frame_beats(&mut rng, f));
        }
        let mut next_ack = 0usize; // next ACK to offer (FIFO head)
        let mut acks_avail = 0usize; // ACKs pushed into the FIFO so far
        let mut read_at: Vec<u64> = Vec::new(); // cycle each ACK was read from the FIFO
        let mut outs: Vec<Out> = Vec::new();
        let mut cur: Vec<u8> = Vec::new();
        let mut cur_is_ack: Option<bool> = None;
        let (mut req_done, mut ack_done) = (0usize, 0usize);
        let mut cycles = 0u64;
        while req_done < reqs.len() || ack_done < acks.len() {
            cycles += 1;
            assert!(cycles < 200_000, "no progress");
            if acks_avail < acks.len() && rng.chance(p_ack, 100) {
                acks_avail += 1;
            }
            let ack_valid = next_ack < acks_avail;
            dut.set_bit(p.ack_valid, ack_valid);
            if ack_valid {
                dut.set_wide(p.ack, &pack_fields(ack_width, &acks[next_ack].fields));
            } else {
                dut.set_wide(p.ack, &pack_fields(ack_width, &[(0, 64, rng.next_u64())]));
            }
            let req_valid = !beats.is_empty() && rng.chance(p_req, 100);
            dut.set_bit(p.req_valid, req_valid);
            if let (true, Some((d, c, l))) = (req_valid, beats.front()) {
                dut.set_wide(p.req_data, d);
                dut.set(p.req_count, *c as u64);
                dut.set_bit(p.req_last, *l);
            } else {
                dut.set_wide(p.req_data, &rng.bytes(64));
                dut.set(p.req_count, rng.range(1, 64));
                dut.set_bit(p.req_last, rng.chance(1, 2));
            }
            let ready = rng.chance(p_out, 100);
            dut.set_bit(p.out_ready, ready);
            dut.eval();
            let ov = dut.get_bit(p.out_valid);
            // Priority: a built ACK waiting at a frame boundary goes first.
            let ack_built = ack_done < read_at.len() && read_at[ack_done] + ACK_BUILD <= cycles;
            let boundary = cur_is_ack.is_none() && cur.is_empty();
            if ack_built && boundary {
                assert!(ov, "round {round} cycle {cycles}: an ACK waits at a frame boundary but nothing is offered");
            }
            let took_req = req_valid && dut.get_bit(p.req_ready);
            let read_ack = dut.get_bit(p.ack_read);
            assert!(!read_ack || ack_valid, "ack_read without ack_valid");
            if read_ack {
                read_at.push(cycles);
                next_ack += 1;
            }
            if ov && ready {
                let n = dut.get(p.out_count) as usize;
                let last = dut.get_bit(p.out_last);
                let data = dut.get_wide(p.out_data);
                // Which source is this beat from? A request beat is taken with req_ready.
                let is_ack = !took_req;
                if is_ack {
                    assert!(
                        ack_done < read_at.len(),
                        "round {round} cycle {cycles}: an ACK beat before its job was read"
                    );
                }
                if ack_built && boundary {
                    assert!(is_ack, "round {round} cycle {cycles}: a request frame went before a waiting ACK");
                }
                if let Some(a) = cur_is_ack {
                    assert_eq!(a, is_ack, "round {round} cycle {cycles}: a frame mixes request and ACK beats");
                }
                cur_is_ack = Some(is_ack);
                assert!(last || n == 64, "non-last beat with {n} bytes");
                cur.extend_from_slice(&data[..n]);
                if last {
                    let f = std::mem::take(&mut cur);
                    if is_ack {
                        assert_frame_eq(
                            &f,
                            &acks[ack_done].want,
                            &format!("round {round}: ACK {ack_done} (seed {seed:#x})"),
                        );
                        outs.push(Out::Ack(ack_done));
                        ack_done += 1;
                    } else {
                        assert_frame_eq(
                            &f,
                            &reqs[req_done],
                            &format!("round {round}: request {req_done} (seed {seed:#x})"),
                        );
                        outs.push(Out::Req(req_done));
                        req_done += 1;
                    }
                    cur_is_ack = None;
                }
            } else {
                assert!(!took_req, "req_ready while the output did not take the beat");
            }
            if took_req {
                beats.pop_front();
            }
            dut.tick();
        }
        assert!(outs.iter().any(|o| matches!(o, Out::Ack(_))) && outs.iter().any(|o| matches!(o, Out::Req(_))));
    }
}
