#!/bin/sh
# Names lead to code, and the files of one module form no circle.
#
# 1. Every public header <lib/x.h> is implemented by libx/x.c or libx/x-*.c
#    (a header that declares no function, such as <flowsdn/maps.h>, needs
#    no file, and then no file may carry its name).
# 2. Inside a module (in a library, the files that share the name before
#    the first '-': policy.c, policy-parse.c, policy-model.c, ...; a private
#    folder such as common/ or agent/ is one module as a whole), the
#    "calls" relation between files, read from the objects with nm (A calls
#    B when A refers to a symbol that B defines), has no cycle: the shared
#    helpers of a module sit in leaf files that the others call.
# 3. Every function a public header <lib/x.h> declares is defined, in the
#    library's objects (nm), by libx/x.c or libx/x-*.c: no header has part
#    of its functions in a file its name does not lead to.
set -eu
: "${top_srcdir:?}" "${top_builddir:?}"
status=0

# ---------------------------------------------------------------- 1. headers
for hdr in "$top_srcdir"/include/flowsdn/*.h "$top_srcdir"/include/flash/*.h; do
	lib=$(basename "$(dirname "$hdr")")
	x=$(basename "$hdr" .h)
	dir="$top_srcdir/lib$lib"
	# Headers of declarations only (conventions, map layouts shared with
	# BPF) have no implementation file; every other header has one.
	if ! grep -q '^\(FLOWSDN\|FLASH\)_API ' "$hdr"; then
		if [ -f "$dir/$x.c" ]; then
			echo "<$lib/$x.h> declares no function, yet lib$lib/$x.c exists (name it after what it implements)"
			status=1
		fi
		continue
	fi
	if [ ! -f "$dir/$x.c" ] && ! ls "$dir/$x"-*.c >/dev/null 2>&1; then
		echo "<$lib/$x.h>: neither lib$lib/$x.c nor lib$lib/$x-*.c exists"
		status=1
	fi
done

# ---------------------------------------------------------------- 2. circles
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n_modules=0 n_files=0
for dir in common libflowsdn libflash agent cni operator; do
	objdir="$top_builddir/$dir/.libs"
	[ -d "$objdir" ] || continue
	# libtool names the PIC object <libname>_la-<source>.o
	for o in "$objdir"/*_la-*.o; do
		[ -f "$o" ] || continue
		src=$(basename "$o" .o | sed 's/^.*_la-//')
		# an object left behind by a renamed source is not the tree's
		[ -f "$top_srcdir/$dir/$src.c" ] || continue
		# A library's module is a name prefix; a private folder (common/,
		# a program's own folder) is one module.
		case $dir in
		libflowsdn | libflash) mod=${src%%-*} ;;
		*) mod=all ;;
		esac
		echo "$dir $mod $src $o"
	done
done | sort -u >"$tmp/objects"

while read -r dir mod src o; do
	nm --defined-only -g "$o" | awk -v f="$src" 'NF == 3 && $2 ~ /[TDBR]/ {print $3, f}' >>"$tmp/$dir.$mod.defs"
	nm -u "$o" | awk -v f="$src" '{print f, $NF}' >>"$tmp/$dir.$mod.uses"
	n_files=$((n_files + 1))
done <"$tmp/objects"

for defs in "$tmp"/*.defs; do
	[ -f "$defs" ] || continue
	key=$(basename "$defs" .defs)
	uses="$tmp/$key.uses"
	n_modules=$((n_modules + 1))
	# Edges "A B": A refers to a symbol B defines (A != B).
	awk 'NR == FNR {def[$1] = $2; next} ($2 in def) && def[$2] != $1 {print $1, def[$2]}' \
		"$defs" "$uses" | sort -u >"$tmp/$key.edges"
	[ -s "$tmp/$key.edges" ] || continue
	# tsort reports a cycle on stderr; it is a circle of calling files.
	if ! tsort "$tmp/$key.edges" >/dev/null 2>"$tmp/$key.tsort"; then
		what="the ${key#*.} module's files"
		[ "${key#*.}" = all ] && what="its files"
		echo "${key%%.*}/: $what call each other in a circle:"
		sed -n 's/^tsort: \([^ ]*\)$/  \1/p' "$tmp/$key.tsort"
		# Name the symbols on each mutual pair, to say what to move.
		awk '{e[$1 " " $2] = 1} END {for (k in e) {split(k, p, " "); if ((p[2] " " p[1]) in e && p[1] < p[2]) print "  " p[1] " <-> " p[2]}}' \
			"$tmp/$key.edges"
		status=1
	fi
done

# ---------------------------------------------------------------- 3. definitions
# Every function a public header <lib/x.h> declares is defined (nm, in the
# library's objects) by libx/x.c or libx/x-*.c, the files its name leads to.
n_fns=0
for hdr in "$top_srcdir"/include/flowsdn/*.h "$top_srcdir"/include/flash/*.h; do
	lib=$(basename "$(dirname "$hdr")")
	x=$(basename "$hdr" .h)
	sed -n 's/^\(FLOWSDN\|FLASH\)_API[^(]*[ *]\([a-z_0-9]*\)(.*/\2/p' "$hdr" |
		while read -r fn; do echo "$fn $lib $x"; done
done | sort >"$tmp/declared"
while read -r dir mod src o; do
	case $dir in libflowsdn | libflash) ;; *) continue ;; esac
	nm --defined-only -g "$o" | awk -v d="$dir" -v f="$src" 'NF == 3 && $2 == "T" {print $3, d, f}'
done <"$tmp/objects" | sort -u >"$tmp/lib-defs" # one row per (function, file): a stale object of a library split since may repeat one
while read -r fn lib x; do
	n_fns=$((n_fns + 1))
	where=$(awk -v fn="$fn" -v d="lib$lib" '$1 == fn && $2 == d {print $3}' "$tmp/lib-defs")
	case $where in
	"") echo "$fn (<$lib/$x.h>) is defined in no object of lib$lib"; status=1 ;;
	"$x" | "$x"-*) ;;
	*) echo "$fn (<$lib/$x.h>) is defined in lib$lib/$where.c, not in lib$lib/$x.c or lib$lib/$x-*.c"; status=1 ;;
	esac
done <"$tmp/declared"

test "$n_files" -gt 0 || { echo "no library objects under $top_builddir"; exit 1; }
test "$n_fns" -gt 0 || { echo "no function declared in include/"; exit 1; }
test $status = 0 && echo "$n_files objects in $n_modules modules: public headers map to files, no module calls itself in a circle;" \
	"the $n_fns functions of include/ are defined in the files of their headers"
exit $status
