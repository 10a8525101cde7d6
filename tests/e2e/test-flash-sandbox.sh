#!/bin/sh
# Sandbox sessions end to end (root, real runsc): flash-operator --sandbox
# (the gVisor backend) driven by flashctl session, over an image from a
# local OCI layout (BusyBox beside the host's /bin/bash and its libraries:
# the image contract):
#   - create is idempotent (made, then adopted), list shows the session,
#     every answer carries expires_at;
#   - exec: the command's status is flashctl's, stdout and stderr apart,
#     stdin with -i, exact argv; --timeout kills it (124) within a second
#     or two, and a command that exits 124 itself is not a timeout;
#   - cp both ways (a 1 MiB random file, and - for stdin/stdout), binary
#     safe; a missing file is 3 and leaves no local file;
#   - export a directory as a tar under its base name, import it back;
#   - another tenant sees nothing (list) and gets 3 (not found);
#   - reap returns once the sandbox is gone: no runsc container is left,
#     and get is 3.
set -eu
: "${top_builddir:?}" "${top_srcdir:?}"
B=$(cd "$top_builddir" && pwd)
S=$(cd "$top_srcdir" && pwd)
if [ "$(id -u)" -ne 0 ]; then echo "SKIP: needs root (runsc, cgroups)"; exit 77; fi
for t in runsc umoci skopeo docker-registry jq bash busybox ldd; do
	command -v "$t" >/dev/null || { echo "SKIP: $t is not installed (scripts/deps.sh)"; exit 77; }
done
if [ "${FLASH_E2E_INSIDE:-}" != "$$" ]; then
	FLASH_E2E_INSIDE=$$ exec unshare --mount --propagation private "$0" "$@"
fi
T=$(mktemp -d /tmp/flash-sandbox.XXXXXX)
OP=
down() {
	set +e
	[ -n "$OP" ] && kill "$OP" 2>/dev/null && wait "$OP" 2>/dev/null
	sh "$S/tests/integration/registry.sh" stop "$T/reg" sbx 2>/dev/null
	r="$T/sbx/runsc"
	if [ -d "$r" ]; then
		for c in $(runsc --root "$r" list -quiet 2>/dev/null); do
			runsc --root "$r" delete -force "$c" >/dev/null 2>&1
			for d in /sys/fs/cgroup/*/flash-sandbox/"$c" /sys/fs/cgroup/flash-sandbox/"$c"; do
				[ -d "$d" ] && rmdir "$d" 2>/dev/null
			done
		done
	fi
	grep -o " $T[^ ]*" /proc/self/mounts | sort -r | while read -r m; do umount -l "$m"; done
	rm -rf "$T"
}
trap down EXIT
fail() {
	echo "FAIL: $*"
	echo "--- operator log"; tail -n 40 "$T/op.log" 2>/dev/null
	exit 1
}

# The image: BusyBox, bash and its libraries, as one layer of an OCI layout.
R=$T/rootfs
mkdir -p "$R/bin" "$R/tmp" "$R/root" "$R/etc"
cp /usr/bin/busybox "$R/bin/busybox"
for a in $(busybox --list); do case $a in busybox | bash) ;; *) ln -s busybox "$R/bin/$a" ;; esac; done
cp /bin/bash "$R/bin/bash"
for l in $(ldd /bin/bash | grep -o '/[^ ]*'); do mkdir -p "$R$(dirname "$l")"; cp -L "$l" "$R$l"; done
echo hello >"$R/etc/greeting"
tar -C "$R" -cf "$T/layer.tar" .
umoci init --layout "$T/layout" >/dev/null
umoci new --image "$T/layout:v1" >/dev/null
umoci raw add-layer --image "$T/layout:v1" "$T/layer.tar" >/dev/null
umoci config --image "$T/layout:v1" --os linux --architecture amd64 >/dev/null
# (a spec names a registry image: the layout goes to a registry on loopback)
port=$(sh "$S/tests/integration/registry.sh" start "$T/reg" sbx none 2>"$T/reg.log") || fail "registry"
skopeo copy -q --dest-tls-verify=false "oci:$T/layout:v1" "docker://127.0.0.1:$port/sandbox:v1" >/dev/null ||
	fail "push"
jq -n --arg img "127.0.0.1:$port/sandbox:v1" '{region: "heteronet-global", image: $img, cpu_millis: 500, memory_mib: 256,
	egress: {mode: "disabled", allow_same_organization: false, allowed_destination_cidrs: [], denied_destination_cidrs: []}}' \
	>"$T/spec.json"

"$B/bin/flashctl/flashctl" keygen --secret "$T/sk.jwk" --public "$T/pk.jwks" --kid e2e >/dev/null
"$B/bin/flash-operator" --keys "$T/pk.jwks" --issuer mp --audience prov --socket "$T/op.sock" \
	--state-dir "$T/state" --registry-plain-http --sandbox-dir "$T/sbx" 2>>"$T/op.log" &
OP=$!
i=0
until [ -S "$T/op.sock" ]; do
	i=$((i + 1)); [ $i -lt 300 ] || fail "operator did not start in 30 s"
	kill -0 "$OP" 2>/dev/null || fail "operator exited"
	sleep 0.1
done
fc() {
	"$B/bin/flashctl/flashctl" --endpoint "unix:$T/op.sock" --organization-id org-1 --project-id p-1 \
		--token-file "$T/sk.jwk" --issuer mp --audience prov "$@"
}
fc2() {
	"$B/bin/flashctl/flashctl" --endpoint "unix:$T/op.sock" --organization-id org-2 --project-id p-1 \
		--token-file "$T/sk.jwk" --issuer mp --audience prov "$@"
}

# create, idempotent
fc -o json session create box --spec "$T/spec.json" --ttl 600 >"$T/c1.json" || fail "create exited $?"
[ "$(jq -r .adopted "$T/c1.json")" = false ] || fail "first create: $(cat "$T/c1.json")"
[ "$(jq -r '.expires_at > now' "$T/c1.json")" = true ] || fail "expires_at: $(cat "$T/c1.json")"
fc -o json session create box --spec "$T/spec.json" --ttl 600 >"$T/c2.json" || fail "create again exited $?"
[ "$(jq -r .adopted "$T/c2.json")" = true ] || fail "second create not adopted: $(cat "$T/c2.json")"
[ "$(jq -r .session_id "$T/c1.json")" = "$(jq -r .session_id "$T/c2.json")" ] || fail "two sessions"
fc -o json session list | jq -e '.sandboxes | length == 1' >/dev/null || fail "list: $(fc -o json session list)"
echo "ok: create makes the sandbox, again adopts it; list shows one session with its expires_at"

# exec
out=$(fc session exec box -- /bin/bash -c 'cat /etc/greeting; echo err >&2; exit 3' 2>"$T/err") && rc=0 || rc=$?
[ $rc = 3 ] || fail "exit 3 came back as $rc"
[ "$out" = hello ] || fail "stdout: $out"
grep -qx err "$T/err" || fail "stderr: $(cat "$T/err")"
set -- 'a b' '"q"' '' "it's" 'two
lines' '$HOME' '*' '-n'
want=$(printf '[%s]\n' "$@")
got=$(fc session exec box -- /bin/bash -c 'printf "[%s]\n" "$@"' x "$@") || fail "printf exec"
[ "$got" = "$want" ] || fail "argv changed: $got"
set --
head -c 100000 /dev/urandom >"$T/in"
fc session exec -i box -- /bin/cat <"$T/in" >"$T/in.back" || fail "exec -i"
cmp -s "$T/in" "$T/in.back" || fail "stdin came back changed"
t0=$(date +%s%N)
rc=0; fc session exec --timeout 0.5 box -- /bin/sleep 30 2>/dev/null || rc=$?
t1=$(date +%s%N)
[ $rc = 124 ] || fail "a timeout came back as $rc"
# well below the 30 s the command would run: a loaded ASan build needs room
[ $(((t1 - t0) / 1000000)) -lt 15000 ] || fail "the timeout took $(((t1 - t0) / 1000000)) ms"
rc=0; fc session exec --timeout 5 box -- /bin/bash -c 'exit 124' 2>"$T/err" || rc=$?
[ $rc = 124 ] && ! grep -q timeout "$T/err" || fail "exit 124 taken for a timeout ($rc: $(cat "$T/err"))"
echo "ok: exec: status 3, stdout/stderr apart, exact argv, 100000 bytes of stdin, a timeout is 124 ($(((t1 - t0) / 1000000)) ms)"

# cp
head -c 1048576 /dev/urandom >"$T/blob"
fc session cp "$T/blob" box:/tmp/blob || fail "cp in"
fc session cp box:/tmp/blob "$T/blob.back" || fail "cp out"
cmp -s "$T/blob" "$T/blob.back" || fail "1 MiB changed on the way"
printf 'from stdin' | fc session cp - box:/tmp/s || fail "cp - in"
[ "$(fc session cp box:/tmp/s -)" = "from stdin" ] || fail "cp - out"
rc=0; fc session cp box:/tmp/none "$T/none" 2>/dev/null || rc=$?
[ $rc = 3 ] && [ ! -e "$T/none" ] || fail "a missing file: $rc"
echo "ok: cp: 1 MiB both ways unchanged, - for stdin and stdout, a missing file is 3"

# export, import
fc session exec box -- /bin/bash -c 'mkdir -p /tmp/tree/d && echo x > /tmp/tree/d/f' || fail "tree"
fc session export box:/tmp/tree "$T/tree.tar" || fail "export"
tar -tf "$T/tree.tar" | grep -qx 'tree/d/f' || fail "export members: $(tar -tf "$T/tree.tar")"
fc session exec box -- /bin/mkdir /tmp/imp || fail "mkdir"
fc session import - box:/tmp/imp <"$T/tree.tar" || fail "import"
[ "$(fc session exec box -- /bin/cat /tmp/imp/tree/d/f)" = x ] || fail "imported"
echo "ok: export under the root's base name, import back"

# another tenant
fc2 -o json session list | jq -e '.sandboxes | length == 0' >/dev/null || fail "another tenant's list"
rc=0; fc2 session get "$(jq -r .session_id "$T/c1.json")" 2>/dev/null || rc=$?
[ $rc = 3 ] || fail "another tenant got $rc"
echo "ok: another organization sees no session and gets not found"

# reap
fc session reap box >/dev/null || fail "reap"
[ -z "$(runsc --root "$T/sbx/runsc" list -quiet 2>/dev/null)" ] || fail "a container is left"
rc=0; fc session get box 2>/dev/null || rc=$?
[ $rc = 3 ] || fail "get after reap: $rc"
echo "ok: reap returns with nothing left"
