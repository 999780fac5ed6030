//! Symbols programs import that have no work to do here or are not supported: sysfs and
//! fork (nothing to read or protect), and the verbs that fail cleanly with `EOPNOTSUPP`.
use super::strings::cstr_static;
use super::*;

// ---- sysfs and fork: nothing to read or protect ----

#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_get_sysfs_path() -> *const c_char {
    cstr_static("/sys")
}
export!(ibv_get_sysfs_path, "IBVERBS_1.0");

#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_read_sysfs_file(
    _dir: *const c_char,
    _file: *const c_char,
    _buf: *mut c_char,
    _size: usize,
) -> c_int {
    // The devices are not kernel devices: no sysfs attributes (ibv_devinfo then omits
    // board_id).
    set_errno(2);
    -1
}
export!(ibv_read_sysfs_file, "IBVERBS_1.0");

#[no_mangle]
pub extern "C" fn rnic_ibv_fork_init() -> c_int {
    // User buffers are mapped by the device backend, not pinned by a kernel: fork needs no
    // MADV_DONTFORK here.
    0
}
export!(ibv_fork_init, "IBVERBS_1.1");

#[no_mangle]
pub extern "C" fn rnic_ibv_is_fork_initialized() -> c_int {
    0 // IBV_FORK_DISABLED
}
export!(ibv_is_fork_initialized, "IBVERBS_1.13");

#[no_mangle]
pub extern "C" fn rnic_ibv_dontfork_range(_base: *mut c_void, _size: usize) -> c_int {
    0
}
export!(ibv_dontfork_range, "IBVERBS_1.1");

#[no_mangle]
pub extern "C" fn rnic_ibv_dofork_range(_base: *mut c_void, _size: usize) -> c_int {
    0
}
export!(ibv_dofork_range, "IBVERBS_1.1");

// ---- not supported: the symbols exist so that programs load; each fails cleanly ----

macro_rules! unsupported_int {
    ($rname:ident, $name:ident, $ver:literal, $ret:expr) => {
        #[no_mangle]
        pub extern "C" fn $rname() -> c_int {
            set_errno(EOPNOTSUPP);
            $ret
        }
        export!($name, $ver);
    };
}

macro_rules! unsupported_p {
    ($rname:ident, $name:ident, $ver:literal) => {
        #[no_mangle]
        pub extern "C" fn $rname() -> *mut c_void {
            set_errno(EOPNOTSUPP);
            null_mut()
        }
        export!($name, $ver);
    };
}

// The kernel's neighbour lookup for an address vector (librnic resolves MACs itself, see
// `ibv_create_ah`).
unsupported_int!(rnic_ibv_resolve_eth_l2_from_gid, ibv_resolve_eth_l2_from_gid, "IBVERBS_1.1", -1);
// Multicast (UD).
unsupported_int!(rnic_ibv_attach_mcast, ibv_attach_mcast, "IBVERBS_1.1", EOPNOTSUPP);
unsupported_int!(rnic_ibv_detach_mcast, ibv_detach_mcast, "IBVERBS_1.1", EOPNOTSUPP);
// Kernel-command copies (there is no kernel command).
unsupported_int!(rnic_ibv_copy_path_rec_from_kern, ibv_copy_path_rec_from_kern, "IBVERBS_1.0", 0);
unsupported_int!(rnic_ibv_copy_path_rec_to_kern, ibv_copy_path_rec_to_kern, "IBVERBS_1.0", 0);
unsupported_int!(rnic_ibv_copy_qp_attr_from_kern, ibv_copy_qp_attr_from_kern, "IBVERBS_1.0", 0);
unsupported_int!(rnic_ibv_copy_ah_attr_from_kern, ibv_copy_ah_attr_from_kern, "IBVERBS_1.1", 0);
// Extended QP (the new post-send API), import/export, ECE, dmabuf, DM.
unsupported_p!(rnic_ibv_qp_to_qp_ex, ibv_qp_to_qp_ex, "IBVERBS_1.6");
unsupported_p!(rnic_ibv_import_device, ibv_import_device, "IBVERBS_1.10");
unsupported_p!(rnic_ibv_import_mr, ibv_import_mr, "IBVERBS_1.10");
unsupported_p!(rnic_ibv_import_pd, ibv_import_pd, "IBVERBS_1.10");
unsupported_int!(rnic_ibv_query_ece, ibv_query_ece, "IBVERBS_1.10", EOPNOTSUPP);
unsupported_int!(rnic_ibv_set_ece, ibv_set_ece, "IBVERBS_1.10", EOPNOTSUPP);
unsupported_int!(rnic_ibv_unimport_mr, ibv_unimport_mr, "IBVERBS_1.10", 0);
unsupported_int!(rnic_ibv_unimport_pd, ibv_unimport_pd, "IBVERBS_1.10", 0);
unsupported_p!(rnic_ibv_reg_dmabuf_mr, ibv_reg_dmabuf_mr, "IBVERBS_1.12");
unsupported_p!(rnic_ibv_import_dm, ibv_import_dm, "IBVERBS_1.13");
unsupported_int!(rnic_ibv_unimport_dm, ibv_unimport_dm, "IBVERBS_1.13", 0);
unsupported_int!(rnic_ibv_query_qp_data_in_order, ibv_query_qp_data_in_order, "IBVERBS_1.14", 0);
