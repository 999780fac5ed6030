//! [`CompletionChannel`] (`ibv_create_comp_channel(3)`, `ibv_get_cq_event(3)`): completion
//! events of armed CQs ([`CompletionQueue::req_notify`]), delivered by the NIC's interrupts.
//!
//! Each CQ created with a channel gets an MSI-X vector of its own (the NIC has
//! [`rnic_contract::regs::IRQ_VECTORS`]), written into its CQ context, so the vector that fires
//! names the CQ. The channel's file descriptor ([`CompletionChannel::fd`]) is an epoll(7)
//! instance holding its CQs' interrupt eventfds: it becomes readable when one of them fired,
//! for poll/epoll loops (and tokio's `AsyncFd`). With the in-process simulator the eventfds move
//! only while something runs the world (see [`crate::sim`]); [`CompletionChannel::get_cq_event`]
//! does that itself.
use std::cell::RefCell;
use std::collections::VecDeque;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::rc::{Rc, Weak};
use std::time::{Duration, Instant};

use crate::context::CtxInner;
use crate::cq::{CompletionQueue, CqInner};
use crate::error::{Error, IoKind, Refused, Result};

pub(crate) struct ChanInner {
    pub(crate) ctx: Rc<CtxInner>,
    epoll: OwnedFd,
    /// The CQs whose events come here, by interrupt vector.
    cqs: RefCell<Vec<(u8, Weak<CqInner>)>>,
    /// Vectors that fired and whose event is not yet returned.
    ready: RefCell<VecDeque<u8>>,
}

impl ChanInner {
    /// Adds CQ `cq` with vector `vector` (its eventfd joins the epoll set when the backend has
    /// one).
    pub(crate) fn attach(&self, vector: u8, cq: &Rc<CqInner>) -> Result<()> {
        if let Some(fd) = self.ctx.dev.interrupt_fd(u16::from(vector)) {
            let mut ev = libc::epoll_event { events: libc::EPOLLIN as u32, u64: u64::from(vector) };
            // SAFETY: valid epoll and eventfd descriptors, a valid event.
            let r = unsafe { libc::epoll_ctl(self.epoll.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev) };
            if r < 0 {
                return Err(Error::io(
                    IoKind::Backend,
                    format!("adding the eventfd of MSI-X vector {vector} to the completion channel"),
                    std::io::Error::last_os_error(),
                ));
            }
        }
        self.cqs.borrow_mut().push((vector, Rc::downgrade(cq)));
        Ok(())
    }

    /// Removes the CQ of `vector` (on its drop).
    pub(crate) fn detach(&self, vector: u8) {
        if let Some(fd) = self.ctx.dev.interrupt_fd(u16::from(vector)) {
            // SAFETY: valid descriptors; a failure (already removed) is harmless.
            unsafe { libc::epoll_ctl(self.epoll.as_raw_fd(), libc::EPOLL_CTL_DEL, fd, std::ptr::null_mut()) };
        }
        self.cqs.borrow_mut().retain(|c| c.0 != vector);
        self.ready.borrow_mut().retain(|&v| v != vector);
    }
}

/// A completion event channel (`struct ibv_comp_channel`): where the completion events of the
/// CQs created with it arrive. Cheap to clone; the CQs keep it alive.
#[derive(Clone)]
pub struct CompletionChannel {
    pub(crate) inner: Rc<ChanInner>,
}

impl std::fmt::Debug for CompletionChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompletionChannel").field("fd", &self.fd()).finish_non_exhaustive()
    }
}

impl AsRawFd for CompletionChannel {
    fn as_raw_fd(&self) -> RawFd {
        self.fd()
    }
}

impl CompletionChannel {
    pub(crate) fn new(ctx: Rc<CtxInner>) -> Result<Self> {
        if ctx.dev.interrupt_vectors() == 0 {
            return Err(Error::NotSupported(format!(
                "{} delivers no interrupts: completion channels need MSI-X",
                ctx.dev.name()
            )));
        }
        if ctx.info.features & rnic_contract::regs::features::CQ_EVENTS == 0 {
            return Err(Error::NotSupported("the NIC does not implement CQ events (FEATURES bit 4)".into()));
        }
        // SAFETY: epoll_create1(2) returns a new descriptor or -1 (checked).
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(Error::io(IoKind::Backend, "epoll_create1", std::io::Error::last_os_error()));
        }
        // SAFETY: a fresh descriptor owned by nothing else.
        let epoll = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(Self {
            inner: Rc::new(ChanInner {
                ctx,
                epoll,
                cqs: RefCell::new(Vec::new()),
                ready: RefCell::new(VecDeque::new()),
            }),
        })
    }

    /// The channel's file descriptor (`ibv_comp_channel.fd`): readable (POLLIN) while one of
    /// its CQs' interrupts is waiting to be taken by [`get_cq_event`](Self::get_cq_event).
    pub fn fd(&self) -> RawFd {
        self.inner.epoll.as_raw_fd()
    }

    /// Waits for the next completion event and returns its CQ (`ibv_get_cq_event(3)`). The
    /// CQ must be armed again ([`CompletionQueue::req_notify`]) for another event, and each
    /// event acknowledged ([`CompletionQueue::ack_cq_events`]). Blocks until an event arrives.
    ///
    /// # Errors
    /// Backend errors waiting for the interrupt.
    pub fn get_cq_event(&self) -> Result<CompletionQueue> {
        loop {
            if let Some(cq) = self.get_cq_event_timeout(Duration::from_secs(1))? {
                return Ok(cq);
            }
        }
    }

    /// As [`get_cq_event`](Self::get_cq_event), but gives up after `timeout` (wall time) and
    /// returns `None`.
    ///
    /// # Errors
    /// Backend errors waiting for the interrupt.
    pub fn get_cq_event_timeout(&self, timeout: Duration) -> Result<Option<CompletionQueue>> {
        let start = Instant::now();
        loop {
            while let Some(v) = self.inner.ready.borrow_mut().pop_front() {
                let cq = self.inner.cqs.borrow().iter().find(|c| c.0 == v).and_then(|c| c.1.upgrade());
                if let Some(inner) = cq {
                    inner.events_unacked.set(inner.events_unacked.get() + 1);
                    return Ok(Some(CompletionQueue { inner }));
                }
            }
            let vectors: Vec<u16> = self.inner.cqs.borrow().iter().map(|c| u16::from(c.0)).collect();
            let left = timeout.saturating_sub(start.elapsed());
            if vectors.is_empty() {
                std::thread::sleep(left);
                return Ok(None);
            }
            let fired = self.inner.ctx.dev.wait_interrupts(&vectors, left)?;
            self.inner.ready.borrow_mut().extend(fired.into_iter().map(|v| v as u8));
            if self.inner.ready.borrow().is_empty() && start.elapsed() >= timeout {
                return Ok(None);
            }
        }
    }

    /// Destroys the channel (`ibv_destroy_comp_channel(3)`).
    ///
    /// # Errors
    /// [`Refused`] with [`Error::Busy`] (EBUSY), the channel unchanged, while CQs created with
    /// it exist.
    pub fn destroy(self) -> std::result::Result<(), Refused<Self>> {
        let n = self.inner.cqs.borrow().iter().filter(|c| c.1.strong_count() > 0).count();
        if n > 0 {
            return Err(Refused::busy(self, format!("{n} CQs still use the completion channel")));
        }
        Ok(())
    }
}
