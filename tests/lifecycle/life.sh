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

# Runs life_run NAME [ARGS] once in each reading this machine can take:
# ordered (rdtscp where the CPU advertises it, else lfence; rdtsc with the
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
			life_run "$@"
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
