//! The raw receive queue: frames from the MAC that are not RoCEv2 packets, kept for the driver
//! ([`rnic_contract::regs::raw`]).
use rust_hdl::prelude::*;

/// log2 of [`rnic_contract::regs::raw::RX_SLOTS`].
pub const LOG_SLOTS: usize = 3;
const _: () = assert!(1 << LOG_SLOTS == rnic_contract::regs::raw::RX_SLOTS);

/// Cycles from a frame's last beat at the input to `took` / `cnt_drop`; the same as the
/// verdict latency of [`crate::rx_ingress::RxIngress`] ([`crate::rx_ingress::LATENCY`]), so
/// that the top level can tell its "malformed" pulse for a frame taken here.
pub const LATENCY: usize = 3;
const _: () = assert!(LATENCY == crate::rx_ingress::LATENCY);

/// Taps the MAC's receive stream beside [`crate::rx_ingress::RxIngress`] and keeps the frames
/// that are not RoCEv2 packets, addressed to the port, in a queue of
/// [`rnic_contract::regs::raw::RX_SLOTS`] one-beat slots the driver reads through BAR0
/// ([`rnic_contract::regs::RAW_RX_STATUS`], `RAW_RX_DATA`, `RAW_RX_POP`).
///
/// A frame is *for the raw queue* when its first beat's destination MAC is `mac` or
/// ff:ff:ff:ff:ff:ff and it is not IPv4 (EtherType 0x0800, bytes 12..14) carrying UDP
/// (protocol 17, byte 23) to port [`rnic_contract::ROCEV2_UDP_PORT`] (bytes 36..38, behind a
/// 20-byte IPv4 header). Such a frame is taken if it is one beat long (`tlast` on its first
/// beat, at most 64 bytes), the MAC found its FCS good (`tuser` = 0) and a slot is free;
/// otherwise it is dropped and counted (`cnt_drop`). Its length is the number of `tkeep` bits
/// (contiguous from byte 0, as the MAC delivers them).
///
/// Pipeline: the input beat is classified into registers (destination, RoCE, the one-hot
/// position of the last kept byte), the next cycle writes the slot (data and length RAMs) and
/// moves the write pointer; `took` / `cnt_drop` follow [`LATENCY`] cycles after the frame's
/// last beat (a longer frame is dropped at its end). No
/// back-pressure: one beat per cycle. The head slot is read continuously (`head_data`,
/// `head_len`); `head_valid` and the data follow a pop or a write two cycles later. Every
/// path is at most 4 LUT levels.
#[derive(LogicBlock)]
pub struct RawRxQueue {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub tdata: Signal<In, Bits<512>>,
    pub tkeep: Signal<In, Bits<64>>,
    pub tlast: Signal<In, Bit>,
    pub tvalid: Signal<In, Bit>,
    pub tuser: Signal<In, Bit>,
    /// The port's MAC address (byte 0 in bits 7:0).
    pub mac: Signal<In, Bits<48>>,
    /// Remove the head frame (a one-cycle pulse; ignored when the queue is empty).
    pub pop: Signal<In, Bit>,
    /// The head slot: a frame is there, its length in bytes, its beat.
    pub head_valid: Signal<Out, Bit>,
    pub head_len: Signal<Out, Bits<7>>,
    pub head_data: Signal<Out, Bits<512>>,
    /// Frames taken since reset, modulo 2^16.
    pub taken: Signal<Out, Bits<16>>,
    /// A frame was taken ([`LATENCY`] cycles after its beat).
    pub took: Signal<Out, Bit>,
    /// A frame for the raw queue was dropped: too long, bad FCS, or no free slot.
    pub cnt_drop: Signal<Out, Bit>,
    data_ram: RAM<Bits<512>, 3>,
    len_ram: RAM<Bits<7>, 3>,
    in_frame: DFF<Bit>,
    /// Stage 1: the beat and its classification.
    s_one: DFF<Bit>,
    s_raw: DFF<Bit>,
    s_last: DFF<Bit>,
    /// A longer frame for the queue is coming in: dropped at its last beat.
    long_pend: DFF<Bit>,
    s_data: DFF<Bits<512>>,
    s_end: DFF<Bits<64>>,
    wr_ptr: DFF<Bits<4>>,
    rd_ptr: DFF<Bits<4>>,
    count: DFF<Bits<16>>,
    took_r: DFF<Bit>,
    took_d: DFF<Bit>,
    drop_r: DFF<Bit>,
    drop_d: DFF<Bit>,
    valid_r: DFF<Bit>,
    first: Signal<Local, Bit>,
    to_us: Signal<Local, Bit>,
    roce: Signal<Local, Bit>,
    room: Signal<Local, Bit>,
    take: Signal<Local, Bit>,
    drop_now: Signal<Local, Bit>,
    idx: Signal<Local, Bits<7>>,
    len: Signal<Local, Bits<7>>,
    c_m0: Constant<Bits<64>>,
    c_m1: Constant<Bits<64>>,
    c_m2: Constant<Bits<64>>,
    c_m3: Constant<Bits<64>>,
    c_m4: Constant<Bits<64>>,
    c_m5: Constant<Bits<64>>,
    c_bcast: Constant<Bits<48>>,
    c_ipv4: Constant<Bits<16>>,
    c_udp: Constant<Bits<8>>,
    c_port: Constant<Bits<16>>,
}

/// The byte positions 0..64 whose index has bit `k` set.
fn index_mask(k: u32) -> u64 {
    (0..64).filter(|i| i >> k & 1 == 1).fold(0, |m, i| m | 1 << i)
}

impl Default for RawRxQueue {
    fn default() -> Self {
        // Wire order: the first byte of a field is its low byte here.
        let port = rnic_contract::ROCEV2_UDP_PORT.swap_bytes();
        Self {
            clock: Default::default(),
            reset: Default::default(),
            tdata: Default::default(),
            tkeep: Default::default(),
            tlast: Default::default(),
            tvalid: Default::default(),
            tuser: Default::default(),
            mac: Default::default(),
            pop: Default::default(),
            head_valid: Default::default(),
            head_len: Default::default(),
            head_data: Default::default(),
            taken: Default::default(),
            took: Default::default(),
            cnt_drop: Default::default(),
            data_ram: Default::default(),
            len_ram: Default::default(),
            in_frame: Default::default(),
            s_one: Default::default(),
            s_raw: Default::default(),
            s_last: Default::default(),
            long_pend: Default::default(),
            s_data: Default::default(),
            s_end: Default::default(),
            wr_ptr: Default::default(),
            rd_ptr: Default::default(),
            count: Default::default(),
            took_r: Default::default(),
            took_d: Default::default(),
            drop_r: Default::default(),
            drop_d: Default::default(),
            valid_r: Default::default(),
            first: Default::default(),
            to_us: Default::default(),
            roce: Default::default(),
            room: Default::default(),
            take: Default::default(),
            drop_now: Default::default(),
            idx: Default::default(),
            len: Default::default(),
            c_m0: Constant::new(index_mask(0).to_bits()),
            c_m1: Constant::new(index_mask(1).to_bits()),
            c_m2: Constant::new(index_mask(2).to_bits()),
            c_m3: Constant::new(index_mask(3).to_bits()),
            c_m4: Constant::new(index_mask(4).to_bits()),
            c_m5: Constant::new(index_mask(5).to_bits()),
            c_bcast: Constant::new(0xFFFF_FFFF_FFFF_u64.to_bits()),
            c_ipv4: Constant::new(0x0008_u64.to_bits()),
            c_udp: Constant::new(17_u64.to_bits()),
            c_port: Constant::new(u64::from(port).to_bits()),
        }
    }
}

impl Logic for RawRxQueue {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, in_frame, s_one, s_raw, s_last, long_pend, s_data, s_end, wr_ptr, rd_ptr, count, took_r,
            took_d, drop_r, drop_d, valid_r
        );
        self.data_ram.read_clock.next = self.clock.val();
        self.data_ram.write_clock.next = self.clock.val();
        self.len_ram.read_clock.next = self.clock.val();
        self.len_ram.write_clock.next = self.clock.val();

        // ---- Stage 1: classify the input beat ----
        self.first.next = self.tvalid.val() & !self.in_frame.q.val();
        if self.tvalid.val() {
            self.in_frame.d.next = !self.tlast.val();
        }
        self.to_us.next = (self.tdata.val().get_bits::<48>(0) == self.mac.val())
            | (self.tdata.val().get_bits::<48>(0) == self.c_bcast.val());
        self.roce.next = (self.tdata.val().get_bits::<16>(96) == self.c_ipv4.val())
            & (self.tdata.val().get_bits::<8>(184) == self.c_udp.val())
            & (self.tdata.val().get_bits::<16>(288) == self.c_port.val());
        self.s_raw.d.next = self.first.val() & self.to_us.val() & !self.roce.val();
        self.s_one.d.next = self.tlast.val() & !self.tuser.val();
        self.s_last.d.next = self.tvalid.val() & self.tlast.val();
        self.s_data.d.next = self.tdata.val();
        // The last kept byte, one-hot (tkeep is contiguous from byte 0).
        self.s_end.d.next = self.tkeep.val() & !(self.tkeep.val() >> 1);

        // ---- Stage 2: take or drop ----
        self.room.next = (self.wr_ptr.q.val() ^ self.rd_ptr.q.val()) != 8;
        self.take.next = self.s_raw.q.val() & self.s_one.q.val() & self.room.val();
        // Length = index of the last kept byte + 1; index bit k is the OR of the one-hot
        // positions whose index has bit k set.
        self.idx.next = bit_cast::<7, 1>((self.s_end.q.val() & self.c_m0.val()).any().into())
            | (bit_cast::<7, 1>((self.s_end.q.val() & self.c_m1.val()).any().into()) << 1)
            | (bit_cast::<7, 1>((self.s_end.q.val() & self.c_m2.val()).any().into()) << 2)
            | (bit_cast::<7, 1>((self.s_end.q.val() & self.c_m3.val()).any().into()) << 3)
            | (bit_cast::<7, 1>((self.s_end.q.val() & self.c_m4.val()).any().into()) << 4)
            | (bit_cast::<7, 1>((self.s_end.q.val() & self.c_m5.val()).any().into()) << 5);
        self.len.next = self.idx.val() + 1;
        self.data_ram.write_address.next = self.wr_ptr.q.val().get_bits::<3>(0);
        self.data_ram.write_data.next = self.s_data.q.val();
        self.data_ram.write_enable.next = self.take.val();
        self.len_ram.write_address.next = self.wr_ptr.q.val().get_bits::<3>(0);
        self.len_ram.write_data.next = self.len.val();
        self.len_ram.write_enable.next = self.take.val();
        if self.take.val() {
            self.wr_ptr.d.next = self.wr_ptr.q.val() + 1;
            self.count.d.next = self.count.q.val() + 1;
        }
        self.took_r.d.next = self.take.val();
        self.took_d.d.next = self.took_r.q.val();
        // A one-beat frame is dropped at once; a longer one at its last beat, so that the pulse
        // lines up with the ingress's verdict on the same frame.
        self.drop_now.next = (self.s_raw.q.val() & self.s_last.q.val() & !self.take.val())
            | (self.long_pend.q.val() & self.s_last.q.val());
        if self.s_raw.q.val() & !self.s_last.q.val() {
            self.long_pend.d.next = true;
        }
        if self.long_pend.q.val() & self.s_last.q.val() {
            self.long_pend.d.next = false;
        }
        self.drop_r.d.next = self.drop_now.val();
        self.drop_d.d.next = self.drop_r.q.val();
        self.took.next = self.took_d.q.val();
        self.cnt_drop.next = self.drop_d.q.val();

        // ---- The head ----
        self.data_ram.read_address.next = self.rd_ptr.q.val().get_bits::<3>(0);
        self.len_ram.read_address.next = self.rd_ptr.q.val().get_bits::<3>(0);
        self.valid_r.d.next = self.wr_ptr.q.val() != self.rd_ptr.q.val();
        if self.pop.val() & self.valid_r.q.val() {
            self.rd_ptr.d.next = self.rd_ptr.q.val() + 1;
            // The next head's data and validity show two cycles from now.
            self.valid_r.d.next = false;
        }
        self.head_valid.next = self.valid_r.q.val();
        self.head_len.next = self.len_ram.read_data.val();
        self.head_data.next = self.data_ram.read_data.val();
        self.taken.next = self.count.q.val();

        if self.reset.val() {
            self.in_frame.d.next = false;
            self.s_raw.d.next = false;
            self.s_last.d.next = false;
            self.long_pend.d.next = false;
            self.wr_ptr.d.next = 0.into();
            self.rd_ptr.d.next = 0.into();
            self.count.d.next = 0.into();
            self.took_r.d.next = false;
            self.drop_r.d.next = false;
            self.valid_r.d.next = false;
        }
    }
}
