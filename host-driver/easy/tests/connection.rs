//! The easy API between two threads, each with its own vfio-user client of one NIC of an
//! in-process `rnic sim serve` world (two NICs cabled back to back): every byte moved by the
//! RTL, and the connection made in band by the two ports' connection managers (REQ, REP, RTU,
//! DREQ, DREP as IB CM MADs on QP1), with each side's advertisement in the private data.
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use rnic::cm::reject_reason;
use rnic::RemoteBuffer;
use rnic_easy::{connect, connect_on_context, listen, EasyError, Options};
use rnic_vfio_server::{serve, ServeHandle, ServeOptions};

fn server(dir: &std::path::Path) -> ServeHandle {
    serve(&ServeOptions { nics: 2, socket_dir: dir.to_owned(), ..ServeOptions::default() }).expect("serve")
}

fn dev(dir: &std::path::Path, k: usize) -> String {
    format!("vfio-user:{}", dir.join(format!("nic{k}.sock")).display())
}

fn opts(rw: usize) -> Options {
    Options { msg_size: 256, recv_depth: 4, rw_size: rw, timeout: Duration::from_secs(120), ..Options::default() }
}

/// What the server saw of the connection, sent back to the test's thread.
#[derive(Debug)]
struct ServerView {
    peer_buffer: Option<RemoteBuffer>,
    own_buffer: Option<RemoteBuffer>,
    peer_qpn: u32,
    own_qpn: u32,
    peer_msg_size: usize,
    seen: Vec<u8>,
    /// MADs sent and received on the server's QP1.
    mads: (u64, u64),
}

/// The connection comes up in band: the listener's address is NIC 1's IPv4 address, the
/// client's REQ carries its advertisement (buffer address, rkey, length, receive size) and the
/// server's REP its own, each side reads the other's back exactly, the QPs point at each other,
/// and QP1 carried the MADs (REQ + RTU out of the client, REP in). Then: send/recv both ways
/// (more messages than receives posted, so reposting is exercised), a zero-length message,
/// write then read of the peer's buffer, the peer seeing the written bytes, and the typed
/// refusals.
#[test]
fn connect_in_band_advertise_and_move_data() {
    let dir = tempfile::tempdir().unwrap();
    let h = server(dir.path());
    let (tx, rx) = mpsc::channel();
    let (view_tx, view_rx) = mpsc::channel();
    let d1 = dev(dir.path(), 1);
    let srv = thread::spawn(move || -> rnic_easy::Result<()> {
        let l = listen(&d1, "0.0.0.0:0", Options { msg_size: 512, ..opts(2048) })?;
        tx.send(l.local_addr()?).unwrap();
        let mut c = l.accept()?;
        // Echo 10 messages reversed (recv_depth is 4: the receives are reposted).
        for _ in 0..10 {
            let mut m = c.recv()?;
            m.reverse();
            c.send(&m)?;
        }
        assert_eq!(c.recv()?, Vec::<u8>::new(), "a zero-length message");
        c.local_write(512, b"server bytes")?;
        c.send(b"go")?;
        // The client wrote our buffer, then told us.
        assert_eq!(c.recv()?, b"written");
        let (_, q) = c.cm().channel().stats()?;
        view_tx
            .send(ServerView {
                peer_buffer: c.peer_buffer(),
                own_buffer: c.local_endpoint().buffer,
                peer_qpn: c.peer_endpoint().qpn,
                own_qpn: c.local_endpoint().qpn,
                peer_msg_size: c.peer_msg_size(),
                seen: c.local_read(0, 256)?,
                mads: (q.mads_sent, q.mads_received),
            })
            .unwrap();
        c.close()
    });
    let addr = rx.recv().unwrap();
    assert_eq!(addr.ip().to_string(), "192.0.2.2", "the listener is on NIC 1's port address");
    assert_ne!(addr.port(), 0, "port 0 picked an ephemeral port");
    let t0 = Instant::now();
    let mut c = connect(&dev(dir.path(), 0), addr, opts(1024)).unwrap();
    eprintln!("connect: {:.1} ms wall", t0.elapsed().as_secs_f64() * 1e3);
    let (cm_stats, qp1) = c.cm().channel().stats().unwrap();
    // REQ and RTU out, REP in (more if a slow simulator made the client try again).
    assert!(qp1.mads_sent >= 2 && qp1.mads_received >= 1, "the MADs went through QP1: {qp1:?}");
    assert_eq!(cm_stats.retransmitted, 0);
    let server_buf = c.peer_buffer().expect("the server advertised a buffer in its REP");
    assert_eq!(server_buf.len, 2048, "the server's rw_size");
    assert_eq!(c.peer_msg_size(), 512, "the server's msg_size, from the REP");
    assert_eq!(c.peer_endpoint().ip.to_string(), "192.0.2.2");
    for i in 0..10u8 {
        let msg: Vec<u8> = (0..=(i * 20)).collect();
        c.send(&msg).unwrap();
        let back = c.recv().unwrap();
        assert_eq!(back, msg.iter().rev().copied().collect::<Vec<_>>(), "echo {i}");
    }
    c.send(&[]).unwrap();
    assert_eq!(c.recv().unwrap(), b"go");
    assert_eq!(c.read(512, 12).unwrap(), b"server bytes", "RDMA READ of the buffer the REP advertised");
    let pattern: Vec<u8> = (0..=255).collect();
    c.write(0, &pattern).unwrap();
    assert_eq!(c.read(0, 256).unwrap(), pattern, "read back what was written");
    // Refusals before anything is posted.
    assert!(matches!(c.send(&[0; 257]), Err(EasyError::MessageTooLong { len: 257, max: 256 })));
    assert!(matches!(c.write(2040, &[0; 100]), Err(EasyError::OutOfBounds { what: "remote", .. })));
    assert!(matches!(c.read(0, 2000), Err(EasyError::OutOfBounds { what: "staging", .. })));
    assert!(matches!(c.local_read(1020, 8), Err(EasyError::OutOfBounds { what: "local", .. })));
    c.send(b"written").unwrap();
    let v = view_rx.recv().unwrap();
    assert_eq!(v.seen, pattern, "the server's CPU sees the client's RDMA WRITE");
    assert_eq!(v.peer_buffer, c.local_endpoint().buffer, "the REQ's advertisement, read back by the server");
    assert_eq!(v.own_buffer, Some(server_buf), "the REP's advertisement, read back by the client");
    assert_eq!(v.peer_msg_size, 256, "the client's msg_size, from the REQ");
    assert_eq!((v.peer_qpn, v.own_qpn), (c.local_endpoint().qpn, c.peer_endpoint().qpn), "the QPs face each other");
    assert!(v.mads.1 >= 2, "REQ and RTU reached the server's QP1: {:?}", v.mads);
    assert!(v.mads.0 >= 1, "the REP left it");
    // The server closes (DREQ) once we are done: our close finds the peer gone already.
    c.close().unwrap();
    srv.join().unwrap().unwrap();
    h.stop().unwrap();
}

/// A connect to a port nobody listens on is refused by the server's CM with REJ reason 8
/// (invalid service ID): after retrying until its timeout (the server might still be coming
/// up), `connect` gives [`EasyError::Rejected`] with reason 8 and says so. A loopback address
/// is refused before anything is sent.
#[test]
fn a_port_with_no_listener_refuses_with_reason_8() {
    let dir = tempfile::tempdir().unwrap();
    let h = server(dir.path());
    let (tx, rx) = mpsc::channel();
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let d1 = dev(dir.path(), 1);
    let srv = thread::spawn(move || -> rnic_easy::Result<u64> {
        // NIC 1's CM runs (it listens on another port) and keeps running while the client tries.
        let l = listen(&d1, "0.0.0.0:7471", opts(0))?;
        tx.send(l.local_addr()?).unwrap();
        while done_rx.try_recv().is_err() {
            l.cm().pump()?;
            thread::sleep(Duration::from_millis(1));
        }
        Ok(l.cm().channel().stats()?.0.rejected_req)
    });
    let mut addr = match rx.recv().unwrap() {
        std::net::SocketAddr::V4(a) => a,
        other => panic!("{other}"),
    };
    addr.set_port(7472);
    let timeout = Duration::from_millis(1500);
    let t0 = Instant::now();
    let err = connect(&dev(dir.path(), 0), addr, Options { timeout, ..opts(0) }).unwrap_err();
    let waited = t0.elapsed();
    done_tx.send(()).unwrap();
    match &err {
        EasyError::Rejected { addr: a, reason, .. } => {
            assert_eq!((*a, *reason), (addr, reject_reason::INVALID_SERVICE_ID), "{err}")
        }
        other => panic!("expected REJ reason 8, got {other:?}"),
    }
    let text = err.to_string();
    assert!(
        text.contains("192.0.2.2:7472") && text.contains("REJ reason 8") && text.contains("nobody listens"),
        "{text}"
    );
    assert!(waited >= timeout, "retried until the timeout ({waited:?})");
    let refused = srv.join().unwrap().unwrap();
    assert!(refused >= 2, "the server's CM rejected every REQ ({refused}), and there were retries");
    let e = connect(&dev(dir.path(), 0), "127.0.0.1:7471", opts(0)).unwrap_err();
    assert!(matches!(e, EasyError::Unreachable { .. }), "{e:?}");
    assert!(e.to_string().contains("loopback"), "{e}");
    h.stop().unwrap();
}

/// The peer's disconnect reaches the other side: the server closes (DREQ; its close returns
/// once the client's CM answered with a DREP), and the client's pending recv ends with
/// [`EasyError::Disconnected`] instead of waiting for its timeout, as does a send after it.
/// A second connection from the same context (the same QP1 and CM) to the same listener
/// comes up, and dropping it on the server (rdma_destroy_id: one DREQ) is seen the same way.
/// Without `rw_size` there is no buffer to read or write.
#[test]
fn a_peer_disconnect_ends_the_other_sides_waits() {
    let dir = tempfile::tempdir().unwrap();
    let h = server(dir.path());
    let (tx, rx) = mpsc::channel();
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let d1 = dev(dir.path(), 1);
    let srv = thread::spawn(move || -> rnic_easy::Result<()> {
        let l = listen(&d1, "0.0.0.0:0", opts(0))?;
        tx.send(l.local_addr()?).unwrap();
        let mut c = l.accept()?;
        assert_eq!(c.recv()?, b"bye");
        c.close()?; // DREQ, then the client's DREP
        let mut c2 = l.accept()?;
        assert_eq!(c2.recv()?, b"again");
        drop(c2); // rdma_destroy_id: one DREQ, not waited for
                  // Keep the device open (a vfio-user client leaving resets the whole NIC) and the CM
                  // running until the client is done.
        while done_rx.try_recv().is_err() {
            l.cm().pump()?;
            thread::sleep(Duration::from_millis(1));
        }
        Ok(())
    });
    let addr = rx.recv().unwrap();
    let mut c = connect(&dev(dir.path(), 0), addr, opts(0)).unwrap();
    assert!(matches!(c.write(0, b"x"), Err(EasyError::NoBuffer("remote"))));
    assert!(matches!(c.read(0, 1), Err(EasyError::NoBuffer("remote"))));
    assert!(matches!(c.local_read(0, 1), Err(EasyError::NoBuffer("local"))));
    assert!(!c.is_disconnected().unwrap());
    c.send(b"bye").unwrap();
    let t0 = Instant::now();
    match c.recv() {
        Err(EasyError::Disconnected { op: "recv" }) => {}
        other => panic!("expected the peer's disconnect, got {other:?}"),
    }
    assert!(t0.elapsed() < Duration::from_secs(60), "seen long before the 120 s timeout");
    assert!(c.is_disconnected().unwrap());
    assert!(matches!(c.send(b"anyone?"), Err(EasyError::Disconnected { op: "send" })));
    let ctx = c.context().clone();
    let cm = c.cm().clone();
    c.close().unwrap();

    let mut c2 = connect_on_context(&ctx, addr, opts(0)).unwrap();
    assert!(std::rc::Rc::ptr_eq(c2.cm(), &cm), "the context's CM (its QP1) is shared");
    c2.send(b"again").unwrap();
    match c2.recv() {
        Err(EasyError::Disconnected { op: "recv" }) => {}
        other => panic!("expected the dropped connection's DREQ, got {other:?}"),
    }
    drop(c2);
    // The QP1 and device go before the server that serves them.
    drop((cm, ctx));
    done_tx.send(()).unwrap();
    srv.join().unwrap().unwrap();
    h.stop().unwrap();
}

/// A server busy elsewhere while a second client connects: the client's REQs go unanswered,
/// so it gives each one up after its wall-clock wait (a REJ) and sends a new one, and the
/// server's CM queues every request and every REJ meanwhile. When the server accepts, it
/// skips the requests their client gave up and connects the live one; both connections of the
/// client's context (one QP1) then carry data.
#[test]
fn a_busy_server_skips_requests_their_client_gave_up() {
    let dir = tempfile::tempdir().unwrap();
    let h = server(dir.path());
    let (tx, rx) = mpsc::channel();
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let d1 = dev(dir.path(), 1);
    let srv = thread::spawn(move || -> rnic_easy::Result<u64> {
        let l = listen(&d1, "0.0.0.0:0", opts(0))?;
        tx.send(l.local_addr()?).unwrap();
        let mut c1 = l.accept()?;
        assert_eq!(c1.recv()?, b"one");
        // Busy, running the CM (it queues the second client's REQs and REJs), until two of
        // the client's REQs have been given up: c1's REQ and RTU, then two REQs and their
        // REJs (the client gives a REQ up after 1 s of wall time). Counted rather than timed:
        // on a loaded machine the simulated wire is slower, and 3.5 s of wall time once saw
        // only one give-up.
        let t = Instant::now();
        while l.cm().channel().stats()?.0.received < 2 + 4 {
            assert!(t.elapsed() < Duration::from_secs(60), "the client never gave up two REQs");
            l.cm().pump()?;
            thread::sleep(Duration::from_millis(2));
        }
        let mut c2 = l.accept()?;
        assert_eq!(c2.recv()?, b"two");
        c1.send(b"bye 1")?;
        c2.send(b"bye 2")?;
        let reqs = l.cm().channel().stats()?.0.received;
        done_rx.recv().unwrap();
        Ok(reqs)
    });
    let addr = rx.recv().unwrap();
    let mut c1 = connect(&dev(dir.path(), 0), addr, opts(0)).unwrap();
    c1.send(b"one").unwrap();
    let t = Instant::now();
    let quick = Options { timeout: Duration::from_secs(20), ..opts(0) };
    let mut c2 = connect_on_context(&c1.context().clone(), addr, quick).unwrap();
    assert!(t.elapsed() >= Duration::from_secs(1), "the second connect waited for the busy server");
    c2.send(b"two").unwrap();
    assert_eq!(c1.recv().unwrap(), b"bye 1");
    assert_eq!(c2.recv().unwrap(), b"bye 2");
    drop((c1, c2));
    done_tx.send(()).unwrap();
    let received = srv.join().unwrap().unwrap();
    // c1: REQ, RTU; c2: at least two given-up REQs with their REJs, the live REQ and its RTU.
    assert!(received >= 2 + 6, "the server's CM saw the retries: {received} MADs");
    h.stop().unwrap();
}

/// The link loses the client's RTU (found by its MAD attribute ID, 0x0014, at byte 78 of the
/// frame: Ethernet 14 + IPv4 20 + UDP 8 + BTH 12 + DETH 8 + 16 bytes into the MAD header; not
/// by its place among NIC 0's frames, since the NIC may send the client's first SEND, on
/// another QP, before it): rdma_cm's timing
/// would resend the REP only after 4.8 s of device time, hours of wall time here. The server's
/// `accept` sees the client's first SEND complete on its QP, which proves the client has the
/// REP; it calls `rdma_notify(IBV_EVENT_COMM_EST)`, is established at once with nothing
/// resent, and that message is the first its `recv` returns.
#[test]
fn a_lost_rtu_is_covered_by_the_first_receive() {
    let dir = tempfile::tempdir().unwrap();
    let faults = rnic_sim::FaultConfig { drop_first_matching: vec![(0, 78, vec![0x00, 0x14])], ..Default::default() };
    let h = serve(&ServeOptions {
        nics: 2,
        socket_dir: dir.path().to_owned(),
        config: rnic_sim::SimConfig { faults, ..Default::default() },
        ..ServeOptions::default()
    })
    .expect("serve");
    let (tx, rx) = mpsc::channel();
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let d1 = dev(dir.path(), 1);
    let srv = thread::spawn(move || -> rnic_easy::Result<(u64, u64)> {
        let l = listen(&d1, "0.0.0.0:0", Options { timeout: Duration::from_secs(30), ..opts(0) })?;
        tx.send(l.local_addr()?).unwrap();
        let mut c = l.accept()?;
        assert_eq!(c.recv()?, b"first", "the receive that established the connection");
        assert_eq!(c.recv()?, b"second");
        // Counted before the "ack": the client, waiting for it, has not yet disconnected (its
        // DREQ would be a second MAD).
        let (e, q) = l.cm().channel().stats()?;
        c.send(b"ack")?;
        done_rx.recv().unwrap();
        Ok((e.retransmitted, q.mads_received))
    });
    let addr = rx.recv().unwrap();
    let mut c = connect(&dev(dir.path(), 0), addr, Options { timeout: Duration::from_secs(30), ..opts(0) }).unwrap();
    c.send(b"first").unwrap();
    c.send(b"second").unwrap();
    assert_eq!(c.recv().unwrap(), b"ack");
    drop(c);
    done_tx.send(()).unwrap();
    let (resent, received) = srv.join().unwrap().unwrap();
    assert_eq!((resent, received), (0, 1), "only the REQ reached the server's QP1, nothing was resent");
    h.stop().unwrap();
}
