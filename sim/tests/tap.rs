//! A NIC port bridged to a Linux TAP device: frames the NIC sends appear on the interface (read
//! here with an `AF_PACKET` socket bound to it), frames sent out of the interface reach the NIC.
//! Needs `CAP_NET_ADMIN` and `/dev/net/tun`; says plainly that it skipped otherwise. The frames
//! carry a local experimental ethertype (0x88B5) and no IP: nothing leaves the machine.
mod common;

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

use common::FakeNic;
use rnic_sim::{PortOptions, SimConfig, TapPort, Topology, World};

const ETHERTYPE: [u8; 2] = [0x88, 0xB5];

fn frame(from: u8, k: u8, len: usize) -> Vec<u8> {
    let mut f: Vec<u8> = (0..len).map(|i| (i as u8).wrapping_mul(13).wrapping_add(k)).collect();
    f[..6].copy_from_slice(&[2, 0, 0, 0, 0x7a, 1 - from]);
    f[6..12].copy_from_slice(&[2, 0, 0, 0, 0x7a, from]);
    f[12..14].copy_from_slice(&ETHERTYPE);
    f[14] = k;
    f
}

/// An `AF_PACKET` raw socket bound to interface `name`, non-blocking.
fn packet_socket(name: &str) -> std::io::Result<(OwnedFd, i32)> {
    let cname = std::ffi::CString::new(name).unwrap();
    // SAFETY: plain libc calls with valid arguments; the descriptor is owned at once.
    unsafe {
        let index = libc::if_nametoindex(cname.as_ptr()) as i32;
        if index == 0 {
            return Err(std::io::Error::last_os_error());
        }
        let fd = libc::socket(
            libc::AF_PACKET,
            libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            (libc::ETH_P_ALL as u16).to_be() as i32,
        );
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let fd = OwnedFd::from_raw_fd(fd);
        let mut sll: libc::sockaddr_ll = std::mem::zeroed();
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = (libc::ETH_P_ALL as u16).to_be();
        sll.sll_ifindex = index;
        let r = libc::bind(
            fd.as_raw_fd(),
            (&sll as *const libc::sockaddr_ll).cast(),
            std::mem::size_of::<libc::sockaddr_ll>() as u32,
        );
        if r < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok((fd, index))
    }
}

#[test]
fn a_nic_bridged_to_a_tap_device_exchanges_frames_with_the_host() {
    let tap = match TapPort::open("rnictap%d") {
        Ok(t) => t,
        Err(e) => {
            println!("SKIPPED: cannot create a TAP device here ({e}); nothing was checked");
            return;
        }
    };
    let name = tap.name().to_string();
    // No IPv6 chatter from the host on this interface (best effort).
    let _ = std::fs::write(format!("/proc/sys/net/ipv6/conf/{name}/disable_ipv6"), "1");
    tap.set_up().unwrap();
    let (sock, _) = packet_socket(&name).unwrap();

    let to_host: Vec<Vec<u8>> = (0..10).map(|k| frame(0, k, 60 + 97 * k as usize)).collect();
    let (core, seen) = FakeNic::boxed(to_host.clone(), vec![]);
    let mut w = World::with_cores(vec![core], SimConfig::default(), Topology::Unconnected).unwrap();
    w.attach_port(0, Box::new(tap), PortOptions::default()).unwrap();

    let from_host: Vec<Vec<u8>> = (0..8).map(|k| frame(1, 100 + k, 64 + 180 * k as usize)).collect();
    for f in &from_host {
        // SAFETY: sending a buffer we own on our socket (bound, so no address needed).
        let n = unsafe { libc::send(sock.as_raw_fd(), f.as_ptr().cast(), f.len(), 0) };
        assert_eq!(n, f.len() as isize, "{}", std::io::Error::last_os_error());
    }
    let mut host_got = Vec::new();
    let mut buf = vec![0u8; 65536];
    let t0 = Instant::now();
    let ours = |f: &[u8]| f.len() >= 14 && f[12..14] == ETHERTYPE;
    loop {
        w.step_n(200);
        loop {
            let mut from: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
            let mut len = std::mem::size_of::<libc::sockaddr_ll>() as u32;
            // SAFETY: receiving into a buffer we own; `from`/`len` describe a valid sockaddr_ll.
            let n = unsafe {
                libc::recvfrom(
                    sock.as_raw_fd(),
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                    0,
                    (&mut from as *mut libc::sockaddr_ll).cast(),
                    &mut len,
                )
            };
            if n <= 0 {
                break;
            }
            // Frames the host itself sent out of the interface are looped back to packet
            // sockets as PACKET_OUTGOING: only what came in from the NIC counts.
            if from.sll_pkttype != libc::PACKET_OUTGOING as u8 && ours(&buf[..n as usize]) {
                host_got.push(buf[..n as usize].to_vec());
            }
        }
        let nic_got = seen.lock().unwrap().rx.iter().filter(|x| ours(&x.1)).count();
        if (host_got.len() >= to_host.len() && nic_got >= from_host.len()) || t0.elapsed() > Duration::from_secs(30) {
            break;
        }
    }
    let nic_got: Vec<Vec<u8>> = seen.lock().unwrap().rx.iter().filter(|x| ours(&x.1)).map(|x| x.1.clone()).collect();
    assert_eq!(host_got, to_host, "the host saw the NIC's frames on {name}, intact and in order");
    assert_eq!(nic_got, from_host, "the NIC got the host's frames, intact and in order");
    let r = &w.port_reports()[0];
    println!("{name}: {r:?}");
    assert!(w.take_port_error().is_none());
}
