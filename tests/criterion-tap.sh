#!/bin/sh
# Runs one Criterion test program with its TAP report on stdout (read by
# automake's TAP driver) and its human-readable report merged after it.
t=$1
shift
case "$t" in
*test-operator-http | *test-node)
	# Criterion 2.4.1's parallel runner leaks 48 bytes of its own (a
	# calloc inside libcriterion.so, no frame of ours) when this
	# program's TLS tests run beside its slow-client tests, which
	# LeakSanitizer reports under --enable-sanitizers (test-node too,
	# under clang).  A suppression
	# would also hide leaks of test code (every test runs under
	# libcriterion frames), so this one program runs its tests one at a
	# time instead; each test alone and --jobs=1 are leak-free.
	set -- --jobs=1 "$@" ;;
esac
exec "$t" --tap=/dev/stdout --ascii "$@" 2>&1
