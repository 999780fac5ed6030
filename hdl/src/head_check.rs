//! The requester's head check: the local checks of the send WQE at the prefetch buffer's head,
//! run while the WQE before it is acted on, recorded and issued, so that the scheduler
//! ([`crate::tx_scheduler::TxScheduler`]) takes the head WQE with its verdicts instead of
//! checking it state by state (IBTA Vol 1 10.6.3: the lkey, the region's bounds and its
//! translation; stop 31, inline WRITEs since stop 33).
//!
//! Split out of the scheduler in stop 34 (issue 13, part 1): the same registers and logic,
//! cycle for cycle; its own testbench is `hdl/tests/head_check_tb.rs`.
use crate::numbers::Numbers;
use crate::records::{KeyRec, MrEntryRec, WqeRec};
use rust_hdl::prelude::*;

/// The [`HeadCheck`] block's step. Each step registers the same values as its state in the
/// scheduler's own check (`Key` is `CheckLkey`, `Room` is `CheckRoom`; the scheduler's
/// `NextWqe` does `CheckBounds`' compare, from `bounds`), so the scheduler's `ActOnChecks`
/// acts on the same flags either way.
#[derive(Copy, Clone, Debug, PartialEq, LogicState)]
pub enum HeadStep {
    /// Nothing checked; on `start` an eligible WQE at the head is taken: its SGE's address,
    /// length and lkey into registers, its key-table entry addressed.
    Idle,
    /// The entry is readable if the scheduler is in `RecordWqe` (`key_slot`: a state that
    /// reads no entry of its own, and the entry stays addressed): the offset into the region,
    /// the VA and key verdicts, the packet count's halves; otherwise the check is given up.
    Key,
    /// The room in the region past the offset, the translated address, the packet count.
    Room,
    /// The verdicts wait for the scheduler.
    Ready,
}

/// Checks the WQE at the prefetch buffer's head ahead of the scheduler.
///
/// **Eligible WQEs** (RC QP only, `ud` low): a one-slot (`one_slot`: 64-byte SQ stride) RDMA
/// WRITE, with or without immediate, or RDMA READ (stop 39; `is_read`: its region must also
/// grant LOCAL_WRITE, as in the scheduler's `CheckLkey`), of one SGE, neither inline nor
/// fenced; or an inline RDMA WRITE of two or more slots (its length, SGE 0's length field, checked against 256 bytes and
/// `inline_max`, the bytes its WQE holds; no key). A SEND is not: its window check needs the
/// in-flight count of the WQE before it, which the scheduler has only later.
///
/// **Ports.** `beat` / `beat_ok`: the buffer's head beat (a WQE's slot 0 when the scheduler
/// is between WQEs). `start`: the scheduler is in `ActOnChecks` (the WQE before the head one
/// is being acted on). `key_slot`: the scheduler is in `RecordWqe`. `kill`: the buffer's head
/// moves (a pop or a discard), a context command (it may rewrite the key table or the QP's
/// context) or a QP load: the check is given up. `mr_read` / `mr_index`: the key-table entry
/// to address this cycle (when `mr_read`); `mr` is that table's read data a cycle later. `pd`,
/// `path_mtu` (the IBTA code, 1..=5 for 256..4096 bytes) and `inline_max` (bytes) are the
/// served QP's. The verdicts, valid while `ready`: `is_inline` (an inline WRITE; `inline` is
/// a C++ keyword, which Verilator refuses as a port name) and `inline_ok` (its length fits: at
/// most 256 bytes and `inline_max`, 0 included: the scheduler tests `len != 0` itself); the
/// SGE's `len` (bytes), `len_m1`, `len_big` (over [`rnic_contract::MAX_MSG_SZ`]: the WQE
/// completes with IBV_WC_LOC_LEN_ERR); `off` (bytes into the region), `va_ok`, `key_ok`,
/// `off_ok`, `room` (bytes past the offset), `base` (the translated address), `bounds` (all three and the length within the room), `nq` and `npart` (whole
/// MTUs and a partial one), `npkts` (packets, 1 for an empty message).
///
/// Latency: 3 cycles (`start` → `Ready` as the scheduler issues the WQE before's first
/// packet), so a stream of one-packet WRITEs takes 4 cycles per WQE in the scheduler instead
/// of 7. ≤ 6 LUT levels (one compare or subtraction per step).
#[derive(LogicBlock, Default)]
pub struct HeadCheck {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub beat: Signal<In, Bits<512>>,
    pub beat_ok: Signal<In, Bit>,
    pub one_slot: Signal<In, Bit>,
    pub ud: Signal<In, Bit>,
    pub start: Signal<In, Bit>,
    pub key_slot: Signal<In, Bit>,
    pub kill: Signal<In, Bit>,
    pub mr_read: Signal<Out, Bit>,
    pub mr_index: Signal<Out, Bits<6>>,
    pub mr: Signal<In, MrEntryRec>,
    pub pd: Signal<In, Bits<24>>,
    pub path_mtu: Signal<In, Bits<3>>,
    pub inline_max: Signal<In, Bits<32>>,
    pub ready: Signal<Out, Bit>,
    pub is_inline: Signal<Out, Bit>,
    pub is_read: Signal<Out, Bit>,
    pub inline_ok: Signal<Out, Bit>,
    pub len: Signal<Out, Bits<32>>,
    pub len_m1: Signal<Out, Bits<32>>,
    pub len_big: Signal<Out, Bit>,
    pub off: Signal<Out, Bits<64>>,
    pub va_ok: Signal<Out, Bit>,
    pub key_ok: Signal<Out, Bit>,
    pub off_ok: Signal<Out, Bit>,
    pub room: Signal<Out, Bits<64>>,
    pub base: Signal<Out, Bits<64>>,
    pub bounds: Signal<Out, Bit>,
    pub nq: Signal<Out, Bits<24>>,
    pub npart: Signal<Out, Bit>,
    pub npkts: Signal<Out, Bits<24>>,
    /// The step ([`HeadStep`]) and what it registered: SGE 0's address, lkey and length
    /// (bytes); then the offset into the region, the VA and key verdicts, the packet count's
    /// halves (`len >> log2(MTU)`, a remainder); then the room past the offset (bytes), the
    /// offset verdict, the translated address and the packet count.
    hc: DFF<HeadStep>,
    hc_addr: DFF<Bits<64>>,
    hc_lkey: DFF<KeyRec>,
    hc_len: DFF<Bits<32>>,
    hc_off: DFF<Bits<64>>,
    hc_va_ok: DFF<Bit>,
    hc_key_ok: DFF<Bit>,
    hc_nq: DFF<Bits<24>>,
    hc_npart: DFF<Bit>,
    hc_room: DFF<Bits<64>>,
    hc_off_ok: DFF<Bit>,
    hc_base: DFF<Bits<64>>,
    hc_npkts: DFF<Bits<24>>,
    /// The checked WQE is an inline RDMA WRITE (two or more slots); its length fits the fast
    /// path (at most 256 bytes and what the WQE holds).
    hc_inl: DFF<Bit>,
    hc_inl_ok: DFF<Bit>,
    /// The checked WQE is an RDMA READ (stop 39).
    hc_read: DFF<Bit>,
    /// The head beat as a WQE record, and whether it qualifies.
    hc_w: Signal<Local, WqeRec>,
    hc_elig: Signal<Local, Bit>,
    /// The head beat's opcode is an RDMA WRITE (with or without immediate), an RDMA READ.
    w_write: Signal<Local, Bit>,
    w_read: Signal<Local, Bit>,
    /// IBV_SEND_FENCE | IBV_SEND_INLINE.
    fence_inl: Signal<Local, Bits<8>>,
    /// SGE 0's lkey in the head beat, by field ([`rnic_contract::mr_entry::key`]).
    beat_lkey: Signal<Local, KeyRec>,
    /// `MTU − 1`, its low 12 bits (a shifted constant, formed here so that the compare after
    /// it maps with it: from the scheduler it cost a LUT level more).
    mtu_mask: Signal<Local, Bits<32>>,
    mtu_mask12: Signal<Local, Bits<12>>,
    /// The contract's numbers ([`crate::numbers`]).
    nums: Numbers,
}

impl Logic for HeadCheck {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, hc, hc_addr, hc_lkey, hc_len, hc_off, hc_va_ok, hc_key_ok, hc_nq, hc_npart, hc_room,
            hc_off_ok, hc_base, hc_npkts, hc_inl, hc_inl_ok, hc_read
        );
        self.hc_w.next = self.beat.val().into();
        self.beat_lkey.next = self.hc_w.val().sge0_lkey.into();
        // A one-slot RDMA WRITE or RDMA READ of one SGE (READs since stop 39), or an inline
        // WRITE of two or more slots (stop 33). (RDMA_WRITE and RDMA_WRITE_WITH_IMM are the
        // two lowest WQE opcodes: `numbers`.)
        self.fence_inl.next = self.nums.val().sf_fence | self.nums.val().sf_inline;
        self.w_write.next = self.hc_w.val().opcode <= self.nums.val().wr_rdma_write_with_imm;
        self.w_read.next = self.hc_w.val().opcode == self.nums.val().wr_rdma_read;
        self.hc_elig.next = ((((self.w_write.val() | self.w_read.val()) & (self.hc_w.val().num_sge == 1))
            & ((self.hc_w.val().send_flags & self.fence_inl.val()) == 0)
            & self.one_slot.val())
            | (self.w_write.val()
                & ((self.hc_w.val().send_flags & self.fence_inl.val()) == self.nums.val().sf_inline)
                & !self.one_slot.val()))
            & !self.ud.val();
        self.mtu_mask.next = !(bit_cast::<32, 12>(0xFFF.into()) << (bit_cast::<32, 3>(self.path_mtu.val()) + 7));
        self.mtu_mask12.next = self.mtu_mask.val().get_bits::<12>(0);
        self.mr_read.next = false;
        self.mr_index.next = self.hc_lkey.q.val().index;
        match self.hc.q.val() {
            HeadStep::Idle => {
                if self.start.val() & self.beat_ok.val() & self.hc_elig.val() {
                    self.mr_read.next = true;
                    self.mr_index.next = self.beat_lkey.val().index;
                    self.hc_addr.d.next = self.hc_w.val().sge0_addr;
                    self.hc_lkey.d.next = self.beat_lkey.val();
                    self.hc_len.d.next = self.hc_w.val().sge0_length;
                    self.hc_inl.d.next = (self.hc_w.val().send_flags & self.nums.val().sf_inline) != 0;
                    self.hc_read.d.next = self.w_read.val();
                    self.hc.d.next = HeadStep::Key;
                }
            }
            HeadStep::Key => {
                // As `CheckLkey`: a READ's local buffer is written by the NIC, so its region must
                // grant LOCAL_WRITE.
                self.hc.d.next = HeadStep::Idle;
                if self.key_slot.val() {
                    self.mr_read.next = true;
                    self.hc_off.d.next = self.hc_addr.q.val() - self.mr.val().va;
                    self.hc_va_ok.d.next = self.hc_addr.q.val() >= self.mr.val().va;
                    self.hc_key_ok.d.next = self.mr.val().valid.any()
                        & (self.mr.val().tag == self.hc_lkey.q.val().tag)
                        & (self.hc_lkey.q.val().above == 0)
                        & (self.mr.val().pd == self.pd.val())
                        & (!self.hc_read.q.val() | ((self.mr.val().access & self.nums.val().acc_local_write) != 0));
                    self.hc_nq.d.next =
                        bit_cast::<24, 32>(self.hc_len.q.val() >> (bit_cast::<32, 3>(self.path_mtu.val()) + 7));
                    self.hc_npart.d.next = (self.hc_len.q.val().get_bits::<12>(0) & self.mtu_mask12.val()) != 0;
                    // Inline: its length (SGE 0's field) against what goes from the WQE.
                    self.hc_inl_ok.d.next = (self.hc_len.q.val() <= 256)
                        & (self.hc_len.q.val() <= self.inline_max.val())
                        & (self.path_mtu.val() != 0);
                    self.hc.d.next = HeadStep::Room;
                }
            }
            HeadStep::Room => {
                // As `CheckRoom` (an inline WRITE's values here go unused).
                self.hc_off_ok.d.next = self.hc_off.q.val() <= self.mr.val().length;
                self.hc_room.d.next = self.mr.val().length - self.hc_off.q.val();
                self.hc_base.d.next = self.mr.val().iova + self.hc_off.q.val();
                self.hc_npkts.d.next = self.hc_nq.q.val() + bit_cast::<24, 1>(self.hc_npart.q.val().into());
                if self.hc_len.q.val() == 0 {
                    self.hc_npkts.d.next = 1.into();
                }
                self.hc.d.next = HeadStep::Ready;
            }
            HeadStep::Ready => {}
        }
        if self.kill.val() | self.reset.val() {
            self.hc.d.next = HeadStep::Idle;
        }
        self.ready.next = self.hc.q.val() == HeadStep::Ready;
        self.is_inline.next = self.hc_inl.q.val();
        self.is_read.next = self.hc_read.q.val();
        self.inline_ok.next = self.hc_inl_ok.q.val();
        self.len.next = self.hc_len.q.val();
        self.len_m1.next = self.hc_len.q.val() - 1;
        self.len_big.next = self.hc_len.q.val() > self.nums.val().max_msg_sz;
        self.off.next = self.hc_off.q.val();
        self.va_ok.next = self.hc_va_ok.q.val();
        self.key_ok.next = self.hc_key_ok.q.val();
        self.off_ok.next = self.hc_off_ok.q.val();
        self.room.next = self.hc_room.q.val();
        self.base.next = self.hc_base.q.val();
        self.bounds.next = self.hc_va_ok.q.val()
            & self.hc_off_ok.q.val()
            & (bit_cast::<64, 32>(self.hc_len.q.val()) <= self.hc_room.q.val());
        self.nq.next = self.hc_nq.q.val();
        self.npart.next = self.hc_npart.q.val();
        self.npkts.next = self.hc_npkts.q.val();
    }
}
