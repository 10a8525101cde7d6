#!/bin/sh
# A transient start failure retried with growing delay, end to end (root):
# a flowsdn node whose address pool (a /29) the test fills first with
# endpoints of its own (flowsdn-cni ADD of throwaway namespaces), then
# flash-operator asked for the echo.  Checked:
#   - its replica cannot get an address: the service stays provisioning,
#     its status naming the CNI ADD failure and the delay, which grows
#     (1000, 2000, 4000, 8000 ms) with the observed gaps between attempts;
#   - one address freed (CNI DEL), the next attempt starts the replica:
#     ready, and it answers.
set -eu
E2E_NAME=flash-retry
POOL=10.244.13.0/29
. "${top_srcdir:?}/tests/e2e/lib.sh"
NS="fr$$"
FILLED=0
down() {
	set +e
	for i in $(seq 1 "$FILLED"); do ip netns del "$NS-$i" 2>/dev/null; done
	node_down
}
trap down EXIT
node_up

# cni COMMAND N: flowsdn-cni as a runtime runs it, for namespace NS-N.
cni() {
	jq -c '{cniVersion, name} + .plugins[0]' "$T/etc/cni/net.d/00-flowsdn.conflist" |
		CNI_COMMAND=$1 CNI_CONTAINERID="filler-$2" CNI_NETNS="/run/netns/$NS-$2" CNI_IFNAME=eth0 \
		CNI_PATH="$T/opt/cni/bin" "$T/opt/cni/bin/flowsdn-cni"
}
i=0
while :; do
	i=$((i + 1)); [ $i -le 16 ] || fail "a /29 pool took more than 16 endpoints"
	ip netns add "$NS-$i"
	FILLED=$i
	cni ADD $i >"$T/cni.out" 2>&1 || break
done
grep -qi "address" "$T/cni.out" || fail "the pool-full ADD said: $(cat "$T/cni.out")"
echo "ok: the pool is full after $((i - 1)) endpoints ($(jq -r .msg "$T/cni.out" 2>/dev/null || cat "$T/cni.out"))"

jq -c --arg img "$image" '.image = $img | del(.gpu_type) | .ephemeral_storage_gib = 1' \
	"$S/examples/udp-echo.json" >"$T/echo.json"
fc create --name echo --spec "$T/echo.json" >/dev/null || fail "create echo"
# Watch the status: each new "retrying in N ms" is one more failed attempt.
# Five are watched: a transient cause is retried for as long as it lasts
# (an earlier runtime gave up after five attempts).
start=$(date +%s%N) seen= last_ms=0 gaps=
while :; do
	fc -o json get echo >"$T/get.json" 2>/dev/null || true
	phase=$(jq -r .status.phase "$T/get.json")
	case $phase in admitted | provisioning) ;; *) fail "phase $phase while the pool is full: $(cat "$T/get.json")" ;; esac
	msg=$(jq -r .status.message "$T/get.json")
	d=$(printf '%s\n' "$msg" | sed -n 's/.*(attempt [0-9]*, retrying in \([0-9]*\) ms)$/\1/p')
	if [ -n "$d" ] && [ "$d" != "${seen##* }" ]; then
		now=$(date +%s%N)
		[ -z "$seen" ] || gaps="$gaps $(((now - last_ms) / 1000000))"
		last_ms=$now seen="$seen $d"
		case $msg in *ADD*) ;; *) fail "the status does not name the CNI ADD: $msg" ;; esac
		[ "$d" = 16000 ] && break
	fi
	[ $(($(date +%s%N) - start)) -lt 45000000000 ] || fail "no growing retries in 45 s: seen$seen; $msg"
	sleep 0.05
done
[ "$phase" = provisioning ] || fail "phase $phase while retrying"
# A get under load can take longer than the first 1 s delay: its message
# may be missed, never the later ones.
case $seen in " 1000 2000 4000 8000 16000" | " 2000 4000 8000 16000") ;; *) fail "retry delays$seen, want 1000 2000 4000 8000 16000" ;; esac
case $msg in *"attempt 5,"*) ;; *) fail "the fifth attempt is not counted: $msg" ;; esac
# The gaps as seen by polling get: about 2, 4 and 8 s (the last three),
# each off by up to a reconcile pass and a get.
set -- $gaps
[ $# -eq 4 ] && shift
[ "$2" -ge 3000 ] && [ "$2" -gt "$1" ] && [ "$3" -gt "$2" ] || fail "gaps between attempts$gaps ms do not grow"
echo "ok: provisioning while the pool is full, delays$seen ms, gaps$gaps ms: $msg"

cni DEL 1 >/dev/null 2>&1 || fail "CNI DEL of filler-1"
wait_phase echo ready 60
addr=$(jq -r '.status.replicas[0].address' "$T/get.json")
[ "$(udp_echo "$addr" 7777 retried)" = retried ] || fail "the echo at $addr does not answer"
[ "$(jq -r .status.phase "$T/get.json")" = ready ] || fail "$(cat "$T/get.json")"
echo "ok: an address freed, the next attempt started the replica: ready, answers at $addr"
fc delete echo >/dev/null || fail "delete"
