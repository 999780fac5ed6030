//! `libmlx5.so.1` for librnic: perftest 4.5 links these mlx5 direct-verbs entry points and
//! calls them only on mlx5 devices, so on rnic they exist and answer "not supported" (a null
//! object or `EOPNOTSUPP`, errno set). They give librnic's `libibverbs.so.1` a provider
//! library that does not import rdma-core's private symbols.
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

macro_rules! stub_ptr {
    ($name:ident, $ver:literal) => {
        /// Not supported: returns null with errno `EOPNOTSUPP`.
        #[no_mangle]
        pub extern "C" fn $name() -> *mut c_void {
            unsupported();
            null_mut()
        }
        std::arch::global_asm!(concat!(".symver ", stringify!($name), ", ", stringify!($name), "@@", $ver));
    };
}

macro_rules! stub_int {
    ($name:ident, $ver:literal) => {
        /// Not supported: returns `EOPNOTSUPP` (errno set too).
        #[no_mangle]
        pub extern "C" fn $name() -> c_int {
            unsupported();
            EOPNOTSUPP
        }
        std::arch::global_asm!(concat!(".symver ", stringify!($name), ", ", stringify!($name), "@@", $ver));
    };
}

stub_ptr!(mlx5dv_create_qp, "MLX5_1.3");
stub_ptr!(mlx5dv_open_device, "MLX5_1.7");
stub_int!(mlx5dv_devx_general_cmd, "MLX5_1.7");
stub_ptr!(mlx5dv_qp_ex_from_ibv_qp_ex, "MLX5_1.10");
stub_ptr!(mlx5dv_create_mkey, "MLX5_1.10");
stub_int!(mlx5dv_destroy_mkey, "MLX5_1.10");
stub_int!(mlx5dv_crypto_login, "MLX5_1.21");
stub_ptr!(mlx5dv_dek_create, "MLX5_1.21");
stub_int!(mlx5dv_dek_destroy, "MLX5_1.21");
stub_int!(mlx5dv_is_supported, "MLX5_1.8");
stub_int!(mlx5dv_query_device, "MLX5_1.0");
