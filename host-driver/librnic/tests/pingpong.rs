//! Debian bookworm's unmodified `ibv_ud_pingpong` (ibverbs-utils 44; `scripts/setup.sh`
//! installs it) on librnic, server and client as two processes, each on its own NIC of one
//! in-process `rnic sim serve` world (two NICs cabled back to back, `vfio-user:` sockets), the
//! peer's MAC from `RNIC_PEER`. Both must exit 0 and print the peer's GID and their
//! `N bytes in X seconds` lines:
//!
//! - `ibv_ud_pingpong_checks_its_data`: 4056-byte datagrams with `-c` (the server checks, after
//!   the run, the first byte of each page of what it last received against what the client
//!   wrote) and completion events (`-e`). 4056 + 40 bytes (the GRH area) is one whole page,
//!   which the vfio-user backend shares in place (docs/driver.md, librnic);
//! - `ibv_ud_pingpong_sends_one_mtu`: 4096 bytes, the largest datagram (one path MTU), with
//!   `-c`: its buffer of 4136 bytes is part pages, which the server reaches through the
//!   program's `/proc/self/mem` (before, through a copy: `invalid data`); and `-s 4097`
//!   refused by the program itself against the port's active MTU;
//! - `rping_runs_unmodified_between_two_processes`: rdmacm-utils' `rping -v -V` on librnic's
//!   `librdmacm.so.1`, 10 pings verified, the connection made in band (CM MADs on QP1); the
//!   client starts first, so its first REQ finds no QP1 at the server and is resent
//!   (`RNIC_CM_TIMEOUT=6`).
mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use rnic_vfio_server::{serve, ServeHandle, ServeOptions};

/// A directory holding `libibverbs.so.1` and `librdmacm.so.1` → the librnic cargo built for
/// this run.
fn lib_dir(tag: &str) -> PathBuf {
    common::librnic_dir(&format!("pp-{tag}"))
}

fn which(bin: &str) -> PathBuf {
    let p = Path::new("/usr/bin").join(bin);
    assert!(p.exists(), "{bin} is not installed (scripts/setup.sh installs ibverbs-utils)");
    p
}

/// Two served NICs on sockets in a fresh directory under /tmp (a socket path must stay under
/// 108 bytes).
fn world(tag: &str) -> (ServeHandle, PathBuf) {
    let dir = std::env::temp_dir().join(format!("librnic-pp-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let h = serve(&ServeOptions { nics: 2, socket_dir: dir.clone(), ..ServeOptions::default() }).expect("serve");
    (h, dir)
}

/// Whether a TCP socket listens on `port` (`/proc/net/tcp`, state 0A). The program's server
/// accepts one connection, so a probe connect would take it.
fn listening(port: u16) -> bool {
    let local = format!(":{port:04X}");
    ["/proc/net/tcp", "/proc/net/tcp6"].iter().any(|f| {
        std::fs::read_to_string(f).unwrap_or_default().lines().any(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.len() > 3 && f[1].ends_with(&local) && f[3] == "0A"
        })
    })
}

/// Runs `ibv_ud_pingpong ARGS` as server on NIC 1 and as client on NIC 0; returns both
/// outputs (server, client).
fn pingpong(tag: &str, port: u16, args: &[&str]) -> (Output, Output) {
    let (_world, dir) = world(tag);
    let lib = lib_dir(tag);
    let pp = which("ibv_ud_pingpong");
    let side = |nic: &str, peer: &str| {
        let mut c = Command::new("timeout");
        c.args(["120", "stdbuf", "-o0"]).arg(&pp).args(["-d", "rnic_0", "-g", "1", "-p", &port.to_string()]).args(args);
        c.env("LD_LIBRARY_PATH", &lib)
            .env("RNIC_DEVICE", format!("vfio-user:{}", dir.join(nic).display()))
            .env("RNIC_PEER", peer)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    };
    let mut server = side("nic1.sock", "192.0.2.1,02:00:00:00:00:01").spawn().expect("ibv_ud_pingpong server");
    let t0 = Instant::now();
    while !listening(port) && t0.elapsed() < Duration::from_secs(30) && server.try_wait().unwrap().is_none() {
        std::thread::sleep(Duration::from_millis(50));
    }
    let client = side("nic0.sock", "192.0.2.2,02:00:00:00:00:02").arg("127.0.0.1").output().expect("client");
    let server = server.wait_with_output().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    (server, client)
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

fn assert_ran(server: &Output, client: &Output, bytes: u64, iters: u32) {
    let (s, c) = (text(server), text(client));
    for (who, o, out, peer) in [("server", server, &s, "192.0.2.1"), ("client", client, &c, "192.0.2.2")] {
        assert!(o.status.success(), "{who} exited {:?}:\n--- server\n{s}\n--- client\n{c}", o.status);
        assert!(out.contains(&format!(", GID ::ffff:{peer}\n")), "{who} lacks the peer's GID:\n{out}");
        assert!(out.contains(&format!("\n{bytes} bytes in ")), "{who} lacks '{bytes} bytes in':\n{out}");
        assert!(out.contains(&format!("\n{iters} iters in ")), "{who} lacks '{iters} iters in':\n{out}");
        assert!(!out.contains("invalid data"), "{who}: --chk found invalid data:\n{out}");
    }
}

fn port(offset: u16) -> u16 {
    21000 + (std::process::id() % 4000) as u16 * 2 + offset
}

#[test]
fn ibv_ud_pingpong_checks_its_data() {
    let (s, c) = pingpong("chk", port(0), &["-n", "10", "-s", "4056", "-c", "-e"]);
    assert_ran(&s, &c, 4056 * 10 * 2, 10);
}

#[test]
fn ibv_ud_pingpong_sends_one_mtu() {
    let (s, c) = pingpong("mtu", port(1), &["-n", "5", "-s", "4096", "-c"]);
    assert_ran(&s, &c, 4096 * 5 * 2, 5);
    let lib = lib_dir("mtu-refused");
    let (_world, dir) = world("refused");
    let o = Command::new(which("ibv_ud_pingpong"))
        .args(["-d", "rnic_0", "-g", "1", "-s", "4097"])
        .env("LD_LIBRARY_PATH", &lib)
        .env("RNIC_DEVICE", format!("vfio-user:{}", dir.join("nic1.sock").display()))
        .output()
        .unwrap();
    assert!(!o.status.success() && text(&o).contains("Requested size larger than port MTU (4096)"), "{}", text(&o));
}

#[test]
fn rping_runs_unmodified_between_two_processes() {
    let (_world, dir) = world("rping");
    let lib = lib_dir("rping");
    let rping = which("rping");
    let p = port(2).to_string();
    let side = |nic: &str, role: &str| {
        let mut c = Command::new("timeout");
        c.args(["120", "stdbuf", "-o0"]).arg(&rping).args([role, "-v", "-V", "-C", "10", "-a", "192.0.2.2", "-p", &p]);
        c.env("LD_LIBRARY_PATH", &lib)
            .env("RNIC_DEVICE", format!("vfio-user:{}", dir.join(nic).display()))
            .env("RNIC_CM_TIMEOUT", "6")
            .env_remove("RNIC_PEER")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    };
    let client = side("nic0.sock", "-c").spawn().expect("rping client");
    std::thread::sleep(Duration::from_secs(1));
    let server = side("nic1.sock", "-s").output().expect("rping server");
    let client = client.wait_with_output().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let (s, c) = (text(&server), text(&client));
    assert!(server.status.success() && client.status.success(), "--- server\n{s}\n--- client\n{c}");
    for i in 0..10 {
        assert!(
            c.contains(&format!("\nping data: rdma-ping-{i}: "))
                || c.starts_with(&format!("ping data: rdma-ping-{i}: ")),
            "{c}"
        );
        assert!(s.contains(&format!("server ping data: rdma-ping-{i}: ")), "{s}");
    }
    assert!(!c.contains("mismatch") && !s.contains("mismatch"), "{c}{s}");
}
