#!/bin/sh
# Installs the project into a temporary DESTDIR, then builds and runs
# examples/addrinfo.c against the installed headers, libraries and .pc
# files found with pkg-config alone.
set -eu
: "${top_srcdir:?}" "${top_builddir:?}" "${MAKE:=make}" "${CC:=cc}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

$MAKE -s -C "$top_builddir" install DESTDIR="$tmp/root" >"$tmp/install.log" 2>&1 || {
	cat "$tmp/install.log"; echo "make install failed"; exit 1; }
pcdir=$(dirname "$(find "$tmp/root" -name libflowsdn.pc | head -n 1)")
test -f "$pcdir/libflowsdn.pc" || { echo "libflowsdn.pc not installed"; exit 1; }
test -f "$pcdir/libflash.pc" || { echo "libflash.pc not installed"; exit 1; }
# --define-prefix: prefix is derived from where the .pc file now lives.
export PKG_CONFIG_PATH="$pcdir"
cflags=$(pkg-config --define-prefix --cflags libflowsdn)
libs=$(pkg-config --define-prefix --libs libflowsdn)
pkg-config --define-prefix --exists libflash || { echo "libflash.pc does not resolve"; exit 1; }
libdir=$(pkg-config --define-prefix --variable=libdir libflowsdn)
# shellcheck disable=SC2086
$CC ${SANITIZER_FLAGS:-} $cflags -o "$tmp/addrinfo" "$top_srcdir/examples/addrinfo.c" $libs
out=$(LD_LIBRARY_PATH="$libdir" "$tmp/addrinfo" 10.1.2.3 2001:DB8::1 169.254.169.254 8.8.8.8/24 2>&1 || true)
echo "$out"
echo "$out" | grep -q '^10.1.2.3 .*private' || { echo "wrong output for 10.1.2.3"; exit 1; }
echo "$out" | grep -q '^2001:db8::1 .*documentation' || { echo "wrong output for 2001:db8::1"; exit 1; }
echo "$out" | grep -q '^169.254.169.254 .*metadata' || { echo "wrong output for metadata"; exit 1; }
echo "$out" | grep -q 'bits set past its length' || { echo "8.8.8.8/24 not refused"; exit 1; }
# The installed man page is there.
test -f "$(find "$tmp/root" -name libflowsdn.3 | head -n 1)" || { echo "libflowsdn.3 not installed"; exit 1; }
# Every exported function has its link page to its module's page.
man3=$(dirname "$(find "$tmp/root" -name libflowsdn.3 | head -n 1)")
grep -qx '.so man3/libflowsdn.3' "$man3/flowsdn_strerror.3" || { echo "flowsdn_strerror(3) link missing"; exit 1; }
grep -qx '.so man3/libflash.3' "$man3/flash_strerror.3" || { echo "flash_strerror(3) link missing"; exit 1; }
grep -qx '.so man3/flowsdn_ipam.3' "$man3/flowsdn_ipam_allocate.3" || { echo "flowsdn_ipam_allocate(3) link missing"; exit 1; }
n_links=$(grep -l '^\.so man3/' "$man3"/*.3 | wc -l)
n_fns=$(sh "$top_srcdir/man/man3-links.sh" "$top_srcdir" | wc -l)
test "$n_links" -eq "$n_fns" || { echo "$n_links man3 link pages installed, $n_fns functions"; exit 1; }
echo "example built and ran against the installed .pc files"
