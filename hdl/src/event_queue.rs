//! The asynchronous event queue: QP-affiliated and SRQ events waiting to become event CQEs
//! on the context's event CQ ([`rnic_contract::regs::ASYNC_EVENT_CQ`]; IBTA Vol 1 11.6.3,
//! ibv_get_async_event(3)).
use crate::numbers::Numbers;
use crate::records::AsyncEventRec;
use crate::reset_fifo::ResetFifo;
use rust_hdl::prelude::*;

/// Holds the events the RX engine decides until its `Idle` state turns each into an event CQE.
///
/// A visit of a QP decides its events at once (`set_ce`, `set_err` with `err_type`, `set_lw`,
/// `set_sd`, for QP `qpn` and event CQ `cq`, in one cycle): they are latched and enter a
/// 64-entry FIFO one per cycle in the order COMM_EST, the error event, LAST_WQE_REACHED,
/// SQ_DRAINED. The SRQ limit event (`srq_push`, `srq_data`) goes in directly, in the cycle the
/// RX engine decides it; `hold` (the cycle after a write-back, when it may come) keeps the QP
/// events back for that cycle, so the two never share the write port. A push needs `room`, the
/// FIFO's almost-full flag inverted and registered, so no write waits on the pointer compare in
/// its own cycle; its level (61 entries) leaves room for the writes the flag cannot see yet, so
/// a push with `room` is never refused by the FIFO. A QP event that finds no room is lost
/// (each QP raises each event at most once per connection, so the 64 entries fill only if
/// events of every QP pile up unserved). The head is shown first-word-fall-through: `empty`,
/// `data`, `pop`.
///
/// Latency: a QP event is at the head 3 cycles after its `set_*` cycle into an empty queue (the
/// latch, the FIFO write, the FIFO's write-address delay), a further cycle for each event of
/// the same visit before it and each `hold`. Initiation interval: one event per cycle. Logic: ≤ 3 LUT levels.
#[derive(LogicBlock, Default)]
pub struct AsyncEventQueue {
    pub clock: Signal<In, Clock>,
    /// Empties the queue (synchronous, active high).
    pub reset: Signal<In, Bit>,
    /// A visit's events (one-cycle pulses) and their QP, error type and event CQ.
    pub set_ce: Signal<In, Bit>,
    pub set_err: Signal<In, Bit>,
    pub set_lw: Signal<In, Bit>,
    pub set_sd: Signal<In, Bit>,
    pub err_type: Signal<In, Bits<5>>,
    pub qpn: Signal<In, Bits<6>>,
    pub cq: Signal<In, Bits<8>>,
    /// Keep the QP events out of the FIFO this cycle (an SRQ event may be pushed).
    pub hold: Signal<In, Bit>,
    /// Push an SRQ limit event (only with `room`).
    pub srq_push: Signal<In, Bit>,
    pub srq_data: Signal<In, AsyncEventRec>,
    /// A push fits: at most 60 entries, counting every write up to three cycles ago (the
    /// FIFO's fill level sees a write two cycles late, and this flag is registered), so even
    /// pushes in this and the two cycles before all fit.
    pub room: Signal<Out, Bit>,
    /// The head event.
    pub empty: Signal<Out, Bit>,
    pub data: Signal<Out, AsyncEventRec>,
    pub pop: Signal<In, Bit>,
    /// (Almost full from 61 entries: see `room`.)
    fifo: ResetFifo<AsyncEventRec, 6, 7, 3>,
    ce: DFF<Bit>,
    err: DFF<Bit>,
    lw: DFF<Bit>,
    sd: DFF<Bit>,
    etype: DFF<Bits<5>>,
    qpn_r: DFF<Bits<6>>,
    cq_r: DFF<Bits<8>>,
    room_r: DFF<Bit>,
    qp_ev: Signal<Local, AsyncEventRec>,
    /// The contract's numbers ([`crate::numbers`]).
    nums: Numbers,
}

impl Logic for AsyncEventQueue {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, ce, err, lw, sd, etype, qpn_r, cq_r, room_r);
        clock!(self, clock, fifo);
        self.fifo.reset.next = self.reset.val();
        self.room_r.d.next = !self.fifo.almost_full.val();
        self.room.next = self.room_r.q.val();
        self.empty.next = self.fifo.empty.val();
        self.data.next = self.fifo.data_out.val();
        self.fifo.read.next = self.pop.val();
        // The QP event at the front of the latched ones.
        self.qp_ev.next.qpn = self.qpn_r.q.val();
        self.qp_ev.next.rsvd0 = 0.into();
        self.qp_ev.next.cq = self.cq_r.q.val();
        self.qp_ev.next.left = 0.into();
        self.qp_ev.next.event_type = 0.into();
        self.qp_ev.next.rsvd1 = 0.into();
        self.fifo.write.next = false;
        self.fifo.data_in.next = self.srq_data.val();
        if self.srq_push.val() {
            self.fifo.write.next = true;
        } else if !self.hold.val() {
            if self.ce.q.val() {
                self.ce.d.next = false;
                self.fifo.write.next = self.room_r.q.val();
                self.fifo.data_in.next = self.qp_ev.val();
                self.fifo.data_in.next.event_type = self.nums.val().ev_comm_est;
            } else if self.err.q.val() {
                self.err.d.next = false;
                self.fifo.write.next = self.room_r.q.val();
                self.fifo.data_in.next = self.qp_ev.val();
                self.fifo.data_in.next.event_type = self.etype.q.val();
            } else if self.lw.q.val() {
                self.lw.d.next = false;
                self.fifo.write.next = self.room_r.q.val();
                self.fifo.data_in.next = self.qp_ev.val();
                self.fifo.data_in.next.event_type = self.nums.val().ev_qp_last_wqe_reached;
            } else if self.sd.q.val() {
                self.sd.d.next = false;
                self.fifo.write.next = self.room_r.q.val();
                self.fifo.data_in.next = self.qp_ev.val();
                self.fifo.data_in.next.event_type = self.nums.val().ev_sq_drained;
            }
        }
        // A visit's events (after the pushes: a new set wins over a flag's clearing).
        if self.set_ce.val() | self.set_err.val() | self.set_lw.val() | self.set_sd.val() {
            self.qpn_r.d.next = self.qpn.val();
            self.cq_r.d.next = self.cq.val();
        }
        if self.set_ce.val() {
            self.ce.d.next = true;
        }
        if self.set_err.val() {
            self.err.d.next = true;
            self.etype.d.next = self.err_type.val();
        }
        if self.set_lw.val() {
            self.lw.d.next = true;
        }
        if self.set_sd.val() {
            self.sd.d.next = true;
        }
    }
}
