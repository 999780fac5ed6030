//! A NIC reset with traffic in flight leaves nothing of that traffic behind. `rnic sim serve`
//! resets a NIC when its program leaves (as a function-level reset would), possibly in the
//! middle of a transfer. After the reset the NIC must send no frame and make no DMA access
//! until a driver sets it up again, and the next program on it must work. Until stop 27 the
//! NIC's FIFOs (rust-hdl's `SynchronousFIFO`, which has no reset) kept what they held across a
//! reset (packet jobs, payload reads and pieces, descriptors, tags), and this test's new
//! program after a reset in the middle of a 64 KiB WRITE stream got no completion at all: the
//! stale entries without their DMA data wedged the transmit path. Every FIFO is now a
//! `ResetFifo` (`hdl/src/reset_fifo.rs`).
mod common;

use common::pattern;
use rnic::sim::{sim_pair, SimDevice};
use rnic::{AccessFlags, Context, PortAddr, SendWr, WcStatus};
use rnic_sim::SimConfig;

const MSG: usize = 64 << 10;
const MSGS: usize = 24;

#[test]
fn a_reset_in_the_middle_of_a_write_stream_leaves_nothing_behind() {
    // Resets at several points of the stream: while the first WQEs are fetched, while packets
    // are queued for the wire, later in the stream.
    for reset_after in [400u64, 900, 2_000, 5_000, 9_000] {
        let (world, da, db) = sim_pair(SimConfig::default()).expect("simulated world");
        let a = Context::open_with_port(da, PortAddr::for_sim_nic(0)).unwrap();
        let b = Context::open_with_port(db, PortAddr::for_sim_nic(1)).unwrap();
        let (pa, pb) = (a.alloc_pd().unwrap(), b.alloc_pd().unwrap());
        let (cqa, cqb) = (a.create_cq(64).unwrap(), b.create_cq(4).unwrap());
        let mut src = pattern(reset_after, MSG * MSGS);
        let mut dst = vec![0u8; MSG * MSGS];
        let smr = pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let dmr = pb.register(&mut dst, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE).unwrap();
        let mut qa = pa.create_qp(&cqa).set_max_send_wr(MSGS as u32).build().unwrap();
        let mut qb = pb.create_qp(&cqb).build().unwrap();
        let (ea, eb) = (qa.endpoint().unwrap(), qb.endpoint().unwrap());
        let rb = eb.with_buffer(&dmr).buffer.unwrap();
        qa.connect(&eb).unwrap();
        qb.connect(&ea).unwrap();
        for k in 0..MSGS {
            let sge = smr.sge(k * MSG..(k + 1) * MSG).unwrap();
            qa.post_send_one(SendWr::rdma_write(k as u64, sge, rb.at((k * MSG) as u64)).signaled(true)).unwrap();
        }
        let mut w = world.borrow_mut();
        w.step_n(reset_after);
        let before = w.stats().nics[0];
        assert!(before.tx.frames > 0 || before.dma.read_bursts > 0, "reset at {reset_after}: the stream has started");
        w.reset(0).unwrap();
        let reset = SimConfig::default().reset_cycles;
        w.step_n(reset + 2);
        let after_reset = w.stats().nics[0];
        w.step_n(20_000);
        let later = w.stats().nics[0];
        assert_eq!(
            (later.tx.frames, later.dma.read_bursts, later.dma.write_bursts),
            (after_reset.tx.frames, after_reset.dma.read_bursts, after_reset.dma.write_bursts),
            "reset at cycle {reset_after} of the stream: NIC 0 sent frames or accessed host memory after its reset \
             (before the reset: {} frames, {} read bursts)",
            before.tx.frames,
            before.dma.read_bursts
        );
        assert_eq!(later.dma.errors, 0, "reset at {reset_after}: DMA errors");
        drop(w);

        // A new program on the reset NIC (a new driver context, a new QP to a new QP on the
        // other NIC): its WRITEs land exactly, complete once each, and nothing of the old
        // stream reaches either memory.
        let dst_after_reset = dst_snapshot(&dmr);
        let a2 = Context::open_with_port(SimDevice::new(world.clone(), 0).unwrap(), PortAddr::for_sim_nic(0)).unwrap();
        let pa2 = a2.alloc_pd().unwrap();
        let cqa2 = a2.create_cq(16).unwrap();
        let mut src2 = pattern(!reset_after, 8 * 4096);
        let mut dst2 = vec![0u8; 8 * 4096];
        let smr2 = pa2.register(&mut src2, AccessFlags::LOCAL_WRITE).unwrap();
        let dmr2 = pb.register(&mut dst2, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE).unwrap();
        let mut qa2 = pa2.create_qp(&cqa2).set_max_send_wr(8).build().unwrap();
        let mut qb2 = pb.create_qp(&cqb).build().unwrap();
        let (ea2, eb2) = (qa2.endpoint().unwrap(), qb2.endpoint().unwrap());
        let rb2 = eb2.with_buffer(&dmr2).buffer.unwrap();
        qa2.connect(&eb2).unwrap();
        qb2.connect(&ea2).unwrap();
        for k in 0..8usize {
            let sge = smr2.sge(k * 4096..(k + 1) * 4096).unwrap();
            qa2.post_send_one(SendWr::rdma_write(100 + k as u64, sge, rb2.at((k * 4096) as u64)).signaled(true))
                .unwrap();
        }
        let mut wcs = Vec::new();
        for _ in 0..200 {
            world.borrow_mut().step_n(1_000);
            wcs.extend(poll_all(&cqa2));
            if wcs.len() >= 8 {
                break;
            }
        }
        world.borrow_mut().step_n(5_000);
        wcs.extend(poll_all(&cqa2));
        let got: Vec<(u64, WcStatus)> = wcs.iter().map(|w| (w.wr_id, w.status)).collect();
        let want: Vec<(u64, WcStatus)> = (100..108).map(|k| (k, WcStatus::Success)).collect();
        assert_eq!(got, want, "reset at {reset_after}: the new program's completions");
        assert!(dmr2.to_vec() == smr2.to_vec(), "reset at {reset_after}: the new WRITEs' bytes");
        assert!(dst_snapshot(&dmr) == dst_after_reset, "reset at {reset_after}: the old stream wrote after the reset");
    }
}

fn poll_all(cq: &rnic::CompletionQueue) -> Vec<rnic::WorkCompletion> {
    let mut wcs = [rnic::WorkCompletion::default(); 16];
    let n = cq.poll(&mut wcs).unwrap();
    wcs[..n].to_vec()
}

fn dst_snapshot(mr: &rnic::MemoryRegion<'_>) -> Vec<u8> {
    mr.to_vec()
}
