//! The easy API between two threads, each with its own vfio-user client of one NIC of an
//! in-process `rnic sim serve` world (two NICs cabled back to back): every byte moved by the
//! RTL, the connection data exchanged over TCP on 127.0.0.1.
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use rnic::{ConnectOptions, WcStatus};
use rnic_easy::{connect, listen, EasyError, Options};
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

/// send/recv both ways (more messages than receives posted, so reposting is exercised),
/// a zero-length message, write then read of the peer's buffer, the peer seeing the written
/// bytes in its own buffer, and the typed refusals.
#[test]
fn send_recv_read_write_between_two_processes_worth_of_state() {
    let dir = tempfile::tempdir().unwrap();
    let h = server(dir.path());
    let (tx, rx) = mpsc::channel();
    let d1 = dev(dir.path(), 1);
    let srv = thread::spawn(move || -> rnic_easy::Result<Vec<u8>> {
        let l = listen(&d1, "127.0.0.1:0", opts(1024))?;
        tx.send(l.local_addr()?).unwrap();
        let mut c = l.accept()?;
        assert!(c.peer_buffer().is_some(), "the client advertised a buffer");
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
        c.local_read(0, 256)
    });
    let addr = rx.recv().unwrap();
    let mut c = connect(&dev(dir.path(), 0), addr, opts(1024)).unwrap();
    for i in 0..10u8 {
        let msg: Vec<u8> = (0..=(i * 20)).collect();
        c.send(&msg).unwrap();
        let back = c.recv().unwrap();
        assert_eq!(back, msg.iter().rev().copied().collect::<Vec<_>>(), "echo {i}");
    }
    c.send(&[]).unwrap();
    assert_eq!(c.recv().unwrap(), b"go");
    assert_eq!(c.read(512, 12).unwrap(), b"server bytes", "RDMA READ of the peer's buffer");
    let pattern: Vec<u8> = (0..=255).collect();
    c.write(0, &pattern).unwrap();
    assert_eq!(c.read(0, 256).unwrap(), pattern, "read back what was written");
    // Refusals before anything is posted.
    assert!(matches!(c.send(&[0; 257]), Err(EasyError::MessageTooLong { len: 257, max: 256 })));
    assert!(matches!(c.write(1000, &[0; 100]), Err(EasyError::OutOfBounds { what: "remote", .. })));
    assert!(matches!(c.read(0, 2000), Err(EasyError::OutOfBounds { .. })));
    assert!(matches!(c.local_read(1020, 8), Err(EasyError::OutOfBounds { what: "local", .. })));
    c.send(b"written").unwrap();
    let seen = srv.join().unwrap().unwrap();
    assert_eq!(seen, pattern, "the server's CPU sees the client's RDMA WRITE");
    c.close().unwrap();
    h.stop().unwrap();
}

/// Without `rw_size` there is no buffer to read or write; and once the peer is gone, a send
/// completes with the transport's error status instead of hanging.
#[test]
fn no_buffer_and_a_vanished_peer_are_typed_errors() {
    let dir = tempfile::tempdir().unwrap();
    let h = server(dir.path());
    let (tx, rx) = mpsc::channel();
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let d1 = dev(dir.path(), 1);
    // Short ACK timeout and few retries: the error comes within a few thousand cycles.
    let short = ConnectOptions { timeout: 1, retry_cnt: 1, ..ConnectOptions::default() };
    let srv = thread::spawn(move || -> rnic_easy::Result<()> {
        let l = listen(&d1, "127.0.0.1:0", Options { connect: short, ..opts(0) })?;
        tx.send(l.local_addr()?).unwrap();
        let mut c = l.accept()?;
        assert_eq!(c.recv()?, b"bye");
        // Destroy the QP (RESET) while the client still holds its side.
        drop(c);
        done_tx.send(()).unwrap();
        // Keep the device open (a vfio-user client leaving resets the whole NIC).
        thread::sleep(Duration::from_secs(30));
        Ok(())
    });
    let addr = rx.recv().unwrap();
    let mut c = connect(&dev(dir.path(), 0), addr, Options { connect: short, ..opts(0) }).unwrap();
    assert!(matches!(c.write(0, b"x"), Err(EasyError::NoBuffer("remote"))));
    assert!(matches!(c.read(0, 1), Err(EasyError::NoBuffer("remote"))));
    assert!(matches!(c.local_read(0, 1), Err(EasyError::NoBuffer("local"))));
    c.send(b"bye").unwrap();
    done_rx.recv().unwrap();
    match c.send(b"anyone?") {
        // The reset QP drops the SEND; the requester times out twice (retry_cnt 1).
        Err(EasyError::Completion { op: "send", status, .. }) => assert_eq!(status, WcStatus::RetryExcErr),
        other => panic!("expected an error completion, got {other:?}"),
    }
    drop(c);
    drop(srv);
    h.stop().unwrap();
}
