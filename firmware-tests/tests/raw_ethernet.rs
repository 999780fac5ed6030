//! The raw Ethernet path of the RTL (rnic_contract::regs::raw) driven by MMIO alone: frames
//! from the wire into the raw receive queue, frames from BAR0 onto the wire.
use rnic_contract::regs::{self, counter, raw};
use rnic_sim::{SimConfig, World};

const MAC: [u8; 6] = [2, 0, 0, 0, 0, 1];

fn counter(world: &mut World, c: u16) -> u32 {
    world.mmio_read(0, regs::COUNTERS + 4 * c).unwrap()
}

fn world() -> World {
    let mut world = World::new(1, SimConfig::default()).unwrap();
    let m = u64::from_le_bytes([MAC[0], MAC[1], MAC[2], MAC[3], MAC[4], MAC[5], 0, 0]);
    world.mmio_write(0, regs::MAC_LO, m as u32).unwrap();
    world.mmio_write(0, regs::MAC_HI, (m >> 32) as u32).unwrap();
    world.mmio_write(0, regs::IPV4_ADDR, 0xC000_0201).unwrap();
    world
}

/// An ARP request (RFC 826) from 02:00:00:00:00:63 / 192.0.2.99 for `target`, padded to 60 bytes.
fn arp_request(target: [u8; 4], tag: u8) -> Vec<u8> {
    let mut f = vec![0xFF; 6];
    f.extend_from_slice(&[2, 0, 0, 0, 0, 0x63, 0x08, 0x06]);
    f.extend_from_slice(&[0, 1, 0x08, 0x00, 6, 4, 0, 1]);
    f.extend_from_slice(&[2, 0, 0, 0, 0, 0x63, 192, 0, 2, 99]);
    f.extend_from_slice(&[0; 6]);
    f.extend_from_slice(&target);
    f.resize(60, tag);
    f
}

/// The head of the raw receive queue: its bytes, or `None` when it is empty.
fn head(world: &mut World) -> Option<Vec<u8>> {
    let st = world.mmio_read(0, regs::RAW_RX_STATUS).unwrap();
    if st & raw::RX_HEAD_VALID == 0 {
        return None;
    }
    let len = (st >> raw::RX_LEN_SHIFT & raw::RX_LEN_MASK) as usize;
    let mut b = Vec::new();
    for i in 0..raw::DATA_WORDS {
        b.extend_from_slice(&world.mmio_read(0, regs::RAW_RX_DATA + 4 * i as u16).unwrap().to_le_bytes());
    }
    b.truncate(len);
    Some(b)
}

#[test]
fn non_roce_frames_reach_the_raw_queue_in_order_and_overflow_is_counted() {
    let mut w = world();
    // Ten ARP requests back to back: eight slots, two dropped.
    for k in 0..10u8 {
        w.inject_rx_frame(0, arp_request([192, 0, 2, 1], k), false).unwrap();
    }
    // Not for the queue: another MAC; a frame with a bad FCS and a long one are for it but
    // dropped.
    let mut other = arp_request([192, 0, 2, 1], 0xAA);
    other[..6].copy_from_slice(&[2, 0, 0, 0, 0, 9]);
    w.inject_rx_frame(0, other, false).unwrap();
    w.step_n(2_000);
    assert_eq!(counter(&mut w, counter::RX_FRAMES), 11);
    assert_eq!(counter(&mut w, counter::DROP_RAW), 2, "two ARP frames found the queue full");
    assert_eq!(counter(&mut w, counter::DROP_MALFORMED), 1, "only the frame to another MAC is malformed");
    assert_eq!(w.mmio_read(0, regs::RAW_RX_STATUS).unwrap() & raw::RX_TAKEN_MASK, 8);
    for k in 0..8u8 {
        let f = head(&mut w).unwrap_or_else(|| panic!("frame {k} missing"));
        assert_eq!(f, arp_request([192, 0, 2, 1], k), "frame {k}");
        w.mmio_write(0, regs::RAW_RX_POP, 0).unwrap();
    }
    assert_eq!(head(&mut w), None);
    // A pop of an empty queue changes nothing; the queue takes frames again.
    w.mmio_write(0, regs::RAW_RX_POP, 0).unwrap();
    let mut long = arp_request([192, 0, 2, 1], 1);
    long.resize(100, 0);
    w.inject_rx_frame(0, long, false).unwrap();
    w.inject_rx_frame(0, arp_request([192, 0, 2, 1], 0x55), true).unwrap();
    w.inject_rx_frame(0, arp_request([192, 0, 2, 7], 0x66), false).unwrap();
    w.step_n(2_000);
    assert_eq!(counter(&mut w, counter::DROP_RAW), 4, "a long frame and a bad FCS are dropped");
    assert_eq!(counter(&mut w, counter::DROP_MALFORMED), 1, "a frame for the raw queue never counts as malformed");
    assert_eq!(head(&mut w), Some(arp_request([192, 0, 2, 7], 0x66)));
    assert_eq!(w.mmio_read(0, regs::RAW_RX_STATUS).unwrap() & raw::RX_TAKEN_MASK, 9);
}

#[test]
fn a_staged_frame_goes_out_as_written() {
    let mut w = world();
    let mut reply = arp_request([192, 0, 2, 99], 0);
    reply[..6].copy_from_slice(&[2, 0, 0, 0, 0, 0x63]);
    reply[6..12].copy_from_slice(&MAC);
    reply[21] = 2; // ARP reply
    for (i, word) in reply.chunks(4).enumerate() {
        let v = u32::from_le_bytes(word.try_into().unwrap());
        w.mmio_write(0, regs::RAW_TX_DATA + 4 * i as u16, v).unwrap();
    }
    w.mmio_write(0, regs::RAW_TX_SEND, reply.len() as u32).unwrap();
    // A 42-byte length goes out as the 60-byte minimum frame, bytes as staged.
    w.mmio_write(0, regs::RAW_TX_SEND, 42).unwrap();
    w.step_n(500);
    let frames = w.take_tx_frames(0).unwrap();
    let got: Vec<Vec<u8>> = frames.into_iter().map(|f| f.data).collect();
    assert_eq!(got, vec![reply.clone(), reply]);
    assert_eq!(counter(&mut w, counter::TX_FRAMES), 2);
    assert_eq!(counter(&mut w, counter::TX_BYTES_LO), 120);
    assert_eq!(counter(&mut w, counter::TX_REQUESTS), 0);
}
