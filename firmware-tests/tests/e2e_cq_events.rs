//! Completion events end to end (IBTA Vol 1 11.4.2.2; ibv_req_notify_cq(3),
//! ibv_get_cq_event(3), ibv_ack_cq_events(3)): two simulated hosts, the Verilated NIC on each;
//! B's receive CQ has a completion channel. Every event is the RTL's: the CQ writer decides it,
//! the interrupt generator raises `irq_valid`, the simulator turns it into an MSI-X eventfd
//! write, and the driver's channel reads it.
//!
//! What they pin:
//! - an unarmed CQ gives no event; an armed CQ gives exactly one event per arm, on its own CQ,
//!   after its CQE is in host memory (the event's CQE can be polled at once); a CQE that arrived
//!   before the arm and was not polled raises the event at the arm (no lost wake-up);
//! - the channel's fd is readable (poll(2)) once the interrupt fired;
//! - solicited-only ignores a receive completion of a SEND without IBV_SEND_SOLICITED, and
//!   fires on one with it, and on an error completion (a receive too short: LOC_LEN_ERR);
//! - a masked vector defers its event (IRQ_PENDING shows it) until unmasked, then gives one;
//! - destroy_cq refuses (EBUSY) while an event is unacknowledged, destroy of the channel
//!   while a CQ uses it.
mod common;

use std::time::Duration;

use common::{pattern, Hosts};
use rnic::{
    AccessFlags, CompletionChannel, CompletionQueue, ConnectOptions, Errno, MemoryRegion, Mtu, QueuePair, RecvWr,
    SendFlags, SendWr, WcStatus, WorkCompletion,
};
use rnic_sim::SimConfig;

const BUDGET: u64 = 400_000;

/// A and B connected; B's QP completes (send and receive) on a CQ with a completion channel.
struct Ev<'mr> {
    qa: QueuePair<'mr>,
    qb: QueuePair<'mr>,
    cqb: CompletionQueue,
    ch: CompletionChannel,
}

fn setup<'mr>(h: &Hosts) -> Ev<'mr> {
    let ch = h.b.create_comp_channel().unwrap();
    let cqb = h.b.create_cq_with_channel(64, &ch).unwrap();
    assert!(cqb.comp_vector().is_some());
    let mut qa = h.pa.create_qp(&h.ca).set_max_send_wr(16).build().unwrap();
    let mut qb = h.pb.create_qp(&cqb).set_max_send_wr(4).set_max_recv_wr(16).build().unwrap();
    let o = ConnectOptions { path_mtu: Mtu::Mtu1024, access: AccessFlags::empty(), ..ConnectOptions::default() };
    let (ea, eb) = (qa.endpoint().unwrap(), qb.endpoint().unwrap());
    qa.connect_with(&eb, &o).unwrap();
    qb.connect_with(&ea, &o).unwrap();
    Ev { qa, qb, cqb, ch }
}

/// Sends `len` bytes from A with `flags` into a posted receive of `recv_len` bytes at B, and
/// waits for A's send completion (so B's receive CQE has been written).
fn send<'m>(
    h: &Hosts,
    ev: &mut Ev<'m>,
    src: &'m MemoryRegion<'_>,
    dst: &'m MemoryRegion<'_>,
    id: u64,
    len: usize,
    recv_len: usize,
    flags: SendFlags,
) {
    ev.qb.post_recv_one(RecvWr::new(id, dst.sge(0..recv_len).unwrap())).unwrap();
    ev.qa.post_send_one(SendWr::send(id, src.sge(0..len).unwrap()).with_flags(flags | SendFlags::SIGNALED)).unwrap();
    let s = h.wait(&h.ca, 1, BUDGET)[0];
    assert_eq!(s.wr_id, id);
    // The responder's CQE is written before its ACK leaves; give the interrupt path time too.
    h.settle(2_000);
}

/// The event now, without running the world.
fn event_now(ch: &CompletionChannel) -> Option<CompletionQueue> {
    ch.get_cq_event_timeout(Duration::ZERO).unwrap()
}

fn poll_all(cq: &CompletionQueue) -> Vec<WorkCompletion> {
    let mut wcs = [WorkCompletion::default(); 16];
    let n = cq.poll(&mut wcs).unwrap();
    wcs[..n].to_vec()
}

fn readable(fd: i32) -> bool {
    let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    // SAFETY: one valid pollfd.
    let n = unsafe { libc::poll(&mut p, 1, 0) };
    n == 1 && p.revents & libc::POLLIN != 0
}

#[test]
fn an_armed_cq_gives_one_event_per_arm() {
    let h = Hosts::new(SimConfig::default());
    let mut src = pattern(1, 4096);
    let mut dst = vec![0u8; 4096];
    let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
    let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE).unwrap();
    let mut ev = setup(&h);

    // Unarmed: the CQE arrives, no event.
    send(&h, &mut ev, &src_mr, &dst_mr, 1, 100, 4096, SendFlags::empty());
    assert!(event_now(&ev.ch).is_none(), "an unarmed CQ gives no event");
    assert!(!readable(ev.ch.fd()));
    assert_eq!(poll_all(&ev.cqb).len(), 1);

    // Armed: two receives, one event; its CQE is in memory when the event arrives.
    ev.cqb.req_notify(false).unwrap();
    h.settle(2_000);
    assert!(event_now(&ev.ch).is_none(), "nothing completed since the arm");
    send(&h, &mut ev, &src_mr, &dst_mr, 2, 200, 4096, SendFlags::empty());
    assert!(readable(ev.ch.fd()), "the channel fd is readable once the interrupt fired");
    let cq = ev.ch.get_cq_event().unwrap();
    assert_eq!(cq.cqn(), ev.cqb.cqn(), "the event names B's CQ");
    assert_eq!(ev.cqb.unacked_events(), 1);
    let wcs = poll_all(&cq);
    assert_eq!(wcs.len(), 1, "the event's CQE is there: {wcs:?}");
    assert_eq!((wcs[0].wr_id, wcs[0].status), (2, WcStatus::Success));
    send(&h, &mut ev, &src_mr, &dst_mr, 3, 300, 4096, SendFlags::empty());
    assert!(event_now(&ev.ch).is_none(), "one event per arm");
    assert!(!readable(ev.ch.fd()));

    // A CQE that arrived before the arm and is not polled: the arm fires at once.
    ev.cqb.req_notify(false).unwrap();
    let cq2 = ev.ch.get_cq_event_timeout(Duration::from_secs(5)).unwrap().expect("event for the unpolled CQE");
    assert_eq!(cq2.cqn(), ev.cqb.cqn());
    assert_eq!(poll_all(&ev.cqb).iter().map(|w| w.wr_id).collect::<Vec<_>>(), [3]);

    // Destroy rules: the channel is busy while its CQ exists; the CQ while events are unacked.
    drop((cq, cq2));
    let ch = ev.ch.clone();
    let e = ch.destroy().unwrap_err();
    assert_eq!(e.errno(), Errno::EBUSY, "{e}");
    drop(ev.qb);
    let cqb = ev.cqb;
    assert_eq!(cqb.unacked_events(), 2);
    let cqb = match cqb.destroy() {
        Err(r) => {
            assert_eq!(r.errno(), Errno::EBUSY, "{r}");
            assert!(r.to_string().contains("not acknowledged"), "{r}");
            r.object
        }
        Ok(()) => panic!("destroy_cq succeeded with unacknowledged events"),
    };
    cqb.ack_cq_events(2);
    cqb.destroy().unwrap();
    ev.ch.destroy().unwrap();
}

#[test]
fn solicited_only_fires_on_se_or_an_error_completion() {
    let h = Hosts::new(SimConfig::default());
    let mut src = pattern(2, 4096);
    let mut dst = vec![0u8; 4096];
    let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
    let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE).unwrap();
    let mut ev = setup(&h);

    ev.cqb.req_notify(true).unwrap();
    send(&h, &mut ev, &src_mr, &dst_mr, 1, 64, 4096, SendFlags::empty());
    assert!(event_now(&ev.ch).is_none(), "a receive without SE does not fire a solicited-only arm");
    assert_eq!(poll_all(&ev.cqb).len(), 1);
    send(&h, &mut ev, &src_mr, &dst_mr, 2, 64, 4096, SendFlags::SOLICITED);
    let cq = event_now(&ev.ch).expect("a solicited receive fires");
    cq.ack_cq_events(1);
    assert_eq!(poll_all(&ev.cqb).iter().map(|w| w.wr_id).collect::<Vec<_>>(), [2]);

    // An error completion is solicited: a 500-byte SEND into a 100-byte receive (LOC_LEN_ERR).
    ev.cqb.req_notify(true).unwrap();
    ev.qb.post_recv_one(RecvWr::new(3, dst_mr.sge(0..100).unwrap())).unwrap();
    ev.qa.post_send_one(SendWr::send(3, src_mr.sge(0..500).unwrap()).signaled(true)).unwrap();
    let cq = ev.ch.get_cq_event_timeout(Duration::from_secs(10)).unwrap().expect("an error completion fires");
    cq.ack_cq_events(1);
    let wcs = poll_all(&ev.cqb);
    assert!(wcs.iter().any(|w| w.wr_id == 3 && w.status == WcStatus::LocLenErr), "{wcs:?}");
}

#[test]
fn a_masked_vector_defers_its_event_until_unmasked() {
    let h = Hosts::new(SimConfig::default());
    let mut src = pattern(3, 4096);
    let mut dst = vec![0u8; 4096];
    let src_mr = h.pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
    let dst_mr = h.pb.register(&mut dst, AccessFlags::LOCAL_WRITE).unwrap();
    let mut ev = setup(&h);
    let v = ev.cqb.comp_vector().unwrap();

    h.b.set_interrupt_mask(1 << v).unwrap();
    assert_eq!(h.b.interrupt_mask().unwrap(), 1 << v);
    ev.cqb.req_notify(false).unwrap();
    send(&h, &mut ev, &src_mr, &dst_mr, 1, 64, 4096, SendFlags::empty());
    h.settle(5_000);
    assert!(event_now(&ev.ch).is_none(), "a masked vector sends nothing");
    assert_eq!(h.b.interrupt_pending().unwrap(), 1 << v, "its event waits in IRQ_PENDING");
    h.b.set_interrupt_mask(0).unwrap();
    h.settle(100);
    let cq = event_now(&ev.ch).expect("unmasking delivers the pending event");
    cq.ack_cq_events(1);
    assert_eq!(h.b.interrupt_pending().unwrap(), 0);
    h.settle(5_000);
    assert!(event_now(&ev.ch).is_none(), "and only one");
}
