#!/bin/sh
# The single-node runtime end to end (root): a flowsdn node (agent +
# installed flowsdn-cni) and flash-operator with its runtime in a private
# network and mount namespace; the echo image built static and pushed to a
# docker-registry on loopback; then, driven by flashctl:
#   - the echo workload created becomes ready and answers UDP on its
#     endpoint address (gVisor netstack behind the flowsdn datapath);
#   - its stdout reached the replica's log, and flashctl logs shows it
#     (--replica, --since, -o json; -f follows across the operator's
#     restart until the delete);
#   - a workload whose command the image lacks fails with that reason;
#   - a UDP workload whose process does not bind its declared port (the
#     echo listening on another one) never becomes ready, and says why;
#   - flash-operator SIGKILLed and restarted adopts the running replica
#     (same sandbox, no restart) and converges;
#   - delete removes container, netns and bundle.
set -eu
E2E_NAME=flash-runtime
POOL=10.244.9.0/24
. "${top_srcdir:?}/tests/e2e/lib.sh"
node_up
spec() { # COMMAND-JSON
	jq -c --arg img "$image" --argjson cmd "$1" \
		'.image = $img | del(.gpu_type) | .ephemeral_storage_gib = 1 | .command = $cmd' "$S/examples/udp-echo.json"
}
spec '["/usr/local/bin/flash-udp-echo"]' >"$T/echo.json"
spec '["/usr/local/bin/no-such-program"]' >"$T/bad.json"
spec '["/usr/local/bin/flash-udp-echo"]' | jq -c '.env.FLASH_ECHO_LISTEN = "0.0.0.0:7778"' >"$T/deaf.json"

fc create --name echo --spec "$T/echo.json" >/dev/null || fail "create echo"
wait_phase echo ready 60
addr=$(jq -r '.status.replicas[0].address' "$T/get.json")
[ -n "$addr" ] && [ "$addr" != null ] || fail "no replica address"
reply=$(udp_echo "$addr" 7777 hello-flash)
[ "$reply" = "hello-flash" ] || fail "echo at $addr:7777 answered '$reply'"
echo "ok: echo ready, answers on its endpoint $addr:7777/udp"
log=$(ls "$T"/rt/logs/*/0.log)
grep -q ' stdout flash-udp-echo: listening on 0.0.0.0:7777/udp$' "$log" || { cat "$log"; fail "stdout not logged"; }
echo "ok: stdout in $log with time and stream"
fc logs echo >"$T/logs.txt" || fail "flashctl logs"
grep -q '^20[0-9-]*T[0-9:.]*Z #0 stdout flash-udp-echo: listening on 0.0.0.0:7777/udp$' "$T/logs.txt" ||
	{ cat "$T/logs.txt"; fail "flashctl logs does not show the line"; }
[ "$(fc -o json logs echo --replica 0 --since 1h | jq -r '.lines[0].text')" = "flash-udp-echo: listening on 0.0.0.0:7777/udp" ] ||
	fail "flashctl logs --replica 0 --since 1h"
[ "$(fc -o json logs echo --since 2099-01-01T00:00:00Z | jq '.lines | length')" = 0 ] || fail "logs --since in the future"
[ "$(fc -o json logs echo --replica 3 | jq '.lines | length')" = 0 ] || fail "logs of a replica that does not exist"
fc logs echo --since yesterday 2>/dev/null && fail "--since yesterday accepted"
fc logs -f echo >"$T/follow.txt" 2>"$T/follow.err" &
FOLLOW=$!
echo "ok: flashctl logs shows the replica's lines (time, replica, stream)"
sandbox=$(runsc --root "$T/rt/runsc" list -quiet)

fc create --name bad --spec "$T/bad.json" >/dev/null || fail "create bad"
wait_phase bad failed 30
jq -r .status.message "$T/get.json" | grep -q "the image has no executable /usr/local/bin/no-such-program" ||
	{ cat "$T/get.json"; fail "failure reason"; }
echo "ok: a missing binary is a service error with its reason"

# Running, bound to 7778, probed on its declared 7777/udp: gVisor answers
# port-unreachable, so it is not ready however long it runs.
fc create --name deaf --spec "$T/deaf.json" >/dev/null || fail "create deaf"
i=0
until grep -qs ' stdout flash-udp-echo: listening on 0.0.0.0:7778/udp$' "$T"/rt/logs/*/0.log; do
	i=$((i + 1)); [ $i -lt 300 ] || fail "deaf never started"
	sleep 0.1
done
sleep 3
fc -o json get deaf >"$T/get.json" || fail "get deaf"
[ "$(jq -r .status.phase "$T/get.json")" = provisioning ] && [ "$(jq -r '.status.replicas_ready' "$T/get.json")" = 0 ] && [ "$(jq -r '.status.replicas[0].state' "$T/get.json")" = starting ] ||
	{ cat "$T/get.json"; fail "a replica that does not bind its UDP port became ready"; }
jq -r .status.message "$T/get.json" | grep -q "port 7777/udp refused (ICMP port-unreachable): nothing listens on it yet" ||
	{ cat "$T/get.json"; fail "the not-ready reason"; }
fc delete deaf >/dev/null || fail "delete deaf"
echo "ok: a UDP workload that does not bind its declared port is not ready (port-unreachable), and says so"

# SIGKILL, restart: the replica is adopted, not restarted.
kill -9 "$OP"; wait "$OP" 2>/dev/null || true; OP=
start_op
wait_phase echo ready 30
[ "$(jq -r '.status.replicas[0].address' "$T/get.json")" = "$addr" ] || fail "address changed across adoption"
[ "$(jq -r '.status.restarts' "$T/get.json")" = 0 ] || fail "restarted on adoption"
echo "$sandbox" | grep -qx "$(runsc --root "$T/rt/runsc" list -quiet | grep -- "$(echo "$sandbox" | head -1)")" ||
	fail "the sandbox changed across the operator restart"
reply=$(udp_echo "$addr" 7777 again)
[ "$reply" = again ] || fail "echo after adoption answered '$reply'"
echo "ok: operator SIGKILLed and restarted adopted the running replica"

fc delete echo >/dev/null || fail "delete echo"
i=0
while kill -0 "$FOLLOW" 2>/dev/null; do
	i=$((i + 1)); [ $i -lt 100 ] || { kill "$FOLLOW"; fail "flashctl logs -f still follows a deleted service"; }
	sleep 0.1
done
wait "$FOLLOW" || fail "flashctl logs -f exited $? after the delete"
grep -q "was deleted" "$T/follow.err" && grep -q ' #0 stdout flash-udp-echo: listening' "$T/follow.txt" ||
	{ cat "$T/follow.txt" "$T/follow.err"; fail "flashctl logs -f"; }
echo "ok: flashctl logs -f followed until the service was deleted"
fc delete bad >/dev/null || fail "delete bad"
i=0
while [ -n "$(runsc --root "$T/rt/runsc" list -quiet)" ] || [ -n "$(ls "$T/rt/replicas")" ]; do
	i=$((i + 1)); [ $i -lt 150 ] || fail "replicas left after delete: $(ls "$T/rt/replicas")"
	sleep 0.2
done
[ -z "$(curl -s --unix-socket "$T/run/flowsdn.sock" http://localhost/v1/endpoint | jq -r '.endpoints[]?.containerID' 2>/dev/null)" ] ||
	fail "endpoints left after delete"
echo "ok: delete removed container, endpoint, netns and bundle"

# A clean stop: SIGTERM ends the operator (replicas would be adopted by the
# next one); under --enable-sanitizers its leak report would be here.
kill "$OP"; wait "$OP" || fail "flash-operator exited $? on SIGTERM"; OP=
if grep -q "Sanitizer" "$T/op.log"; then fail "sanitizer report in the operator's log"; fi
echo "ok: SIGTERM stops the operator cleanly"
