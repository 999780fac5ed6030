#!/usr/bin/env python3
"""RoCEv2 ICRC oracle built on scapy's own RoCE layer (scapy.contrib.roce, scapy 2.6.1).

Used by rnic-firmware-tests (src/oracle.rs) as a check that does not share code with our codec.

    scapy_icrc.py check FILE.pcap
        For each frame print one JSON line:
        {"frame": n, "icrc_ok": bool, "opcode": int|null, "dqpn": int|null, "psn": int|null,
         "icrc_wire": hex|null, "icrc_scapy": hex|null, "error": str|null}
        icrc_ok is true only if scapy's BTH.compute_icrc() equals the 4 bytes on the wire.

    scapy_icrc.py build FILE.pcap
        Write a pcap of RoCEv2 frames built by scapy (scapy computes every ICRC) and print one
        JSON line per frame saying what was built, for the Rust side to compare with its parse.

How scapy computes the ICRC: BTH.icrc is an FCSField, a trailer appended at the end of the
packet. When it is None at build time, BTH.post_build calls compute_icrc(), which copies the IP
layer under a Raw(8 x 0xff) pseudo-LRH, sets IP tos/ttl/chksum, UDP chksum and BTH
fecn/becn/resv6 to all ones, rebuilds, runs zlib.crc32 over everything but the last 4 bytes
and packs the result least-significant byte first. On dissection the field holds the 4 wire
bytes read big-endian (so it is the byte-swapped CRC value).

Caveat handled here: compute_icrc() covers BTH.payload, and on a dissected frame that payload
includes a trailing Padding layer (Ethernet padding after the IPv4 Total Length, as on frames
padded to 60 bytes). Scapy then computes a wrong ICRC, so "check" trims each IPv4 frame to the
IPv4 Total Length before dissecting.
"""

import json
import struct
import sys

from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw
from scapy.utils import PcapReader, wrpcap
from scapy.contrib.roce import AETH, BTH, cnp

ETH_LEN = 14


def trim_ethernet_padding(data):
    """Cut an Ethernet/IPv4 frame at the IPv4 Total Length (see the module docstring)."""
    if len(data) >= ETH_LEN + 4 and data[12:14] == b"\x08\x00":
        total_len = struct.unpack("!H", data[ETH_LEN + 2:ETH_LEN + 4])[0]
        if ETH_LEN + total_len <= len(data):
            return data[:ETH_LEN + total_len]
    return data


def check(path):
    with PcapReader(path) as reader:
        for n, pkt in enumerate(reader, start=1):
            record = {"frame": n, "icrc_ok": False, "opcode": None, "dqpn": None,
                      "psn": None, "icrc_wire": None, "icrc_scapy": None, "error": None}
            try:
                p = Ether(trim_ethernet_padding(bytes(pkt)))
                if BTH not in p:
                    record["error"] = "scapy found no BTH layer (not UDP port 4791?)"
                else:
                    bth = p[BTH]
                    record["opcode"] = bth.opcode
                    record["dqpn"] = bth.dqpn
                    record["psn"] = bth.psn
                    if bth.icrc is None:
                        record["error"] = "frame too short for an ICRC"
                    else:
                        wire = struct.pack("!I", bth.icrc)
                        computed = bth.compute_icrc(b"")
                        record["icrc_wire"] = wire.hex()
                        record["icrc_scapy"] = computed.hex()
                        record["icrc_ok"] = wire == computed
            except Exception as e:  # a malformed frame is a result, not a crash
                record["error"] = "{}: {}".format(type(e).__name__, e)
            print(json.dumps(record), flush=True)


def base(udp_chksum=0, **ip):
    ip_fields = dict(src="10.0.0.1", dst="10.0.0.2", flags="DF", ttl=64)
    ip_fields.update(ip)
    return (Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
            / IP(**ip_fields)
            / UDP(sport=0xC000 | 0x12, dport=4791, chksum=udp_chksum))


def reth(va, rkey, length):
    return struct.pack("!QII", va, rkey, length)


def pattern(n, seed):
    return bytes((seed + 7 * i) & 0xFF for i in range(n))


def build(path):
    """Each case: (description, packet, payload, reth, aeth, immdt)."""
    cases = []

    def add(note, bth_fields, payload=b"", reth_f=None, aeth_f=None, immdt=None,
            scapy_aeth=False, **base_args):
        ext = b""
        if reth_f is not None:
            ext += reth(*reth_f)
        if aeth_f is not None and not scapy_aeth:
            ext += struct.pack("!I", (aeth_f[0] << 24) | aeth_f[1])
        if immdt is not None:
            ext += struct.pack("!I", immdt)
        pad = (-len(payload)) % 4
        bth = BTH(padcount=pad, **bth_fields)
        if scapy_aeth:
            pkt = base(**base_args) / bth / AETH(syndrome=aeth_f[0], msn=aeth_f[1])
        else:
            pkt = base(**base_args) / bth
        body = ext + payload + b"\x00" * pad
        if body:
            pkt = pkt / Raw(body)
        cases.append((note, pkt, payload, reth_f, aeth_f, immdt))

    add("RC SEND_ONLY, empty", dict(opcode=0x04, dqpn=0x12, psn=0))
    add("RC SEND_ONLY, 1 byte + 3 pad", dict(opcode=0x04, dqpn=0x12, psn=1, ackreq=1),
        payload=b"\xa5")
    add("RC SEND_FIRST, 256 bytes", dict(opcode=0x00, dqpn=0x12, psn=2),
        payload=pattern(256, 1))
    add("RC SEND_LAST_WITH_IMMEDIATE, 5 bytes", dict(opcode=0x03, dqpn=0x12, psn=3, solicited=1),
        payload=pattern(5, 2), immdt=0xCAFEF00D)
    add("RC RDMA_WRITE_ONLY, 3 bytes + 1 pad", dict(opcode=0x0A, dqpn=0xABCDEF, psn=0xFFFFFF),
        payload=b"xyz", reth_f=(0x7F0000001000, 0x1234, 3))
    add("RC RDMA_WRITE_ONLY_WITH_IMMEDIATE, 4096 bytes", dict(opcode=0x0B, dqpn=0x12, psn=5),
        payload=pattern(4096, 3), reth_f=(0x1000, 0xDEADBEEF, 4096), immdt=0x01020304)
    add("RC RDMA_READ_REQUEST", dict(opcode=0x0C, dqpn=0x12, psn=6, pkey=0x8001),
        reth_f=(0xFFFFFFFFFFFF0000, 7, 65536))
    add("RC RDMA_READ_RESPONSE_ONLY, 5 bytes", dict(opcode=0x10, dqpn=0x12, psn=6),
        payload=pattern(5, 4), aeth_f=(0x1F, 9))
    add("RC ACKNOWLEDGE (scapy AETH layer), NAK PSN sequence error",
        dict(opcode=0x11, dqpn=0x34, psn=7), aeth_f=(0x60, 0xFFFFFF), scapy_aeth=True)
    add("UC SEND_LAST_WITH_IMMEDIATE", dict(opcode=0x23, dqpn=0x12, psn=8),
        payload=pattern(64, 5), immdt=0)
    # Fields the ICRC must not cover: ECN CE, TTL 1, FECN/BECN, a real UDP checksum.
    add("RC RDMA_WRITE_MIDDLE, variant fields set", dict(opcode=0x07, dqpn=0x12, psn=9, fecn=1,
        becn=1, migreq=1), payload=pattern(256, 6), tos=0x03, ttl=1, udp_chksum=None)

    packets = []
    for n, (note, pkt, payload, reth_f, aeth_f, immdt) in enumerate(cases, start=1):
        data = bytes(pkt)  # scapy computes lengths, checksums and the ICRC here
        p = Ether(data)
        b = p[BTH]
        print(json.dumps({
            "frame": n, "note": note, "opcode": b.opcode, "dqpn": b.dqpn, "psn": b.psn,
            "pkey": b.pkey, "se": b.solicited, "migreq": b.migreq, "padcount": b.padcount,
            "ackreq": b.ackreq, "fecn": b.fecn, "becn": b.becn,
            "ecn": p[IP].tos & 3, "ttl": p[IP].ttl, "udp_chksum": p[UDP].chksum,
            "reth": None if reth_f is None else
            {"va": reth_f[0], "rkey": reth_f[1], "dma_len": reth_f[2]},
            "aeth": None if aeth_f is None else {"syndrome": aeth_f[0], "msn": aeth_f[1]},
            "immdt": immdt, "payload": payload.hex(), "icrc": data[-4:].hex(),
        }), flush=True)
        out = Ether(data)
        out.time = n / 1e6
        packets.append(out)

    # A CNP (opcode 0x81), which our codec does not model but whose ICRC it can check.
    n = len(cases) + 1
    data = bytes(base() / cnp(0x12))
    print(json.dumps({"frame": n, "note": "CNP", "opcode": 0x81, "dqpn": 0x12, "psn": 0,
                      "icrc": data[-4:].hex()}), flush=True)
    out = Ether(data)
    out.time = n / 1e6
    packets.append(out)
    wrpcap(path, packets)


def main(argv):
    if len(argv) != 3 or argv[1] not in ("check", "build"):
        print("usage: scapy_icrc.py check|build FILE.pcap", file=sys.stderr)
        return 2
    if argv[1] == "check":
        check(argv[2])
    else:
        build(argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
