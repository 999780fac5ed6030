//! Shared receive queues: `ibv_create_srq`, `ibv_modify_srq`, `ibv_query_srq`,
//! `ibv_destroy_srq` (their receives are posted by [`super::qp`]'s `post_srq_recv`).
use super::*;

#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_create_srq(pd: *mut ibv_pd, attr: *mut ibv_srq_init_attr) -> *mut ibv_srq {
    if pd.is_null() || attr.is_null() {
        set_errno(EINVAL);
        return null_mut();
    }
    let _g = lock();
    let p = obj::<Pd>(pd);
    let a = &mut *attr;
    match p.pd.create_srq(a.attr.max_wr, a.attr.max_sge) {
        Ok(srq) => {
            let q = srq.query();
            a.attr.max_wr = q.max_wr;
            a.attr.max_sge = q.max_sge;
            let mut ibv: ibv_srq = zeroed();
            ibv.context = p.ibv.context;
            ibv.srq_context = a.srq_context;
            ibv.pd = pd;
            ibv.handle = srq.srq_num();
            let ptr = Box::into_raw(Box::new(Srq { ibv, srq })) as *mut ibv_srq;
            ctx(p.ibv.context).srqs.push(((*ptr).handle, ptr));
            ptr
        }
        Err(e) => {
            set_errno(errno_of(&e));
            null_mut()
        }
    }
}
export!(ibv_create_srq, "IBVERBS_1.1");

/// `IBV_SRQ_MAX_WR`, `IBV_SRQ_LIMIT`.
const SRQ_MAX_WR: c_int = 1;
const SRQ_LIMIT: c_int = 2;

#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_modify_srq(srq: *mut ibv_srq, attr: *mut ibv_srq_attr, mask: c_int) -> c_int {
    if srq.is_null() || attr.is_null() {
        return EINVAL;
    }
    if mask & SRQ_MAX_WR != 0 {
        return EOPNOTSUPP;
    }
    let _g = lock();
    if mask & SRQ_LIMIT != 0 {
        if let Err(e) = obj::<Srq>(srq).srq.arm_limit((*attr).srq_limit) {
            return errno_of(&e);
        }
    }
    0
}
export!(ibv_modify_srq, "IBVERBS_1.1");

#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_query_srq(srq: *mut ibv_srq, attr: *mut ibv_srq_attr) -> c_int {
    if srq.is_null() || attr.is_null() {
        return EINVAL;
    }
    let _g = lock();
    let q = obj::<Srq>(srq).srq.query();
    *attr = ibv_srq_attr { max_wr: q.max_wr, max_sge: q.max_sge, srq_limit: q.srq_limit };
    0
}
export!(ibv_query_srq, "IBVERBS_1.1");

#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_destroy_srq(srq: *mut ibv_srq) -> c_int {
    if srq.is_null() {
        return EINVAL;
    }
    let _g = lock();
    let p = srq as *mut Srq;
    let q = std::ptr::read(&(*p).srq);
    match q.destroy() {
        Ok(()) => {
            ctx((*srq).context).srqs.retain(|&(_, s)| s != srq);
            free_shell(p);
            0
        }
        Err(r) => {
            let e = errno_of(&r.error);
            std::ptr::write(&mut (*p).srq, r.object);
            e
        }
    }
}
export!(ibv_destroy_srq, "IBVERBS_1.1");
