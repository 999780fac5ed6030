//! `serve` with bridged wires (`rnic sim serve --link bridge`): two served NICs whose ports
//! are not cabled in the world but bridged to UDP sockets that send to each other, so every
//! frame leaves the process as a datagram and comes back in through the other bridge. A SEND
//! crosses, the capture holds both directions, and a bridge that cannot be opened fails
//! `serve` with its address.
use std::net::UdpSocket;

use pcap_file::pcap::PcapReader;
use rnic::backend::VfioUserDevice;
use rnic::{AccessFlags, ConnectOptions, Context, Mtu, PortAddr, RecvWr, SendWr, WorkCompletion};
use rnic_sim::{BridgeSpec, Topology};
use rnic_vfio_server::{serve, ServeError, ServeOptions};

fn free_udp_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

#[test]
fn a_send_crosses_two_udp_bridges_and_is_captured() {
    let dir = tempfile::tempdir().unwrap();
    let (pa, pb) = (free_udp_port(), free_udp_port());
    let pcap = dir.path().join("wire.pcap");
    let h = serve(&ServeOptions {
        nics: 2,
        socket_dir: dir.path().to_owned(),
        topology: Topology::Unconnected,
        bridges: vec![
            format!("udp:{pa}:{pb}").parse::<BridgeSpec>().unwrap(),
            format!("udp:{pb}:{pa}").parse().unwrap(),
        ],
        pcap: Some(pcap.clone()),
        ..ServeOptions::default()
    })
    .expect("serve");
    {
        let open = |i: usize| {
            let dev = VfioUserDevice::open(&dir.path().join(format!("nic{i}.sock"))).unwrap();
            Context::open_with_port(dev, PortAddr::for_sim_nic(i)).unwrap()
        };
        let (a, b) = (open(0), open(1));
        let (pda, pdb) = (a.alloc_pd().unwrap(), b.alloc_pd().unwrap());
        let (ca, cb) = (a.create_cq(16).unwrap(), b.create_cq(16).unwrap());
        let want: Vec<u8> = (0..3000u32).map(|i| (i * 7 + 3) as u8).collect();
        let mut src = want.clone();
        let mut dst = vec![0u8; 4096];
        let ms = pda.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
        let md = pdb.register(&mut dst, AccessFlags::LOCAL_WRITE).unwrap();
        let mut qa = pda.create_qp(&ca).set_max_send_wr(4).build().unwrap();
        let mut qb = pdb.create_qp(&cb).set_max_send_wr(4).set_max_recv_wr(4).build().unwrap();
        let o = ConnectOptions { path_mtu: Mtu::Mtu1024, access: AccessFlags::empty(), ..ConnectOptions::default() };
        let (ea, eb) = (qa.endpoint().unwrap(), qb.endpoint().unwrap());
        qa.connect_with(&eb, &o).unwrap();
        qb.connect_with(&ea, &o).unwrap();
        qb.post_recv_one(RecvWr::new(5, md.sge(0..4096).unwrap())).unwrap();
        qa.post_send_one(SendWr::send(6, ms.sge(0..3000).unwrap()).signaled(true)).unwrap();
        let mut wcs = [WorkCompletion::default(); 2];
        assert_eq!(cb.poll_wait(&mut wcs, 50_000_000).unwrap(), 1, "the receive completes");
        assert_eq!((wcs[0].wr_id, wcs[0].byte_len), (5, 3000));
        assert_eq!(ca.poll_wait(&mut wcs, 50_000_000).unwrap(), 1, "the SEND is acknowledged");
        assert_eq!(wcs[0].wr_id, 6);
        let mut got = vec![0u8; 3000];
        md.read_at(0, &mut got).unwrap();
        assert_eq!(got, want, "every byte arrived through the sockets");
    }
    h.stop().expect("stats");
    // The capture has each of the 3 SEND packets twice (leaving NIC 0 on its outbound wire and
    // reaching NIC 1 on its inbound wire) and the ACK twice: 8 RoCEv2 frames, UDP port 4791.
    let mut r = PcapReader::new(std::fs::File::open(&pcap).unwrap()).unwrap();
    let mut roce = 0;
    while let Some(p) = r.next_packet() {
        let f = p.unwrap().data;
        if f.len() > 42 && f[12..14] == [0x08, 0x00] && f[36..38] == 4791u16.to_be_bytes() {
            roce += 1;
        }
    }
    assert_eq!(roce, 8, "RoCEv2 frames in the capture");
}

#[test]
fn a_bridge_that_cannot_be_bound_fails_serve_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let taken = UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let e = serve(&ServeOptions {
        nics: 1,
        socket_dir: dir.path().to_owned(),
        topology: Topology::Unconnected,
        bridges: vec![format!("udp:{port}:9").parse().unwrap()],
        ..ServeOptions::default()
    })
    .err()
    .expect("a bound port");
    assert!(e.to_string().contains(&format!("127.0.0.1:{port}")), "{e}");
    let e = serve(&ServeOptions {
        nics: 1,
        socket_dir: dir.path().to_owned(),
        topology: Topology::Unconnected,
        bridges: vec!["udp:0:9".parse().unwrap(), "udp:0:10".parse().unwrap()],
        ..ServeOptions::default()
    })
    .err()
    .expect("two bridges for one NIC");
    assert!(matches!(e, ServeError::TooManyBridges { bridges: 2, nics: 1 }), "{e}");
    // A bridge on a NIC the world cables to another is refused too.
    let e = serve(&ServeOptions {
        nics: 2,
        socket_dir: dir.path().to_owned(),
        topology: Topology::BackToBack,
        bridges: vec!["udp:0:9".parse().unwrap()],
        ..ServeOptions::default()
    })
    .err()
    .expect("a cabled NIC");
    assert!(e.to_string().contains("attach ports to unconnected NICs"), "{e}");
}
