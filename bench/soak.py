#!/usr/bin/env python3
"""Soak test: mixed load with session churn against one MCP endpoint over
Streamable HTTP, while the server's memory and open descriptors are sampled.

The load, from several threads at once:
  churn       legacy sessions opened, used for a few calls, then either
              deleted or abandoned (left to the server's idle timeout)
  stateless   2026-07-28 requests, each on its own
  slow reader a legacy session's GET stream that is never read, while the
              session makes the server send notifications to it; the
              socket is closed after a while
  disconnect  a call whose SSE response is cut after its first bytes

Every INTERVAL seconds the server's RSS (/proc/PID/status) and its open
descriptors (/proc/PID/fd) are printed. With --check the run fails (exit 1)
when either keeps climbing: after the first fifth (warm-up), the median RSS
of the last quarter exceeds that of the first quarter by more than 25 % plus
16 MiB, or the descriptors at the end exceed the smallest count seen after
warm-up by more than 64 (plus the connections the load holds open).

Uses the Python standard library only. Example (30 minutes):

  mcp serve everything --http 127.0.0.1:8931 --session-idle-timeout 20 &
  python3 bench/soak.py --url http://127.0.0.1:8931/mcp --pid $! --seconds 1800

For `mcp host`, name the namespaced tools: --echo-tool everything__echo ...
"""

import argparse
import http.client
import json
import os
import random
import socket
import statistics
import sys
import threading
import time
import urllib.parse

MODERN = "2026-07-28"
LEGACY = "2025-11-25"


class Target:
    def __init__(self, url, tools):
        parsed = urllib.parse.urlsplit(url)
        self.host = parsed.hostname
        self.port = parsed.port or 80
        self.path = parsed.path or "/"
        self.tools = tools
        self.errors = 0
        self.calls = 0
        self.lock = threading.Lock()

    def connection(self, timeout=30):
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def count(self, ok):
        with self.lock:
            self.calls += 1
            if not ok:
                self.errors += 1

    def post(self, body, headers, read=True):
        """POSTs one JSON-RPC message; returns (status, headers, messages)."""
        conn = self.connection()
        try:
            all_headers = {
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
            }
            all_headers.update(headers)
            conn.request("POST", self.path, json.dumps(body), all_headers)
            response = conn.getresponse()
            data = response.read() if read else b""
            return response.status, response.headers, parse_messages(response.headers, data)
        finally:
            conn.close()


def parse_messages(headers, data):
    kind = headers.get("Content-Type", "")
    text = data.decode("utf-8", "replace")
    if kind.startswith("application/json") and text:
        return [json.loads(text)]
    messages = []
    for line in text.splitlines():
        if line.startswith("data:"):
            payload = line[5:].strip()
            if payload:
                try:
                    messages.append(json.loads(payload))
                except ValueError:
                    pass
    return messages


def answered(messages, request_id):
    return any(m.get("id") == request_id and "result" in m for m in messages)


def open_session(target):
    body = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": LEGACY,
            "capabilities": {},
            "clientInfo": {"name": "soak", "version": "1"},
        },
    }
    status, headers, messages = target.post(body, {})
    session = headers.get("Mcp-Session-Id")
    target.count(status == 200 and session is not None)
    if not session:
        return None
    session_headers = {"Mcp-Session-Id": session, "MCP-Protocol-Version": LEGACY}
    target.post({"jsonrpc": "2.0", "method": "notifications/initialized"}, session_headers)
    return session_headers


def call_in_session(target, session_headers, request_id, tool, arguments):
    body = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }
    status, _, messages = target.post(body, session_headers)
    target.count(status == 200 and answered(messages, request_id))


def delete_session(target, session_headers):
    conn = target.connection()
    try:
        conn.request("DELETE", target.path, headers=session_headers)
        conn.getresponse().read()
    finally:
        conn.close()


def churn(target, stop):
    while not stop.is_set():
        session = open_session(target)
        if session is None:
            time.sleep(0.1)
            continue
        for i in range(random.randint(1, 5)):
            call_in_session(target, session, i + 1, target.tools["echo"], {"text": "soak " * 20})
        if random.random() < 0.5:
            delete_session(target, session)


def stateless(target, stop):
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "soak", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    tool = target.tools["echo"]
    n = 0
    while not stop.is_set():
        n += 1
        body = {
            "jsonrpc": "2.0",
            "id": n,
            "method": "tools/call",
            "params": {"name": tool, "arguments": {"text": "x" * 200}, "_meta": meta},
        }
        headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": tool}
        status, _, messages = target.post(body, headers)
        target.count(status == 200 and answered(messages, n))


def slow_reader(target, stop, hold_seconds):
    while not stop.is_set():
        session = open_session(target)
        if session is None:
            time.sleep(0.1)
            continue
        sock = socket.create_connection((target.host, target.port), timeout=30)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        request = (
            f"GET {target.path} HTTP/1.1\r\nHost: {target.host}:{target.port}\r\n"
            f"Accept: text/event-stream\r\nMcp-Session-Id: {session['Mcp-Session-Id']}\r\n"
            f"MCP-Protocol-Version: {LEGACY}\r\n\r\n"
        )
        sock.sendall(request.encode())
        until = time.monotonic() + hold_seconds
        n = 0
        # Notifications flow to the unread stream.
        while time.monotonic() < until and not stop.is_set():
            n += 1
            call_in_session(target, session, n, target.tools["notify"], {})
        sock.close()
        if random.random() < 0.5:
            delete_session(target, session)


def disconnect(target, stop):
    while not stop.is_set():
        session = open_session(target)
        if session is None:
            time.sleep(0.1)
            continue
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {
                "name": target.tools["slow"],
                "arguments": {"durationMs": 2000},
                "_meta": {"progressToken": 1},
            },
        }
        conn = target.connection()
        try:
            headers = {
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
            }
            headers.update(session)
            conn.request("POST", target.path, json.dumps(body), headers)
            response = conn.getresponse()
            response.read(1)
            target.count(response.status == 200)
        except OSError:
            target.count(False)
        finally:
            # Cut mid-stream: the server must notice and let go.
            conn.sock and conn.sock.shutdown(socket.SHUT_RDWR)
            conn.close()
        time.sleep(0.05)


def sample(pid):
    rss_kb = None
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                rss_kb = int(line.split()[1])
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    return rss_kb, fds


def climbing(samples, held_open):
    """Why the samples climb, or None."""
    skip = max(1, len(samples) // 5)
    steady = samples[skip:]
    if len(steady) < 4:
        return None
    quarter = max(1, len(steady) // 4)
    first = statistics.median(s[1] for s in steady[:quarter])
    last = statistics.median(s[1] for s in steady[-quarter:])
    if last > first * 1.25 + 16 * 1024:
        return f"RSS climbed from a median of {first / 1024:.1f} MiB to {last / 1024:.1f} MiB"
    lowest = min(s[2] for s in steady)
    end = steady[-1][2]
    if end > lowest + 64 + held_open:
        return f"open descriptors climbed from {lowest} to {end}"
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--pid", type=int, required=True, help="the server's process id")
    parser.add_argument("--seconds", type=float, default=1800)
    parser.add_argument("--interval", type=float, default=10)
    parser.add_argument("--churn", type=int, default=4, help="churning threads")
    parser.add_argument("--stateless", type=int, default=2)
    parser.add_argument("--slow-readers", type=int, default=2)
    parser.add_argument("--disconnects", type=int, default=2)
    parser.add_argument("--hold", type=float, default=5, help="seconds a slow reader holds its stream")
    parser.add_argument("--echo-tool", default="echo")
    parser.add_argument("--notify-tool", default="test_trigger_tool_change")
    parser.add_argument("--slow-tool", default="test_tool_slow")
    parser.add_argument("--check", action="store_true", help="exit 1 when memory or descriptors climb")
    args = parser.parse_args()

    target = Target(args.url, {"echo": args.echo_tool, "notify": args.notify_tool, "slow": args.slow_tool})
    stop = threading.Event()
    workers = []

    def spawn(function, count, *extra):
        for _ in range(count):
            thread = threading.Thread(target=guarded, args=(function, target, stop) + extra, daemon=True)
            thread.start()
            workers.append(thread)

    def guarded(function, *call_args):
        while not stop.is_set():
            try:
                function(*call_args)
            except (OSError, http.client.HTTPException, ValueError) as error:
                target.count(False)
                print(f"# {function.__name__}: {error!r}", file=sys.stderr)
                time.sleep(0.2)

    spawn(churn, args.churn)
    spawn(stateless, args.stateless)
    spawn(slow_reader, args.slow_readers, args.hold)
    spawn(disconnect, args.disconnects)

    samples = []
    started = time.monotonic()
    print("seconds\trss_mib\tfds\tcalls\terrors", flush=True)
    while True:
        elapsed = time.monotonic() - started
        rss_kb, fds = sample(args.pid)
        samples.append((elapsed, rss_kb, fds))
        print(f"{elapsed:.0f}\t{rss_kb / 1024:.1f}\t{fds}\t{target.calls}\t{target.errors}", flush=True)
        if elapsed >= args.seconds:
            break
        time.sleep(min(args.interval, max(0.0, args.seconds - elapsed)))
    stop.set()
    for thread in workers:
        thread.join(timeout=40)
    time.sleep(1)
    rss_kb, fds = sample(args.pid)
    print(f"after the load\t{rss_kb / 1024:.1f}\t{fds}\t{target.calls}\t{target.errors}", flush=True)

    # Streams and calls the load holds open at a sample.
    held_open = 2 * (args.churn + args.stateless + args.slow_readers * 2 + args.disconnects)
    verdict = climbing(samples, held_open)
    if target.calls == 0 or target.errors > target.calls // 10:
        verdict = verdict or f"{target.errors} of {target.calls} calls failed"
    print(f"verdict: {verdict or 'flat'}")
    if args.check and verdict:
        sys.exit(1)


if __name__ == "__main__":
    main()
