#!/bin/sh
# Installs the Debian 12 packages needed to build and test the project.
# One list, used by quickstart, test-all and CI.
set -eu
PACKAGES="
 build-essential autoconf automake libtool autoconf-archive pkg-config
 clang llvm bpftool valgrind man-db groff-base iproute2 procps curl
 libbpf-dev libelf-dev zlib1g-dev libsodium-dev libyajl-dev libcurl4-openssl-dev
 libnl-3-dev libnl-route-3-dev libmicrohttpd-dev libgnutls28-dev libsqlite3-dev libarchive-dev
 libyaml-dev libcriterion-dev
 containernetworking-plugins iperf3 jq iputils-ping
 docker-registry skopeo umoci busybox-static apache2-utils openssl
 runsc nftables util-linux e2fsprogs tmux dnsmasq-base
"
if [ "$(id -u)" -ne 0 ]; then
	echo "deps.sh: run as root (apt-get install)" >&2
	exit 1
fi
missing=""
for p in $PACKAGES; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' || missing="$missing $p"
done
if [ -n "$missing" ]; then
	export DEBIAN_FRONTEND=noninteractive
	apt-get update
	# shellcheck disable=SC2086
	apt-get install -y --no-install-recommends $missing
fi
