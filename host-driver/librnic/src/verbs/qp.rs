//! Queue pairs (RC and UD): `ibv_create_qp`, `ibv_modify_qp`, `ibv_query_qp`,
//! `ibv_destroy_qp`, and the inline `ibv_post_send`, `ibv_post_recv` and `ibv_post_srq_recv`.
use super::*;

fn state_of(s: c_int) -> Option<QpState> {
    Some(match s {
        0 => QpState::Reset,
        1 => QpState::Init,
        2 => QpState::Rtr,
        3 => QpState::Rts,
        4 => QpState::Sqd,
        5 => QpState::Sqe,
        6 => QpState::Err,
        _ => return None,
    })
}

fn mtu_of(m: c_int) -> Option<Mtu> {
    Some(match m {
        1 => Mtu::Mtu256,
        2 => Mtu::Mtu512,
        3 => Mtu::Mtu1024,
        4 => Mtu::Mtu2048,
        5 => Mtu::Mtu4096,
        _ => return None,
    })
}

/// `IBV_QPT_RC`.
const QPT_RC: c_int = 2;
/// `IBV_QPT_UD`.
const QPT_UD: c_int = 4;

#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_create_qp(pd: *mut ibv_pd, attr: *mut ibv_qp_init_attr) -> *mut ibv_qp {
    if pd.is_null() || attr.is_null() {
        set_errno(EINVAL);
        return null_mut();
    }
    let a = &mut *attr;
    let qp_type = match a.qp_type {
        QPT_RC => QpType::Rc,
        QPT_UD => QpType::Ud,
        _ => {
            // UC, XRC and raw packet QPs are not planned.
            set_errno(EOPNOTSUPP);
            return null_mut();
        }
    };
    if a.send_cq.is_null() {
        set_errno(EINVAL);
        return null_mut();
    }
    let _g = lock();
    let b = qp_builder(obj::<Pd>(pd), a, qp_type);
    match b.build() {
        Ok(q) => wrap_qp(pd, a, qp_type, QpHold::Own(q)),
        Err(e) => {
            debug("ibv_create_qp", &e);
            set_errno(errno_of(&e));
            null_mut()
        }
    }
}

/// The driver's QP builder for `ibv_qp_init_attr` `a` (its CQs, SRQ and capacities) on `p`.
/// `a.send_cq` must not be null.
pub(super) unsafe fn qp_builder(p: &Pd, a: &ibv_qp_init_attr, qp_type: QpType) -> rnic::QpBuilder {
    let scq = &obj::<Cq>(a.send_cq).cq;
    let rcq = if a.recv_cq.is_null() { scq } else { &obj::<Cq>(a.recv_cq).cq };
    let b =
        p.pd.create_qp(scq)
            .set_qp_type(qp_type)
            .set_recv_cq(rcq)
            .set_max_send_wr(a.cap.max_send_wr.max(1))
            .set_max_send_sge(a.cap.max_send_sge.max(1))
            .set_max_inline_data(a.cap.max_inline_data)
            .set_sq_sig_all(a.sq_sig_all != 0);
    if a.srq.is_null() {
        b.set_max_recv_wr(a.cap.max_recv_wr).set_max_recv_sge(a.cap.max_recv_sge.max(1))
    } else {
        b.set_srq(&obj::<Srq>(a.srq).srq)
    }
}

/// The program's `ibv_qp` for a QP made from `a` on `pd`: fills `a.cap` with what the QP
/// got, and registers the QP for async events. Null (errno EINVAL) if `hold` has no QP.
pub(super) unsafe fn wrap_qp(pd: *mut ibv_pd, a: &mut ibv_qp_init_attr, qp_type: QpType, hold: QpHold) -> *mut ibv_qp {
    let p = obj::<Pd>(pd);
    let mut q = Qp { ibv: zeroed(), hold, sq_sig_all: a.sq_sig_all != 0, qp_type };
    let Ok((cap, qpn, state)) = q.with(|qp| (qp.query_qp().cap, qp.qp_num(), qp.state() as c_int)) else {
        set_errno(EINVAL);
        return null_mut();
    };
    a.cap = ibv_qp_cap {
        max_send_wr: cap.max_send_wr,
        max_recv_wr: cap.max_recv_wr,
        max_send_sge: cap.max_send_sge,
        max_recv_sge: cap.max_recv_sge,
        max_inline_data: cap.max_inline_data,
    };
    let ibv = &mut q.ibv;
    ibv.context = p.ibv.context;
    ibv.qp_context = a.qp_context;
    ibv.pd = pd;
    ibv.send_cq = a.send_cq;
    ibv.recv_cq = if a.recv_cq.is_null() { a.send_cq } else { a.recv_cq };
    ibv.srq = a.srq;
    ibv.handle = qpn;
    ibv.qp_num = qpn;
    ibv.state = state;
    ibv.qp_type = a.qp_type;
    let ptr = Box::into_raw(Box::new(q)) as *mut ibv_qp;
    ctx(p.ibv.context).qps.push((qpn, ptr));
    ptr
}
export!(ibv_create_qp, "IBVERBS_1.1");

/// The peer's IPv4 address and MAC of a RoCEv2 address vector (a QP's path, or an address
/// handle's): the IPv4-mapped destination GID, and the MAC of a known neighbour (the devices
/// of the list, `RNIC_PEER`), else one ARP finds on the device's port (blocking for up to
/// 2 s, as the kernel's `ib_resolve_eth_dmac` does for rxe and mlx5; the port's CM agent
/// does the ARP, [`super::cm::neighbor_mac`]). `what` names the verb in the `RNIC_DEBUG`
/// message.
pub(super) unsafe fn av_of(g: &mut Global, c: &Ctx, ah: &ibv_ah_attr, what: &str) -> Result<AddressVector, c_int> {
    if ah.is_global == 0 {
        // RoCE has no LIDs: the destination is the GID (ibv_rc_pingpong -g, perftest -x).
        return Err(EINVAL);
    }
    let ip = std::net::Ipv6Addr::from(ah.grh.dgid.raw).to_ipv4_mapped().ok_or(EINVAL)?;
    let mac = match c.peers.iter().find(|(p, _)| *p == ip) {
        Some((_, m)) => *m,
        None => super::cm::neighbor_mac(g, c, ip).ok_or_else(|| {
            debug(what, &format!("no MAC for peer {ip}: ARP had no answer (or set RNIC_PEER=IP,MAC)"));
            EINVAL
        })?,
    };
    Ok(AddressVector { dest_mac: mac, dest_ip: ip })
}

#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_modify_qp(qp: *mut ibv_qp, attr: *mut ibv_qp_attr, mask: c_int) -> c_int {
    if qp.is_null() || attr.is_null() {
        return EINVAL;
    }
    let mut g = lock();
    let q = obj::<Qp>(qp);
    let a = &*attr;
    let mask = match QpAttrMask::from_bits(mask as u32) {
        Some(m) => m,
        None => return EINVAL,
    };
    let mut r = QpAttr::default();
    if mask.contains(QpAttrMask::STATE) {
        match state_of(a.qp_state) {
            Some(s) => r.qp_state = s,
            None => return EINVAL,
        }
    }
    if mask.contains(QpAttrMask::CUR_STATE) {
        match state_of(a.cur_qp_state) {
            Some(s) => r.cur_qp_state = s,
            None => return EINVAL,
        }
    }
    if mask.contains(QpAttrMask::PATH_MTU) {
        match mtu_of(a.path_mtu) {
            Some(m) => r.path_mtu = m,
            None => return EINVAL,
        }
    }
    if mask.contains(QpAttrMask::ACCESS_FLAGS) {
        match AccessFlags::from_bits(a.qp_access_flags) {
            Some(f) => r.qp_access_flags = f,
            None => return EINVAL,
        }
    }
    if mask.contains(QpAttrMask::AV) {
        match av_of(&mut g, ctx(q.ibv.context), &a.ah_attr, "ibv_modify_qp") {
            Ok(av) => r.ah_attr = av,
            Err(e) => return e,
        }
    }
    r.pkey_index = a.pkey_index;
    r.port_num = a.port_num;
    r.dest_qp_num = a.dest_qp_num;
    r.rq_psn = a.rq_psn;
    r.sq_psn = a.sq_psn;
    r.max_rd_atomic = a.max_rd_atomic;
    r.max_dest_rd_atomic = a.max_dest_rd_atomic;
    r.min_rnr_timer = a.min_rnr_timer;
    r.timeout = a.timeout;
    r.retry_cnt = a.retry_cnt;
    r.rnr_retry = a.rnr_retry;
    r.qkey = a.qkey;
    r.en_sqd_async_notify = a.en_sqd_async_notify != 0;
    match q.with(|qp| qp.modify(&r, mask).map(|()| qp.state() as c_int)) {
        Ok(Ok(state)) => {
            q.ibv.state = state;
            0
        }
        Ok(Err(e)) => {
            debug("ibv_modify_qp", &e);
            errno_of(&e)
        }
        Err(e) => e,
    }
}
export!(ibv_modify_qp, "IBVERBS_1.1");

#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_query_qp(
    qp: *mut ibv_qp,
    attr: *mut ibv_qp_attr,
    _mask: c_int,
    init: *mut ibv_qp_init_attr,
) -> c_int {
    if qp.is_null() || attr.is_null() {
        return EINVAL;
    }
    let _g = lock();
    let q = obj::<Qp>(qp);
    let a = match q.with(|qp| qp.query_qp()) {
        Ok(a) => a,
        Err(e) => return e,
    };
    let cap = ibv_qp_cap {
        max_send_wr: a.cap.max_send_wr,
        max_recv_wr: a.cap.max_recv_wr,
        max_send_sge: a.cap.max_send_sge,
        max_recv_sge: a.cap.max_recv_sge,
        max_inline_data: a.cap.max_inline_data,
    };
    let mut ah = ibv_ah_attr { is_global: 1, port_num: 1, ..Default::default() };
    ah.grh.dgid.raw = a.ah_attr.dest_ip.to_ipv6_mapped().octets();
    ah.grh.sgid_index = 1;
    ah.grh.hop_limit = 64;
    *attr = ibv_qp_attr {
        qp_state: a.qp_state as c_int,
        cur_qp_state: a.cur_qp_state as c_int,
        path_mtu: a.path_mtu as c_int,
        rq_psn: a.rq_psn,
        sq_psn: a.sq_psn,
        dest_qp_num: a.dest_qp_num,
        qp_access_flags: a.qp_access_flags.bits(),
        qkey: a.qkey,
        cap,
        ah_attr: ah,
        pkey_index: a.pkey_index,
        max_rd_atomic: a.max_rd_atomic,
        max_dest_rd_atomic: a.max_dest_rd_atomic,
        min_rnr_timer: a.min_rnr_timer,
        port_num: a.port_num,
        timeout: a.timeout,
        retry_cnt: a.retry_cnt,
        rnr_retry: a.rnr_retry,
        en_sqd_async_notify: a.en_sqd_async_notify.into(),
        ..Default::default()
    };
    if !init.is_null() {
        let i = &mut *init;
        i.qp_context = q.ibv.qp_context;
        i.send_cq = q.ibv.send_cq;
        i.recv_cq = q.ibv.recv_cq;
        i.srq = q.ibv.srq;
        i.cap = cap;
        i.qp_type = q.ibv.qp_type;
        i.sq_sig_all = c_int::from(q.sq_sig_all);
    }
    0
}
export!(ibv_query_qp, "IBVERBS_1.1");

#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_destroy_qp(qp: *mut ibv_qp) -> c_int {
    if qp.is_null() {
        return EINVAL;
    }
    let _g = lock();
    destroy_qp(qp)
}

/// `ibv_destroy_qp`'s work, with the lock held: the QP (the program's, or its rdma_cm id's,
/// which then has none) and the program's `ibv_qp`.
pub(super) unsafe fn destroy_qp(qp: *mut ibv_qp) -> c_int {
    ctx((*qp).context).qps.retain(|&(_, p)| p != qp);
    let b = Box::from_raw(qp as *mut Qp);
    let r = match b.hold {
        QpHold::Own(q) => q.destroy(),
        QpHold::Cm(id) => id.destroy_qp(),
    };
    match r {
        Ok(()) => 0,
        Err(e) => errno_of(&e),
    }
}
export!(ibv_destroy_qp, "IBVERBS_1.1");

/// SGEs of a C work request, unchecked (the NIC checks keys and bounds).
unsafe fn sges(list: *mut ibv_sge, n: c_int) -> Result<Vec<Sge<'static>>, c_int> {
    if n < 0 || (n > 0 && list.is_null()) {
        return Err(EINVAL);
    }
    Ok((0..n as usize).map(|i| *list.add(i)).map(|s| Sge::raw(s.addr, s.length, s.lkey)).collect())
}

/// `IBV_SEND_INLINE`.
const SEND_INLINE: u32 = 8;

/// One C send WR as the driver's; on a UD QP (`ud`) with its `wr.ud` destination.
unsafe fn send_wr(w: &ibv_send_wr, ud: bool) -> Result<SendWr<'static>, c_int> {
    let op = u32::try_from(w.opcode).ok().and_then(WrOpcode::from_raw).ok_or(EINVAL)?;
    let list = sges(w.sg_list, w.num_sge)?;
    let flags = SendFlags::from_bits(w.send_flags as u8).filter(|_| w.send_flags <= 0xF).ok_or(EINVAL)?;
    let mut wr = SendWr::send(w.wr_id, None).with_opcode(op);
    if flags.contains(SendFlags::INLINE) && w.send_flags & SEND_INLINE != 0 {
        // The bytes are copied now, as IBV_SEND_INLINE promises.
        let mut data = Vec::new();
        for s in &list {
            if s.length > 0 {
                data.extend_from_slice(std::slice::from_raw_parts(s.addr as *const u8, s.length as usize));
            }
        }
        wr = wr.with_inline(&data).map_err(|e| errno_of(&e))?;
    } else {
        wr = wr.with_sg_list(&list).map_err(|e| errno_of(&e))?;
    }
    let wr = SendWr { flags, ..wr };
    let wr = match op {
        WrOpcode::RdmaWrite | WrOpcode::RdmaWriteWithImm | WrOpcode::RdmaRead => {
            SendWr { remote: Some(rnic::RemoteAddr { addr: w.wr.rdma.remote_addr, rkey: w.wr.rdma.rkey }), ..wr }
        }
        WrOpcode::AtomicCmpAndSwp | WrOpcode::AtomicFetchAndAdd => SendWr {
            remote: Some(rnic::RemoteAddr { addr: w.wr.atomic.remote_addr, rkey: w.wr.atomic.rkey }),
            compare_add: w.wr.atomic.compare_add,
            swap: w.wr.atomic.swap,
            ..wr
        },
        WrOpcode::Send | WrOpcode::SendWithImm => wr,
    };
    let wr = wr.with_imm(u32::from_be(w.imm_data));
    if !ud {
        return Ok(wr);
    }
    // ibv_post_send(3): a UD SEND names its address handle, QPN and Q_Key.
    let d = w.wr.ud;
    if d.ah.is_null() {
        return Err(EINVAL);
    }
    Ok(wr.with_ud(&obj::<Ah>(d.ah).ah, d.remote_qpn, d.remote_qkey))
}

pub(super) unsafe extern "C" fn post_send(qp: *mut ibv_qp, wr: *mut ibv_send_wr, bad: *mut *mut ibv_send_wr) -> c_int {
    if qp.is_null() {
        return EINVAL;
    }
    let _g = lock();
    let q = obj::<Qp>(qp);
    let ud = q.qp_type == QpType::Ud;
    let mut ptrs = Vec::new();
    let mut wrs = Vec::new();
    let mut stop = None;
    let mut p = wr;
    while !p.is_null() {
        match send_wr(&*p, ud) {
            Ok(w) => {
                ptrs.push(p);
                wrs.push(w);
            }
            Err(e) => {
                stop = Some((p, e));
                break;
            }
        }
        p = (*p).next;
    }
    let r = match q.with(|qp| (qp.post_send(&wrs), qp.state() as c_int)) {
        Ok((r, state)) => {
            q.ibv.state = state;
            r
        }
        Err(e) => return e,
    };
    let (at, e) = match (r, stop) {
        (Ok(()), None) => return 0,
        (Ok(()), Some((p, e))) => (p, e),
        (Err(pe), _) => {
            debug("ibv_post_send", &pe);
            (ptrs[pe.bad_wr], errno_of(&pe.error))
        }
    };
    if !bad.is_null() {
        *bad = at;
    }
    e
}

unsafe fn recv_wrs(
    wr: *mut ibv_recv_wr,
) -> (Vec<*mut ibv_recv_wr>, Vec<RecvWr<'static>>, Option<(*mut ibv_recv_wr, c_int)>) {
    let (mut ptrs, mut wrs) = (Vec::new(), Vec::new());
    let mut p = wr;
    while !p.is_null() {
        let w = &*p;
        match sges(w.sg_list, w.num_sge).and_then(|l| RecvWr::with_sg_list(w.wr_id, &l).map_err(|e| errno_of(&e))) {
            Ok(r) => {
                ptrs.push(p);
                wrs.push(r);
            }
            Err(e) => return (ptrs, wrs, Some((p, e))),
        }
        p = w.next;
    }
    (ptrs, wrs, None)
}

unsafe fn finish_recv(
    r: Result<(), rnic::PostError>,
    ptrs: &[*mut ibv_recv_wr],
    stop: Option<(*mut ibv_recv_wr, c_int)>,
    bad: *mut *mut ibv_recv_wr,
) -> c_int {
    let (at, e) = match (r, stop) {
        (Ok(()), None) => return 0,
        (Ok(()), Some(s)) => s,
        (Err(pe), _) => (ptrs[pe.bad_wr], errno_of(&pe.error)),
    };
    if !bad.is_null() {
        *bad = at;
    }
    e
}

pub(super) unsafe extern "C" fn post_recv(qp: *mut ibv_qp, wr: *mut ibv_recv_wr, bad: *mut *mut ibv_recv_wr) -> c_int {
    if qp.is_null() {
        return EINVAL;
    }
    let _g = lock();
    let q = obj::<Qp>(qp);
    let (ptrs, wrs, stop) = recv_wrs(wr);
    let r = match q.with(|qp| qp.post_recv(&wrs)) {
        Ok(r) => r,
        Err(e) => return e,
    };
    finish_recv(r, &ptrs, stop, bad)
}

pub(super) unsafe extern "C" fn post_srq_recv(
    srq: *mut ibv_srq,
    wr: *mut ibv_recv_wr,
    bad: *mut *mut ibv_recv_wr,
) -> c_int {
    if srq.is_null() {
        return EINVAL;
    }
    let _g = lock();
    let s = obj::<Srq>(srq);
    let (ptrs, wrs, stop) = recv_wrs(wr);
    let r = s.srq.post_recv(&wrs);
    finish_recv(r, &ptrs, stop, bad)
}
