#!/bin/sh
# fasttimed's unit under a real systemd: boots a Debian 12 container with
# systemd as PID 1 (systemd-nspawn -b), installs the three packages there
# and runs systemd-unit-inside.sh in it: enabled and started on
# installation, the page published once started, a preloaded program
# served, served again across a restart, the page removed at stop and at
# removal. Not run by `make check`: it needs root, systemd-nspawn and a
# Debian root. Exit status 0 passed, 1 failed, 77 where the machine cannot
# boot such a container (the reason is printed).
#
# Usage: tests/system/systemd-unit.sh [DEB_DIR]
#   DEB_DIR holds libfasttime_*.deb, fasttime_*.deb and fasttimed_*.deb;
#   without it the packages are built from this source tree (a git
#   checkout) with dpkg-buildpackage.
# The Debian root is made once with debootstrap (network needed) and kept
# in FASTTIME_SYSTEMD_ROOT (default /var/tmp/fasttime-systemd-root); each
# run boots a copy of it, removed afterwards. The boot is bounded by
# FASTTIME_SYSTEMD_TIMEOUT seconds (default 300).

set -u
here=$(cd "$(dirname "$0")" && pwd)
srcdir=$(cd "$here/../.." && pwd)
base=${FASTTIME_SYSTEMD_ROOT:-/var/tmp/fasttime-systemd-root}
limit=${FASTTIME_SYSTEMD_TIMEOUT:-300}
debs=${1:-}

skip() {
    echo "SKIP: $*"
    exit 77
}

[ "$(id -u)" -eq 0 ] || skip "needs root to boot a container"
command -v systemd-nspawn >/dev/null 2>&1 || skip "systemd-nspawn is not installed (systemd-container)"
[ "$(uname -m)" = x86_64 ] || skip "the packages are for amd64"

work=$(mktemp -d /var/tmp/fasttime-systemd.XXXXXX) || exit 1
machine=fasttime-test-$$
cleanup() {
    # The container is gone once systemd-nspawn has returned; its copy and
    # the packages built here go with it.
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

# The Debian root, made once.
if [ ! -x "$base/lib/systemd/systemd" ]; then
    command -v debootstrap >/dev/null 2>&1 || skip "no root in $base and no debootstrap to make one"
    echo "# making the Debian 12 root in $base (once)"
    rm -rf "$base.new"
    if ! debootstrap --variant=minbase --include=systemd,systemd-sysv,dbus bookworm \
        "$base.new" http://deb.debian.org/debian >"$work/debootstrap.log" 2>&1; then
        tail -n 5 "$work/debootstrap.log"
        rm -rf "$base.new"
        skip "debootstrap could not make a Debian 12 root (network?)"
    fi
    mv "$base.new" "$base"
fi

# The packages: given, or built from this tree.
if [ -z "$debs" ]; then
    command -v dpkg-buildpackage >/dev/null 2>&1 || skip "dpkg-buildpackage is not installed"
    git -C "$srcdir" rev-parse >/dev/null 2>&1 || skip "$srcdir is no git checkout: give DEB_DIR"
    echo "# building the packages from $srcdir"
    mkdir -p "$work/build/fasttime"
    (cd "$srcdir" && git ls-files -z) | (cd "$srcdir" && xargs -0 tar -cf -) |
        tar -xf - -C "$work/build/fasttime" || exit 1
    if ! (cd "$work/build/fasttime" && dpkg-buildpackage -us -uc -b) >"$work/build.log" 2>&1; then
        tail -n 20 "$work/build.log"
        echo "FAIL: dpkg-buildpackage"
        exit 1
    fi
    debs=$work/build
fi
for package in libfasttime fasttime fasttimed; do
    set -- "$debs/${package}"_*_amd64.deb
    [ -f "$1" ] || { echo "FAIL: no ${package}_*_amd64.deb in $debs"; exit 1; }
done

# A copy of the root, with the packages and the test run as a oneshot unit
# at boot, which powers the container off when it is done.
root=$work/root
cp -a "$base" "$root" || exit 1
mkdir -p "$root/root/debs"
cp "$debs"/libfasttime_*_amd64.deb "$debs"/fasttime_*_amd64.deb \
    "$debs"/fasttimed_*_amd64.deb "$root/root/debs/"
cp "$here/systemd-unit-inside.sh" "$root/root/"
# The reader, built here for the container's libc (Debian 12's, as the
# packages are).
"${CC:-cc}" -O2 -o "$root/root/reader" "$here/reader.c" || skip "cannot compile $here/reader.c"
cat >"$root/etc/systemd/system/fasttime-test.service" <<'UNIT'
[Unit]
Description=fasttime's packages under systemd
After=basic.target

[Service]
Type=oneshot
ExecStart=/bin/sh -c '/root/systemd-unit-inside.sh >/root/result 2>&1'
ExecStopPost=/bin/systemctl --no-block poweroff
TimeoutStartSec=180
UNIT
mkdir -p "$root/etc/systemd/system/multi-user.target.wants"
ln -sf ../fasttime-test.service "$root/etc/systemd/system/multi-user.target.wants/"

echo "# booting $machine (at most $limit s)"
start=$(date +%s)
timeout -k 20 "$limit" systemd-nspawn -q -D "$root" -M "$machine" -b --register=no \
    --keep-unit --private-network </dev/null >"$work/boot.log" 2>&1
booted=$?
echo "# the container ran for $(($(date +%s) - start)) s (systemd-nspawn status $booted)"

if [ ! -f "$root/root/result" ]; then
    # No result: the container never reached the test. That is the machine
    # unless its systemd came up.
    sed 's/^/#   /' "$work/boot.log" | tail -n 20
    if grep -q 'Reached target.*[Bb]asic' "$work/boot.log"; then
        echo "FAIL: systemd booted, but the test unit left no result"
        exit 1
    fi
    skip "this machine cannot boot a container with systemd as PID 1 (systemd-nspawn -b: see above)"
fi
cat "$root/root/result"
if grep -q '^not ok' "$root/root/result" || ! grep -q '^DONE 0$' "$root/root/result"; then
    echo "FAIL: fasttimed's unit under systemd"
    exit 1
fi
echo "PASS: fasttimed's unit under systemd"
exit 0
