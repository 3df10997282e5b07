# Sourced by the lifecycle .test scripts: where the built files are, and how
# to run a test program under the preload.

life_builddir=${abs_top_builddir:-$(pwd)}
life_lib=$life_builddir/src/.libs/libfasttime.so
life_tap=$life_builddir/tests/lifecycle/.libs/liblifetap.so
# Counts the descriptors made beneath the library (opens.c), for the tests
# that set life_preload_after=$life_opens.
life_opens=$life_builddir/tests/lifecycle/.libs/liblifeopens.so

for f in "$life_lib" "$life_tap" "$life_opens"; do
	if test ! -f "$f"; then
		echo "missing $f: run 'make check' (abs_top_builddir=$life_builddir)"
		exit 99
	fi
done

# A soak is asked for with FASTTIME_SOAK=1.
case ${FASTTIME_SOAK:-0} in
0 | no | '') life_soak=false ;;
*) life_soak=true ;;
esac

# Whether the library was built with a sanitizer (its runtime is linked
# in): there the instrumentation, not the library, sets the pace.
life_sanitized() {
	ldd "$life_lib" 2>/dev/null | grep -qE 'lib(asan|tsan|ubsan)'
}

# These tests are about the counter path: it answers even where the library
# measured libc faster at start (FASTTIME_FORCE=0 lets the library choose,
# and the tests skip where it chose libc).
FASTTIME_FORCE=${FASTTIME_FORCE:-1}
export FASTTIME_FORCE
# Each process calibrates alone unless a test names a calibration service's
# page: none is served by a service the machine may run.
FASTTIME_PAGE=${FASTTIME_PAGE-none}
export FASTTIME_PAGE

# Runs tests/lifecycle/NAME [ARGS] under libfasttime.so, with the tap behind
# it (it counts what fasttime passes on to libc), and behind that whatever
# $life_preload_after names, when set. Sanitizer builds: the
# preloaded library comes before the sanitizer's runtime, the fork test
# starts a thread in a forked child on purpose, and ThreadSanitizer's pause
# of a second at every process exit would trip the watchdogs of the tests
# that run many short children.
life_run() {
	life_prog=$life_builddir/tests/lifecycle/$1
	shift
	LD_PRELOAD="$life_lib $life_tap${life_preload_after:+ $life_preload_after}" \
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
	TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS:}die_after_fork=0:atexit_sleep_ms=0" \
		"$life_prog" "$@"
}

# Runs life_run NAME [ARGS] in a process served by a calibration service:
# fasttimed, with the tap before libc, publishes a page in a scratch
# directory, and the test reads it (FASTTIME_PAGE). The tap's moves of the
# clock and its hold are shared through a file (LIFE_TAP_SHARED), so that
# the service sees the kernel's clock move as the test moves it, and a hold
# stops the service's refresh thread. The service runs in the caller's
# FASTTIME_MODE, FASTTIME_FORCE and FASTTIME_HWCAPS, as a reader requires.
# LIFE_SERVED=1 makes the test exit 75 where its page was refused at start
# (a loaded machine kept the service from renewing it): it runs again then,
# up to 5 times, with a new service.
life_fasttimed=$life_builddir/src/fasttimed
life_run_served() {
	life_served_rc=75
	life_served_attempt=0
	while test "$life_served_rc" = 75 && test "$life_served_attempt" -lt 5; do
		life_served_attempt=$((life_served_attempt + 1))
		life_served_dir=$(mktemp -d "${TMPDIR:-/tmp}/fasttime-life.XXXXXX") || return 99
		LIFE_TAP_SHARED=$life_served_dir/tap LD_PRELOAD=$life_tap \
		ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
		TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS:}die_after_fork=0:atexit_sleep_ms=0" \
			"$life_fasttimed" --page "$life_served_dir/page" \
			>"$life_served_dir/log" 2>&1 &
		life_served_pid=$!
		life_served_waited=0
		while test ! -f "$life_served_dir/page" && kill -0 "$life_served_pid" 2>/dev/null &&
			test "$life_served_waited" -lt 1200; do
			sleep 0.05
			life_served_waited=$((life_served_waited + 1))
		done
		if test ! -f "$life_served_dir/page"; then
			kill -KILL "$life_served_pid" 2>/dev/null
			wait "$life_served_pid"
			# A service that says the fast path cannot run in this
			# reading (a ThreadSanitizer build with the CPU id from
			# getcpu: no sandwich narrow enough) has nothing to serve:
			# this reading skips. Anything else is an error.
			if grep -q '^fasttimed: the fast path cannot run here' "$life_served_dir/log"; then
				echo "SKIP: $(cat "$life_served_dir/log")"
				rm -rf "$life_served_dir"
				return 77
			fi
			echo "fasttimed published no page:"
			sed 's/^/    /' "$life_served_dir/log"
			rm -rf "$life_served_dir"
			return 99
		fi
		(
			FASTTIME_PAGE=$life_served_dir/page
			LIFE_TAP_SHARED=$life_served_dir/tap
			LIFE_SERVED=1
			export FASTTIME_PAGE LIFE_TAP_SHARED LIFE_SERVED
			life_run "$@"
		)
		life_served_rc=$?
		# A test that ended with the gate closed would leave the
		# service's thread held, and its SIGTERM waiting for it: the gate
		# opens first (the first two bytes of tap.c's struct tap_state).
		dd if=/dev/zero of="$life_served_dir/tap" bs=1 count=2 conv=notrunc 2>/dev/null
		kill -TERM "$life_served_pid"
		wait "$life_served_pid"
		life_served_status=$?
		if test "$life_served_status" != 0; then
			echo "fasttimed ended with status $life_served_status:"
			sed 's/^/    /' "$life_served_dir/log"
			test "$life_served_rc" != 0 || life_served_rc=1
		fi
		rm -rf "$life_served_dir"
		test "$life_served_rc" != 75 || echo "note: not served at start (attempt $life_served_attempt)"
	done
	return "$life_served_rc"
}

# Runs $life_runner (life_run, or life_run_served) NAME [ARGS] once in
# each reading this machine can take: ordered (rdtscp where the CPU advertises it, else lfence; rdtsc with the
# rseq CPU id), relaxed (rdtsc with the rseq CPU id), ordered with rdtscp
# hidden (lfence; rdtsc) where the CPU has rdtscp, relaxed with glibc's
# rseq off (the CPU id from getcpu), and ordered and relaxed without
# FASTTIME_FORCE, as users run them. Fails as soon as one fails; skips only
# when every reading skips.
life_run_each_reading() {
	life_status=77
	life_readings="ordered relaxed"
	if grep -qw rdtscp /proc/cpuinfo 2>/dev/null; then
		life_readings="$life_readings ordered-lfence"
	fi
	# And each mode as users get it: the library's own per-API choice, not
	# forced (a run whose choice left the clock to libc skips).
	life_readings="$life_readings relaxed-norseq ordered-chosen relaxed-chosen"
	for life_reading in $life_readings; do
		echo "--- reading: $life_reading"
		(
			case $life_reading in
			ordered) FASTTIME_MODE=ordered ;;
			relaxed) FASTTIME_MODE=relaxed ;;
			ordered-lfence)
				FASTTIME_MODE=ordered
				FASTTIME_HWCAPS=-rdtscp
				export FASTTIME_HWCAPS
				;;
			relaxed-norseq)
				FASTTIME_MODE=relaxed
				GLIBC_TUNABLES=${GLIBC_TUNABLES:+$GLIBC_TUNABLES:}glibc.pthread.rseq=0
				export GLIBC_TUNABLES
				;;
			ordered-chosen | relaxed-chosen)
				FASTTIME_MODE=${life_reading%-chosen}
				FASTTIME_FORCE=0
				;;
			esac
			export FASTTIME_MODE
			${life_runner:-life_run} "$@"
		)
		life_rc=$?
		case $life_rc in
		0) life_status=0 ;;
		77) ;;
		*) return $life_rc ;;
		esac
	done
	return $life_status
}
