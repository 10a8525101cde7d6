#!/bin/sh
# flashctl keygen / token sign / token verify as a user runs them: secret
# key files of mode 0600 only, public key sets readable by all but writable
# by their owner only, valid and refused tokens with their exit codes and
# reasons, stdin and --token-file input, key rotation with a JWKS.
set -eu
: "${top_builddir:?}"
F="$top_builddir/bin/flashctl/flashctl"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
fail() { echo "FAIL: $*"; exit 1; }

# expect STATUS STDERR-PATTERN COMMAND...: exit status and a stderr line.
expect() {
	want=$1 pattern=$2
	shift 2
	set +e
	"$@" >out 2>err
	got=$?
	set -e
	[ "$got" = "$want" ] || { cat out err; fail "$* exited $got, expected $want"; }
	[ -z "$pattern" ] || grep -q -- "$pattern" err || { cat err; fail "$*: stderr lacks '$pattern'"; }
}

kid=$("$F" keygen --secret old.jwk --public old.jwks --kid ops-2026-10)
[ "$kid" = ops-2026-10 ] || fail "keygen printed '$kid'"
for f in old.jwk old.jwks; do
	[ "$(stat -c %a $f)" = 600 ] || fail "$f has mode $(stat -c %a $f)"
done
grep -q '"d":' old.jwk || fail "secret key has no d"
grep -q '"d":' old.jwks && fail "public key set holds the secret"
expect 2 "use --force" "$F" keygen --secret old.jwk --public other.jwks
# The default kid is the RFC 7638 thumbprint: 43 base64url characters.
kid2=$("$F" keygen --secret new.jwk --public new.jwks)
echo "$kid2" | grep -Eq '^[A-Za-z0-9_-]{43}$' || fail "thumbprint kid '$kid2'"

now=1800000000
claims="{\"iss\":\"mp\",\"aud\":[\"prov-eu\"],\"action\":\"update\",\"iat\":$now,\"exp\":$((now + 60)),\"org\":\"o-1\",\"project\":\"p-1\",\"gen\":9}"
tok=$("$F" token sign --key old.jwk --kid ops-2026-10 --claims "$claims")
V="token verify --keys old.jwks --issuer mp --audience prov-eu"

out=$("$F" $V --action update --now $((now + 5)) "$tok")
[ "$out" = "$claims" ] || fail "verify printed '$out'"
echo "$tok" | "$F" $V --action update --now $((now + 5)) - >/dev/null || fail "token from stdin"
printf '%s\n' "$tok" >tok && chmod 600 tok
"$F" --token-file tok $V --action update --now $((now + 5)) >/dev/null || fail "token from --token-file"

expect 1 "refused: wrong-action" "$F" $V --action delete --now $((now + 5)) "$tok"
expect 1 "refused: expired" "$F" $V --action update --now $((now + 60)) "$tok"
expect 0 "" "$F" $V --action update --now $((now + 62)) --skew 3 "$tok"
expect 1 "refused: issued-in-future" "$F" $V --action update --now $((now - 6)) --skew 5 "$tok"
expect 1 "refused: wrong-issuer" "$F" token verify --keys old.jwks --issuer mp2 --audience prov-eu \
	--action update --now "$now" "$tok"
expect 1 "refused: wrong-audience" "$F" token verify --keys old.jwks --issuer mp --audience prov-us \
	--action update --now "$now" "$tok"
expect 1 "refused: bad-signature" "$F" $V --action update --now "$now" "${tok%?????}AAAAA"
expect 1 "refused: bad-base64" "$F" $V --action update --now "$now" "$tok=="
expect 1 "refused: malformed" "$F" $V --action update --now "$now" "not-a-token"
expect 2 "--skew 6" "$F" $V --action update --now "$now" --skew 6 "$tok"
expect 2 "--now" "$F" $V --action update --now -5 "$tok"
expect 2 "--action" "$F" $V --action act --now "$now" "$tok"

# Lifetime over 60 s and a mutation without gen are refused.
long=$("$F" token sign --key old.jwk --kid ops-2026-10 --claims \
	"{\"iss\":\"mp\",\"aud\":\"prov-eu\",\"action\":\"get\",\"iat\":$now,\"exp\":$((now + 61)),\"org\":\"o\",\"project\":\"p\"}")
expect 1 "refused: lifetime-too-long" "$F" $V --action get --now "$now" "$long"
nogen=$("$F" token sign --key old.jwk --kid ops-2026-10 --claims \
	"{\"iss\":\"mp\",\"aud\":\"prov-eu\",\"action\":\"delete\",\"iat\":$now,\"exp\":$((now + 30)),\"org\":\"o\",\"project\":\"p\"}")
expect 1 "refused: missing-generation" "$F" $V --action delete --now "$now" "$nogen"

# Signing refuses a kid other than the key's and claims that are not one object.
expect 2 "the key file is for kid" "$F" token sign --key old.jwk --kid other --claims '{}'
expect 1 "repeat a member" "$F" token sign --key old.jwk --kid ops-2026-10 --claims '{"a":1,"a":2}'

# A public key set needs no secret mode: world-readable is accepted.  But
# whoever can write it can add a key: group- or world-writable is refused.
for mode in 644 444 604 640; do
	chmod "$mode" old.jwks
	expect 0 "" "$F" $V --action update --now $((now + 5)) "$tok"
done
for mode in 664 646 666 622; do
	chmod "$mode" old.jwks
	expect 2 "a key set must be owned by you or root and not be writable by group or others" \
		"$F" $V --action update --now "$now" "$tok"
done
chmod 600 old.jwks
ln -s old.jwks link.jwks
expect 2 "refused: a symbolic link" "$F" token verify --keys link.jwks --issuer mp --audience prov-eu \
	--action update --now "$now" "$tok"
mkfifo keys-fifo
expect 2 "refused: not a regular file" timeout 10 "$F" token verify --keys keys-fifo --issuer mp \
	--audience prov-eu --action update --now "$now" "$tok"
# Secret key files that are not mode 0600 are refused, saying so.
chmod 640 old.jwk
expect 2 "mode 0600" "$F" token sign --key old.jwk --kid ops-2026-10 --claims '{}'
# Exactly 0600 or 0400: write-only, setuid, setgid and sticky are refused too.
for mode in 0200 04600 02600 01600; do
	chmod "$mode" old.jwk
	[ "$mode" = 0200 ] && [ "$(id -u)" != 0 ] && continue # unreadable anyway
	expect 2 "mode 0600" "$F" token sign --key old.jwk --kid ops-2026-10 --claims '{}'
done
mkfifo key-fifo
chmod 600 key-fifo
expect 2 "not a regular file" timeout 10 "$F" token sign --key key-fifo --kid ops-2026-10 --claims '{}'
chmod 400 old.jwk
"$F" token sign --key old.jwk --kid ops-2026-10 --claims "$claims" >/dev/null || fail "0400 key refused"
chmod 600 old.jwk
expect 2 "not a key set" "$F" token verify --keys old.jwk --issuer mp --audience prov-eu --action update "$tok"

# Rotation: a set with both keys accepts both; the new set alone refuses the old kid.
inner() { sed -e 's/^{"keys":\[//' -e 's/\]}$//' "$1"; }
printf '{"keys":[%s,%s]}\n' "$(inner old.jwks)" "$(inner new.jwks)" >both.jwks
chmod 600 both.jwks
tok2=$("$F" token sign --key new.jwk --kid "$kid2" --claims "$claims")
"$F" token verify --keys both.jwks --issuer mp --audience prov-eu --action update --now "$now" "$tok" >/dev/null ||
	fail "old key during rotation"
"$F" token verify --keys both.jwks --issuer mp --audience prov-eu --action update --now "$now" "$tok2" >/dev/null ||
	fail "new key during rotation"
expect 1 "refused: unknown-kid" "$F" token verify --keys new.jwks --issuer mp --audience prov-eu \
	--action update --now "$now" "$tok"
echo "flashctl token: all checks passed"
