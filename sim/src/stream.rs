//! The MAC side of the NIC's AXI4-Stream ports: [`TxCollector`] assembles frames from the TX
//! master, [`RxPresenter`] feeds frames into the RX slave, one 64-byte beat per cycle.
use std::collections::VecDeque;

use crate::config::BUS_BYTES;
use crate::ffi::{bytes_to_wide, wide_to_bytes, NicInputs, NicOutputs};

/// Longest frame the TX collector accepts, in bytes (jumbo frames are 9 KB; anything longer is
/// a NIC bug and is dropped).
pub const MAX_FRAME_BYTES: usize = 16 * 1024;

/// A frame the NIC transmitted (Ethernet header to payload end, no FCS).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxFrame {
    /// The frame's bytes.
    pub data: Vec<u8>,
    /// Cycle of the beat carrying `tlast`.
    pub end_cycle: u64,
}

/// TX stream statistics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TxStats {
    /// Frames completed.
    pub frames: u64,
    /// Bytes of completed frames.
    pub bytes: u64,
    /// Beats whose `tkeep` was not contiguous from byte 0, or was zero (collected anyway).
    pub bad_tkeep_beats: u64,
    /// Frames dropped for exceeding [`MAX_FRAME_BYTES`].
    pub oversize_frames: u64,
    /// Cycles the NIC had `tvalid` high while `tready` was low (back-pressure).
    pub stalled_cycles: u64,
}

/// Collects TX beats into frames.
#[derive(Debug, Default)]
pub struct TxCollector {
    partial: Vec<u8>,
    oversize: bool,
    done: VecDeque<TxFrame>,
    stats: TxStats,
}

impl TxCollector {
    /// An empty collector.
    pub fn new() -> Self {
        Self::default()
    }

    /// Bytes of the frame being received (not yet ended by `tlast`).
    pub fn partial_bytes(&self) -> usize {
        self.partial.len()
    }

    /// Statistics.
    pub fn stats(&self) -> TxStats {
        self.stats
    }

    /// Removes and returns the completed frames, oldest first.
    pub fn drain(&mut self) -> std::collections::vec_deque::Drain<'_, TxFrame> {
        self.done.drain(..)
    }

    /// Number of completed frames not yet drained.
    pub fn completed(&self) -> usize {
        self.done.len()
    }

    /// Drops the partial frame (reset).
    pub fn reset(&mut self) {
        self.partial.clear();
        self.oversize = false;
    }

    /// Takes the beat of cycle `now` if `tvalid && tready`.
    pub fn observe(&mut self, now: u64, inp: &NicInputs, out: &NicOutputs) {
        if out.m_axis_tx_tvalid & 1 == 0 {
            return;
        }
        if inp.m_axis_tx_tready == 0 {
            self.stats.stalled_cycles += 1;
            return;
        }
        let keep = out.m_axis_tx_tkeep;
        let n = keep.trailing_ones() as usize;
        let contiguous = n == 64 || keep >> n == 0;
        if !contiguous || keep == 0 {
            self.stats.bad_tkeep_beats += 1;
        }
        if !self.oversize {
            let mut bytes = [0u8; BUS_BYTES];
            wide_to_bytes(&out.m_axis_tx_tdata, &mut bytes);
            if contiguous {
                self.partial.extend_from_slice(&bytes[..n]);
            } else {
                self.partial.extend((0..BUS_BYTES).filter(|i| keep >> i & 1 == 1).map(|i| bytes[i]));
            }
            if self.partial.len() > MAX_FRAME_BYTES {
                self.oversize = true;
                self.partial.clear();
            }
        }
        if out.m_axis_tx_tlast & 1 == 1 {
            if self.oversize {
                self.stats.oversize_frames += 1;
                self.oversize = false;
            } else if !self.partial.is_empty() {
                let data = std::mem::take(&mut self.partial);
                self.stats.frames += 1;
                self.stats.bytes += data.len() as u64;
                self.done.push_back(TxFrame { data, end_cycle: now });
            }
        }
    }
}

/// A frame waiting to enter the NIC's RX port.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RxFrame {
    /// The frame's bytes (no FCS).
    pub data: Vec<u8>,
    /// The MAC found the FCS bad: `tuser` is set on the last beat.
    pub bad_fcs: bool,
}

/// RX stream statistics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RxStats {
    /// Frames fully presented to the NIC.
    pub frames: u64,
    /// Bytes of those frames.
    pub bytes: u64,
    /// Frames presented with `tuser` (bad FCS).
    pub bad_fcs_frames: u64,
    /// Frames discarded because they arrived while the NIC was in reset, or were empty.
    pub dropped: u64,
    /// Most frames waiting at once (the MAC's RX buffer high-water mark).
    pub max_queued: usize,
}

/// Presents queued frames on the RX stream, back to back, one beat per cycle. The NIC cannot
/// stall it (no `tready`).
#[derive(Debug, Default)]
pub struct RxPresenter {
    queue: VecDeque<RxFrame>,
    /// Byte offset of the next beat in the front frame.
    offset: usize,
    stats: RxStats,
}

impl RxPresenter {
    /// An empty presenter.
    pub fn new() -> Self {
        Self::default()
    }

    /// Statistics.
    pub fn stats(&self) -> RxStats {
        self.stats
    }

    /// Frames waiting or being presented.
    pub fn queued(&self) -> usize {
        self.queue.len()
    }

    /// Queues a frame behind the others. Empty frames are counted as dropped.
    pub fn push(&mut self, frame: RxFrame) {
        if frame.data.is_empty() {
            self.stats.dropped += 1;
            return;
        }
        self.queue.push_back(frame);
        self.stats.max_queued = self.stats.max_queued.max(self.queue.len());
    }

    /// Counts `frame` as dropped without presenting it (it arrived while the NIC was in reset).
    pub fn discard(&mut self, frame: RxFrame) {
        drop(frame);
        self.stats.dropped += 1;
    }

    /// Discards every waiting frame (the NIC is in reset), counting them as dropped.
    pub fn flush(&mut self) {
        self.stats.dropped += self.queue.len() as u64;
        self.queue.clear();
        self.offset = 0;
    }

    /// Sets the `s_axis_rx_*` inputs for the coming cycle and advances: with no `tready`, the
    /// beat presented is consumed by the edge that ends the cycle.
    pub fn drive_and_advance(&mut self, inp: &mut NicInputs) {
        let Some(f) = self.queue.front() else {
            inp.s_axis_rx_tvalid = 0;
            inp.s_axis_rx_tlast = 0;
            inp.s_axis_rx_tuser = 0;
            inp.s_axis_rx_tkeep = 0;
            return;
        };
        let n = (f.data.len() - self.offset).min(BUS_BYTES);
        let mut bytes = [0u8; BUS_BYTES];
        bytes[..n].copy_from_slice(&f.data[self.offset..self.offset + n]);
        bytes_to_wide(&bytes, &mut inp.s_axis_rx_tdata);
        inp.s_axis_rx_tkeep = if n == 64 { u64::MAX } else { (1u64 << n) - 1 };
        inp.s_axis_rx_tvalid = 1;
        let last = self.offset + n == f.data.len();
        inp.s_axis_rx_tlast = u32::from(last);
        inp.s_axis_rx_tuser = u32::from(last && f.bad_fcs);
        self.offset += n;
        if last {
            self.stats.frames += 1;
            self.stats.bytes += f.data.len() as u64;
            if f.bad_fcs {
                self.stats.bad_fcs_frames += 1;
            }
            self.offset = 0;
            self.queue.pop_front();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rx_beats_and_tx_collection_round_trip() {
        let frame: Vec<u8> = (0..150u32).map(|i| i as u8).collect();
        let mut rx = RxPresenter::new();
        rx.push(RxFrame { data: frame.clone(), bad_fcs: true });
        let mut tx = TxCollector::new();
        let mut inp = NicInputs { m_axis_tx_tready: 1, ..Default::default() };
        let mut keeps = Vec::new();
        for now in 0..4 {
            rx.drive_and_advance(&mut inp);
            if inp.s_axis_rx_tvalid == 0 {
                break;
            }
            keeps.push((inp.s_axis_rx_tkeep, inp.s_axis_rx_tlast, inp.s_axis_rx_tuser));
            // Loop the RX beat into the TX collector.
            let out = NicOutputs {
                m_axis_tx_tdata: inp.s_axis_rx_tdata,
                m_axis_tx_tkeep: inp.s_axis_rx_tkeep,
                m_axis_tx_tlast: inp.s_axis_rx_tlast,
                m_axis_tx_tvalid: 1,
                ..Default::default()
            };
            tx.observe(now, &inp, &out);
        }
        assert_eq!(keeps, vec![(u64::MAX, 0, 0), (u64::MAX, 0, 0), ((1 << 22) - 1, 1, 1)]);
        let got: Vec<TxFrame> = tx.drain().collect();
        assert_eq!(got, vec![TxFrame { data: frame, end_cycle: 2 }]);
        assert_eq!(rx.stats().bad_fcs_frames, 1);
        assert_eq!(tx.stats().bad_tkeep_beats, 0);
    }

    #[test]
    fn tx_respects_tready_and_sparse_tkeep() {
        let mut tx = TxCollector::new();
        let mut out =
            NicOutputs { m_axis_tx_tvalid: 1, m_axis_tx_tkeep: 0b101, m_axis_tx_tlast: 1, ..Default::default() };
        out.m_axis_tx_tdata[0] = 0x00CC_BBAA;
        tx.observe(0, &NicInputs::default(), &out);
        assert_eq!(tx.stats().stalled_cycles, 1);
        assert_eq!(tx.completed(), 0);
        tx.observe(1, &NicInputs { m_axis_tx_tready: 1, ..Default::default() }, &out);
        assert_eq!(tx.drain().next().unwrap().data, vec![0xAA, 0xCC]);
        assert_eq!(tx.stats().bad_tkeep_beats, 1);
    }
}
