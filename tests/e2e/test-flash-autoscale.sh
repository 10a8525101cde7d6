#!/bin/sh
# Autoscaling on one node end to end (root, real runsc): flash-operator
# with a 2 s sync period and a 6 s scale-down window (--autoscale-period,
# --autoscale-window), a workload of the busybox image whose replicas each
# run a CPU burner (sh -c 'while :; do :; done') beside the UDP echo that
# makes them ready, autoscaling 1..3 at 50 % of its 100 millicores (a
# small quota, which the burners reach even on a loaded machine).
# Checked:
#   - it scales 1 -> 2 -> 3 (max_replicas), never beyond, each step a
#     "scaled" event naming from, to and the CPU use that caused it; the
#     scale-up never more than doubles;
#   - `flashctl get` shows the bounds and the current and desired count
#     (status.autoscaling in -o json, with the measured CPU);
#   - the burners stopped (flashctl exec into each replica), it scales
#     back to 1 (min_replicas) once the window has passed, in an event,
#     and the retired replicas' sandboxes are gone.
set -eu
E2E_NAME=flash-autoscale
POOL=10.244.14.0/24
. "${top_srcdir:?}/tests/e2e/lib.sh"
OP_EXTRA="--autoscale-period 2 --autoscale-window 6"
node_up
shimage=$(sh "$S/scripts/echo-image" "$S" "$T/img2" "127.0.0.1:$port" v2 shell) || fail "shell image"
jq -c --arg img "$shimage" '.image = $img | del(.gpu_type) | .ephemeral_storage_gib = 1 | .cpu_millis = 100
	| .command = ["/bin/sh", "-c", "sh -c \"while :; do :; done\" & echo $! >/tmp/burner.pid; exec /usr/local/bin/flash-udp-echo"]
	| .autoscaling = {"min_replicas": 1, "max_replicas": 3, "target_cpu_percent": 50}' \
	"$S/examples/udp-echo.json" >"$T/burn.json"
fc create --name burn --spec "$T/burn.json" >/dev/null || fail "create burn"
wait_phase burn ready 60

# events: the "scaled" lines of the service, oldest first.
events() { fc -o json get burn | jq -r '.events[] | select(.type == "scaled") | .message'; }
# wait_scaled TO SECONDS: until an event says "to TO replicas".
wait_scaled() {
	i=0
	until events | grep -q "to $1 replicas"; do
		i=$((i + 1)); [ $i -lt $(($2 * 5)) ] || { fc get burn; fail "never scaled to $1 in $2 s"; }
		sleep 0.2
	done
}
t0=$(date +%s)
wait_scaled 3 90
events >"$T/up.txt"
cat "$T/up.txt"
grep -Eq '^scaled from 1 to 2 replicas: CPU [0-9]+% of cpu_millis over 1 measured replica \(target 50%, (above target|scale-up bounded per period)\)$' "$T/up.txt" ||
	fail "no 1 -> 2 step: $(cat "$T/up.txt")"
grep -Eq '^scaled from 2 to 3 replicas: CPU [0-9]+% ' "$T/up.txt" || fail "no 2 -> 3 step: $(cat "$T/up.txt")"
pct=$(sed -n 's/^scaled from 1 to 2 replicas: CPU \([0-9]*\)%.*/\1/p' "$T/up.txt")
[ "$pct" -gt 55 ] || fail "scaled up at $pct % of cpu_millis, within the 10 % tolerance of 50 %"
grep -q 'to [4-9] replicas\|to [1-9][0-9] replicas' "$T/up.txt" && fail "beyond max_replicas: $(cat "$T/up.txt")"
echo "ok: the burner scaled 1 -> 2 -> 3 in $(($(date +%s) - t0)) s, each step an event with its CPU use"

# Held at max_replicas while busy: three more periods, no other event.
wait_phase burn ready 60
sleep 6
[ "$(events | wc -l)" = 2 ] || fail "more than the two scale-ups while at max: $(events)"
fc -o json get burn >"$T/get.json"
[ "$(jq -r '.status.replicas_wanted' "$T/get.json")" = 3 ] || fail "replicas_wanted: $(jq -c .status "$T/get.json")"
jq -e '.status.autoscaling | .desired_replicas == 3 and .current_replicas == 3 and .measured_replicas >= 1
	and .cpu_percent > 0 and (.last_scaled_at | length) > 0' "$T/get.json" >/dev/null ||
	fail "status.autoscaling: $(jq -c .status.autoscaling "$T/get.json")"
fc get burn >"$T/get.txt"
grep -Eq '^Autoscaling: 1\.\.3 replicas at 50% CPU; current 3, desired 3, CPU [0-9]+% over [0-9] measured' "$T/get.txt" ||
	{ cat "$T/get.txt"; fail "flashctl get does not show the autoscaling line"; }
[ "$(runsc --root "$T/rt/runsc" list -quiet | wc -l)" = 3 ] || fail "not 3 sandboxes: $(runsc --root "$T/rt/runsc" list)"
echo "ok: held at max_replicas 3; flashctl get shows current 3, desired 3 and the CPU use"

# Idle: every replica's burner stopped at once, back to min_replicas once
# the window has passed (a period that saw one burner still running may
# recommend 2 first: then 3 -> 2 -> 1, each step an event).
pids=
for r in 0 1 2; do
	fc exec burn --replica $r -- sh -c 'kill "$(cat /tmp/burner.pid)"' &
	pids="$pids $!"
done
for p in $pids; do wait "$p" || fail "stopping a burner (flashctl exec) exited $?"; done
t1=$(date +%s)
wait_scaled 1 60
down_s=$(($(date +%s) - t1))
# (get shows the last 10 events: the six exec ones push the oldest out.)
events | awk 'f; / to 3 replicas/ {f = 1}' >"$T/down.txt"
cat "$T/down.txt"
grep -Evq '^scaled from [23] to [12] replicas: CPU [0-9]+% of cpu_millis over [23] measured replicas \(target 50%, below target\)$' \
	"$T/down.txt" && fail "a scale-down event: $(cat "$T/down.txt")"
tail -n 1 "$T/down.txt" | grep -q '^scaled from [23] to 1 replicas' || fail "the last step is not to 1: $(cat "$T/down.txt")"
[ "$down_s" -ge 5 ] || fail "scaled down $down_s s after going idle: the 6 s window did not hold it"
i=0
until [ "$(runsc --root "$T/rt/runsc" list -quiet | wc -l)" = 1 ]; do
	i=$((i + 1)); [ $i -lt 300 ] || fail "retired sandboxes stay: $(runsc --root "$T/rt/runsc" list)"
	sleep 0.1
done
wait_phase burn ready 30
[ "$(jq -r '.status.replicas_wanted' "$T/get.json")" = 1 ] || fail "replicas_wanted after the scale-down"
echo "ok: idle, it scaled back to 1 (min_replicas) after $down_s s (window 6 s): $(tr '\n' ';' <"$T/down.txt")"
fc delete burn >/dev/null || fail "delete"
