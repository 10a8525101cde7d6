#!/bin/sh
# Replays every fuzz target (built with tests/fuzz/replay-main.c outside a
# fuzzing build) over its seed corpus tests/fuzz/corpus/NAME/, the seed
# directories of tests/fuzz/NAME.args and the crashes found so far,
# tests/fuzz/regress/NAME/ (a crash libFuzzer found goes there, named by
# what it broke, with the fix).  A crash or sanitizer report fails the test.
set -eu
src=${top_srcdir:-.}
build=${top_builddir:-.}
cd "$src"
fail=0 n=0
for t in $(MAKEFLAGS= ${MAKE:-make} -s -C "$build" print-fuzz-targets); do
	name=$(basename "$t")
	dirs=""
	[ ! -d "tests/fuzz/corpus/$name" ] || dirs="tests/fuzz/corpus/$name"
	[ ! -d "tests/fuzz/regress/$name" ] || dirs="$dirs tests/fuzz/regress/$name"
	if [ -f "tests/fuzz/$name.args" ]; then
		for a in $(cat "tests/fuzz/$name.args"); do
			case $a in -*) ;; *) dirs="$dirs $a" ;; esac
		done
	fi
	[ -n "$dirs" ] || continue
	n=$((n + 1))
	# shellcheck disable=SC2086
	if ! "$build/$t" $dirs; then
		echo "replay $name: FAILED on $dirs" >&2
		fail=1
	fi
done
[ "$n" -gt 0 ] || { echo "no fuzz target to replay" >&2; exit 1; }
exit $fail
