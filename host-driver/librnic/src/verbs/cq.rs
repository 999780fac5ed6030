//! Completion queues and completion channels: `ibv_create_cq`, `ibv_resize_cq`,
//! `ibv_destroy_cq`, the inline `ibv_poll_cq` and `ibv_req_notify_cq`, `ibv_get_cq_event` and
//! `ibv_ack_cq_events`.
use super::*;

#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_create_cq(
    c: *mut ibv_context,
    cqe: c_int,
    cq_context: *mut c_void,
    channel: *mut ibv_comp_channel,
    _comp_vector: c_int,
) -> *mut ibv_cq {
    if c.is_null() || cqe <= 0 {
        set_errno(EINVAL);
        return null_mut();
    }
    let _g = lock();
    // `cqe` rounded up to a power of two; an overrun raises IBV_EVENT_CQ_ERR.
    let made = if channel.is_null() {
        ctx(c).ctx.create_cq(cqe as usize)
    } else {
        ctx(c).ctx.create_cq_with_channel(cqe as usize, &obj::<Chan>(channel).ch)
    };
    match made {
        Ok(cq) => {
            let mut ibv: ibv_cq = zeroed();
            ibv.context = c;
            ibv.channel = channel;
            ibv.cq_context = cq_context;
            ibv.handle = cq.cqn();
            ibv.cqe = cq.capacity() as c_int;
            let cqn = cq.cqn();
            let p = Box::into_raw(Box::new(Cq { ibv, cq })) as *mut ibv_cq;
            ctx(c).cqs.push((cqn, p));
            if !channel.is_null() {
                let ch = obj::<Chan>(channel);
                ch.cqs.push((cqn, p));
                ch.ibv.refcnt += 1;
            }
            p
        }
        Err(e) => {
            debug("ibv_create_cq", &e);
            set_errno(errno_of(&e));
            null_mut()
        }
    }
}
export!(ibv_create_cq, "IBVERBS_1.1");

#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_resize_cq(cq: *mut ibv_cq, cqe: c_int) -> c_int {
    if cq.is_null() || cqe <= 0 {
        return EINVAL;
    }
    let _g = lock();
    let c = obj::<Cq>(cq);
    match c.cq.resize(cqe as usize) {
        Ok(()) => {
            c.ibv.cqe = c.cq.capacity() as c_int;
            0
        }
        Err(e) => errno_of(&e),
    }
}
export!(ibv_resize_cq, "IBVERBS_1.1");

#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_destroy_cq(cq: *mut ibv_cq) -> c_int {
    if cq.is_null() {
        return EINVAL;
    }
    let _g = lock();
    let p = cq as *mut Cq;
    let channel = (*p).ibv.channel;
    let q = std::ptr::read(&(*p).cq);
    match q.destroy() {
        Ok(()) => {
            ctx((*p).ibv.context).cqs.retain(|c| c.1 != cq);
            if !channel.is_null() {
                let ch = obj::<Chan>(channel);
                ch.cqs.retain(|c| c.1 != cq);
                ch.ibv.refcnt -= 1;
            }
            free_shell(p);
            0
        }
        Err(r) => {
            debug("ibv_destroy_cq", &r);
            let e = errno_of(&r.error);
            std::ptr::write(&mut (*p).cq, r.object);
            e
        }
    }
}
export!(ibv_destroy_cq, "IBVERBS_1.1");

pub(super) unsafe extern "C" fn poll_cq(cq: *mut ibv_cq, n: c_int, wc: *mut ibv_wc) -> c_int {
    if cq.is_null() || n < 0 || (n > 0 && wc.is_null()) {
        return -EINVAL;
    }
    let _g = lock();
    let c = obj::<Cq>(cq);
    let mut buf = [WorkCompletion::default(); 16];
    let mut done = 0usize;
    while done < n as usize {
        let k = (n as usize - done).min(buf.len());
        let got = match c.cq.poll(&mut buf[..k]) {
            Ok(g) => g,
            Err(e) => return -errno_of(&e),
        };
        for w in &buf[..got] {
            *wc.add(done) = ibv_wc {
                wr_id: w.wr_id,
                status: c_int::from(w.status.as_raw()),
                opcode: c_int::from(w.opcode.as_raw()),
                byte_len: w.byte_len,
                imm_data: w.imm_data.to_be(),
                qp_num: w.qp_num,
                src_qp: w.src_qp,
                wc_flags: u32::from(w.wc_flags.bits()),
                ..Default::default()
            };
            done += 1;
        }
        if got < k {
            break;
        }
    }
    done as c_int
}

/// `ibv_req_notify_cq(3)` (inline in the header, through `ibv_context_ops`): arms the CQ
/// ([`CompletionQueue::req_notify`]). Returns 0 or an errno value (EINVAL: no channel).
pub(super) unsafe extern "C" fn req_notify_cq(cq: *mut ibv_cq, solicited: c_int) -> c_int {
    if cq.is_null() {
        return EINVAL;
    }
    let _g = lock();
    match obj::<Cq>(cq).cq.req_notify(solicited != 0) {
        Ok(()) => 0,
        Err(e) => {
            debug("ibv_req_notify_cq", &e);
            errno_of(&e)
        }
    }
}

// ---- completion channels ----

#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_create_comp_channel(c: *mut ibv_context) -> *mut ibv_comp_channel {
    if c.is_null() {
        set_errno(EINVAL);
        return null_mut();
    }
    let _g = lock();
    match ctx(c).ctx.create_comp_channel() {
        Ok(ch) => {
            let ibv = ibv_comp_channel { context: c, fd: ch.fd(), refcnt: 0 };
            Box::into_raw(Box::new(Chan { ibv, ch, cqs: Vec::new() })) as *mut ibv_comp_channel
        }
        Err(e) => {
            debug("ibv_create_comp_channel", &e);
            set_errno(errno_of(&e));
            null_mut()
        }
    }
}
export!(ibv_create_comp_channel, "IBVERBS_1.0");

/// `ibv_destroy_comp_channel(3)`: 0, or EBUSY while CQs use the channel.
#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_destroy_comp_channel(channel: *mut ibv_comp_channel) -> c_int {
    if channel.is_null() {
        return EINVAL;
    }
    let _g = lock();
    let p = channel as *mut Chan;
    if (*p).ibv.refcnt != 0 || !(*p).cqs.is_empty() {
        return EBUSY;
    }
    drop(Box::from_raw(p));
    0
}
export!(ibv_destroy_comp_channel, "IBVERBS_1.0");

/// `ibv_get_cq_event(3)`: waits for the next event of a CQ of `channel` (or, if the program
/// made the channel's fd non-blocking, fails with EAGAIN when none is there), and stores the
/// CQ and its `cq_context`. Returns 0, or -1 with errno.
///
/// On a device that raises interrupts (vfio-user, VFIO) the wait is a `poll(2)` on the
/// channel's fd **without the global lock**, so the program's other threads (rping's CM
/// thread and main thread beside its CQ thread) run their verbs meanwhile. On the in-process
/// simulator, which raises none (the wait itself runs the simulation), the lock is held for
/// slices of 1 ms with a yield between them.
#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_get_cq_event(
    channel: *mut ibv_comp_channel,
    cq: *mut *mut ibv_cq,
    cq_context: *mut *mut c_void,
) -> c_int {
    if channel.is_null() || cq.is_null() || cq_context.is_null() {
        set_errno(EINVAL);
        return -1;
    }
    let nonblock = libc::fcntl((*channel).fd, libc::F_GETFL) & libc::O_NONBLOCK != 0;
    let interrupts = {
        let _g = lock();
        ctx((*channel).context).ctx.device().interrupt_vectors() > 0
    };
    let slice = if nonblock || interrupts { std::time::Duration::ZERO } else { std::time::Duration::from_millis(1) };
    loop {
        let g = lock();
        let ch = obj::<Chan>(channel);
        match ch.ch.get_cq_event_timeout(slice) {
            Ok(Some(q)) => {
                let Some(&(_, p)) = ch.cqs.iter().find(|c| c.0 == q.cqn()) else {
                    // A CQ of this channel that librnic did not create cannot exist.
                    set_errno(EINVAL);
                    return -1;
                };
                drop(q);
                *cq = p;
                *cq_context = (*p).cq_context;
                return 0;
            }
            Ok(None) if nonblock => {
                set_errno(EAGAIN);
                return -1;
            }
            Ok(None) => {}
            Err(e) => {
                debug("ibv_get_cq_event", &e);
                set_errno(errno_of(&e));
                return -1;
            }
        }
        drop(g);
        if interrupts {
            // The channel's fd is the driver's epoll set of its CQs' interrupt eventfds.
            let mut pfd = libc::pollfd { fd: (*channel).fd, events: libc::POLLIN, revents: 0 };
            libc::poll(&mut pfd, 1, 20);
        } else {
            std::thread::yield_now();
        }
    }
}
export!(ibv_get_cq_event, "IBVERBS_1.1");

/// `ibv_ack_cq_events(3)`: acknowledges `nevents` events of `cq` (ibv_destroy_cq refuses with
/// EBUSY while some are not).
#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_ack_cq_events(cq: *mut ibv_cq, nevents: u32) {
    if cq.is_null() {
        return;
    }
    let _g = lock();
    let c = obj::<Cq>(cq);
    c.cq.ack_cq_events(nevents);
    c.ibv.comp_events_completed = c.ibv.comp_events_completed.wrapping_add(nevents);
}
export!(ibv_ack_cq_events, "IBVERBS_1.1");
