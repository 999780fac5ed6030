//! pcap capture of the wires: classic pcap, Ethernet link type, nanosecond timestamps.
//!
//! A frame's timestamp is the instant its first bit goes on the wire, in ns since cycle 0 of the
//! world (exact to the bit time, rounded down to the ns); frames of every link go into one file,
//! in time order. The capture shows frames as transmitted (a tap at the sending MAC): a frame the
//! wire's fault injection drops or corrupts appears intact, and injected duplicates do not appear.
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
use pcap_file::{DataLink, Endianness, TsResolution};

use crate::SimError;

/// Snap length written in the header, in bytes (no frame is truncated below it).
pub const SNAPLEN: u32 = 65_535;

/// A pcap file being written.
pub struct PcapTap {
    path: PathBuf,
    writer: Option<PcapWriter<BufWriter<File>>>,
    frames: u64,
}

impl std::fmt::Debug for PcapTap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PcapTap").field("path", &self.path).field("frames", &self.frames).finish()
    }
}

impl PcapTap {
    /// Creates (truncates) `path` and writes the pcap header.
    ///
    /// # Errors
    /// [`SimError::Pcap`] if the file cannot be created or written.
    pub fn create(path: &Path) -> Result<Self, SimError> {
        let err = |m: String| SimError::Pcap { path: path.to_path_buf(), message: m };
        let file = File::create(path).map_err(|e| err(e.to_string()))?;
        let header = PcapHeader {
            snaplen: SNAPLEN,
            datalink: DataLink::ETHERNET,
            ts_resolution: TsResolution::NanoSecond,
            endianness: Endianness::Little,
            ..PcapHeader::default()
        };
        let writer = PcapWriter::with_header(BufWriter::new(file), header).map_err(|e| err(e.to_string()))?;
        Ok(Self { path: path.to_path_buf(), writer: Some(writer), frames: 0 })
    }

    /// The capture file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Frames written so far.
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// Appends a frame that started at `ts_ns` ns (callers keep timestamps non-decreasing).
    ///
    /// # Errors
    /// [`SimError::Pcap`] on a write error or after [`finish`](Self::finish).
    pub fn write(&mut self, ts_ns: u64, data: &[u8]) -> Result<(), SimError> {
        let err = |m: String| SimError::Pcap { path: self.path.clone(), message: m };
        let w = self.writer.as_mut().ok_or_else(|| err("capture already finished".into()))?;
        let orig_len = u32::try_from(data.len()).map_err(|_| err("frame too long".into()))?;
        let incl = &data[..data.len().min(SNAPLEN as usize)];
        w.write_packet(&PcapPacket::new(Duration::from_nanos(ts_ns), orig_len, incl))
            .map_err(|e| err(e.to_string()))?;
        self.frames += 1;
        Ok(())
    }

    /// Flushes and closes the file. Later writes fail; calling it again does nothing.
    ///
    /// # Errors
    /// [`SimError::Pcap`] if the flush fails.
    pub fn finish(&mut self) -> Result<(), SimError> {
        if let Some(w) = self.writer.take() {
            let mut bw = w.into_writer();
            bw.flush().map_err(|e| SimError::Pcap { path: self.path.clone(), message: e.to_string() })?;
        }
        Ok(())
    }
}

impl Drop for PcapTap {
    fn drop(&mut self) {
        // Errors cannot be reported from drop; `finish` reports them.
        let _ = self.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pcap_file::pcap::PcapReader;

    #[test]
    fn frames_and_nanosecond_timestamps_read_back() {
        let path = std::env::temp_dir().join(format!("rnic-sim-pcap-unit-{}.pcap", std::process::id()));
        let mut tap = PcapTap::create(&path).unwrap();
        let f1: Vec<u8> = (0..60).collect();
        let f2: Vec<u8> = (0..1000u32).map(|i| i as u8).collect();
        tap.write(128, &f1).unwrap();
        tap.write(1_000_000_081, &f2).unwrap();
        tap.finish().unwrap();
        assert!(tap.write(1, &f1).is_err());
        let mut r = PcapReader::new(File::open(&path).unwrap()).unwrap();
        let p1 = r.next_packet().unwrap().unwrap().into_owned();
        let p2 = r.next_packet().unwrap().unwrap().into_owned();
        assert!(r.next_packet().is_none());
        assert_eq!((p1.timestamp.as_nanos(), &*p1.data), (128, &f1[..]));
        assert_eq!((p2.timestamp.as_nanos(), &*p2.data), (1_000_000_081, &f2[..]));
        // tshark, when installed (scripts/setup.sh), must read it too.
        if let Ok(out) = std::process::Command::new("tshark")
            .args(["-r", path.to_str().unwrap(), "-T", "fields", "-e", "frame.time_epoch", "-e", "frame.len"])
            .output()
        {
            if out.status.success() {
                let text = String::from_utf8_lossy(&out.stdout);
                let lines: Vec<&str> = text.lines().collect();
                assert_eq!(lines.len(), 2, "{text}");
                assert!(lines[0].starts_with("0.000000128") && lines[0].ends_with("60"), "{text}");
                assert!(lines[1].starts_with("1.000000081") && lines[1].ends_with("1000"), "{text}");
            }
        }
        let _ = std::fs::remove_file(&path);
    }
}
