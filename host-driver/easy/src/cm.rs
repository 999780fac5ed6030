//! How two sides meet: in band, through the port's connection manager (`rnic::cm`: IB CM MADs
//! on QP1, librdmacm's shape, docs/cm.md), with wall-clock waits and retries on top.
//!
//! [`Cm`] is one port's event channel (`rdma_event_channel` with its QP1) shared by every
//! connection and listener of a context in this thread, plus a mailbox: the CM reports the
//! events of all its ids on one channel, so whoever runs it ([`Cm::pump`]) keeps the events
//! that are not its own for their owners ([`Cm::take`]).
//!
//! [`Cm::connect_qp`] (`rdma_resolve_addr` + `rdma_resolve_route` + `rdma_create_qp` +
//! `rdma_connect`) and [`Cm::accept_qp`] (`rdma_get_request` + `rdma_create_qp` +
//! `rdma_accept`) connect an RC QP built from the caller's [`QpBuilder`]; [`Advert`] is what
//! this crate puts in the private data of the REQ and the REP (the message size and the
//! advertised buffer, 36 bytes).
//!
//! **Time.** The CM's own timers run on the device's clock: rdma_cm's REQ resend after 4.8 s
//! of device time is hours of wall time in the simulator (about 65 k cycles/s). So the waits
//! here are in wall time, and [`Cm::connect_qp`] retries in wall time: a REQ refused with
//! REJ reason 8 (nobody listens on the port yet) or left unanswered (the peer's CM is not
//! running yet: its NIC drops REQs to a missing QP1) is tried again with a new id and QP until
//! the caller's timeout, as a TCP connect is retried while refused.
use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, ToSocketAddrs};
use std::os::fd::RawFd;
use std::rc::{Rc, Weak};
use std::time::{Duration, Instant};

use rnic::cm::{reject_reason, CmEventType, ConnParam, EventChannel, RdmaCmId};
use rnic::{Context, QpBuilder, RemoteBuffer};

use crate::error::{EasyError, Result};

/// The first wall-clock wait for an answer to a REQ before the connect is tried again with a
/// new id; doubled on each silent attempt up to [`ATTEMPT_MAX`]. A connect takes about
/// 1,500 NIC cycles (docs/cm.md), 25 ms of wall time at the simulator's 65 k cycles/s, but on
/// a loaded machine (2 cores, a test binary's servers in threads beside it) the server's
/// accept can take several hundred ms: at 200 ms a slow REP made the client give up its id,
/// and when the REJ that told the server so was lost, the server held the old connection and
/// refused every new REQ from the same QPN as stale.
const ATTEMPT_FIRST: Duration = Duration::from_secs(1);
/// The longest wall-clock wait for an answer to one REQ (a REP that comes later only costs a
/// retry, which the server absorbs).
const ATTEMPT_MAX: Duration = Duration::from_secs(4);
/// Pause between two connects refused with REJ reason 8.
const REFUSED_PAUSE: Duration = Duration::from_millis(20);

/// One rdma_cm event, taken off the channel ([`rnic::cm::RdmaCmEvent`] without the ack).
#[derive(Debug)]
pub struct Event {
    /// What happened.
    pub event: CmEventType,
    /// The id it is about (for `ConnectRequest`: the new id of the connection).
    pub id: RdmaCmId<'static>,
    /// For `ConnectRequest`: the listening id.
    pub listen_id: Option<RdmaCmId<'static>>,
    /// 0, a negative errno, or a REJ's reason (`Rejected`).
    pub status: i32,
    /// The private data of the REQ (56 bytes), REP (196) or REJ (148), else empty.
    pub private_data: Vec<u8>,
}

thread_local! {
    /// The CM of each device in use by this thread (one QP1 per port), by device address.
    static CMS: RefCell<HashMap<usize, Weak<Cm>>> = RefCell::new(HashMap::new());
}

/// One port's CM: its [`EventChannel`] and the events taken off it that wait for their owner.
pub struct Cm {
    ch: EventChannel<'static>,
    ctx: Context,
    pending: RefCell<VecDeque<Event>>,
}

impl std::fmt::Debug for Cm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cm").field("channel", &self.ch).field("pending", &self.pending.borrow().len()).finish()
    }
}

impl Cm {
    /// The CM of `ctx`'s port: the one this thread already runs for the context's device,
    /// or a new event channel (`rdma_create_event_channel(3)`; it creates the port's QP1
    /// with rdma_cm's timing, `ChannelConfig::default`).
    ///
    /// # Errors
    /// As `EventChannel::new`: no port address set, QP 1 taken by a channel this crate did not
    /// make (ENOMEM), no memory.
    pub fn for_context(ctx: &Context) -> Result<Rc<Cm>> {
        let key = Rc::as_ptr(ctx.device()) as *const () as usize;
        if let Some(cm) = CMS.with(|m| m.borrow().get(&key).and_then(Weak::upgrade)) {
            return Ok(cm);
        }
        let cm = Rc::new(Cm { ch: EventChannel::new(ctx)?, ctx: ctx.clone(), pending: RefCell::new(VecDeque::new()) });
        CMS.with(|m| {
            let mut m = m.borrow_mut();
            m.retain(|_, w| w.strong_count() > 0);
            m.insert(key, Rc::downgrade(&cm));
        });
        Ok(cm)
    }

    /// The event channel (for its fd, `process`, statistics, static neighbors).
    pub fn channel(&self) -> &EventChannel<'static> {
        &self.ch
    }

    /// The channel's fd (`rdma_event_channel.fd`): readable while events wait in the channel,
    /// i.e. after a [`process`](Self::process) that queued some and before [`drain`](Self::drain).
    /// It does not wake for MADs arriving on QP1: a poll loop calls `process` every turn
    /// (with a bounded poll timeout) and drains when this fd is readable.
    pub fn fd(&self) -> RawFd {
        self.ch.fd()
    }

    /// The device context.
    pub fn context(&self) -> &Context {
        &self.ctx
    }

    /// Runs the CM once (`EventChannel::process`): QP1's completions, timers, MADs to send,
    /// QP transitions. Returns the events it queued on the channel.
    ///
    /// # Errors
    /// As `EventChannel::process`.
    pub fn process(&self) -> Result<usize> {
        Ok(self.ch.process()?)
    }

    /// Moves the channel's queued events into the mailbox (`rdma_get_cm_event` +
    /// `rdma_ack_cm_event` for each), dropping `TIMEWAIT_EXIT`s, which no caller here waits for.
    pub fn drain(&self) {
        while let Some(ev) = self.ch.poll_cm_event() {
            let e = Event {
                event: ev.event,
                id: ev.id.clone(),
                listen_id: ev.listen_id.clone(),
                status: ev.status,
                private_data: ev.private_data.clone(),
            };
            self.ch.ack_cm_event(ev);
            if e.event != CmEventType::TimewaitExit {
                self.pending.borrow_mut().push_back(e);
            }
        }
    }

    /// [`process`](Self::process) then [`drain`](Self::drain).
    ///
    /// # Errors
    /// As `EventChannel::process`.
    pub fn pump(&self) -> Result<()> {
        self.process()?;
        self.drain();
        Ok(())
    }

    /// Takes the first event of the mailbox that `pred` accepts (without running the CM).
    pub fn take(&self, pred: impl Fn(&Event) -> bool) -> Option<Event> {
        let mut q = self.pending.borrow_mut();
        let i = q.iter().position(pred)?;
        q.remove(i)
    }

    /// Takes the first event about `id` of one of the types in `types`.
    pub fn take_for(&self, id: &RdmaCmId<'static>, types: &[CmEventType]) -> Option<Event> {
        self.take(|e| e.id == *id && types.contains(&e.event))
    }

    /// Drops every event of the mailbox about `id` or for `id` as a listener (their ids go
    /// with them: a pending connection request is rejected when its id is dropped).
    pub fn forget(&self, id: &RdmaCmId<'static>) {
        let gone: Vec<Event> = {
            let mut q = self.pending.borrow_mut();
            let (gone, keep): (Vec<Event>, Vec<Event>) =
                q.drain(..).partition(|e| e.id == *id || e.listen_id.as_ref() == Some(id));
            *q = keep.into();
            gone
        };
        drop(gone);
    }

    /// Runs the CM (letting the device progress between turns) until the mailbox has an event
    /// `pred` accepts, for at most `timeout` of wall time.
    ///
    /// # Errors
    /// [`EasyError::TimedOut`] naming `what`; as `EventChannel::process`.
    pub fn wait(&self, what: &'static str, timeout: Duration, pred: impl Fn(&Event) -> bool) -> Result<Event> {
        let start = Instant::now();
        if let Some(e) = self.take(&pred) {
            return Ok(e);
        }
        loop {
            // Run the CM before looking at the clock, so an event it has ready is never missed.
            self.pump()?;
            if let Some(e) = self.take(&pred) {
                return Ok(e);
            }
            if start.elapsed() >= timeout {
                return Err(EasyError::TimedOut { op: what, after: timeout });
            }
            self.ctx.device().poll_progress();
        }
    }

    /// Listens on `addr` (`rdma_create_id` + `rdma_bind_addr(3)` + `rdma_listen(3)`): 0.0.0.0
    /// or the port's own IPv4 address, and a port (0: an ephemeral one, see
    /// `RdmaCmId::local_addr`).
    ///
    /// # Errors
    /// Another IPv4 address than the port's, a port that has a listener already.
    pub fn listen(&self, addr: SocketAddrV4) -> Result<RdmaCmId<'static>> {
        let l = self.ch.create_id();
        l.bind_addr(addr)?;
        l.listen(16)?;
        Ok(l)
    }

    /// Connects an RC QP to the listener at `dst` (`rdma_resolve_addr(3)`,
    /// `rdma_resolve_route(3)`, `rdma_create_qp(3)` with `qp`, `rdma_connect(3)` with
    /// `param`), and returns the id (whose QP is in RTS) and the REP's private data (196
    /// bytes). `ready` runs on the id after its QP is created (in INIT) and before the REQ
    /// goes out: the place to post receives.
    ///
    /// A REQ refused with REJ reason 8 (no listener on the port yet) or 10 (a stale
    /// connection: the server still holds an earlier attempt) or unanswered (no CM on the peer
    /// yet) is retried with a new id and QP until `timeout` (wall time); each silent
    /// attempt waits twice as long as the previous one, from 1 s to 4 s.
    ///
    /// # Errors
    /// [`EasyError::Unreachable`] for a loopback or multicast `dst` or one the neighbor table
    /// cannot resolve (ADDR_ERROR); [`EasyError::Rejected`] for any other REJ, or for
    /// reason 8 or 10 still at `timeout`; [`EasyError::TimedOut`] if no REQ was answered;
    /// verbs errors creating the QP, and `ready`'s.
    pub fn connect_qp(
        &self,
        dst: SocketAddrV4,
        qp: &QpBuilder,
        param: &ConnParam,
        timeout: Duration,
        mut ready: impl FnMut(&RdmaCmId<'static>) -> Result<()>,
    ) -> Result<(RdmaCmId<'static>, Vec<u8>)> {
        check_unicast(dst)?;
        let start = Instant::now();
        let mut attempt = ATTEMPT_FIRST;
        let mut refused: Option<EasyError> = None;
        loop {
            let left = timeout.saturating_sub(start.elapsed());
            if left.is_zero() {
                return Err(match refused {
                    Some(e) => e,
                    None => EasyError::TimedOut { op: "the connection (no answer to the REQ)", after: timeout },
                });
            }
            let id = self.ch.create_id();
            let done = (|| -> Result<Option<Event>> {
                id.resolve_addr(None, dst)?;
                let e = self.wait("address resolution", left, |e| {
                    e.id == id && matches!(e.event, CmEventType::AddrResolved | CmEventType::AddrError)
                })?;
                if e.event == CmEventType::AddrError {
                    return Err(EasyError::Unreachable {
                        addr: dst,
                        why: format!("no MAC address for {} (ADDR_ERROR, status {})", dst.ip(), e.status),
                    });
                }
                id.resolve_route()?;
                self.wait("route resolution", left, |e| e.id == id && e.event == CmEventType::RouteResolved)?;
                id.create_qp(qp.clone())?;
                ready(&id)?;
                id.connect(param)?;
                let answered = self.wait("the connection", attempt.min(left), |e| {
                    e.id == id
                        && matches!(
                            e.event,
                            CmEventType::Established
                                | CmEventType::Rejected
                                | CmEventType::Unreachable
                                | CmEventType::ConnectError
                        )
                });
                match answered {
                    Ok(e) => Ok(Some(e)),
                    Err(EasyError::TimedOut { .. }) => Ok(None),
                    Err(e) => Err(e),
                }
            })();
            match done {
                Ok(Some(e)) if e.event == CmEventType::Established => return Ok((id, e.private_data)),
                // Nobody listens yet; or (reason 10) the server still holds an earlier
                // attempt whose QP had the same number.
                Ok(Some(e))
                    if e.event == CmEventType::Rejected
                        && [reject_reason::INVALID_SERVICE_ID, reject_reason::STALE_CONNECTION]
                            .contains(&u16::try_from(e.status).unwrap_or(0)) =>
                {
                    // Keep the REJ's reason and data, not the event: its id holds the QP.
                    refused = Some(rejected(dst, &e));
                    drop(e);
                    self.forget(&id);
                    id.destroy();
                    std::thread::sleep(REFUSED_PAUSE.min(timeout.saturating_sub(start.elapsed())));
                }
                Ok(Some(e)) if e.event == CmEventType::Rejected => return Err(rejected(dst, &e)),
                Ok(Some(e)) if e.event == CmEventType::ConnectError => {
                    return Err(rnic::Error::InvalidArgument(format!(
                        "the QP could not take the server's parameters (CONNECT_ERROR, status {})",
                        e.status
                    ))
                    .into())
                }
                // Unanswered (no CM on the peer yet) or UNREACHABLE: a new id, a longer wait.
                Ok(_) => {
                    self.forget(&id);
                    id.destroy();
                    attempt = (attempt * 2).min(ATTEMPT_MAX);
                }
                Err(e) => {
                    self.forget(&id);
                    id.destroy();
                    return Err(e);
                }
            }
        }
    }

    /// Waits for the next connection request of `listener` (`rdma_get_request(3)`), creates
    /// its RC QP from `qp` (`rdma_create_qp(3)`), runs `ready` on the id (the place to post
    /// receives; it is given the REQ's private data, 56 bytes, and returns the REP's), accepts
    /// with `param` and that private data (`rdma_accept(3)`: the QP goes to RTR and RTS, the
    /// REP goes out) and waits for `ESTABLISHED` (the RTU). A request whose client gives up
    /// before the RTU (a REJ: it timed out and tries again with a new id), before or after the
    /// REP, is dropped and the next one taken. Returns the id and the REQ's private data. All
    /// within `timeout` of wall time.
    ///
    /// # Errors
    /// [`EasyError::TimedOut`]; `ready`'s error (the request is rejected with the error's text
    /// as private data, REJ reason 28); verbs errors creating or moving the QP.
    pub fn accept_qp(
        &self,
        listener: &RdmaCmId<'static>,
        qp: &QpBuilder,
        param: &ConnParam,
        timeout: Duration,
        ready: impl FnMut(&RdmaCmId<'static>, &[u8]) -> Result<Vec<u8>>,
    ) -> Result<(RdmaCmId<'static>, Vec<u8>)> {
        self.accept_qp_with(listener, qp, param, timeout, ready, || Ok(false))
    }

    /// As [`accept_qp`](Self::accept_qp), covering a lost RTU: while it waits for
    /// `ESTABLISHED`, `first_receive` is asked whether the QP has received (e.g. a receive
    /// completion the caller polled and keeps); if so the client is in RTS, and
    /// `rdma_notify(IBV_EVENT_COMM_EST)` establishes the connection at once (IBTA Vol 1
    /// 12.9.7.1), instead of after the REP's resend, which rdma_cm times in seconds of device
    /// time.
    ///
    /// # Errors
    /// As [`accept_qp`](Self::accept_qp); `first_receive`'s.
    pub fn accept_qp_with(
        &self,
        listener: &RdmaCmId<'static>,
        qp: &QpBuilder,
        param: &ConnParam,
        timeout: Duration,
        mut ready: impl FnMut(&RdmaCmId<'static>, &[u8]) -> Result<Vec<u8>>,
        mut first_receive: impl FnMut() -> Result<bool>,
    ) -> Result<(RdmaCmId<'static>, Vec<u8>)> {
        let start = Instant::now();
        loop {
            let left = timeout.saturating_sub(start.elapsed());
            let req = self.wait("a connection request", left, |e| {
                e.event == CmEventType::ConnectRequest && e.listen_id.as_ref() == Some(listener)
            })?;
            let id = req.id;
            // A request that waited here while the server was busy may have been given up by
            // its client already (a REJ after its wall-clock wait; it has sent a new REQ).
            self.pump()?;
            if id.comm_id().is_none() {
                self.forget(&id);
                id.destroy();
                continue;
            }
            let rep = id.create_qp(qp.clone()).map_err(EasyError::from).and_then(|()| ready(&id, &req.private_data));
            let rep = match rep {
                Ok(rep) => rep,
                Err(err) => {
                    let text = err.to_string();
                    let _ = id.reject(&text.as_bytes()[..text.len().min(148)]);
                    return Err(err);
                }
            };
            if let Err(err) = id.accept(&ConnParam { private_data: rep, ..param.clone() }) {
                if id.comm_id().is_none() {
                    // Given up by the client in the meantime: take the next request.
                    self.forget(&id);
                    id.destroy();
                    continue;
                }
                return Err(err.into());
            }
            let answered = |e: &Event| {
                e.id == id
                    && matches!(
                        e.event,
                        CmEventType::Established
                            | CmEventType::Rejected
                            | CmEventType::Unreachable
                            | CmEventType::Disconnected
                    )
            };
            let mut notified = false;
            let e = loop {
                self.pump()?;
                if let Some(e) = self.take(answered) {
                    break e;
                }
                if !notified && first_receive()? {
                    // The RTU is lost or late, but the client sends: it has the REP.
                    id.notify(rnic::AsyncEventType::CommEst)?;
                    notified = true;
                    continue;
                }
                if start.elapsed() >= timeout {
                    return Err(EasyError::TimedOut { op: "ESTABLISHED after the REP", after: timeout });
                }
                self.ctx.device().poll_progress();
            };
            if e.event == CmEventType::Established {
                return Ok((id, req.private_data));
            }
            // The client gave up on this REQ; it connects again with another.
            self.forget(&id);
            id.destroy();
        }
    }
}

/// The IPv4 socket address `addr` names (the first IPv4 one it resolves to).
///
/// # Errors
/// [`EasyError::Unreachable`] if it does not resolve to an IPv4 address.
pub fn ipv4_of(addr: impl ToSocketAddrs) -> Result<SocketAddrV4> {
    let all: Vec<SocketAddr> = addr
        .to_socket_addrs()
        .map_err(|e| EasyError::Unreachable {
            addr: SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0),
            why: format!("the address does not resolve: {e}"),
        })?
        .collect();
    all.iter()
        .find_map(|a| match a {
            SocketAddr::V4(v4) => Some(*v4),
            SocketAddr::V6(_) => None,
        })
        .ok_or_else(|| EasyError::Unreachable {
            addr: SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0),
            why: format!("{all:?} has no IPv4 address (RoCEv2 ports here are IPv4)"),
        })
}

fn check_unicast(addr: SocketAddrV4) -> Result<()> {
    let ip = *addr.ip();
    let why = if ip.is_loopback() {
        "a loopback address is the host's, not an RDMA port's: connect to the server NIC's IPv4 address (192.0.2.2 for NIC 1 of `rnic sim serve`)"
    } else if ip.is_unspecified() || ip.is_multicast() || ip.is_broadcast() {
        "not a unicast address"
    } else {
        return Ok(());
    };
    Err(EasyError::Unreachable { addr, why: why.into() })
}

fn rejected(dst: SocketAddrV4, e: &Event) -> EasyError {
    let reason = u16::try_from(e.status).unwrap_or(0);
    let end = e.private_data.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
    EasyError::Rejected { addr: dst, reason, private_data: e.private_data[..end].to_vec() }
}

/// What this crate puts in the private data of a REQ (56 bytes) and a REP (196): the
/// connection data the CM does not carry itself. The QPN, first PSN, MTU and retry counts
/// travel in the REQ's and REP's own fields (IBTA Vol 1 12.6.5, 12.6.8).
///
/// Layout (36 bytes, network byte order, as rping's `struct rping_rdma_info`):
/// `0..4` magic `"rnEZ"`, `4` version (1), `5` flags (bit 0: a buffer is advertised),
/// `6..8` 0, `8..16` receive buffer size (bytes), `16..24` buffer address, `24..32` buffer
/// length (bytes), `32..36` rkey.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Advert {
    /// Bytes of each receive buffer the side keeps posted (the largest message it accepts).
    pub msg_size: u64,
    /// The buffer the side advertises for the peer's RDMA READ / WRITE.
    pub buffer: Option<RemoteBuffer>,
}

impl Advert {
    /// Bytes of an encoded advertisement.
    pub const BYTES: usize = 36;
    const MAGIC: [u8; 4] = *b"rnEZ";
    const VERSION: u8 = 1;

    /// The encoded advertisement ([`Self::BYTES`] bytes).
    pub fn encode(&self) -> Vec<u8> {
        let mut b = vec![0u8; Self::BYTES];
        b[0..4].copy_from_slice(&Self::MAGIC);
        b[4] = Self::VERSION;
        b[8..16].copy_from_slice(&self.msg_size.to_be_bytes());
        if let Some(buf) = self.buffer {
            b[5] = 1;
            b[16..24].copy_from_slice(&buf.addr.to_be_bytes());
            b[24..32].copy_from_slice(&buf.len.to_be_bytes());
            b[32..36].copy_from_slice(&buf.rkey.to_be_bytes());
        }
        b
    }

    /// Reads an advertisement from the head of a REQ's or REP's private data (the CM pads it
    /// with zeros).
    ///
    /// # Errors
    /// [`EasyError::Protocol`] for data too short, without the magic, or of another version.
    pub fn decode(p: &[u8]) -> Result<Advert> {
        if p.len() < Self::BYTES || p[0..4] != Self::MAGIC {
            return Err(EasyError::Protocol(format!(
                "the peer's private data is not an rnic-easy advertisement ({} bytes, starting {:02x?})",
                p.len(),
                &p[..p.len().min(8)]
            )));
        }
        if p[4] != Self::VERSION {
            return Err(EasyError::Protocol(format!(
                "the peer's advertisement is version {}, this side speaks {}",
                p[4],
                Self::VERSION
            )));
        }
        let u64_at = |at: usize| u64::from_be_bytes(p[at..at + 8].try_into().expect("8 bytes"));
        let buffer = (p[5] & 1 != 0).then(|| RemoteBuffer {
            addr: u64_at(16),
            len: u64_at(24),
            rkey: u32::from_be_bytes(p[32..36].try_into().expect("4 bytes")),
        });
        Ok(Advert { msg_size: u64_at(8), buffer })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adverts_round_trip_through_padded_private_data_and_foreign_data_is_refused() {
        let a =
            Advert { msg_size: 4096, buffer: Some(RemoteBuffer { addr: 0x7f00_dead_b000, rkey: 0x1234, len: 65536 }) };
        let mut req = a.encode();
        assert_eq!(req.len(), Advert::BYTES);
        req.resize(56, 0); // as CONNECT_REQUEST delivers it
        assert_eq!(Advert::decode(&req).unwrap(), a);
        let none = Advert { msg_size: 32, buffer: None };
        let mut rep = none.encode();
        rep.resize(196, 0);
        assert_eq!(Advert::decode(&rep).unwrap(), none);
        assert!(matches!(Advert::decode(&[0u8; 56]), Err(EasyError::Protocol(_))), "rping's or nobody's data");
        assert!(matches!(Advert::decode(&req[..20]), Err(EasyError::Protocol(_))));
        let mut v2 = a.encode();
        v2[4] = 2;
        assert!(matches!(Advert::decode(&v2), Err(EasyError::Protocol(m)) if m.contains("version 2")));
    }
}
