//! Per-stage NIC latency of a latency run, from the simulator's pcap capture of the wire and the
//! host's own cycle stamps (no RTL probe).
//!
//! The capture stamps each frame with the instant its first bit goes on the wire (ns since
//! cycle 0, rnic-sim's `pcap` module). The simulated MAC is store-and-forward: a frame starts on
//! an idle wire in the cycle after the NIC's TX beat carrying `tlast`, so that beat's cycle is
//! `start_ns / 4 − 1`; it arrives `wire_bits(len) + latency` later and its beats are presented to
//! the receiving NIC from the next cycle on, one 64-byte beat per cycle. The host stamps are the
//! cycle just before the doorbell's MMIO write is submitted, and the cycle of the poll that saw a
//! CQE or a payload byte (the host polls every cycle or two).
//!
//! A two-sided run (`rnic perf *-lat --device … --stamps FILE`, one process per side, the
//! NICs served by `rnic sim serve --pcap CAP`) stamps each side's doorbells and messages seen
//! on the world's clock (the vfio-user clock page), and [`SideStamps::host_stamps`] joins the
//! two files for [`measure`] (`rnic perf stages --pcap CAP --stamps A --stamps B`), so the same
//! breakdown is measured across processes and per backend.
//!
//! What this cannot see: when a NIC issues a DMA read or write (only the host's view of its
//! effect, which includes the simulator's modelled DMA latency), and the first TX beat of a
//! frame (estimated as `tlast − ⌈len / 64⌉ + 1`, i.e. assuming the frame's beats leave back to
//! back).
use std::net::Ipv4Addr;
use std::path::Path;

use pcap_file::pcap::PcapReader;
use rnic_contract::bth::{len as hdr, opcode};
use rnic_sim::config::LinkConfig;
use serde::{Deserialize, Serialize};

use super::stats::{LatencyHistogram, LatencySummary};

/// NIC clock period, ns.
const CYCLE_NS: u64 = 1000 / rnic_contract::CORE_CLOCK_MHZ;
/// Bytes per datapath beat.
const BEAT_BYTES: u64 = rnic_contract::DATAPATH_BYTES as u64;

/// One RoCEv2 frame of the capture.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WireFrame {
    /// First bit on the wire, ns since cycle 0.
    pub start_ns: u64,
    /// Frame length without FCS, bytes.
    pub len: u64,
    /// IPv4 source address.
    pub src: Ipv4Addr,
    /// BTH opcode.
    pub opcode: u8,
}

impl WireFrame {
    /// The cycle of the TX beat carrying `tlast` (the frame went on an idle wire the cycle after).
    pub fn tx_last_beat(&self) -> u64 {
        (self.start_ns / CYCLE_NS).saturating_sub(1)
    }

    /// Beats the frame takes on the 512-bit datapath.
    pub fn beats(&self) -> u64 {
        self.len.div_ceil(BEAT_BYTES).max(1)
    }

    /// The cycle of the last RX beat at the receiving NIC, over a link of `link`'s parameters.
    pub fn rx_last_beat(&self, link: &LinkConfig) -> u64 {
        let bits_per_cycle = link.rate_gbps * CYCLE_NS;
        let wire_bits = (self.len.max(link.min_frame_bytes) + link.overhead_bytes) * 8;
        let arrive_bits = self.start_ns * link.rate_gbps + wire_bits + link.latency_ns * link.rate_gbps;
        arrive_bits.div_ceil(bits_per_cycle) + self.beats() - 1
    }

    /// A request: SEND, RDMA WRITE, RDMA READ request or atomic.
    fn is_request(&self) -> bool {
        self.opcode <= opcode::RDMA_READ_REQUEST || matches!(self.opcode, opcode::COMPARE_SWAP | opcode::FETCH_ADD)
    }

    /// A response: READ response, ACK/NAK, atomic ACK.
    fn is_response(&self) -> bool {
        (opcode::RDMA_READ_RESPONSE_FIRST..=opcode::ATOMIC_ACKNOWLEDGE).contains(&self.opcode)
    }
}

/// The RoCEv2 frames of a pcap file, in capture (time) order; other frames are skipped.
///
/// # Errors
/// The file cannot be opened or is not a pcap file.
pub fn read_frames(path: &Path) -> Result<Vec<WireFrame>, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut r = PcapReader::new(file).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut out = Vec::new();
    while let Some(p) = r.next_packet() {
        let p = p.map_err(|e| format!("{}: {e}", path.display()))?;
        let d = &p.data;
        // Ethernet II / IPv4 / UDP to 4791 / BTH.
        let udp = hdr::ETH + hdr::IPV4;
        if d.len() < hdr::BASE || d[12..14] != [0x08, 0x00] || d[23] != 17 {
            continue;
        }
        if u16::from_be_bytes([d[udp + 2], d[udp + 3]]) != rnic_contract::ROCEV2_UDP_PORT {
            continue;
        }
        out.push(WireFrame {
            start_ns: p.timestamp.as_nanos() as u64,
            len: p.orig_len.into(),
            src: Ipv4Addr::new(d[26], d[27], d[28], d[29]),
            opcode: d[udp + hdr::UDP],
        });
    }
    Ok(out)
}

/// What the host saw of one message of a latency run.
#[derive(Clone, Copy, Debug, Default)]
pub struct HostStamps {
    /// The requester's address (which NIC posted the message).
    pub requester: Option<Ipv4Addr>,
    /// Cycle just before the doorbell's MMIO write.
    pub doorbell: u64,
    /// Request packets of the message (a READ request is 1).
    pub request_packets: u64,
    /// Response packets the requester waits for (READ: the response packets; WRITE and SEND: 1
    /// ACK).
    pub response_packets: u64,
    /// Cycle the responder's host saw the payload (the polled last byte of a WRITE, the receive
    /// completion of a SEND); None for READ.
    pub delivered: Option<u64>,
    /// Cycle the requester's host saw the message's CQE (signaled work requests only).
    pub completed: Option<u64>,
}

/// One side's stamps of a two-sided latency run, as `--stamps FILE` writes them (JSON).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SideStamps {
    /// "write-lat", "read-lat", "send-lat" or "atomic-lat".
    pub op: String,
    /// "client" or "server".
    pub role: String,
    /// This side's port address (the source of its requests on the wire).
    pub ip: Ipv4Addr,
    /// Message size, bytes.
    pub size: u64,
    /// Path MTU, bytes.
    pub mtu: u32,
    /// The device string the side ran on.
    pub device: String,
    /// Cycle just before the doorbell of this side's message `i` (the client's message `i`, the
    /// server's answer `i`), by `i`.
    pub doorbells: Vec<u64>,
    /// Cycle this side saw the peer's message `i` (the server: the client's message; the
    /// client: the answer, or its READ's completion), by `i`.
    pub seen: Vec<u64>,
}

impl SideStamps {
    /// The [`HostStamps`] of every message of a run from its sides' stamps (the client's, and
    /// the server's for write-lat and send-lat), in the order the messages went: client
    /// message `i`, then server answer `i`.
    ///
    /// # Errors
    /// No client side, two sides of the same role, or sides of different runs (op, size, MTU).
    pub fn host_stamps(sides: &[SideStamps]) -> Result<Vec<HostStamps>, String> {
        let client = sides.iter().find(|s| s.role == "client").ok_or("no client's stamps")?;
        if sides.len() > 2 || sides.iter().filter(|s| s.role == client.role).count() > 1 {
            return Err("give one client's and at most one server's stamps".into());
        }
        let server = sides.iter().find(|s| s.role == "server");
        if let Some(s) = server {
            if (s.op.as_str(), s.size, s.mtu) != (client.op.as_str(), client.size, client.mtu) {
                return Err(format!(
                    "the stamps are of different runs: client {} {} B MTU {}, server {} {} B MTU {}",
                    client.op, client.size, client.mtu, s.op, s.size, s.mtu
                ));
            }
        }
        let one_sided = matches!(client.op.as_str(), "read-lat" | "atomic-lat");
        let mtu = u64::from(client.mtu.max(1));
        let pkts = client.size.div_ceil(mtu).max(1);
        let (req, resp) = match client.op.as_str() {
            "read-lat" => (1, pkts),
            "atomic-lat" => (1, 1),
            _ => (pkts, 1),
        };
        let mut out = Vec::new();
        for (i, &db) in client.doorbells.iter().enumerate() {
            out.push(HostStamps {
                requester: Some(client.ip),
                doorbell: db,
                request_packets: req,
                response_packets: resp,
                delivered: if one_sided { None } else { server.and_then(|s| s.seen.get(i).copied()) },
                completed: None,
            });
            if let Some(s) = server.filter(|_| !one_sided) {
                if let Some(&db) = s.doorbells.get(i) {
                    out.push(HostStamps {
                        requester: Some(s.ip),
                        doorbell: db,
                        request_packets: req,
                        response_packets: resp,
                        delivered: client.seen.get(i).copied(),
                        completed: None,
                    });
                }
            }
        }
        Ok(out)
    }
}

/// One stage's name, meaning and distribution in cycles.
#[derive(Clone, Debug, Serialize)]
pub struct Stage {
    /// Short name (the JSON key).
    pub name: &'static str,
    /// What is measured, from which event to which.
    pub what: &'static str,
    /// Distribution over the messages it could be measured for, cycles.
    pub cycles: LatencySummary,
}

/// The per-stage breakdown of a latency run.
#[derive(Clone, Debug, Serialize)]
pub struct Stages {
    /// The stages, in the order a message meets them.
    pub stages: Vec<Stage>,
    /// Messages whose frames could not be found in the capture.
    pub unmatched: u64,
    /// The simulator's host model: cycles a DMA read takes to return data.
    pub dma_read_latency_cycles: u64,
    /// Cycles a DMA write takes to land in host memory.
    pub dma_write_latency_cycles: u64,
    /// Propagation plus receive-MAC latency of the wire, ns.
    pub wire_latency_ns: u64,
}

/// Matches each message's host stamps to its frames and measures the stages.
pub fn measure(frames: &[WireFrame], msgs: &[HostStamps], link: &LinkConfig, dma: (u64, u64)) -> Stages {
    const NAMES: [(&str, &str); 7] = [
        (
            "doorbell_to_tx_first_beat_est",
            "doorbell MMIO write → first TX beat of the request (estimated: tlast − beats + 1)",
        ),
        ("doorbell_to_tx_last_beat", "doorbell MMIO write → TX beat with tlast of the request's first packet"),
        ("wire", "request's last packet: TX tlast → last RX beat at the responder (serialisation + wire latency)"),
        ("responder", "request's last RX beat → TX tlast of the first response packet (ACK or READ response)"),
        (
            "rx_to_host_payload",
            "request's last RX beat → responder's host sees the payload (WRITE: polled last byte; SEND: receive CQE)",
        ),
        ("response_wire", "last response packet: TX tlast → last RX beat at the requester"),
        ("response_to_cqe", "last response packet's last RX beat → requester's host sees the CQE (signaled WRs)"),
    ];
    let mut hists: Vec<LatencyHistogram> = NAMES.iter().map(|_| LatencyHistogram::new(1.0)).collect();
    let mut unmatched = 0;
    // Cursors into the frames of each direction, requests and responses apart.
    let mut req_at: Vec<(Ipv4Addr, usize)> = Vec::new();
    let mut resp_at: Vec<(Ipv4Addr, usize)> = Vec::new();
    let cursor = |v: &mut Vec<(Ipv4Addr, usize)>, ip: Ipv4Addr| -> usize {
        match v.iter().position(|(a, _)| *a == ip) {
            Some(i) => i,
            None => {
                v.push((ip, 0));
                v.len() - 1
            }
        }
    };
    for m in msgs {
        let Some(me) = m.requester else {
            unmatched += 1;
            continue;
        };
        let ci = cursor(&mut req_at, me);
        // The request's packets: the first ones from the requester after its doorbell.
        let mut i = req_at[ci].1;
        while i < frames.len()
            && !(frames[i].src == me && frames[i].is_request() && frames[i].start_ns >= m.doorbell * CYCLE_NS)
        {
            i += 1;
        }
        let first = i;
        let mut last = i;
        let mut seen = 0;
        while i < frames.len() && seen < m.request_packets {
            if frames[i].src == me && frames[i].is_request() {
                seen += 1;
                last = i;
            }
            i += 1;
        }
        if first >= frames.len() || seen < m.request_packets {
            unmatched += 1;
            continue;
        }
        req_at[ci].1 = last + 1;
        let (f0, fl) = (frames[first], frames[last]);
        // The response: the first response packets from another address after the last request.
        let ri = cursor(&mut resp_at, me);
        let mut j = resp_at[ri].1.max(last + 1);
        while j < frames.len() && !(frames[j].src != me && frames[j].is_response()) {
            j += 1;
        }
        let r_first = j;
        let mut r_last = j;
        let mut got = 0;
        while j < frames.len() && got < m.response_packets {
            if frames[j].src != me && frames[j].is_response() {
                got += 1;
                r_last = j;
            }
            j += 1;
        }
        let tx_last = f0.tx_last_beat();
        let mut put = |k: usize, from: u64, to: u64| {
            if to >= from {
                hists[k].record(to - from);
            }
        };
        put(0, m.doorbell, tx_last + 1 - f0.beats());
        put(1, m.doorbell, tx_last);
        let req_rx = fl.rx_last_beat(link);
        put(2, fl.tx_last_beat(), req_rx);
        if let Some(d) = m.delivered {
            put(4, req_rx, d);
        }
        if r_first < frames.len() && got == m.response_packets {
            resp_at[ri].1 = r_last + 1;
            put(3, req_rx, frames[r_first].tx_last_beat());
            let resp_rx = frames[r_last].rx_last_beat(link);
            put(5, frames[r_last].tx_last_beat(), resp_rx);
            if let Some(c) = m.completed {
                put(6, resp_rx, c);
            }
        } else {
            unmatched += 1;
        }
    }
    Stages {
        stages: NAMES
            .iter()
            .zip(&hists)
            .filter(|(_, h)| !h.is_empty())
            .map(|(&(name, what), h)| Stage { name, what, cycles: h.summary() })
            .collect(),
        unmatched,
        dma_read_latency_cycles: dma.0,
        dma_write_latency_cycles: dma.1,
        wire_latency_ns: link.latency_ns,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 1);
    const B: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 2);

    fn f(start_ns: u64, len: u64, src: Ipv4Addr, opcode: u8) -> WireFrame {
        WireFrame { start_ns, len, src, opcode }
    }

    #[test]
    fn frame_timing_follows_the_wire_model() {
        let link = LinkConfig::default();
        // 142-byte WRITE_ONLY: 3 beats; on the wire (142 + 24) × 8 = 1328 bits = 13.28 ns; then
        // 500 ns: arrives at bit 400 × 100 + 1328 + 50 000 = 91 328, cycle ⌈91 328 / 400⌉ = 229,
        // last beat 231.
        let w = f(400, 142, A, opcode::RDMA_WRITE_ONLY);
        assert_eq!((w.tx_last_beat(), w.beats()), (99, 3));
        assert_eq!(w.rx_last_beat(&link), 231);
    }

    #[test]
    fn stages_of_a_read_and_a_write() {
        let link = LinkConfig::default();
        let frames = [
            // READ from A at doorbell cycle 50: request tlast 99, response tlast 300.
            f(400, 78, A, opcode::RDMA_READ_REQUEST),
            f(1204, 142, B, opcode::RDMA_READ_RESPONSE_ONLY),
            // WRITE from B at doorbell 1000, ACK from A.
            f(4400, 142, B, opcode::RDMA_WRITE_ONLY),
            f(5000, 62, A, opcode::ACKNOWLEDGE),
        ];
        let read = HostStamps {
            requester: Some(A),
            doorbell: 50,
            request_packets: 1,
            response_packets: 1,
            delivered: None,
            completed: Some(600),
        };
        let write = HostStamps {
            requester: Some(B),
            doorbell: 1000,
            request_packets: 1,
            response_packets: 1,
            delivered: Some(1250),
            completed: None,
        };
        let s = measure(&frames, &[read, write], &link, (64, 32));
        assert_eq!(s.unmatched, 0);
        let get = |n: &str| s.stages.iter().find(|x| x.name == n).map(|x| x.cycles);
        let db = get("doorbell_to_tx_last_beat").unwrap();
        assert_eq!((db.min, db.max), (49.0, 99.0));
        let resp = get("responder").unwrap();
        // READ: the 78-byte request (2 beats) arrives at bit 40 000 + (78+24)·8 + 50 000 =
        // 90 816, first RX beat ⌈90 816 / 400⌉ = 228, last 229; response tlast 1204/4 − 1 = 300:
        // 71. WRITE: last RX beat ⌈(440 000 + 1 328 + 50 000) / 400⌉ + 2 = 1231; ACK tlast 1249: 18.
        assert_eq!((resp.min, resp.max, resp.samples), (18.0, 71.0, 2));
        // The READ response (3 beats) lands at ⌈(120 400 + 1 328 + 50 000) / 400⌉ + 2 = 432;
        // CQE seen at 600. The WRITE's payload seen at 1250, 19 after its last RX beat.
        assert_eq!(get("response_to_cqe").map(|c| (c.min, c.samples)), Some((168.0, 1)));
        assert_eq!(get("rx_to_host_payload").map(|c| (c.min, c.samples)), Some((19.0, 1)));
        // A message whose frames are not there is counted, not measured.
        let lost = HostStamps { doorbell: 9000, ..read };
        assert_eq!(measure(&frames, &[lost], &link, (64, 32)).unmatched, 1);
    }
}
