#!/usr/bin/env bash
# A q35 guest under QEMU TCG that sees a vfio-user device server as a PCI function, binds it to
# vfio-pci and runs a program against it through kernel VFIO (an emulated Intel IOMMU gives the
# guest real type1 VFIO). QEMU >= 10.1.1 is needed for vfio-user-pci and does not run on
# bookworm's glibc, so QEMU runs from a cached Debian trixie chroot with trixie-backports QEMU.
#
#   vfio-guest.sh build               build and cache the chroot, kernel and initramfs
#   vfio-guest.sh run --socket PATH [--bin FILE]... [--cmd 'COMMAND LINE'] [--net]
#                                     boot, bind the device, run COMMAND LINE (default: list it),
#                                     print its output, exit with its exit status
#
# With --net the guest also gets a virtio NIC on QEMU's user-mode network: it is 10.0.2.15 and
# reaches the host's loopback services at 10.0.2.2 (e.g. the perftest exchange of `rnic perf`).
# The device is at 0000:00:03.0 in the guest and $RNIC_VFIO_DEVICE names it for the command;
# files given with --bin are in /opt/bin (on $PATH). See docs/guests.md.
set -euo pipefail
. "$(dirname "$0")/common.sh"

CACHE=$RNIC_CACHE/vfio-guest
CHROOT=$CACHE/chroot
BDF=0000:00:03.0
MODULES=(vfio_pci vfio_iommu_type1 virtio_net)

usage() {
  cat >&2 <<'EOF'
usage: vfio-guest.sh build
       vfio-guest.sh run --socket PATH [--bin FILE]... [--cmd 'COMMAND LINE']
                         [--mem MiB] [--timeout SECONDS] [--console FILE] [--net]
EOF
  exit 2
}

# The guest's /init: binds the vfio-user device to vfio-pci, runs /rnic/cmd, reports on ttyS0.
write_init() {
  cat >"$1/init" <<EOF
#!/bin/sh
export PATH=/opt/bin:/usr/sbin:/usr/bin:/sbin:/bin RNIC_VFIO_DEVICE=$BDF
EOF
  cat >>"$1/init" <<'EOF'
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs tmp /tmp
modprobe vfio_iommu_type1 && modprobe vfio_pci || echo "init: modprobe vfio failed"
dev=/sys/bus/pci/devices/$RNIC_VFIO_DEVICE
if [ -e "$dev" ]; then
  echo vfio-pci >"$dev/driver_override"
  echo "$RNIC_VFIO_DEVICE" >/sys/bus/pci/drivers_probe
  echo "init: $RNIC_VFIO_DEVICE $(cat "$dev/vendor"):$(cat "$dev/device") class $(cat "$dev/class")" \
    "driver $(basename "$(readlink "$dev/driver")") iommu_group $(basename "$(readlink "$dev/iommu_group")")"
else
  echo "init: no PCI device at $RNIC_VFIO_DEVICE"
fi
if modprobe virtio_net 2>/dev/null && [ -e /sys/class/net/eth0 ]; then
  ifconfig lo 127.0.0.1 up
  ifconfig eth0 10.0.2.15 netmask 255.255.255.0 up && route add default gw 10.0.2.2 &&
    echo "init: eth0 10.0.2.15, host 10.0.2.2"
fi
ulimit -l unlimited
echo "RNIC-BOOT-SECONDS $(cut -d' ' -f1 /proc/uptime)"
echo "RNIC-OUTPUT-BEGIN"
sh /rnic/cmd 2>&1
echo "RNIC-EXIT $?"
poweroff -f
EOF
  chmod +x "$1/init"
}

build() {
  need_root
  apt_host_install debootstrap busybox-static cpio kmod xz-utils zstd python3
  mkdir -p "$CACHE"
  local t0=$SECONDS
  debootstrap_cached trixie "$CHROOT" ca-certificates
  if [ ! -f "$CHROOT/.rnic-qemu" ]; then
    log "installing trixie-backports qemu-system-x86 in the chroot"
    echo "deb $DEBIAN_MIRROR trixie-backports main" >"$CHROOT/etc/apt/sources.list.d/backports.list"
    chroot_apt "$CHROOT" update
    chroot_apt "$CHROOT" install --no-install-recommends -t trixie-backports qemu-system-x86 >/dev/null
    touch "$CHROOT/.rnic-qemu"
  fi
  chroot "$CHROOT" qemu-system-x86_64 -device help | grep -q '"vfio-user-pci"' ||
    die "the chroot's QEMU has no vfio-user-pci device"
  local kpkg kver
  kpkg=$(kernel_pkg_of "$CHROOT" linux-image-amd64)
  kver=$(kernel_extract "$CHROOT" "$kpkg" "$CACHE/kernel")
  local stamp
  stamp="$kver $(cat "$0" "$(dirname "$0")/common.sh" | sha256sum | cut -c1-16)"
  if [ -f "$CACHE/initrd.gz" ] && [ "$(cat "$CACHE/initrd.stamp" 2>/dev/null)" = "$stamp" ]; then
    log "cached: $CACHE (kernel $kver, $(chroot "$CHROOT" qemu-system-x86_64 --version | head -1))"
    return 0
  fi
  log "building the initramfs (kernel $kver)"
  local tree=$CACHE/initrd.tree
  rm -rf "$tree"
  busybox_tree "$tree"
  mkdir -p "$tree/rnic" "$tree/opt/bin"
  copy_modules "$CACHE/kernel" "$kver" "$tree" "${MODULES[@]}"
  write_init "$tree"
  extract_vmlinux "$CACHE/kernel/boot/vmlinuz-$kver" "$CACHE/vmlinux"
  make_initramfs "$tree" "$CACHE/initrd.gz"
  echo "$stamp" >"$CACHE/initrd.stamp"
  log "built $CACHE in $((SECONDS - t0)) s ($(chroot "$CHROOT" qemu-system-x86_64 --version | head -1))"
}

# Mounts the chroot needs at run time (QEMU opens /dev/urandom, /proc/self/...); the socket's
# directory is bound at /run/rnic-sock inside it. Undone by unmount_all on exit.
MOUNTED=()
mount_in_chroot() {
  mkdir -p "$CHROOT$2"
  mount "${@:3}" "$1" "$CHROOT$2"
  MOUNTED=("$CHROOT$2" "${MOUNTED[@]}")
}
unmount_all() {
  local m
  for m in "${MOUNTED[@]}"; do umount "$m" 2>/dev/null || umount -l "$m" || true; done
  MOUNTED=()
}

run() {
  local socket='' cmd='ls -l /dev/vfio; ls /sys/bus/pci/devices' mem=512 timeout=300 console='' bins=() net=()
  while [ $# -gt 0 ]; do
    case $1 in
    --net)
      # shellcheck disable=SC2054 # commas inside QEMU option values
      net=(-netdev user,id=n0 -device virtio-net-pci,netdev=n0,addr=0x4)
      shift
      continue
      ;;
    --socket) socket=$2 ;;
    --bin) bins+=("$2") ;;
    --cmd) cmd=$2 ;;
    --mem) mem=$2 ;;
    --timeout) timeout=$2 ;;
    --console) console=$2 ;;
    *) usage ;;
    esac
    shift 2
  done
  [ -n "$socket" ] || usage
  [ -S "$socket" ] || die "no vfio-user socket at $socket (start the device server first)"
  [ -f "$CACHE/initrd.stamp" ] || die "no guest built; run: $0 build"
  need_root
  local work
  work=$(mktemp -d "$CHROOT/tmp/run.XXXXXX")
  trap 'unmount_all; rm -rf "$work"' EXIT
  # The run's own files ride in a second cpio archive appended to the cached one: the kernel
  # unpacks both into the same initramfs.
  mkdir -p "$work/extra/rnic" "$work/extra/opt/bin"
  printf '%s\n' "$cmd" >"$work/extra/rnic/cmd"
  local b
  for b in "${bins[@]}"; do install -m 0755 "$b" "$work/extra/opt/bin/"; done
  make_initramfs "$work/extra" "$work/extra.gz"
  cat "$CACHE/initrd.gz" "$work/extra.gz" >"$work/initrd.gz"
  cp "$CACHE/vmlinux" "$work/vmlinux"

  mount_in_chroot /dev /dev --bind
  mount_in_chroot proc /proc -t proc
  mount_in_chroot "$(cd "$(dirname "$socket")" && pwd)" /run/rnic-sock --bind
  local w=${work#"$CHROOT"} sock
  sock=/run/rnic-sock/$(basename "$socket")
  # shellcheck disable=SC2054 # commas inside QEMU option values
  local args=(-accel tcg -machine q35 -m "$mem" -smp 1 -nodefaults -no-user-config -display none
    -no-reboot
    -object "memory-backend-memfd,id=mem,size=${mem}M,share=on" -machine memory-backend=mem
    -device intel-iommu,caching-mode=on,intremap=on
    -device "{\"driver\":\"vfio-user-pci\",\"socket\":{\"path\":\"$sock\",\"type\":\"unix\"},\"addr\":\"0x3\"}"
    "${net[@]}"
    -kernel "$w/vmlinux" -initrd "$w/initrd.gz"
    -append "console=ttyS0 quiet panic=-1 rdinit=/init intel_iommu=on no_timer_check"
    -serial "file:$w/console.log")
  local t0 t1 qrc=0
  t0=$(date +%s%N)
  timeout "$timeout" chroot "$CHROOT" qemu-system-x86_64 "${args[@]}" || qrc=$?
  t1=$(date +%s%N)
  [ -z "$console" ] || cp "$work/console.log" "$console"
  sed -n '/^init: /p' "$work/console.log" >&2
  sed -n '/^RNIC-OUTPUT-BEGIN/,/^RNIC-EXIT/{/^RNIC-/d;p}' "$work/console.log"
  local rc
  rc=$(sed -n 's/^RNIC-EXIT \([0-9]*\).*/\1/p' "$work/console.log")
  if [ -z "$rc" ]; then
    log "guest did not finish its command (qemu exit $qrc); console:"
    tail -n 30 "$work/console.log" >&2
    exit 124
  fi
  log "boot $(sed -n 's/^RNIC-BOOT-SECONDS //p' "$work/console.log") s (guest uptime at command start), wall $(((t1 - t0) / 1000000)) ms"
  exit "$rc"
}

case ${1:-} in
build) build ;;
run)
  shift
  run "$@"
  ;;
*) usage ;;
esac
