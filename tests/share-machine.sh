#!/bin/sh
# Runs one test script for make check (TEST_LOG_COMPILER): share-machine.sh
# SHELL SCRIPT [ARGS]. make check runs tests side by side; a test that loads
# the whole machine on purpose (a real-time loop hopping from CPU to CPU)
# would starve the tests beside it, which then fail for its load rather
# than their own. Such a test says "# make check: runs alone" in a line of
# its own: it takes the machine lock for itself, every other test takes it
# shared. Without flock(1) the tests run as make starts them.
#
# The lock is the build's own (tests/machine.lock), unless
# TESTS_MACHINE_LOCK names another file: CI runs several builds' suites at
# once and names one lock for all of them, so that a test runs alone on the
# machine, not only among its own build's tests. A test waiting to run alone
# holds the turnstile (the lock's name with .turn) while it waits, and
# every test passes the turnstile before it takes its lock: tests that come
# later wait behind it instead of keeping it out for as long as the other
# suites run.
shell=$1
shift
lock=${TESTS_MACHINE_LOCK:-${abs_top_builddir:-.}/tests/machine.lock}
mode=-s
if grep -q '^# make check: runs alone$' "$1"; then
	mode=-x
fi
if command -v flock >/dev/null 2>&1; then
	exec 8>>"$lock.turn" 9>>"$lock"
	flock -x 8
	flock "$mode" 9
	flock -u 8
	exec 8>&-
fi
exec "$shell" "$@"
