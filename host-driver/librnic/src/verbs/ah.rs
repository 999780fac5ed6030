//! Address handles for UD QPs: `ibv_create_ah`, `ibv_destroy_ah`, `ibv_init_ah_from_wc` and
//! `ibv_create_ah_from_wc` (ibv_create_ah(3), ibv_create_ah_from_wc(3)).
//!
//! On this RoCEv2 port an address vector is global: `is_global` set and `grh.dgid` the peer's
//! IPv4-mapped GID (`-g 1` of the rdma-core examples). Its MAC is a known neighbour's, as for
//! an RC QP's path ([`super::qp::av_of`]: the devices of the list, `RNIC_PEER`). The handle
//! holds no NIC resource ([`ProtectionDomain::create_ah`]): each UD WQE carries the address.
use super::qp::av_of;
use super::*;

/// `ibv_create_ah(3)`: an address handle of `pd` for `attr`. Null with errno EINVAL for a
/// null argument, a non-global (LID-routed) vector, a GID that is not IPv4-mapped, a peer
/// whose MAC is not known, or a multicast / broadcast peer.
#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_create_ah(pd: *mut ibv_pd, attr: *mut ibv_ah_attr) -> *mut ibv_ah {
    if pd.is_null() || attr.is_null() {
        set_errno(EINVAL);
        return null_mut();
    }
    let mut g = lock();
    let p = obj::<Pd>(pd);
    let av = match av_of(&mut g, ctx(p.ibv.context), &*attr, "ibv_create_ah") {
        Ok(av) => av,
        Err(e) => {
            set_errno(e);
            return null_mut();
        }
    };
    match p.pd.create_ah(av) {
        Ok(ah) => {
            static HANDLES: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(1);
            let handle = HANDLES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let ibv = ibv_ah { context: p.ibv.context, pd, handle };
            Box::into_raw(Box::new(Ah { ibv, ah })) as *mut ibv_ah
        }
        Err(e) => {
            debug("ibv_create_ah", &e);
            set_errno(errno_of(&e));
            null_mut()
        }
    }
}
export!(ibv_create_ah, "IBVERBS_1.1");

/// `ibv_destroy_ah(3)`: 0, or EINVAL for a null handle.
#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_destroy_ah(ah: *mut ibv_ah) -> c_int {
    if ah.is_null() {
        return EINVAL;
    }
    let _g = lock();
    drop(Box::from_raw(ah as *mut Ah));
    0
}
export!(ibv_destroy_ah, "IBVERBS_1.1");

/// The IPv4 header in the 40-byte GRH area of a UD receive (its last 20 bytes, as rxe and mlx5
/// fill it for RoCEv2): (source, destination), or `None` if it is no IPv4 header.
unsafe fn ipv4_of_grh(grh: *const u8) -> Option<(Ipv4Addr, Ipv4Addr)> {
    let h = std::slice::from_raw_parts(grh.add(20), 20);
    if h[0] >> 4 != 4 {
        return None;
    }
    Some((Ipv4Addr::new(h[12], h[13], h[14], h[15]), Ipv4Addr::new(h[16], h[17], h[18], h[19])))
}

/// `ibv_init_ah_from_wc(3)`: the address vector that answers the sender of a UD receive `wc`
/// whose buffer began with `grh` (the 40-byte GRH area): the sender's IPv4-mapped GID as
/// `dgid`, and as `sgid_index` the index of the local GID the packet was sent to. Returns 0,
/// or -1 with errno EINVAL (no `IBV_WC_GRH`, no IPv4 header, a destination that is no GID of
/// the port).
#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_init_ah_from_wc(
    c: *mut ibv_context,
    port_num: u8,
    wc: *mut ibv_wc,
    grh: *mut c_void,
    attr: *mut ibv_ah_attr,
) -> c_int {
    match init_ah(c, port_num, wc, grh as *const u8) {
        Ok(a) => {
            *attr = a;
            0
        }
        Err(e) => {
            set_errno(e);
            -1
        }
    }
}
export!(ibv_init_ah_from_wc, "IBVERBS_1.1");

unsafe fn init_ah(c: *mut ibv_context, port_num: u8, wc: *mut ibv_wc, grh: *const u8) -> Result<ibv_ah_attr, c_int> {
    if c.is_null() || wc.is_null() || grh.is_null() {
        return Err(EINVAL);
    }
    let w = &*wc;
    if w.wc_flags & u32::from(rnic::WcFlags::GRH.bits()) == 0 {
        // RoCE routes by GID only: without a GRH there is no way back.
        return Err(EINVAL);
    }
    let (src, dst) = ipv4_of_grh(grh).ok_or(EINVAL)?;
    let _g = lock();
    let cx = &ctx(c).ctx;
    let dgid = dst.to_ipv6_mapped().octets();
    let sgid_index = (0..16u32)
        .map_while(|i| cx.query_gid(port_num, i).ok().map(|g| (i, g)))
        .find(|(_, g)| g.0 == dgid)
        .map(|(i, _)| i as u8)
        .ok_or(EINVAL)?;
    let mut a = ibv_ah_attr { is_global: 1, port_num, sl: w.sl, ..Default::default() };
    a.grh.dgid.raw = src.to_ipv6_mapped().octets();
    a.grh.sgid_index = sgid_index;
    a.grh.hop_limit = 0xFF;
    Ok(a)
}

/// `ibv_create_ah_from_wc(3)`: [`rnic_ibv_init_ah_from_wc`] then [`rnic_ibv_create_ah`].
/// Null with errno on failure.
#[no_mangle]
pub unsafe extern "C" fn rnic_ibv_create_ah_from_wc(
    pd: *mut ibv_pd,
    wc: *mut ibv_wc,
    grh: *mut c_void,
    port_num: u8,
) -> *mut ibv_ah {
    if pd.is_null() {
        set_errno(EINVAL);
        return null_mut();
    }
    match init_ah((*pd).context, port_num, wc, grh as *const u8) {
        Ok(mut a) => rnic_ibv_create_ah(pd, &mut a),
        Err(e) => {
            set_errno(e);
            null_mut()
        }
    }
}
export!(ibv_create_ah_from_wc, "IBVERBS_1.1");
