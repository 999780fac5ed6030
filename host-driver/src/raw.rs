//! The port's raw Ethernet path ([`rnic_contract::regs::raw`]): frames that are not RoCEv2
//! packets, sent and received by MMIO, for the driver's own protocols (ARP for the connection
//! manager's address resolution, [`crate::cm::Neighbors`]).
use rnic_contract::regs::{self, raw};

use crate::context::Context;
use crate::error::{Error, Result};

/// Shortest frame [`Context::send_raw_frame`] takes: an Ethernet header (14 bytes).
pub const MIN_RAW_FRAME: usize = 14;
/// Longest raw frame, in bytes without the FCS ([`raw::MAX_FRAME_BYTES`]).
pub const MAX_RAW_FRAME: usize = raw::MAX_FRAME_BYTES as usize;

impl Context {
    /// Sends one Ethernet frame as it is (destination MAC first, no FCS) on the port's raw
    /// path: the NIC puts it between two RoCE frames. A frame shorter than 60 bytes is padded
    /// with zeros to the IEEE 802.3 minimum. 17 MMIO writes at most; the last returns once the
    /// NIC holds the frame.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a frame shorter than [`MIN_RAW_FRAME`] or longer than
    /// [`MAX_RAW_FRAME`] bytes; backend MMIO errors.
    pub fn send_raw_frame(&self, frame: &[u8]) -> Result<()> {
        if !(MIN_RAW_FRAME..=MAX_RAW_FRAME).contains(&frame.len()) {
            return Err(Error::inval(format!(
                "a raw frame is {MIN_RAW_FRAME}..={MAX_RAW_FRAME} bytes (one datapath beat), not {}",
                frame.len()
            )));
        }
        let len = frame.len().max(raw::MIN_FRAME_BYTES as usize);
        let mut beat = [0u8; MAX_RAW_FRAME];
        beat[..frame.len()].copy_from_slice(frame);
        let dev = &self.inner.dev;
        for (i, w) in beat[..len.next_multiple_of(4)].chunks(4).enumerate() {
            dev.mmio_write32(regs::RAW_TX_DATA + 4 * i as u16, u32::from_le_bytes(w.try_into().expect("4 bytes")))?;
        }
        dev.mmio_write32(regs::RAW_TX_SEND, len as u32)
    }

    /// Takes the oldest frame of the port's raw receive queue, if there is one: a frame that
    /// is not a RoCEv2 packet, addressed to the port's MAC or broadcast, of at most
    /// [`MAX_RAW_FRAME`] bytes (as received, padding included). One MMIO read when the queue
    /// is empty; a frame costs one read per 4 bytes and a write.
    ///
    /// # Errors
    /// Backend MMIO errors.
    pub fn recv_raw_frame(&self) -> Result<Option<Vec<u8>>> {
        let dev = &self.inner.dev;
        let st = dev.mmio_read32(regs::RAW_RX_STATUS)?;
        if st & raw::RX_HEAD_VALID == 0 {
            return Ok(None);
        }
        let len = ((st >> raw::RX_LEN_SHIFT & raw::RX_LEN_MASK) as usize).min(MAX_RAW_FRAME);
        let mut f = Vec::with_capacity(len.next_multiple_of(4));
        for i in 0..len.div_ceil(4) {
            f.extend_from_slice(&dev.mmio_read32(regs::RAW_RX_DATA + 4 * i as u16)?.to_le_bytes());
        }
        f.truncate(len);
        dev.mmio_write32(regs::RAW_RX_POP, 0)?;
        Ok(Some(f))
    }

    /// Raw frames the port's queue has taken since the NIC's reset, modulo 2^16 (one MMIO read).
    ///
    /// # Errors
    /// Backend MMIO errors.
    pub fn raw_frames_taken(&self) -> Result<u16> {
        Ok((self.inner.dev.mmio_read32(regs::RAW_RX_STATUS)? & raw::RX_TAKEN_MASK) as u16)
    }
}
