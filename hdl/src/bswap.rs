//! Byte order of 64-bit header fields.
use rust_hdl::prelude::*;

/// Reverses the bytes of a 64-bit word: a header field as stored on the wire (byte 0, the most
/// significant, in bits 7:0) to its value as a number, and back (IBTA Vol 1 9.2: fields are
/// big-endian). Combinational, no logic (wiring only).
#[derive(LogicBlock, Default)]
pub struct Bswap64 {
    pub x: Signal<In, Bits<64>>,
    pub y: Signal<Out, Bits<64>>,
}

impl Logic for Bswap64 {
    #[hdl_gen]
    fn update(&mut self) {
        self.y.next = (bit_cast::<64, 8>(self.x.val().get_bits::<8>(0)) << 56)
            | (bit_cast::<64, 8>(self.x.val().get_bits::<8>(8)) << 48)
            | (bit_cast::<64, 8>(self.x.val().get_bits::<8>(16)) << 40)
            | (bit_cast::<64, 8>(self.x.val().get_bits::<8>(24)) << 32)
            | (bit_cast::<64, 8>(self.x.val().get_bits::<8>(32)) << 24)
            | (bit_cast::<64, 8>(self.x.val().get_bits::<8>(40)) << 16)
            | (bit_cast::<64, 8>(self.x.val().get_bits::<8>(48)) << 8)
            | bit_cast::<64, 8>(self.x.val().get_bits::<8>(56));
    }
}
