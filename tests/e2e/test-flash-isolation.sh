#!/bin/sh
# Isolation and publishing of the single-node runtime with real packets
# against real gVisor replicas (root): a flowsdn node (agent with its
# uplink programs on three veths, egress mode stack) and flash-operator
# with --masquerade in a private network and mount namespace, beside
#   - "internet": a namespace behind the uplink up0 holding a public TCP
#     server (198.51.100.80:80), the metadata address 169.254.169.254 and
#     a LAN address (192.168.77.80, in the default lanCIDRs);
#   - "allowed" (203.0.113.5) and "denied" (203.0.113.200) clients, each
#     in its own namespace behind its own uplink;
#   - a DNS server (dnsmasq) on the node at 192.0.2.53, the workloads' DNS.
# The workloads are the echo image with its probes on (FLASH_ECHO_PROBES,
# examples/flash-udp-echo.c): a datagram "tcp ADDR PORT", "udp ADDR PORT
# TEXT" or "dns NAME" is answered with what the replica saw from inside
# its sandbox.  Checked:
#   - the public echo answers through its public port on the node address
#     (NodePort) from an allowed source; a denied source gets nothing;
#   - egress disabled: a TCP connect to the public server fails while DNS
#     (exactly the node's workload DNS) works, and another DNS server is
#     unreachable;
#   - egress internet: the public server is reached (through the node's
#     masquerade: the internet namespace has no route to the pool), the
#     metadata address, the node itself and a LAN address are not;
#   - egress restricted to the public server's /32: it is reached, another
#     public destination (which egress internet reaches) is not, DNS
#     works, metadata, node and LAN stay denied;
#   - a same-organization grant reaches its peer; another organization's
#     workload reaches neither.
set -eu
E2E_NAME=flash-isolation
E2E_NEED="dnsmasq busybox nft"
POOL=10.244.7.0/24
. "${top_srcdir:?}/tests/e2e/lib.sh"
NS="fi$$"
DNSMASQ= SERVERS=
AGENT_EXTRA='"node-addresses": ["192.0.2.1"], "uplink-interfaces": ["up0", "va0", "vd0"], "egress-mode": "stack"'
OP_EXTRA=--masquerade
down() {
	set +e
	[ -n "$SERVERS" ] && kill $SERVERS 2>/dev/null
	[ -n "$DNSMASQ" ] && kill "$DNSMASQ" 2>/dev/null
	for n in inet allowed denied; do ip netns del "$NS-$n" 2>/dev/null; done
	node_down
}
trap down EXIT
fail() {
	[ -n "${FLASH_ISOLATION_DEBUG:-}" ] && { echo "debug: $*"; sleep 900; }
	echo "--- verdicts"; curl -s --unix-socket "$T/run/flowsdn.sock" http://localhost/v1/policy/verdicts 2>/dev/null | head -c 2000; echo
	node_fail "$@"
}

# The neighbours.  Each gets its own veth to the node; the node routes
# their addresses to them and forwards (its own namespace).
peer() { # NAME HOSTIF NODEADDR ADDR...
	n=$NS-$1 hif=$2 naddr=$3 name=$1; shift 3
	ip netns add "$n"
	ip link add "$hif" type veth peer name eth0 netns "$n"
	ip addr add "$naddr" dev "$hif"
	ip link set "$hif" up
	ip -n "$n" link set lo up
	ip -n "$n" link set eth0 up
	for a in "$@"; do
		ip -n "$n" addr add "$a/32" dev eth0
		ip route add "$a/32" dev "$hif"
	done
	ip -n "$n" route add "${naddr%/*}/32" dev eth0
	# The Internet has no route back to the pool: only masqueraded
	# packets (from the node's uplink address) get answers there.
	[ "$name" = inet ] || ip -n "$n" route add default via "${naddr%/*}" dev eth0
}
ip link set lo up
peer inet up0 198.51.100.1/32 198.51.100.80 169.254.169.254 198.51.100.53 192.168.77.80
peer allowed va0 198.51.100.2/32 203.0.113.5
peer denied vd0 198.51.100.3/32 203.0.113.200
sysctl -qw net.ipv4.ip_forward=1
# Egress mode stack hands the reverse-translated NodePort reply (source:
# the node's own address) to the host stack, which drops a local source
# arriving from an interface as a martian unless accept_local is set: the
# agent sets it on each endpoint's host veth, never on "all".
ip addr add 192.0.2.53/32 dev lo
# The public server and the metadata address (one listener on both), a
# DNS server that is not the workloads', and a listener on the node.
ip netns exec "$NS-inet" busybox nc -ll -p 80 -e /bin/true & SERVERS="$SERVERS $!"
ip netns exec "$NS-inet" dnsmasq --no-daemon --no-resolv --no-hosts --listen-address=198.51.100.53 --bind-interfaces \
	--address=/probe.flash.test/198.51.100.80 --pid-file= -u root 2>/dev/null & SERVERS="$SERVERS $!"
busybox nc -ll -p 2222 -e /bin/true & SERVERS="$SERVERS $!"
dnsmasq --no-daemon --no-resolv --no-hosts --listen-address=192.0.2.53 --bind-interfaces \
	--address=/probe.flash.test/198.51.100.80 --pid-file= -u root 2>"$T/dnsmasq.log" & DNSMASQ=$!

node_up
nft list table inet flowsdn_flash | grep -q 'ip saddr 10.244.7.0/24 ip daddr != 10.244.7.0/24 masquerade' ||
	fail "the masquerade table is not there: $(nft list ruleset)"
echo "ok: flash-operator made its masquerade table (inet flowsdn_flash) for the agent's pool"

spec() { # EXPOSURE EGRESS-MODE SAME-ORG [ALLOWED-DESTINATION...]
	exp=$1 mode=$2 same=$3; shift 3
	jq -c --arg img "$image" --arg exp "$exp" --arg mode "$mode" --argjson same "$same" \
		--argjson dst "$(jq -cn '$ARGS.positional' --args "$@")" \
		'.image = $img | del(.gpu_type) | .ephemeral_storage_gib = 1 | .command = ["/usr/local/bin/flash-udp-echo"]
		 | .env.FLASH_ECHO_PROBES = "1" | .exposure.type = $exp | .egress.mode = $mode
		 | .egress.allow_same_organization = $same | .egress.allowed_destination_cidrs = $dst
		 | if $exp == "internal" then .exposure.allowed_source_cidrs = [] | .exposure.denied_source_cidrs = [] else . end' \
		"$S/examples/udp-echo.json"
}
fc2() {
	"$B/bin/flashctl/flashctl" --endpoint "unix:$T/op.sock" --organization-id org-2 --project-id p-2 \
		--token-file "$T/sk.jwk" --issuer mp --audience prov "$@"
}
spec public disabled false >"$T/pub.json"
spec internal internet true >"$T/net.json"
spec internal disabled true >"$T/peer.json"
spec internal restricted false 198.51.100.80/32 >"$T/res.json"
fc create --name pub --spec "$T/pub.json" >/dev/null || fail "create pub"
fc create --name net --spec "$T/net.json" >/dev/null || fail "create net"
fc create --name peer --spec "$T/peer.json" >/dev/null || fail "create peer"
fc create --name res --spec "$T/res.json" >/dev/null || fail "create res"
fc2 create --name other --spec "$T/net.json" >/dev/null || fail "create other"
wait_phase pub ready 90
pub=$(jq -r '.status.replicas[0].address' "$T/get.json")
port=$(jq -r '[.. | objects | select(has("public_ports")) | .public_ports[]][0].port' "$T/get.json")
wait_phase net ready 90
net=$(jq -r '.status.replicas[0].address' "$T/get.json")
wait_phase peer ready 90
peer=$(jq -r '.status.replicas[0].address' "$T/get.json")
wait_phase res ready 90
res=$(jq -r '.status.replicas[0].address' "$T/get.json")
wait_phase other ready 90 fc2
other=$(jq -r '.status.replicas[0].address' "$T/get.json")
echo "ok: five replicas ready (pub $pub, public port $port; net $net; peer $peer; res $res; other $other of org-2)"

# ask ADDR TEXT: what the replica at ADDR:7777 answers (the node asks).
ask() {
	timeout 6 bash -c 'exec 3<>/dev/udp/$0/7777; printf %s "$1" >&3; timeout 5 dd bs=65536 count=1 status=none <&3' \
		"$1" "$2" || true
}
expect() { # ADDR TEXT WANT WHAT
	got=$(ask "$1" "$2")
	[ "$got" = "$3" ] || fail "$4: '$2' at $1 answered '$got', want '$3'"
	echo "ok: $4"
}

# Publishing: the public port on the node address, from outside.
reply=$(ip netns exec "$NS-allowed" sh -c '. "$0"; udp_echo 192.0.2.1 "$1" hello-public' "$S/scripts/flash-node.sh" "$port")
[ "$reply" = hello-public ] || fail "the echo through 192.0.2.1:$port/udp from 203.0.113.5 answered '$reply'"
echo "ok: the echo answers through its public port 192.0.2.1:$port/udp from an allowed source"
[ "$(sysctl -n net.ipv4.conf.all.accept_local)" = 0 ] || fail "accept_local is on for all interfaces"
hif=$(curl -s --unix-socket "$T/run/flowsdn.sock" http://localhost/v1/endpoint |
	jq -r --arg a "$pub/32" '.endpoints[] | select([.addresses[].address] | index($a)) | .hostInterface')
[ "$(sysctl -n "net.ipv4.conf.$hif.accept_local")" = 1 ] || fail "accept_local is not on for $pub's host veth '$hif'"
echo "ok: the reply came through accept_local on $pub's host veth $hif only (egress mode stack), not on all"
reply=$(ip netns exec "$NS-denied" sh -c '. "$0"; udp_echo 192.0.2.1 "$1" hello-public' "$S/scripts/flash-node.sh" "$port")
[ -z "$reply" ] || fail "a denied source (203.0.113.200) got '$reply'"
echo "ok: a denied source (203.0.113.200, inside the allowed /24) gets nothing"

# Egress disabled: DNS only, and only the workload DNS.
expect "$pub" "tcp 198.51.100.80 80" "tcp timeout" "egress disabled: no TCP connect to a public server"
expect "$pub" "dns probe.flash.test" "dns 198.51.100.80" "egress disabled: DNS through the node's workload DNS works"
expect "$pub" "tcp 192.0.2.53 53" "tcp open" "egress disabled: DNS over TCP to the workload DNS too"
expect "$pub" "tcp 198.51.100.53 53" "tcp timeout" "egress disabled: another DNS server is not reachable"
# Egress internet: public destinations, through the masquerade.
expect "$net" "tcp 198.51.100.80 80" "tcp open" "egress internet: the public server is reached (masqueraded)"
expect "$net" "tcp 198.51.100.53 53" "tcp open" "egress internet: any public port, e.g. another DNS server"
expect "$net" "tcp 169.254.169.254 80" "tcp timeout" "egress internet: the metadata address is not"
expect "$net" "tcp 192.0.2.1 2222" "tcp timeout" "egress internet: the node itself is not"
[ "$(busybox nc -w 2 192.0.2.1 2222 </dev/null >/dev/null 2>&1; echo $?)" = 0 ] || fail "the node's listener is down"
[ "$(busybox nc -w 2 192.168.77.80 80 </dev/null >/dev/null 2>&1; echo $?)" = 0 ] || fail "the LAN listener is down"
expect "$net" "tcp 192.168.77.80 80" "tcp timeout" "egress internet: a LAN address is not"
# Egress restricted to 198.51.100.80/32: that destination only (besides DNS).
expect "$res" "tcp 198.51.100.80 80" "tcp open" "egress restricted: the listed public destination is reached"
expect "$res" "tcp 198.51.100.53 53" "tcp timeout" "egress restricted: another public destination is not"
expect "$res" "dns probe.flash.test" "dns 198.51.100.80" "egress restricted: DNS through the workload DNS works"
expect "$res" "tcp 169.254.169.254 80" "tcp timeout" "egress restricted: the metadata address is not reached"
expect "$res" "tcp 192.0.2.1 2222" "tcp timeout" "egress restricted: nor the node"
expect "$res" "tcp 192.168.77.80 80" "tcp timeout" "egress restricted: nor a LAN address"
# Tenants: a same-organization grant both ways; another organization never.
expect "$net" "udp $peer 7777 same-org" "udp same-org" "same organization with the grant: net reaches peer"
expect "$other" "udp $peer 7777 other-org" "udp timeout" "another organization does not reach peer"
expect "$net" "udp $other 7777 cross" "udp timeout" "nor does peer's organization reach it"

fc delete pub >/dev/null && fc delete net >/dev/null && fc delete peer >/dev/null && fc delete res >/dev/null &&
	fc2 delete other >/dev/null ||
	fail "delete"
i=0
while [ "$(curl -s --unix-socket "$T/run/flowsdn.sock" http://localhost/v1/service | jq '.services | length')" != 0 ] ||
	[ "$(curl -s --unix-socket "$T/run/flowsdn.sock" http://localhost/v1/policy | jq '.items | length')" != 0 ]; do
	i=$((i + 1)); [ $i -lt 150 ] || fail "services or policies left after delete"
	sleep 0.2
done
echo "ok: delete withdrew every agent service and policy"
kill "$OP"; wait "$OP" || fail "flash-operator exited $? on SIGTERM"; OP=
nft list table inet flowsdn_flash >/dev/null 2>&1 && fail "the masquerade table outlived the operator"
echo "ok: the masquerade table went with the operator"
