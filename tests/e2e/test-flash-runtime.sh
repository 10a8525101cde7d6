#!/bin/sh
# The single-node runtime end to end (root): a flowsdn node (agent +
# installed flowsdn-cni) and flash-operator with its runtime in a private
# network and mount namespace; the echo image built static and pushed to a
# docker-registry on loopback; then, driven by flashctl:
#   - the echo workload created becomes ready and answers UDP on its
#     endpoint address (gVisor netstack behind the flowsdn datapath);
#   - its stdout reached the replica's log;
#   - a workload whose command the image lacks fails with that reason;
#   - flash-operator SIGKILLed and restarted adopts the running replica
#     (same sandbox, no restart) and converges;
#   - delete removes container, netns and bundle.
set -eu
: "${top_builddir:?}" "${top_srcdir:?}"
B=$(cd "$top_builddir" && pwd)
S=$(cd "$top_srcdir" && pwd)
if [ "$(id -u)" -ne 0 ]; then echo "SKIP: needs root (namespaces, BPF, runsc)"; exit 77; fi
for t in runsc umoci skopeo docker-registry jq bash; do
	command -v $t >/dev/null || { echo "SKIP: $t is not installed (scripts/deps.sh)"; exit 77; }
done
if [ -z "${FLASH_RUNTIME_INSIDE:-}" ]; then
	FLASH_RUNTIME_INSIDE=1 exec unshare --net --mount --propagation private "$0" "$@"
fi

T=$(mktemp -d /tmp/flash-runtime.XXXXXX)
CG=/flash-e2e-$$
AGENT=
OP=
cleanup() {
	set +e
	[ -n "$OP" ] && kill -9 "$OP" 2>/dev/null && wait "$OP" 2>/dev/null
	if [ -d "$T/rt/runsc" ]; then
		for c in $(runsc --root "$T/rt/runsc" list -quiet 2>/dev/null); do
			runsc --root "$T/rt/runsc" delete -force "$c" >/dev/null 2>&1
		done
	fi
	for ns in "$T"/rt/replicas/*/netns; do [ -e "$ns" ] && umount -l "$ns"; done
	for fs in "$T"/rt/replicas/*/rootfs; do [ -e "$fs" ] && umount -l "$fs"; done
	[ -n "$AGENT" ] && kill "$AGENT" 2>/dev/null && wait "$AGENT" 2>/dev/null
	sh "$S/tests/integration/registry.sh" stop "$T/reg" anon 2>/dev/null
	for d in /sys/fs/cgroup/*"$CG" /sys/fs/cgroup"$CG"; do [ -d "$d" ] && rmdir "$d"/* "$d" 2>/dev/null; done
	umount -R "$T" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*"
	echo "--- operator log"; tail -n 40 "$T/op.log" 2>/dev/null
	echo "--- agent log"; tail -n 20 "$T/agent.log" 2>/dev/null
	exit 1
}
mount -t tmpfs tmpfs "$T"
ip link set lo up
ip addr add 192.0.2.1/32 dev lo   # the node's address (source of its probes)

# The node: agent and the plugin installed as a kubelet host has them.
cat >"$T/agent.json" <<JSON
{"socket": "$T/run/flowsdn.sock", "state-dir": "$T/state", "bpf-pin-dir": "$T/bpf",
 "pools": ["10.244.9.0/24"]}
JSON
"$B/bin/flowsdn-agent" --config "$T/agent.json" 2>"$T/agent.log" &
AGENT=$!
i=0
until [ -S "$T/run/flowsdn.sock" ]; do
	i=$((i + 1)); [ $i -lt 100 ] || fail "agent did not start"; sleep 0.1
done
"$B/bin/flowsdn-cni" install --cni-bin-dir "$T/opt/cni/bin" --cni-conf-dir "$T/etc/cni/net.d" \
	--agent-socket "$T/run/flowsdn.sock" --queue-dir "$T/state/cni-queue" >/dev/null

# The registry and the image.
port=$(sh "$S/tests/integration/registry.sh" start "$T/reg" anon none 2>"$T/reg.log") || fail "registry"
image=$(sh "$S/scripts/echo-image" "$S" "$T/img" "127.0.0.1:$port") || fail "echo image"

F="$B/bin/flashctl/flashctl"
"$F" keygen --secret "$T/sk.jwk" --public "$T/pk.jwks" --kid e2e >/dev/null
fc() { "$F" --endpoint "unix:$T/op.sock" --organization-id org-1 --project-id p-1 --token-file "$T/sk.jwk" \
	--issuer mp --audience prov "$@"; }
start_op() {
	rm -f "$T/op.sock"
	"$B/bin/flash-operator" --keys "$T/pk.jwks" --issuer mp --audience prov --socket "$T/op.sock" \
		--state-dir "$T/opstate" --registry-plain-http --runtime-dir "$T/rt" --cni-bin-dir "$T/opt/cni/bin" \
		--cni-conf "$T/etc/cni/net.d/00-flowsdn.conflist" --cgroup-parent "$CG" --dns 192.0.2.53 2>>"$T/op.log" &
	OP=$!
	i=0
	until [ -S "$T/op.sock" ]; do
		i=$((i + 1)); [ $i -lt 100 ] || fail "operator did not start"
		kill -0 "$OP" 2>/dev/null || fail "operator exited"
		sleep 0.1
	done
}
# wait_phase NAME PHASE SECONDS
wait_phase() {
	i=0
	while :; do
		fc -o json get "$1" >"$T/get.json" 2>/dev/null || true
		[ "$(jq -r .status.phase "$T/get.json" 2>/dev/null)" = "$2" ] && return 0
		i=$((i + 1)); [ $i -lt $(($3 * 5)) ] || { cat "$T/get.json"; fail "$1 never became $2"; }
		sleep 0.2
	done
}
# udp_echo ADDRESS PORT TEXT: what comes back within a second (bash's /dev/udp).
udp_echo() {
	timeout 2 bash -c 'exec 3<>/dev/udp/$0/$1; printf %s "$2" >&3; timeout 1 head -c ${#2} <&3' "$1" "$2" "$3" || true
}
spec() { # COMMAND-JSON
	jq -c --arg img "$image" --argjson cmd "$1" \
		'.image = $img | del(.gpu_type) | .ephemeral_storage_gib = 1 | .command = $cmd' "$S/examples/udp-echo.json"
}
spec '["/usr/local/bin/flash-udp-echo"]' >"$T/echo.json"
spec '["/usr/local/bin/no-such-program"]' >"$T/bad.json"

start_op
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
sandbox=$(runsc --root "$T/rt/runsc" list -quiet)

fc create --name bad --spec "$T/bad.json" >/dev/null || fail "create bad"
wait_phase bad failed 30
jq -r .status.message "$T/get.json" | grep -q "the image has no executable /usr/local/bin/no-such-program" ||
	{ cat "$T/get.json"; fail "failure reason"; }
echo "ok: a missing binary is a service error with its reason"

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
fc delete bad >/dev/null || fail "delete bad"
i=0
while [ -n "$(runsc --root "$T/rt/runsc" list -quiet)" ] || [ -n "$(ls "$T/rt/replicas")" ]; do
	i=$((i + 1)); [ $i -lt 150 ] || fail "replicas left after delete: $(ls "$T/rt/replicas")"
	sleep 0.2
done
[ -z "$(curl -s --unix-socket "$T/run/flowsdn.sock" http://localhost/v1/endpoint | jq -r '.endpoints[]?.containerID' 2>/dev/null)" ] ||
	fail "endpoints left after delete"
echo "ok: delete removed container, endpoint, netns and bundle"
