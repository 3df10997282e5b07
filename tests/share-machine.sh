#!/bin/sh
# Runs one test script for make check (TEST_LOG_COMPILER): share-machine.sh
# SHELL SCRIPT [ARGS]. make check runs tests side by side; a test that loads
# the whole machine on purpose (a real-time loop hopping from CPU to CPU)
# would starve the tests beside it, which then fail for its load rather
# than their own. Such a test says "# make check: runs alone" in a line of
# its own: it takes the build's machine lock for itself, every other test
# takes it shared. Without flock(1) the tests run as make starts them.
shell=$1
shift
lock=${abs_top_builddir:-.}/tests/machine.lock
mode=--shared
if grep -q '^# make check: runs alone$' "$1"; then
	mode=--exclusive
fi
if command -v flock >/dev/null 2>&1; then
	exec flock "$mode" "$lock" "$shell" "$@"
fi
exec "$shell" "$@"
