//! Property tests of the CM engine: any bytes, and real MADs replayed out of order and
//! duplicated, never panic it and never make it report an event it should not.

use std::net::{Ipv4Addr, SocketAddrV4};

use proptest::prelude::*;

use super::mad::{attr, MadHeader, MAD_BYTES};
use super::*;

const A_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const B_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);

/// Every MAD of one full exchange (REQ, REP, RTU, DREQ, DREP) and of a rejected one (REQ,
/// REJ), as they crossed the wire, with the side that received each.
fn recorded_exchange() -> Vec<(bool, [u8; MAD_BYTES])> {
    let mut a = CmEngine::new(CmConfig::new(1, 100));
    let mut b = CmEngine::new(CmConfig::new(2, 200));
    b.listen(80).unwrap();
    let mut log = Vec::new();
    let mut pump = |a: &mut CmEngine, b: &mut CmEngine| loop {
        let mut moved = false;
        while let Some(m) = a.poll_transmit() {
            moved = true;
            log.push((true, m.mad));
            b.handle_mad(0, MadAddr::gsi(A_IP), &m.mad);
        }
        while let Some(m) = b.poll_transmit() {
            moved = true;
            log.push((false, m.mad));
            a.handle_mad(0, MadAddr::gsi(B_IP), &m.mad);
        }
        if !moved {
            break;
        }
    };
    let p = ConnectParams::new(SocketAddrV4::new(A_IP, 5000), SocketAddrV4::new(B_IP, 80), 0x10, 0x20);
    let ida = a.connect(0, &p).unwrap();
    pump(&mut a, &mut b);
    let Some(CmEvent::ConnectRequest(r)) = b.poll_event() else { panic!("no request") };
    b.accept(0, r.id, &AcceptParams::new(0x30, 0x40)).unwrap();
    pump(&mut a, &mut b);
    a.establish(0, ida).unwrap();
    pump(&mut a, &mut b);
    a.disconnect(0, ida, &[]).unwrap();
    pump(&mut a, &mut b);
    a.connect(0, &p).unwrap();
    pump(&mut a, &mut b);
    let Some(CmEvent::ConnectRequest(r)) = std::iter::from_fn(|| b.poll_event()).last() else { panic!() };
    b.reject(0, r.id, b"x").unwrap();
    pump(&mut a, &mut b);
    log
}

/// A MAD with a CM header (so the parser gets past it) and random content.
fn cm_like() -> impl Strategy<Value = Vec<u8>> {
    (
        prop::collection::vec(any::<u8>(), MAD_BYTES..=MAD_BYTES + 8),
        prop::sample::select(vec![attr::REQ, attr::MRA, attr::REJ, attr::REP, attr::RTU, attr::DREQ, attr::DREP, 0x99]),
        prop::sample::select(vec![0x03u8, 0x01, 0x81]),
    )
        .prop_map(|(mut m, a, method)| {
            MadHeader { method, attribute_id: a, transaction_id: 9, ..MadHeader::default() }.emit(&mut m);
            m
        })
}

fn bytes() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![prop::collection::vec(any::<u8>(), 0..300), cm_like()]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Garbage to an engine with a listener and an established connection: no panic, no
    /// event, the connection untouched, every answer a REJ or DREP.
    #[test]
    fn garbage_never_panics_or_reports(mads in prop::collection::vec(bytes(), 1..20)) {
        let mut a = CmEngine::new(CmConfig::new(1, 7));
        let mut b = CmEngine::new(CmConfig::new(2, 9));
        b.listen(80).unwrap();
        let p = ConnectParams::new(SocketAddrV4::new(A_IP, 5000), SocketAddrV4::new(B_IP, 80), 0x10, 0x20);
        let ida = a.connect(0, &p).unwrap();
        b.handle_mad(0, MadAddr::gsi(A_IP), &a.poll_transmit().unwrap().mad);
        let Some(CmEvent::ConnectRequest(r)) = b.poll_event() else { panic!() };
        b.accept(0, r.id, &AcceptParams::new(0x30, 0x40)).unwrap();
        a.handle_mad(0, MadAddr::gsi(B_IP), &b.poll_transmit().unwrap().mad);
        a.establish(0, ida).unwrap();
        b.handle_mad(0, MadAddr::gsi(A_IP), &a.poll_transmit().unwrap().mad);
        while a.poll_event().is_some() || b.poll_event().is_some() {}
        let before = [a.stats().received, b.stats().received];
        for (i, m) in mads.iter().enumerate() {
            a.handle_mad(i as u64, MadAddr::gsi(B_IP), m);
            b.handle_mad(i as u64, MadAddr::gsi(A_IP), m);
        }
        prop_assert!(a.poll_event().is_none());
        prop_assert!(b.poll_event().is_none());
        prop_assert_eq!(a.state(ida), Some(CmState::Established));
        prop_assert_eq!(b.state(r.id), Some(CmState::Established));
        for (e, before) in [&mut a, &mut b].into_iter().zip(before) {
            prop_assert_eq!(e.stats().received - before, mads.len() as u64);
            while let Some(out) = e.poll_transmit() {
                let at = MadHeader::parse(&out.mad).unwrap().attribute_id;
                prop_assert!(at == attr::REJ || at == attr::DREP, "answered garbage with {:#x}", at);
            }
        }
    }

    /// A recorded exchange's MADs in any order, some repeated, to a fresh engine with no
    /// listener: it knows none of the connections, so it reports nothing and answers only
    /// with REJ (to the REQs) and DREP (to the DREQs).
    #[test]
    fn replayed_mads_to_a_stranger_report_nothing(
        order in prop::collection::vec(any::<prop::sample::Index>(), 1..40),
    ) {
        let log = recorded_exchange();
        let mut e = CmEngine::new(CmConfig::new(3, 1));
        for (n, ix) in order.iter().enumerate() {
            let (_, mad) = ix.get(&log);
            e.handle_mad(n as u64, MadAddr::gsi(A_IP), mad);
            e.handle_timeout(n as u64);
        }
        prop_assert!(e.poll_event().is_none());
        prop_assert_eq!(e.next_timeout(), None);
        while let Some(out) = e.poll_transmit() {
            let at = MadHeader::parse(&out.mad).unwrap().attribute_id;
            prop_assert!(at == attr::REJ || at == attr::DREP);
        }
    }

    /// The MADs B received in the recorded exchange, shuffled and repeated, to a fresh B
    /// listening on the same port: each REQ's connection is requested at most once, and
    /// every event names a connection a CONNECT_REQUEST announced.
    #[test]
    fn replayed_mads_to_a_listener_request_each_connection_once(
        order in prop::collection::vec(any::<prop::sample::Index>(), 1..60),
        step in 0u64..10_000_000_000,
    ) {
        let log: Vec<_> = recorded_exchange().into_iter().filter(|(to_b, _)| *to_b).map(|(_, m)| m).collect();
        let mut b = CmEngine::new(CmConfig::new(2, 200));
        b.listen(80).unwrap();
        let mut announced = std::collections::BTreeSet::new();
        let mut requests = 0;
        for (n, ix) in order.iter().enumerate() {
            let now = n as u64 * step;
            b.handle_mad(now, MadAddr::gsi(A_IP), ix.get::<[u8; MAD_BYTES]>(&log));
            b.handle_timeout(now);
            while let Some(ev) = b.poll_event() {
                if let CmEvent::ConnectRequest(r) = &ev {
                    requests += 1;
                    prop_assert!(announced.insert(r.id));
                } else {
                    prop_assert!(announced.contains(&ev.id()), "{:?} for an unannounced id", ev);
                }
            }
        }
        // Two REQs were recorded; a consumer that never answers sees each at most once.
        prop_assert!(requests <= 2);
    }
}
