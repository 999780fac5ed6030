#!/usr/bin/env bash
# A Debian bookworm guest with Linux soft-RoCE (rdma_rxe) for interop tests, booted under QEMU TCG.
#
#   rxe-guest.sh build                  build and cache kernel + initramfs (idempotent)
#   rxe-guest.sh run [options] --cmd 'COMMAND LINE'
#                                       boot a guest, run COMMAND LINE in it, print its output,
#                                       power off and exit with its exit status
#
# The guest's eth0 is a virtio-net whose frames leave QEMU raw (`-netdev socket`), with a static
# IPv4 address, an optional static neighbour entry, and rxe0 (`rdma link add rxe0 type rxe netdev
# eth0`) on it. eth1 is QEMU user networking (10.0.2.15/24, no default route) for out-of-band
# exchanges: `--hostfwd` forwards host ports into the guest, and the guest reaches the host's
# 127.0.0.1 as 10.0.2.2. A 9p share (the run's work directory, /mnt/host in the guest) carries
# the command in and its output, exit status and boot time out. See docs/guests.md.
set -euo pipefail
. "$(dirname "$0")/common.sh"

CACHE=$RNIC_CACHE/rxe-guest
GUEST_PACKAGES=libibverbs1,ibverbs-providers,librdmacm1,ibverbs-utils,rdmacm-utils,perftest,iproute2
MODULES=(virtio_pci virtio_net 9pnet_virtio 9p crc32_generic rdma_rxe ib_uverbs rdma_ucm ib_umad)

usage() {
  cat >&2 <<'EOF'
usage: rxe-guest.sh build
       rxe-guest.sh run [--wire udp:LOCALPORT:PEERPORT | tcp:HOST:PORT | listen:PORT | none]
                        [--ip A.B.C.D/N] [--mac MAC] [--peer IP,MAC] [--mtu BYTES]
                        [--hostfwd HOSTPORT[:GUESTPORT]]... [--wire-pcap FILE] [--oob-pcap FILE]
                        [--workdir DIR] [--timeout SECONDS] [--mem MiB]
                        (--cmd 'COMMAND LINE' | --cmd-file FILE)
EOF
  exit 2
}

# The guest's /init: brings up devices, network and rxe0, runs /mnt/host/cmd, powers off.
write_init() {
  cat >"$1/init" <<'EOF'
#!/bin/sh
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mkdir -p /dev/pts /dev/shm && mount -t devpts devpts /dev/pts && mount -t tmpfs shm /dev/shm
mount -t tmpfs tmp /tmp
for m in virtio_pci virtio_net 9pnet_virtio 9p; do modprobe $m; done
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 rnic /mnt/host || { echo "init: no 9p share"; poweroff -f; }
. /mnt/host/guest.env
step() { "$@" || echo "init: failed: $*" >&2; }
hostname "$GUEST_NAME"
ip link set lo up
if [ -e /sys/class/net/eth0 ]; then
  step ip link set eth0 mtu "$GUEST_MTU"
  step ip addr add "$GUEST_IP" dev eth0
  step ip link set eth0 up
  [ -n "$GUEST_PEER_IP" ] && step ip neigh replace "$GUEST_PEER_IP" lladdr "$GUEST_PEER_MAC" dev eth0 nud permanent
  # rxe computes its CRC with the kernel's "crc32" shash, which modprobe does not pull in.
  step modprobe crc32_generic
  for m in rdma_rxe ib_uverbs rdma_ucm ib_umad; do step modprobe $m; done
  step rdma link add rxe0 type rxe netdev eth0
fi
if [ -e /sys/class/net/eth1 ]; then
  step ip addr add 10.0.2.15/24 dev eth1
  step ip link set eth1 up
fi
ulimit -l unlimited
cut -d' ' -f1 /proc/uptime >/mnt/host/boot-seconds
cd /tmp
{
  sh /mnt/host/cmd
  echo $? >/mnt/host/rc.tmp
} 2>&1 | tee /mnt/host/output
mv /mnt/host/rc.tmp /mnt/host/rc
sync
poweroff -f
EOF
  chmod +x "$1/init"
}

build() {
  need_root
  apt_host_install debootstrap qemu-system-x86 busybox-static cpio kmod xz-utils python3
  mkdir -p "$CACHE"
  local t0=$SECONDS
  debootstrap_cached bookworm "$CACHE/chroot" "$GUEST_PACKAGES"
  local kpkg kver
  kpkg=$(kernel_pkg_of "$CACHE/chroot" linux-image-amd64)
  [ -n "$kpkg" ] || die "no linux-image-amd64 in the chroot's apt lists"
  kver=$(kernel_extract "$CACHE/chroot" "$kpkg" "$CACHE/kernel")
  local stamp
  stamp="$kver $(cat "$0" "$(dirname "$0")/common.sh" | sha256sum | cut -c1-16)"
  if [ -f "$CACHE/initrd.gz" ] && [ "$(cat "$CACHE/initrd.stamp" 2>/dev/null)" = "$stamp" ]; then
    log "cached: $CACHE/{vmlinux,initrd.gz} (kernel $kver)"
    return 0
  fi
  log "building the initramfs (kernel $kver)"
  local tree=$CACHE/initrd.tree
  rm -rf "$tree"
  busybox_tree "$tree"
  copy_modules "$CACHE/kernel" "$kver" "$tree" "${MODULES[@]}"
  local root=$CACHE/chroot bins
  bins=$( (cd "$root" && ls usr/bin/ib_* usr/bin/ibv_* usr/bin/rping usr/bin/rdma_* usr/bin/ucmatose \
    usr/bin/udaddy usr/bin/mckey usr/bin/riostream usr/bin/rstream usr/bin/udpong usr/bin/cmtime \
    usr/bin/ib_acme usr/bin/rcopy usr/bin/ip usr/bin/bridge usr/bin/ss usr/bin/rdma \
    usr/sbin/rdma 2>/dev/null || true) | sed 's|^|/|')
  # glibc loads libgcc_s.so.1 at run time to unwind in pthread_exit (rping's threads).
  # shellcheck disable=SC2086
  copy_with_libs "$root" "$tree" $bins /usr/bin/dash /usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so \
    /usr/lib/x86_64-linux-gnu/libgcc_s.so.1
  # busybox-static's ash runs its own applets before $PATH (so `ip` would be busybox's): make
  # /bin/sh the chroot's dash, which honours $PATH; busybox stays for the other tools.
  ln -sf ../usr/bin/dash "$tree/bin/sh"
  mkdir -p "$tree/etc/libibverbs.d"
  cp "$root/etc/libibverbs.d/rxe.driver" "$tree/etc/libibverbs.d/"
  printf 'root:x:0:0:root:/root:/bin/sh\n' >"$tree/etc/passwd"
  printf 'root:x:0:\n' >"$tree/etc/group"
  printf '127.0.0.1 localhost\n' >"$tree/etc/hosts"
  printf 'hosts: files dns\n' >"$tree/etc/nsswitch.conf"
  write_init "$tree"
  cp "$CACHE/kernel/boot/vmlinuz-$kver" "$CACHE/vmlinuz"
  extract_vmlinux "$CACHE/vmlinuz" "$CACHE/vmlinux"
  make_initramfs "$tree" "$CACHE/initrd.gz"
  echo "$stamp" >"$CACHE/initrd.stamp"
  log "built $CACHE/initrd.gz ($(du -h "$CACHE/initrd.gz" | cut -f1)) in $((SECONDS - t0)) s"
}

run() {
  local wire=none ip=192.168.77.1/24 mac=52:54:00:77:00:01 peer='' mtu=1500 workdir='' timeout=600
  local mem=512 cmd='' wire_pcap='' oob_pcap='' hostfwd=()
  while [ $# -gt 0 ]; do
    case $1 in
    --wire) wire=$2 ;;
    --ip) ip=$2 ;;
    --mac) mac=$2 ;;
    --peer) peer=$2 ;;
    --mtu) mtu=$2 ;;
    --hostfwd) hostfwd+=("$2") ;;
    --wire-pcap) wire_pcap=$2 ;;
    --oob-pcap) oob_pcap=$2 ;;
    --workdir) workdir=$2 ;;
    --timeout) timeout=$2 ;;
    --mem) mem=$2 ;;
    --cmd) cmd=$2 ;;
    --cmd-file) cmd=$(cat "$2") ;;
    *) usage ;;
    esac
    shift 2
  done
  [ -n "$cmd" ] || usage
  [ -f "$CACHE/initrd.stamp" ] || die "no guest built; run: $0 build"
  if [ -z "$workdir" ]; then
    workdir=$(mktemp -d /tmp/rxe-guest.XXXXXX)
  fi
  mkdir -p "$workdir"
  rm -f "$workdir"/{rc,output,boot-seconds}
  printf '%s\n' "$cmd" >"$workdir/cmd"
  cat >"$workdir/guest.env" <<EOF
GUEST_NAME=rxe-${ip%%/*}
GUEST_IP=$ip
GUEST_MTU=$mtu
GUEST_PEER_IP=${peer%%,*}
GUEST_PEER_MAC=${peer#*,}
EOF
  # shellcheck disable=SC2054 # commas inside QEMU option values
  local args=(-accel tcg -m "$mem" -smp 1 -nodefaults -no-user-config -display none -no-reboot
    -kernel "$CACHE/vmlinux" -initrd "$CACHE/initrd.gz"
    -append "console=ttyS0 ${RNIC_GUEST_APPEND:-quiet} panic=-1 rdinit=/init"
    -serial "file:$workdir/console.log"
    -fsdev "local,id=fs0,path=$workdir,security_model=none"
    -device virtio-9p-pci,fsdev=fs0,mount_tag=rnic,addr=0x5)
  case $wire in
  none) ;;
  udp:*:*)
    local lp=${wire#udp:}
    args+=(-netdev "socket,id=wire,udp=127.0.0.1:${lp#*:},localaddr=127.0.0.1:${lp%%:*}") ;;
  tcp:*) args+=(-netdev "socket,id=wire,connect=${wire#tcp:}") ;;
  listen:*) args+=(-netdev "socket,id=wire,listen=127.0.0.1:${wire#listen:}") ;;
  *) usage ;;
  esac
  if [ "$wire" != none ]; then
    args+=(-device "virtio-net-pci,netdev=wire,mac=$mac,addr=0x3")
    [ -n "$wire_pcap" ] && args+=(-object "filter-dump,id=wiredump,netdev=wire,file=$wire_pcap")
  fi
  local user=user,id=oob,net=10.0.2.0/24 f
  for f in "${hostfwd[@]}"; do
    user+=",hostfwd=tcp:127.0.0.1:${f%%:*}-10.0.2.15:$([ "${f#*:}" != "$f" ] && echo "${f#*:}" || echo 18515)"
  done
  args+=(-netdev "$user" -device "virtio-net-pci,netdev=oob,addr=0x4")
  [ -n "$oob_pcap" ] && args+=(-object "filter-dump,id=oobdump,netdev=oob,file=$oob_pcap")

  local t0 t1 qrc=0
  t0=$(date +%s%N)
  timeout "$timeout" qemu-system-x86_64 "${args[@]}" || qrc=$?
  t1=$(date +%s%N)
  [ -f "$workdir/output" ] && cat "$workdir/output"
  if [ ! -f "$workdir/rc" ]; then
    log "guest did not finish its command (qemu exit $qrc); console: $workdir/console.log"
    tail -n 20 "$workdir/console.log" >&2 || true
    exit 124
  fi
  log "boot $(cat "$workdir/boot-seconds") s (guest uptime at command start), wall $(((t1 - t0) / 1000000)) ms, work dir $workdir"
  exit "$(cat "$workdir/rc")"
}

case ${1:-} in
build) build ;;
run)
  shift
  run "$@"
  ;;
*) usage ;;
esac
