//! The RoCEv2 Invariant CRC (IBTA Vol 1 Annex A17.4.2; the InfiniBand ICRC of §7.8.1 over a
//! pseudo-header).
//!
//! CRC-32 as in Ethernet and zlib (reflected polynomial 0xEDB88320, initial value all ones,
//! final complement) over, in order:
//!
//! 1. 8 bytes of 0xFF standing in for the InfiniBand LRH;
//! 2. the IPv4 header with TOS (DSCP/ECN), TTL and header checksum set to all ones;
//! 3. the UDP header with its checksum set to all ones;
//! 4. the BTH with byte 4 (FECN, BECN, reserved) set to all ones;
//! 5. every following byte up to the ICRC: extension headers, payload and pad.
//!
//! The Ethernet header and FCS are not covered. The 32-bit result is appended least-significant
//! byte first. IPv4 Total Length and UDP Length must already count the 4 ICRC bytes.

use super::{bth, check_len, udp, Error, Result};

/// Length of the ICRC trailer, in bytes.
pub const ICRC_LEN: usize = 4;

/// Offsets, in the IPv4 header, of the bytes replaced by ones.
const IPV4_TOS: usize = 1;
const IPV4_TTL: usize = 8;
const IPV4_CHECKSUM: core::ops::Range<usize> = 10..12;
/// Offsets, in the UDP header, of the bytes replaced by ones.
const UDP_CHECKSUM: core::ops::Range<usize> = 6..8;
/// Offset, in the BTH, of the byte replaced by ones.
const BTH_FECN_BECN: usize = 4;
/// Longest masked prefix: a 60-byte IPv4 header (IHL 15), UDP and BTH.
const MAX_PREFIX: usize = 60 + udp::HEADER_LEN + bth::HEADER_LEN;

/// Computes the ICRC of a RoCEv2-over-IPv4 packet.
///
/// `covered` is the IPv4 packet from the first byte of its header up to, not including, the
/// ICRC. The IPv4 IHL locates the UDP header (options are covered unchanged).
///
/// # Errors
/// [`Error::Ipv4HeaderLen`] if the IHL is below 5, [`Error::Truncated`] if `covered` does not
/// reach the end of the BTH.
pub fn compute(covered: &[u8]) -> Result<u32> {
    check_len("IPv4 header", covered, 1)?;
    let ip_header_len = usize::from(covered[0] & 0x0f) * 4;
    if ip_header_len < 20 {
        return Err(Error::Ipv4HeaderLen(ip_header_len));
    }
    let prefix_len = ip_header_len + udp::HEADER_LEN + bth::HEADER_LEN;
    check_len("IPv4/UDP/BTH headers", covered, prefix_len)?;

    let mut prefix = [0u8; MAX_PREFIX];
    let prefix = &mut prefix[..prefix_len];
    prefix.copy_from_slice(&covered[..prefix_len]);
    prefix[IPV4_TOS] = 0xff;
    prefix[IPV4_TTL] = 0xff;
    prefix[IPV4_CHECKSUM].fill(0xff);
    let udp_start = ip_header_len;
    prefix[udp_start + UDP_CHECKSUM.start..udp_start + UDP_CHECKSUM.end].fill(0xff);
    prefix[udp_start + udp::HEADER_LEN + BTH_FECN_BECN] = 0xff;

    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&[0xff; 8]);
    hasher.update(prefix);
    hasher.update(&covered[prefix_len..]);
    Ok(hasher.finalize())
}

/// Reads the ICRC stored in the last 4 bytes of `ip_packet` (least-significant byte first).
///
/// # Errors
/// [`Error::Truncated`] if `ip_packet` is shorter than 4 bytes.
pub fn stored(ip_packet: &[u8]) -> Result<u32> {
    check_len("ICRC", ip_packet, ICRC_LEN)?;
    let t = &ip_packet[ip_packet.len() - ICRC_LEN..];
    Ok(u32::from_le_bytes([t[0], t[1], t[2], t[3]]))
}

/// Checks the ICRC of `ip_packet`, a whole IPv4 packet (Total Length bytes) ending in its
/// ICRC.
///
/// # Errors
/// [`Error::Icrc`] if it does not match, or the errors of [`compute`].
pub fn check(ip_packet: &[u8]) -> Result<()> {
    let found = stored(ip_packet)?;
    let computed = compute(&ip_packet[..ip_packet.len() - ICRC_LEN])?;
    if found == computed {
        Ok(())
    } else {
        Err(Error::Icrc { found, computed })
    }
}

/// Computes the ICRC of `ip_packet` (a whole IPv4 packet whose last 4 bytes are reserved for
/// the ICRC) and stores it there, least-significant byte first.
///
/// # Errors
/// Those of [`compute`] and [`stored`].
pub fn fill(ip_packet: &mut [u8]) -> Result<()> {
    check_len("ICRC", ip_packet, ICRC_LEN)?;
    let end = ip_packet.len() - ICRC_LEN;
    let crc = compute(&ip_packet[..end])?;
    ip_packet[end..].copy_from_slice(&crc.to_le_bytes());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    // IPv4 packet of an RC ACKNOWLEDGE built by scapy 2.6.1, whose RoCE layer computed the ICRC
    // (last 4 bytes).
    static ACK: [u8; 48] = [
        0x45, 0x02, 0x00, 0x30, 0x12, 0x34, 0x40, 0x00, 0x40, 0x11, 0x14, 0x85, 0x0a, 0x00, 0x00, 0x01, 0x0a, 0x00,
        0x00, 0x02, 0xc0, 0x01, 0x12, 0xb7, 0x00, 0x1c, 0x00, 0x00, 0x11, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x12,
        0x00, 0x00, 0x0a, 0xbc, 0x1f, 0x00, 0x00, 0x05, 0x02, 0x20, 0xf0, 0x25,
    ];

    // IPv4 packet of an RC RDMA_WRITE_ONLY (RETH, 1 payload byte 0xa5, 3 pad bytes) by scapy.
    static WRITE_ONLY: [u8; 64] = [
        0x45, 0x02, 0x00, 0x40, 0x12, 0x34, 0x40, 0x00, 0x40, 0x11, 0x14, 0x75, 0x0a, 0x00, 0x00, 0x01, 0x0a, 0x00,
        0x00, 0x02, 0xc0, 0x01, 0x12, 0xb7, 0x00, 0x2c, 0x00, 0x00, 0x0a, 0x30, 0xff, 0xff, 0x00, 0x00, 0x00, 0x12,
        0x80, 0x00, 0x0a, 0xbc, 0x00, 0x00, 0x00, 0x00, 0xde, 0xad, 0xbe, 0xef, 0x12, 0x34, 0x56, 0x78, 0x00, 0x00,
        0x00, 0x01, 0xa5, 0x00, 0x00, 0x00, 0xe3, 0x78, 0x9f, 0x45,
    ];

    #[test]
    fn matches_scapy() {
        assert_eq!(stored(&ACK), Ok(0x25f0_2002));
        assert_eq!(compute(&ACK[..44]), Ok(0x25f0_2002));
        assert_eq!(check(&ACK), Ok(()));
        assert_eq!(check(&WRITE_ONLY), Ok(()));
    }

    #[test]
    fn fill_writes_lsb_first() {
        let mut p = WRITE_ONLY;
        p[60..].fill(0);
        fill(&mut p).unwrap();
        assert_eq!(p, WRITE_ONLY);
    }

    #[test]
    fn variant_fields_are_masked() {
        // TOS, TTL, IP checksum, UDP checksum and BTH byte 4 may change in flight.
        for (offset, value) in [(1, 0x03), (8, 0x01), (10, 0x00), (11, 0x00), (26, 0x12), (27, 0x34), (32, 0xc0)] {
            let mut p = ACK;
            p[offset] = value;
            assert_eq!(check(&p), Ok(()), "byte {offset}");
        }
    }

    #[test]
    fn invariant_fields_are_covered() {
        let masked = [1, 8, 10, 11, 26, 27, 32];
        for offset in (0..44).filter(|o| !masked.contains(o)) {
            for bit in 0..8 {
                let mut p = ACK;
                p[offset] ^= 1 << bit;
                let result = check(&p);
                if offset == 0 {
                    // Version/IHL: the header moves, so the CRC may not even be computable.
                    assert!(result.is_err(), "byte 0 bit {bit}");
                } else {
                    assert!(matches!(result, Err(Error::Icrc { found: 0x25f0_2002, .. })), "byte {offset} bit {bit}");
                }
            }
        }
        let mut p = ACK;
        p[47] ^= 0x80;
        assert!(matches!(check(&p), Err(Error::Icrc { .. })));
    }

    #[test]
    fn short_inputs() {
        assert!(matches!(compute(&[]), Err(Error::Truncated { .. })));
        assert!(matches!(compute(&ACK[..39]), Err(Error::Truncated { .. })));
        assert_eq!(compute(&[0x44; 40]), Err(Error::Ipv4HeaderLen(16)));
        assert!(matches!(check(&ACK[..3]), Err(Error::Truncated { .. })));
        assert!(matches!(fill(&mut [0u8; 3]), Err(Error::Truncated { .. })));
    }
}
