//! The server as a vfio-user client sees it, over the socket: config space, BAR0 on the NIC's
//! registers, MSI-X from the interrupt hook to the client's eventfds with per-vector masking in
//! the table, DMA into the client's memfd, and the driver's vfio-user backend on top.
use std::time::Duration;

use rnic::backend::VfioUserDevice;
use rnic::Device;
use rnic_vfio_server::{serve, ServeOptions};

const CONFIG: u32 = 7;

fn server(dir: &std::path::Path) -> rnic_vfio_server::ServeHandle {
    serve(&ServeOptions { nics: 2, socket_dir: dir.to_owned(), ..ServeOptions::default() }).expect("serve")
}

#[test]
fn config_space_and_bar0_through_a_raw_client() {
    let dir = tempfile::tempdir().unwrap();
    let h = server(dir.path());
    let mut c = vfio_user::Client::new(&dir.path().join("nic1.sock")).unwrap();
    let mut id = [0u8; 4];
    c.region_read(CONFIG, 0, &mut id).unwrap();
    assert_eq!(u32::from_le_bytes(id), 0x524E_10EE, "vendor 0x10EE, device 0x524E");
    let mut class = [0u8; 4];
    c.region_read(CONFIG, 8, &mut class).unwrap();
    assert_eq!(u32::from_le_bytes(class) >> 8, 0x02_0000);
    assert_eq!(c.region(0).unwrap().size, 65536);
    assert_eq!(c.region(2).unwrap().size, 4096);
    assert_eq!(c.get_irq_info(2).unwrap().count, 32, "32 MSI-X vectors");
    // BAR0 is the NIC's register map: ID and VERSION.
    let mut r = [0u8; 8];
    c.region_read(0, 0, &mut r).unwrap();
    assert_eq!(&r[..4], &0x524E_4943u32.to_le_bytes(), "ID reads RNIC");
    assert_eq!(&r[4..], &rnic_contract::regs::VERSION_VALUE.to_le_bytes());
    // A write reaches the NIC: MAC_LO reads back.
    c.region_write(0, u64::from(rnic_contract::regs::MAC_LO), &0x0403_0201u32.to_le_bytes()).unwrap();
    let mut m = [0u8; 4];
    c.region_read(0, u64::from(rnic_contract::regs::MAC_LO), &mut m).unwrap();
    assert_eq!(u32::from_le_bytes(m), 0x0403_0201);
    // An unaligned BAR0 read answers all ones, as a failed PCIe read does.
    let mut bad = [0u8; 4];
    c.region_read(0, 2, &mut bad).unwrap();
    assert_eq!(bad, [0xFF; 4]);
    drop(c);
    let s = h.stop().unwrap();
    assert!(s.cycles > 0);
}

#[test]
fn a_raised_vector_reaches_the_clients_eventfd_unless_masked() {
    let dir = tempfile::tempdir().unwrap();
    let h = server(dir.path());
    let dev = VfioUserDevice::open(&dir.path().join("nic0.sock")).unwrap();
    assert_eq!(dev.interrupt_vectors(), 32);
    assert!(dev.has_sim_clock());
    assert_eq!(dev.wait_interrupt(7, Duration::from_millis(50)).unwrap(), 0, "nothing raised yet");
    // The hook the RTL's irq port will drive, on the world thread.
    h.trigger_msix(0, 7);
    assert_eq!(dev.wait_interrupt(7, Duration::from_secs(10)).unwrap(), 1, "vector 7 fired once");
    assert_eq!(dev.wait_interrupt(6, Duration::from_millis(50)).unwrap(), 0, "vector 6 did not");
    assert_eq!(h.msix_delivered(0), 1);
    assert!(dev.interrupt_fd(7).is_some() && dev.interrupt_fd(32).is_none());
    assert!(dev.wait_interrupt(32, Duration::ZERO).is_err(), "no vector 32");
    // Mask vector 3 in the MSI-X table (BAR2) with a second, raw client on NIC 1 to show the
    // PBA: raise, see it pending, unmask, see it delivered.
    let mut c = vfio_user::Client::new(&dir.path().join("nic1.sock")).unwrap();
    let efd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK) };
    assert!(efd >= 0);
    c.set_irqs(2, 4 | 32, 3, 1, &[efd]).unwrap();
    c.region_write(2, 3 * 16 + 12, &1u32.to_le_bytes()).unwrap();
    h.trigger_msix(1, 3);
    let t = std::time::Instant::now();
    let mut pba = 0;
    while pba == 0 && t.elapsed() < Duration::from_secs(10) {
        let mut b = [0u8; 4];
        c.region_read(2, 0x800, &mut b).unwrap();
        pba = u32::from_le_bytes(b);
    }
    assert_eq!(pba, 1 << 3, "masked vector 3 is pending in the PBA");
    let mut n = [0u8; 8];
    assert_eq!(unsafe { libc::read(efd, n.as_mut_ptr().cast(), 8) }, -1, "and not delivered");
    c.region_write(2, 3 * 16 + 12, &0u32.to_le_bytes()).unwrap();
    let mut pfd = libc::pollfd { fd: efd, events: libc::POLLIN, revents: 0 };
    assert_eq!(unsafe { libc::poll(&mut pfd, 1, 10_000) }, 1, "unmasking delivers it");
    assert_eq!(unsafe { libc::read(efd, n.as_mut_ptr().cast(), 8) }, 8);
    assert_eq!(u64::from_le_bytes(n), 1);
    unsafe { libc::close(efd) };
}

#[test]
fn the_backend_shares_dma_memory_and_user_buffers_with_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let _h = server(dir.path());
    let dev = VfioUserDevice::open(&dir.path().join("nic0.sock")).unwrap();
    // Time is the simulator's and runs while a client is attached.
    let t0 = dev.now_cycles();
    std::thread::sleep(Duration::from_millis(200));
    assert!(dev.now_cycles() > t0, "the world runs free while a client is attached");
    let ring = dev.alloc_dma(10_000, 4096).unwrap();
    dev.dma_write(ring.offset(9_990), &[7; 10]).unwrap();
    let mut back = [0u8; 10];
    dev.dma_read(ring.offset(9_990), &mut back).unwrap();
    assert_eq!(back, [7; 10]);
    assert!(dev.dma_read(ring.offset(9_995), &mut back).is_err(), "past the allocation");
    // A plain Vec (not whole pages) is reached through the client's /proc/self/mem: the
    // server's reads and writes land in the buffer itself, at once, both ways.
    let mut buf = vec![1u8; 5000];
    let iova = unsafe { dev.map_user(buf.as_mut_ptr(), buf.len()) }.unwrap();
    let mut seen = [0u8; 4];
    dev.dma_read(iova.offset(4996), &mut seen).unwrap();
    assert_eq!(seen, [1; 4], "the device reads the buffer's bytes");
    dev.dma_write(iova.offset(10), b"shared").unwrap();
    assert_eq!(&buf[10..16], b"shared", "the device's write is in the buffer while it is mapped");
    dev.unmap(iova).unwrap();
    assert_eq!(&buf[10..16], b"shared");
    dev.free_dma(ring).unwrap();
    assert!(dev.free_dma(ring).is_err());
}

/// The RTL's interrupt end to end over vfio-user: NIC 1's CQ armed through BAR0, a SEND from
/// NIC 0 completes on it, the NIC's `irq_valid` becomes an MSI-X message the server writes to
/// the client's eventfd, and the driver's completion channel returns that CQ, once per arm.
#[test]
fn a_cq_event_travels_from_the_rtl_to_the_clients_completion_channel() {
    use rnic::{AccessFlags, ConnectOptions, Context, Mtu, PortAddr, RecvWr, SendWr, WorkCompletion};
    let dir = tempfile::tempdir().unwrap();
    let _h = server(dir.path());
    let open = |i: usize| {
        let dev = VfioUserDevice::open(&dir.path().join(format!("nic{i}.sock"))).unwrap();
        Context::open_with_port(dev, PortAddr::for_sim_nic(i)).unwrap()
    };
    let (a, b) = (open(0), open(1));
    let (pa, pb) = (a.alloc_pd().unwrap(), b.alloc_pd().unwrap());
    let ch = b.create_comp_channel().unwrap();
    let ca = a.create_cq(16).unwrap();
    let cb = b.create_cq_with_channel(16, &ch).unwrap();
    let mut src = vec![0x3cu8; 256];
    let mut dst = vec![0u8; 256];
    let ms = pa.register(&mut src, AccessFlags::LOCAL_WRITE).unwrap();
    let md = pb.register(&mut dst, AccessFlags::LOCAL_WRITE).unwrap();
    let mut qa = pa.create_qp(&ca).set_max_send_wr(4).build().unwrap();
    let mut qb = pb.create_qp(&cb).set_max_send_wr(4).set_max_recv_wr(4).build().unwrap();
    let o = ConnectOptions { path_mtu: Mtu::Mtu1024, access: AccessFlags::empty(), ..ConnectOptions::default() };
    let (ea, eb) = (qa.endpoint().unwrap(), qb.endpoint().unwrap());
    qa.connect_with(&eb, &o).unwrap();
    qb.connect_with(&ea, &o).unwrap();

    cb.req_notify(false).unwrap();
    assert!(ch.get_cq_event_timeout(Duration::from_millis(100)).unwrap().is_none(), "nothing completed yet");
    qb.post_recv_one(RecvWr::new(9, md.sge(0..256).unwrap())).unwrap();
    qa.post_send_one(SendWr::send(9, ms.sge(0..100).unwrap()).signaled(true)).unwrap();
    let ev = ch.get_cq_event_timeout(Duration::from_secs(60)).unwrap().expect("the CQ event over vfio-user");
    assert_eq!(ev.cqn(), cb.cqn());
    ev.ack_cq_events(1);
    drop(ev);
    let mut wcs = [WorkCompletion::default(); 2];
    assert_eq!(cb.poll(&mut wcs).unwrap(), 1, "the CQE is in memory when the interrupt arrives");
    assert_eq!((wcs[0].wr_id, wcs[0].byte_len), (9, 100));
    assert!(ch.get_cq_event_timeout(Duration::from_millis(300)).unwrap().is_none(), "one event per arm");
    ca.poll_wait(&mut wcs, 10_000_000).unwrap();
}

/// A buffer of whole pages (perftest's and ibv_rc_pingpong's `memalign`ed buffers) is moved
/// onto shared memory at its own addresses: what the device writes is in the program's buffer
/// at once, what the program writes the device reads, and the bytes stay after the unmap. A
/// buffer that is not whole pages is reached through /proc/self/mem (the test above).
#[test]
fn a_buffer_of_whole_pages_is_shared_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let _h = server(dir.path());
    let dev = VfioUserDevice::open(&dir.path().join("nic0.sock")).unwrap();
    let layout = std::alloc::Layout::from_size_align(3 * 4096, 4096).unwrap();
    // SAFETY: a non-zero-sized layout; freed at the end.
    let buf = unsafe { std::alloc::alloc_zeroed(layout) };
    assert!(!buf.is_null());
    // SAFETY: `buf` is 3 pages we own; nothing holds a reference to them.
    unsafe { buf.add(100).write_bytes(0x5a, 8) };
    let iova = unsafe { dev.map_user(buf, 3 * 4096) }.unwrap();
    let mut seen = [0u8; 8];
    dev.dma_read(iova.offset(100), &mut seen).unwrap();
    assert_eq!(seen, [0x5a; 8], "the device sees the buffer's bytes");
    dev.dma_write(iova.offset(2 * 4096 + 7), b"in place").unwrap();
    // SAFETY: reads of our own allocation.
    let now = unsafe { std::slice::from_raw_parts(buf.add(2 * 4096 + 7), 8) }.to_vec();
    assert_eq!(now, b"in place", "the device's write is in the buffer while it is mapped");
    unsafe { buf.add(4096).write_bytes(0xc3, 4) };
    dev.dma_read(iova.offset(4096), &mut seen[..4]).unwrap();
    assert_eq!(seen[..4], [0xc3; 4], "the program's write reaches the device");
    // An overlapping registration goes through /proc/self/mem, and does not break the first.
    let iova2 = unsafe { dev.map_user(buf.add(4096), 4096) }.unwrap();
    dev.dma_write(iova.offset(4096 + 1), &[9]).unwrap();
    assert_eq!(unsafe { buf.add(4096 + 1).read() }, 9);
    dev.unmap(iova2).unwrap();
    dev.unmap(iova).unwrap();
    assert_eq!(unsafe { std::slice::from_raw_parts(buf.add(2 * 4096 + 7), 8) }, b"in place", "kept after unmap");
    // SAFETY: allocated above with this layout.
    unsafe { std::alloc::dealloc(buf, layout) };
}
