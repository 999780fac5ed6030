//! Device and port queries: `ibv_query_device(3)`, `ibv_query_port(3)`, `ibv_query_gid(3)`,
//! `ibv_query_pkey(3)` and the GID type (`ibv_query_gid_type`), from the NIC's capability
//! registers ([`crate::DeviceInfo`]) and the port address the driver programmed.
//!
//! The GID table of the port follows Linux soft-RoCE (rxe) on a RoCEv2 port with one IPv4
//! address (docs/guests.md §4.2): index 0 is the link-local IPv6 address derived from the MAC
//! (EUI-64, `fe80::…`), index 1 the IPv4-mapped address `::ffff:a.b.c.d` (RFC 4291 2.5.5.2),
//! both of type RoCE v2. Programs use index 1 for IPv4 RoCEv2 (perftest `-x 1`,
//! `ibv_rc_pingpong -g 1`).
use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};

use rnic_contract::regs::features;

use crate::context::{Context, MacAddr};
use crate::cq::MAX_CQE;
use crate::error::{Error, Result};
use crate::qp::{Mtu, DEFAULT_PKEY};

/// A 16-byte GID (`union ibv_gid`), network byte order.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Gid(pub [u8; 16]);

impl Gid {
    /// The RoCEv2 GID of an IPv4 address: the IPv4-mapped IPv6 address `::ffff:a.b.c.d`
    /// (IBTA Annex A17.4.5.1, RFC 4291 2.5.5.2).
    pub fn from_ipv4(ip: Ipv4Addr) -> Self {
        Self(ip.to_ipv6_mapped().octets())
    }

    /// The link-local GID of a MAC: `fe80::` + the modified EUI-64 of the MAC (RFC 4291
    /// Appendix A: `ff:fe` inserted in the middle, the universal/local bit flipped), as Linux
    /// puts at index 0 of a RoCE port's table.
    pub fn link_local(mac: MacAddr) -> Self {
        let mut g = [0u8; 16];
        g[0] = 0xfe;
        g[1] = 0x80;
        g[8..].copy_from_slice(&eui64(mac).to_be_bytes());
        Self(g)
    }

    /// The GID as an IPv6 address.
    pub fn to_ipv6(self) -> Ipv6Addr {
        Ipv6Addr::from(self.0)
    }

    /// The IPv4 address of an IPv4-mapped GID (`::ffff:a.b.c.d`), if it is one.
    pub fn to_ipv4(self) -> Option<Ipv4Addr> {
        self.to_ipv6().to_ipv4_mapped()
    }

    /// True for the all-zero GID (an empty table entry).
    pub fn is_zero(self) -> bool {
        self.0 == [0; 16]
    }
}

impl fmt::Display for Gid {
    /// Eight groups of four hex digits, as `ibv_devinfo -v` prints a GID
    /// (`0000:0000:0000:0000:0000:ffff:c0a8:4d01`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, pair) in self.0.chunks(2).enumerate() {
            if i > 0 {
                f.write_str(":")?;
            }
            write!(f, "{:02x}{:02x}", pair[0], pair[1])?;
        }
        Ok(())
    }
}

impl fmt::Debug for Gid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Gid({})", self.to_ipv6())
    }
}

/// The modified EUI-64 of a MAC (RFC 4291 Appendix A), as a number: also the node GUID Linux
/// gives a RoCE device (rxe: MAC 52:54:00:77:00:01 → GUID 5054:00ff:fe77:0001).
pub fn eui64(mac: MacAddr) -> u64 {
    let m = mac.0;
    u64::from_be_bytes([m[0] ^ 0x02, m[1], m[2], 0xff, 0xfe, m[3], m[4], m[5]])
}

/// `enum ibv_gid_type` (the type of a GID table entry).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum GidType {
    /// `IBV_GID_TYPE_IB`.
    Ib = 0,
    /// `IBV_GID_TYPE_ROCE_V1`.
    RoceV1 = 1,
    /// `IBV_GID_TYPE_ROCE_V2`: UDP/IP encapsulation, the only type this NIC speaks.
    RoceV2 = 2,
}

/// `enum ibv_atomic_cap`: what atomicity the NIC's atomics guarantee.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum AtomicCap {
    /// `IBV_ATOMIC_NONE`: no atomics.
    None = 0,
    /// `IBV_ATOMIC_HCA`: atomic against the other atomics of this NIC (not against the CPU).
    Hca = 1,
    /// `IBV_ATOMIC_GLOB`: atomic against everything.
    Glob = 2,
}

/// `max_ah` reported with UD: address handles are plain driver values (the WQE carries the
/// address), so this only bounds what a program may expect, as rxe's 0x7FFF does.
pub const MAX_AH: u32 = 0x7FFF;

bitflags::bitflags! {
    /// `enum ibv_device_cap_flags` (the bits this NIC can set).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
    pub struct DeviceCapFlags: u32 {
        /// `IBV_DEVICE_CURR_QP_STATE_MOD`: `ibv_modify_qp` takes `cur_qp_state`.
        const CURR_QP_STATE_MOD = 1 << 7;
        /// `IBV_DEVICE_SYS_IMAGE_GUID`: `sys_image_guid` is valid.
        const SYS_IMAGE_GUID = 1 << 11;
        /// `IBV_DEVICE_RC_RNR_NAK_GEN`: the responder sends RNR NAKs.
        const RC_RNR_NAK_GEN = 1 << 12;
        /// `IBV_DEVICE_N_NOTIFY_CQ`: a CQ can be armed to notify once it holds N completions (the
        /// kernel's `ib_req_ncomp_notif`); never set: rnic's arms are next / solicited
        /// ([`crate::CompletionQueue::req_notify`], which every RDMA device has).
        const N_NOTIFY_CQ = 1 << 14;
    }
}

/// `struct ibv_device_attr` (ibv_query_device(3)): the device's limits. Counts are objects;
/// `max_qp_wr`, `max_cqe` and `max_srq_wr` are queue entries; `max_mr_size` bytes. GUIDs are
/// numbers (the C ABI stores them big-endian).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceAttr {
    /// Firmware version: the register contract, `"major.minor"` of VERSION.
    pub fw_ver: String,
    /// Node GUID: the EUI-64 of the port MAC ([`eui64`]), 0 before the port has an address.
    pub node_guid: u64,
    /// System image GUID: the node GUID.
    pub sys_image_guid: u64,
    /// Largest memory region in bytes.
    pub max_mr_size: u64,
    /// Page sizes supported (a bit per size): 4 KiB.
    pub page_size_cap: u64,
    /// IEEE OUI of the vendor: 0xffffff, none assigned (as rxe reports).
    pub vendor_id: u32,
    /// Vendor part number: 0.
    pub vendor_part_id: u32,
    /// Hardware version: the VERSION register.
    pub hw_ver: u32,
    /// QPs (the QP contexts less QP 0 and 1; SRQs take numbers from the same space).
    pub max_qp: u32,
    /// Send or receive WRs per QP (2^LOG_MAX_SQ_WR).
    pub max_qp_wr: u32,
    /// Capability flags.
    pub device_cap_flags: DeviceCapFlags,
    /// SGEs per WR for `ibv_qp_cap.max_send_sge` and `max_recv_sge` alike: the smaller of the
    /// send and receive limits (as the kernel reports for mlx5).
    pub max_sge: u32,
    /// Gather entries per send WR (QP_CAPS 15:8).
    pub max_send_sge: u32,
    /// Scatter entries per receive WR (QP_CAPS 23:16).
    pub max_recv_sge: u32,
    /// Scatter entries of an RDMA READ (the send WQE's list).
    pub max_sge_rd: u32,
    /// Inline bytes per send WR (SEND_CAPS).
    pub max_inline_data: u32,
    /// CQs.
    pub max_cq: u32,
    /// Entries per CQ (the driver's largest ring, [`MAX_CQE`]).
    pub max_cqe: u32,
    /// Memory regions (key-table entries).
    pub max_mr: u32,
    /// Protection domains (24-bit numbers).
    pub max_pd: u32,
    /// READs / atomics a QP takes outstanding as responder (QP_CAPS 31:24).
    pub max_qp_rd_atom: u32,
    /// READs / atomics a QP has outstanding as requester (QP_CAPS 31:24).
    pub max_qp_init_rd_atom: u32,
    /// Responder resources of the whole device (`max_qp × max_qp_rd_atom`).
    pub max_res_rd_atom: u32,
    /// Atomicity of the atomics (FEATURES 9:8).
    pub atomic_cap: AtomicCap,
    /// SRQs (they share the QP numbers).
    pub max_srq: u32,
    /// Receive WRs per SRQ (2^LOG_MAX_SRQ_WR).
    pub max_srq_wr: u32,
    /// Scatter entries per SRQ receive WR.
    pub max_srq_sge: u32,
    /// Address handles: [`MAX_AH`] with UD (FEATURES bit 3), else 0. An address handle holds
    /// no NIC resource (each UD WQE carries its address), so the bound is nominal.
    pub max_ah: u32,
    /// P_Keys in the port's table: 1 (0xFFFF).
    pub max_pkeys: u16,
    /// Local CA ACK delay (the exponent of 4.096 µs): 15, as rxe.
    pub local_ca_ack_delay: u8,
    /// Physical ports: 1.
    pub phys_port_cnt: u8,
}

/// `enum ibv_port_state`, with `Display` giving `ibv_port_state_str(3)`'s text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum PortState {
    /// 0: no state change.
    Nop = 0,
    /// 1: down.
    Down = 1,
    /// 2: init.
    Init = 2,
    /// 3: armed.
    Armed = 3,
    /// 4: active.
    Active = 4,
    /// 5: active defer.
    ActiveDefer = 5,
}

impl fmt::Display for PortState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Nop => "no state change (NOP)",
            Self::Down => "down",
            Self::Init => "init",
            Self::Armed => "armed",
            Self::Active => "active",
            Self::ActiveDefer => "active defer",
        })
    }
}

/// `IBV_LINK_LAYER_ETHERNET`.
pub const LINK_LAYER_ETHERNET: u8 = 2;
/// `IBV_WIDTH_4X` (`active_width`).
pub const WIDTH_4X: u8 = 2;
/// `IBV_SPEED_EDR`: 25 Gb/s per lane (`active_speed`); with 4X, a 100 Gb/s port.
pub const SPEED_EDR: u8 = 32;
/// `IBV_PORT_IP_BASED_GIDS` in `port_cap_flags`: the GID table holds IP addresses.
pub const PORT_IP_BASED_GIDS: u32 = 1 << 26;
/// `phys_state` LinkUp (IBTA Vol 1 14.2.5.6).
pub const PHYS_STATE_LINK_UP: u8 = 5;

/// `struct ibv_port_attr` (ibv_query_port(3)) of the NIC's single port: a 100 Gb/s Ethernet
/// port speaking RoCEv2 (4X EDR in IB terms).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortAttr {
    /// Active once the driver gave the port its MAC and IPv4 address, down before.
    pub state: PortState,
    /// Largest path MTU: 4096.
    pub max_mtu: Mtu,
    /// Path MTU in use: 4096.
    pub active_mtu: Mtu,
    /// GID table entries: 2 (link-local, IPv4-mapped).
    pub gid_tbl_len: u32,
    /// `port_cap_flags` ([`PORT_IP_BASED_GIDS`]).
    pub port_cap_flags: u32,
    /// Largest message in bytes: 2^31.
    pub max_msg_sz: u32,
    /// P_Key table entries: 1.
    pub pkey_tbl_len: u16,
    /// LID: 0 (Ethernet has none).
    pub lid: u16,
    /// `IBV_LINK_LAYER_ETHERNET`.
    pub link_layer: u8,
    /// [`WIDTH_4X`].
    pub active_width: u8,
    /// [`SPEED_EDR`].
    pub active_speed: u8,
    /// [`PHYS_STATE_LINK_UP`] when active, else 3 (Disabled).
    pub phys_state: u8,
    /// Data VLs: 1 (`max_vl_num` code 1 = VL0).
    pub max_vl_num: u8,
}

impl Context {
    /// `ibv_query_device(3)`: the device's limits, from the capability registers read at open
    /// ([`crate::DeviceInfo`]: CAPS, QP_CAPS, SEND_CAPS, SRQ_CAPS, FEATURES) and the port MAC.
    pub fn query_device(&self) -> DeviceAttr {
        let i = self.device_info();
        let n = |log: u8| 1u32.checked_shl(log.into()).unwrap_or(0);
        let max_qp = n(i.log_qps).saturating_sub(crate::context::FIRST_QPN as u32);
        let rd = u32::from(i.max_rd_atomic);
        let node_guid = self.port_addr().map_or(0, |p| eui64(p.mac));
        let mut flags = DeviceCapFlags::SYS_IMAGE_GUID | DeviceCapFlags::CURR_QP_STATE_MOD;
        flags.set(DeviceCapFlags::RC_RNR_NAK_GEN, i.has_feature(features::RNR_NAK_GEN));
        let srq = i.has_feature(features::SRQ);
        DeviceAttr {
            fw_ver: format!("{}.{}", i.major(), i.minor()),
            node_guid,
            sys_image_guid: node_guid,
            max_mr_size: u64::MAX,
            page_size_cap: 4096,
            vendor_id: 0xff_ffff,
            vendor_part_id: 0,
            hw_ver: i.version,
            max_qp,
            max_qp_wr: n(i.log_max_sq_wr).min(n(i.log_max_rq_wr)),
            device_cap_flags: flags,
            max_sge: u32::from(i.max_send_sge.min(i.max_recv_sge)),
            max_send_sge: i.max_send_sge.into(),
            max_recv_sge: i.max_recv_sge.into(),
            max_sge_rd: i.max_send_sge.into(),
            max_inline_data: i.max_inline.into(),
            // Less the CQ of the context's asynchronous event queue.
            max_cq: n(i.log_cqs).saturating_sub(u32::from(self.has_qp_events())),
            max_cqe: MAX_CQE as u32,
            max_mr: n(i.log_mrs),
            max_pd: 0xFF_FFFF,
            max_qp_rd_atom: rd,
            max_qp_init_rd_atom: rd,
            max_res_rd_atom: max_qp.saturating_mul(rd),
            atomic_cap: match (i.has_feature(features::ATOMICS), i.atomic_cap()) {
                (false, _) | (_, 0) => AtomicCap::None,
                (true, 1) => AtomicCap::Hca,
                (true, _) => AtomicCap::Glob,
            },
            max_srq: if srq { max_qp } else { 0 },
            max_srq_wr: if srq { n(i.log_max_srq_wr) } else { 0 },
            max_srq_sge: if srq { i.max_srq_sge.into() } else { 0 },
            max_ah: if i.has_feature(features::UD) { MAX_AH } else { 0 },
            max_pkeys: 1,
            local_ca_ack_delay: 15,
            phys_port_cnt: 1,
        }
    }

    fn check_port(port_num: u8) -> Result<()> {
        if port_num != 1 {
            return Err(Error::inval(format!("port {port_num} does not exist (the NIC has port 1)")));
        }
        Ok(())
    }

    /// `ibv_query_port(3)` of port 1 (the only one).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for another port number.
    pub fn query_port(&self, port_num: u8) -> Result<PortAttr> {
        Self::check_port(port_num)?;
        let up = self.port_addr().is_some();
        Ok(PortAttr {
            state: if up { PortState::Active } else { PortState::Down },
            max_mtu: Mtu::Mtu4096,
            active_mtu: Mtu::Mtu4096,
            gid_tbl_len: GID_TABLE_LEN,
            port_cap_flags: PORT_IP_BASED_GIDS,
            max_msg_sz: rnic_contract::MAX_MSG_SZ,
            pkey_tbl_len: 1,
            lid: 0,
            link_layer: LINK_LAYER_ETHERNET,
            active_width: WIDTH_4X,
            active_speed: SPEED_EDR,
            phys_state: if up { PHYS_STATE_LINK_UP } else { 3 },
            max_vl_num: 1,
        })
    }

    /// `ibv_query_gid(3)`: entry `index` of port 1's GID table (see the module): 0 the
    /// link-local GID of the MAC, 1 the IPv4-mapped GID; the zero GID before the port has an
    /// address.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for another port or an index ≥ [`GID_TABLE_LEN`].
    pub fn query_gid(&self, port_num: u8, index: u32) -> Result<Gid> {
        Self::check_port(port_num)?;
        let Some(p) = self.port_addr() else {
            return if index < GID_TABLE_LEN {
                Ok(Gid::default())
            } else {
                Err(Error::inval(format!("GID index {index}: the table has {GID_TABLE_LEN} entries")))
            };
        };
        match index {
            0 => Ok(Gid::link_local(p.mac)),
            1 => Ok(Gid::from_ipv4(p.ip)),
            _ => Err(Error::inval(format!("GID index {index}: the table has {GID_TABLE_LEN} entries"))),
        }
    }

    /// The type of GID table entry `index` (`ibv_query_gid_type`): RoCE v2 for both.
    ///
    /// # Errors
    /// As [`query_gid`](Self::query_gid).
    pub fn query_gid_type(&self, port_num: u8, index: u32) -> Result<GidType> {
        self.query_gid(port_num, index).map(|_| GidType::RoceV2)
    }

    /// `ibv_query_pkey(3)`: the port's P_Key table has one entry, 0xFFFF (the default
    /// partition, full membership).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for another port or index.
    pub fn query_pkey(&self, port_num: u8, index: u16) -> Result<u16> {
        Self::check_port(port_num)?;
        if index != 0 {
            return Err(Error::inval(format!("P_Key index {index}: the table has one entry")));
        }
        Ok(DEFAULT_PKEY)
    }
}

/// Entries of the port's GID table.
pub const GID_TABLE_LEN: u32 = 2;
