#!/bin/sh
# flash-operator on a Unix socket in a temporary directory, driven by
# flashctl as a user drives it: create, get, list, update, usage, delete
# of a service whose image is admitted from a real docker-registry on
# 127.0.0.1 (tests/integration/registry.sh, filled with skopeo); an image
# that exceeds the disk limit refused with its sizes; minted and fixed
# tokens; refusals with their exit codes (flashctl(1)); /metrics and
# /healthz; a restart that keeps the store; SIGTERM.
set -eu
: "${top_builddir:?}" "${top_srcdir:?}"
F="$top_builddir/bin/flashctl/flashctl"
OP="$top_builddir/bin/flash-operator"
tmp=$(mktemp -d)
pid=
REG="$top_srcdir/tests/integration/registry.sh"
cleanup() {
	[ -z "$pid" ] || kill "$pid" 2>/dev/null || true
	sh "$REG" stop "$tmp/reg" anon 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
cd "$tmp"
fail() { echo "FAIL: $*"; cat op.log 2>/dev/null || true; exit 1; }

expect() {
	want=$1 pattern=$2
	shift 2
	set +e
	"$@" >out 2>err
	got=$?
	set -e
	[ "$got" = "$want" ] || { cat out err; fail "$* exited $got, expected $want"; }
	[ -z "$pattern" ] || grep -q -- "$pattern" out err || { cat out err; fail "$*: output lacks '$pattern'"; }
}

start() {
	before=$(grep -c "listening on" op.log 2>/dev/null || true)
	"$OP" --keys "$tmp/pk.jwks" --issuer mp.e2e --audience prov.e2e --socket "$tmp/op.sock" --registry-plain-http \
		--state-dir "$tmp/state" --config "$tmp/op.conf" 2>>op.log &
	pid=$!
	i=0
	while [ ! -S "$tmp/op.sock" ] || [ "$(grep -c "listening on" op.log)" -le "${before:-0}" ]; do
		i=$((i + 1)); [ $i -lt 200 ] || fail "flash-operator did not start"
		kill -0 "$pid" 2>/dev/null || fail "flash-operator exited"
		sleep 0.05
	done
}

# flashctl is a client: neither it nor libflash needs libmicrohttpd.
for elf in "$top_builddir/bin/flashctl/.libs/flashctl" "$top_builddir/libflash/.libs/libflash.so"; do
	[ -f "$elf" ] || elf="$top_builddir/bin/flashctl/flashctl"
	if readelf -d "$elf" 2>/dev/null | grep -q 'NEEDED.*libmicrohttpd'; then fail "$elf links libmicrohttpd"; fi
done

"$F" keygen --secret sk.jwk --public pk.jwks --kid e2e >/dev/null
echo '{"publicPortRange": {"first": 31000, "last": 31099}}' >op.conf

# The registry: small:v1 (two real layers) and big:v1 (declares 2 GiB).
port=$(sh "$REG" start "$tmp/reg" anon none 2>reg.log) || { cat reg.log; fail "registry did not start"; }
sh "$REG" fill "$tmp/reg" "$port" >>reg.log 2>&1 || { cat reg.log; fail "registry fill failed"; }
small_digest=$(cat "$tmp/reg/facts/small.digest")
small_charged=$(cat "$tmp/reg/facts/small.charged")
big_charged=$(cat "$tmp/reg/facts/big.charged")
spec() { # IMAGE PORTS-JSON
	sed -e "s|\"image\": \"[^\"]*\"|\"image\": \"$1\"|" -e 's|"ephemeral_storage_gib": 10|"ephemeral_storage_gib": 1|' \
		-e 's|"gpu_type": "[^"]*",||' "$top_srcdir/examples/udp-echo.json" | jq -c ".ports = $2"
}
spec "127.0.0.1:$port/small:v1" '[{"name":"game-udp","protocol":"udp","container_port":7777},{"name":"admin","protocol":"tcp","container_port":8080}]' >small.json
spec "127.0.0.1:$port/small:v1" '[{"name":"admin","protocol":"tcp","container_port":8080}]' >small-one-port.json
spec "127.0.0.1:$port/big:v1" '[]' >big.json

# Usage errors of the daemon itself.
expect 2 "Usage" "$OP" --issuer x
expect 1 "no-such.jwks" "$OP" --keys no-such.jwks --issuer a --audience b --socket "$tmp/x.sock" --state-dir "$tmp/s0"
expect 0 "provider/v1" "$OP" --help

start
grep -q "listening on unix:$tmp/op.sock" op.log || fail "no listening line"
[ "$(stat -c %a op.sock)" = 600 ] || fail "socket mode is $(stat -c %a op.sock), expected 600"
[ "$(stat -c %a state/flash.db)" = 600 ] || fail "store mode is not 600"

C="$F --endpoint unix:$tmp/op.sock --organization-id org-e2e --project-id p1 --token-file sk.jwk --issuer mp.e2e --audience prov.e2e"
expect 0 "NAME" $C list
expect 0 '"services":\[\]' $C -o json list
expect 0 "organization" $C usage
expect 0 '"week"' $C -o json usage
expect 3 "no such service" $C get nothing-here
expect 3 "not-found" $C get fs-0123456789abcdef0123456789abcdef
expect 3 "not-found" $C delete fs-0123456789abcdef0123456789abcdef
# The spec is checked by the operator, paths and all.
sed 's/"container_port": 7777/"container_port": 0/' "$top_srcdir/examples/udp-echo.json" >bad.json
expect 1 "ports\[0\].container_port" $C create --name echo --spec bad.json
expect 1 "bad-request" $C create --name Not_A_Name --spec small.json
expect 2 "" $C create --spec small.json

# Admitted from the registry, pinned to the digest the registry holds.
expect 0 "Phase:       admitted" $C create --name echo --spec small.json --generation 1
grep -q "Image:       127.0.0.1:$port/small@$small_digest ($small_charged bytes charged)" out || { cat out; fail "not pinned"; }
grep -q "Ports:       game-udp/udp=31000,admin/tcp=31001" out || { cat out; fail "public ports"; }
id=$(awk '/^ID:/ {print $2}' out)
expect 0 "" $C -o json get echo
jq -e ".id == \"$id\" and .status.ready == false and .events[0].type == \"admitted\"" out >/dev/null || { cat out; fail "get"; }
expect 0 "echo" $C list
# The same generation again: the same answer; an older one: refused.
expect 0 "" $C -o json create --name echo --spec small.json --generation 1
cp out first.json
expect 0 "" $C -o json create --name echo --spec small.json --generation 1
cmp -s out first.json || fail "a replayed create answers differently"
expect 1 "stale-generation" $C update echo --spec small-one-port.json --generation 0
# Update: admin keeps its port, game-udp's is released.
expect 0 "Ports:       admin/tcp=31001" $C update echo --spec small-one-port.json --generation 2
expect 0 "updated" $C get "$id"
# --wait shows the phase and gives up: nothing becomes ready without a runtime.
expect 6 "admitted" $C get echo --wait --timeout 1
# An image that does not fit is refused before anything is stored.
expect 1 "image-too-large" $C create --name big --spec big.json
grep -q "needs $big_charged bytes" err || { cat err; fail "image size not in the error"; }
grep -q "limit is 1073741824 bytes" err || { cat err; fail "limit not in the error"; }
expect 3 "no such service" $C get big

# Tokens: wrong issuer (401), a fixed token for another action (403),
# a token file readable by others (refused before use).
expect 4 "unauthorized" "$F" --endpoint "unix:$tmp/op.sock" --organization-id org-e2e --token-file sk.jwk \
	--issuer someone-else --audience prov.e2e list
now=$(date +%s)
"$F" token sign --key sk.jwk --kid e2e \
	--claims "{\"iss\":\"mp.e2e\",\"aud\":\"prov.e2e\",\"action\":\"get\",\"org\":\"org-e2e\",\"project\":\"p1\",\"iat\":$now,\"exp\":$((now + 60))}" >get.tok
chmod 600 get.tok
expect 4 "wrong-action" "$F" --endpoint "unix:$tmp/op.sock" --token-file get.tok list
expect 3 "not-found" "$F" --endpoint "unix:$tmp/op.sock" --token-file get.tok get fs-0123456789abcdef0123456789abcdef
chmod 644 get.tok
expect 2 "mode 0600" "$F" --endpoint "unix:$tmp/op.sock" --token-file get.tok list

# Observability without a token.
curl -sf --unix-socket op.sock http://localhost/healthz | grep -q '"ok"' || fail "healthz"
curl -sf --unix-socket op.sock http://localhost/metrics >metrics || fail "metrics"
grep -q '^flash_operator_requests_total{route="create",code="201"} 3$' metrics || { cat metrics; fail "create counter"; }
grep -q '^flash_operator_requests_total{route="create",code="422"} 2$' metrics || fail "create 422 counter"
grep -q '^flash_operator_admissions_refused_total{reason="image-too-large"} 1$' metrics || fail "image refusal counter"
grep -q '^flash_operator_store_commit_seconds_count 2$' metrics || fail "commit histogram"
grep -q '^flash_operator_admissions_refused_total{reason="invalid-spec"} 1$' metrics || fail "spec refusal counter"
# A body over the limit is refused early.
head -c 2000000 /dev/zero | tr '\0' ' ' >big.json
code=$(curl -s -o /dev/null -w '%{http_code}' --unix-socket op.sock -X POST --data-binary @big.json http://localhost/provider/v1/services)
[ "$code" = 413 ] || fail "2 MB body answered $code, expected 413"

# The operator unreachable: exit 5.
kill "$pid"; wait "$pid" || fail "SIGTERM is a clean exit"
pid=
[ ! -e op.sock ] || fail "the socket is removed on exit"
expect 5 "cannot reach the operator" $C list
# A restart keeps the store (schema and all).
start
expect 0 "echo" $C list
expect 0 "deleted echo" $C delete echo --generation 3
expect 3 "no such service" $C get echo
expect 0 "NAME" $C list
grep -q echo out && fail "a deleted service is listed"
kill "$pid"; wait "$pid" || true
pid=
echo "flash-operator e2e: ok"
