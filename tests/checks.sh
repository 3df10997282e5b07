# shellcheck shell=sh
# Sourced by the shell tests: each check prints one line, "ok: WHAT" or
# "FAIL: WHAT", and a test that runs many checks ends with finish, so that
# one failure does not hide the checks after it. Set checks_prefix before
# sourcing to name the script on every line (for scripts run outside the
# harness, whose output is not kept in a log of their own).
checks_prefix=${checks_prefix-}
failures=0

# fail WHAT: one failed check, counted.
fail() {
	echo "${checks_prefix}FAIL: $*"
	failures=$((failures + 1))
}

# pass WHAT: one check that held.
pass() {
	echo "${checks_prefix}ok: $*"
}

# finish: exits 1 when any check failed (saying how many), else 0.
finish() {
	if test "$failures" -ne 0; then
		echo "${checks_prefix}$failures check(s) failed"
		exit 1
	fi
	exit 0
}
