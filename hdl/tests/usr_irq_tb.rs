//! `UsrIrqBridge` (the U250 top's interrupt bridge) in Verilator, against a model of the XDMA
//! core's user-interrupt port (PG195: `usr_irq_req[i]` held until `usr_irq_ack[i]`, one ack per
//! MSI/MSI-X message, a new message on a new rising edge).
//!
//! - `each_nic_message_is_one_request_edge_acked_once`: NIC messages on vectors 0, 5, 15, 5, 21
//!   each raise exactly their bit (21 aliases 5), hold it until the ack, give the NIC one
//!   `irq_ready` after it, and a later message on the same bit is a fresh rising edge.
//! - `a_slow_ack_holds_the_request_and_the_nic`: with the ack 40 cycles late the request and the
//!   NIC's message both stay up, and an ack of another bit does not release it.
mod harness;

use harness::Dut;
use rnic_hdl::board::usr_irq::UsrIrqBridge;

/// The NIC side (messages to send, each held until `irq_ready`) and the core side (acks
/// `ack_delay` cycles after a request bit rises).
struct Tb {
    dut: Dut,
    /// Vectors still to offer, in order.
    queue: Vec<u64>,
    /// (cycle, vector) of each message the bridge took (`irq_ready` with `irq_valid`).
    taken: Vec<(u64, u64)>,
    /// (cycle, bit) of each rising edge of a `usr_irq_req` bit.
    edges: Vec<(u64, u32)>,
    /// (cycle, bits) the core acknowledges.
    acks: Vec<(u64, u64)>,
    ack_delay: u64,
    prev_req: u64,
}

impl Tb {
    fn new(ack_delay: u64) -> Tb {
        let mut dut = Dut::build::<UsrIrqBridge>("usr_irq_bridge").expect("build UsrIrqBridge");
        dut.reset(2);
        Tb { dut, queue: Vec::new(), taken: Vec::new(), edges: Vec::new(), acks: Vec::new(), ack_delay, prev_req: 0 }
    }

    fn cycle(&mut self, stray_ack: u64) {
        let now = self.dut.cycles();
        let offer = self.queue.first().copied();
        self.dut.set_bit("irq_valid", offer.is_some());
        self.dut.set("irq_vector", offer.unwrap_or(0));
        let due: u64 = self.acks.iter().filter(|a| a.0 == now).map(|a| a.1).fold(0, |x, y| x | y);
        self.dut.set("usr_irq_ack", due | stray_ack);
        self.dut.eval();
        let req = self.dut.get("usr_irq_req");
        for bit in 0..16 {
            if req & !self.prev_req & (1 << bit) != 0 {
                self.edges.push((now, bit));
                self.acks.push((now + self.ack_delay, 1 << bit));
            }
        }
        assert!(req.count_ones() <= 1, "one request at a time: {req:#06x}");
        self.prev_req = req;
        if self.dut.get_bit("irq_ready") {
            let v = offer.expect("irq_ready without a message from the NIC");
            self.taken.push((now, v));
            self.queue.remove(0);
        }
        self.dut.tick();
    }

    fn run(&mut self, n: usize) {
        for _ in 0..n {
            self.cycle(0);
        }
    }
}

#[test]
fn each_nic_message_is_one_request_edge_acked_once() {
    let mut tb = Tb::new(3);
    tb.run(5);
    assert!(tb.edges.is_empty() && tb.taken.is_empty(), "nothing offered, nothing sent");
    tb.queue = vec![0, 5, 15, 5, 21];
    tb.run(80);
    assert!(tb.queue.is_empty(), "every NIC message was taken");
    let bits: Vec<u32> = tb.edges.iter().map(|e| e.1).collect();
    assert_eq!(bits, [0, 5, 15, 5, 5], "one rising edge per message, on bit vector mod 16");
    let vectors: Vec<u64> = tb.taken.iter().map(|t| t.1).collect();
    assert_eq!(vectors, [0, 5, 15, 5, 21], "the NIC's messages are taken in order");
    for (edge, taken) in tb.edges.iter().zip(&tb.taken) {
        // Ack at edge + 3, seen registered: irq_ready the cycle after.
        assert_eq!(taken.0, edge.0 + 3 + 1, "irq_ready right after the ack: edge {edge:?} taken {taken:?}");
    }
}

#[test]
fn a_slow_ack_holds_the_request_and_the_nic() {
    let mut tb = Tb::new(40);
    tb.queue = vec![7];
    // Acks of other bits while bit 7 waits change nothing.
    for _ in 0..30 {
        tb.cycle(1 << 3);
    }
    assert_eq!(tb.edges.len(), 1);
    assert!(tb.taken.is_empty(), "no irq_ready before the ack");
    assert_eq!(tb.prev_req, 1 << 7, "the request is held");
    tb.run(30);
    assert_eq!(tb.taken.len(), 1);
    assert_eq!(tb.taken[0].1, 7);
    assert_eq!(tb.prev_req, 0, "the request drops after the ack");
    assert_eq!(tb.edges.len(), 1, "one message, one edge");
}
