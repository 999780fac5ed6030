//! Packing and unpacking of the records the driver and the NIC exchange, exactly as
//! [`rnic_contract`] lays them out: WQEs (host memory, driver → NIC), CQEs (host memory,
//! NIC → driver) and the 64-byte context records committed through the BAR0 context-command
//! registers (QP context, MR key-table entry, CQ context).
//!
//! Only layout lives here; the verbs decide the values. Public so tools and tests can build or
//! decode records; applications use the verbs instead.
use std::net::Ipv4Addr;

use rnic_contract::{cq_context, cqe, mr_entry, qp_context, recv_wqe, regs, wqe};

use crate::device::Device;
use crate::error::Result;

/// A 64-byte little-endian record (context staging vector or WQE).
pub type Record = [u8; 64];

/// The MAC address as the NIC stores it: byte 0 of the address in bits 7:0.
pub fn mac_to_u64(mac: [u8; 6]) -> u64 {
    let mut b = [0u8; 8];
    b[..6].copy_from_slice(&mac);
    u64::from_le_bytes(b)
}

/// The IPv4 address as the NIC stores it: first octet in bits 31:24.
pub fn ip_to_u32(ip: Ipv4Addr) -> u32 {
    u32::from(ip)
}

/// The full QP context the driver keeps per QP and rewrites on every modify
/// ([`rnic_contract::qp_context`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QpContext {
    /// ibv_qp_state value (SQD is written as RTS with [`Self::sq_drain`]).
    pub state: u8,
    /// The send queue drains ([`qp_context::SQ_DRAIN`]: `IBV_QPS_SQD`).
    pub sq_drain: bool,
    /// Raise `IBV_EVENT_SQ_DRAINED` when drained ([`qp_context::SQD_NOTIFY`]).
    pub sqd_notify: bool,
    /// Reload the requester's PSN from `sq_psn` and reset the SQ indices.
    pub init_sq_psn: bool,
    /// Reload the responder's expected PSN from `rq_psn` and reset the MSN.
    pub init_rq_psn: bool,
    /// ibv_mtu code (1 = 256 … 5 = 4096).
    pub path_mtu: u8,
    /// Transport service ([`rnic_contract::verbs::qp_type`]: 0 RC, 1 UD). A UD QP keeps its
    /// Q_Key in `dest_ip` ([`qp_context::QKEY`]).
    pub qp_type: u8,
    /// Remote access bits of qp_access_flags.
    pub access: u8,
    /// Protection domain number.
    pub pd: u32,
    /// Peer's QP number.
    pub dest_qpn: u32,
    /// First PSN sent.
    pub sq_psn: u32,
    /// First PSN expected.
    pub rq_psn: u32,
    /// BTH P_Key.
    pub pkey: u16,
    /// UDP source port.
    pub udp_sport: u16,
    /// Peer's IPv4 address.
    pub dest_ip: Ipv4Addr,
    /// Peer's MAC address.
    pub dest_mac: [u8; 6],
    /// Local ACK timeout exponent (4.096 µs × 2^timeout; 0 = none).
    pub timeout: u8,
    /// Retransmissions allowed after a timeout or sequence NAK (0..=7).
    pub retry_cnt: u8,
    /// RNR retries allowed (7 = infinite).
    pub rnr_retry: u8,
    /// RNR NAK timer code the responder advertises.
    pub min_rnr_timer: u8,
    /// CQ index for send completions.
    pub send_cq: u8,
    /// log2 of the SQ ring size in WQEs.
    pub sq_log_size: u8,
    /// log2 of the WQE size in 64-byte slots ([`qp_context::SQ_LOG_STRIDE`]).
    pub sq_log_stride: u8,
    /// IOVA of the SQ ring.
    pub sq_base: u64,
    /// CQ index for receive completions.
    pub recv_cq: u8,
    /// log2 of the RQ ring size in receive WQEs.
    pub rq_log_size: u8,
    /// log2 of the receive WQE size in 64-byte slots ([`qp_context::RQ_LOG_STRIDE`]).
    pub rq_log_stride: u8,
    /// IOVA of the RQ ring (0 when the QP has no receive queue).
    pub rq_base: u64,
    /// RDMA READs outstanding as requester ([`qp_context::MAX_RD_ATOMIC`]).
    pub max_rd_atomic: u8,
    /// Receive from the SRQ [`Self::srqn`] ([`qp_context::USE_SRQ`]).
    pub use_srq: bool,
    /// SRQ number ([`qp_context::SRQN`]).
    pub srqn: u8,
    /// READs/atomics outstanding as responder ([`qp_context::MAX_DEST_RD_ATOMIC`]).
    pub max_dest_rd_atomic: u8,
}

impl Default for QpContext {
    fn default() -> Self {
        Self {
            state: 0,
            sq_drain: false,
            sqd_notify: false,
            init_sq_psn: false,
            init_rq_psn: false,
            path_mtu: 0,
            qp_type: 0,
            access: 0,
            pd: 0,
            dest_qpn: 0,
            sq_psn: 0,
            rq_psn: 0,
            pkey: 0,
            udp_sport: 0,
            dest_ip: Ipv4Addr::UNSPECIFIED,
            dest_mac: [0; 6],
            timeout: 0,
            retry_cnt: 0,
            rnr_retry: 0,
            min_rnr_timer: 0,
            send_cq: 0,
            sq_log_size: 0,
            sq_log_stride: 0,
            sq_base: 0,
            recv_cq: 0,
            rq_log_size: 0,
            rq_log_stride: 0,
            rq_base: 0,
            max_rd_atomic: 0,
            use_srq: false,
            srqn: 0,
            max_dest_rd_atomic: 0,
        }
    }
}

impl QpContext {
    /// Packs the record.
    pub fn pack(&self) -> Record {
        let mut r = [0u8; 64];
        qp_context::STATE.put(&mut r, self.state.into());
        qp_context::INIT_SQ_PSN.put(&mut r, self.init_sq_psn.into());
        qp_context::INIT_RQ_PSN.put(&mut r, self.init_rq_psn.into());
        qp_context::SQ_DRAIN.put(&mut r, self.sq_drain.into());
        qp_context::SQD_NOTIFY.put(&mut r, self.sqd_notify.into());
        qp_context::PATH_MTU.put(&mut r, self.path_mtu.into());
        qp_context::QP_TYPE.put(&mut r, self.qp_type.into());
        qp_context::ACCESS.put(&mut r, self.access.into());
        qp_context::PD.put(&mut r, self.pd.into());
        qp_context::DEST_QPN.put(&mut r, self.dest_qpn.into());
        qp_context::SQ_PSN.put(&mut r, self.sq_psn.into());
        qp_context::RQ_PSN.put(&mut r, self.rq_psn.into());
        qp_context::TIMEOUT.put(&mut r, self.timeout.into());
        qp_context::RETRY_CNT.put(&mut r, self.retry_cnt.into());
        qp_context::RNR_RETRY.put(&mut r, self.rnr_retry.into());
        qp_context::MIN_RNR_TIMER.put(&mut r, self.min_rnr_timer.into());
        qp_context::PKEY.put(&mut r, self.pkey.into());
        qp_context::UDP_SPORT.put(&mut r, self.udp_sport.into());
        qp_context::DEST_IP.put(&mut r, ip_to_u32(self.dest_ip).into());
        qp_context::DEST_MAC.put(&mut r, mac_to_u64(self.dest_mac));
        qp_context::SEND_CQ.put(&mut r, self.send_cq.into());
        qp_context::SQ_LOG_SIZE.put(&mut r, self.sq_log_size.into());
        qp_context::SQ_LOG_STRIDE.put(&mut r, self.sq_log_stride.into());
        qp_context::SQ_BASE.put(&mut r, self.sq_base);
        qp_context::RECV_CQ.put(&mut r, self.recv_cq.into());
        qp_context::RQ_LOG_SIZE.put(&mut r, self.rq_log_size.into());
        qp_context::RQ_LOG_STRIDE.put(&mut r, self.rq_log_stride.into());
        qp_context::RQ_BASE.put(&mut r, self.rq_base);
        qp_context::MAX_RD_ATOMIC.put(&mut r, self.max_rd_atomic.into());
        qp_context::USE_SRQ.put(&mut r, self.use_srq.into());
        qp_context::SRQN.put(&mut r, self.srqn.into());
        qp_context::MAX_DEST_RD_ATOMIC.put(&mut r, self.max_dest_rd_atomic.into());
        r
    }
}

/// A memory-region key-table entry ([`rnic_contract::mr_entry`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MrEntry {
    /// The entry holds a registered region.
    pub valid: bool,
    /// ibv_access_flags, low 4 bits.
    pub access: u8,
    /// Key tag (key bits 7:0).
    pub tag: u8,
    /// Protection domain number.
    pub pd: u32,
    /// The application's virtual address of the first byte.
    pub va: u64,
    /// Length in bytes.
    pub length: u64,
    /// IOVA where the region is mapped.
    pub iova: u64,
}

impl MrEntry {
    /// Packs the record.
    pub fn pack(&self) -> Record {
        let mut r = [0u8; 64];
        mr_entry::VALID.put(&mut r, self.valid.into());
        mr_entry::ACCESS.put(&mut r, self.access.into());
        mr_entry::TAG.put(&mut r, self.tag.into());
        mr_entry::PD.put(&mut r, self.pd.into());
        mr_entry::VA.put(&mut r, self.va);
        mr_entry::LENGTH.put(&mut r, self.length);
        mr_entry::IOVA.put(&mut r, self.iova);
        r
    }
}

/// A CQ context ([`rnic_contract::cq_context`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CqContext {
    /// The CQ exists.
    pub valid: bool,
    /// log2 of the ring size in CQEs.
    pub log_size: u8,
    /// Interrupt vector of its completion events.
    pub vector: u8,
    /// IOVA of the ring.
    pub base: u64,
}

impl CqContext {
    /// Packs the record.
    pub fn pack(&self) -> Record {
        let mut r = [0u8; 64];
        cq_context::VALID.put(&mut r, self.valid.into());
        cq_context::LOG_SIZE.put(&mut r, self.log_size.into());
        cq_context::VECTOR.put(&mut r, self.vector.into());
        cq_context::BASE.put(&mut r, self.base);
        r
    }
}

/// A send WQE ([`rnic_contract::wqe`]), built from an `ibv_send_wr`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Wqe {
    /// Caller's work-request ID.
    pub wr_id: u64,
    /// ibv_wr_opcode.
    pub opcode: u8,
    /// ibv_send_flags.
    pub send_flags: u8,
    /// Number of SGEs (the ones past SGE 0 are written by [`put_sge`]).
    pub num_sge: u8,
    /// Immediate data.
    pub imm_data: u32,
    /// RETH virtual address.
    pub remote_addr: u64,
    /// RETH R_Key.
    pub rkey: u32,
    /// SGE 0 virtual address.
    pub sge_addr: u64,
    /// SGE 0 length (with `IBV_SEND_INLINE`: the inline data's length).
    pub sge_length: u32,
    /// SGE 0 lkey.
    pub sge_lkey: u32,
    /// Atomics: compare (CMP_AND_SWP) or add (FETCH_AND_ADD) operand, AtomicETH Compare Data /
    /// Add Data ([`rnic_contract::wqe::COMPARE_ADD`]).
    pub compare_add: u64,
    /// Atomics: swap operand of CMP_AND_SWP, AtomicETH Swap Data ([`rnic_contract::wqe::SWAP`]).
    pub swap: u64,
}

impl Wqe {
    /// Packs the first 64-byte slot of the WQE.
    pub fn pack(&self) -> [u8; wqe::BYTES] {
        let mut r = [0u8; wqe::BYTES];
        wqe::WR_ID.put(&mut r, self.wr_id);
        wqe::OPCODE.put(&mut r, self.opcode.into());
        wqe::SEND_FLAGS.put(&mut r, self.send_flags.into());
        wqe::NUM_SGE.put(&mut r, self.num_sge.into());
        wqe::IMM_DATA.put(&mut r, self.imm_data.into());
        wqe::REMOTE_ADDR.put(&mut r, self.remote_addr);
        wqe::RKEY.put(&mut r, self.rkey.into());
        wqe::SGE0_ADDR.put(&mut r, self.sge_addr);
        wqe::SGE0_LENGTH.put(&mut r, self.sge_length.into());
        wqe::SGE0_LKEY.put(&mut r, self.sge_lkey.into());
        wqe::COMPARE_ADD.put(&mut r, self.compare_add);
        wqe::SWAP.put(&mut r, self.swap);
        r
    }
}

/// Writes a 16-byte scatter/gather entry (address, length, lkey; little-endian) at byte
/// `offset` of a WQE: [`rnic_contract::wqe::sge_offset`] or
/// [`rnic_contract::recv_wqe::sge_offset`].
///
/// # Panics
/// If `buf` is shorter than `offset + 16` (the caller sizes the WQE for its SGEs).
pub fn put_sge(buf: &mut [u8], offset: usize, addr: u64, length: u32, lkey: u32) {
    buf[offset..offset + 8].copy_from_slice(&addr.to_le_bytes());
    buf[offset + 8..offset + 12].copy_from_slice(&length.to_le_bytes());
    buf[offset + 12..offset + 16].copy_from_slice(&lkey.to_le_bytes());
}

/// A receive WQE ([`rnic_contract::recv_wqe`]), built from an `ibv_recv_wr`: the first 64
/// bytes with scatter entry 0; the others are written by [`put_sge`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecvWqe {
    /// Caller's work-request ID.
    pub wr_id: u64,
    /// Number of scatter entries (0: only zero-length messages fit).
    pub num_sge: u8,
    /// Scatter entry 0: virtual address.
    pub sge_addr: u64,
    /// Scatter entry 0: length in bytes.
    pub sge_length: u32,
    /// Scatter entry 0: lkey.
    pub sge_lkey: u32,
}

impl RecvWqe {
    /// Packs the first 64 bytes of the receive WQE (bytes past scatter entry 0 are zero).
    pub fn pack(&self) -> [u8; recv_wqe::BYTES] {
        let mut r = [0u8; recv_wqe::BYTES];
        recv_wqe::WR_ID.put(&mut r, self.wr_id);
        recv_wqe::NUM_SGE.put(&mut r, self.num_sge.into());
        recv_wqe::SGE0_ADDR.put(&mut r, self.sge_addr);
        recv_wqe::SGE0_LENGTH.put(&mut r, self.sge_length.into());
        recv_wqe::SGE0_LKEY.put(&mut r, self.sge_lkey.into());
        r
    }
}

/// A CQE as the NIC wrote it ([`rnic_contract::cqe`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cqe {
    /// wr_id of the completed WR.
    pub wr_id: u64,
    /// Bytes transferred.
    pub byte_len: u32,
    /// Immediate data.
    pub imm_data: u32,
    /// Local QP number.
    pub qp_num: u32,
    /// ibv_wc_opcode.
    pub opcode: u8,
    /// ibv_wc_status.
    pub status: u8,
    /// ibv_wc_flags.
    pub wc_flags: u8,
    /// UD receives: the sender's QPN ([`cqe::SRC_QP`]).
    pub src_qp: u32,
    /// Owner (phase) bit.
    pub owner: bool,
}

impl Cqe {
    /// Decodes a 32-byte CQE.
    pub fn unpack(b: &[u8; cqe::BYTES]) -> Self {
        Self {
            wr_id: cqe::WR_ID.get(b),
            byte_len: cqe::BYTE_LEN.get(b) as u32,
            imm_data: cqe::IMM_DATA.get(b) as u32,
            qp_num: cqe::QP_NUM.get(b) as u32,
            opcode: cqe::OPCODE.get(b) as u8,
            status: cqe::STATUS.get(b) as u8,
            wc_flags: cqe::WC_FLAGS.get(b) as u8,
            src_qp: cqe::SRC_QP.get(b) as u32,
            owner: cqe::OWNER.get(b) == 1,
        }
    }

    /// Packs a CQE (what the NIC writes; for tests of the driver's polling).
    pub fn pack(&self) -> [u8; cqe::BYTES] {
        let mut r = [0u8; cqe::BYTES];
        cqe::WR_ID.put(&mut r, self.wr_id);
        cqe::BYTE_LEN.put(&mut r, self.byte_len.into());
        cqe::IMM_DATA.put(&mut r, self.imm_data.into());
        cqe::QP_NUM.put(&mut r, self.qp_num.into());
        cqe::OPCODE.put(&mut r, self.opcode.into());
        cqe::STATUS.put(&mut r, self.status.into());
        cqe::WC_FLAGS.put(&mut r, self.wc_flags.into());
        cqe::SRC_QP.put(&mut r, self.src_qp.into());
        cqe::OWNER.put(&mut r, self.owner.into());
        r
    }
}

/// The owner bit the NIC gives its `n`-th CQE (from 0 since WRITE_CQ) in a ring of
/// `2^log_size` entries: `!(n >> log_size) & 1`.
pub fn owner_for(n: u64, log_size: u8) -> bool {
    (n >> log_size) & 1 == 0
}

/// Commits a context record: the 16 staging words `CMD_DATA + 4*i` (word i = bytes 4i..4i+3,
/// little-endian), then `CMD = op << 24 | index`. The CMD write returns after the tables took it.
///
/// # Errors
/// Backend MMIO errors.
pub fn write_context(dev: &dyn Device, op: u32, index: u8, record: &Record) -> Result<()> {
    for i in 0..regs::CMD_DATA_WORDS {
        let word = u32::from_le_bytes([record[4 * i], record[4 * i + 1], record[4 * i + 2], record[4 * i + 3]]);
        dev.mmio_write32(regs::CMD_DATA + 4 * i as u16, word)?;
    }
    dev.mmio_write32(regs::CMD, op << 24 | u32::from(index))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rnic_contract::Field;

    /// Reads a field with an independent bit-by-bit decoder (not `Field::get`), so the test
    /// checks the bytes `pack` produced against the contract's bit positions.
    fn bits(rec: &[u8], f: Field) -> u64 {
        (0..f.width).fold(0u64, |v, i| {
            let bit = f.lsb + i;
            v | (u64::from(rec[bit / 8] >> (bit % 8) & 1) << i)
        })
    }

    #[test]
    fn qp_context_fields_land_on_contract_bits() {
        let c = QpContext {
            state: 3,
            init_sq_psn: true,
            init_rq_psn: false,
            sq_drain: true,
            sqd_notify: false,
            path_mtu: 5,
            qp_type: 1,
            access: 0b1110,
            pd: 0xABCDEF,
            dest_qpn: 0x123456,
            sq_psn: 0xFEDCBA,
            rq_psn: 0x0A0B0C,
            timeout: 17,
            retry_cnt: 6,
            rnr_retry: 5,
            min_rnr_timer: 31,
            pkey: 0xFFFF,
            udp_sport: 0xC123,
            dest_ip: Ipv4Addr::new(192, 0, 2, 7),
            dest_mac: [0x02, 0x11, 0x22, 0x33, 0x44, 0x55],
            send_cq: 9,
            sq_log_size: 6,
            sq_log_stride: 3,
            sq_base: 0x1_2345_6780,
            recv_cq: 11,
            rq_log_size: 15,
            rq_log_stride: 2,
            rq_base: 0x2_0000_1240,
            max_rd_atomic: 16,
            srqn: 0x2A,
            use_srq: true,
            max_dest_rd_atomic: 9,
        };
        let r = c.pack();
        assert_eq!(bits(&r, qp_context::SRQN), 0x2A);
        assert_eq!(bits(&r, qp_context::USE_SRQ), 1);
        assert_eq!(bits(&r, qp_context::MAX_DEST_RD_ATOMIC), 9);
        assert_eq!(r[45], 9, "MAX_DEST_RD_ATOMIC at byte 45");
        assert_eq!(bits(&r, qp_context::STATE), 3);
        assert_eq!(bits(&r, qp_context::INIT_SQ_PSN), 1);
        assert_eq!(bits(&r, qp_context::INIT_RQ_PSN), 0);
        assert_eq!((bits(&r, qp_context::SQ_DRAIN), bits(&r, qp_context::SQD_NOTIFY)), (1, 0));
        assert_eq!(bits(&r, qp_context::QP_TYPE), 1);
        assert_eq!(bits(&r, qp_context::PATH_MTU), 5);
        assert_eq!(bits(&r, qp_context::ACCESS), 0b1110);
        assert_eq!(bits(&r, qp_context::PD), 0xABCDEF);
        assert_eq!(bits(&r, qp_context::DEST_QPN), 0x123456);
        assert_eq!(bits(&r, qp_context::SQ_PSN), 0xFEDCBA);
        assert_eq!(bits(&r, qp_context::RQ_PSN), 0x0A0B0C);
        assert_eq!(bits(&r, qp_context::TIMEOUT), 17);
        assert_eq!(bits(&r, qp_context::RETRY_CNT), 6);
        assert_eq!(bits(&r, qp_context::RNR_RETRY), 5);
        assert_eq!(bits(&r, qp_context::MIN_RNR_TIMER), 31);
        assert_eq!(bits(&r, qp_context::PKEY), 0xFFFF);
        assert_eq!(bits(&r, qp_context::UDP_SPORT), 0xC123);
        // First octet in bits 31:24.
        assert_eq!(bits(&r, qp_context::DEST_IP), 0xC000_0207);
        // Byte 0 of the MAC in bits 7:0: the record holds the address bytes in order.
        assert_eq!(bits(&r, qp_context::DEST_MAC), 0x5544_3322_1102);
        assert_eq!(&r[24..30], &[0x02, 0x11, 0x22, 0x33, 0x44, 0x55]);
        assert_eq!(bits(&r, qp_context::SEND_CQ), 9);
        assert_eq!(bits(&r, qp_context::SQ_LOG_SIZE), 6);
        assert_eq!(bits(&r, qp_context::SQ_BASE), 0x1_2345_6780);
        assert_eq!(bits(&r, qp_context::RECV_CQ), 11);
        assert_eq!(bits(&r, qp_context::MAX_RD_ATOMIC), 16);
        assert_eq!(bits(&r, qp_context::RQ_LOG_SIZE), 15);
        assert_eq!(bits(&r, qp_context::SQ_LOG_STRIDE), 3);
        assert_eq!(bits(&r, qp_context::RQ_LOG_STRIDE), 2);
        assert_eq!(r[31], 6 | 3 << 4, "SQ_LOG_SIZE and SQ_LOG_STRIDE share byte 31");
        assert_eq!(bits(&r, qp_context::RQ_BASE), 0x2_0000_1240);
        assert_eq!(r[40], 11, "RECV_CQ at byte 40");
        assert_eq!(u64::from_le_bytes(r[48..56].try_into().unwrap()), 0x2_0000_1240, "RQ_BASE at byte 48");
        // Byte 0: state 3 | init_sq_psn << 3 | sq_drain << 5.
        assert_eq!(r[0], 0b0010_1011);
    }

    #[test]
    fn mr_entry_fields_land_on_contract_bits() {
        let e = MrEntry {
            valid: true,
            access: 0b0011,
            tag: 0x5A,
            pd: 7,
            va: 0x7fff_0000_1234,
            length: 4097,
            iova: 0x1_0000_3000,
        };
        let r = e.pack();
        assert_eq!(bits(&r, mr_entry::VALID), 1);
        assert_eq!(bits(&r, mr_entry::ACCESS), 3);
        assert_eq!(bits(&r, mr_entry::TAG), 0x5A);
        assert_eq!(bits(&r, mr_entry::PD), 7);
        assert_eq!(bits(&r, mr_entry::VA), 0x7fff_0000_1234);
        assert_eq!(bits(&r, mr_entry::LENGTH), 4097);
        assert_eq!(bits(&r, mr_entry::IOVA), 0x1_0000_3000);
        assert_eq!(r[0], 0x31, "valid in bit 0, access in bits 7:4");
        assert_eq!(r[1], 0x5A, "tag in byte 1");
        // An invalidation is all zero.
        assert_eq!(MrEntry::default().pack(), [0u8; 64]);
    }

    #[test]
    fn cq_context_fields_land_on_contract_bits() {
        let r = CqContext { valid: true, log_size: 7, vector: 21, base: 0x1_0000_8000 }.pack();
        assert_eq!(bits(&r, cq_context::VALID), 1);
        assert_eq!(bits(&r, cq_context::VECTOR), 21);
        assert_eq!(bits(&r, cq_context::LOG_SIZE), 7);
        assert_eq!(bits(&r, cq_context::BASE), 0x1_0000_8000);
        assert_eq!(u64::from_le_bytes(r[8..16].try_into().unwrap()), 0x1_0000_8000);
    }

    #[test]
    fn wqe_fields_land_on_contract_bytes() {
        let w = Wqe {
            wr_id: 0x0102_0304_0506_0708,
            opcode: 0,
            send_flags: 2,
            num_sge: 1,
            imm_data: 0xDEAD_BEEF,
            remote_addr: 0x1111_2222_3333_4444,
            rkey: 0x0000_0305,
            sge_addr: 0x5555_6666_7777_8888,
            sge_length: 65536,
            sge_lkey: 0x0000_0201,
            compare_add: 0,
            swap: 0,
        };
        let r = w.pack();
        assert_eq!(u64::from_le_bytes(r[0..8].try_into().unwrap()), w.wr_id);
        assert_eq!(r[8], 0);
        assert_eq!(r[9], 2);
        assert_eq!(r[10], 1);
        assert_eq!(u32::from_le_bytes(r[12..16].try_into().unwrap()), 0xDEAD_BEEF);
        assert_eq!(u64::from_le_bytes(r[16..24].try_into().unwrap()), w.remote_addr);
        assert_eq!(u32::from_le_bytes(r[24..28].try_into().unwrap()), 0x305);
        assert_eq!(u64::from_le_bytes(r[32..40].try_into().unwrap()), w.sge_addr);
        assert_eq!(u32::from_le_bytes(r[40..44].try_into().unwrap()), 65536);
        assert_eq!(u32::from_le_bytes(r[44..48].try_into().unwrap()), 0x201);
        assert!(r[48..].iter().all(|&b| b == 0));
        assert_eq!(bits(&r, wqe::SGE0_LKEY), 0x201);
        // Atomic operands: AtomicETH Compare/Add Data at byte 48, Swap Data at byte 56.
        let a = Wqe { compare_add: 0x0011_2233_4455_6677, swap: 0x8899_AABB_CCDD_EEFF, ..w }.pack();
        assert_eq!(u64::from_le_bytes(a[48..56].try_into().unwrap()), 0x0011_2233_4455_6677);
        assert_eq!(u64::from_le_bytes(a[56..64].try_into().unwrap()), 0x8899_AABB_CCDD_EEFF);
        assert_eq!((bits(&a, wqe::COMPARE_ADD), bits(&a, wqe::SWAP)), (0x0011_2233_4455_6677, 0x8899_AABB_CCDD_EEFF));
        assert_eq!(a[..48], r[..48], "the operands touch no other field");
    }

    #[test]
    fn recv_wqe_fields_land_on_contract_bytes() {
        let w = RecvWqe {
            wr_id: 0x1122_3344_5566_7788,
            num_sge: 1,
            sge_addr: 0x7f00_0000_0abc,
            sge_length: 100_000,
            sge_lkey: 0x0305,
        };
        let r = w.pack();
        assert_eq!(u64::from_le_bytes(r[0..8].try_into().unwrap()), w.wr_id);
        assert_eq!(r[8], 1, "NUM_SGE at byte 8");
        assert_eq!(recv_wqe::sge_offset(0), 16);
        assert_eq!(u64::from_le_bytes(r[16..24].try_into().unwrap()), w.sge_addr);
        assert_eq!(u32::from_le_bytes(r[24..28].try_into().unwrap()), 100_000);
        assert_eq!(u32::from_le_bytes(r[28..32].try_into().unwrap()), 0x0305);
        assert!(r[9..16].iter().all(|&b| b == 0));
        assert!(r[32..].iter().all(|&b| b == 0), "scatter entries 1 and 2 stay empty");
        assert_eq!(bits(&r, recv_wqe::SGE0_LKEY), 0x0305);
    }

    #[test]
    fn extra_sges_land_on_contract_bytes() {
        // Send WQE: SGE 1 opens the second slot; receive WQE: entry 3 opens the second slot.
        let mut w = [0u8; 128];
        put_sge(&mut w, wqe::sge_offset(1), 0x1122_3344_5566_7788, 0x99AA_BBCC, 0xDDEE_FF00);
        assert_eq!(wqe::sge_offset(1), 64);
        assert_eq!(u64::from_le_bytes(w[64..72].try_into().unwrap()), 0x1122_3344_5566_7788);
        assert_eq!(u32::from_le_bytes(w[72..76].try_into().unwrap()), 0x99AA_BBCC);
        assert_eq!(u32::from_le_bytes(w[76..80].try_into().unwrap()), 0xDDEE_FF00);
        assert!(w[..64].iter().chain(&w[80..]).all(|&b| b == 0));
        assert_eq!((wqe::sge_offset(2), wqe::sge_offset(15)), (80, 288));
        assert_eq!((recv_wqe::sge_offset(3), recv_wqe::sge_offset(14)), (64, 240));
    }

    #[test]
    fn cqe_round_trip_and_byte_positions() {
        let c = Cqe {
            wr_id: 77,
            byte_len: 4096,
            imm_data: 5,
            qp_num: 0x000042,
            opcode: 1,
            status: 4,
            wc_flags: 2,
            src_qp: 0x12_3456,
            owner: true,
        };
        let b = c.pack();
        assert_eq!(Cqe::unpack(&b), c);
        assert_eq!(b[16], 0x42);
        assert_eq!(b[19], 1, "opcode at byte 19");
        assert_eq!(b[20], 4, "status at byte 20");
        assert_eq!(b[21], 2, "wc_flags at byte 21");
        assert_eq!(&b[24..27], &[0x56, 0x34, 0x12], "src_qp at bytes 24..27, little-endian");
        assert_eq!(b[31] & 1, 1, "owner in byte 31 bit 0");
    }

    #[test]
    fn owner_bit_flips_every_lap() {
        // Ring of 4: CQEs 0..3 have owner 1, 4..7 owner 0, 8..11 owner 1.
        assert!(owner_for(0, 2));
        assert!(owner_for(3, 2));
        assert!(!owner_for(4, 2));
        assert!(!owner_for(7, 2));
        assert!(owner_for(8, 2));
    }

    #[test]
    fn mac_and_ip_encodings() {
        assert_eq!(mac_to_u64([1, 2, 3, 4, 5, 6]), 0x0605_0403_0201);
        assert_eq!(ip_to_u32(Ipv4Addr::new(10, 20, 30, 40)), 0x0A14_1E28);
    }
}
