# The prologue of the e2e scripts that run a single-node Flash with real
# gVisor (sourced, POSIX sh, after `set -eu`).  The caller sets
#   E2E_NAME   its short name: work dir /tmp/E2E_NAME.XXXXXX, cgroup
#              parent /E2E_NAME-PID
#   E2E_NEED   (optional) the commands it needs beyond runsc umoci skopeo
#              docker-registry jq bash
#   E2E_WHY    (optional) what root is needed for, in the skip line
#   POOL       the agent's IPv4 pool, and what scripts/flash-node.sh reads
# then sources this file, which
#   - skips (77) unless root and every command is installed;
#   - re-executes the script inside a private network and mount namespace
#     (same pid: unshare without --fork execs in place);
#   - sets B and S (absolute build and source dirs), T (an empty work dir)
#     and CG, sources scripts/flash-node.sh, defines fail() (node_fail:
#     the operator's and agent's logs) and traps EXIT with node_down.
# A script with more to clean up traps EXIT again with its own function,
# which calls node_down last.  Then it calls node_up.
: "${top_builddir:?}" "${top_srcdir:?}" "${E2E_NAME:?}" "${POOL:?}"
B=$(cd "$top_builddir" && pwd)
S=$(cd "$top_srcdir" && pwd)
if [ "$(id -u)" -ne 0 ]; then echo "SKIP: needs root (${E2E_WHY:-namespaces, BPF, runsc})"; exit 77; fi
for t in runsc umoci skopeo docker-registry jq bash ${E2E_NEED:-}; do
	command -v "$t" >/dev/null || { echo "SKIP: $t is not installed (scripts/deps.sh)"; exit 77; }
done
if [ "${FLASH_E2E_INSIDE:-}" != "$$" ]; then
	FLASH_E2E_INSIDE=$$ exec unshare --net --mount --propagation private "$0" "$@"
fi
T=$(mktemp -d "/tmp/$E2E_NAME.XXXXXX")
CG=/$E2E_NAME-$$
. "$S/scripts/flash-node.sh"
fail() { node_fail "$@"; }
trap node_down EXIT
