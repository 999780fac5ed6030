//! `RawTxMux` in Verilator: raw frames from BAR0 between the RoCE frames of the ICRC stage.
//!
//! - `raw_frames_between_roce_frames`: random RoCE frames (random lengths, beats with random
//!   gaps) and raw frames offered at random times with random lengths 1..=127, under random
//!   MAC back-pressure: the output is a sequence of whole frames; the RoCE frames come out
//!   unchanged, in order and never interrupted; each raw frame is taken once (`send_ready`
//!   low while one is held) and comes out, in order, as one beat with its bytes and a length of
//!   its own clamped to 60..=64 (rnic_contract::regs::raw); a held raw frame goes before the
//!   next RoCE frame once the one in progress has ended.
mod harness;

use harness::{codec, Dut, Rng};
use rnic_contract::regs::raw::{MAX_FRAME_BYTES, MIN_FRAME_BYTES};
use rnic_hdl::raw_tx::RawTxMux;
use std::collections::VecDeque;

#[test]
fn raw_frames_between_roce_frames() {
    let mut dut = Dut::build::<RawTxMux>("raw_tx_mux").expect("build RawTxMux");
    let mut rng = Rng::from_env(0x2A57_0002);
    let seed = rng.0;
    dut.reset(2);
    for (round, (p_in, p_raw, p_out)) in [(90u64, 5u64, 90u64), (40, 30, 50), (100, 60, 20)].into_iter().enumerate() {
        let roce: Vec<Vec<u8>> = (0..120)
            .map(|_| {
                let n = rng.range(60, 400) as usize;
                rng.bytes(n)
            })
            .collect();
        let raws: Vec<(Vec<u8>, u64)> = (0..80)
            .map(|_| {
                let d = rng.bytes(64);
                (d, rng.range(1, 127))
            })
            .collect();
        let mut beats: VecDeque<([u8; 64], usize, bool)> = VecDeque::new();
        for f in &roce {
            beats.extend(codec::frame_beats(&mut rng, f));
        }
        let (mut next_raw, mut raw_out, mut roce_out) = (0usize, 0usize, 0usize);
        let mut held = false;
        let mut cur: Vec<u8> = Vec::new();
        let mut cycles = 0u64;
        while roce_out < roce.len() || raw_out < raws.len() {
            cycles += 1;
            assert!(cycles < 100_000, "round {round}: no progress (seed {seed:#x})");
            let offer = next_raw < raws.len() && rng.chance(p_raw, 100);
            dut.set_bit("send_valid", offer);
            let (d, l) = if offer { raws[next_raw].clone() } else { (rng.bytes(64), rng.range(0, 127)) };
            dut.set_wide("send_data", &d);
            dut.set("send_len", l);
            let in_valid = !beats.is_empty() && rng.chance(p_in, 100);
            dut.set_bit("in_valid", in_valid);
            if let (true, Some((d, c, l))) = (in_valid, beats.front()) {
                dut.set_wide("in_data", d);
                dut.set("in_count", *c as u64);
                dut.set_bit("in_last", *l);
            } else {
                dut.set_wide("in_data", &rng.bytes(64));
                dut.set("in_count", rng.range(1, 64));
                dut.set_bit("in_last", rng.chance(1, 2));
            }
            let ready = rng.chance(p_out, 100);
            dut.set_bit("out_ready", ready);
            dut.eval();
            assert_eq!(dut.get_bit("send_ready"), !held, "round {round} cycle {cycles}: send_ready");
            let took_raw = offer && !held;
            let ov = dut.get_bit("out_valid");
            let took_in = in_valid && dut.get_bit("in_ready");
            if held && cur.is_empty() {
                assert!(ov && !took_in, "round {round} cycle {cycles}: a held raw frame waits at a boundary");
            }
            if ov && ready {
                let n = dut.get("out_count") as usize;
                let last = dut.get_bit("out_last");
                let data = dut.get_wide("out_data");
                if took_in {
                    assert!(last || n == 64);
                    cur.extend_from_slice(&data[..n]);
                    if last {
                        assert_eq!(cur, roce[roce_out], "round {round}: RoCE frame {roce_out} (seed {seed:#x})");
                        roce_out += 1;
                        cur.clear();
                    }
                } else {
                    assert!(held && cur.is_empty(), "round {round} cycle {cycles}: a beat from nowhere");
                    let (want, len) = &raws[raw_out];
                    let want_len = (*len as u32).clamp(MIN_FRAME_BYTES, MAX_FRAME_BYTES) as usize;
                    assert!(last, "a raw frame is one beat");
                    assert_eq!(n, want_len, "round {round}: raw frame {raw_out} length");
                    assert_eq!(&data[..n], &want[..n], "round {round}: raw frame {raw_out} bytes");
                    raw_out += 1;
                    held = false;
                }
            } else {
                assert!(!took_in, "in_ready while the output did not take the beat");
            }
            if took_in {
                beats.pop_front();
            }
            if took_raw {
                held = true;
                next_raw += 1;
            }
            dut.tick();
        }
        assert!(!held && cur.is_empty());
    }
}
