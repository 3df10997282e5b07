# Sourced by the tests/syscallclock/*.test scripts, from the top build
# directory like tests/integration's. On top of preloaded.sh ($lib,
# $programs, the sanitizer runtimes) it provides:
#   $helper     libsyscallclock.so, the kernel clock as a system call
#   beneath [NAME=VALUE...] PROGRAM [ARG...]
#               runs PROGRAM with the library preloaded and the helper
#               behind it
#   beneath_accuracy [NAME=VALUE...]
#               runs tests/integration/accuracy that way, without
#               FASTTIME_FORCE, and judges the library's choice; the
#               script's status is the verdict
# shellcheck source=tests/integration/preloaded.sh
. "$(dirname "$0")/../integration/preloaded.sh"

helper=$integ_builddir/tests/syscallclock/.libs/libsyscallclock.so
if test ! -f "$helper"; then
	echo "$helper is not built: run 'make check' (abs_top_builddir=$integ_builddir)"
	exit 99
fi

# The helper comes right after the library: the library's dlsym(RTLD_NEXT)
# takes the next definition in the search order, and that must be the
# helper's. A sanitizer's runtime still comes first (preloaded.sh).
beneath() {
	env LD_PRELOAD="$integ_runtimes$lib $helper" "$@"
}

# The five entry points as the library names them in its FASTTIME_DEBUG
# lines, and the four the accuracy program brackets (its table's rows).
beneath_apis='clock_gettime(CLOCK_MONOTONIC) clock_gettime(CLOCK_REALTIME) gettimeofday time timespec_get(TIME_UTC)'
beneath_rows='clock_gettime(CLOCK_MONOTONIC) clock_gettime(CLOCK_REALTIME) gettimeofday timespec_get(TIME_UTC)'

# When the first choice came is printed, never judged: no test asserts a
# duration (the machines are shared and noisy). That the thread wakes for
# the first line as soon as the sandwiches allow it, rather than on its
# fixed 10/40/160/640 ms schedule (0.93 to 1.05 s in, with system-call
# sandwiches), is unit-tested: test_calib_first_line_due and
# test_refresh_wakes_for_first_line.

beneath_failures=0

beneath_fail() {
	echo "FAIL: $*"
	beneath_failures=$((beneath_failures + 1))
}

beneath_accuracy() {
	beneath_tmp=$(mktemp -d "${TMPDIR:-/tmp}/syscallclock.XXXXXX") || exit 99
	trap 'rm -rf "$beneath_tmp"' EXIT
	beneath FASTTIME_DEBUG=1 "$@" "$programs/accuracy" >"$beneath_tmp/out" 2>"$beneath_tmp/err"
	beneath_rc=$?
	cat "$beneath_tmp/out"
	sed 's/^/stderr: /' "$beneath_tmp/err"
	# The accuracy program skips where the CPU cannot run the fast path.
	test "$beneath_rc" -ne 77 || exit 77
	test "$beneath_rc" -eq 0 ||
		beneath_fail "accuracy exited $beneath_rc: its own assertions (error, backward steps) above"

	# (a) Every entry point on the TSC, by the library's own account:
	# each choice it logged (it may measure again when more CPUs get lines)
	# says fast, and there is one for each entry point.
	for api in $beneath_apis; do
		grep -F -e "fasttime: $api: " "$beneath_tmp/err" |
			grep -E ': (fast|libc)$' >"$beneath_tmp/choice"
		if test ! -s "$beneath_tmp/choice"; then
			beneath_fail "$api: the library logged no choice"
		elif ! grep -E ': libc$' "$beneath_tmp/choice" >/dev/null; then
			:
		elif test -n "$integ_runtimes"; then
			# Under a sanitizer the instrumentation sets the fast
			# path's pace (about 130 ns under ThreadSanitizer with
			# lfence and getcpu), so the choice says nothing of the
			# library's; the plain suite judges it.
			echo "note: $api left on libc under a sanitizer, not judged: $(grep -E ': libc$' "$beneath_tmp/choice")"
		else
			beneath_fail "$api: left on libc over a system call: $(grep -E ': libc$' "$beneath_tmp/choice")"
		fi
	done
	# ... and by the program's: its table's path column.
	for row in $beneath_rows; do
		path=$(awk -v row="$row" '$1 == row { print $2; exit }' "$beneath_tmp/out")
		test "$path" = fast || beneath_fail "$row: path '$path' in the accuracy table, not 'fast'"
		# (c) no backward step: the program asserts it, and so does this.
		back=$(awk -v row="$row" '$1 == row { print $9; exit }' "$beneath_tmp/out")
		test "$back" = 0 || beneath_fail "$row: '$back' backward steps"
	done

	# The first choice, as the library logged it.
	chosen=$(sed -n 's/.*entry points chosen after round.* \([0-9][0-9]*\.[0-9]*\) s after start.*/\1/p' \
		"$beneath_tmp/err" | head -n 1)
	if test -z "$chosen"; then
		beneath_fail "no 'entry points chosen after round N, X s after start' line"
	else
		echo "entry points chosen $chosen s after start"
	fi

	test "$beneath_failures" -eq 0 || exit 1
	exit 0
}
