//! Protection domains and memory regions: `ibv_alloc_pd`, `ibv_dealloc_pd`, `ibv_reg_mr` (and
//! its `_iova` forms), `ibv_rereg_mr`, `ibv_dereg_mr`.
use super::*;

#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_alloc_pd(c: *mut ibv_context) -> *mut ibv_pd {
    if c.is_null() {
        set_errno(EINVAL);
        return null_mut();
    }
    let _g = lock();
    match ctx(c).ctx.alloc_pd() {
        Ok(pd) => {
            let handle = pd.pdn();
            Box::into_raw(Box::new(Pd { ibv: ibv_pd { context: c, handle }, pd })) as *mut ibv_pd
        }
        Err(e) => {
            set_errno(errno_of(&e));
            null_mut()
        }
    }
}
export!(ibv_alloc_pd, "IBVERBS_1.1");

#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_dealloc_pd(pd: *mut ibv_pd) -> c_int {
    if pd.is_null() {
        return EINVAL;
    }
    let _g = lock();
    let p = pd as *mut Pd;
    // Moved out; written back in place if refused (the program keeps its pointer).
    let q = std::ptr::read(&(*p).pd);
    match q.dealloc() {
        Ok(()) => {
            free_shell(p);
            0
        }
        Err(r) => {
            debug("ibv_dealloc_pd", &r);
            let e = errno_of(&r.error);
            std::ptr::write(&mut (*p).pd, r.object);
            e
        }
    }
}
export!(ibv_dealloc_pd, "IBVERBS_1.1");

/// `IBV_ACCESS_OPTIONAL_RANGE`: access bits a provider may ignore.
const ACCESS_OPTIONAL_RANGE: u32 = 0x3ff0_0000;

fn access_of(access: c_int) -> Result<AccessFlags, c_int> {
    let a = access as u32 & !ACCESS_OPTIONAL_RANGE;
    AccessFlags::from_bits(a).ok_or(EOPNOTSUPP)
}

unsafe fn reg_mr(pd: *mut ibv_pd, addr: *mut c_void, len: usize, iova: u64, access: c_int) -> *mut ibv_mr {
    if pd.is_null() {
        set_errno(EINVAL);
        return null_mut();
    }
    if iova != addr as u64 {
        // The NIC translates the buffer's own virtual address (the MR entry's VA).
        set_errno(EOPNOTSUPP);
        return null_mut();
    }
    let flags = match access_of(access) {
        Ok(f) => f,
        Err(e) => {
            set_errno(e);
            return null_mut();
        }
    };
    let _g = lock();
    let p = obj::<Pd>(pd);
    match MemoryRegion::register_raw(&p.pd, addr as *mut u8, len, flags) {
        Ok(mr) => {
            let ibv = ibv_mr {
                context: p.ibv.context,
                pd,
                addr,
                length: len,
                handle: mr.lkey(),
                lkey: mr.lkey(),
                rkey: mr.rkey(),
            };
            Box::into_raw(Box::new(Mr { ibv, mr })) as *mut ibv_mr
        }
        Err(e) => {
            debug("ibv_reg_mr", &e);
            set_errno(errno_of(&e));
            null_mut()
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_reg_mr(pd: *mut ibv_pd, addr: *mut c_void, len: usize, access: c_int) -> *mut ibv_mr {
    reg_mr(pd, addr, len, addr as u64, access)
}
export!(ibv_reg_mr, "IBVERBS_1.1");

#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_reg_mr_iova(
    pd: *mut ibv_pd,
    addr: *mut c_void,
    len: usize,
    iova: u64,
    access: c_int,
) -> *mut ibv_mr {
    reg_mr(pd, addr, len, iova, access)
}
export!(ibv_reg_mr_iova, "IBVERBS_1.7");

#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_reg_mr_iova2(
    pd: *mut ibv_pd,
    addr: *mut c_void,
    len: usize,
    iova: u64,
    access: u32,
) -> *mut ibv_mr {
    reg_mr(pd, addr, len, iova, access as c_int)
}
export!(ibv_reg_mr_iova2, "IBVERBS_1.8");

#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_dereg_mr(mr: *mut ibv_mr) -> c_int {
    if mr.is_null() {
        return EINVAL;
    }
    let _g = lock();
    let b = Box::from_raw(mr as *mut Mr);
    match b.mr.deregister() {
        Ok(()) => 0,
        Err(e) => errno_of(&e),
    }
}
export!(ibv_dereg_mr, "IBVERBS_1.1");

/// `ibv_rereg_mr(3)` flags.
const REREG_CHANGE_TRANSLATION: c_int = 1;
const REREG_CHANGE_PD: c_int = 2;
const REREG_CHANGE_ACCESS: c_int = 4;

#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_rereg_mr(
    mr: *mut ibv_mr,
    flags: c_int,
    pd: *mut ibv_pd,
    addr: *mut c_void,
    len: usize,
    access: c_int,
) -> c_int {
    if mr.is_null() || flags & !(REREG_CHANGE_TRANSLATION | REREG_CHANGE_PD | REREG_CHANGE_ACCESS) != 0 {
        return EINVAL;
    }
    let _g = lock();
    let m = obj::<Mr>(mr);
    let access = if flags & REREG_CHANGE_ACCESS != 0 {
        match access_of(access) {
            Ok(a) => Some(a),
            Err(e) => return e,
        }
    } else {
        None
    };
    if flags & REREG_CHANGE_PD != 0 {
        if pd.is_null() {
            return EINVAL;
        }
        if let Err(e) = m.mr.rereg(Some(&obj::<Pd>(pd).pd), access) {
            return errno_of(&e);
        }
        m.ibv.pd = pd;
    } else if flags & REREG_CHANGE_TRANSLATION == 0 {
        if let Err(e) = m.mr.rereg(None, access) {
            return errno_of(&e);
        }
    }
    if flags & REREG_CHANGE_TRANSLATION != 0 {
        if let Err(e) = m.mr.rereg_translation_raw(addr as *mut u8, len, access) {
            return errno_of(&e);
        }
        m.ibv.addr = addr;
        m.ibv.length = len;
    }
    0
}
export!(ibv_rereg_mr, "IBVERBS_1.1");
