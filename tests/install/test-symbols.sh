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

# The node's programs are no library: nothing of the agent daemon or of
# the plugin is exported.
so="$top_builddir/libflowsdn/.libs/libflowsdn.so"
node_syms=$(nm -D --defined-only "$so" | awk '{print $3}' | grep -E '^(flowsdn_agent_|flowsdn_cni_plugin_|flowsdn_cni_install)' || true)
if [ -n "$node_syms" ]; then
	echo "libflowsdn exports agent or plugin symbols:"; echo "$node_syms"; status=1
fi

# The programs load only what they use: no libmicrohttpd in flashctl or
# flowsdn-cni; flowsdn-cni carries neither the datapath loader (libbpf)
# nor the policy compiler.
flashctl="$top_builddir/bin/flashctl/.libs/flashctl"
test -x "$flashctl" || flashctl="$top_builddir/bin/flashctl/flashctl"
plugin="$top_builddir/bin/flowsdn-cni"
libs="$top_builddir/libflowsdn/.libs:$top_builddir/libflash/.libs"
for prog in "$flashctl" "$plugin"; do
	test -x "$prog" || { echo "$prog missing"; exit 1; }
	deps=$(LD_LIBRARY_PATH="$libs" ldd "$prog") || { echo "ldd $prog failed"; exit 1; }
	if echo "$deps" | grep -q 'not found'; then
		echo "$prog: unresolved libraries:"; echo "$deps"; exit 1
	fi
	if echo "$deps" | grep -q libmicrohttpd; then
		echo "$prog loads libmicrohttpd"; status=1
	fi
done
if LD_LIBRARY_PATH="$libs" ldd "$plugin" | grep -q libbpf; then
	echo "$plugin loads libbpf"; status=1
fi
carried=$(nm "$plugin" | awk '{print $3}' | grep -E '^flowsdn_(datapath|maps|policy|ipam|identity|maglev)_' || true)
if [ -n "$carried" ]; then
	echo "$plugin carries modules it does not use:"; echo "$carried" | head; status=1
fi
echo "flowsdn-cni: $(wc -c <"$plugin") bytes, no loader, no policy compiler, no libmicrohttpd"
exit $status
