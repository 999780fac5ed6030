//! String and rate conversions: `ibv_wc_status_str`, `ibv_event_type_str`,
//! `ibv_port_state_str`, `ibv_node_type_str`, `ibv_rate_to_mult` and the other rate helpers.
use super::*;

/// NUL-terminated copies of the status, event, port-state and node-type strings.
pub fn status_strings() -> (Vec<String>, Vec<String>) {
    let wc = (0..30u8).map(|i| rnic::WcStatus::from_raw(i).to_string()).collect();
    let ev = (0..30u32).map(|i| rnic::AsyncEventType::str_of(i).to_string()).collect();
    (wc, ev)
}

/// A static C string for `s` (the strings are `'static` and few; each is leaked once).
pub(super) fn cstr_static(s: &'static str) -> *const c_char {
    use std::collections::HashMap;
    static CACHE: Mutex<Option<HashMap<&'static str, usize>>> = Mutex::new(None);
    let mut c = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    let m = c.get_or_insert_with(HashMap::new);
    *m.entry(s).or_insert_with(|| {
        let b = std::ffi::CString::new(s).unwrap_or_default().into_boxed_c_str();
        Box::leak(b).as_ptr() as usize
    }) as *const c_char
}

#[no_mangle]
pub extern "C" fn rnic_ibv_wc_status_str(status: c_int) -> *const c_char {
    let s = u8::try_from(status).map_or("unknown", |v| rnic::WcStatus::from_raw(v).as_str());
    cstr_static(s)
}
export!(ibv_wc_status_str, "IBVERBS_1.1");

#[no_mangle]
pub extern "C" fn rnic_ibv_event_type_str(e: c_int) -> *const c_char {
    cstr_static(u32::try_from(e).map_or("unknown", rnic::AsyncEventType::str_of))
}
export!(ibv_event_type_str, "IBVERBS_1.1");

#[no_mangle]
pub extern "C" fn rnic_ibv_port_state_str(s: c_int) -> *const c_char {
    let t = match s {
        0 => "no state change (NOP)",
        1 => "down",
        2 => "init",
        3 => "armed",
        4 => "active",
        5 => "active defer",
        _ => "unknown",
    };
    cstr_static(t)
}
export!(ibv_port_state_str, "IBVERBS_1.1");

#[no_mangle]
pub extern "C" fn rnic_ibv_node_type_str(t: c_int) -> *const c_char {
    let s = match t {
        1 => "InfiniBand channel adapter",
        2 => "InfiniBand switch",
        3 => "InfiniBand router",
        4 => "iWARP NIC",
        5 => "usNIC",
        6 => "usNIC UDP",
        7 => "unspecified",
        _ => "unknown",
    };
    cstr_static(s)
}
export!(ibv_node_type_str, "IBVERBS_1.1");

/// `enum ibv_rate` → multiple of 2.5 Gb/s (-1 where rdma-core defines none) and Mb/s, as
/// rdma-core 44 converts them (checked against it by `tests/abi.rs`).
const RATES: [(c_int, c_int, c_int); 22] = [
    (2, 1, 2500),
    (3, 4, 10000),
    (4, 12, 30000),
    (5, 2, 5000),
    (6, 8, 20000),
    (7, 16, 40000),
    (8, 24, 60000),
    (9, 32, 80000),
    (10, 48, 120000),
    (11, -1, 14062),
    (12, -1, 56250),
    (13, -1, 112500),
    (14, -1, 168750),
    (15, -1, 25781),
    (16, -1, 103125),
    (17, -1, 206250),
    (18, -1, 309375),
    (19, 11, 28125),
    (20, 20, 53125),
    (21, 160, 425000),
    (22, 240, 637500),
    (23, 320, 850000),
];

#[no_mangle]
pub extern "C" fn rnic_ibv_rate_to_mult(rate: c_int) -> c_int {
    RATES.iter().find(|r| r.0 == rate).map_or(-1, |r| r.1)
}
export!(ibv_rate_to_mult, "IBVERBS_1.0");

#[no_mangle]
pub extern "C" fn rnic_mult_to_ibv_rate(mult: c_int) -> c_int {
    RATES.iter().find(|r| r.1 == mult && mult > 0).map_or(0, |r| r.0)
}
export!(mult_to_ibv_rate, "IBVERBS_1.0");

#[no_mangle]
pub extern "C" fn rnic_ibv_rate_to_mbps(rate: c_int) -> c_int {
    RATES.iter().find(|r| r.0 == rate).map_or(-1, |r| r.2)
}
export!(ibv_rate_to_mbps, "IBVERBS_1.1");

#[no_mangle]
pub extern "C" fn rnic_mbps_to_ibv_rate(mbps: c_int) -> c_int {
    RATES.iter().find(|r| r.2 == mbps).map_or(0, |r| r.0)
}
export!(mbps_to_ibv_rate, "IBVERBS_1.1");
