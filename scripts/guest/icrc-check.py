#!/usr/bin/env python3
"""Checks the ICRC of every RoCEv2 packet (IPv4 or IPv6, UDP port 4791) in a pcap.

The ICRC (IBTA Vol 1 Annex A17.3.3, 7.8.1) is CRC-32 (the Ethernet/zlib polynomial) over 64 bits
of ones, then the IP header with the variant fields set to ones (IPv4: TOS, TTL, header checksum;
IPv6: traffic class, flow label, hop limit), the UDP header with its checksum set to ones, the
BTH with its reserved byte (resv8a) set to ones, and the rest of the packet up to the ICRC. It is
sent as the last 4 bytes, least significant byte first. tshark (4.0) does not verify it.

    icrc-check.py FILE.pcap      prints "<RoCEv2 packets> <bad ICRC>", exits 1 if any is bad
"""

import struct
import sys
import zlib


def frames(path):
    """Yields the frames of a classic little- or big-endian pcap file."""
    with open(path, "rb") as f:
        head = f.read(24)
        endian = "<" if head[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
        while True:
            rec = f.read(16)
            if len(rec) < 16:
                return
            _, _, incl, _ = struct.unpack(endian + "IIII", rec)
            yield f.read(incl)


def roce_icrc_ok(frame):
    """None if the frame is not RoCEv2, else whether its ICRC is right."""
    if len(frame) < 14:
        return None
    ethertype = struct.unpack(">H", frame[12:14])[0]
    ip = bytearray(frame[14:])
    if ethertype == 0x0800 and len(ip) >= 20 and ip[9] == 17:
        ihl = (ip[0] & 0x0F) * 4
        total = struct.unpack(">H", ip[2:4])[0]
        ip = ip[:total]
        ip[1] = 0xFF  # TOS
        ip[8] = 0xFF  # TTL
        ip[10:12] = b"\xff\xff"  # header checksum
    elif ethertype == 0x86DD and len(ip) >= 40 and ip[6] == 17:
        ihl = 40
        ip = ip[: 40 + struct.unpack(">H", ip[4:6])[0]]
        ip[0] |= 0x0F  # traffic class (low nibble of byte 0, high nibble of byte 1)
        ip[1:4] = b"\xff\xff\xff"  # traffic class rest + flow label
        ip[7] = 0xFF  # hop limit
    else:
        return None
    udp = ihl
    if len(ip) < udp + 8 + 12 + 4 or struct.unpack(">H", ip[udp + 2 : udp + 4])[0] != 4791:
        return None
    ip[udp + 6 : udp + 8] = b"\xff\xff"  # UDP checksum
    ip[udp + 8 + 4] = 0xFF  # BTH resv8a
    body, icrc = bytes(ip[:-4]), ip[-4:]
    return zlib.crc32(b"\xff" * 8 + body) == struct.unpack("<I", icrc)[0]


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    total = bad = 0
    for frame in frames(sys.argv[1]):
        ok = roce_icrc_ok(frame)
        if ok is None:
            continue
        total += 1
        bad += not ok
    print(total, bad)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
