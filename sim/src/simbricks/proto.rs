//! The wire format of SimBricks' base and network protocols (SimBricks `lib/simbricks/base/proto.h`
//! and `lib/simbricks/network/proto.h`, protocol version 1), as byte offsets and encoders.
//!
//! Everything is little-endian and packed (SimBricks declares the structs `packed` and runs on
//! x86-64 and AArch64 hosts).
//!
//! **Intro messages** (one `sendmsg` each on the Unix socket, right after `connect`/`accept`):
//!
//! | message | bytes | fields (u64 each, in order) |
//! | --- | --- | --- |
//! | listener intro | 80 + 4 | version, flags (bit 0 sync, bit 1 sync forced), l2c offset, l2c entry bytes, l2c entries, c2l offset, c2l entry bytes, c2l entries, upper-layer protocol (1 = network), upper-layer intro offset (80) |
//! | connecter intro | 32 + 4 | version, flags (bit 0 sync, bit 1 sync forced), upper-layer protocol, upper-layer intro offset (32) |
//!
//! The 4 trailing bytes are the network layer's intro (`SimbricksProtoNetIntro`, one unused
//! `u32`). The listener's message carries the shared-memory pool's file descriptor as
//! `SCM_RIGHTS`.
//!
//! **Queue slots** (`entry bytes` each, 64-byte header then data):
//!
//! | offset | size | field |
//! | --- | --- | --- |
//! | 0 | 2 | packet length in bytes (packet messages) |
//! | 2 | 1 | port (0) |
//! | 48 | 8 | timestamp in ps: the instant the message takes effect at the receiver (sender's time + link latency) |
//! | 63 | 1 | `own_type`: bit 7 owner (1 = consumer may read, 0 = producer may write), bits 6..0 type: 0x00 sync, 0x01 terminate, 0x40 network packet |
//! | 64 | len | packet data: the Ethernet frame from the destination MAC, without FCS |

/// SimBricks protocol version spoken here (`SIMBRICKS_PROTO_VERSION`).
pub const VERSION: u64 = 1;
/// Upper-layer protocol identifier of the network protocol (`SIMBRICKS_PROTO_ID_NET`).
pub const PROTO_ID_NET: u64 = 1;

/// Intro flag: this side synchronises (`SIMBRICKS_PROTO_FLAGS_LI_SYNC` / `_CO_SYNC`).
pub const FLAG_SYNC: u64 = 1 << 0;
/// Intro flag: this side insists on synchronisation (`..._SYNC_FORCE`).
pub const FLAG_SYNC_FORCE: u64 = 1 << 1;

/// Size of the listener's intro without the network intro, in bytes.
pub const LISTENER_INTRO_BYTES: usize = 80;
/// Size of the connecter's intro without the network intro, in bytes.
pub const CONNECTER_INTRO_BYTES: usize = 32;
/// Size of the network layer's intro (one unused `u32`), in bytes.
pub const NET_INTRO_BYTES: usize = 4;

/// Bytes of a message header; packet data follows it.
pub const HEADER_BYTES: usize = 64;
/// Offset of the packet length (`u16`).
pub const OFF_LEN: usize = 0;
/// Offset of the port number (`u8`).
pub const OFF_PORT: usize = 2;
/// Offset of the timestamp (`u64`, ps).
pub const OFF_TIMESTAMP: usize = 48;
/// Offset of `own_type` (`u8`).
pub const OFF_OWN_TYPE: usize = 63;

/// Owner bit of `own_type`: set when the consumer owns the slot.
pub const OWN_CONSUMER: u8 = 0x80;
/// Type bits of `own_type`.
pub const TYPE_MASK: u8 = 0x7f;
/// Message type: pure synchronisation (`SIMBRICKS_PROTO_MSG_TYPE_SYNC`).
pub const MSG_SYNC: u8 = 0x00;
/// Message type: the peer leaves (`SIMBRICKS_PROTO_MSG_TYPE_TERMINATE`).
pub const MSG_TERMINATE: u8 = 0x01;
/// Message type: an Ethernet frame (`SIMBRICKS_PROTO_NET_MSG_PACKET`).
pub const MSG_NET_PACKET: u8 = 0x40;

/// The listener's intro: queue geometry and synchronisation wish.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ListenerIntro {
    /// Protocol version.
    pub version: u64,
    /// [`FLAG_SYNC`] / [`FLAG_SYNC_FORCE`].
    pub flags: u64,
    /// Listener-to-connecter queue: offset in the pool, entry bytes, entries.
    pub l2c: (u64, u64, u64),
    /// Connecter-to-listener queue: offset in the pool, entry bytes, entries.
    pub c2l: (u64, u64, u64),
    /// Upper-layer protocol identifier.
    pub upper_proto: u64,
    /// Offset of the upper-layer intro from the start of the message.
    pub upper_off: u64,
}

/// The connecter's intro.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnecterIntro {
    /// Protocol version.
    pub version: u64,
    /// [`FLAG_SYNC`] / [`FLAG_SYNC_FORCE`].
    pub flags: u64,
    /// Upper-layer protocol identifier.
    pub upper_proto: u64,
    /// Offset of the upper-layer intro from the start of the message.
    pub upper_off: u64,
}

fn u64_at(b: &[u8], i: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[8 * i..8 * i + 8]);
    u64::from_le_bytes(w)
}

impl ListenerIntro {
    /// The message: the 80-byte intro followed by the 4-byte network intro.
    pub fn encode(&self) -> Vec<u8> {
        let words = [
            self.version,
            self.flags,
            self.l2c.0,
            self.l2c.1,
            self.l2c.2,
            self.c2l.0,
            self.c2l.1,
            self.c2l.2,
            self.upper_proto,
            self.upper_off,
        ];
        let mut out: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        out.extend_from_slice(&[0; NET_INTRO_BYTES]);
        out
    }

    /// Parses a received message; `None` if it is shorter than 80 bytes.
    pub fn decode(b: &[u8]) -> Option<Self> {
        (b.len() >= LISTENER_INTRO_BYTES).then(|| Self {
            version: u64_at(b, 0),
            flags: u64_at(b, 1),
            l2c: (u64_at(b, 2), u64_at(b, 3), u64_at(b, 4)),
            c2l: (u64_at(b, 5), u64_at(b, 6), u64_at(b, 7)),
            upper_proto: u64_at(b, 8),
            upper_off: u64_at(b, 9),
        })
    }
}

impl ConnecterIntro {
    /// The message: the 32-byte intro followed by the 4-byte network intro.
    pub fn encode(&self) -> Vec<u8> {
        let mut out: Vec<u8> =
            [self.version, self.flags, self.upper_proto, self.upper_off].iter().flat_map(|w| w.to_le_bytes()).collect();
        out.extend_from_slice(&[0; NET_INTRO_BYTES]);
        out
    }

    /// Parses a received message; `None` if it is shorter than 32 bytes.
    pub fn decode(b: &[u8]) -> Option<Self> {
        (b.len() >= CONNECTER_INTRO_BYTES).then(|| Self {
            version: u64_at(b, 0),
            flags: u64_at(b, 1),
            upper_proto: u64_at(b, 2),
            upper_off: u64_at(b, 3),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intros_have_the_sizes_and_field_order_of_the_c_structs() {
        let l = ListenerIntro {
            version: VERSION,
            flags: FLAG_SYNC,
            l2c: (0x1000, 1600, 8192),
            c2l: (0, 1600, 8192),
            upper_proto: PROTO_ID_NET,
            upper_off: LISTENER_INTRO_BYTES as u64,
        };
        let b = l.encode();
        assert_eq!(b.len(), 84);
        assert_eq!(&b[16..24], &0x1000u64.to_le_bytes(), "l2c_offset is the third field");
        assert_eq!(&b[64..72], &1u64.to_le_bytes(), "upper_layer_proto is the ninth field");
        assert_eq!(ListenerIntro::decode(&b), Some(l));
        let c = ConnecterIntro { version: 1, flags: 3, upper_proto: 1, upper_off: 32 };
        let b = c.encode();
        assert_eq!(b.len(), 36);
        assert_eq!(ConnecterIntro::decode(&b), Some(c));
        assert_eq!(ConnecterIntro::decode(&b[..31]), None);
    }
}
