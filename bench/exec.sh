#!/bin/sh
# bench/exec: the Web Shell's round trip, `flashctl exec SERVICE --
# /bin/true` (token minted, WebSocket handshake through flash-operator,
# runsc exec --process in the replica, STATUS back, close), beside a bare
# `runsc exec CONTAINER /bin/true` of the same sandbox, in one run,
# alternating which side goes first; min, median, p95, p99 and max of N
# (default 50) each, their ratio, and the load average before and after.
# As root:  bench/exec.sh BUILDDIR [N]
set -eu
B=$(cd "${1:?usage: bench/exec.sh BUILDDIR [N]}" && pwd)
N=${2:-50}
S=$(cd "$(dirname "$0")/.." && pwd)
[ "$(id -u)" -eq 0 ] || { echo "bench/exec: needs root" >&2; exit 1; }
if [ -z "${FLASH_BENCH_INSIDE:-}" ]; then
	FLASH_BENCH_INSIDE=1 exec unshare --net --mount --propagation private "$0" "$@"
fi
T=$(mktemp -d /tmp/exec-bench.XXXXXX)
CG=/exec-bench-$$
POOL=10.244.12.0/24
. "$S/scripts/flash-node.sh"
trap node_down EXIT INT TERM
node_up
shimage=$(sh "$S/scripts/echo-image" "$S" "$T/img2" "127.0.0.1:$port" v2 shell) || node_fail "shell image"
jq -c --arg img "$shimage" '.image = $img | del(.gpu_type) | .ephemeral_storage_gib = 1 |
	.command = ["/usr/local/bin/flash-udp-echo"]' "$S/examples/udp-echo.json" >"$T/sh.json"
fc create --name shell --spec "$T/sh.json" >/dev/null || node_fail "create"
wait_phase shell ready 60
ctr=$(runsc --root "$T/rt/runsc" list -quiet | head -1)
[ -n "$ctr" ] || node_fail "no sandbox"
FC="$B/bin/flashctl/flashctl --endpoint unix:$T/op.sock --organization-id org-1 --project-id p-1 --token-file $T/sk.jwk --issuer mp --audience prov"
# libtool's wrapper script would be timed too: the real binary.
[ -x "$B/bin/flashctl/.libs/flashctl" ] &&
	FC="env LD_LIBRARY_PATH=$B/libflash/.libs:$B/libflowsdn/.libs $B/bin/flashctl/.libs/flashctl ${FC#* }"
now_us() { echo $(($(date +%s%N) / 1000)); }
op_once() {
	t0=$(now_us)
	$FC exec shell -- /bin/true </dev/null || node_fail "flashctl exec exited $?"
	echo $(($(now_us) - t0))
}
bare_once() {
	t0=$(now_us)
	runsc --root "$T/rt/runsc" exec "$ctr" /bin/true </dev/null || node_fail "runsc exec exited $?"
	echo $(($(now_us) - t0))
}
op_once >/dev/null; bare_once >/dev/null # warm both
load0=$(cut -d' ' -f1-3 /proc/loadavg)
: >"$T/op.us"; : >"$T/bare.us"
for run in $(seq 1 "$N"); do
	if [ $((run % 2)) -eq 1 ]; then
		op_once >>"$T/op.us"; bare_once >>"$T/bare.us"
	else
		bare_once >>"$T/bare.us"; op_once >>"$T/op.us"
	fi
done
load1=$(cut -d' ' -f1-3 /proc/loadavg)
stats() {
	sort -n "$1" | awk '{a[NR]=$1} END {
		n = NR
		med = (n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2)
		i95 = int(n * 0.95 + 0.999); i99 = int(n * 0.99 + 0.999)
		printf "min %.1f  median %.1f  p95 %.1f  p99 %.1f  max %.1f ms (n=%d)", a[1] / 1000, med / 1000, a[i95] / 1000, a[i99] / 1000, a[n] / 1000, n
	}'
}
med() { sort -n "$1" | awk '{a[NR]=$1} END {print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2)}'; }
echo "bench/exec: exec /bin/true round trip, $N runs each, alternating order; load average $load0 before, $load1 after"
echo "  flashctl exec (operator, WebSocket, runsc exec --process): $(stats "$T/op.us")"
echo "  bare runsc exec:                                        $(stats "$T/bare.us")"
echo "  ratio of medians: $(awk -v a="$(med "$T/op.us")" -v b="$(med "$T/bare.us")" 'BEGIN {printf "%.2fx (goal <= 1.3x)", a / b}')"
fc delete shell >/dev/null
