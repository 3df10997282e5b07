#!/bin/sh
# Run by tests/system/systemd-unit.sh inside a container booted with systemd
# as PID 1, as a oneshot unit: installs the three packages from /root/debs
# and checks the fasttimed unit as systemd runs it. Prints one "ok" or
# "not ok" line per check, then "DONE".

set -u
lib=/usr/lib/x86_64-linux-gnu/fasttime/libfasttime.so
page=/run/fasttime/page
status=0

ok() { echo "ok - $*"; }
not_ok() { echo "not ok - $*"; status=1; }
# check DESCRIPTION COMMAND...: one line for the command's verdict.
check() {
    what=$1
    shift
    if "$@"; then ok "$what"; else not_ok "$what"; fi
}
# owner_mode PATH: uid:octal mode, as readers judge the page.
owner_mode() { stat -c %u:%a "$1" 2>/dev/null; }
# served PID INODE: the process maps the page file with that inode, and runs
# no thread of the library's (served readers start none).
served() {
    awk -v inode="$2" -v page="$page" \
        '$5 == inode && $6 == page && NF == 6 { found = 1 } END { exit !found }' \
        "/proc/$1/maps" && [ "$(ls "/proc/$1/task" | wc -l)" -eq 1 ]
}
# within SECONDS COMMAND...: the command succeeds within SECONDS, tried
# every 0.1 s.
within() {
    tries=$(($1 * 10))
    shift
    while [ "$tries" -gt 0 ]; do
        "$@" && return 0
        tries=$((tries - 1))
        sleep 0.1
    done
    return 1
}
info_says_served() {
    fasttime --info --format=keys 2>&1 | grep -qx 'calibration_source=served'
}

echo "# PID 1: $(cat /proc/1/comm), $(systemctl --version | head -n 1)"
if dpkg -i /root/debs/libfasttime_*.deb /root/debs/fasttime_*.deb \
    /root/debs/fasttimed_*.deb >/root/dpkg.log 2>&1; then
    ok "dpkg -i libfasttime fasttime fasttimed"
else
    not_ok "dpkg -i libfasttime fasttime fasttimed:"
    sed 's/^/#   /' /root/dpkg.log
fi

# Installed: enabled, started, and "started" means the page is published.
# systemd reads every setting of the unit: no unknown key, nothing ignored
# (the manual page is not looked for: the root has no man).
systemd-analyze verify --man=no fasttimed.service >/root/verify.log 2>&1
check "systemd-analyze verify fasttimed.service says nothing" test ! -s /root/verify.log
sed 's/^/#   /' /root/verify.log
check "fasttimed is enabled on installation" \
    [ "$(systemctl is-enabled fasttimed 2>&1)" = enabled ]
check "fasttimed is active on installation" systemctl is-active --quiet fasttimed
check "the page exists once the unit is started (Type=notify)" test -f "$page"
check "the page is root's, mode 644" [ "$(owner_mode "$page")" = 0:644 ]
check "its directory is root's, mode 755" [ "$(owner_mode /run/fasttime)" = 0:755 ]
check "fasttime --info: served" info_says_served
# The sandbox as the kernel sees the service: no capability, no new
# privileges, a seccomp filter.
status_of() {
    awk -v key="$1:" '$1 == key { print $2 }' \
        "/proc/$(systemctl show -p MainPID --value fasttimed)/status"
}
check "the service has no capability" \
    [ "$(status_of CapEff)" = 0000000000000000 -a "$(status_of CapBnd)" = 0000000000000000 ]
check "the service runs with no_new_privs and a seccomp filter" \
    [ "$(status_of NoNewPrivs)" = 1 -a "$(status_of Seccomp)" = 2 ]
echo "# $(systemd-analyze security fasttimed 2>/dev/null | tail -n 1)"

# A preloaded program that reads the clocks 20 times a second.
FASTTIME_DEBUG=1 LD_PRELOAD=$lib /root/reader 2>/root/reader.log &
reader=$!
first=$(stat -c %i "$page")
check "a preloaded program is served by the page" within 5 served "$reader" "$first"

# A restart publishes a new page; the running program moves to it, as
# soon as one of its reads answered from the counter finds the old one
# stale (an entry point the page leaves to libc never looks at it).
check "systemctl restart fasttimed" systemctl restart fasttimed
check "a new page once restarted" test -f "$page" -a "$(stat -c %i "$page" 2>/dev/null)" != "$first"
second=$(stat -c %i "$page" 2>/dev/null || echo none)
if fasttime --info --format=keys | grep -q '^api\..*\.answered_by=fasttime$'; then
    check "the running program is served by the new page, with no thread of its own" \
        within 5 served "$reader" "$second"
else
    ok "# SKIP the running program after a restart: the page leaves every entry point to libc"
fi

# Stop: the page and its directory go.
check "systemctl stop fasttimed" systemctl stop fasttimed
check "the page is removed at stop" test ! -e "$page"
check "the preloaded program lives on" kill -0 "$reader"

# Removal stops the service and removes the page.
check "systemctl start fasttimed" systemctl start fasttimed
check "the page is back" test -f "$page"
check "dpkg -r fasttimed" dpkg -r fasttimed >>/root/dpkg.log 2>&1
check "removal stops the service" sh -c '! systemctl is-active --quiet fasttimed'
check "removal removes the page" test ! -e "$page"
check "the preloaded program lives on after removal" kill -0 "$reader"
kill "$reader"
wait "$reader" 2>/dev/null

if [ "$status" -ne 0 ]; then
    echo "# the service's journal:"
    journalctl -u fasttimed -o cat --no-pager 2>&1 | tail -n 20 | sed 's/^/#   /'
    echo "# the reader's debug lines:"
    tail -n 20 /root/reader.log | sed 's/^/#   /'
fi
echo "DONE $status"
