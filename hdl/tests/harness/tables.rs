//! Entries of the NIC's context tables as the driver commits them through the context-command
//! port (`cmd_op`/`cmd_index`/`cmd_record`), built with `rnic_contract`'s field layouts: a
//! key-table entry, and the peer part of a QP context that requester and responder tests share.
#![allow(dead_code)]

use super::Rng;
use rnic_contract::{mr_entry as mr, qp_context as qp};

/// A key-table entry (`rnic_contract::mr_entry`), written at index `key >> 8`.
#[derive(Clone, Debug)]
pub struct Mr {
    pub valid: bool,
    pub access: u64,
    pub tag: u64,
    pub pd: u64,
    pub va: u64,
    pub length: u64,
    pub iova: u64,
}

impl Mr {
    /// The 64-byte record `WRITE_MR` commits.
    pub fn record(&self) -> [u8; 64] {
        let mut r = [0u8; 64];
        mr::VALID.put(&mut r, u64::from(self.valid));
        mr::ACCESS.put(&mut r, self.access);
        mr::TAG.put(&mut r, self.tag);
        mr::PD.put(&mut r, self.pd);
        mr::VA.put(&mut r, self.va);
        mr::LENGTH.put(&mut r, self.length);
        mr::IOVA.put(&mut r, self.iova);
        r
    }
}

/// Where a QP's packets go: the QP-context fields the NIC copies into every packet it sends for
/// the QP (requests and ACKs alike).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Peer {
    pub dest_qpn: u64,
    pub pkey: u64,
    pub udp_sport: u64,
    pub dest_ip: u64,
    pub dest_mac: u64,
}

impl Peer {
    /// A random peer (drawn in field order).
    pub fn random(rng: &mut Rng) -> Peer {
        Peer {
            dest_qpn: u64::from(rng.u32() & 0xFF_FFFF),
            pkey: u64::from(rng.u32() as u16),
            udp_sport: u64::from(rng.u32() as u16),
            dest_ip: u64::from(rng.u32()),
            dest_mac: rng.next_u64() & 0xFFFF_FFFF_FFFF,
        }
    }

    /// Puts the peer's fields in QP-context record `r` (`WRITE_QP`).
    pub fn put(&self, r: &mut [u8]) {
        qp::DEST_QPN.put(r, self.dest_qpn);
        qp::PKEY.put(r, self.pkey);
        qp::UDP_SPORT.put(r, self.udp_sport);
        qp::DEST_IP.put(r, self.dest_ip);
        qp::DEST_MAC.put(r, self.dest_mac);
    }
}
