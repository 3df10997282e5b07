#!/bin/sh
# The library preloaded machine-wide, tried for real: in a private mount
# namespace, with /etc/ld.so.preload naming it (a file of our own mounted
# there; the machine's /etc is never written) and fasttimed publishing a
# page, ordinary programs run as they run without the library, and the clock
# readers among them are served by the page:
#   coreutils (ls, date, sort, sleep), make on a small generated project
#   (cc, two .c files), python3 (time.monotonic, time.time), a setuid
#   program run by an unprivileged user (passwd --help as nobody), and the
#   test suite's own programs (probe, semantics)
# Each runs first without the library, then under /etc/ld.so.preload: same
# exit status, same standard output, same standard error where the output
# does not depend on the moment.
#
# Then a secure process (setgid: AT_SECURE) under the preload, run by a
# plain user beside a page that user owns at /run/fasttime/page: it must not
# be served (it trusts root's page only), while the same program without
# the setgid bit is; and with root's page there it is served too. Served or
# not is told by its threads after its first time calls (a served process
# runs none of ours): FASTTIME_DEBUG, like every FASTTIME_* variable, is
# ignored in a secure process, which its unchanged standard error shows.
#
# Needs root, unshare, setpriv and cc; skips (77) without them. Not part of
# make check (it mounts, and runs programs as other users); CI runs it as root:
#   tests/system/machine-wide.sh [BUILDDIR]
# BUILDDIR is the top build directory (default: abs_top_builddir, else the
# current directory). Exit status: 0 pass, 1 fail, 77 skip, 99 error.
set -u

me=machine-wide
top=${1:-${abs_top_builddir:-$(pwd)}}
skip() {
	echo "$me: SKIP: $*"
	exit 77
}
checks_prefix="$me: "
# shellcheck source=tests/checks.sh
. "$(dirname "$0")/../checks.sh"

if [ "$(id -u)" != 0 ]; then
	skip "needs root (it mounts in a private mount namespace and runs programs as other users)"
fi
for tool in unshare setpriv cc make; do
	command -v "$tool" >/dev/null 2>&1 || skip "needs $tool"
done
for file in src/.libs/libfasttime.so src/fasttimed tests/integration/probe \
	tests/integration/semantics; do
	[ -e "$top/$file" ] || {
		echo "$me: $top/$file is not built"
		exit 99
	}
done

# The programs run as other users load the library from the build tree: a
# tree in a private directory (as mktemp -d makes) is out of their reach.
for uid in 65534 4242; do
	setpriv --reuid=$uid --regid=$uid --clear-groups \
		test -r "$top/src/.libs/libfasttime.so" -a -x "$top/src/fasttimed" 2>/dev/null ||
		skip "uid $uid cannot reach the build tree $top (a private directory)"
done

# Into a private mount namespace, once: nothing mounted here is seen outside.
if [ -z "${FASTTIME_MACHINE_WIDE_INSIDE:-}" ]; then
	unshare -m --propagation private true 2>/dev/null ||
		skip "cannot make a private mount namespace (unshare -m)"
	FASTTIME_MACHINE_WIDE_INSIDE=1 exec unshare -m --propagation private "$0" "$top"
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/fasttime-machine-wide.XXXXXX") || exit 99
chmod 755 "$tmp"
service=
cleanup() {
	[ -n "$service" ] && kill "$service" 2>/dev/null && wait "$service" 2>/dev/null
	umount /etc/ld.so.preload 2>/dev/null || umount /etc 2>/dev/null
	umount /run 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 99' INT TERM HUP

# Every setting of the caller's goes: each run below says what it wants.
for name in $(env | sed -n 's/^\(FASTTIME_[A-Za-z0-9_]*\)=.*/\1/p'); do
	[ "$name" = FASTTIME_MACHINE_WIDE_INSIDE ] || unset "$name"
done
unset LD_PRELOAD

# A copy of the library any user can read, as an installed one is.
mkdir "$tmp/lib" && cp "$top/src/.libs/libfasttime.so" "$tmp/lib/" &&
	chmod 755 "$tmp/lib/libfasttime.so" || exit 99
lib=$tmp/lib/libfasttime.so

# Starts fasttimed as user $1 (root, or a uid) on page $2; waits for the
# page (10 s).
start_service() {
	if [ "$1" = root ]; then
		"$top/src/fasttimed" --page "$2" >"$tmp/fasttimed.log" 2>&1 &
	else
		setpriv --reuid="$1" --regid="$1" --clear-groups \
			"$top/src/fasttimed" --page "$2" >"$tmp/fasttimed.log" 2>&1 &
	fi
	service=$!
	for _ in $(seq 100); do
		[ -f "$2" ] && return 0
		kill -0 "$service" 2>/dev/null || break
		sleep 0.1
	done
	cat "$tmp/fasttimed.log"
	return 1
}
stop_service() {
	kill "$service" 2>/dev/null && wait "$service" 2>/dev/null
	service=
}

# /run of our own (tmpfs): /run/fasttime/page is then ours to publish.
mount -t tmpfs -o mode=755 fasttime-run /run || skip "cannot mount a tmpfs on /run"
mkdir /run/fasttime

page=$tmp/run/page
mkdir "$tmp/run"
start_service root "$page" || {
	echo "$me: fasttimed did not publish $page"
	exit 99
}
export FASTTIME_PAGE="$page"

# The small project make builds.
project=$tmp/project
mkdir "$project"
cat >"$project/Makefile" <<'EOF'
prog: a.o b.o
	$(CC) -o $@ a.o b.o
clean:
	rm -f prog a.o b.o
EOF
cat >"$project/a.c" <<'EOF'
#include <stdio.h>
int twice(int);
int main(void)
{
	printf("%d\n", twice(21));
	return 0;
}
EOF
printf 'int twice(int x)\n{\n\treturn 2 * x;\n}\n' >"$project/b.c"
mkdir "$tmp/files"
printf 'pear\napple\nfig\n' >"$tmp/files/fruit"
touch -d @1000000000 "$tmp/files/fruit" "$tmp/files"

python=$(command -v python3 || true)

# The cases: a name, then a command run by sh; its status, stdout and
# stderr are compared between the two runs.
cases() {
	echo "ls|ls -l --time-style=+%s $tmp/files"
	echo "date|date -u -d @86400 '+%F %T'"
	echo "date-now|date +%s >/dev/null"
	echo "sort|sort $tmp/files/fruit"
	echo "sleep|sleep 0.1"
	echo "make|make -s -C $project clean && make -s -C $project CC=cc && $project/prog"
	[ -n "$python" ] &&
		echo "python3|$python -c 'import time; a = time.monotonic(); b = time.time(); print(a > 0, b > 1.5e9, time.monotonic() >= a)'"
	echo "setuid|setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/passwd --help"
	echo "probe|$top/tests/integration/probe 20 3"
}

run_all() {
	cases | while IFS='|' read -r name command; do
		sh -c "$command" >"$tmp/$name.$1.out" 2>"$tmp/$name.$1.err"
		echo $? >"$tmp/$name.$1.rc"
	done
}

run_all plain

# The library machine-wide: /etc/ld.so.preload names it.
echo "$lib" >"$tmp/ld.so.preload"
if [ -e /etc/ld.so.preload ]; then
	mount --bind "$tmp/ld.so.preload" /etc/ld.so.preload || exit 99
else
	# No file to mount over: a copy of /etc with one, mounted over /etc.
	cp -a /etc "$tmp/etc" && cp "$tmp/ld.so.preload" "$tmp/etc/ld.so.preload" &&
		mount --bind "$tmp/etc" /etc || exit 99
fi
# Every process from here on loads the library, this shell's children too.
if ! sh -c 'grep -q libfasttime /proc/self/maps'; then
	echo "$me: /etc/ld.so.preload did not load the library"
	exit 99
fi

run_all preloaded

cases >"$tmp/cases"
while IFS='|' read -r name command; do
	differs=
	for part in rc out err; do
		if ! cmp -s "$tmp/$name.plain.$part" "$tmp/$name.preloaded.$part"; then
			fail "$name: its $part differs under the preload ($command)"
			diff "$tmp/$name.plain.$part" "$tmp/$name.preloaded.$part" | head -10
			differs=1
		fi
	done
	[ -n "$differs" ] ||
		pass "$name: status $(cat "$tmp/$name.plain.rc"), output as without the library"
done <"$tmp/cases"

# The clock readers are served: each says so under FASTTIME_DEBUG.
served() {
	FASTTIME_DEBUG=1 sh -c "$2" >/dev/null 2>"$tmp/served.err"
	if grep -q "calibration served by the page $page" "$tmp/served.err" &&
		! grep -q "refresh thread started" "$tmp/served.err"; then
		pass "$1 is served by the page"
	else
		fail "$1 is not served by the page:"
		head -5 "$tmp/served.err"
	fi
}
# A program that reads no clock (sleep waits with clock_nanosleep, which
# the library leaves alone) looks for no page and starts no thread: the page
# is looked for at the first time call.
untouched() {
	FASTTIME_DEBUG=1 sh -c "$2" >/dev/null 2>"$tmp/served.err"
	if ! grep -q "served by the page\|refresh thread started" "$tmp/served.err"; then
		pass "$1, which reads no clock, looks for no page and starts no thread"
	else
		fail "$1 reads no clock, yet:"
		head -5 "$tmp/served.err"
	fi
}
served date "date +%s.%N"
untouched sleep "sleep 0.1"
served probe "$top/tests/integration/probe 20 0"
[ -n "$python" ] && served python3 "$python -c 'import time; time.monotonic(); time.time()'"

# The suite's own test of odd calls, run under the machine-wide preload and
# served: it must pass as under LD_PRELOAD.
FASTTIME_DEBUG=1 "$top/tests/integration/semantics" >"$tmp/semantics.out" 2>&1
rc=$?
if [ $rc = 0 ] || [ $rc = 77 ]; then
	pass "semantics: status $rc"
else
	fail "semantics: status $rc"
	tail -5 "$tmp/semantics.out"
fi

# A secure process and a page its user owns. The reader counts its threads
# once its time calls had the time to start one of ours.
cat >"$tmp/threads.c" <<'EOF'
#include <dirent.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
int main(void)
{
	struct timespec ts;
	int threads = 0;
	DIR *tasks;

	for (int i = 0; i < 1000; i++)
		clock_gettime(CLOCK_MONOTONIC, &ts);
	usleep(300000);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	tasks = opendir("/proc/self/task");
	if (tasks == NULL)
		return 2;
	while (readdir(tasks) != NULL)
		threads++;
	printf("%d\n", threads - 2);
	return 0;
}
EOF
cc -O2 -o "$tmp/threads" "$tmp/threads.c" || exit 99
cp "$tmp/threads" "$tmp/threads-setgid"
chgrp tty "$tmp/threads-setgid" && chmod 2755 "$tmp/threads-setgid" || exit 99
# A plain user of no name (not nobody: a page nobody owns is refused by
# everyone, nobody being the overflow uid of user namespaces).
user=4242
as_user() {
	env -u FASTTIME_PAGE setpriv --reuid=$user --regid=$user --clear-groups "$@"
}

stop_service
chown $user:$user /run/fasttime
start_service $user /run/fasttime/page || {
	echo "$me: fasttimed as uid $user did not publish /run/fasttime/page"
	exit 99
}
plain_threads=$(as_user env FASTTIME_PAGE=none "$tmp/threads")
own_page_threads=$(as_user "$tmp/threads")
secure_threads=$(as_user "$tmp/threads-setgid")
secure_debug=$(as_user env FASTTIME_DEBUG=1 "$tmp/threads-setgid" 2>&1 >/dev/null)
if [ "$plain_threads" != 2 ]; then
	echo "$me: note: an unserved reader runs $plain_threads threads here (no thread of" \
		"ours: the library cannot run on this machine); the secure cases are not told apart"
elif [ "$own_page_threads" != 1 ]; then
	fail "uid $user's own program is not served by its page ($own_page_threads threads)"
elif [ "$secure_threads" != 2 ]; then
	fail "a setgid program run by uid $user is served by uid $user's page ($secure_threads threads)"
else
	pass "a setgid program run by uid $user refuses uid $user's page (its own thread runs)"
fi
if [ -n "$secure_debug" ]; then
	fail "a setgid program heeds FASTTIME_DEBUG: $secure_debug"
else
	pass "a setgid program ignores FASTTIME_DEBUG (FASTTIME_* are read with secure_getenv)"
fi
stop_service
chown 0:0 /run/fasttime
rm -f /run/fasttime/page /run/fasttime/page.lock
start_service root /run/fasttime/page || {
	echo "$me: fasttimed did not publish /run/fasttime/page"
	exit 99
}
secure_threads=$(as_user "$tmp/threads-setgid")
if [ "$plain_threads" = 2 ] && [ "$secure_threads" != 1 ]; then
	fail "a setgid program run by uid $user is not served by root's page ($secure_threads threads)"
elif [ "$plain_threads" = 2 ]; then
	pass "a setgid program run by uid $user is served by root's page"
fi

finish
