#!/bin/sh
# The Web Shell end to end (root, real runsc): flash-operator's exec route
# (a WebSocket) driven by flashctl exec against a ready gVisor replica of
# an image with busybox:
#   - `id` runs as uid 0 in /root; the remote exit status is flashctl's;
#   - an argv with spaces, quotes, empty and multi-line arguments arrives
#     unchanged; stdin (-i) reaches the process, stdout and stderr stay
#     apart;
#   - a TTY session driven through a terminal (tmux) sees the window size,
#     then a resize; Ctrl-C reaches the remote process, not flashctl; the
#     local terminal is restored afterwards;
#   - nothing of the host's or the operator's credentials is inside (the
#     environment, the key files);
#   - refusals with their exit codes: another organization's service
#     (121), a service that is not ready (122), a token for another
#     action (120), the session cap (123); the session limit ends a
#     session with a clear message (124);
#   - each session is audited in the service's events (start and end:
#     who, replica, argv, duration, exit status, bytes) and /metrics
#     counts open sessions.
set -eu
E2E_NAME=flash-exec
E2E_NEED="curl tmux"
POOL=10.244.11.0/24
. "${top_srcdir:?}/tests/e2e/lib.sh"
TMUX_SOCK=
down() {
	[ -n "$TMUX_SOCK" ] && tmux -S "$TMUX_SOCK" kill-server 2>/dev/null
	node_down
}
trap down EXIT
# A canary in the operator's environment: it must never reach a session.
export FLASH_EXEC_CANARY=canary-$$-do-not-leak
OP_EXTRA="--exec-max-sessions 2"
node_up
unset FLASH_EXEC_CANARY
F="$B/bin/flashctl/flashctl"
shimage=$(sh "$S/scripts/echo-image" "$S" "$T/img2" "127.0.0.1:$port" v2 shell) || fail "shell image"
jq -c --arg img "$shimage" '.image = $img | del(.gpu_type) | .ephemeral_storage_gib = 1 |
	.command = ["/usr/local/bin/flash-udp-echo"] | .env = {"GREETING": "hello"}' "$S/examples/udp-echo.json" >"$T/sh.json"
jq -c '.command = ["/usr/local/bin/no-such-program"]' "$T/sh.json" >"$T/bad.json"
fc create --name shell --spec "$T/sh.json" >/dev/null || fail "create shell"
fc create --name bad --spec "$T/bad.json" >/dev/null || fail "create bad"
wait_phase shell ready 60
wait_phase bad failed 60

# id in /root as root; the exit status.
out=$(fc exec shell -- id) || fail "exec id exited $?"
echo "$out" | grep -Eq '^uid=0(\(root\))? gid=0' || fail "id said: $out"
[ "$(fc exec shell -- pwd)" = /root ] || fail "not in /root"
[ "$(fc exec shell)" = "" ] || fail "/bin/sh by default with no input"
rc=0; fc exec shell -- sh -c 'exit 7' || rc=$?
[ $rc = 7 ] || fail "exit 7 came back as $rc"
rc=0; fc exec shell -- sh -c 'kill -9 $$' || rc=$?
[ $rc = 137 ] || fail "a process killed by SIGKILL came back as $rc"
echo "ok: id runs as uid 0 in /root (default /bin/sh); exit statuses 7 and 137 are flashctl's"

# Exact argv.
set -- 'a b' '"q"' '' "it's" 'two
lines' '$HOME' '*' '-n' '--' ' '
want=$(printf '[%s]\n' "$@")
got=$(fc exec shell -- printf '[%s]\n' "$@") || fail "exec printf"
[ "$got" = "$want" ] || { printf 'want:\n%s\ngot:\n%s\n' "$want" "$got"; fail "argv changed on the way"; }
set --
echo "ok: argv with spaces, quotes, empty, multi-line and option-like arguments arrives unchanged"
# An argv too long for the URL (the query holds about 12 KiB) travels in
# the first WebSocket message (argv=message), as exactly.
big=$(head -c 40000 /dev/zero | tr '\0' 'y')
got=$(fc exec shell -- printf '%s|%s|%s' "$big" 'a b' '') || fail "exec with a 40000-byte argument exited $?"
[ "$got" = "$big|a b|" ] || fail "a 40000-byte argv came back as ${#got} bytes: $(printf %s "$got" | head -c 80)"
echo "ok: a 40000-byte argument (beyond the URL) arrives unchanged in the first message"

# stdin, stdout, stderr.
head -c 300000 /dev/urandom >"$T/blob"
fc exec -i shell -- cat <"$T/blob" >"$T/blob.back" || fail "exec -i cat"
cmp -s "$T/blob" "$T/blob.back" || fail "300000 bytes through stdin and stdout changed"
fc exec shell -- sh -c 'echo to-out; echo to-err >&2' >"$T/o" 2>"$T/e" || fail "exec out/err"
[ "$(cat "$T/o")" = to-out ] && [ "$(cat "$T/e")" = to-err ] || fail "stdout/stderr mixed: $(cat "$T/o") / $(cat "$T/e")"
echo "ok: stdin (300000 bytes) comes back unchanged; stdout and stderr stay apart"

# A session quiet for longer than the HTTP idle timeout (--timeout,
# default 10 s) lives on: upgraded connections are the session's to time.
t0=$(date +%s)
out=$(fc exec shell -- sh -c 'sleep 12; echo still-here') || fail "a quiet 12 s session exited $?"
[ "$out" = still-here ] && [ $(($(date +%s) - t0)) -ge 12 ] || fail "a quiet session was cut: '$out'"
echo "ok: a session quiet for 12 s outlives the 10 s HTTP idle timeout"

# No credential inside: the operator's environment, its keys, a service
# account token.
fc exec shell -- env >"$T/env" || fail "exec env"
grep -q '^GREETING=hello$' "$T/env" || fail "the workload's own env is missing: $(cat "$T/env")"
grep -q 'canary' "$T/env" && fail "the operator's environment leaked: $(cat "$T/env")"
grep -Eq '^(KUBERNETES_|FLASH_|AWS_|SSH_|SUDO_)' "$T/env" && fail "a host variable is inside: $(cat "$T/env")"
fc exec shell -- cat /proc/1/environ >"$T/env1" || fail "exec cat /proc/1/environ"
grep -q canary "$T/env1" && fail "the workload's environment has the canary"
d=$(jq -r .d "$T/sk.jwk")
# Every file system of the sandbox but the endless ones (/dev, /proc, /sys).
fc exec shell -- sh -c "grep -rlF -- '$d' /bin /etc /root /tmp /usr /var /run /home /opt /mnt 2>/dev/null
	ls /var/run/secrets /run/secrets 2>/dev/null; true" >"$T/found"
[ -s "$T/found" ] && fail "a credential is visible inside: $(cat "$T/found")"
echo "ok: no host or operator variable, key or service account token inside the sandbox"

# A terminal: tmux runs flashctl exec -it; the size, a resize, Ctrl-C.
TMUX_SOCK="$T/tmux.sock"
cat >"$T/fc.sh" <<EOF
#!/bin/sh
stty -g >"$T/stty.before"
"$F" --endpoint "unix:$T/op.sock" --organization-id org-1 --project-id p-1 --token-file "$T/sk.jwk" \
	--issuer mp --audience prov exec -it shell -- /bin/sh
echo "flashctl-exit=\$?" >"$T/tty.rc"
stty -g >"$T/stty.after"
sleep 600
EOF
chmod +x "$T/fc.sh"
tmux -S "$TMUX_SOCK" new-session -d -x 100 -y 30 "$T/fc.sh"
pane() { tmux -S "$TMUX_SOCK" capture-pane -p; }
wait_pane() { # TEXT SECONDS
	i=0
	until pane | grep -q -- "$1"; do
		i=$((i + 1)); [ $i -lt $(($2 * 10)) ] || { pane; fail "the terminal never showed '$1'"; }
		sleep 0.1
	done
}
keys() { tmux -S "$TMUX_SOCK" send-keys "$@"; }
sleep 0.5
keys 'echo "size=$(stty size)"' Enter
wait_pane 'size=30 100' 15
tmux -S "$TMUX_SOCK" resize-window -x 120 -y 40
sleep 0.5
keys 'echo "size=$(stty size)"' Enter
wait_pane 'size=40 120' 10
keys 'sleep 100' Enter
sleep 1
keys C-c
sleep 0.5
keys 'echo "after-int=$?"' Enter
wait_pane 'after-int=130' 10
pgrep -f "exec -it shell" >/dev/null || fail "Ctrl-C ended flashctl instead of the remote sleep"
keys 'exit 3' Enter
i=0
until [ -s "$T/tty.rc" ]; do i=$((i + 1)); [ $i -lt 100 ] || { pane; fail "flashctl -it did not end"; }; sleep 0.1; done
[ "$(cat "$T/tty.rc")" = flashctl-exit=3 ] || fail "the TTY session's exit: $(cat "$T/tty.rc")"
cmp -s "$T/stty.before" "$T/stty.after" || fail "the terminal was not restored: $(cat "$T/stty.before") -> $(cat "$T/stty.after")"
tmux -S "$TMUX_SOCK" kill-server; TMUX_SOCK=
echo "ok: a TTY session sees 100x30, then the resize to 120x40; Ctrl-C reaches the remote process; exit 3; terminal restored"

# Without -t, Ctrl-C (SIGINT) ends flashctl (130) and with it the remote
# process (flashctl(1)): nothing is left running in the replica.
(exec "$F" --endpoint "unix:$T/op.sock" --organization-id org-1 --project-id p-1 --token-file "$T/sk.jwk" \
	--issuer mp --audience prov exec shell -- sh -c 'echo $$ >/tmp/int.pid; exec sleep 100') 2>"$T/int.err" &
fpid=$!
i=0
until [ "$(fc exec shell -- cat /tmp/int.pid 2>/dev/null)" ]; do
	i=$((i + 1)); [ $i -lt 100 ] || fail "the remote sleep never started"; sleep 0.1
done
rpid=$(fc exec shell -- cat /tmp/int.pid)
kill -INT $fpid
rc=0; wait $fpid || rc=$?
[ $rc = 130 ] || fail "flashctl exec without -t exited $rc on SIGINT: $(cat "$T/int.err")"
grep -q "ended by signal 2 (the remote process is ended too)" "$T/int.err" || fail "SIGINT message: $(cat "$T/int.err")"
i=0
until [ "$(fc exec shell -- sh -c "kill -0 $rpid 2>/dev/null && echo alive || echo gone")" = gone ]; do
	i=$((i + 1)); [ $i -lt 50 ] || fail "the remote process $rpid outlived flashctl's SIGINT"; sleep 0.1
done
echo "ok: without -t, Ctrl-C ends flashctl (130) and the remote process $rpid with it"

# Refusals and their exit codes.
expect_rc() { # RC TEXT CMD...
	want=$1 text=$2; shift 2
	rc=0; "$@" >"$T/r.out" 2>"$T/r.err" || rc=$?
	[ $rc = "$want" ] || fail "$* exited $rc, not $want: $(cat "$T/r.err")"
	grep -q -- "$text" "$T/r.err" || fail "$*: no '$text' in: $(cat "$T/r.err")"
}
sid=$(fc -o json get shell | jq -r .id)
expect_rc 121 "404 not-found" "$F" --endpoint "unix:$T/op.sock" --organization-id org-2 --project-id p-1 \
	--token-file "$T/sk.jwk" --issuer mp --audience prov exec "$sid" -- id
expect_rc 122 "409 not-ready" fc exec bad -- id
expect_rc 121 "no replica 5" fc exec shell --replica 5 -- id
now=$(date +%s)
"$F" token sign --key "$T/sk.jwk" --kid node --claims \
	"{\"iss\":\"mp\",\"aud\":\"prov\",\"action\":\"logs\",\"org\":\"org-1\",\"project\":\"p-1\",\"iat\":$now,\"exp\":$((now + 60))}" \
	>"$T/logs.tok"
chmod 600 "$T/logs.tok"
expect_rc 120 "403 wrong-action" "$F" --endpoint "unix:$T/op.sock" --token-file "$T/logs.tok" exec "$sid" -- id
echo "ok: refused with their codes: another organization's (121), not ready (122), no such replica (121), a logs token (120)"

# The cap (2 sessions) and /metrics.
# flashctl itself in the background (not the fc function's subshell), so
# that the kill below reaches it.
FC="$F --endpoint unix:$T/op.sock --organization-id org-1 --project-id p-1 --token-file $T/sk.jwk --issuer mp --audience prov"
$FC exec shell -- sleep 30 >/dev/null 2>&1 & S1=$!
$FC exec shell -- sleep 30 >/dev/null 2>&1 & S2=$!
metric() { curl -s --unix-socket "$T/op.sock" http://localhost/metrics | awk -v m="$1" '$1 == m {print $2}'; }
i=0
until [ "$(metric flash_operator_exec_sessions_open)" = 2 ]; do
	i=$((i + 1)); [ $i -lt 100 ] || fail "/metrics never counted 2 open sessions: $(metric flash_operator_exec_sessions_open)"
	sleep 0.1
done
expect_rc 123 "429 too-many-sessions" fc exec shell -- id
kill "$S1" "$S2"; wait "$S1" 2>/dev/null || true; wait "$S2" 2>/dev/null || true
i=0
until [ "$(metric flash_operator_exec_sessions_open)" = 0 ]; do
	i=$((i + 1)); [ $i -lt 100 ] || fail "the sessions of killed clients stay open"
	sleep 0.1
done
# Their processes ended with them (not left to finish their sleep).
fc exec shell -- sh -c 'cat /proc/[0-9]*/cmdline 2>/dev/null | tr "\0" " "' >"$T/procs" || fail "exec cat cmdline"
grep -q "sleep 30" "$T/procs" && fail "the killed clients' processes still run: $(cat "$T/procs")"
fc exec shell -- id >/dev/null || fail "no session after the others ended"
echo "ok: a third session is refused (123) while 2 are open; /metrics counts them; a client's end ends its session"

# The session limit (a restart with 3 s).
kill "$OP"; wait "$OP" 2>/dev/null || true; OP=
OP_EXTRA="--exec-session-limit 3"
start_op
wait_phase shell ready 30
t0=$(date +%s)
expect_rc 124 "limit of 3 s" fc exec shell -- sleep 60
t=$(($(date +%s) - t0))
[ $t -le 12 ] || fail "the 3 s limit ended the session after $t s"
echo "ok: the session limit (3 s) ends a session after $t s with a clear message (124)"

# The audit: events of the service.
fc -o json get shell >"$T/get.json"
jq -e '[.events[] | select(.type == "exec-end") | .message | fromjson |
	select(.argv == ["sleep", "60"] and .reason == "time-limit")] | length == 1' "$T/get.json" >/dev/null ||
	{ jq .events "$T/get.json"; fail "no exec-end event for the limited session"; }
jq -e '[.events[] | select(.type == "exec-start") | .message | fromjson | select(.who | test("kid node org org-1 project p-1"))] |
	length >= 1' "$T/get.json" >/dev/null || { jq .events "$T/get.json"; fail "no exec-start event with who"; }
fc exec -i shell -- cat </dev/null >/dev/null || fail "exec cat"
printf 'twelve bytes' | fc exec -i shell -- cat >/dev/null || fail "exec cat"
fc -o json get shell >"$T/get.json"
jq -e '[.events[] | select(.type == "exec-end")] | last | .message | fromjson |
	.bytes_in == 12 and .bytes_out == 12 and .exit_code == 0 and .replica == 0 and .duration_ms >= 0' "$T/get.json" >/dev/null ||
	{ jq .events "$T/get.json"; fail "the exec-end event lacks bytes, exit code, replica or duration"; }
echo "ok: sessions are audited as events (who, replica, argv, duration, exit status, bytes each way)"

# domains need a host-name router: refused on the single-node runtime.
jq -c '.ports[0].protocol = "tcp" | .domains = [{"host": "shell.example.org", "port": .ports[0].name}]' "$T/sh.json" >"$T/dom.json"
rc=0; fc create --name dom --spec "$T/dom.json" >"$T/r.out" 2>"$T/r.err" || rc=$?
[ $rc = 1 ] && grep -q "domains: not served by the single-node runtime" "$T/r.err" ||
	fail "a spec with domains was not refused naming the field (rc $rc): $(cat "$T/r.err")"
echo "ok: a spec with domains is refused on the single-node runtime, naming the field"

fc delete shell >/dev/null || fail "delete shell"
fc delete bad >/dev/null || fail "delete bad"
kill "$OP"; wait "$OP" || fail "flash-operator exited $? on SIGTERM"; OP=
if grep -q "Sanitizer" "$T/op.log"; then fail "sanitizer report in the operator's log"; fi
echo "ok: SIGTERM stops the operator cleanly"
