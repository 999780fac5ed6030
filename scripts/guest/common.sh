# shellcheck shell=bash
# Helpers shared by the guest scripts (sourced, not run). Debian hosts, run as root.
# Everything large lives under $RNIC_CACHE (default /var/cache/rnic), never in the repository.

RNIC_CACHE=${RNIC_CACHE:-/var/cache/rnic}
DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

log() { printf '%s: %s\n' "${0##*/}" "$*" >&2; }
die() {
  log "error: $*"
  exit 1
}

need_root() { [ "$(id -u)" = 0 ] || die "run as root (debootstrap, chroot and mknod need it)"; }

# apt_host_install PKG...: installs the Debian packages of the host that are missing.
apt_host_install() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing on the host: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# debootstrap_cached SUITE DIR [INCLUDE]: a minbase chroot of SUITE at DIR, built once. A
# half-built chroot (interrupted run) is thrown away and rebuilt.
debootstrap_cached() {
  local suite=$1 dir=$2 include=${3:-}
  [ -f "$dir/.rnic-complete" ] && return 0
  rm -rf "$dir.tmp"
  log "debootstrap $suite into $dir (a few minutes)"
  debootstrap --variant=minbase ${include:+--include="$include"} "$suite" "$dir.tmp" "$DEBIAN_MIRROR" \
    >"$dir.debootstrap.log" 2>&1 || die "debootstrap failed; see $dir.debootstrap.log"
  touch "$dir.tmp/.rnic-complete"
  rm -rf "$dir"
  mv "$dir.tmp" "$dir"
}

# chroot_apt CHROOT ARGS...: apt-get inside the chroot, quietly, without prompts.
chroot_apt() {
  local root=$1
  shift
  chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get -y -qq -o=Dpkg::Use-Pty=0 "$@"
}

# kernel_extract CHROOT PKG DEST: downloads the kernel image package PKG with the chroot's apt and
# unpacks it (no maintainer scripts, no initramfs-tools) into DEST, then runs depmod there.
# Prints the kernel version.
kernel_extract() {
  local root=$1 pkg=$2 dest=$3 deb ver
  if [ ! -f "$dest/.rnic-complete" ]; then
    rm -rf "$dest" "$root/tmp/rnic-kernel"
    mkdir -p "$root/tmp/rnic-kernel" "$dest"
    chroot "$root" sh -c "cd /tmp/rnic-kernel && apt-get download -qq $pkg" 2>/dev/null ||
      die "apt-get download $pkg failed in $root"
    deb=$(ls "$root"/tmp/rnic-kernel/*.deb)
    dpkg-deb -x "$deb" "$dest"
    rm -rf "$root/tmp/rnic-kernel"
    touch "$dest/.rnic-complete"
  fi
  # Trixie's packages ship /usr/lib/modules (usrmerge); bookworm's ship /lib/modules.
  [ -e "$dest/lib" ] || ln -s usr/lib "$dest/lib"
  ver=$(ls "$dest/lib/modules" 2>/dev/null | head -n1)
  [ -n "$ver" ] || die "no /lib/modules in $pkg"
  [ -f "$dest/lib/modules/$ver/modules.dep" ] || depmod -b "$dest" "$ver"
  echo "$ver"
}

# extract_vmlinux VMLINUZ OUT: the uncompressed ELF kernel inside a bzImage (xz, gzip or zstd
# payload). QEMU boots that ELF through its PVH entry point, which skips the firmware's real-mode
# setup and the in-guest decompression: under TCG that saves about 8 s per boot here.
extract_vmlinux() {
  python3 - "$1" "$2.tmp" <<'PY'
import lzma, subprocess, sys, zlib
data = open(sys.argv[1], "rb").read()
def zstd(payload):
    # zstd decodes the frame, then complains about the bytes after it (exit 1): keep the output.
    return subprocess.run(["zstd", "-dcq"], input=payload, capture_output=True).stdout
for magic, unpack in ((b"\xfd7zXZ\x00", lambda p: lzma.LZMADecompressor().decompress(p)),
                      (b"\x28\xb5\x2f\xfd", zstd),
                      (b"\x1f\x8b\x08", lambda p: zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(p))):
    at = data.find(magic)
    if at >= 0:
        out = unpack(data[at:])
        if out[:4] == b"\x7fELF":
            open(sys.argv[2], "wb").write(out)
            sys.exit(0)
sys.exit("no xz, zstd or gzip ELF payload in " + sys.argv[1])
PY
  mv "$2.tmp" "$2"
}

# kernel_pkg_of CHROOT META: the versioned image package the meta-package META depends on.
kernel_pkg_of() {
  chroot "$1" apt-cache depends "$2" | awk '/Depends: linux-image-[0-9]/ {print $2; exit}'
}

# copy_modules KDIR VER DEST MOD...: copies MOD and everything it depends on from the unpacked
# kernel KDIR into the tree DEST (decompressing .ko.xz/.ko.zst, since busybox insmod loads plain
# .ko files), then runs depmod on DEST so that busybox modprobe works in the guest.
copy_modules() {
  local kdir=$1 ver=$2 dest=$3 mod path rel
  shift 3
  for mod in "$@"; do
    modprobe -d "$kdir" -S "$ver" --show-depends "$mod" >/dev/null 2>&1 ||
      die "kernel module $mod not found in $kdir ($ver)"
    modprobe -d "$kdir" -S "$ver" --show-depends "$mod" | awk '$1 == "insmod" {print $2}' |
      while read -r path; do
        rel=${path#"$kdir"}
        rel=${rel%.xz}
        rel=${rel%.zst}
        [ -f "$dest$rel" ] && continue
        mkdir -p "$(dirname "$dest$rel")"
        case $path in
        *.xz) xz -dc "$path" >"$dest$rel" ;;
        *.zst) zstd -qdc "$path" >"$dest$rel" ;;
        *) cp "$path" "$dest$rel" ;;
        esac
      done
  done
  cp "$kdir/lib/modules/$ver"/modules.{order,builtin,builtin.modinfo} "$dest/lib/modules/$ver/" 2>/dev/null || true
  depmod -b "$dest" "$ver"
}

# copy_with_libs CHROOT DEST FILE...: copies the executables or shared objects FILE (paths
# inside CHROOT) into DEST with every shared library they load, as the chroot's dynamic loader
# resolves them.
copy_with_libs() {
  local root=$1 dest=$2 f lib
  shift 2
  local ldso=/lib64/ld-linux-x86-64.so.2
  for f in "$@"; do
    for lib in "$f" $(chroot "$root" "$ldso" --list "$f" | awk '$2 == "=>" && $3 ~ /^\// {print $3}') "$ldso"; do
      [ -e "$dest$lib" ] && continue
      mkdir -p "$(dirname "$dest$lib")"
      cp -L "$root$lib" "$dest$lib"
    done
  done
}

# busybox_tree DEST: a minimal root tree with busybox-static and its applet links.
busybox_tree() {
  local dest=$1 applet
  mkdir -p "$dest"/{bin,sbin,usr/bin,usr/sbin,dev,proc,sys,tmp,run,mnt/host,etc,root}
  cp /bin/busybox "$dest/bin/busybox"
  for applet in $(/bin/busybox --list); do
    [ -e "$dest/bin/$applet" ] || ln -s busybox "$dest/bin/$applet"
  done
  # Debian's usrmerge layout: /lib and /lib64 are links into /usr, as in the chroot.
  mkdir -p "$dest/usr/lib" "$dest/usr/lib64"
  [ -e "$dest/lib" ] || ln -s usr/lib "$dest/lib"
  [ -e "$dest/lib64" ] || ln -s usr/lib64 "$dest/lib64"
}

# make_initramfs DIR OUT: packs DIR as a gzip'd newc cpio archive at OUT.
make_initramfs() {
  (cd "$1" && find . -print0 | cpio --null -o -H newc --quiet) | gzip -1 >"$2.tmp"
  mv "$2.tmp" "$2"
}

# free_port: a free TCP/UDP port on 127.0.0.1 (racy, but good enough for test wiring).
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
