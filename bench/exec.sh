#!/bin/sh
# bench/exec: the Web Shell's round trip, `flashctl exec SERVICE --
# /bin/true` (token minted, WebSocket handshake through flash-operator,
# runsc exec --process in the replica, STATUS back, close), beside a bare
# `runsc exec CONTAINER /bin/true` of the same sandbox, in one run,
# alternating which side goes first; min, median, p95, p99 and max of N
# (default 50) each, their ratio, and the load average before and after.
# As root:  bench/exec.sh BUILDDIR [N]
set -eu
BENCH_NAME=exec BENCH_N=50 POOL=10.244.12.0/24
. "$(dirname "$0")/lib.sh"
node_up
shimage=$(sh "$S/scripts/echo-image" "$S" "$T/img2" "127.0.0.1:$port" v2 shell) || node_fail "shell image"
jq -c --arg img "$shimage" '.image = $img | del(.gpu_type) | .ephemeral_storage_gib = 1 |
	.command = ["/usr/local/bin/flash-udp-echo"]' "$S/examples/udp-echo.json" >"$T/sh.json"
fc create --name shell --spec "$T/sh.json" >/dev/null || node_fail "create"
wait_phase shell ready 60
ctr=$(runsc --root "$T/rt/runsc" list -quiet | head -1)
[ -n "$ctr" ] || node_fail "no sandbox"
FC="$B/bin/flashctl/flashctl --endpoint unix:$T/op.sock --organization-id org-1 --project-id p-1 --token-file $T/sk.jwk --issuer mp --audience prov"
# libtool's wrapper script would be timed too: the real binary, its
# libraries found as an installed flashctl finds them (an env(1) in front
# of each call would time a second exec, about 2 ms here).
if [ -x "$B/bin/flashctl/.libs/flashctl" ]; then
	LD_LIBRARY_PATH=$B/libflash/.libs:$B/libflowsdn/.libs
	export LD_LIBRARY_PATH
	FC="$B/bin/flashctl/.libs/flashctl ${FC#* }"
fi
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
load0=$(bench_load)
: >"$T/op.us"; : >"$T/bare.us"
for run in $(seq 1 "$N"); do
	if [ $((run % 2)) -eq 1 ]; then
		op_once >>"$T/op.us"; bare_once >>"$T/bare.us"
	else
		bare_once >>"$T/bare.us"; op_once >>"$T/op.us"
	fi
done
load1=$(bench_load)
echo "bench/exec: exec /bin/true round trip, $N runs each, alternating order; load average $load0 before, $load1 after"
echo "  flashctl exec (operator, WebSocket, runsc exec --process): $(bench_stats "$T/op.us" 1000 ms)"
echo "  bare runsc exec:                                        $(bench_stats "$T/bare.us" 1000 ms)"
echo "  ratio of medians: $(bench_ratio "$T/op.us" "$T/bare.us")"
fc delete shell >/dev/null
