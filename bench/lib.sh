# The setup the gVisor benchmarks share (sourced, POSIX sh, after
# `set -eu`; bench/flash.sh, bench/exec.sh).  The caller sets
#   BENCH_NAME  its name: usage line, work dir /tmp/BENCH_NAME.XXXXXX,
#               cgroup parent /BENCH_NAME-PID
#   BENCH_N     the default number of runs
#   POOL        the agent's IPv4 pool
# and is run as  bench/NAME.sh BUILDDIR [N].  This file sets B, N, S,
# re-executes the script inside a private network and mount namespace (same
# pid), sets T and CG, sources scripts/flash-node.sh and traps EXIT, INT and
# TERM with node_down; the caller then calls node_up.  It also gives
#   bench_stats FILE DIV UNIT  min, median, p95, p99, max of FILE (one
#                              figure a line) divided by DIV, e.g.
#                              "min 1.0  median 2.0 ... ms (n=50)"
#   bench_ratio A B            ratio of the medians of files A and B
#                              against the goal of <= 1.3x
#   bench_load                 the 1, 5 and 15 min load averages
: "${BENCH_NAME:?}" "${BENCH_N:?}" "${POOL:?}"
B=$(cd "${1:?usage: bench/$BENCH_NAME.sh BUILDDIR [N]}" && pwd)
N=${2:-$BENCH_N}
S=$(cd "$(dirname "$0")/.." && pwd)
[ "$(id -u)" -eq 0 ] || { echo "bench/$BENCH_NAME: needs root" >&2; exit 1; }
if [ "${FLASH_BENCH_INSIDE:-}" != "$$" ]; then
	FLASH_BENCH_INSIDE=$$ exec unshare --net --mount --propagation private "$0" "$@"
fi
T=$(mktemp -d "/tmp/$BENCH_NAME-bench.XXXXXX")
CG=/$BENCH_NAME-bench-$$
. "$S/scripts/flash-node.sh"
trap node_down EXIT INT TERM

bench_median() {
	sort -n "$1" | awk '{a[NR] = $1} END {print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2)}'
}
bench_stats() {
	sort -n "$1" | awk -v d="$2" -v u="$3" '{a[NR] = $1} END {
		n = NR
		med = (n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2)
		i95 = int(n * 0.95 + 0.999); i99 = int(n * 0.99 + 0.999)
		printf "min %.1f  median %.1f  p95 %.1f  p99 %.1f  max %.1f %s (n=%d)", a[1] / d, med / d, a[i95] / d, a[i99] / d, a[n] / d, u, n
	}'
}
bench_ratio() {
	awk -v a="$(bench_median "$1")" -v b="$(bench_median "$2")" 'BEGIN {printf "%.2fx (goal <= 1.3x)", a / b}'
}
bench_load() { cut -d' ' -f1-3 /proc/loadavg; }
