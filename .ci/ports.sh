# Sourced by the CI scripts: loopback ports.

# free_port: a TCP port on 127.0.0.1 that nothing listens on now, below
# the ephemeral range (see tests/free_port.py).
free_port() {
  python3 "$(dirname "${BASH_SOURCE[0]}")/../tests/free_port.py"
}

# wait_for_port PORT [PID]: until something listens on 127.0.0.1:PORT
# (status 0), 30 s at most, and while PID (when given) lives (status 1).
wait_for_port() {
  local _
  for _ in $(seq 1 300); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
    if [ -n "${2:-}" ] && ! kill -0 "$2" 2>/dev/null; then return 1; fi
    sleep 0.1
  done
  return 1
}
