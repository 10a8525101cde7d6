#!/bin/sh
# The runtime's lifecycle end to end with real gVisor (root), on the
# single-node Flash of scripts/flash-node.sh with persistence on, driven by
# flashctl; the workloads are shell lines of an image with busybox and no
# entrypoint:
#   - terminal start failures are service errors with the reason and the
#     last log lines: a command that exits, no command at all, OOM at start;
#   - the root file system is an ext4 image bounded by the disk budget, the
#     /root volume another, and files in /root survive a replica restart,
#     an operator SIGKILL + restart, and scale to zero;
#   - a replica that exits is restarted, its restarts counted; a crash loop
#     backs off exponentially;
#   - an update is replacement-first: the old replica answers until the new
#     one is ready;
#   - operator SIGKILLed right after a create: the restarted one converges
#     with one sandbox and nothing left of a half-made one;
#   - delete removes sandboxes, replicas, cgroups, loop devices, volumes;
#     flashctl usage shows the week with the deleted service's usage.
set -eu
E2E_NAME=flash-lifecycle
E2E_NEED="busybox findmnt losetup mkfs.ext4"
E2E_WHY="namespaces, BPF, runsc, loop devices"
POOL=10.244.10.0/24
. "${top_srcdir:?}/tests/e2e/lib.sh"
[ -e /dev/loop-control ] || { echo "SKIP: no loop devices (/dev/loop-control)"; exit 77; }
PERSISTENCE=true
node_up
shimage=$(sh "$S/scripts/echo-image" "$S" "$T/img2" "127.0.0.1:$port" v2 shell) || fail "shell image"
spec() { # NAME SHELL-LINE [JQ-EXPR]
	jq -c --arg img "$shimage" --arg line "$2" \
		'.image = $img | del(.gpu_type) | .ephemeral_storage_gib = 1 | .command = ["/bin/sh", "-c", $line] | '"${3:-.}" \
		"$S/examples/udp-echo.json" >"$T/$1.json"
}
ECHO='exec /usr/local/bin/flash-udp-echo'
now_ms() { date +%s%3N; }
sid() { jq -r .id "$T/get.json"; }
sandbox_of() { # SERVICE-ID: the running sandbox ids of the service
	runsc --root "$T/rt/runsc" list -quiet | grep -- "^$1-" || true
}
wait_restarts() { # NAME N SECONDS: until status.restarts >= N and ready
	i=0
	while :; do
		fc -o json get "$1" >"$T/get.json" 2>/dev/null || true
		if [ "$(jq -r '.status.restarts // 0' "$T/get.json")" -ge "$2" ] &&
			[ "$(jq -r .status.phase "$T/get.json")" = ready ]; then return 0; fi
		i=$((i + 1)); [ $i -lt $(($3 * 20)) ] || { cat "$T/get.json"; fail "$1 never restarted $2 times"; }
		sleep 0.05
	done
}

# ---------------------------------------------------------------- terminal failures
spec exits 'echo cannot start: no config >&2; exit 3'
spec nocmd "" 'del(.command)'
# The overrun must happen within the wait below: awk doubling a string
# fills 64 MiB in memory, not in syscalls (about 2 s at 250 millicores).
# A shell command substitution reads its pipe 128 bytes per read(2)
# (busybox ash), each a ptrace round trip through the gVisor sentry: at
# 250 millicores it grew 0.4 MB/s and reached 64 MiB only after 135-166 s.
spec oom '/bin/busybox awk '"'"'BEGIN { s = "a"; while (1) s = s s }'"'"'; '"$ECHO" '.memory_mib = 64'
fc create --name exits --spec "$T/exits.json" >/dev/null || fail "create exits"
fc create --name nocmd --spec "$T/nocmd.json" >/dev/null || fail "create nocmd"
fc create --name oom --spec "$T/oom.json" >/dev/null || fail "create oom"
wait_phase exits failed 60
msg=$(jq -r .status.message "$T/get.json")
echo "$msg" | grep -q "replica 0 exited before it was ready" && echo "$msg" | grep -q "stderr cannot start: no config" ||
	{ echo "$msg"; fail "an exiting command: reason and last log lines"; }
wait_phase nocmd failed 60
jq -r .status.message "$T/get.json" | grep -q "neither the spec nor the image names a command" ||
	{ cat "$T/get.json"; fail "no command: reason"; }
wait_phase oom failed 60
jq -r .status.message "$T/get.json" | grep -q "killed for memory (OOM)" || { cat "$T/get.json"; fail "OOM at start: reason"; }
echo "ok: terminal start failures are service errors (exit with last lines, no command, OOM at start)"
for n in exits nocmd oom; do fc delete $n >/dev/null || fail "delete $n"; done

# ---------------------------------------------------------------- storage, restarts
spec keeper 'echo boot >>/root/boots; echo "boots=$(/bin/busybox wc -l </root/boots)"; echo hi >/scratch; '"$ECHO"
fc create --name keeper --spec "$T/keeper.json" >/dev/null || fail "create keeper"
wait_phase keeper ready 60
K=$(sid)
fc logs keeper | grep -q 'stdout boots=1$' || { fc logs keeper; fail "first boot"; }
rootfs=$(ls -d "$T"/rt/replicas/"$K"-*/rootfs | head -1)
[ "$(findmnt -n -o FSTYPE "$rootfs")" = ext4 ] || fail "the root file system is not an ext4 image: $(findmnt -n "$rootfs")"
[ "$(findmnt -n -o FSTYPE "$T/rt/volumes/$K/root")" = ext4 ] || fail "no /root volume"
size=$(df -B1 --output=size "$rootfs" | tail -1) vsize=$(stat -c %s "$T/rt/volumes/$K/root.img")
rsize=$(stat -c %s "$rootfs.img")
[ $((rsize + vsize)) -le 1073741824 ] && [ "$vsize" -gt 0 ] && [ "$size" -le "$rsize" ] ||
	fail "the disk budget (1 GiB) does not bound root ($rsize) + /root ($vsize)"
echo "ok: root file system and /root are ext4 images within the 1 GiB budget ($rsize + $vsize bytes)"

runsc --root "$T/rt/runsc" kill "$(sandbox_of "$K")" KILL || fail "kill the sandbox"
wait_restarts keeper 1 30
fc logs keeper | grep -q 'stdout boots=2$' || { fc logs keeper; fail "/root did not survive the replica restart"; }
echo "ok: a replica that exits is restarted (restarts 1) and /root survived it"

kill -9 "$OP"; wait "$OP" 2>/dev/null || true; OP=
start_op
wait_phase keeper ready 30
[ "$(jq -r .status.restarts "$T/get.json")" = 1 ] || fail "adoption restarted keeper"
runsc --root "$T/rt/runsc" kill "$(sandbox_of "$K")" KILL || fail "kill the adopted sandbox"
wait_restarts keeper 2 30
fc logs keeper | grep -q 'stdout boots=3$' || { fc logs keeper; fail "/root did not survive the operator restart"; }
echo "ok: /root survived an operator SIGKILL + restart (adopted, then restarted: boots=3)"

# Scale to zero and back: stopped, no sandbox, the volume kept.
spec keeper0 'echo boot >>/root/boots; echo "boots=$(/bin/busybox wc -l </root/boots)"; '"$ECHO" '.replicas = 0'
fc update keeper --spec "$T/keeper0.json" >/dev/null || fail "scale keeper to 0"
wait_phase keeper stopped 30
i=0
while [ -n "$(sandbox_of "$K")" ]; do
	i=$((i + 1)); [ $i -lt 150 ] || fail "a sandbox runs at scale zero"; sleep 0.2
done
[ "$(findmnt -n -o FSTYPE "$T/rt/volumes/$K/root")" = ext4 ] || fail "scale to zero removed the volume"
echo "ok: scale to zero: stopped, no sandbox, the volume kept"

# ---------------------------------------------------------------- replacement first
spec keeper 'echo boot >>/root/boots; echo "boots=$(/bin/busybox wc -l </root/boots)"; '"$ECHO"
fc update keeper --spec "$T/keeper.json" >/dev/null || fail "scale keeper to 1"
wait_phase keeper ready 60
fc logs keeper | grep -q 'stdout boots=4$' || { fc logs keeper; fail "/root after scale to zero and back"; }
old=$(jq -r '.status.replicas[0].address' "$T/get.json") gen=$(jq -r .generation "$T/get.json")
spec keeper2 'echo boot >>/root/boots; echo "v2 boots=$(/bin/busybox wc -l </root/boots)"; '"$ECHO" '.env.V = "2"'
fc update keeper --spec "$T/keeper2.json" >/dev/null || fail "update keeper"
# Until the new generation is ready, the old replica answers: whenever it
# does not (three tries), the status read next must show the new one ready.
new_ready() {
	fc -o json get keeper >"$T/get.json" 2>/dev/null || return 1
	newstate=$(jq -r --argjson g "$gen" '[.status.replicas[] | select(.generation != $g)][0].state // "none"' "$T/get.json")
	[ "$(jq -r .status.phase "$T/get.json")" = ready ] && [ "$newstate" = ready ]
}
old_answers() {
	for k in 1 2 3; do [ "$(udp_echo "$old" 7777 still)" = still ] && return 0; done
	return 1
}
i=0 samples=0 newstate=none
while ! new_ready; do
	if ! old_answers; then
		new_ready && break
		fail "the old replica stopped answering before its replacement was ready (new: $newstate)"
	fi
	samples=$((samples + 1))
	i=$((i + 1)); [ $i -lt 600 ] || fail "the update never became ready"
	sleep 0.05
done
[ $samples -gt 0 ] || fail "no sample taken during the update"
fc logs keeper | grep -q 'stdout v2 boots=5$' || { fc logs keeper; fail "the new generation's boot"; }
i=0
while [ "$(udp_echo "$old" 7777 gone)" = gone ] && [ "$old" != "$(jq -r '.status.replicas[0].address' "$T/get.json")" ]; do
	i=$((i + 1)); [ $i -lt 50 ] || fail "the old replica still answers after the new one is ready"; sleep 0.2
done
echo "ok: update is replacement-first (the old replica answered in $samples samples until the new one was ready)"

# ---------------------------------------------------------------- crash loop backoff
# Each run lives 3 s after its command starts (ready first: a replica that
# exits before it was ever ready fails the service instead).
spec crashy "/usr/local/bin/flash-udp-echo & /bin/busybox sleep 3; exit 1"
fc create --name crashy --spec "$T/crashy.json" >/dev/null || fail "create crashy"
t=""
for n in 1 2 3 4 5; do
	i=0
	while [ "$(fc -o json get crashy 2>/dev/null | jq -r '.status.restarts // 0')" -lt $n ]; do
		i=$((i + 1)); [ $i -lt 900 ] || { fc -o json get crashy; fail "crashy did not exit a ${n}th time"; }
		sleep 0.05
	done
	t="$t $(now_ms)"
done
set -- $t
# Backoffs of 1, 2, 4 and 8 s between the exits: the gap between exit n
# and exit n+1 is at least the nth backoff plus the 3 s the next run lives
# (plus a sandbox start, which only lengthens it).  Lower bounds only, so a
# slow machine cannot fail them; 300 ms for the polling that observed the
# earlier exit late.  A constant or linear backoff (1, 2, 3, 4 s) misses
# the third and fourth.
gap1=$(($2 - $1)) gap2=$(($3 - $2)) gap3=$(($4 - $3)) gap4=$(($5 - $4))
k=1
for g in $gap1 $gap2 $gap3 $gap4; do
	[ "$g" -ge $((k * 1000 + 3000 - 300)) ] || fail "no exponential backoff: gaps $gap1, $gap2, $gap3, $gap4 ms (want >= 1, 2, 4, 8 s + 3 s)"
	k=$((k * 2))
done
echo "ok: a crash loop backs off exponentially (exits $gap1, $gap2, $gap3, $gap4 ms apart: backoffs 1, 2, 4, 8 s + 3 s runs), restarts counted"
fc delete crashy >/dev/null || fail "delete crashy"

# ---------------------------------------------------------------- SIGKILL mid-create
spec late "$ECHO"
fc create --name late --spec "$T/late.json" >/dev/null || fail "create late"
sleep 0.3
kill -9 "$OP"; wait "$OP" 2>/dev/null || true; OP=
start_op
wait_phase late ready 60
L=$(sid)
# The restarted operator retires what it half made in the background
# (runsc delete, CNI DEL through the agent, unmount, remove): 60 s, as for
# the other waits here (under ASan+UBSan on 2 loaded CPUs 10 s was once
# not enough).
i=0
while [ "$(sandbox_of "$L" | wc -l)" != 1 ]; do
	i=$((i + 1)); [ $i -lt 600 ] || fail "after the restart late runs $(sandbox_of "$L" | wc -l) sandboxes"; sleep 0.1
done
i=0
while [ "$(ls -d "$T"/rt/replicas/"$L"-* | wc -l)" != 1 ]; do
	i=$((i + 1)); [ $i -lt 600 ] || fail "a half-made replica of late was left: $(ls "$T/rt/replicas")"; sleep 0.1
done
echo "ok: operator SIGKILLed mid-create, restarted: converged on one sandbox, nothing half-made left"

# ---------------------------------------------------------------- delete
fc delete keeper >/dev/null || fail "delete keeper"
fc delete late >/dev/null || fail "delete late"
i=0
while [ -n "$(runsc --root "$T/rt/runsc" list -quiet)" ] || [ -n "$(ls "$T/rt/replicas")" ] || [ -n "$(ls "$T/rt/volumes")" ]; do
	i=$((i + 1)); [ $i -lt 150 ] || fail "left after delete: $(ls "$T/rt/replicas" "$T/rt/volumes")"; sleep 0.2
done
# A loop device is freed when the last user of its lazily unmounted file
# system lets go (the sandbox's gofer exiting): polled, like the rest.
i=0
while [ -n "$(losetup -a | grep -- "$T")" ]; do
	i=$((i + 1)); [ $i -lt 150 ] || fail "loop devices left: $(losetup -a | grep -- "$T")"; sleep 0.2
done
[ -z "$(findmnt -rn -o TARGET | grep -- "$T/rt/")" ] || fail "mounts left: $(findmnt -rn -o TARGET | grep -- "$T/rt/")"
for d in /sys/fs/cgroup/*"$CG" /sys/fs/cgroup"$CG"; do
	[ -d "$d" ] || continue
	[ -z "$(find "$d" -mindepth 1 -type d)" ] || fail "cgroups left: $(find "$d" -mindepth 1 -type d | head -3)"
done
echo "ok: delete removed sandboxes, replicas, volumes, loop devices, mounts and cgroups"
fc usage >"$T/usage.txt" || fail "flashctl usage"
grep -q '^Week 20[0-9][0-9]-W[0-9][0-9] (from 20' "$T/usage.txt" || { cat "$T/usage.txt"; fail "flashctl usage names no week"; }
fc -o json usage | jq -e --arg id "$K" '.services[] | select(.service_id == $id and .deleted and .usage.cpu_millicore_seconds > 0)' \
	>/dev/null || { fc -o json usage; fail "the deleted keeper's usage is gone"; }
echo "ok: flashctl usage shows the week; the deleted service's usage stays"
kill "$OP"; wait "$OP" || fail "flash-operator exited $? on SIGTERM"; OP=
if grep -q "Sanitizer" "$T/op.log"; then fail "sanitizer report in the operator's log"; fi
