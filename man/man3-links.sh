#!/bin/sh
# The man3 naming scheme, written once:
#
#   libflowsdn(3), libflash(3)   the library: conventions, errors, logging
#                                and the functions of <flowsdn/common.h>,
#                                <flash/common.h>
#   flowsdn_MODULE(3)            everything <flowsdn/MODULE.h> declares
#   flash_MODULE(3)              everything <flash/MODULE.h> declares
#
# and every exported function FN gets a link page FN(3) (".so man3/PAGE.3")
# to the page of the header that declares it.
#
#   man3-links.sh SRCDIR                 prints "FN PAGE" for each function
#   man3-links.sh SRCDIR --install DIR   writes DIR/FN.3 for each function
#   man3-links.sh SRCDIR --uninstall DIR removes them again
set -eu
srcdir=$1
mode=${2:-}
dir=${3:-}

list() {
	for hdr in "$srcdir"/include/flowsdn/*.h "$srcdir"/include/flash/*.h; do
		lib=$(basename "$(dirname "$hdr")")
		module=$(basename "$hdr" .h)
		if [ "$module" = common ]; then page=lib$lib; else page=${lib}_$module; fi
		# Declarations begin with the export macro; the name is the last
		# word before the parenthesis.
		sed -n 's/^\(FLOWSDN\|FLASH\)_API[^(]*[ *]\([a-z_0-9]*\)(.*/\2/p' "$hdr" |
			while read -r fn; do echo "$fn $page"; done
	done
}

case $mode in
"")
	list ;;
--install)
	mkdir -p "$dir"
	list | while read -r fn page; do
		printf '.so man3/%s.3\n' "$page" >"$dir/$fn.3"
	done ;;
--uninstall)
	list | while read -r fn page; do
		rm -f "$dir/$fn.3"
	done ;;
*)
	echo "usage: $0 SRCDIR [--install DIR | --uninstall DIR]" >&2
	exit 2 ;;
esac
