#!/bin/sh
# The man pages: each renders without groff/man warnings; the man3 pages
# follow one naming scheme (man/man3-links.sh) and document every function
# the libraries export; every reference to one of this project's pages
# resolves to a page in man/ (or to a function's link page); every page is
# installed.
set -eu
: "${top_srcdir:?}" "${top_builddir:?}"
command -v man >/dev/null || { echo "man not installed (apt-get install man-db)"; exit 77; }
status=0 n=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# ---------------------------------------------------------------- rendering
for page in "$top_srcdir"/man/man*/*.[1-9]; do
	[ -f "$page" ] || continue
	n=$((n + 1))
	out=$(MANWIDTH=80 LC_ALL=C.UTF-8 man --warnings -E UTF-8 -l "$page" 2>&1 >/dev/null || echo "man exited non-zero")
	if [ -n "$out" ]; then
		echo "$page:"; echo "$out"; status=1
	fi
done
test "$n" -gt 0 || { echo "no man pages found"; exit 1; }

# ---------------------------------------------------------------- man3 scheme
# "FUNCTION PAGE" for every function the public headers declare.
sh "$top_srcdir/man/man3-links.sh" "$top_srcdir" | sort >"$tmp/links"
awk '{print $2}' "$tmp/links" | sort -u >"$tmp/module-pages"
for page in "$top_srcdir"/man/man3/*.3; do
	name=$(basename "$page" .3)
	grep -qx "$name" "$tmp/module-pages" && continue
	echo "man/man3/$name.3: not a module page of the scheme (lib<library> or <prefix>_<module> for a header <prefix/module.h>)"
	status=1
done
while read -r page; do
	[ -f "$top_srcdir/man/man3/$page.3" ] && continue
	echo "man/man3/$page.3 is missing: its header's functions have no page"
	status=1
done <"$tmp/module-pages"

# Every struct a man3 SYNOPSIS names is one a public header declares
# ("struct NAME;" or "struct NAME {"): a page cannot keep a type that is gone.
cat "$top_srcdir"/include/flowsdn/*.h "$top_srcdir"/include/flash/*.h |
	sed -n 's/.*struct \([a-z_0-9]*\) *[{;].*/\1/p' | sort -u >"$tmp/structs"
for page in "$top_srcdir"/man/man3/*.3; do
	awk '/^\.SH SYNOPSIS/ { s = 1; next } /^\.SH/ { s = 0 } s' "$page" |
		grep -o 'struct [A-Za-z_][A-Za-z0-9_]*' | awk '{print $2}' | sort -u |
		comm -23 - "$tmp/structs" | while read -r st; do
		echo "man/man3/$(basename "$page"): SYNOPSIS names struct $st, which no public header declares"
	done
done >"$tmp/stale-structs"
if [ -s "$tmp/stale-structs" ]; then cat "$tmp/stale-structs"; status=1; fi

# Every exported symbol is declared in a public header (so it gets a link
# page) and named on its module's page.
for lib in libflowsdn/.libs/libflowsdn.so libflash/.libs/libflash.so; do
	so="$top_builddir/$lib"
	test -f "$so" || { echo "$so missing"; exit 1; }
	nm -D --defined-only "$so" | awk '$2 != "A" {sub(/@.*/, "", $3); print $3}'
done | sort -u >"$tmp/exported"
awk '{print $1}' "$tmp/links" | sort -u >"$tmp/declared"
for fn in $(comm -23 "$tmp/exported" "$tmp/declared"); do
	echo "$fn is exported but declared in no public header: it has no man page"
	status=1
done
while read -r fn page; do
	grep -q "$fn\\b" "$top_srcdir/man/man3/$page.3" 2>/dev/null && continue
	echo "$fn: not described on $page(3)"
	status=1
done <"$tmp/links"

# ---------------------------------------------------------------- references
# .BR name (N) and \fBname\fR(N) naming this project's pages.
refs=0
for page in "$top_srcdir"/man/man*/*.[1-9]; do
	sed -n -e 's/^\.BR \([A-Za-z0-9_.\\-]*\) (\([1-8]\)).*/\1 \2/p' \
		-e 's/.*\\fB\([A-Za-z0-9_.\\-]*\)\\fR(\([1-8]\)).*/\1 \2/p' "$page" |
		sed 's/\\-/-/g' | sed "s|^|$(basename "$page") |"
done | sort -u >"$tmp/refs"
while read -r from name sec; do
	case $name in
	flash* | flowsdn* | libflash* | libflowsdn*) ;;
	*) continue ;; # another project's page
	esac
	refs=$((refs + 1))
	[ -f "$top_srcdir/man/man$sec/$name.$sec" ] && continue
	[ "$sec" = 3 ] && grep -q "^$name " "$tmp/links" && continue
	echo "$from cites $name($sec), which does not exist"
	status=1
done <"$tmp/refs"

# ---------------------------------------------------------------- installed
for page in "$top_srcdir"/man/man*/*.[1-9]; do
	rel=${page#"$top_srcdir"/}
	grep -q "^[[:space:]]*$rel \\\\$" "$top_srcdir/Makefile.am" && continue
	echo "$rel is not in dist_man_MANS (it would not be installed)"
	status=1
done

test $status = 0 && echo "$n man pages render cleanly; $(wc -l <"$tmp/links") exported functions documented on" \
	"$(wc -l <"$tmp/module-pages") module pages; $refs references resolve"
exit $status
