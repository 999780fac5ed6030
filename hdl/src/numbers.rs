//! The contract's numbers as one rust-hdl constant, so RTL compares and writes them by name.
//!
//! `#[hdl_gen]` code cannot name a Rust constant, so a block that compares a command opcode or
//! writes a work-completion status holds a [`Numbers`] field and reads
//! `self.nums.val().wc_loc_len_err`. In Verilog that is a part-select of one `localparam`, which
//! Verilator and yosys fold to the literal: no logic, no LUT level. Every value is taken from
//! [`rnic_contract`] in [`ContractNumbers::contract`], never written here twice.
//!
//! Match arms on an opcode stay literal (a `match` pattern must be one), each with a
//! compile-time assertion beside it that ties the literal to the contract.
use rnic_contract::bth::{opcode as op, syndrome as syn, ud_opcode as ud_op};
use rnic_contract::regs::cmd_op;
use rnic_contract::verbs::{
    access as acc, event_type as ev, qp_state as qps, send_flags as sf, wc_opcode as wco, wc_status as wc,
    wr_opcode as wr,
};
use rnic_contract::wqe;
use rust_hdl::prelude::*;

/// The numbers the RTL uses, by contract module: `cmd_*` ([`rnic_contract::regs::cmd_op`]),
/// `qps_*` ([`rnic_contract::verbs::qp_state`]), `wc_*` (`enum ibv_wc_status`), `wco_*`
/// (`enum ibv_wc_opcode`), `wr_*` (`enum ibv_wr_opcode`), `sf_*` (`enum ibv_send_flags`),
/// `acc_*` (`enum ibv_access_flags`, as a key-table entry and a QP context hold them, 4 bits),
/// `ev_*` (`enum ibv_event_type`),
/// `op_*` (BTH opcodes, IBTA Vol 1 9.2 Table 37), `syn_*` and `nak_*` (AETH syndromes and NAK
/// codes, IBTA Vol 1 9.7.5.1), `wqe_*` (SGEs and inline bytes per SQ_LOG_STRIDE,
/// [`rnic_contract::wqe`]), `max_msg_sz` (bytes), and the RoCEv2 UDP port (Annex A17.2.1) in
/// the byte order of a header record.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct ContractNumbers {
    pub cmd_write_qp: Bits<8>,
    pub cmd_write_mr: Bits<8>,
    pub cmd_write_cq: Bits<8>,
    pub cmd_write_srq: Bits<8>,
    pub qps_reset: Bits<3>,
    pub qps_rts: Bits<3>,
    pub qps_err: Bits<3>,
    pub wc_success: Bits<8>,
    pub wc_loc_len_err: Bits<8>,
    pub wc_loc_qp_op_err: Bits<8>,
    pub wc_loc_prot_err: Bits<8>,
    pub wc_wr_flush_err: Bits<8>,
    pub wc_bad_resp_err: Bits<8>,
    pub wc_retry_exc_err: Bits<8>,
    pub wc_rnr_retry_exc_err: Bits<8>,
    /// `IBV_WC_REM_INV_REQ_ERR − 1`: a NAK's code (1 invalid request, 2 remote access,
    /// 3 remote operational) plus this is its status (the three are consecutive).
    pub wc_rem_nak_base: Bits<8>,
    pub wco_send: Bits<8>,
    pub wco_rdma_write: Bits<8>,
    pub wco_rdma_read: Bits<8>,
    pub wco_comp_swap: Bits<8>,
    pub wco_fetch_add: Bits<8>,
    pub wco_recv: Bits<8>,
    pub wco_recv_rdma_with_imm: Bits<8>,
    pub wco_async_event: Bits<8>,
    pub wr_rdma_write: Bits<8>,
    pub wr_rdma_write_with_imm: Bits<8>,
    pub wr_send: Bits<8>,
    pub wr_send_with_imm: Bits<8>,
    pub wr_rdma_read: Bits<8>,
    pub wr_atomic_cmp_and_swp: Bits<8>,
    pub wr_atomic_fetch_and_add: Bits<8>,
    pub sf_fence: Bits<8>,
    pub sf_signaled: Bits<8>,
    pub sf_solicited: Bits<8>,
    pub sf_inline: Bits<8>,
    pub acc_local_write: Bits<4>,
    pub acc_remote_write: Bits<4>,
    pub acc_remote_read: Bits<4>,
    pub acc_remote_atomic: Bits<4>,
    pub ev_qp_fatal: Bits<5>,
    pub ev_qp_req_err: Bits<5>,
    pub ev_qp_access_err: Bits<5>,
    pub ev_comm_est: Bits<5>,
    pub ev_sq_drained: Bits<5>,
    pub ev_srq_limit_reached: Bits<5>,
    pub ev_qp_last_wqe_reached: Bits<5>,
    pub op_send_first: Bits<8>,
    pub op_send_middle: Bits<8>,
    pub op_send_last: Bits<8>,
    pub op_send_only: Bits<8>,
    pub op_rdma_write_first: Bits<8>,
    pub op_rdma_write_middle: Bits<8>,
    pub op_rdma_write_last: Bits<8>,
    pub op_rdma_write_only: Bits<8>,
    pub op_rdma_write_only_with_immediate: Bits<8>,
    pub op_rdma_read_request: Bits<8>,
    pub op_rdma_read_response_first: Bits<8>,
    pub op_rdma_read_response_middle: Bits<8>,
    pub op_rdma_read_response_last: Bits<8>,
    pub op_rdma_read_response_only: Bits<8>,
    pub op_acknowledge: Bits<8>,
    pub op_atomic_acknowledge: Bits<8>,
    pub op_compare_swap: Bits<8>,
    pub op_fetch_add: Bits<8>,
    pub op_ud_send_only: Bits<8>,
    pub op_ud_send_only_with_immediate: Bits<8>,
    pub syn_ack: Bits<8>,
    pub syn_nak_psn_seq_err: Bits<8>,
    pub syn_nak_inv_req: Bits<8>,
    pub syn_nak_rem_access: Bits<8>,
    pub syn_nak_rem_op: Bits<8>,
    /// An RNR NAK's syndrome with timer code 0 (its code is OR-ed in).
    pub syn_rnr_nak: Bits<8>,
    /// A NAK's code (AETH syndrome bits 4:0, IBTA Vol 1 Table 44).
    pub nak_psn_seq_err: Bits<5>,
    pub nak_inv_req: Bits<5>,
    pub nak_rem_access: Bits<5>,
    pub nak_rem_op: Bits<5>,
    /// AETH syndrome bits 7:5 of an ACK, a NAK and an RNR NAK.
    pub syn_type_ack: Bits<3>,
    pub syn_type_nak: Bits<3>,
    pub syn_type_rnr: Bits<3>,
    /// UDP destination port 4791 as a header record holds it (network byte order, byte 0 in
    /// bits 7:0): 0xB712.
    pub udp_dport_roce: Bits<16>,
    /// SGEs a send WQE of SQ_LOG_STRIDE 1, 2, 3 holds (stride 0: one), and inline bytes
    /// ([`rnic_contract::wqe`]'s layout).
    pub wqe_sges_1: Bits<8>,
    pub wqe_sges_2: Bits<8>,
    pub wqe_sges_3: Bits<8>,
    pub wqe_inline_1: Bits<32>,
    pub wqe_inline_2: Bits<32>,
    pub wqe_inline_3: Bits<32>,
    /// The largest message ([`rnic_contract::MAX_MSG_SZ`], bytes).
    pub max_msg_sz: Bits<32>,
}

// What the RTL derives from the numbers' order: a WQE opcode is implemented if it is at most
// ATOMIC_FETCH_AND_ADD (the seven are 0..=6), an RDMA WRITE (with or without immediate) if at
// most RDMA_WRITE_WITH_IMM; a NAK's status is its code plus `wc_rem_nak_base`.
const _: () = assert!(
    wr::RDMA_WRITE == 0
        && wr::RDMA_WRITE_WITH_IMM == 1
        && wr::SEND == 2
        && wr::SEND_WITH_IMM == 3
        && wr::RDMA_READ == 4
        && wr::ATOMIC_CMP_AND_SWP == 5
        && wr::ATOMIC_FETCH_AND_ADD == 6
        && wc::REM_ACCESS_ERR == wc::REM_INV_REQ_ERR + 1
        && wc::REM_OP_ERR == wc::REM_INV_REQ_ERR + 2
        && syn::NAK_INV_REQ == syn::NAK + 1
        && syn::NAK_REM_ACCESS == syn::NAK + 2
        && syn::NAK_REM_OP == syn::NAK + 3
);

/// The BTH opcodes are the literals RTL `match` tables name them by (IBTA Vol 1 9.2, Table
/// 37): asserted beside each such table.
pub const BTH_OPCODE_LITERALS: bool = op::SEND_FIRST == 0x00
    && op::SEND_MIDDLE == 0x01
    && op::SEND_LAST == 0x02
    && op::SEND_LAST_WITH_IMMEDIATE == 0x03
    && op::SEND_ONLY == 0x04
    && op::SEND_ONLY_WITH_IMMEDIATE == 0x05
    && op::RDMA_WRITE_FIRST == 0x06
    && op::RDMA_WRITE_MIDDLE == 0x07
    && op::RDMA_WRITE_LAST == 0x08
    && op::RDMA_WRITE_LAST_WITH_IMMEDIATE == 0x09
    && op::RDMA_WRITE_ONLY == 0x0A
    && op::RDMA_WRITE_ONLY_WITH_IMMEDIATE == 0x0B
    && op::RDMA_READ_REQUEST == 0x0C
    && op::RDMA_READ_RESPONSE_FIRST == 0x0D
    && op::RDMA_READ_RESPONSE_MIDDLE == 0x0E
    && op::RDMA_READ_RESPONSE_LAST == 0x0F
    && op::RDMA_READ_RESPONSE_ONLY == 0x10
    && op::ACKNOWLEDGE == 0x11
    && op::ATOMIC_ACKNOWLEDGE == 0x12
    && op::COMPARE_SWAP == 0x13
    && op::FETCH_ADD == 0x14
    && ud_op::SEND_ONLY == 0x64
    && ud_op::SEND_ONLY_WITH_IMMEDIATE == 0x65;

impl ContractNumbers {
    /// Every field from [`rnic_contract`].
    pub fn contract() -> Self {
        fn b<const N: usize>(x: impl Into<u64>) -> Bits<N> {
            x.into().into()
        }
        Self {
            cmd_write_qp: b(cmd_op::WRITE_QP),
            cmd_write_mr: b(cmd_op::WRITE_MR),
            cmd_write_cq: b(cmd_op::WRITE_CQ),
            cmd_write_srq: b(cmd_op::WRITE_SRQ),
            qps_reset: b(qps::RESET),
            qps_rts: b(qps::RTS),
            qps_err: b(qps::ERR),
            wc_success: b(wc::SUCCESS),
            wc_loc_len_err: b(wc::LOC_LEN_ERR),
            wc_loc_qp_op_err: b(wc::LOC_QP_OP_ERR),
            wc_loc_prot_err: b(wc::LOC_PROT_ERR),
            wc_wr_flush_err: b(wc::WR_FLUSH_ERR),
            wc_bad_resp_err: b(wc::BAD_RESP_ERR),
            wc_retry_exc_err: b(wc::RETRY_EXC_ERR),
            wc_rnr_retry_exc_err: b(wc::RNR_RETRY_EXC_ERR),
            wc_rem_nak_base: b(wc::REM_INV_REQ_ERR - 1),
            wco_send: b(wco::SEND),
            wco_rdma_write: b(wco::RDMA_WRITE),
            wco_rdma_read: b(wco::RDMA_READ),
            wco_comp_swap: b(wco::COMP_SWAP),
            wco_fetch_add: b(wco::FETCH_ADD),
            wco_recv: b(wco::RECV),
            wco_recv_rdma_with_imm: b(wco::RECV_RDMA_WITH_IMM),
            wco_async_event: b(wco::ASYNC_EVENT),
            wr_rdma_write: b(wr::RDMA_WRITE),
            wr_rdma_write_with_imm: b(wr::RDMA_WRITE_WITH_IMM),
            wr_send: b(wr::SEND),
            wr_send_with_imm: b(wr::SEND_WITH_IMM),
            wr_rdma_read: b(wr::RDMA_READ),
            wr_atomic_cmp_and_swp: b(wr::ATOMIC_CMP_AND_SWP),
            wr_atomic_fetch_and_add: b(wr::ATOMIC_FETCH_AND_ADD),
            sf_fence: b(sf::FENCE),
            sf_signaled: b(sf::SIGNALED),
            sf_solicited: b(sf::SOLICITED),
            sf_inline: b(sf::INLINE),
            acc_local_write: b(acc::LOCAL_WRITE),
            acc_remote_write: b(acc::REMOTE_WRITE),
            acc_remote_read: b(acc::REMOTE_READ),
            acc_remote_atomic: b(acc::REMOTE_ATOMIC),
            ev_qp_fatal: b(ev::QP_FATAL),
            ev_qp_req_err: b(ev::QP_REQ_ERR),
            ev_qp_access_err: b(ev::QP_ACCESS_ERR),
            ev_comm_est: b(ev::COMM_EST),
            ev_sq_drained: b(ev::SQ_DRAINED),
            ev_srq_limit_reached: b(ev::SRQ_LIMIT_REACHED),
            ev_qp_last_wqe_reached: b(ev::QP_LAST_WQE_REACHED),
            op_send_first: b(op::SEND_FIRST),
            op_send_middle: b(op::SEND_MIDDLE),
            op_send_last: b(op::SEND_LAST),
            op_send_only: b(op::SEND_ONLY),
            op_rdma_write_first: b(op::RDMA_WRITE_FIRST),
            op_rdma_write_middle: b(op::RDMA_WRITE_MIDDLE),
            op_rdma_write_last: b(op::RDMA_WRITE_LAST),
            op_rdma_write_only: b(op::RDMA_WRITE_ONLY),
            op_rdma_write_only_with_immediate: b(op::RDMA_WRITE_ONLY_WITH_IMMEDIATE),
            op_rdma_read_request: b(op::RDMA_READ_REQUEST),
            op_rdma_read_response_first: b(op::RDMA_READ_RESPONSE_FIRST),
            op_rdma_read_response_middle: b(op::RDMA_READ_RESPONSE_MIDDLE),
            op_rdma_read_response_last: b(op::RDMA_READ_RESPONSE_LAST),
            op_rdma_read_response_only: b(op::RDMA_READ_RESPONSE_ONLY),
            op_acknowledge: b(op::ACKNOWLEDGE),
            op_atomic_acknowledge: b(op::ATOMIC_ACKNOWLEDGE),
            op_compare_swap: b(op::COMPARE_SWAP),
            op_fetch_add: b(op::FETCH_ADD),
            op_ud_send_only: b(ud_op::SEND_ONLY),
            op_ud_send_only_with_immediate: b(ud_op::SEND_ONLY_WITH_IMMEDIATE),
            syn_ack: b(syn::ACK),
            syn_nak_psn_seq_err: b(syn::NAK_PSN_SEQ_ERR),
            syn_nak_inv_req: b(syn::NAK_INV_REQ),
            syn_nak_rem_access: b(syn::NAK_REM_ACCESS),
            syn_nak_rem_op: b(syn::NAK_REM_OP),
            syn_rnr_nak: b(syn::RNR_NAK),
            nak_psn_seq_err: b(syn::NAK_PSN_SEQ_ERR & 0x1F),
            nak_inv_req: b(syn::NAK_INV_REQ & 0x1F),
            nak_rem_access: b(syn::NAK_REM_ACCESS & 0x1F),
            nak_rem_op: b(syn::NAK_REM_OP & 0x1F),
            syn_type_ack: b(syn::ACK >> 5),
            syn_type_nak: b(syn::NAK >> 5),
            syn_type_rnr: b(syn::RNR_NAK >> 5),
            udp_dport_roce: b(rnic_contract::ROCEV2_UDP_PORT.swap_bytes()),
            wqe_sges_1: b(sges_in(1)),
            wqe_sges_2: b(sges_in(2)),
            wqe_sges_3: b(sges_in(3)),
            wqe_inline_1: b((wqe::stride(1) - wqe::INLINE_DATA) as u64),
            wqe_inline_2: b((wqe::stride(2) - wqe::INLINE_DATA) as u64),
            wqe_inline_3: b((wqe::stride(3) - wqe::INLINE_DATA) as u64),
            max_msg_sz: b(rnic_contract::MAX_MSG_SZ),
        }
    }
}

/// SGEs a send WQE of SQ_LOG_STRIDE `log` holds: SGE `n` fits if it ends inside the WQE
/// ([`wqe::sge_offset`]), at most [`wqe::MAX_SGE`].
const fn sges_in(log: usize) -> u64 {
    let mut n = 1;
    while n < wqe::MAX_SGE && wqe::sge_offset(n) + 16 <= wqe::stride(log) {
        n += 1;
    }
    n as u64
}

/// [`ContractNumbers::contract`] as a block's constant: a field `nums: Numbers` is emitted as one
/// `localparam nums` of the enclosing module, and `self.nums.val().<field>` reads a number in
/// `#[hdl_gen]` code. Unlike rust-hdl's `Constant`, it has a `Default` (the contract's
/// values), so blocks that derive `Default` can hold one.
#[derive(Clone, Debug)]
pub struct Numbers(Constant<ContractNumbers>);

impl Default for Numbers {
    fn default() -> Self {
        Self(Constant::new(ContractNumbers::contract()))
    }
}

impl Numbers {
    /// The numbers (in `#[hdl_gen]` code: the `localparam`).
    pub fn val(&self) -> ContractNumbers {
        self.0.val()
    }
}

impl Logic for Numbers {
    fn update(&mut self) {}

    fn connect(&mut self) {}
}

impl Block for Numbers {
    fn connect_all(&mut self) {}

    fn update_all(&mut self) {}

    fn has_changed(&self) -> bool {
        false
    }

    fn accept(&self, name: &str, probe: &mut dyn Probe) {
        self.0.accept(name, probe);
    }
}

/// The all-zero value of a record (or `Bits<N>`) as a block's constant: like [`Numbers`], a
/// field `z: Zero<T>` is emitted as one `localparam z` of the enclosing module and read as
/// `self.z.val()` in `#[hdl_gen]` code (to clear a record in one assignment). Unlike rust-hdl's
/// `Constant`, it has a `Default`, so blocks that hold one can derive `Default`.
#[derive(Clone, Debug)]
pub struct Zero<T: Synth>(Constant<T>);

impl<T: Synth + Default> Default for Zero<T> {
    fn default() -> Self {
        Self(Constant::new(T::default()))
    }
}

impl<T: Synth> Zero<T> {
    /// The all-zero value (in `#[hdl_gen]` code: the `localparam`).
    pub fn val(&self) -> T {
        self.0.val()
    }
}

impl<T: Synth> Logic for Zero<T> {
    fn update(&mut self) {}

    fn connect(&mut self) {}
}

impl<T: Synth> Block for Zero<T> {
    fn connect_all(&mut self) {}

    fn update_all(&mut self) {}

    fn has_changed(&self) -> bool {
        false
    }

    fn accept(&self, name: &str, probe: &mut dyn Probe) {
        self.0.accept(name, probe);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_the_contracts() {
        let k = Numbers::default().val();
        assert_eq!(k.cmd_write_qp, u64::from(cmd_op::WRITE_QP));
        assert_eq!(k.wc_rem_nak_base + 1, u64::from(wc::REM_INV_REQ_ERR));
        assert_eq!(k.wc_rem_nak_base + 3, u64::from(wc::REM_OP_ERR));
        assert_eq!(k.op_rdma_read_response_only, 0x10);
        assert_eq!(k.syn_type_nak, 3);
        assert_eq!(k.syn_type_rnr, 1);
        // Byte 0 of the port on the wire is 0x12 (4791 = 0x12B7), bits 7:0 of the record.
        assert_eq!(k.udp_dport_roce, 0xB712);
        // The SQ_LOG_STRIDE table of `docs/contract.md`: 1, 5, 13, 16 SGEs; 0, 64, 192, 448
        // inline bytes.
        assert_eq!((sges_in(0), sges_in(1), sges_in(2), sges_in(3)), (1, 5, 13, 16));
        assert_eq!(k.wqe_inline_1, 64u64);
        assert_eq!(k.wqe_inline_2, 192u64);
        assert_eq!(k.wqe_inline_3, 448u64);
    }
}
