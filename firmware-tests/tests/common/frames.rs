//! Reading captured RoCEv2 frames where the crate's codec stops: the atomic headers
//! (AtomicETH, AtomicAckETH; IBTA Vol 1 9.3.4, 9.3.5) at their fixed offsets, and tshark's
//! own decoding of chosen fields (`tshark -T fields`), so tests can compare the NIC's wire
//! bytes with the values a work request carried.
use std::path::Path;
use std::process::Command;

/// COMPARE SWAP (RC 0x13): BTH, AtomicETH.
pub const COMPARE_SWAP: u8 = 0x13;
/// FETCH ADD (RC 0x14): BTH, AtomicETH.
pub const FETCH_ADD: u8 = 0x14;
/// ATOMIC ACKNOWLEDGE (RC 0x12): BTH, AETH, AtomicAckETH.
pub const ATOMIC_ACKNOWLEDGE: u8 = 0x12;
/// ACKNOWLEDGE (RC 0x11): BTH, AETH (also every NAK).
pub const ACKNOWLEDGE: u8 = 0x11;

/// AtomicETH (28 bytes, big-endian): VA 64, R_Key 32, Swap (or Add) Data 64, Compare Data 64.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AtomicEth {
    /// Remote virtual address.
    pub va: u64,
    /// R_Key.
    pub rkey: u32,
    /// Swap Data (COMPARE SWAP) or Add Data (FETCH ADD).
    pub swap_add: u64,
    /// Compare Data (COMPARE SWAP; FETCH ADD leaves it unused).
    pub compare: u64,
}

/// The transport fields of one captured RoCEv2 frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame {
    /// BTH opcode.
    pub opcode: u8,
    /// BTH destination QP.
    pub dest_qp: u32,
    /// BTH PSN.
    pub psn: u32,
    /// BTH AckReq.
    pub ack_req: bool,
    /// AtomicETH of a COMPARE SWAP / FETCH ADD.
    pub atomic_eth: Option<AtomicEth>,
    /// AETH (syndrome, MSN) of an ACKNOWLEDGE, ATOMIC ACKNOWLEDGE or READ RESPONSE
    /// FIRST/LAST/ONLY.
    pub aeth: Option<(u8, u32)>,
    /// AtomicAckETH: the original remote value of an ATOMIC ACKNOWLEDGE.
    pub orig_remote: Option<u64>,
}

fn be64(b: &[u8]) -> u64 {
    u64::from_be_bytes(b[..8].try_into().unwrap())
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes(b[..4].try_into().unwrap())
}

/// Parses an Ethernet / IPv4 / UDP:4791 / BTH frame (the IPv4 header length from its IHL),
/// with the atomic extension headers; `None` if it is not one or is too short for its
/// opcode's headers.
pub fn parse(frame: &[u8]) -> Option<Frame> {
    if frame.len() < 14 + 20 || frame[12..14] != [0x08, 0x00] {
        return None;
    }
    let ihl = usize::from(frame[14] & 0x0F) * 4;
    let udp = 14 + ihl;
    let bth = udp + 8;
    if frame.len() < bth + 12 || frame[14 + 9] != 17 || frame[udp + 2..udp + 4] != 4791u16.to_be_bytes() {
        return None;
    }
    let b = &frame[bth..];
    let opcode = b[0];
    let ext = &b[12..];
    let (mut atomic_eth, mut aeth, mut orig_remote) = (None, None, None);
    match opcode {
        COMPARE_SWAP | FETCH_ADD => {
            if ext.len() < 28 {
                return None;
            }
            atomic_eth = Some(AtomicEth {
                va: be64(ext),
                rkey: be32(&ext[8..]),
                swap_add: be64(&ext[12..]),
                compare: be64(&ext[20..]),
            });
        }
        ATOMIC_ACKNOWLEDGE => {
            if ext.len() < 12 {
                return None;
            }
            aeth = Some((ext[0], be32(ext) & 0xFF_FFFF));
            orig_remote = Some(be64(&ext[4..]));
        }
        ACKNOWLEDGE | 0x0D | 0x0F | 0x10 => {
            if ext.len() < 4 {
                return None;
            }
            aeth = Some((ext[0], be32(ext) & 0xFF_FFFF));
        }
        _ => {}
    }
    Some(Frame {
        opcode,
        dest_qp: be32(&b[4..]) & 0xFF_FFFF,
        psn: be32(&b[8..]) & 0xFF_FFFF,
        ack_req: b[8] & 0x80 != 0,
        atomic_eth,
        aeth,
        orig_remote,
    })
}

/// Every frame of a pcap file, parsed (panics on a frame that is not RoCEv2).
pub fn read(pcap: &Path) -> Vec<Frame> {
    rnic_firmware_tests::oracle::read_pcap(pcap)
        .expect("read the capture")
        .iter()
        .enumerate()
        .map(|(i, (_, f))| parse(f).unwrap_or_else(|| panic!("frame {} is not RoCEv2: {f:02x?}", i + 1)))
        .collect()
}

/// Runs `tshark -T fields` on `pcap` with UDP port 4791 decoded as InfiniBand (RoCEv2) and
/// returns, per frame, the first value of each of `fields` as tshark prints it (empty when the
/// frame has no such field). Panics if tshark is missing or fails (scripts/setup.sh installs
/// it).
pub fn tshark_fields(pcap: &Path, fields: &[&str]) -> Vec<Vec<String>> {
    let mut cmd = Command::new("tshark");
    cmd.arg("-n").arg("-r").arg(pcap).args([
        "-d",
        "udp.port==4791,infiniband",
        "-T",
        "fields",
        "-E",
        "separator=\t",
        "-E",
        "occurrence=f",
    ]);
    for f in fields {
        cmd.args(["-e", f]);
    }
    let out = cmd.output().expect("tshark (run scripts/setup.sh to install it)");
    assert!(out.status.success(), "tshark failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let mut v: Vec<String> = l.split('\t').map(str::to_owned).collect();
            v.resize(fields.len(), String::new());
            v
        })
        .collect()
}

/// A decimal or `0x` hexadecimal unsigned integer as tshark prints it; `None` for an empty or
/// unreadable value.
pub fn uint(s: &str) -> Option<u64> {
    match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}
