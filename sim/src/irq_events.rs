//! [`InterruptEvents`]: MSI-X messages of a NIC as eventfds, for an in-process driver.
//!
//! The in-process backend has no PCIe function to bind eventfds to, so the simulator delivers
//! its NIC's interrupts here: one eventfd per vector (eventfd(2), counting), written when the
//! NIC's `irq_valid` is taken. A driver waits by stepping the world and reading the counter, or
//! polls the descriptor with poll/epoll while another thread steps the world.
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::sync::Arc;

use crate::dma::InterruptSink;

/// One eventfd per MSI-X vector of a NIC. Cloning shares the descriptors.
#[derive(Clone, Debug)]
pub struct InterruptEvents {
    fds: Arc<Vec<File>>,
}

impl InterruptEvents {
    /// `vectors` new non-blocking eventfds at 0.
    ///
    /// # Errors
    /// The OS error of eventfd(2) (out of descriptors).
    pub fn new(vectors: u16) -> std::io::Result<Self> {
        let mut fds = Vec::with_capacity(usize::from(vectors));
        for _ in 0..vectors {
            // SAFETY: eventfd(2) returns a new descriptor or -1 (checked).
            let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
            if fd < 0 {
                return Err(std::io::Error::last_os_error());
            }
            // SAFETY: a fresh descriptor that nothing else owns.
            fds.push(unsafe { File::from_raw_fd(fd) });
        }
        Ok(Self { fds: Arc::new(fds) })
    }

    /// Number of vectors.
    pub fn vectors(&self) -> u16 {
        self.fds.len() as u16
    }

    /// The eventfd of `vector` (readable while it has counted interrupts), if the NIC has it.
    pub fn fd(&self, vector: u16) -> Option<RawFd> {
        self.fds.get(usize::from(vector)).map(AsRawFd::as_raw_fd)
    }

    /// Takes the interrupts counted on `vector` since the last call (0 if none or no such
    /// vector); does not block.
    pub fn take(&self, vector: u16) -> u64 {
        let Some(f) = self.fds.get(usize::from(vector)) else { return 0 };
        let mut b = [0u8; 8];
        match (&*f).read(&mut b) {
            Ok(8) => u64::from_le_bytes(b),
            _ => 0,
        }
    }
}

impl InterruptSink for InterruptEvents {
    fn msix(&mut self, vector: u16) {
        if let Some(f) = self.fds.get(usize::from(vector)) {
            // A full counter (EAGAIN) still reads as "interrupted".
            let _ = (&*f).write(&1u64.to_le_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_vector_counts_its_own_messages() {
        let ev = InterruptEvents::new(4).unwrap();
        let mut sink = ev.clone();
        sink.msix(1);
        sink.msix(1);
        sink.msix(3);
        sink.msix(9); // no such vector: ignored
        assert_eq!((ev.take(0), ev.take(1), ev.take(3)), (0, 2, 1));
        assert_eq!(ev.take(1), 0, "taking empties the counter");
        assert!(ev.fd(3).is_some() && ev.fd(4).is_none());
    }
}
