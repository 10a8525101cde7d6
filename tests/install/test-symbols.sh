#!/bin/sh
# The shared libraries export only their own prefixed symbols, each in a
# version node of their linker script.
set -eu
: "${top_builddir:?}"
status=0
for lib in libflowsdn/.libs/libflowsdn.so libflash/.libs/libflash.so; do
	so="$top_builddir/$lib"
	test -f "$so" || { echo "$so missing"; exit 1; }
	prefix=$(basename "$lib" .so | sed 's/^lib//')_
	node=$(echo "$prefix" | tr 'a-z_' 'A-Z_')
	# Defined dynamic symbols, less the version-node names themselves.
	syms=$(nm -D --defined-only "$so" | awk '{print $3}' | grep -v "^${node}[0-9]")
	bad=$(echo "$syms" | grep -v "^${prefix}" || true)
	if [ -n "$bad" ]; then
		echo "$lib exports symbols without the ${prefix} prefix:"; echo "$bad"; status=1
	fi
	n=$(echo "$syms" | grep -c "^${prefix}" || true)
	test "$n" -gt 0 || { echo "$lib exports nothing"; status=1; }
	unversioned=$(objdump -T "$so" | awk -v p="$prefix" '$NF ~ "^"p && $(NF-1) !~ /^[A-Z]+_[0-9]/ {print $NF}')
	if [ -n "$unversioned" ]; then
		echo "$lib: symbols outside a version node:"; echo "$unversioned"; status=1
	fi
	echo "$lib: $n exported symbols, all ${prefix}*, all versioned"
done
exit $status
