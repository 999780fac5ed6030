//! `BarRegs` (BAR0) in Verilator, driven by an AXI4-Lite master model, against
//! `rnic_contract::regs`.
//!
//! - `identity_registers_read_back`: ID, VERSION, CAPS (fields from the contract's constants),
//!   CLOCK_MHZ; unmapped addresses read 0; writes to read-only registers change nothing; random
//!   `rready` delays (`rvalid` and `rdata` held until taken, `arready` low meanwhile).
//! - `capability_registers_read_the_contract`: QP_CAPS, SEND_CAPS, SRQ_CAPS and FEATURES read
//!   the contract's values, decoded field by field into the limits `ibv_query_device(3)`
//!   reports (2^15 SQ/RQ/SRQ WQEs, 16 send and 15 receive SGEs, max_rd_atomic 16, 448 inline
//!   bytes, RC + SRQ + atomics with IBV_ATOMIC_HCA, no UD or CQ events yet); the free
//!   registers after them read 0 and writes to them change nothing.
//! - `mac_and_ip_write_and_read_back`: MAC_LO/MAC_HI/IPV4_ADDR writes (AW and W at random
//!   relative times) appear on `mac`/`ip` and read back (MAC_HI as 16 bits).
//! - `staging_words_assemble_the_record`: the 16 staging words, written in random order and
//!   partly overwritten, form `cmd_record` (word `i` = bits `32i+31..32i`); a CMD write raises
//!   `cmd_valid` with `cmd_op` = bits 31:24 and `cmd_index` = bits 7:0, holds it and the record
//!   until `cmd_ready`, and `bvalid` comes only after the command was taken; no other write is
//!   accepted while it is pending.
//! - `counters_count_inc_bits`: random `count_inc` every cycle; every counter read (at random
//!   times, during counting) equals the number of set bits so far.
//! - `the_cq_ci_doorbell_waits_for_the_cq_writer`: a CQ_CI write is handed to the CQ writer
//!   (`ci_write` with the word) when `ci_ready`, and answered only then.
//! - `doorbells_are_never_refused`: doorbell writes back to back (AW and W at random relative
//!   times, `bready` delays) are each accepted within 2 cycles of both being valid, with exactly
//!   one `db_write` pulse carrying the data, in order (a posted PCIe write must not wait on the
//!   transport: the doorbell table behind BAR0 takes one per cycle).
mod harness;

use harness::{Dut, Port, Rng};
use rnic_contract::regs;
use rnic_hdl::regs::{BarRegs, NUM_COUNTERS};

struct Pins {
    awaddr: Port,
    awvalid: Port,
    awready: Port,
    wdata: Port,
    wvalid: Port,
    wready: Port,
    bvalid: Port,
    bready: Port,
    araddr: Port,
    arvalid: Port,
    arready: Port,
    rdata: Port,
    rvalid: Port,
    rready: Port,
    count_inc: Port,
    mac: Port,
    ip: Port,
    db_write: Port,
    db_data: Port,
    cmd_valid: Port,
    cmd_ready: Port,
    cmd_op: Port,
    cmd_index: Port,
    cmd_record: Port,
}

/// Outputs of one cycle, before the clock edge.
#[derive(Debug, Clone, Default)]
struct Obs {
    awready: bool,
    wready: bool,
    bvalid: bool,
    arready: bool,
    rvalid: bool,
    rdata: u32,
    db_write: Option<u32>,
    cmd_fired: Option<(u8, u8, Vec<u8>)>,
}

struct Tb {
    dut: Dut,
    p: Pins,
    rng: Rng,
    /// Expected counter values (before this cycle's increments).
    counts: [u32; NUM_COUNTERS],
    /// Percent chance of each `count_inc` bit per cycle (0: counting off).
    p_inc: u64,
    inc: u64,
    /// The pulses of the previous cycle: they count at this cycle's clock edge.
    inc_prev: u64,
    /// Cycles `cmd_valid` must be high before `cmd_ready` is given.
    cmd_wait: u64,
    cmd_seen: u64,
    /// The pending command as first seen (checked stable until taken).
    cmd_pending: Option<(u64, u64, Vec<u8>)>,
    doorbells: Vec<u32>,
    cycle: u64,
}

impl Tb {
    fn new(seed: u64) -> Tb {
        let mut dut = Dut::build::<BarRegs>("regs").expect("build the BAR0 register model");
        let names = [
            "awaddr",
            "awvalid",
            "awready",
            "wdata",
            "wvalid",
            "wready",
            "bvalid",
            "bready",
            "araddr",
            "arvalid",
            "arready",
            "rdata",
            "rvalid",
            "rready",
            "count_inc",
            "mac",
            "ip",
            "db_write",
            "db_data",
            "cmd_valid",
            "cmd_ready",
            "cmd_op",
            "cmd_index",
            "cmd_record",
        ];
        let q: Vec<Port> = names.iter().map(|n| dut.port(n)).collect();
        let p = Pins {
            awaddr: q[0],
            awvalid: q[1],
            awready: q[2],
            wdata: q[3],
            wvalid: q[4],
            wready: q[5],
            bvalid: q[6],
            bready: q[7],
            araddr: q[8],
            arvalid: q[9],
            arready: q[10],
            rdata: q[11],
            rvalid: q[12],
            rready: q[13],
            count_inc: q[14],
            mac: q[15],
            ip: q[16],
            db_write: q[17],
            db_data: q[18],
            cmd_valid: q[19],
            cmd_ready: q[20],
            cmd_op: q[21],
            cmd_index: q[22],
            cmd_record: q[23],
        };
        assert!(dut.width(p.count_inc) >= NUM_COUNTERS);
        dut.reset(2);
        // The counters have no reset: they start from their initial value, 0.
        Tb {
            dut,
            p,
            rng: Rng::from_env(seed),
            counts: [0; NUM_COUNTERS],
            p_inc: 0,
            inc: 0,
            inc_prev: 0,
            cmd_wait: 0,
            cmd_seen: 0,
            cmd_pending: None,
            doorbells: Vec::new(),
            cycle: 0,
        }
    }

    /// One clock cycle with the AXI inputs as the caller left them.
    fn cycle(&mut self) -> Obs {
        self.cycle += 1;
        let p = &self.p;
        self.inc = 0;
        if self.p_inc > 0 {
            // Bits past the last counter are driven too: they must count nothing.
            for i in 0..self.dut.width(p.count_inc) {
                if self.rng.chance(self.p_inc, 100) {
                    self.inc |= 1 << i;
                }
            }
        }
        self.dut.set(p.count_inc, self.inc);
        let cmd_valid_now = {
            self.dut.eval();
            self.dut.get_bit(p.cmd_valid)
        };
        let cmd_ready = cmd_valid_now && self.cmd_seen >= self.cmd_wait;
        // cmd_ready may also be high when nothing is pending (the tables are idle).
        self.dut.set_bit(p.cmd_ready, cmd_ready || (!cmd_valid_now && self.rng.chance(1, 2)));
        self.dut.eval();
        let d = &mut self.dut;
        let mut o = Obs {
            awready: d.get_bit(p.awready),
            wready: d.get_bit(p.wready),
            bvalid: d.get_bit(p.bvalid),
            arready: d.get_bit(p.arready),
            rvalid: d.get_bit(p.rvalid),
            rdata: d.get(p.rdata) as u32,
            db_write: None,
            cmd_fired: None,
        };
        assert_eq!(o.awready, o.wready, "cycle {}: awready != wready", self.cycle);
        if d.get_bit(p.db_write) {
            let v = d.get(p.db_data) as u32;
            o.db_write = Some(v);
            self.doorbells.push(v);
        }
        if cmd_valid_now {
            let cur = (d.get(p.cmd_op), d.get(p.cmd_index), d.get_wide(p.cmd_record));
            match &self.cmd_pending {
                Some(first) => assert_eq!(first, &cur, "cycle {}: command changed while pending", self.cycle),
                None => self.cmd_pending = Some(cur.clone()),
            }
            self.cmd_seen += 1;
            if cmd_ready {
                o.cmd_fired = Some((cur.0 as u8, cur.1 as u8, cur.2));
                self.cmd_pending = None;
                self.cmd_seen = 0;
            }
        }
        self.dut.tick();
        // The pulses are registered: a pulse counts at the clock edge after the one that
        // samples it.
        for i in 0..NUM_COUNTERS {
            if self.inc_prev >> i & 1 == 1 {
                self.counts[i] = self.counts[i].wrapping_add(1);
            }
        }
        self.inc_prev = self.inc;
        o
    }

    /// An AXI4-Lite write: AW and W raised after independent random delays and held until
    /// taken, then B taken after a random delay. Returns the command fired meanwhile, if any.
    fn write(&mut self, addr: u16, data: u32) -> Option<(u8, u8, Vec<u8>)> {
        let d_aw = self.rng.range(0, 3);
        let d_w = self.rng.range(0, 3);
        let p = &self.p;
        self.dut.set(p.awaddr, u64::from(addr));
        self.dut.set(p.wdata, u64::from(data));
        self.dut.set_bit(p.bready, false);
        let mut fired = None;
        let mut t = 0;
        loop {
            let (aw, w) = (t >= d_aw, t >= d_w);
            self.dut.set_bit(self.p.awvalid, aw);
            self.dut.set_bit(self.p.wvalid, w);
            let o = self.cycle();
            if o.cmd_fired.is_some() {
                fired = o.cmd_fired;
            }
            if o.awready {
                assert!(aw && w, "write {addr:#x}: awready before both AW and W were valid");
                break;
            }
            t += 1;
            assert!(t < 10_000, "write {addr:#x}: never accepted");
        }
        self.dut.set_bit(self.p.awvalid, false);
        self.dut.set_bit(self.p.wvalid, false);
        // Garbage on the idle channel.
        self.dut.set(self.p.awaddr, self.rng.range(0, 0xFFFF));
        self.dut.set(self.p.wdata, u64::from(self.rng.u32()));
        let mut t = 0;
        loop {
            let ready = self.rng.chance(1, 2);
            self.dut.set_bit(self.p.bready, ready);
            let o = self.cycle();
            if o.cmd_fired.is_some() {
                fired = o.cmd_fired;
            }
            if o.bvalid && ready {
                if addr == regs::CMD {
                    assert!(fired.is_some(), "CMD write response before the command was taken");
                }
                break;
            }
            t += 1;
            assert!(t < 10_000, "write {addr:#x}: no response");
        }
        self.dut.set_bit(self.p.bready, false);
        fired
    }

    /// A write whose response waits for a consumer (`CQ_ARM`, `CQ_CI`, `RAW_TX_SEND`): with
    /// `ready` low it is taken at once; for 5 cycles `held` checks the outputs, no response
    /// comes and no other write (an `IRQ_MASK` one waiting) is taken; when `ready` rises `taken`
    /// checks the outputs in the cycle the consumer takes it; a cycle later `after` checks them
    /// again and the response is there.
    fn held_write(
        &mut self,
        addr: u16,
        word: u32,
        ready: &str,
        held: impl Fn(&mut Dut),
        taken: impl Fn(&mut Dut),
        after: impl Fn(&mut Dut),
    ) {
        let p = &self.p;
        let d = &mut self.dut;
        d.set(ready, 0);
        d.set(p.awaddr, u64::from(addr));
        d.set(p.wdata, u64::from(word));
        d.set_bit(p.awvalid, true);
        d.set_bit(p.wvalid, true);
        d.set_bit(p.bready, true);
        d.eval();
        assert!(d.get_bit(p.awready), "the write to {addr:#x} is taken");
        d.tick();
        d.set(p.awaddr, u64::from(regs::IRQ_MASK));
        d.set(p.wdata, 7);
        for _ in 0..5 {
            d.eval();
            held(d);
            assert!(!d.get_bit(p.bvalid), "the response waits for the consumer");
            assert!(!d.get_bit(p.awready), "no other write while {addr:#x} waits");
            d.tick();
        }
        d.set(ready, 1);
        d.eval();
        taken(d);
        d.tick();
        d.set_bit(p.awvalid, false);
        d.set_bit(p.wvalid, false);
        d.eval();
        after(d);
        assert!(d.get_bit(p.bvalid), "answered once taken");
        d.tick();
        d.eval();
    }

    /// An AXI4-Lite read with a random `rready` delay.
    fn read(&mut self, addr: u16) -> (u32, [u32; NUM_COUNTERS]) {
        self.dut.set(self.p.araddr, u64::from(addr));
        self.dut.set_bit(self.p.arvalid, true);
        self.dut.set_bit(self.p.rready, false);
        let mut t = 0;
        let at_accept;
        loop {
            let counts = self.counts;
            let o = self.cycle();
            if o.arready {
                at_accept = counts;
                break;
            }
            t += 1;
            assert!(t < 10_000, "read {addr:#x}: never accepted");
        }
        self.dut.set_bit(self.p.arvalid, false);
        self.dut.set(self.p.araddr, self.rng.range(0, 0xFFFF));
        let delay = self.rng.range(0, 4);
        let mut first: Option<u32> = None;
        let mut t = 0;
        loop {
            let ready = t >= delay;
            self.dut.set_bit(self.p.rready, ready);
            let o = self.cycle();
            if o.rvalid {
                match first {
                    Some(v) => assert_eq!(v, o.rdata, "read {addr:#x}: rdata changed while rvalid"),
                    None => first = Some(o.rdata),
                }
                if ready {
                    break;
                }
            } else {
                assert!(first.is_none(), "read {addr:#x}: rvalid dropped before rready");
            }
            t += 1;
            assert!(t < 10_000, "read {addr:#x}: no response");
        }
        self.dut.set_bit(self.p.rready, false);
        (first.unwrap(), at_accept)
    }
}

fn caps_value() -> u32 {
    use rnic_contract::regs::caps;
    use rnic_contract::*;
    ((LOG_NUM_QPS as u32) << caps::LOG_QPS_SHIFT)
        | ((LOG_NUM_MRS as u32) << caps::LOG_MRS_SHIFT)
        | ((LOG_NUM_CQS as u32) << caps::LOG_CQS_SHIFT)
        | ((LOG_MAX_INFLIGHT_WQES as u32) << caps::LOG_INFLIGHT_SHIFT)
        | ((DATAPATH_BYTES as u32) << caps::DATAPATH_BYTES_SHIFT)
}

#[test]
fn identity_registers_read_back() {
    let mut tb = Tb::new(0x2E65_0001);
    let fixed = [
        (regs::ID, regs::ID_VALUE),
        (regs::VERSION, regs::VERSION_VALUE),
        (regs::CAPS, caps_value()),
        (regs::CLOCK_MHZ, 250),
    ];
    assert_eq!(caps_value() >> 16 & 0xFF, 64, "CAPS datapath field");
    for round in 0..3 {
        for (a, v) in fixed {
            assert_eq!(tb.read(a).0, v, "round {round}: register {a:#06x}");
        }
        let past_counters = regs::COUNTERS + 4 * NUM_COUNTERS as u16;
        for a in [0x001Cu16, 0x0030, 0x003C, 0x0104, 0x0244, 0x0300, past_counters, 0x0480, 0x0800, 0xFFFC] {
            assert_eq!(tb.read(a).0, 0, "unmapped register {a:#06x}");
        }
        // Writes to read-only registers are accepted and ignored.
        for (a, _) in fixed {
            let junk = tb.rng.u32();
            tb.write(a, junk);
        }
    }
}

#[test]
fn capability_registers_read_the_contract() {
    use regs::{features, qp_caps, send_caps, srq_caps};
    let mut tb = Tb::new(0x2E65_0006);
    for round in 0..2 {
        let qp = tb.read(regs::QP_CAPS).0;
        assert_eq!(qp, regs::QP_CAPS_VALUE, "round {round}: QP_CAPS");
        let field = |v: u32, shift: u32, bits: u32| v >> shift & ((1 << bits) - 1);
        assert_eq!(field(qp, qp_caps::LOG_MAX_SQ_WR_SHIFT, 4), 15, "log2 max SQ WQEs");
        assert_eq!(field(qp, qp_caps::LOG_MAX_RQ_WR_SHIFT, 4), 15, "log2 max RQ WQEs");
        assert_eq!(field(qp, qp_caps::MAX_SEND_SGE_SHIFT, 8), 16, "max send SGEs");
        assert_eq!(field(qp, qp_caps::MAX_RECV_SGE_SHIFT, 8), 15, "max receive SGEs");
        assert_eq!(field(qp, qp_caps::MAX_RD_ATOMIC_SHIFT, 8), 16, "max_rd_atomic");
        let send = tb.read(regs::SEND_CAPS).0;
        assert_eq!((send, field(send, send_caps::MAX_INLINE_SHIFT, 16)), (regs::SEND_CAPS_VALUE, 448), "SEND_CAPS");
        let srq = tb.read(regs::SRQ_CAPS).0;
        assert_eq!(srq, regs::SRQ_CAPS_VALUE, "SRQ_CAPS");
        assert_eq!(field(srq, srq_caps::LOG_MAX_SRQ_WR_SHIFT, 4), 15, "log2 max SRQ WQEs");
        assert_eq!(field(srq, srq_caps::MAX_SRQ_SGE_SHIFT, 8), 15, "max SRQ SGEs");
        let f = tb.read(regs::FEATURES).0;
        assert_eq!(f, regs::FEATURES_VALUE, "FEATURES");
        assert_eq!(
            f & (features::RC
                | features::SRQ
                | features::ATOMICS
                | features::UD
                | features::CQ_EVENTS
                | features::RNR_NAK_GEN),
            features::RC
                | features::SRQ
                | features::ATOMICS
                | features::UD
                | features::CQ_EVENTS
                | features::RNR_NAK_GEN,
            "feature bits: RC, SRQ, atomics, UD, CQ events, RNR NAKs"
        );
        assert_eq!(field(f, features::ATOMIC_CAP_SHIFT, 2), 1, "IBV_ATOMIC_HCA");
        for a in [0x0030u16, 0x0034, 0x0038, 0x003C] {
            assert_eq!(tb.read(a).0, 0, "free capability register {a:#06x}");
        }
        // Read-only: writes are accepted and ignored.
        for a in [regs::QP_CAPS, regs::SEND_CAPS, regs::SRQ_CAPS, regs::FEATURES] {
            let junk = tb.rng.u32();
            tb.write(a, junk);
        }
    }
}

#[test]
fn mac_and_ip_write_and_read_back() {
    let mut tb = Tb::new(0x2E65_0002);
    let (mut mac, mut ip) = (0u64, 0u32);
    for i in 0..200 {
        let v = tb.rng.u32();
        match tb.rng.range(0, 2) {
            0 => {
                tb.write(regs::MAC_LO, v);
                mac = (mac & 0xFFFF_0000_0000) | u64::from(v);
            }
            1 => {
                tb.write(regs::MAC_HI, v);
                mac = (mac & 0xFFFF_FFFF) | (u64::from(v & 0xFFFF) << 32);
            }
            _ => {
                tb.write(regs::IPV4_ADDR, v);
                ip = v;
            }
        }
        tb.dut.eval();
        assert_eq!(tb.dut.get(tb.p.mac), mac, "write {i}: mac port");
        assert_eq!(tb.dut.get(tb.p.ip), u64::from(ip), "write {i}: ip port");
        if i % 5 == 0 {
            assert_eq!(tb.read(regs::MAC_LO).0, mac as u32, "MAC_LO");
            assert_eq!(tb.read(regs::MAC_HI).0, (mac >> 32) as u32, "MAC_HI");
            assert_eq!(tb.read(regs::IPV4_ADDR).0, ip, "IPV4_ADDR");
        }
    }
}

#[test]
fn staging_words_assemble_the_record() {
    let mut tb = Tb::new(0x2E65_0003);
    let mut words = [0u32; regs::CMD_DATA_WORDS];
    for round in 0..60 {
        // Some or all words, in random order, some twice.
        let n = if round == 0 { 16 } else { tb.rng.range(0, 20) };
        for _ in 0..n {
            let i = tb.rng.range(0, 15) as usize;
            let v = tb.rng.u32();
            tb.write(regs::CMD_DATA + 4 * i as u16, v);
            words[i] = v;
        }
        if round == 0 {
            for i in 0..16 {
                let v = tb.rng.u32();
                tb.write(regs::CMD_DATA + 4 * i as u16, v);
                words[i] = v;
            }
        }
        let op = *tb.rng.pick(&[regs::cmd_op::WRITE_QP, regs::cmd_op::WRITE_MR, regs::cmd_op::WRITE_CQ]);
        let index = tb.rng.range(0, 255) as u32;
        let junk = tb.rng.u32() & 0x00FF_FF00; // bits the command ignores
        tb.cmd_wait = tb.rng.range(0, 12);
        let fired = tb.write(regs::CMD, op << 24 | junk | index).expect("no command fired");
        let record: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        assert_eq!(fired.0 as u32, op, "round {round}: cmd_op");
        assert_eq!(u32::from(fired.1), index, "round {round}: cmd_index");
        assert_eq!(fired.2, record, "round {round}: cmd_record");
        // One command per CMD write.
        for _ in 0..3 {
            let o = tb.cycle();
            assert!(o.cmd_fired.is_none(), "a second command fired");
        }
    }
}

#[test]
fn no_write_accepted_while_a_command_is_pending() {
    let mut tb = Tb::new(0x2E65_0004);
    for _ in 0..20 {
        tb.cmd_wait = 1_000_000; // hold cmd_ready low
                                 // CMD: AW/W taken, then hold bready high and present the next write at once.
        tb.dut.set(tb.p.awaddr, u64::from(regs::CMD));
        tb.dut.set(tb.p.wdata, 1 << 24 | 7);
        tb.dut.set_bit(tb.p.awvalid, true);
        tb.dut.set_bit(tb.p.wvalid, true);
        tb.dut.set_bit(tb.p.bready, true);
        while !tb.cycle().awready {}
        let mac = tb.rng.u32();
        tb.dut.set(tb.p.awaddr, u64::from(regs::MAC_LO));
        tb.dut.set(tb.p.wdata, u64::from(mac));
        let hold = tb.rng.range(1, 20);
        for c in 0..hold {
            let o = tb.cycle();
            assert!(!o.awready, "cycle {c}: a write accepted while CMD is pending");
            assert!(!o.bvalid, "cycle {c}: CMD response before the command was taken");
        }
        tb.cmd_wait = 0;
        let mut saw_b = false;
        let mut t = 0;
        loop {
            let o = tb.cycle();
            saw_b |= o.bvalid;
            if o.awready {
                assert!(saw_b, "the next write was accepted before the CMD response");
                break;
            }
            t += 1;
            assert!(t < 100);
        }
        tb.dut.set_bit(tb.p.awvalid, false);
        tb.dut.set_bit(tb.p.wvalid, false);
        while !tb.cycle().bvalid {}
        tb.dut.set_bit(tb.p.bready, false);
        tb.dut.eval();
        assert_eq!(tb.dut.get(tb.p.mac) as u32, mac);
    }
}

#[test]
fn counters_count_inc_bits() {
    let mut tb = Tb::new(0x2E65_0005);
    for (round, p_inc) in [30u64, 100, 5, 60].into_iter().enumerate() {
        tb.p_inc = p_inc;
        for _ in 0..150 {
            let i = tb.rng.range(0, NUM_COUNTERS as u64 - 1) as u16;
            let (v, at) = tb.read(regs::COUNTERS + 4 * i);
            assert_eq!(v, at[i as usize], "round {round}: counter {i}");
            // Idle cycles of counting between reads.
            let n = tb.rng.range(0, 10);
            for _ in 0..n {
                tb.cycle();
            }
        }
    }
    tb.p_inc = 0;
    for i in 0..NUM_COUNTERS as u16 {
        let (v, at) = tb.read(regs::COUNTERS + 4 * i);
        assert_eq!(v, at[i as usize], "final counter {i}");
        assert!(v > 300, "counter {i} only reached {v}");
    }
}

#[test]
fn doorbells_are_never_refused() {
    let mut tb = Tb::new(0x2E65_0006);
    let mut sent = Vec::new();
    for round in 0..200 {
        let data = tb.rng.u32();
        tb.dut.set(tb.p.awaddr, u64::from(regs::SQ_DOORBELL));
        tb.dut.set(tb.p.wdata, u64::from(data));
        // AW and W become valid at random relative times.
        let (aw_at, w_at) = (tb.rng.range(0, 3), tb.rng.range(0, 3));
        let mut waited = 0;
        let mut c = 0;
        loop {
            tb.dut.set_bit(tb.p.awvalid, c >= aw_at);
            tb.dut.set_bit(tb.p.wvalid, c >= w_at);
            tb.dut.set_bit(tb.p.bready, true);
            let both = c >= aw_at && c >= w_at;
            let o = tb.cycle();
            c += 1;
            if o.awready {
                assert!(both, "round {round}: accepted before AW and W were both valid");
                break;
            }
            if both {
                waited += 1;
                assert!(waited < 2, "round {round}: doorbell not accepted within 2 cycles");
            }
        }
        sent.push(data);
        tb.dut.set_bit(tb.p.awvalid, false);
        tb.dut.set_bit(tb.p.wvalid, false);
        // A slow master: the response may be taken late; the next doorbell follows at once.
        tb.dut.set_bit(tb.p.bready, false);
        for _ in 0..tb.rng.range(0, 3) {
            tb.cycle();
        }
        tb.dut.set_bit(tb.p.bready, true);
        while !tb.cycle().bvalid {}
        tb.cycle();
    }
    for _ in 0..3 {
        tb.cycle();
    }
    assert_eq!(tb.doorbells, sent, "exactly one db_write pulse per doorbell, in order");
}

#[test]
fn interrupt_registers_and_the_cq_arm_doorbell() {
    let mut tb = Tb::new(0x2E65_0007);
    // IRQ_MASK and IRQ_MODERATION: read-write, 0 after reset, driven to the outputs.
    assert_eq!(tb.read(regs::IRQ_MASK).0, 0);
    assert_eq!(tb.read(regs::IRQ_MODERATION).0, 0);
    tb.write(regs::IRQ_MASK, 0xDEAD_BEEF);
    tb.write(regs::IRQ_MODERATION, 0x0012_3456);
    assert_eq!(tb.read(regs::IRQ_MASK).0, 0xDEAD_BEEF);
    assert_eq!(tb.read(regs::IRQ_MODERATION).0, 0x3456, "16 bits of window");
    tb.dut.eval();
    assert_eq!(tb.dut.get("irq_mask"), 0xDEAD_BEEF);
    assert_eq!(tb.dut.get("irq_moderation"), 0x3456);
    // IRQ_PENDING reads the generator's pending bits.
    tb.dut.set("irq_pending", 0x8000_0011);
    assert_eq!(tb.read(regs::IRQ_PENDING).0, 0x8000_0011);
    // CQ_ARM: taken at once; handed to the CQ writer when it is ready (one pulse with the
    // word), and only then answered; no other write is taken meanwhile.
    let word = 5 << regs::cq_arm::CQN_SHIFT | regs::cq_arm::SOLICITED | 0x1234;
    tb.held_write(
        regs::CQ_ARM,
        word,
        "arm_ready",
        |d| assert!(!d.get_bit("arm_write"), "no arm_write while the CQ writer is busy"),
        |d| {
            assert!(d.get_bit("arm_write"), "one arm_write pulse when the CQ writer is ready");
            assert_eq!(d.get("arm_data"), u64::from(word));
        },
        |d| assert!(!d.get_bit("arm_write"), "one pulse per write"),
    );
    // Other writes do not wait for arm_ready.
    tb.dut.set("arm_ready", 0);
    tb.dut.tick();
    tb.write(regs::IRQ_MASK, 1);
    assert_eq!(tb.read(regs::IRQ_MASK).0, 1);
}

/// CQ_CI (rnic_contract::regs::CQ_CI): like CQ_ARM, taken at once, handed to the CQ writer
/// when `ci_ready` (one `ci_write` pulse with the word) and only then answered; no other write
/// is taken meanwhile.
#[test]
fn the_cq_ci_doorbell_waits_for_the_cq_writer() {
    let mut tb = Tb::new(0x2E65_0016);
    let word: u32 = 9 << regs::cq_arm::CQN_SHIFT | 0x7A_BCDE;
    tb.held_write(
        regs::CQ_CI,
        word,
        "ci_ready",
        |d| {
            assert!(!d.get_bit("ci_write"), "no ci_write while the CQ writer is busy");
            assert!(!d.get_bit("arm_write"), "a CQ_CI write is no arm");
        },
        |d| {
            assert!(d.get_bit("ci_write"), "one ci_write pulse when the CQ writer is ready");
            assert_eq!(d.get("ci_data"), u64::from(word));
        },
        |d| assert!(!d.get_bit("ci_write"), "one pulse per write"),
    );
    tb.write(regs::IRQ_MASK, 1);
    assert_eq!(tb.read(regs::IRQ_MASK).0, 1);
}

/// ASYNC_EVENT_CQ (rnic_contract::regs::ASYNC_EVENT_CQ): read-write, 0 after reset; the
/// enable bit (31) and the CQ number (7:0) are kept, the other bits read 0, and `async_cq`
/// carries them to the RX engine (bit 8 the enable).
#[test]
fn the_async_event_cq_register() {
    use regs::async_event_cq::{CQN_MASK, ENABLE};
    let mut tb = Tb::new(0x2E65_0015);
    assert_eq!(tb.read(regs::ASYNC_EVENT_CQ).0, 0);
    tb.dut.eval();
    assert_eq!(tb.dut.get("async_cq"), 0);
    tb.write(regs::ASYNC_EVENT_CQ, 0xFFFF_FF00 | 0x2A);
    assert_eq!(tb.read(regs::ASYNC_EVENT_CQ).0, ENABLE | 0x2A);
    tb.dut.eval();
    assert_eq!(tb.dut.get("async_cq"), 1 << 8 | 0x2A);
    tb.write(regs::ASYNC_EVENT_CQ, CQN_MASK);
    assert_eq!(tb.read(regs::ASYNC_EVENT_CQ).0, CQN_MASK, "disabled, CQ 255");
    tb.dut.eval();
    assert_eq!(tb.dut.get("async_cq"), 0xFF);
}

/// The raw Ethernet registers (rnic_contract::regs::raw): RAW_TX_DATA words assemble the beat
/// on `raw_send_data`; a RAW_TX_SEND write holds `raw_send_valid` (length from bits 6:0) and
/// its response until `raw_send_ready`, and no other write is taken meanwhile; RAW_RX_DATA
/// reads the addressed word of `raw_rx_data`, RAW_RX_STATUS reads `raw_rx_status`, and a
/// RAW_RX_POP write is one `raw_pop` pulse.
#[test]
fn raw_ethernet_registers() {
    let mut tb = Tb::new(0x2E65_0009);
    let mut words = [0u32; regs::raw::DATA_WORDS];
    for (i, w) in words.iter_mut().enumerate() {
        *w = tb.rng.u32();
        tb.write(regs::RAW_TX_DATA + 4 * i as u16, *w);
    }
    // Rewrite a few, in random order.
    for _ in 0..8 {
        let i = tb.rng.range(0, 15) as usize;
        words[i] = tb.rng.u32();
        tb.write(regs::RAW_TX_DATA + 4 * i as u16, words[i]);
    }
    let beat: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let offered = |d: &mut Dut| {
        assert!(d.get_bit("raw_send_valid"), "the frame is offered until taken");
        assert_eq!(d.get("raw_send_len"), 42);
        assert_eq!(d.get_wide("raw_send_data"), beat);
    };
    tb.held_write(regs::RAW_TX_SEND, 0xFFFF_FF00 | 42, "raw_send_ready", offered, offered, |d| {
        assert!(!d.get_bit("raw_send_valid"), "offered once")
    });

    // Receive side.
    let head = tb.rng.bytes(64);
    tb.dut.set_wide("raw_rx_data", &head);
    tb.dut.set("raw_rx_status", 0x803C_1234);
    for i in 0..regs::raw::DATA_WORDS {
        let want = u32::from_le_bytes(head[4 * i..4 * i + 4].try_into().unwrap());
        assert_eq!(tb.read(regs::RAW_RX_DATA + 4 * i as u16).0, want, "RAW_RX_DATA word {i}");
    }
    assert_eq!(tb.read(regs::RAW_RX_STATUS).0, 0x803C_1234);
    tb.dut.set(tb.p.awaddr, u64::from(regs::RAW_RX_POP));
    tb.dut.set(tb.p.wdata, 1);
    tb.dut.set_bit(tb.p.awvalid, true);
    tb.dut.set_bit(tb.p.wvalid, true);
    tb.dut.eval();
    assert!(tb.dut.get_bit(tb.p.awready) && tb.dut.get_bit("raw_pop"), "a pop write pulses raw_pop");
    tb.dut.tick();
    tb.dut.set_bit(tb.p.awvalid, false);
    tb.dut.set_bit(tb.p.wvalid, false);
    for _ in 0..4 {
        tb.dut.eval();
        assert!(!tb.dut.get_bit("raw_pop"), "one pulse per write");
        tb.dut.tick();
    }
}
