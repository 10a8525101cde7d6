#!/bin/sh
# flashctl render as a user runs it: the same objects as the library's
# golden files, port stability from --previous, and the exit codes
# (1: refused spec or rendering, 2: usage, configuration or I/O error).
set -eu
: "${top_srcdir:?}" "${top_builddir:?}"
flashctl="$top_builddir/bin/flashctl/flashctl"
data="$top_srcdir/tests/data/render"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
digest=sha256:3f1c6a3d2f0e4b7a9c8d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b
uid=56ae4acd-23a1-48b4-aecf-39c3886155de

"$flashctl" --organization-id org-1234 render --spec "$data/seed-gpu-udp/spec.json" \
	--name fs-udp-echo --namespace flash-demo --uid "$uid" --project-id proj-web --service-id svc-1 \
	--image-digest "$digest" --image-bytes 209715200 >"$tmp/seed.yaml"
cmp "$tmp/seed.yaml" "$data/seed-gpu-udp/expected.yaml" || { echo "seed-gpu-udp YAML differs"; exit 1; }
"$flashctl" --organization-id org-1234 render -o json --spec "$data/seed-gpu-udp/spec.json" \
	--name fs-udp-echo --namespace flash-demo --uid "$uid" --project-id proj-web --service-id svc-1 \
	--image-digest "$digest" --image-bytes 209715200 >"$tmp/seed.json"
cmp "$tmp/seed.json" "$data/seed-gpu-udp/expected.json" || { echo "seed-gpu-udp JSON differs"; exit 1; }
# The global -o applies too.
"$flashctl" --organization-id org-1234 -o json render --spec "$data/seed-gpu-udp/spec.json" \
	--name fs-udp-echo --namespace flash-demo --uid "$uid" --project-id proj-web --service-id svc-1 \
	--image-digest "$digest" --image-bytes 209715200 | cmp - "$data/seed-gpu-udp/expected.json" ||
	{ echo "global -o json ignored"; exit 1; }

# --previous keeps the ports of unchanged pairs.
"$flashctl" --organization-id org-1234 render --spec "$data/previous-ports/spec.json" \
	--previous "$data/previous-ports/previous.json" --name fs-voice --namespace flash-demo --uid "$uid" \
	--project-id proj-web --service-id svc-6 >"$tmp/voice.yaml"
cmp "$tmp/voice.yaml" "$data/previous-ports/expected.yaml" || { echo "previous-ports differs"; exit 1; }

# Without --name the name is stable (from the spec digest).
a=$("$flashctl" render --spec "$data/internal-tcp/spec.json" | grep -m1 '  name:')
b=$("$flashctl" render --spec "$data/internal-tcp/spec.json" | grep -m1 '  name:')
[ "$a" = "$b" ] || { echo "default name not stable"; exit 1; }

expect() {
	want=$1
	shift
	set +e
	"$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	set -e
	[ "$rc" -eq "$want" ] || { echo "exit $rc, expected $want: $*"; cat "$tmp/err"; exit 1; }
}
printf '{"region":"r","image":"x","cpu_millis":0,"memory_mib":128}' >"$tmp/bad.json"
expect 1 "$flashctl" render --spec "$tmp/bad.json"
grep -q 'cpu_millis' "$tmp/err" || { echo "the spec error does not name cpu_millis"; exit 1; }
expect 1 "$flashctl" render --spec "$data/internal-tcp/spec.json" --image-bytes 4294967296
grep -q 'disk budget' "$tmp/err" || { echo "no disk budget message"; exit 1; }
printf '{"publicPortRange":{"first":2,"last":1}}' >"$tmp/conf.json"
expect 2 "$flashctl" render --spec "$data/internal-tcp/spec.json" --config "$tmp/conf.json"
grep -q 'publicPortRange' "$tmp/err" || { echo "the config error does not name the key"; exit 1; }
expect 2 "$flashctl" render --spec "$data/internal-tcp/spec.json" -o table
expect 2 "$flashctl" render
expect 2 "$flashctl" render --spec "$tmp/missing.json"
expect 0 "$flashctl" render --help
echo "flashctl render: ok"
