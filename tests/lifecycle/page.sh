# Sourced by the .test scripts that try a calibration service's page from
# outside its usual place (served-trust.test, served-containers.test): the
# service and reader helpers, as served.test has them, in a scratch
# directory that other users may enter (some readers and services here run
# as another uid). Sets scratch, fasttimed, served, page_size, records_at,
# valid_ticks_at, cpus; exits 77 where the fast path cannot run.
# shellcheck shell=sh disable=SC2034 # (its variables are the sourcing script's)
# shellcheck source=tests/lifecycle/life.sh disable=SC2031,SC2317
. "$(dirname "$0")/life.sh"

fasttimed=$life_builddir/src/fasttimed
fasttime=$life_builddir/src/fasttime
served=$life_builddir/tests/lifecycle/served
for f in "$fasttimed" "$fasttime" "$served"; do
	if test ! -x "$f"; then
		echo "missing $f: run 'make check'"
		exit 99
	fi
done
# reachable_by UID: whether that uid can run the build's programs and load
# its library (a build tree in a private directory, as mktemp -d makes,
# is not reachable by another user).
reachable_by() {
	setpriv --reuid "$1" --regid "$1" --clear-groups \
		sh -c 'test -x "$1" && test -x "$2" && test -r "$3"' sh \
		"$served" "$fasttimed" "$life_lib" 2>/dev/null
}
# The programs some readers run through (a shell, unshare) are not built
# with the sanitizer the library may be built with.
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"
TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS:}die_after_fork=0:atexit_sleep_ms=0"
export ASAN_OPTIONS TSAN_OPTIONS

unset LD_PRELOAD FASTTIME_PAGE FASTTIME_DEBUG FASTTIME_INTERVAL_MS FASTTIME_DISABLE
unset FASTTIME_LIBRARY
FASTTIME_FORCE=1
export FASTTIME_FORCE

info=$("$fasttime" --info --format=keys 2>/dev/null)
if ! echo "$info" | grep -q '^fast_path=yes$'; then
	echo "SKIP: the fast path cannot run here"
	exit 77
fi
cpus=$(echo "$info" | sed -n 's/^cpus=//p' | tr ',' ' ')

page_size="" version_at="" version_other="" valid_ticks_at="" records_at="" calibrated_at=""
eval "$("$served" layout)"
case $page_size$records_at in
'' | *[!0-9]*)
	echo "served layout: no page layout"
	exit 99
	;;
esac

scratch=$(mktemp -d "${TMPDIR:-/tmp}/fasttime-page.XXXXXX") || exit 99
chmod 755 "$scratch"
ours=
cleanup() {
	for pid in $ours; do
		kill -CONT "$pid" 2>/dev/null
		kill -KILL "$pid" 2>/dev/null
	done
	# A page a killed service left is append-only (fasttimed(8)).
	chattr -R -a "$scratch" 2>/dev/null
	rm -rf "$scratch"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

# shellcheck source=tests/checks.sh
. "$(dirname "$0")/../checks.sh"
skip() {
	echo "SKIP: $*"
}
show() {
	sed 's/^/    /' "$@"
}
forget() {
	new=
	for pid in $ours; do
		test "$pid" = "$1" || new="$new $pid"
	done
	ours=$new
}

# poll SECONDS COMMAND...: true as soon as COMMAND succeeds.
poll() {
	poll_end=$(($(date +%s) + $1))
	shift
	while ! "$@"; do
		test "$(date +%s)" -lt "$poll_end" || return 1
		sleep 0.05
	done
}

# key FILE NAME: the value of NAME=... in FILE (the last one).
key() {
	sed -n "s/^$2=//p" "$1" | tail -n 1
}

# start_service NAME [WRAP...] -- [fasttimed ARGS]: starts fasttimed behind
# the WRAP command (setpriv, say), its page in $scratch/NAME/page, and waits
# for it to publish; sets service_pid and service_page.
start_service() {
	service_name=$1
	shift
	service_wrap=
	while test "$1" != --; do
		service_wrap="$service_wrap $1"
		shift
	done
	shift
	service_page=$scratch/$service_name/page
	$service_wrap "$fasttimed" --page "$service_page" "$@" \
		>"$scratch/$service_name.log" 2>&1 &
	service_job=$!
	service_pid=$service_job
	ours="$ours $service_job"
	if poll 60 grep -q "^fasttimed: serving $service_page (pid" "$scratch/$service_name.log" &&
		test -f "$service_page"; then
		service_pid=$(sed -n 's/^fasttimed: serving .* (pid \([0-9]*\),.*/\1/p' \
			"$scratch/$service_name.log")
		return 0
	fi
	echo "    fasttimed $service_name did not publish its page:"
	show "$scratch/$service_name.log"
	return 1
}

# stop_service: SIGTERM to the last service started, its status in
# service_status.
stop_service() {
	kill -TERM "$service_pid" 2>/dev/null
	wait "$service_job"
	service_status=$?
	forget "$service_job"
}

reader_asan=$ASAN_OPTIONS
reader_tsan=$TSAN_OPTIONS
# reader NAME PAGE -- ARGS: runs served ARGS under the preload with
# FASTTIME_PAGE=PAGE and FASTTIME_DEBUG=1, behind $reader_wrap (unshare,
# taskset, ...) when set; output in $scratch/NAME.out, status in
# reader_status.
reader_wrap=
reader() {
	reader_out=$scratch/$1.out
	reader_page=$2
	shift 3
	(
		FASTTIME_PAGE=$reader_page
		FASTTIME_DEBUG=1
		export FASTTIME_PAGE FASTTIME_DEBUG
		$reader_wrap env LD_PRELOAD="$life_lib $life_tap" ASAN_OPTIONS="$reader_asan" \
			TSAN_OPTIONS="$reader_tsan" "$served" "$@"
	) >"$reader_out" 2>&1
	reader_status=$?
}

transient='not served by the page .*: stale: the service stopped renewing it$'

# served_reader: reader, again (up to 5 times) where the page was stale
# at its start (a loaded machine kept the service from renewing it).
served_reader() {
	for attempt in 1 2 3 4 5; do
		reader "$@"
		grep -Eq "$transient" "$reader_out" || return 0
		echo "note: $(basename "$reader_out" .out): the page was stale at start (attempt $attempt)"
		sleep 1
	done
}

# time_right OUT: the probe's clocks never stepped back and stayed within
# 5 us of libc's (which answers as the kernel, the vDSO or the system call).
time_right() {
	tr_bad=
	for c in mono real boot; do
		test "$(key "$1" "${c}_backward")" = 0 || tr_bad="$tr_bad $c stepped back;"
		tr_error=$(key "$1" "${c}_max_error_ns")
		test -n "$tr_error" && test "$tr_error" -le 5000 ||
			tr_bad="$tr_bad $c ${tr_error:-?} ns off libc;"
	done
	test -z "$tr_bad"
}

# expect_served WHAT OUT PAGE: served by that page, its clocks from the
# TSC at least once each, and right.
expect_served() {
	es_bad=
	grep -Fq "fasttime: calibration served by the page $3 (service pid" "$2" ||
		es_bad="$es_bad no 'served' debug line;"
	for c in mono real boot; do
		test "$(key "$2" "${c}_fast")" -gt 0 2>/dev/null ||
			es_bad="$es_bad $c never from the TSC;"
	done
	time_right "$2" || es_bad="$es_bad$tr_bad"
	test "$reader_status" = 0 || es_bad="$es_bad exit $reader_status;"
	if test -z "$es_bad"; then
		pass "$1: served, its clocks from the TSC and within 5 us of libc"
	else
		fail "$1:$es_bad"
		show "$2"
	fi
}

# expect_refused WHAT OUT PAGE REASON: refused with that reason, not
# served, and its time right all the same.
expect_refused() {
	er_bad=
	grep -Fq "fasttime: not served by the page $3: $4" "$2" ||
		er_bad="$er_bad no 'not served by the page $3: $4' debug line;"
	! grep -q 'calibration served by the page' "$2" || er_bad="$er_bad served;"
	time_right "$2" || er_bad="$er_bad$tr_bad"
	test "$reader_status" = 0 || er_bad="$er_bad exit $reader_status;"
	if test -z "$er_bad"; then
		pass "$1: refused ($4), its time right"
	else
		fail "$1:$er_bad"
		show "$2"
	fi
}

# put FILE OFFSET BYTES: writes the bytes (printf escapes) at OFFSET.
put() {
	# shellcheck disable=SC2059 # the bytes are the format
	printf "$3" | dd of="$1" bs=1 seek="$2" conv=notrunc 2>/dev/null
}

# add64 FILE OFFSET N: adds N to the little-endian 64-bit word at OFFSET.
add64() {
	add_value=$(($(od -An -td8 -j "$2" -N 8 "$1" | tr -d ' ') + $3))
	add_bytes=
	for add_i in 0 1 2 3 4 5 6 7; do
		add_bytes="$add_bytes$(printf '\\%03o' $(((add_value >> (8 * add_i)) & 255)))"
	done
	put "$1" "$2" "$add_bytes"
}

# copy_reader NAME PAGE EDIT REASON -- ARGS: a fresh copy of the live PAGE
# (root's, mode 644; as another user, that user's sealed memfd), edited by
# the function EDIT, read by reader NAME; a copy found stale, where REASON
# was not the refusal, is made again.
copy_reader() {
	copy_name=$1
	copy_live=$2
	copy_edit=$3
	copy_reason=$4
	shift 4
	copy_page=$scratch/copies/$copy_name
	mkdir -p "$scratch/copies"
	for attempt in 1 2 3 4 5; do
		test "$attempt" = 1 || sleep 1
		rm -f "$copy_page" "$copy_page.file"
		cp "$copy_live" "$copy_page"
		chmod 644 "$copy_page"
		"$copy_edit" "$copy_page"
		# Run as another user than root, the copy is held in a sealed
		# memfd its name links to, as that user's service publishes
		# its page: such a reader trusts no other page of its user's.
		copy_holder=
		if test "$(id -u)" != 0; then
			mv "$copy_page" "$copy_page.file"
			"$served" sealed-copy "$copy_page.file" "$copy_page" \
				>"$scratch/copies/holder.out" 2>&1 &
			copy_holder=$!
			ours="$ours $copy_holder"
			poll 10 grep -q '^ready$' "$scratch/copies/holder.out" ||
				show "$scratch/copies/holder.out"
		fi
		reader "$copy_name" "$copy_page" "$@"
		if test -n "$copy_holder"; then
			kill -TERM "$copy_holder"
			wait "$copy_holder"
			forget "$copy_holder"
		fi
		if ! grep -Eq "$transient" "$reader_out" ||
			grep -Fq "not served by the page $copy_page: $copy_reason" "$reader_out"; then
			return 0
		fi
		echo "note: $copy_name: the copy was stale when read (attempt $attempt)"
	done
}
