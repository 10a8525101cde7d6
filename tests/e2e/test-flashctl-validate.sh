#!/bin/sh
# flashctl as a user runs it: global options, the token file mode check,
# and `validate` (compiler-style output, -o json, --policy, exit codes).
set -eu
: "${top_srcdir:?}" "${top_builddir:?}"
flashctl="$top_builddir/bin/flashctl/flashctl"
data="$top_srcdir/tests/data/spec"
seed="$top_srcdir/examples/udp-echo.json"
policy="$top_srcdir/examples/owner-policy.json"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# expect STATUS CMD... : runs CMD, stdout+stderr in $tmp/out, checks status.
expect() {
	want=$1
	shift
	set +e
	"$@" >"$tmp/out" 2>&1
	got=$?
	set -e
	[ "$got" = "$want" ] || { cat "$tmp/out"; fail "'$*' exited $got, want $want"; }
}

# Usage errors: exit 2.
expect 2 "$flashctl"
expect 2 "$flashctl" frobnicate
grep -q "unknown command 'frobnicate'" "$tmp/out" || fail "unknown command not named"
expect 2 "$flashctl" -o xml validate "$seed"
expect 2 "$flashctl" validate
expect 2 "$flashctl" validate "$tmp/does-not-exist.json"
grep -q "does-not-exist.json: No such file" "$tmp/out" || fail "missing file not named"
# A FIFO with no writer is refused at once (timeout exits 124 if it blocks).
mkfifo "$tmp/fifo.json"
expect 2 timeout 10 "$flashctl" validate "$tmp/fifo.json"
grep -q "validate: $tmp/fifo.json: not a regular file" "$tmp/out" || { cat "$tmp/out"; fail "FIFO not named"; }
expect 2 timeout 10 "$flashctl" validate --policy "$tmp/fifo.json" "$seed"
grep -q "$tmp/fifo.json: not a regular file" "$tmp/out" || { cat "$tmp/out"; fail "FIFO policy not named"; }
expect 2 "$flashctl" validate "$tmp"
grep -q "validate: $tmp: not a regular file" "$tmp/out" || { cat "$tmp/out"; fail "directory not named"; }
expect 0 "$flashctl" --help
grep -q '^  validate ' "$tmp/out" || fail "--help does not list validate"
# The provider client's commands are advertised, and every command listed
# exists (its --help answers).
for c in create list get update delete usage logs exec; do
	grep -q "^  $c " "$tmp/out" || fail "--help does not list $c"
done
for c in $(sed -n 's/^  \([a-z]*\) .*/\1/p' "$tmp/out"); do
	"$flashctl" "$c" --help >/dev/null 2>&1 || fail "--help lists $c, which does not answer --help (missing?)"
done
expect 0 "$flashctl" --version

# The seed example validates unchanged.
expect 0 "$flashctl" validate "$seed"
grep -qx "$seed: valid (0 warnings)" "$tmp/out" || fail "seed not reported valid"
expect 0 "$flashctl" validate --policy "$policy" "$seed" "$data"/valid/01-minimal.json

# Invalid specs: exit 1, one line per problem, FILE: PATH: message.
bad="$data/invalid/040-port-zero.json"
expect 1 "$flashctl" validate "$bad"
grep -qx "$bad: ports\[0\].container_port: must be at least 1 (value: 0) \[minimum\]" "$tmp/out" || {
	cat "$tmp/out"; fail "compiler-style line"; }
expect 1 "$flashctl" validate "$seed" "$data/invalid/101-many-problems.json"
[ "$(grep -c 'many-problems.json: ' "$tmp/out")" = 6 ] || { cat "$tmp/out"; fail "all six problems reported"; }
# Malformed JSON: FILE:LINE:COLUMN.
expect 1 "$flashctl" validate "$data/invalid/001-json-trailing-comma.json"
grep -Eq '001-json-trailing-comma.json:1:[0-9]+: .*\[json-syntax\]$' "$tmp/out" || { cat "$tmp/out"; fail "line:column"; }
# Warnings do not fail.
expect 0 "$flashctl" validate "$data/valid/06-credential-warning.json"
grep -q 'env.DB_PASSWORD: warning: looks like a credential' "$tmp/out" || fail "credential warning"
# An I/O error wins over an invalid spec.
expect 2 "$flashctl" validate "$bad" "$tmp/nope.json"

# -o json: one array, one object per file.
expect 1 "$flashctl" -o json validate "$seed" "$bad"
grep -q '^\[{"source":".*udp-echo.json","valid":true,"errors":0,"warnings":0,"dropped":0,"problems":\[\]},{"source":".*040-port-zero.json","valid":false,"errors":1,' "$tmp/out" || {
	cat "$tmp/out"; fail "-o json"; }
grep -q '"path":"ports\[0\].container_port","code":"minimum","message":"must be at least 1","value":"0"' "$tmp/out" || {
	cat "$tmp/out"; fail "-o json problem"; }

# --policy: violations exit 1, a broken policy exits 2.
cat >"$tmp/spec.json" <<'JSON'
{"region": "mars-1", "image": "nginx", "cpu_millis": 5000, "memory_mib": 64}
JSON
expect 1 "$flashctl" validate --policy "$policy" "$tmp/spec.json"
grep -q 'spec.json: region: is not one of the owner.s regions (value: "mars-1") \[policy-region\]' "$tmp/out" || { cat "$tmp/out"; fail "policy region"; }
grep -q 'spec.json: cpu_millis: cpu_millis 5000 exceeds the per-workload limit 4000' "$tmp/out" || { cat "$tmp/out"; fail "policy limit"; }
echo '{"regions": []}' >"$tmp/policy.json"
expect 2 "$flashctl" validate --policy "$tmp/policy.json" "$seed"
grep -q 'workload_limits: is required' "$tmp/out" || { cat "$tmp/out"; fail "broken policy explained"; }
# A policy problem is written as a spec problem is, "(value: V)" closed.
sed 's/"regions": \["heteronet-global", "eu-central"\]/"regions": ["heteronet-global", "eu-central", "heteronet-global"]/' \
	"$policy" >"$tmp/policy-dup.json"
expect 2 "$flashctl" validate --policy "$tmp/policy-dup.json" "$seed"
grep -qxF "$tmp/policy-dup.json: regions[2]: duplicates item 0 (value: \"heteronet-global\") [duplicate]" "$tmp/out" || {
	cat "$tmp/out"; fail "policy duplicate-entry line"; }

# --canonical prints the canonical form (the golden file).
expect 0 "$flashctl" validate --canonical "$seed"
grep -qxF "$(cat "$data/udp-echo.canonical.json")" "$tmp/out" || { cat "$tmp/out"; fail "--canonical"; }

# --token-file: mode 0600 (or 0400) only.
printf 'token\n' >"$tmp/token"
chmod 0644 "$tmp/token"
expect 2 "$flashctl" --organization-id org-1 --token-file "$tmp/token" validate "$seed"
grep -q 'refused: it must be owned by you and have mode 0600' "$tmp/out" || { cat "$tmp/out"; fail "0644 token accepted"; }
# Only exactly 0600 or 0400: no write-only, setuid, setgid or sticky bit.
for mode in 0200 04600 02600 01600 0700; do
	chmod "$mode" "$tmp/token"
	expect 2 "$flashctl" --organization-id org-1 --token-file "$tmp/token" validate "$seed"
	# (Without root a write-only file already fails to open.)
	[ "$mode" = 0200 ] && [ "$(id -u)" != 0 ] && continue
	grep -q 'refused: it must be owned by you and have mode 0600' "$tmp/out" || { cat "$tmp/out"; fail "$mode token accepted"; }
done
mkfifo "$tmp/token-fifo"
chmod 0600 "$tmp/token-fifo"
expect 2 timeout 10 "$flashctl" --token-file "$tmp/token-fifo" validate "$seed"
grep -q 'token-fifo: not a regular file' "$tmp/out" || { cat "$tmp/out"; fail "FIFO token"; }
chmod 0400 "$tmp/token"
expect 0 "$flashctl" --organization-id org-1 --token-file "$tmp/token" validate "$seed"
chmod 0600 "$tmp/token"
expect 0 "$flashctl" --organization-id org-1 --token-file "$tmp/token" validate "$seed"
ln -s "$tmp/token" "$tmp/token-link"
expect 2 "$flashctl" --token-file "$tmp/token-link" validate "$seed"
expect 2 "$flashctl" --token-file "$tmp/missing-token" validate "$seed"
expect 2 "$flashctl" --organization-id "" validate "$seed"
echo "flashctl validate: all checks passed"
