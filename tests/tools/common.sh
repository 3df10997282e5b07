# Shared by the tests of the fasttime command: where things are, a scratch
# directory, and assertions that report every failure before the verdict.
#
# Sourced with abs_top_builddir and abs_top_srcdir set by make check; run by
# hand from the build directory, they default to it and to the source
# directory recorded in its Makefile.

abs_top_builddir=${abs_top_builddir:-$(pwd)}
if [ -z "${abs_top_srcdir:-}" ]; then
    abs_top_srcdir=$(sed -n 's/^abs_top_srcdir = //p' "$abs_top_builddir/Makefile" 2>/dev/null)
fi
fasttime=$abs_top_builddir/src/fasttime
if [ ! -x "$fasttime" ]; then
    echo "ERROR: $fasttime is missing: build it first" >&2
    exit 99
fi

# The caller's settings must not leak into what is asserted.
unset LD_PRELOAD FASTTIME_LIBRARY FASTTIME_MODE FASTTIME_INTERVAL_MS FASTTIME_DEBUG
unset FASTTIME_DISABLE OMP_NUM_THREADS OMP_THREAD_LIMIT
# A library built with AddressSanitizer is preloaded into programs that are
# not: its runtime cannot come first there, and need not.
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0
export ASAN_OPTIONS

scratch=$(mktemp -d "${TMPDIR:-/tmp}/fasttime-test.XXXXXX") || exit 99
trap 'rm -rf "$scratch"' EXIT

# shellcheck source=tests/checks.sh
. "$(dirname "$0")/../checks.sh"

# run COMMAND...: runs it, output in $scratch/out and $scratch/err, status in $status.
run() {
    "$@" >"$scratch/out" 2>"$scratch/err"
    status=$?
}

# expect_status WANT WHAT: checks the status of the last run.
expect_status() {
    if [ "$status" -eq "$1" ]; then
        pass "$2: exit $status"
    else
        fail "$2: exit $status, expected $1"
        sed 's/^/    stderr: /' "$scratch/err"
    fi
}

# expect_grep FILE PATTERN WHAT: checks that FILE has a line matching the
# extended regular expression PATTERN.
expect_grep() {
    if grep -Eq -- "$2" "$1"; then
        pass "$3"
    else
        fail "$3: no line matches /$2/ in:"
        sed 's/^/    /' "$1"
    fi
}

# expect_no_grep FILE PATTERN WHAT: the opposite.
expect_no_grep() {
    if grep -Eq -- "$2" "$1"; then
        fail "$3: unexpected line matching /$2/:"
        grep -E -- "$2" "$1" | sed 's/^/    /'
    else
        pass "$3"
    fi
}

