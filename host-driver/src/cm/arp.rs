//! Address resolution for the CM (`rdma_resolve_addr(3)`): the neighbor table and ARP
//! (RFC 826) over the port's raw Ethernet path ([`crate::raw`]).
//!
//! The CM's port agent asks the table for a peer's MAC: static entries first
//! ([`Neighbors::add`]), then what ARP learned. An address in neither starts a resolution
//! ([`Neighbors::start`]): a broadcast ARP request every [`ARP_RETRY`] until a reply comes
//! or the caller's timeout passes. The agent also answers ARP requests for the port's own
//! address, so a Linux host can reach the port, and learns every sender that asks for it (the
//! RFC 826 merge), so the passive side of a connection knows its client's MAC before the
//! client's REQ arrives. ARP runs in wall time (the peer may be a real host).
//!
//! On a simulated NIC (the in-process world, `rnic sim serve`), an address that ARP could not
//! resolve falls back on the simulator's MAC rule `02:00:00:00:00:<last octet>`
//! ([`PortAddr::sim_mac_of`]): a simulated peer whose driver is not running yet does not
//! answer ARP, where a Linux host's kernel would.
use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use smoltcp::wire::{ArpOperation, ArpPacket, ArpRepr, EthernetAddress, EthernetFrame, EthernetProtocol, EthernetRepr};

use crate::context::{Context, MacAddr, PortAddr};
use crate::error::Result;

/// Time between two ARP requests for the same address (Linux: `retrans_time_ms`, 1 s; shorter
/// here because the simulated peers answer within milliseconds).
pub const ARP_RETRY: Duration = Duration::from_millis(200);
/// How often the agent looks at the raw receive queue when nothing is being resolved (one
/// MMIO read each time): the delay before it answers another host's ARP request.
pub const RAW_POLL: Duration = Duration::from_millis(10);
/// Frames taken from the raw queue per look (its size: [`rnic_contract::regs::raw::RX_SLOTS`]).
const FRAMES_PER_POLL: usize = rnic_contract::regs::raw::RX_SLOTS as usize;

/// What ARP counted on the port.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ArpStats {
    /// ARP requests sent (resolutions and their retries).
    pub requests_sent: u64,
    /// ARP replies sent (answers to requests for the port's address).
    pub replies_sent: u64,
    /// ARP packets received and understood.
    pub received: u64,
    /// Raw frames that were not ARP for IPv4 over Ethernet (ignored).
    pub ignored: u64,
    /// Resolutions that ended without an answer.
    pub timeouts: u64,
}

#[derive(Clone, Copy, Debug)]
struct Pending {
    deadline: Instant,
    next_request: Instant,
}

/// How the CM's addresses map to MACs: static entries, ARP, and on a simulated NIC the
/// simulator's rule (module docs).
#[derive(Clone, Debug)]
pub struct Neighbors {
    table: HashMap<Ipv4Addr, MacAddr>,
    learned: HashMap<Ipv4Addr, MacAddr>,
    /// Apply the simulator's rule to addresses ARP did not resolve.
    sim_rule: bool,
    pending: HashMap<Ipv4Addr, Pending>,
    last_poll: Option<Instant>,
    stats: ArpStats,
}

impl Neighbors {
    /// An empty table; `simulated`: fall back on the simulator's MAC rule.
    pub fn new(simulated: bool) -> Self {
        Self {
            table: HashMap::new(),
            learned: HashMap::new(),
            sim_rule: simulated,
            pending: HashMap::new(),
            last_poll: None,
            stats: ArpStats::default(),
        }
    }

    /// Adds (or replaces) a static neighbor entry (`ip neigh add`); it wins over ARP.
    pub fn add(&mut self, ip: Ipv4Addr, mac: MacAddr) {
        self.table.insert(ip, mac);
    }

    /// The MAC of `ip` known now: a static entry, else one ARP learned.
    pub fn lookup(&self, ip: Ipv4Addr) -> Option<MacAddr> {
        self.table.get(&ip).or_else(|| self.learned.get(&ip)).copied()
    }

    /// [`lookup`](Self::lookup), else on a simulated NIC the simulator's rule for a unicast
    /// address whose last octet is 1…254; `None` otherwise. For the agent's own answers (a REP
    /// to a client it has not heard ARP from).
    pub fn resolve(&self, ip: Ipv4Addr) -> Option<MacAddr> {
        self.lookup(ip).or_else(|| self.sim_fallback(ip))
    }

    /// The simulator's rule for `ip`, on a simulated NIC and for a unicast address whose last
    /// octet is 1…254.
    pub fn sim_fallback(&self, ip: Ipv4Addr) -> Option<MacAddr> {
        let last = ip.octets()[3];
        (self.sim_rule && is_unicast(ip) && (1..=254).contains(&last)).then(|| PortAddr::sim_mac_of(ip))
    }

    /// The counters of ARP on this port.
    pub fn stats(&self) -> ArpStats {
        self.stats
    }

    /// Starts resolving `ip` by ARP (a request at the next [`service`](Self::service)), to end
    /// by `timeout` from now; an address already being resolved keeps the later deadline.
    pub fn start(&mut self, ip: Ipv4Addr, timeout: Duration) {
        let now = Instant::now();
        let p = self.pending.entry(ip).or_insert(Pending { deadline: now + timeout, next_request: now });
        p.deadline = p.deadline.max(now + timeout);
    }

    /// True while `ip` is being resolved.
    pub fn is_resolving(&self, ip: Ipv4Addr) -> bool {
        self.pending.contains_key(&ip)
    }

    /// One round of ARP on `ctx`'s port (address `port`): reads the raw receive queue (every
    /// time while a resolution runs or when `force`, else at most every [`RAW_POLL`]),
    /// answers requests for the port's address, learns senders, and sends the requests that
    /// are due. Returns the resolutions that ended: `(ip, Some(mac))` answered, `(ip, None)`
    /// timed out.
    ///
    /// # Errors
    /// Backend MMIO errors.
    pub fn service(&mut self, ctx: &Context, port: PortAddr, force: bool) -> Result<Vec<(Ipv4Addr, Option<MacAddr>)>> {
        let now = Instant::now();
        let due = self.last_poll.is_none_or(|t| now.duration_since(t) >= RAW_POLL);
        if force || due || !self.pending.is_empty() {
            self.last_poll = Some(now);
            for _ in 0..FRAMES_PER_POLL {
                let Some(frame) = ctx.recv_raw_frame()? else { break };
                self.receive(ctx, port, &frame)?;
            }
        }
        let mut ended = Vec::new();
        let mut ips: Vec<Ipv4Addr> = self.pending.keys().copied().collect();
        ips.sort();
        for ip in ips {
            if let Some(mac) = self.lookup(ip) {
                self.pending.remove(&ip);
                ended.push((ip, Some(mac)));
                continue;
            }
            let p = self.pending.get_mut(&ip).expect("listed");
            if now >= p.deadline {
                self.pending.remove(&ip);
                self.stats.timeouts += 1;
                ended.push((ip, None));
            } else if now >= p.next_request {
                p.next_request = now + ARP_RETRY;
                let req = ArpRepr::EthernetIpv4 {
                    operation: ArpOperation::Request,
                    source_hardware_addr: EthernetAddress(port.mac.0),
                    source_protocol_addr: port.ip,
                    target_hardware_addr: EthernetAddress([0; 6]),
                    target_protocol_addr: ip,
                };
                ctx.send_raw_frame(&arp_frame(EthernetAddress::BROADCAST, &req))?;
                self.stats.requests_sent += 1;
            }
        }
        Ok(ended)
    }

    /// One raw frame: an ARP request or reply is learned from and answered; anything else is
    /// counted and ignored.
    fn receive(&mut self, ctx: &Context, port: PortAddr, frame: &[u8]) -> Result<()> {
        let Some(repr) = parse_arp(frame) else {
            self.stats.ignored += 1;
            return Ok(());
        };
        self.stats.received += 1;
        let ArpRepr::EthernetIpv4 {
            operation, source_hardware_addr, source_protocol_addr, target_protocol_addr, ..
        } = repr
        else {
            return Ok(());
        };
        let sender = MacAddr(source_hardware_addr.0);
        // RFC 826: update a sender we know; add it if we are the target.
        let for_us = target_protocol_addr == port.ip;
        let known =
            self.learned.contains_key(&source_protocol_addr) || self.pending.contains_key(&source_protocol_addr);
        if (for_us || known) && is_unicast(source_protocol_addr) && source_hardware_addr.is_unicast() {
            self.learned.insert(source_protocol_addr, sender);
        }
        if for_us && operation == ArpOperation::Request {
            let reply = ArpRepr::EthernetIpv4 {
                operation: ArpOperation::Reply,
                source_hardware_addr: EthernetAddress(port.mac.0),
                source_protocol_addr: port.ip,
                target_hardware_addr: source_hardware_addr,
                target_protocol_addr: source_protocol_addr,
            };
            ctx.send_raw_frame(&arp_frame(source_hardware_addr, &reply))?;
            self.stats.replies_sent += 1;
        }
        Ok(())
    }
}

fn is_unicast(ip: Ipv4Addr) -> bool {
    !(ip.is_unspecified() || ip.is_broadcast() || ip.is_multicast())
}

/// The ARP packet of an Ethernet frame carrying one (EtherType 0x0806, IPv4 over Ethernet).
pub fn parse_arp(frame: &[u8]) -> Option<ArpRepr> {
    let eth = EthernetFrame::new_checked(frame).ok()?;
    if eth.ethertype() != EthernetProtocol::Arp {
        return None;
    }
    ArpRepr::parse(&ArpPacket::new_checked(eth.payload()).ok()?).ok()
}

/// An Ethernet frame (42 bytes, unpadded) carrying `arp`, sent to `dst`.
pub fn arp_frame(dst: EthernetAddress, arp: &ArpRepr) -> Vec<u8> {
    let ArpRepr::EthernetIpv4 { source_hardware_addr, .. } = *arp else { unreachable!("one ARP kind") };
    let eth = EthernetRepr { src_addr: source_hardware_addr, dst_addr: dst, ethertype: EthernetProtocol::Arp };
    let mut buf = vec![0u8; eth.buffer_len() + arp.buffer_len()];
    let mut frame = EthernetFrame::new_unchecked(&mut buf[..]);
    eth.emit(&mut frame);
    arp.emit(&mut ArpPacket::new_unchecked(frame.payload_mut()));
    buf
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A request as Linux sends it (literal bytes: who has 192.0.2.1? tell 192.0.2.2), parsed,
    /// and our request for the same address emitted byte for byte.
    #[test]
    fn arp_frames_parse_and_emit() {
        let linux: [u8; 42] = [
            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x52, 0x54, 0x00, 0x77, 0x00, 0x02, 0x08, 0x06, // Ethernet
            0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x01, // Ethernet/IPv4, request
            0x52, 0x54, 0x00, 0x77, 0x00, 0x02, 192, 0, 2, 2, // sender
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 192, 0, 2, 1, // target
        ];
        let r = parse_arp(&linux).expect("an ARP request");
        let ArpRepr::EthernetIpv4 { operation, source_protocol_addr, target_protocol_addr, .. } = r else { panic!() };
        assert_eq!(operation, ArpOperation::Request);
        assert_eq!(
            (source_protocol_addr, target_protocol_addr),
            (Ipv4Addr::new(192, 0, 2, 2), Ipv4Addr::new(192, 0, 2, 1))
        );
        assert_eq!(arp_frame(EthernetAddress::BROADCAST, &r), linux.to_vec());
        let mut not_arp = linux;
        not_arp[13] = 0x00;
        assert!(parse_arp(&not_arp).is_none());
        assert!(parse_arp(&linux[..30]).is_none());
    }

    #[test]
    fn static_entries_win_and_the_sim_rule_is_a_fallback() {
        let ip = Ipv4Addr::new(192, 0, 2, 7);
        let mut n = Neighbors::new(true);
        assert_eq!(n.lookup(ip), None);
        assert_eq!(n.resolve(ip), Some(MacAddr([2, 0, 0, 0, 0, 7])));
        n.learned.insert(ip, MacAddr([2, 0, 0, 0, 9, 9]));
        assert_eq!(n.resolve(ip), Some(MacAddr([2, 0, 0, 0, 9, 9])));
        n.add(ip, MacAddr([2, 0, 0, 0, 1, 1]));
        assert_eq!(n.lookup(ip), Some(MacAddr([2, 0, 0, 0, 1, 1])));
        assert_eq!(Neighbors::new(false).resolve(ip), None);
        assert_eq!(n.sim_fallback(Ipv4Addr::new(224, 0, 0, 1)), None);
    }
}
