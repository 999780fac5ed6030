#!/usr/bin/env bash
# Installs what rnic's build and tests need on Debian, as root, idempotently, and says what it did:
# Verilator (>= 5.006), g++, make, yosys, tshark, rdma-core's libibverbs-dev, ibverbs-utils,
# librdmacm-dev, rdmacm-utils and perftest (librnic's tests), and python3 with scapy in a project-local
# virtualenv (.venv). Safe to run repeatedly: it installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'setup: %s\n' "$*"; }

need_apt=()
command -v verilator >/dev/null || need_apt+=(verilator)
command -v g++ >/dev/null || need_apt+=(g++)
command -v make >/dev/null || need_apt+=(make)
command -v yosys >/dev/null || need_apt+=(yosys)
command -v tshark >/dev/null || need_apt+=(tshark)
command -v python3 >/dev/null || need_apt+=(python3)
python3 -c 'import venv, ensurepip' 2>/dev/null || need_apt+=(python3-venv)
# rdma-core 44 for librnic's tests: the header its layouts are checked against, the library
# its symbol versions and strings are compared with, and the unmodified programs it runs.
[ -f /usr/include/infiniband/verbs.h ] || need_apt+=(libibverbs-dev)
command -v ibv_devinfo >/dev/null || need_apt+=(ibverbs-utils)
# ss(8): examples.sh waits for a server's TCP port before rdma-core's one-shot client.
command -v ss >/dev/null || need_apt+=(iproute2)
# librdmacm's header (layouts of librnic's librdmacm.so.1) and rping (run unmodified on it).
[ -f /usr/include/rdma/rdma_cma.h ] || need_apt+=(librdmacm-dev)
command -v rping >/dev/null || need_apt+=(rdmacm-utils)
command -v ib_write_bw >/dev/null || need_apt+=(perftest)
command -v objdump >/dev/null || need_apt+=(binutils)

if [ ${#need_apt[@]} -gt 0 ]; then
  say "installing with apt: ${need_apt[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # tshark asks whether non-root users may capture; answer no without a prompt.
  echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections 2>/dev/null || true
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
else
  say "apt packages present (verilator, g++, make, yosys, tshark, python3-venv, libibverbs-dev, ibverbs-utils, librdmacm-dev, rdmacm-utils, perftest)"
fi

vver=$(verilator --version | awk '{print $2}')
if [ "$(printf '%s\n5.006\n' "$vver" | sort -V | head -n1)" != "5.006" ]; then
  echo "setup: Verilator $vver is older than 5.006; rnic needs 5.006 or newer" >&2
  exit 1
fi
say "verilator $vver, $(yosys -V | awk '{print $1, $2}'), $(tshark --version 2>/dev/null | head -n1 | awk '{print $1, $2, $3}')"

if [ ! -x .venv/bin/python ] || ! .venv/bin/python -c 'import scapy' 2>/dev/null; then
  say "creating .venv with scapy"
  python3 -m venv .venv
  .venv/bin/pip install -q --disable-pip-version-check 'scapy==2.6.1'
else
  say ".venv has scapy $(.venv/bin/python -c 'import scapy; print(scapy.VERSION)')"
fi
