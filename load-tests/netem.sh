#!/usr/bin/env bash
# How the lock's cost grows with the network: runs `npm run bench` for the global lock, 16 segment
# locks and the lock-free deduct with redis-server in its own network namespace, reached over a
# veth pair whose both ends delay every packet by DELAY ms (netem): RTT to Redis = 2 x DELAY.
# Loopback RTT (~0.05 ms) hides most of a lock's round trips; a real network does not.
#
#   sudo load-tests/netem.sh 0.5        # 1 ms RTT to Redis
#   sudo load-tests/netem.sh 0 0.25 1   # several delays, one after the other
#
# Needs root, iproute2 (ip, tc) and the sch_netem kernel module. Cleans up after itself.
set -euo pipefail
cd "$(dirname "$0")/.."
NS=sk-netem
HOST_IF=sk-h
NS_IF=sk-r
PORT=6399
DURATION=${DURATION:-10}
SCENARIOS=${SCENARIOS:-global,segmented N=16,lockfree N=16}

cleanup() {
  ip netns pids "$NS" 2>/dev/null | xargs -r kill 2>/dev/null || true
  ip link del "$HOST_IF" 2>/dev/null || true
  ip netns del "$NS" 2>/dev/null || true
}
trap cleanup EXIT
cleanup

ip netns add "$NS"
ip link add "$HOST_IF" type veth peer name "$NS_IF"
ip link set "$NS_IF" netns "$NS"
ip addr add 10.77.0.1/24 dev "$HOST_IF"
ip link set "$HOST_IF" up
ip netns exec "$NS" ip addr add 10.77.0.2/24 dev "$NS_IF"
ip netns exec "$NS" ip link set "$NS_IF" up
ip netns exec "$NS" ip link set lo up
ip netns exec "$NS" redis-server --port "$PORT" --bind 10.77.0.2 --protected-mode no --save '' --appendonly no \
  --maxmemory-policy noeviction --daemonize no >/tmp/sk-netem-redis.log 2>&1 &
sleep 1

for delay in "${@:-0}"; do
  if [ "$delay" = 0 ]; then
    tc qdisc del dev "$HOST_IF" root 2>/dev/null || true
    ip netns exec "$NS" tc qdisc del dev "$NS_IF" root 2>/dev/null || true
  else
    tc qdisc replace dev "$HOST_IF" root netem delay "${delay}ms"
    ip netns exec "$NS" tc qdisc replace dev "$NS_IF" root netem delay "${delay}ms"
  fi
  rtt=$(node -e "
    const { Redis } = require('ioredis');
    const r = new Redis('redis://10.77.0.2:${PORT}');
    (async () => { await r.ping(); const t = performance.now();
      for (let i = 0; i < 50; i++) await r.ping();
      console.log(((performance.now() - t) / 50).toFixed(2)); r.disconnect(); })();")
  echo "=== netem delay ${delay} ms each way: measured RTT to Redis ${rtt} ms ==="
  npx tsx load-tests/bench/http.ts --no-write --duration "$DURATION" \
    --redis-url "redis://10.77.0.2:${PORT}" --only "$SCENARIOS" 2>/dev/null |
    sed -n '/scenario/,/^$/p'
done
