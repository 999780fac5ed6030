//! `libefa.so.1` for librnic: perftest 4.5 links these EFA direct-verbs entry points and calls
//! them only on EFA devices, so on rnic they exist and answer "not supported" (a null QP or
//! `EOPNOTSUPP`, errno set).
use std::ffi::{c_int, c_void};
use std::ptr::null_mut;

const EOPNOTSUPP: c_int = 95;

extern "C" {
    fn __errno_location() -> *mut c_int;
}

fn unsupported() {
    // SAFETY: glibc's thread-local errno.
    unsafe { *__errno_location() = EOPNOTSUPP };
}

/// Not supported: `EOPNOTSUPP`.
#[no_mangle]
pub extern "C" fn efadv_query_device() -> c_int {
    unsupported();
    EOPNOTSUPP
}
std::arch::global_asm!(".symver efadv_query_device, efadv_query_device@@EFA_1.1");

/// Not supported: a null QP, errno `EOPNOTSUPP`.
#[no_mangle]
pub extern "C" fn efadv_create_qp_ex() -> *mut c_void {
    unsupported();
    null_mut()
}
std::arch::global_asm!(".symver efadv_create_qp_ex, efadv_create_qp_ex@@EFA_1.1");

/// Not supported: a null QP, errno `EOPNOTSUPP`.
#[no_mangle]
pub extern "C" fn efadv_create_driver_qp() -> *mut c_void {
    unsupported();
    null_mut()
}
std::arch::global_asm!(".symver efadv_create_driver_qp, efadv_create_driver_qp@@EFA_1.0");
