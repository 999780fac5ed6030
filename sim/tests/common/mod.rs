//! A scripted NIC core for tests of the world around the RTL: it transmits queued frames as
//! fast as `tready` allows (an empty frame in the list is one idle cycle), records received frames with their first cycle, and runs scripted
//! DMA bursts, following the verilated model's cycle contract.
#![allow(dead_code)]
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use rnic_sim::ffi::{bytes_to_wide, wide_to_bytes, NicInputs, NicOutputs};
use rnic_sim::NicCore;

/// What a fake core saw.
#[derive(Default, Debug)]
pub struct Seen {
    /// (cycle of the first beat, frame, tuser on the last beat)
    pub rx: Vec<(u64, Vec<u8>, bool)>,
    /// (op index, worst response, read data)
    pub dma: Vec<(usize, u32, Vec<u8>)>,
}

#[derive(Clone, Debug)]
pub enum DmaOp {
    /// One burst of `data.len() / 64` beats at a 64-byte-aligned address.
    Write { addr: u64, data: Vec<u8> },
    /// One burst of `beats` beats.
    Read { addr: u64, beats: u32 },
}

#[derive(Default, Debug, Clone, Copy, PartialEq)]
enum DmaPhase {
    #[default]
    Idle,
    Addr,
    Data(u32),
    Resp,
}

/// A NIC core that transmits queued frames as fast as `tready` allows, records received frames
/// and runs scripted DMA bursts, following the same cycle contract as the verilated model.
pub struct FakeNic {
    seen: Arc<Mutex<Seen>>,
    cycle: u64,
    tx: VecDeque<Vec<u8>>,
    tx_off: usize,
    rx_cur: Vec<u8>,
    rx_first: u64,
    ops: VecDeque<DmaOp>,
    op_index: usize,
    phase: DmaPhase,
    worst: u32,
    rdata: Vec<u8>,
}

impl FakeNic {
    pub fn boxed(tx: Vec<Vec<u8>>, ops: Vec<DmaOp>) -> (Box<dyn NicCore>, Arc<Mutex<Seen>>) {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let core = FakeNic {
            seen: seen.clone(),
            cycle: 0,
            tx: tx.into(),
            tx_off: 0,
            rx_cur: Vec::new(),
            rx_first: 0,
            ops: ops.into(),
            op_index: 0,
            phase: DmaPhase::Idle,
            worst: 0,
            rdata: Vec::new(),
        };
        (Box::new(core), seen)
    }
}

impl NicCore for FakeNic {
    fn cycle(&mut self, i: &NicInputs, o: &mut NicOutputs) {
        let now = self.cycle;
        self.cycle += 1;
        if i.reset == 1 {
            *o = NicOutputs::default();
            return;
        }
        // ---- outputs for this cycle, from state ----
        *o = NicOutputs { m_axi_bready: 1, m_axi_rready: 1, ..NicOutputs::default() };
        // An empty entry in the transmit list is one idle cycle (a gap between frames).
        if self.tx.front().is_some_and(Vec::is_empty) {
            self.tx.pop_front();
        } else if let Some(f) = self.tx.front() {
            let n = (f.len() - self.tx_off).min(64);
            let mut b = [0u8; 64];
            b[..n].copy_from_slice(&f[self.tx_off..self.tx_off + n]);
            bytes_to_wide(&b, &mut o.m_axis_tx_tdata);
            o.m_axis_tx_tkeep = if n == 64 { u64::MAX } else { (1 << n) - 1 };
            o.m_axis_tx_tlast = u32::from(self.tx_off + n == f.len());
            o.m_axis_tx_tvalid = 1;
        }
        if self.phase == DmaPhase::Idle && !self.ops.is_empty() {
            self.phase = DmaPhase::Addr;
            self.worst = 0;
            self.rdata.clear();
        }
        match (self.ops.front(), self.phase) {
            (Some(DmaOp::Write { addr, data }), DmaPhase::Addr) => {
                o.m_axi_awvalid = 1;
                o.m_axi_awaddr = *addr;
                o.m_axi_awlen = (data.len() / 64 - 1) as u32;
                o.m_axi_awsize = 6;
                o.m_axi_awburst = 1;
                o.m_axi_awid = 2;
            }
            (Some(DmaOp::Write { data, .. }), DmaPhase::Data(k)) => {
                let beats = (data.len() / 64) as u32;
                let mut b = [0u8; 64];
                b.copy_from_slice(&data[k as usize * 64..k as usize * 64 + 64]);
                bytes_to_wide(&b, &mut o.m_axi_wdata);
                o.m_axi_wstrb = u64::MAX;
                o.m_axi_wlast = u32::from(k + 1 == beats);
                o.m_axi_wvalid = 1;
            }
            (Some(DmaOp::Read { addr, beats }), DmaPhase::Addr) => {
                o.m_axi_arvalid = 1;
                o.m_axi_araddr = *addr;
                o.m_axi_arlen = beats - 1;
                o.m_axi_arsize = 6;
                o.m_axi_arburst = 1;
                o.m_axi_arid = 1;
            }
            _ => {}
        }
        // ---- rising edge ----
        if o.m_axis_tx_tvalid == 1 && i.m_axis_tx_tready == 1 {
            let n = o.m_axis_tx_tkeep.count_ones() as usize;
            self.tx_off += n;
            if o.m_axis_tx_tlast == 1 {
                self.tx.pop_front();
                self.tx_off = 0;
            }
        }
        if i.s_axis_rx_tvalid == 1 {
            if self.rx_cur.is_empty() {
                self.rx_first = now;
            }
            let mut b = [0u8; 64];
            wide_to_bytes(&i.s_axis_rx_tdata, &mut b);
            self.rx_cur.extend_from_slice(&b[..i.s_axis_rx_tkeep.count_ones() as usize]);
            if i.s_axis_rx_tlast == 1 {
                let f = std::mem::take(&mut self.rx_cur);
                self.seen.lock().unwrap().rx.push((self.rx_first, f, i.s_axis_rx_tuser == 1));
            }
        }
        let finished = match (self.ops.front(), self.phase) {
            (Some(DmaOp::Write { .. }), DmaPhase::Addr) if i.m_axi_awready == 1 => {
                self.phase = DmaPhase::Data(0);
                false
            }
            (Some(DmaOp::Write { data, .. }), DmaPhase::Data(k)) if i.m_axi_wready == 1 => {
                self.phase = if k + 1 == (data.len() / 64) as u32 { DmaPhase::Resp } else { DmaPhase::Data(k + 1) };
                false
            }
            (Some(DmaOp::Write { .. }), DmaPhase::Resp) if i.m_axi_bvalid == 1 => {
                assert_eq!(i.m_axi_bid, 2);
                self.worst = i.m_axi_bresp;
                true
            }
            (Some(DmaOp::Read { .. }), DmaPhase::Addr) if i.m_axi_arready == 1 => {
                self.phase = DmaPhase::Resp;
                false
            }
            (Some(DmaOp::Read { .. }), DmaPhase::Resp) if i.m_axi_rvalid == 1 => {
                assert_eq!(i.m_axi_rid, 1);
                self.worst = self.worst.max(i.m_axi_rresp);
                let mut b = [0u8; 64];
                wide_to_bytes(&i.m_axi_rdata, &mut b);
                self.rdata.extend_from_slice(&b);
                i.m_axi_rlast == 1
            }
            _ => false,
        };
        if finished {
            self.ops.pop_front();
            self.seen.lock().unwrap().dma.push((self.op_index, self.worst, std::mem::take(&mut self.rdata)));
            self.op_index += 1;
            self.phase = DmaPhase::Idle;
        }
    }
}

pub fn frame(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| seed.wrapping_add(i as u8)).collect()
}
