#!/bin/sh
# Weekly metering limits through real gVisor replicas (root): a flowsdn
# node and flash-operator with an owner policy whose weekly CPU limit is
# 300000 millicore-seconds (1200 s of one 250 m replica), its metering
# clock read from a file (--test-meter-clock, flash-operator(8)) so the
# week moves without waiting for it.  Checked:
#   - org-1's replica and org-2's run; 600 metered seconds later nothing is
#     suspended;
#   - at 1200 s org-1 reaches its CPU limit: its service says "suspended"
#     with the limit and the lift time (Monday 00:00 UTC), its sandbox is
#     stopped and its address silent, a new create is refused; org-2's
#     replica keeps running and answering;
#   - an agent service and a policy DELETEd behind the operator's back
#     are PUT again within 10 s (its resync);
#   - `flashctl usage` shows the week and the exact CPU used;
#   - on Sunday 23:59:59 UTC org-2 (50 m) has reached it too: nothing
#     runs; at Monday 00:00 UTC both run again and answer.
# The GPU limit (GPU workloads only) is checked at the provider level
# (tests/unit/test-operator.c, weekly_limits_suspend_and_resume_on_monday):
# this machine has no GPU to give a sandbox.
set -eu
E2E_NAME=flash-metering
POOL=10.244.11.0/24
. "${top_srcdir:?}/tests/e2e/lib.sh"
C=$(mktemp -d /tmp/flash-metering-clock.XXXXXX) # outside T (node_up mounts a tmpfs there)
clock() { printf '%s\n' "$1" >"$C/clock.tmp" && mv "$C/clock.tmp" "$C/clock"; }
clock 2026-12-02T12:00:00Z # a Wednesday
jq '.protected_cidrs = [] | .weekly_limits = {"cpu_millicore_seconds": 300000, "memory_mib_seconds": 100000000,
	"gpu_seconds": 100}' "$S/examples/owner-policy.json" >"$C/policy.json"
OP_EXTRA="--policy $C/policy.json --test-meter-clock $C/clock"
down() { node_down; rm -rf "$C"; }
trap down EXIT
node_up

fc2() {
	"$B/bin/flashctl/flashctl" --endpoint "unix:$T/op.sock" --organization-id org-2 --project-id p-2 \
		--token-file "$T/sk.jwk" --issuer mp --audience prov "$@"
}
jq -c --arg img "$image" '.image = $img | del(.gpu_type) | .ephemeral_storage_gib = 1 | .exposure.type = "internal"
	| .exposure.allowed_source_cidrs = [] | .exposure.denied_source_cidrs = [] | .egress.mode = "disabled"
	| .egress.allowed_destination_cidrs = []' "$S/examples/udp-echo.json" >"$T/echo.json"
fc create --name cpu --spec "$T/echo.json" >/dev/null || fail "create cpu"
jq -c '.cpu_millis = 50' "$T/echo.json" >"$T/other.json" # org-2 uses a fifth of org-1's rate
fc2 create --name other --spec "$T/other.json" >/dev/null || fail "create other"
wait_phase cpu ready 90
addr=$(jq -r '.status.replicas[0].address' "$T/get.json")
wait_phase other ready 90 fc2
other=$(jq -r '.status.replicas[0].address' "$T/get.json")
[ "$(udp_echo "$addr" 7777 before)" = before ] || fail "cpu ($addr) does not answer"
echo "ok: org-1's replica ($addr) and org-2's ($other) run at 2026-12-02T12:00:00Z"
# runsc lists no container as null.
# Resync: an agent service and a policy DELETEd behind the operator's
# back are PUT again within its verification period (5 s) and a pass.
agent() { curl -s --unix-socket "$T/run/flowsdn.sock" -X "$1" "http://localhost$2"; }
sid=$(jq -r .id "$T/get.json")
svc=$(agent GET /v1/service | jq -r '.services[0].id')
pol=$(agent GET /v1/policy | jq -r --arg s "$sid-deny" '.items[] | select(.metadata.name == $s) | "\(.metadata.namespace)/\(.metadata.name)"')
[ -n "$svc" ] && [ "$svc" != null ] && [ -n "$pol" ] || fail "no agent service or deny policy of $sid: $svc $pol"
agent DELETE "/v1/service/$svc" >/dev/null
agent DELETE "/v1/policy/$pol" >/dev/null
[ "$(curl -s -o /dev/null -w '%{http_code}' --unix-socket "$T/run/flowsdn.sock" "http://localhost/v1/policy/$pol")" = 404 ] ||
	fail "the DELETE of $pol did not take"
i=0
until [ "$(curl -s -o /dev/null -w '%{http_code}' --unix-socket "$T/run/flowsdn.sock" "http://localhost/v1/service/$svc")" = 200 ] &&
	[ "$(curl -s -o /dev/null -w '%{http_code}' --unix-socket "$T/run/flowsdn.sock" "http://localhost/v1/policy/$pol")" = 200 ]; do
	i=$((i + 1)); [ $i -lt 100 ] || fail "the operator did not PUT $svc and $pol again within 10 s"
	sleep 0.1
done
echo "ok: an agent service and a policy deleted behind the operator's back are back after $((i / 10)).$((i % 10)) s"
sandboxes() { runsc --root "$T/rt/runsc" list -format json 2>/dev/null | jq '[(. // [])[] | select(.status == "running")] | length'; }
[ "$(sandboxes)" = 2 ] || fail "$(sandboxes) running sandboxes, want 2"

# Half the limit: nothing happens (the runtime passes at least once a second).
clock 2026-12-02T12:10:00Z
sleep 3
fc -o json get cpu >"$T/get.json" || fail "get cpu"
[ "$(jq -r .status.phase "$T/get.json")" = ready ] || fail "suspended at half its limit: $(cat "$T/get.json")"
echo "ok: 150000 of 300000 millicore-seconds: still ready"

# The limit: org-1 is suspended, its sandbox stopped; org-2 runs on.
clock 2026-12-02T12:20:00Z
wait_phase cpu suspended 30
msg=$(jq -r .status.message "$T/get.json")
case $msg in
*"weekly CPU limit"*"2026-12-07T00:00:00Z"*) ;;
*) fail "the suspended status says '$msg'" ;;
esac
echo "ok: at 300000 millicore-seconds org-1's service is suspended: $msg"
i=0
until [ "$(sandboxes)" = 1 ]; do
	i=$((i + 1)); [ $i -lt 300 ] || fail "$(sandboxes) running sandboxes after the suspension, want 1 (org-2's):
$(runsc --root "$T/rt/runsc" list 2>&1; fc2 -o json get other)"
	sleep 0.1
done
[ "$(jq -r '.status.replicas_ready' "$T/get.json")" = 0 ] && [ "$(jq -r '.status.ready' "$T/get.json")" = false ] ||
	fail "suspended but ready: $(cat "$T/get.json")"
[ -z "$(udp_echo "$addr" 7777 during 2>/dev/null)" ] || fail "the suspended replica's address still answers"
echo "ok: its sandbox is stopped and its address silent"
[ "$(udp_echo "$other" 7777 other)" = other ] || fail "org-2's replica stopped answering"
fc2 -o json get other >"$T/get2.json" && [ "$(jq -r .status.phase "$T/get2.json")" = ready ] ||
	fail "org-2's service is not ready: $(cat "$T/get2.json")"
echo "ok: org-2's replica runs and answers"
if fc create --name more --spec "$T/echo.json" >"$T/more.out" 2>&1; then fail "a create while suspended was accepted"; fi
grep -q suspended "$T/more.out" || fail "the refused create says: $(cat "$T/more.out")"
echo "ok: a create while suspended is refused ($(head -n 1 "$T/more.out"))"
fc -o json usage >"$T/usage.json" || fail "usage"
[ "$(jq -r .week_start "$T/usage.json")" = 2026-11-30T00:00:00Z ] &&
	[ "$(jq -r .organization.cpu_millicore_seconds "$T/usage.json")" = 300000 ] ||
	fail "usage: $(cat "$T/usage.json")"
echo "ok: flashctl usage shows the week from 2026-11-30 and 300000 millicore-seconds"

# The week turns at Monday 00:00 UTC, not a second before.
clock 2026-12-06T23:59:59Z
sleep 3
fc -o json get cpu >"$T/get.json" || fail "get cpu"
[ "$(jq -r .status.phase "$T/get.json")" = suspended ] || fail "resumed before Monday: $(cat "$T/get.json")"
fc2 -o json get other >"$T/get2.json" || fail "get other"
[ "$(jq -r .status.phase "$T/get2.json")" = suspended ] || fail "org-2 over its limit runs: $(cat "$T/get2.json")"
i=0
until [ "$(sandboxes)" = 0 ]; do
	i=$((i + 1)); [ $i -lt 300 ] || fail "$(sandboxes) running sandboxes on Sunday 23:59:59, want 0"
	sleep 0.1
done
echo "ok: at 2026-12-06T23:59:59Z org-1 is still suspended, and org-2 (50 m, 387599 s) is too"
clock 2026-12-07T00:00:00Z
wait_phase cpu ready 90
addr=$(jq -r '.status.replicas[0].address' "$T/get.json")
[ "$(udp_echo "$addr" 7777 after)" = after ] || fail "the resumed replica ($addr) does not answer"
wait_phase other ready 90 fc2
other=$(jq -r '.status.replicas[0].address' "$T/get.json")
[ "$(udp_echo "$other" 7777 after2)" = after2 ] || fail "org-2's resumed replica ($other) does not answer"
[ "$(sandboxes)" = 2 ] || fail "$(sandboxes) running sandboxes after Monday, want 2"
echo "ok: at Monday 2026-12-07T00:00:00Z both run again and answer ($addr, $other)"

fc delete cpu >/dev/null && fc2 delete other >/dev/null || fail "delete"
kill "$OP"; wait "$OP" || fail "flash-operator exited $? on SIGTERM"; OP=
