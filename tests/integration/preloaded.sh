# Sourced by the tests/integration/*.test scripts, which the harness runs with
# the top build directory as the current one. It provides:
#   $lib        the library under test, an absolute path in this build tree
#   $programs   the directory the integration programs were built in
#   preloaded [NAME=VALUE...] PROGRAM [ARG...]
#               runs PROGRAM with the library preloaded (and the settings)
#   plain [NAME=VALUE...] PROGRAM [ARG...]
#               runs it without the library, for a reference run
# A script's status is the test's: 0 pass, 77 skip, 99 error, else fail.

integ_builddir=${abs_top_builddir:-$(pwd)}
lib=$integ_builddir/src/.libs/libfasttime.so
programs=$integ_builddir/tests/integration
if test ! -f "$lib"; then
    echo "$lib is not built (abs_top_builddir=$integ_builddir)"
    exit 99
fi

# Each test chooses its own settings: none may leak in from the caller's
# environment, except FASTTIME_SOAK (the tests' own knob for long runs) and
# FASTTIME_HWCAPS (which runs the suite as a machine without a CPU feature,
# FASTTIME_HWCAPS=-rdtscp make check; a test that sets it itself wins).
# Nor is any served by a calibration service the machine may run.
for integ_name in $(env | sed -n 's/^\(FASTTIME_[A-Za-z0-9_]*\)=.*/\1/p'); do
    case $integ_name in
    FASTTIME_SOAK | FASTTIME_HWCAPS) ;;
    *) unset "$integ_name" ;;
    esac
done
FASTTIME_PAGE=none
export FASTTIME_PAGE
unset LD_PRELOAD

# A library built with --enable-asan or --enable-tsan needs its sanitizer's
# runtime loaded before it.
integ_runtimes=$(ldd "$lib" 2>/dev/null |
    awk '$1 ~ /^lib[at]san\.so/ && $3 ~ /^\// { printf "%s ", $3 }')

preloaded() {
    env LD_PRELOAD="$integ_runtimes$lib" "$@"
}

plain() {
    env "$@"
}
