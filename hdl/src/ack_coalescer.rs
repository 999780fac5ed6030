//! ACK coalescing at the responder: one ACK answers a run of requests of one QP.
//!
//! ACKs are cumulative (IBTA Vol 1 9.7.5.1.1: an ACK of PSN p acknowledges every request up to
//! p), so a responder may send one ACK for several requests that asked for one. Without
//! coalescing, a stream of 64-byte WRITEs draws one ACK per WRITE (each is the last packet of
//! its message and carries AckReq), and the requester's completer, which spends a visit of
//! about 12 cycles on each ACK, becomes the bottleneck: at 19.6 Mpps on 8 QPs the requester's
//! receive buffer overflowed with ACKs (2 345 dropped of 20 000 on a perfect wire).
use crate::numbers::Numbers;
use crate::records::AckJob;
use rust_hdl::prelude::*;

/// Longest an ACK waits for a later one to replace it, in cycles (256 ns at 250 MHz: half the
/// 500 ns round trip of a 100 GbE link in the simulator's default world).
pub const ACK_HOLD_CYCLES: u64 = 64;

/// Most ACKs one sent ACK replaces (so a requester sees at least one ACK per 16 that were
/// owed, whatever the hold time).
pub const ACK_COALESCE_MAX: u64 = 15;

/// Takes each ACK the RX writer releases (its request's writes are in host memory) into an
/// input register, holds the last one in a second register, and replaces it with the next one when that is a plain ACK (AETH syndrome type
/// ACK, bits 7:5 = 0) to the same peer QP (destination QPN and IP): the later ACK acknowledges
/// everything the held one did. The held ACK goes to the ACK FIFO when
/// - the next ACK cannot replace it (another peer QP, a NAK or RNR NAK): the held one goes
///   first, so ACKs leave in the order they were released;
/// - it is a NAK or RNR NAK or marked `prompt` (it leaves in the next cycle), or it has
///   replaced [`ACK_COALESCE_MAX`] ACKs;
/// - `more` is low (the writer holds no job and no ACK-queue entry behind it: nothing is coming
///   that could replace it), or it has waited [`ACK_HOLD_CYCLES`].
///
/// An ACK released while nothing is held and `more` is low (a lone request), a NAK and a
/// `prompt` ACK go straight on from the input register (a prompt ACK that replaces the held
/// one too): one cycle later than without the coalescer. The RX engine marks a SEND's ACKs prompt: the
/// requester starts a SEND only while fewer than 32 WQEs of its QP are in flight
/// ([`rnic_contract::LOG_MAX_INFLIGHT_SENDS`]), and a held ACK keeps that window shut (64-byte
/// SENDs on 8 QPs fell from 8.8 to 7.9 Mpps when they were held).
///
/// Ports: `in_write`/`in_ack`/`more` from the writer, which hands an ACK over only while `full`
/// is low (the ACK FIFO was full in the last cycle, or the input register is taken: at most
/// one ACK every other cycle, against one per packet of at least 3 beats); an arrival that must
/// go to a full FIFO waits in the input register. `out_write`/`out_ack` to the ACK FIFO;
/// `cnt_tx_ack`/`cnt_tx_nak` pulse a cycle after each ACK / NAK sent (the `tx_acks`/`tx_naks`
/// counters count frames on the wire, not ACKs replaced); `holding`: an ACK is in either
/// register.
///
/// Timing: 1 cycle for a pass-through, else the hold. The writer's release logic ends at the
/// input register, and `full` and the counter pulses are registered (without them the paths
/// from the writer's, or the FIFO's, read pointer through the case to the counters and back
/// into the writer were 7 to 9 LUT levels); what is left is the FIFO's `full` through the
/// case into the FIFO's write.
#[derive(LogicBlock)]
pub struct AckCoalescer {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub in_write: Signal<In, Bit>,
    pub in_ack: Signal<In, AckJob>,
    /// High while the writer has more jobs or ACK-queue entries than the one it releases.
    pub more: Signal<In, Bit>,
    pub full: Signal<Out, Bit>,
    pub out_full: Signal<In, Bit>,
    pub out_write: Signal<Out, Bit>,
    pub out_ack: Signal<Out, AckJob>,
    pub cnt_tx_ack: Signal<Out, Bit>,
    pub cnt_tx_nak: Signal<Out, Bit>,
    /// An ACK is held (for the status register's "no ACK waiting" flag).
    pub holding: Signal<Out, Bit>,
    /// The ACK handed over in the last cycle (valid, the ACK) and `more` as of then: the
    /// input register, so the writer's release logic ends at a flop.
    iv: DFF<Bit>,
    ia: DFF<AckJob>,
    im: DFF<Bit>,
    /// The ACK FIFO's `full` a cycle late (for `full`: the input register waits when the
    /// FIFO turns out full), and the counter pulses, registered.
    of_r: DFF<Bit>,
    ack_r: DFF<Bit>,
    nak_r: DFF<Bit>,
    /// The registered arrival is taken this cycle (it waits while it must be written into a
    /// full ACK FIFO).
    consume: Signal<Local, Bit>,
    /// The held ACK, whether one is held, its age in cycles (saturating) and how many ACKs it
    /// replaced.
    held: DFF<Bit>,
    hold: DFF<AckJob>,
    age: DFF<Bits<7>>,
    n: DFF<Bits<4>>,
    /// The AETH syndromes (held, arriving); plain ACK: type bits 7:5 = 0.
    hold_syn: Signal<Local, Bits<8>>,
    in_syn: Signal<Local, Bits<8>>,
    hold_plain: Signal<Local, Bit>,
    hold_prompt: Signal<Local, Bit>,
    in_prompt: Signal<Local, Bit>,
    in_plain: Signal<Local, Bit>,
    /// The arrival replaces the held ACK.
    replace: Signal<Local, Bit>,
    /// The held ACK may leave without an arrival.
    due: Signal<Local, Bit>,
    send: Signal<Local, AckJob>,
    hold_max: Constant<Bits<7>>,
    coalesce_max: Constant<Bits<4>>,
    /// The contract's numbers ([`crate::numbers`]).
    nums: Numbers,
}

impl Default for AckCoalescer {
    /// A coalescer with the module's [`ACK_HOLD_CYCLES`] and [`ACK_COALESCE_MAX`].
    fn default() -> Self {
        Self {
            nums: Default::default(),
            clock: Default::default(),
            reset: Default::default(),
            in_write: Default::default(),
            in_ack: Default::default(),
            more: Default::default(),
            full: Default::default(),
            out_full: Default::default(),
            out_write: Default::default(),
            out_ack: Default::default(),
            cnt_tx_ack: Default::default(),
            cnt_tx_nak: Default::default(),
            holding: Default::default(),
            iv: Default::default(),
            ia: Default::default(),
            im: Default::default(),
            of_r: Default::default(),
            ack_r: Default::default(),
            nak_r: Default::default(),
            consume: Default::default(),
            held: Default::default(),
            hold: Default::default(),
            age: Default::default(),
            n: Default::default(),
            hold_syn: Default::default(),
            in_syn: Default::default(),
            hold_plain: Default::default(),
            hold_prompt: Default::default(),
            in_prompt: Default::default(),
            in_plain: Default::default(),
            replace: Default::default(),
            due: Default::default(),
            send: Default::default(),
            hold_max: Constant::new((ACK_HOLD_CYCLES - 1).to_bits()),
            coalesce_max: Constant::new(ACK_COALESCE_MAX.to_bits()),
        }
    }
}

impl Logic for AckCoalescer {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, iv, ia, im, of_r, ack_r, nak_r, held, hold, age, n);
        self.hold_syn.next = self.hold.q.val().syndrome;
        self.in_syn.next = self.ia.q.val().syndrome;
        self.hold_prompt.next = self.hold.q.val().prompt.any();
        self.in_prompt.next = self.ia.q.val().prompt.any();
        self.hold_plain.next = self.hold_syn.val().get_bits::<3>(5) == self.nums.val().syn_type_ack;
        self.in_plain.next = self.in_syn.val().get_bits::<3>(5) == self.nums.val().syn_type_ack;
        self.replace.next = self.held.q.val()
            & self.hold_plain.val()
            & self.in_plain.val()
            & (self.ia.q.val().dest_qpn == self.hold.q.val().dest_qpn)
            & (self.ia.q.val().dest_ip == self.hold.q.val().dest_ip)
            & (self.n.q.val() != self.coalesce_max.val());
        self.due.next = self.held.q.val()
            & (!self.hold_plain.val()
                | self.hold_prompt.val()
                | !self.im.q.val()
                | (self.age.q.val() == self.hold_max.val())
                | (self.n.q.val() == self.coalesce_max.val()));
        // One ACK in the input register at a time: the writer hands one over every other
        // cycle at most (an ACK answers a packet of at least 3 beats).
        self.of_r.d.next = self.out_full.val();
        self.full.next = self.of_r.q.val() | self.iv.q.val();
        self.holding.next = self.held.q.val() | self.iv.q.val();
        self.out_write.next = false;
        self.send.next = self.hold.q.val();
        self.im.d.next = self.more.val();
        if self.held.q.val() & (self.age.q.val() != self.hold_max.val()) {
            self.age.d.next = self.age.q.val() + 1;
        }
        self.consume.next = true;
        if self.iv.q.val() {
            if self.replace.val() & (self.in_prompt.val() | self.hold_prompt.val()) {
                // A prompt ACK replaces the held one and leaves at once (and an ACK replacing
                // a prompt one leaves in its place).
                self.consume.next = !self.out_full.val();
                if !self.out_full.val() {
                    self.out_write.next = true;
                    self.send.next = self.ia.q.val();
                    self.held.d.next = false;
                }
            } else if self.replace.val() {
                self.hold.d.next = self.ia.q.val();
                self.n.d.next = self.n.q.val() + 1;
            } else if self.held.q.val() {
                // The held ACK leaves first; the arrival is held in its place.
                self.consume.next = !self.out_full.val();
                if !self.out_full.val() {
                    self.out_write.next = true;
                    self.hold.d.next = self.ia.q.val();
                    self.age.d.next = 0.into();
                    self.n.d.next = 0.into();
                }
            } else if self.im.q.val() & self.in_plain.val() & !self.in_prompt.val() {
                self.held.d.next = true;
                self.hold.d.next = self.ia.q.val();
                self.age.d.next = 0.into();
                self.n.d.next = 0.into();
            } else {
                // Nothing held and nothing coming (or a NAK): straight through.
                self.consume.next = !self.out_full.val();
                if !self.out_full.val() {
                    self.out_write.next = true;
                    self.send.next = self.ia.q.val();
                }
            }
        } else if self.due.val() & !self.out_full.val() {
            self.out_write.next = true;
            self.held.d.next = false;
        }
        self.iv.d.next = self.in_write.val() | (self.iv.q.val() & !self.consume.val());
        if self.in_write.val() {
            self.ia.d.next = self.in_ack.val();
        }
        self.out_ack.next = self.send.val();
        self.ack_r.d.next = self.out_write.val() & (self.send.val().syndrome == self.nums.val().syn_ack);
        self.nak_r.d.next = self.out_write.val() & (self.send.val().syndrome != self.nums.val().syn_ack);
        self.cnt_tx_ack.next = self.ack_r.q.val();
        self.cnt_tx_nak.next = self.nak_r.q.val();
        if self.reset.val() {
            self.iv.d.next = false;
            self.held.d.next = false;
            self.ack_r.d.next = false;
            self.nak_r.d.next = false;
        }
    }
}
