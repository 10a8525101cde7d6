#!/bin/sh
# Every man page renders without groff/man warnings.
set -eu
: "${top_srcdir:?}"
command -v man >/dev/null || { echo "man not installed (apt-get install man-db)"; exit 77; }
status=0 n=0
for page in "$top_srcdir"/man/man*/*.[1-9]; do
	[ -f "$page" ] || continue
	n=$((n + 1))
	out=$(MANWIDTH=80 LC_ALL=C.UTF-8 man --warnings -E UTF-8 -l "$page" 2>&1 >/dev/null || echo "man exited non-zero")
	if [ -n "$out" ]; then
		echo "$page:"; echo "$out"; status=1
	fi
done
test "$n" -gt 0 || { echo "no man pages found"; exit 1; }
echo "$n man pages render cleanly"
exit $status
