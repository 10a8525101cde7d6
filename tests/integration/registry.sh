#!/bin/sh
# A real OCI registry (Debian's docker-registry) on 127.0.0.1 for the image
# tests, filled with skopeo from OCI layouts built here with umoci.
#
#   registry.sh start DIR NAME MODE [REALM]  MODE: none | basic | token | tls
#       starts instance NAME over the shared storage DIR/data on a free
#       port; prints the port.  basic: user "flash" password "s3cret"
#       (htpasswd, bcrypt); token: realm REALM, tokens from "token";
#       tls: certificate DIR/tls/ca.crt for subjectAltName IP:127.0.0.1.
#   registry.sh stop DIR NAME
#   registry.sh fill DIR PORT              builds and pushes the images,
#       writes their digests (read back from the registry) into DIR/facts/
#   registry.sh token DIR                  mints a bearer token (RS256, x5c)
#       for pulling repositories small and multi
#
# Nothing here is hard-coded about the images' digests: umoci stamps the
# time, so every run makes new ones and the tests read them back.
set -eu

die() { echo "registry.sh: $*" >&2; exit 1; }

cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || die "usage: registry.sh start|stop|fill|token DIR ..."
for tool in docker-registry skopeo umoci busybox openssl htpasswd curl jq; do
	command -v "$tool" >/dev/null 2>&1 || die "$tool not found (scripts/deps.sh installs it)"
done

b64url() { openssl base64 -A | tr '+/' '-_' | tr -d '='; }

# The token signing key and certificate the token-auth registry trusts.
token_keys() {
	mkdir -p "$dir/token"
	[ -f "$dir/token/cert.pem" ] && return 0
	openssl req -x509 -newkey rsa:2048 -nodes -keyout "$dir/token/key.pem" -out "$dir/token/cert.pem" \
		-days 2 -subj /CN=flash-test-token-issuer >/dev/null 2>&1 || die "openssl: token key"
}

tls_keys() {
	mkdir -p "$dir/tls"
	[ -f "$dir/tls/ca.crt" ] && return 0
	openssl req -x509 -newkey rsa:2048 -nodes -keyout "$dir/tls/server.key" -out "$dir/tls/ca.crt" \
		-days 2 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 >/dev/null 2>&1 || die "openssl: TLS key"
}

start() {
	name=$1 mode=$2 realm=${3:-}
	inst="$dir/$name"
	mkdir -p "$inst" "$dir/data"
	{
		echo "version: 0.1"
		echo "log: {level: warn}"
		echo "storage:"
		echo "  filesystem: {rootdirectory: $dir/data}"
		echo "  delete: {enabled: true}"
		echo "http:"
		echo "  addr: 127.0.0.1:0"
		echo "  secret: not-a-secret"
		case $mode in
		tls)
			tls_keys
			echo "  tls: {certificate: $dir/tls/ca.crt, key: $dir/tls/server.key}"
			;;
		esac
		case $mode in
		basic)
			htpasswd -Bbn flash s3cret >"$inst/htpasswd"
			echo "auth:"
			echo "  htpasswd: {realm: flash-test, path: $inst/htpasswd}"
			;;
		token)
			[ -n "$realm" ] || die "token mode needs a realm"
			token_keys
			echo "auth:"
			echo "  token: {realm: \"$realm\", service: flash-test-registry, issuer: flash-test-issuer, rootcertbundle: $dir/token/cert.pem}"
			;;
		none | tls) ;;
		*) die "unknown mode $mode" ;;
		esac
	} >"$inst/config.yml"
	scheme=http
	[ "$mode" = tls ] && scheme=https
	for attempt in 1 2 3 4 5 6 7 8; do
		port=$(( $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % 30000 + 20000 ))
		# timeout: a registry whose test run died never outlives it by
		# more than 15 minutes (SIGTERM to timeout reaches the registry).
		REGISTRY_HTTP_ADDR=127.0.0.1:$port setsid timeout 900 docker-registry serve "$inst/config.yml" \
			</dev/null >"$inst/log" 2>&1 &
		pid=$!
		# Ready when /v2/ answers (200, or 401 with auth) from OUR process:
		# if the port was taken it exits and whoever holds it answers.
		i=0
		while [ $i -lt 200 ]; do
			if ! kill -0 "$pid" 2>/dev/null; then
				break
			fi
			code=$(curl -s -k -o /dev/null -w '%{http_code}' --max-time 1 "$scheme://127.0.0.1:$port/v2/" || true)
			if [ "$code" = 200 ] || [ "$code" = 401 ]; then
				kill -0 "$pid" 2>/dev/null || break
				echo "$pid" >"$inst/pid"
				echo "$port" >"$inst/port"
				echo "$port"
				return 0
			fi
			sleep 0.025
			i=$((i + 1))
		done
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
		echo "registry.sh: attempt $attempt on port $port failed: $(tail -n 3 "$inst/log" 2>/dev/null)" >&2
	done
	die "docker-registry did not start (see $inst/log)"
}

stop() {
	inst="$dir/$1"
	[ -f "$inst/pid" ] || return 0
	pid=$(cat "$inst/pid")
	kill "$pid" 2>/dev/null || true
	i=0
	while kill -0 "$pid" 2>/dev/null && [ $i -lt 200 ]; do
		sleep 0.025
		i=$((i + 1))
	done
	kill -9 "$pid" 2>/dev/null || true
	rm -f "$inst/pid"
}

# An OCI layout DIR/layouts/$1 tagged v1 with architecture $2: a busybox
# layer, then a layer of whiteouts (etc/drop removed, opq made opaque).
build_layout() {
	name=$1 arch=$2
	l="$dir/layouts/$name"
	w="$dir/work/$name"
	rm -rf "$l" "$w"
	mkdir -p "$w/r1/bin" "$w/r1/etc" "$w/r1/opq/sub" "$w/r2/etc" "$w/r2/opq" "$dir/layouts"
	cp "$(command -v busybox)" "$w/r1/bin/busybox"
	ln -s busybox "$w/r1/bin/sh"
	echo keep >"$w/r1/etc/keep"
	echo drop >"$w/r1/etc/drop"
	echo old >"$w/r1/opq/old"
	echo deep >"$w/r1/opq/sub/deep"
	: >"$w/r2/etc/.wh.drop"
	: >"$w/r2/opq/.wh..wh..opq"
	echo new >"$w/r2/opq/new"
	echo "$name" >"$w/r2/etc/name"
	tar --numeric-owner --owner=0 --group=0 -C "$w/r1" -cf "$w/l1.tar" .
	tar --numeric-owner --owner=0 --group=0 -C "$w/r2" -cf "$w/l2.tar" .
	umoci init --layout "$l"
	umoci new --image "$l:v1"
	umoci raw add-layer --image "$l:v1" "$w/l1.tar"
	umoci raw add-layer --image "$l:v1" "$w/l2.tar"
	umoci config --image "$l:v1" --architecture "$arch" --os linux --config.cmd /bin/sh
	rm -rf "$w"
}

push() {
	# $1 layout name, $2 destination repo:tag, $3.. extra skopeo options
	src=$1 dst=$2
	shift 2
	skopeo --insecure-policy copy --quiet --dest-tls-verify=false "$@" "oci:$dir/layouts/$src:v1" \
		"docker://127.0.0.1:$port/$dst" || die "skopeo copy $src -> $dst"
}

# Manifest bytes of repo:tag as the registry serves them.
raw() {
	skopeo --insecure-policy inspect --raw --tls-verify=false "docker://127.0.0.1:$port/$1"
}

fact() { printf '%s' "$2" >"$dir/facts/$1"; }

fill() {
	port=$1
	mkdir -p "$dir/facts" "$dir/work"
	export HOME="$dir/work" XDG_RUNTIME_DIR="$dir/work"
	build_layout small amd64
	build_layout arm arm64
	push small small:v1
	push small small-docker:v1 --format v2s2
	push arm other:v1
	push small multi:amd64
	push arm multi:arm64

	raw small:v1 >"$dir/facts/small.json"
	fact small.digest "sha256:$(sha256sum <"$dir/facts/small.json" | cut -d' ' -f1)"
	fact small.charged "$(jq '[.config.size] + [.layers[].size] | add' "$dir/facts/small.json")"
	fact small.config "$(jq -r .config.digest "$dir/facts/small.json")"
	fact small.layer0 "$(jq -r '.layers[0].digest' "$dir/facts/small.json")"
	fact small.layer1 "$(jq -r '.layers[1].digest' "$dir/facts/small.json")"
	raw small-docker:v1 >"$dir/facts/small-docker.json"
	fact small-docker.digest "sha256:$(sha256sum <"$dir/facts/small-docker.json" | cut -d' ' -f1)"
	raw multi:arm64 >"$dir/facts/arm.json"
	fact arm.digest "sha256:$(sha256sum <"$dir/facts/arm.json" | cut -d' ' -f1)"

	# The multi-platform index, by hand, after its children (arm64 first,
	# so that the choice is made by platform and not by position).
	jq -n --arg ad "$(cat "$dir/facts/arm.digest")" --argjson asz "$(wc -c <"$dir/facts/arm.json")" \
		--arg xd "$(cat "$dir/facts/small.digest")" --argjson xsz "$(wc -c <"$dir/facts/small.json")" \
		'{schemaVersion: 2, mediaType: "application/vnd.oci.image.index.v1+json", manifests: [
		   {mediaType: "application/vnd.oci.image.manifest.v1+json", digest: $ad, size: $asz,
		    platform: {architecture: "arm64", os: "linux"}},
		   {mediaType: "application/vnd.oci.image.manifest.v1+json", digest: $xd, size: $xsz,
		    platform: {architecture: "amd64", os: "linux"}}]}' >"$dir/facts/index.json"
	code=$(curl -s -o "$dir/work/put.out" -w '%{http_code}' -X PUT \
		-H 'Content-Type: application/vnd.oci.image.index.v1+json' \
		--data-binary @"$dir/facts/index.json" "http://127.0.0.1:$port/v2/multi/manifests/latest")
	[ "$code" = 201 ] || die "PUT index: $code $(cat "$dir/work/put.out")"

	# An image whose first layer claims 2 GiB (the blob exists; the
	# registry checks presence in the repository, not size): charged beyond a 1 GiB limit
	# without storing a gigabyte.
	push small big:base
	jq -c '.layers[0].size = 2147483648' "$dir/facts/small.json" >"$dir/facts/big.json"
	code=$(curl -s -o "$dir/work/put.out" -w '%{http_code}' -X PUT \
		-H 'Content-Type: application/vnd.oci.image.manifest.v1+json' \
		--data-binary @"$dir/facts/big.json" "http://127.0.0.1:$port/v2/big/manifests/v1")
	[ "$code" = 201 ] || die "PUT big manifest: $code $(cat "$dir/work/put.out")"
	fact big.charged "$(jq '[.config.size] + [.layers[].size] | add' "$dir/facts/big.json")"
}

token() {
	token_keys
	x5c=$(openssl x509 -in "$dir/token/cert.pem" -outform DER | openssl base64 -A)
	now=$(date +%s)
	header=$(printf '{"alg":"RS256","typ":"JWT","x5c":["%s"]}' "$x5c" | b64url)
	claims=$(printf '{"iss":"flash-test-issuer","sub":"flash","aud":"flash-test-registry","exp":%d,"nbf":%d,"iat":%d,"jti":"t%d","access":[{"type":"repository","name":"small","actions":["pull"]},{"type":"repository","name":"multi","actions":["pull"]}]}' \
		$((now + 3600)) $((now - 60)) "$now" "$now" | b64url)
	sig=$(printf '%s.%s' "$header" "$claims" | openssl dgst -sha256 -sign "$dir/token/key.pem" -binary | b64url)
	printf '%s.%s.%s' "$header" "$claims" "$sig"
}

case $cmd in
start) shift 2; start "$@" ;;
stop) stop "$3" ;;
fill) fill "$3" ;;
token) token ;;
*) die "unknown command $cmd" ;;
esac
