#!/bin/bash
# usage: users_tcp_munge_test.sh PHALANXD GSUB GQ GCANCEL MUNGE_PROBE
# Users over TCP with MUNGE credentials (docs/daemon.md, "Users over TCP"), with the real parts:
# a private munged (a fresh 1024-byte key) and a second one with another key (the forger),
# phalanxd with its users_tcp listener on a veth address, and the clients in ANOTHER network
# namespace (ip netns), run as nobody: the uid comes from the credential, not the connection.
#  - gsub/gq/gcancel over TCP: the job belongs to nobody, root's job cannot be cancelled by nobody
#    (every permission rule applies), the local Unix socket still serves;
#  - refused (UNAUTHENTICATED), nothing served: no credential, a forged one, a replayed one, an
#    expired one, one made for another request or another method, two at once;
#  - munged not answering on the client: a clear error; a flood of bad calls: the log stays
#    rate-limited and names the peer's address.
# 77 (skipped) without munged, ip, setpriv or openssl, or where network namespaces cannot be made (EPERM: a
# container without CAP_SYS_ADMIN; tests/skip-allowlist.txt).
set -u
phalanxd=$1 gsub=$2 gq=$3 gcancel=$4 probe=$5
for tool in munged ip setpriv openssl; do
  command -v "$tool" >/dev/null 2>&1 || { echo "$tool not found: skipped"; exit 77; }
done
dir=$(mktemp -d /tmp/phx-munge-XXXXXX)
chmod 755 "$dir"
n=$(( $$ % 200 + 20 ))
ns=phx-munge-$$ host_if=phxm$$a ns_if=phxm$$b
host_ip=10.213.$n.1 ns_ip=10.213.$n.2
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for f in "$dir"/m1.pid "$dir"/m2.pid; do [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null; done
  ip link del "$host_if" 2>/dev/null
  ip netns del "$ns" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; echo "--- phalanxd log"; cat "$dir/d.log" 2>/dev/null; exit 1; }

# The namespace and its veth pair.
if ! err=$(ip netns add "$ns" 2>&1); then
  case $err in
    *"Operation not permitted"* | *"Permission denied"*) echo "cannot make a network namespace ($err): skipped"; exit 77 ;;
  esac
  fail "ip netns add: $err"
fi
ip link add "$host_if" type veth peer name "$ns_if" || fail "veth"
ip link set "$ns_if" netns "$ns" || fail "veth into $ns"
ip addr add "$host_ip/24" dev "$host_if" && ip link set "$host_if" up || fail "host side up"
ip netns exec "$ns" ip addr add "$ns_ip/24" dev "$ns_if" || fail "ns address"
ip netns exec "$ns" ip link set "$ns_if" up && ip netns exec "$ns" ip link set lo up || fail "ns side up"

# Two munged: the site's (m1) and a forger's with another key (m2).
for m in m1 m2; do
  dd if=/dev/urandom of="$dir/$m.key" bs=1 count=1024 2>/dev/null
  chmod 600 "$dir/$m.key"
  munged --key-file="$dir/$m.key" --socket="$dir/$m.sock" --pid-file="$dir/$m.pid" --log-file="$dir/$m.log" \
    --seed-file="$dir/$m.seed" --force || fail "munged $m did not start"
done
m1=$dir/m1.sock m2=$dir/m2.sock

cat >"$dir/d.yaml" <<YAML
socket: $dir/run/phalanxd.sock
store:
  path: $dir/state/phalanxd.db
users_tcp:
  listen: $host_ip:0
  munge_socket: $m1
YAML
"$phalanxd" --config "$dir/d.yaml" >"$dir/d.log" 2>&1 &
pids+=($!)
port=
for _ in $(seq 100); do
  port=$(sed -n 's/.*users over TCP: listening on .* (port \([0-9]*\), MUNGE.*/\1/p' "$dir/d.log")
  [ -n "$port" ] && grep -q "phalanxd ready" "$dir/d.log" && break
  sleep 0.05
done
[ -n "$port" ] || fail "phalanxd did not report its users_tcp port"
server=$host_ip:$port

# In the other namespace, as nobody (or root), with the site's munged.
as_nobody() { ip netns exec "$ns" setpriv --reuid=nobody --regid=nogroup --clear-groups env PHALANX_MUNGE_SOCKET=$m1 "$@"; }
as_root() { ip netns exec "$ns" env PHALANX_MUNGE_SOCKET=$m1 "$@"; }
cd "$dir" || fail "cd"

out=$(as_nobody "$gsub" --server "$server" -G 1 -J tcpjob --wrap "sleep 600" 2>&1) || fail "gsub over TCP as nobody: $out"
[ "$out" = "Submitted job 1" ] || fail "gsub: '$out'"
out=$(as_root "$gsub" --server "$server" -G 1 -J rootjob --wrap "sleep 600" 2>&1) || fail "gsub over TCP as root: $out"
# The owner is the credential's uid (nobody), as the Unix socket would have said; listed over TCP.
out=$(as_nobody "$gq" --server "$server" -o "%i %u %j" --noheader 2>&1) || fail "gq over TCP: $out"
[ "$(echo "$out" | tr -s ' ')" = "1 nobody tcpjob
2 root rootjob" ] || fail "gq over TCP as nobody listed: '$out'"
out=$(PHALANX_SERVER=$server as_nobody "$gq" -o "%u" --noheader -j 1 2>&1) || fail "gq with \$PHALANX_SERVER: $out"
[ "$out" = "nobody" ] || fail "gq -j 1: '$out'"
# The permission rules apply to the credential's uid: nobody cannot cancel root's job.
out=$(as_nobody "$gcancel" --server "$server" 2 2>&1) && fail "nobody cancelled root's job over TCP: $out"
case $out in *"it belongs to root, not to nobody"*) ;; *) fail "gcancel 2 as nobody: '$out'" ;; esac
# An address list through the client file: a first address that does not answer, then ours.
printf '# test\nserver = %s:1, %s\nmunge_socket = %s\n' "$ns_ip" "$server" "$m1" >"$dir/phalanx.conf"
chmod 644 "$dir/phalanx.conf"
out=$(ip netns exec "$ns" setpriv --reuid=nobody --regid=nogroup --clear-groups env PHALANX_CONF="$dir/phalanx.conf" \
  "$gcancel" 1 2>&1) || fail "gcancel 1 through phalanx.conf's second address: $out"
# The local socket is unchanged.
out=$(PHALANX_SOCKET=$dir/run/phalanxd.sock "$gq" -o "%i %u %T" --noheader -a -j 1 2>&1) || fail "gq on the socket: $out"
case $(echo "$out" | tr -s ' ') in "1 nobody CANCELLED"*) ;; *) fail "gq on the Unix socket: '$out'" ;; esac

# munged not answering on the client side: a clear error, no call served.
out=$(ip netns exec "$ns" env PHALANX_MUNGE_SOCKET=$dir/none.sock "$gq" --server "$server" 2>&1) &&
  fail "gq without munged succeeded: $out"
case $out in *"cannot get a MUNGE credential"*"none.sock"*) ;; *) fail "gq without munged: '$out'" ;; esac

# Raw calls with hand-made credentials, from the other namespace.
out=$(as_nobody "$probe" "$server" "$m1" "$m2" good none forged replay expired other_request other_method twice 2>&1) ||
  fail "munge_probe: $out"
echo "$out"
expect() {  # CASE CODE TEXT
  echo "$out" | grep -q "^$1 $2 .*$3" || fail "case $1: expected $2 ... $3, got: $(echo "$out" | grep "^$1 ")"
}
expect good OK ""
expect none UNAUTHENTICATED "no MUNGE credential"
expect forged UNAUTHENTICATED "invalid MUNGE credential"
expect replay1 OK ""
expect replay2 UNAUTHENTICATED "replayed MUNGE credential"
expect expired UNAUTHENTICATED "expired MUNGE credential"
expect other_request UNAUTHENTICATED "made for another call"
expect other_method UNAUTHENTICATED "made for another call"
expect twice UNAUTHENTICATED "more than one credential"

# A flood of calls without a credential: all refused, a few log records for the address.
out=$(as_nobody "$probe" "$server" "$m1" "$m2" flood:200 2>&1) || fail "flood: $out"
[ "$out" = "flood 200/200 UNAUTHENTICATED" ] || fail "flood: '$out'"
records=$(grep -c "users over TCP: call from ipv4:$ns_ip:[0-9]* refused: phalanxd: the call carries no MUNGE" "$dir/d.log")
[ "$records" -ge 1 ] && [ "$records" -le 4 ] || fail "$records log records of 201 calls without a credential (want 1..4)"
grep -q "users over TCP: call from ipv4:$ns_ip:[0-9]* refused: phalanxd: invalid MUNGE credential" "$dir/d.log" ||
  fail "the forged credential was not logged with the peer's address"
# TLS (docs/daemon.md's openssl recipe): phalanxd restarted on the same store with a certificate
# for its address; a client with the CA in phalanx.conf is served, one without TLS is not.
kill "${pids[0]}" && wait "${pids[0]}"
pids=()
(cd "$dir" &&
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=phx-test-ca -keyout ca.key -out ca.pem &&
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=phalanxd -keyout server.key -out server.csr &&
  printf 'subjectAltName=IP:%s\n' "$host_ip" >san.ext &&
  openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 1 -extfile san.ext \
    -out server.pem) >"$dir/openssl.log" 2>&1 || { cat "$dir/openssl.log"; fail "openssl"; }
chmod 600 "$dir/server.key" "$dir/ca.key"
chmod 644 "$dir/ca.pem"
printf '  tls_cert: %s\n  tls_key: %s\n' "$dir/server.pem" "$dir/server.key" >>"$dir/d.yaml"
"$phalanxd" --config "$dir/d.yaml" >"$dir/d2.log" 2>&1 &
pids+=($!)
port=
for _ in $(seq 100); do
  port=$(sed -n 's/.*users over TCP: listening on .* (port \([0-9]*\), MUNGE credentials, TLS).*/\1/p' "$dir/d2.log")
  [ -n "$port" ] && grep -q "phalanxd ready" "$dir/d2.log" && break
  sleep 0.05
done
[ -n "$port" ] || { cat "$dir/d2.log"; fail "phalanxd with TLS did not report its port"; }
printf 'server = %s:%s\nmunge_socket = %s\ntls_ca = %s\n' "$host_ip" "$port" "$m1" "$dir/ca.pem" >"$dir/tls.conf"
chmod 644 "$dir/tls.conf"
out=$(ip netns exec "$ns" setpriv --reuid=nobody --regid=nogroup --clear-groups env PHALANX_CONF="$dir/tls.conf" \
  "$gq" -o "%i %u" --noheader 2>&1) || { cat "$dir/d2.log"; fail "gq over TLS: $out"; }
[ "$(echo "$out" | tr -s ' ')" = "2 root" ] || fail "gq over TLS listed: '$out'"
out=$(as_nobody "$gq" --server "$host_ip:$port" 2>&1) && fail "gq without TLS on the TLS port: $out"
case $out in *"cannot reach phalanxd at $host_ip:$port"*) ;; *) fail "gq without TLS: '$out'" ;; esac
printf 'server = %s:%s\ntls_ca = /nonexistent/ca.pem\n' "$host_ip" "$port" >"$dir/bad.conf"
out=$(PHALANX_CONF=$dir/bad.conf "$gq" 2>&1)
rc=$?
[ "$rc" = 2 ] && [ "$out" = "gq: tls_ca: /nonexistent/ca.pem: cannot open: No such file or directory" ] ||
  fail "gq with an unreadable tls_ca: rc $rc, '$out'"
# A clean stop; under ASan/UBSan (build-asan) their reports would be in the daemon's log.
kill "${pids[0]}" && wait "${pids[0]}"
pids=()
if grep -E "ERROR: (Address|Leak)Sanitizer|runtime error:" "$dir/d.log" "$dir/d2.log"; then
  fail "sanitizer report in phalanxd's log"
fi
echo "users over TCP with MUNGE: ok (port $port, $records log records for 201 calls without a credential; TLS)"
