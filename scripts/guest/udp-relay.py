#!/usr/bin/env python3
"""A two-port Ethernet wire between two QEMU `-netdev socket,udp=...` endpoints, with a pcap.

QEMU's UDP socket netdev sends each Ethernet frame as one datagram (no header) to its `udp=`
address from its `localaddr=` port. This relay listens on one port per side and forwards every
datagram to the other side's `localaddr=`, writing each frame to a pcap (LINKTYPE_ETHERNET,
microsecond timestamps) as it goes. It stops on SIGTERM/SIGINT and prints frame counts.

    udp-relay.py --a LISTEN:SEND --b LISTEN:SEND [--pcap FILE]

Guest A runs with `udp=127.0.0.1:<a LISTEN>,localaddr=127.0.0.1:<a SEND>`, guest B likewise.
"""

import argparse
import select
import signal
import socket
import struct
import sys
import time

LINKTYPE_ETHERNET = 1


def ports(text):
    listen, send = text.split(":")
    return int(listen), int(send)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--a", type=ports, required=True, help="LISTEN:SEND ports of side A")
    parser.add_argument("--b", type=ports, required=True, help="LISTEN:SEND ports of side B")
    parser.add_argument("--pcap", help="write every forwarded frame to this pcap file")
    args = parser.parse_args()

    sides = []
    for listen, send in (args.a, args.b):
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        sock.bind(("127.0.0.1", listen))
        sides.append((sock, ("127.0.0.1", send)))
    pcap = open(args.pcap, "wb") if args.pcap else None
    if pcap:
        # pcap global header: magic, v2.4, thiszone, sigfigs, snaplen, linktype.
        pcap.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, LINKTYPE_ETHERNET))

    stop = False

    def on_signal(_signum, _frame):
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    counts = [0, 0]
    by_fd = {sock.fileno(): i for i, (sock, _) in enumerate(sides)}
    while not stop:
        try:
            ready, _, _ = select.select([s for s, _ in sides], [], [], 0.5)
        except InterruptedError:
            continue
        for sock in ready:
            i = by_fd[sock.fileno()]
            frame = sock.recv(65536)
            out_sock, out_addr = sides[1 - i]
            out_sock.sendto(frame, out_addr)
            counts[i] += 1
            if pcap:
                now = time.time()
                pcap.write(struct.pack("<IIII", int(now), int(now % 1 * 1e6), len(frame), len(frame)))
                pcap.write(frame)
    if pcap:
        pcap.close()
    print(f"udp-relay: {counts[0]} frames A->B, {counts[1]} frames B->A", file=sys.stderr)


if __name__ == "__main__":
    main()
