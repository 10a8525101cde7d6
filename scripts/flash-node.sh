# Shell library (sourced, POSIX sh): a single-node HeteroCloud Flash for
# scripts/flash-demo, tests/e2e/test-flash-runtime.sh and bench/flash.sh.
# The caller is root inside a private network and mount namespace and sets
#   B (build dir), S (source dir), T (an empty work dir), CG (cgroup parent),
#   POOL (the agent's IPv4 pool), optionally AGENT_EXTRA (more members of
#   the agent's JSON configuration) and OP_EXTRA (more operator flags)
# then calls node_up; node_down (from its EXIT trap) stops and removes all.
#   node_up              tmpfs on T, node address 192.0.2.1 on lo, agent,
#                        flowsdn-cni installed, registry, echo image pushed
#                        ($image), flash-operator started ($OP)
#   start_op             (re)starts flash-operator with its runtime (the /root
#                        volumes when PERSISTENCE=true)
#   fc ARGS...           flashctl for org-1/p-1 against it
#   wait_phase NAME PHASE SECONDS [FLASHCTL]   polls get (through the
#                        function FLASHCTL, default fc) until status.phase
#                        is PHASE (the answer in $T/get.json)
#   udp_echo ADDR PORT TEXT         what comes back within a second
AGENT= OP=

node_fail() {
	echo "FAIL: $*"
	echo "--- operator log"; tail -n 40 "$T/op.log" 2>/dev/null
	echo "--- agent log"; tail -n 20 "$T/agent.log" 2>/dev/null
	exit 1
}

node_down() {
	set +e
	[ -n "$OP" ] && kill -9 "$OP" 2>/dev/null && wait "$OP" 2>/dev/null
	if [ -d "$T/rt/runsc" ]; then
		for c in $(runsc --root "$T/rt/runsc" list -quiet 2>/dev/null); do
			runsc --root "$T/rt/runsc" delete -force "$c" >/dev/null 2>&1
		done
	fi
	for m in "$T"/rt/replicas/*/netns "$T"/rt/replicas/*/rootfs "$T"/bare*/netns; do
		[ -e "$m" ] && umount -l "$m"
	done
	[ -n "$AGENT" ] && kill "$AGENT" 2>/dev/null && wait "$AGENT" 2>/dev/null
	sh "$S/tests/integration/registry.sh" stop "$T/reg" node 2>/dev/null
	for d in /sys/fs/cgroup/*"$CG" /sys/fs/cgroup"$CG"; do [ -d "$d" ] && rmdir "$d"/* "$d" 2>/dev/null; done
	umount -R "$T" 2>/dev/null
	rm -rf "$T"
}

fc() {
	"$B/bin/flashctl/flashctl" --endpoint "unix:$T/op.sock" --organization-id org-1 --project-id p-1 \
		--token-file "$T/sk.jwk" --issuer mp --audience prov "$@"
}

start_op() {
	rm -f "$T/op.sock"
	# The runtime's settings in the configuration (flash-operator.conf(5)).
	cat >"$T/op.conf" <<JSON
{"runtime": {"dir": "$T/rt", "cniBinDir": "$T/opt/cni/bin", "cniConf": "$T/etc/cni/net.d/00-flowsdn.conflist",
 "agentSocket": "$T/run/flowsdn.sock", "cgroupParent": "$CG", "dns": ["192.0.2.53"]},
 "persistence": {"enabled": ${PERSISTENCE:-false}}}
JSON
	"$B/bin/flash-operator" --keys "$T/pk.jwks" --issuer mp --audience prov --socket "$T/op.sock" \
		--state-dir "$T/opstate" --registry-plain-http --config "$T/op.conf" ${OP_EXTRA:-} 2>>"$T/op.log" &
	OP=$!
	i=0
	until [ -S "$T/op.sock" ]; do
		i=$((i + 1)); [ $i -lt 300 ] || node_fail "operator did not start in 30 s"
		kill -0 "$OP" 2>/dev/null || node_fail "operator exited"
		sleep 0.1
	done
}

wait_phase() {
	i=0
	while :; do
		${4:-fc} -o json get "$1" >"$T/get.json" 2>/dev/null || true
		[ "$(jq -r .status.phase "$T/get.json" 2>/dev/null)" = "$2" ] && return 0
		i=$((i + 1)); [ $i -lt $(($3 * 20)) ] || { cat "$T/get.json"; node_fail "$1 never became $2"; }
		sleep 0.05
	done
}

udp_echo() {
	timeout 2 bash -c 'exec 3<>/dev/udp/$0/$1; printf %s "$2" >&3; timeout 1 head -c ${#2} <&3' "$1" "$2" "$3" || true
}

node_up() {
	mount -t tmpfs tmpfs "$T"
	ip link set lo up
	ip addr add 192.0.2.1/32 dev lo # the node's address (source of its probes)
	cat >"$T/agent.json" <<JSON
{"socket": "$T/run/flowsdn.sock", "state-dir": "$T/state", "bpf-pin-dir": "$T/bpf", "pools": ["$POOL"],
 "socket-lb-cgroup": ""${AGENT_EXTRA:+, $AGENT_EXTRA}}
JSON
	"$B/bin/flowsdn-agent" --config "$T/agent.json" 2>"$T/agent.log" &
	AGENT=$!
	i=0
	# Loading the datapath is the BPF verifier's work: 10 s and more on a
	# loaded machine (measured at load average 10-14 on 2 CPUs).
	until [ -S "$T/run/flowsdn.sock" ]; do
		i=$((i + 1)); [ $i -lt 300 ] || node_fail "agent did not start in 30 s"; sleep 0.1
	done
	"$B/bin/flowsdn-cni" install --cni-bin-dir "$T/opt/cni/bin" --cni-conf-dir "$T/etc/cni/net.d" \
		--agent-socket "$T/run/flowsdn.sock" --queue-dir "$T/state/cni-queue" >/dev/null
	port=$(sh "$S/tests/integration/registry.sh" start "$T/reg" node none 2>"$T/reg.log") || node_fail "registry"
	image=$(sh "$S/scripts/echo-image" "$S" "$T/img" "127.0.0.1:$port") || node_fail "echo image"
	"$B/bin/flashctl/flashctl" keygen --secret "$T/sk.jwk" --public "$T/pk.jwks" --kid node >/dev/null
	start_op
}
