#!/bin/sh
# bench/flash: create -> first reply of the echo workload through
# flash-operator's runtime, beside a bare `runsc run --detach` of the same
# bundle (its config.json and rootfs copied from a replica) in a netns wired
# the same way, in one run; alternating which side goes first; min,
# median, p95, p99 and max of N (default 10) each, the load average before
# and after; the memory of one replica's cgroup beside the bare sandbox's,
# plus the operator-only per-replica cost (the log shim's RSS, Pss and
# private memory).
# As root:  bench/flash.sh BUILDDIR [N]
#
# What each side includes: operator = flashctl create (token, admission
# against the registry, store commit), reconcile (isolation PUT to the
# agent), the replica's ext4 root image (a sparse copy of the image's
# root file system template, loop mount), netns + flowsdn-cni ADD, runsc
# create, a UDP probe, runsc start, `flashctl get` polled until the
# replica has an address, until a UDP datagram to the endpoint comes
# back.  The template is built by the untimed first create (its time is
# printed: resolve, pull, mkfs.ext4, unpack).  bare = runsc run --detach
# of the prepared bundle in a prepared, wired netns, until the same reply.
set -eu
BENCH_NAME=flash BENCH_N=10 POOL=10.244.10.0/24
. "$(dirname "$0")/lib.sh"
node_up

now_ms() { echo $(($(date +%s%N) / 1000000)); }
# Waits until ADDR:7777 echoes; prints nothing.
until_echo() {
	tries=0
	until [ "$(timeout 1 bash -c 'exec 3<>/dev/udp/$0/7777; printf x >&3; timeout 0.05 head -c 1 <&3' "$1" 2>/dev/null)" = x ]; do
		tries=$((tries + 1)); [ $tries -lt 2000 ] || node_fail "no echo from $1"
	done
}
jq --arg img "$image" '.image = $img | del(.gpu_type) | .ephemeral_storage_gib = 1' "$S/examples/udp-echo.json" >"$T/spec.json"

op_once() { # NAME -> ms on stdout
	t0=$(now_ms)
	fc create --name "$1" --spec "$T/spec.json" >/dev/null || node_fail "create $1"
	addr=
	while [ -z "$addr" ] || [ "$addr" = null ]; do
		addr=$(fc -o json get "$1" | jq -r '.status.replicas[0].address // empty')
	done
	until_echo "$addr"
	t1=$(now_ms)
	echo $((t1 - t0))
}
op_clean() {
	fc delete "$1" >/dev/null
	while [ -n "$(ls "$T/rt/replicas")" ]; do sleep 0.1; done
}

# The bare side's bundle: one replica's, with its own netns and cgroup.
load0=$(bench_load)
cold=$(op_once warm)
rep=$(ls -d "$T"/rt/replicas/* | head -1)
# The log shim is a fork of the operator: its processes other than $OP.
# Its RSS counts the pages it shares copy-on-write with the operator; Pss
# charges shared pages by share, Private_* is what it alone holds.
# Only this run's: the process holding this replica's log open (other
# operators may run on the machine).
shims=$(for p in $(pgrep -f "flash-operator --keys"); do
	[ "$p" != "$OP" ] && ls -l "/proc/$p/fd" 2>/dev/null | grep -q "$T/rt/logs/" && echo "$p"; done || true)
shim_rss=$(for p in $shims; do ps -o rss= -p "$p"; done | awk '{s += $1} END {print s + 0}')
shim_mem=$(for p in $shims; do cat "/proc/$p/smaps_rollup" 2>/dev/null; done |
	awk '/^Pss:/ {pss += $2} /^Private_(Clean|Dirty):/ {priv += $2} END {printf "Pss %d KiB, private %d KiB", pss, priv}')
shim_n=$(echo $shims | wc -w)
op_cg=/sys/fs/cgroup/memory$CG/$(basename "$rep")/memory.usage_in_bytes
op_mem=$(cat "$op_cg" 2>/dev/null || echo 0)
mkdir -p "$T/bare/rootfs"
cp -a "$rep/rootfs/." "$T/bare/rootfs/"
cp "$rep/resolv.conf" "$T/bare/resolv.conf"
touch "$T/bare/netns"
unshare --net="$T/bare/netns" true
conf=$(jq -c '.plugins[0] + {cniVersion: .cniVersion, name: .name}' "$T/etc/cni/net.d/00-flowsdn.conflist")
echo "$conf" | CNI_COMMAND=ADD CNI_CONTAINERID=bare CNI_NETNS="$T/bare/netns" CNI_IFNAME=eth0 \
	CNI_PATH="$T/opt/cni/bin" "$T/opt/cni/bin/flowsdn-cni" >"$T/bare.result"
bare_addr=$(jq -r '.ips[0].address' "$T/bare.result" | cut -d/ -f1)
jq --arg ns "$T/bare/netns" --arg cg "$CG/bare" --arg rc "$T/bare/resolv.conf" \
	'.linux.namespaces |= map(if .type == "network" then .path = $ns else . end) | .linux.cgroupsPath = $cg |
	 .mounts |= map(if .destination == "/etc/resolv.conf" then .source = $rc else . end)' "$rep/config.json" >"$T/bare/config.json"
op_clean warm
# The bare netns must be re-wired for every run: gVisor's netstack takes the
# address from it.  Re-ADD it (DEL first) outside the timed part.
bare_rewire() {
	echo "$conf" | CNI_COMMAND=DEL CNI_CONTAINERID=bare CNI_NETNS="$T/bare/netns" CNI_IFNAME=eth0 \
		CNI_PATH="$T/opt/cni/bin" "$T/opt/cni/bin/flowsdn-cni" >/dev/null
	umount "$T/bare/netns"; unshare --net="$T/bare/netns" true
	echo "$conf" | CNI_COMMAND=ADD CNI_CONTAINERID=bare CNI_NETNS="$T/bare/netns" CNI_IFNAME=eth0 \
		CNI_PATH="$T/opt/cni/bin" "$T/opt/cni/bin/flowsdn-cni" >"$T/bare.result"
	bare_addr=$(jq -r '.ips[0].address' "$T/bare.result" | cut -d/ -f1)
}
bare_once() {
	bare_rewire
	t0=$(now_ms)
	unshare -m sh -c "mount --make-rprivate / && mount -t tmpfs tmpfs /proc/sys/net &&
		runsc --root '$T/bare-root' --platform=ptrace --network=sandbox run --detach --bundle '$T/bare' bare" \
		</dev/null >/dev/null 2>&1
	until_echo "$bare_addr"
	t1=$(now_ms)
	echo $((t1 - t0))
}
bare_clean() {
	runsc --root "$T/bare-root" kill bare KILL >/dev/null 2>&1 || true
	runsc --root "$T/bare-root" delete -force bare >/dev/null 2>&1 || true
}
bare_mem() {
	cat "/sys/fs/cgroup/memory$CG/bare/memory.usage_in_bytes" 2>/dev/null || echo 0
}

: >"$T/op.ms"; : >"$T/bare.ms"
bm=0
for run in $(seq 1 "$N"); do
	if [ $((run % 2)) -eq 1 ]; then
		op_once "e$run" >>"$T/op.ms"; op_clean "e$run"
		bare_once >>"$T/bare.ms"
		if [ "$run" -eq 1 ]; then bm=$(bare_mem); fi
		bare_clean
	else
		bare_once >>"$T/bare.ms"; bare_clean
		op_once "e$run" >>"$T/op.ms"; op_clean "e$run"
	fi
done
echo "bench/flash: create -> first UDP echo, $N runs each, alternating order; load average $load0 before, $(bench_load) after"
echo "  first create of the image (untimed above; builds the root file system template): $cold ms"
echo "  flash-operator runtime: $(bench_stats "$T/op.ms" 1 ms)"
echo "  bare runsc run:         $(bench_stats "$T/bare.ms" 1 ms)"
echo "  ratio of medians: $(bench_ratio "$T/op.ms" "$T/bare.ms")"
echo "memory: replica cgroup $((op_mem / 1024)) KiB, bare sandbox cgroup $((bm / 1024)) KiB; log shim ($shim_n process) RSS ${shim_rss:-?} KiB, $shim_mem (operator side only)"
