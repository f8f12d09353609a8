"""The processes of the scale-out rig: one redis-server, three MCP instances
(`mcp serve everything --redis` or `mcp host --redis`) and nginx in front,
each a child of this process on a free 127.0.0.1 port, with its log in the
work directory. Everything is stopped by `Rig.close()`."""

import json
import os
import pathlib
import signal
import socket
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from free_port import free_port  # noqa: E402


def wait_for_port(port, process, seconds=30):
    """Until something listens on 127.0.0.1:port; raises if `process` ends
    or the time is up."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            pass
        if process.poll() is not None:
            raise RuntimeError(f"{process.args[0]} ended (status {process.returncode}) before listening on {port}")
        time.sleep(0.05)
    raise RuntimeError(f"nothing listens on port {port} after {seconds}s")


class Rig:
    """redis-server, `count` instances of `mode` ("serve" or "host") and nginx."""

    def __init__(self, mcp, mode, work, count=3):
        self.mcp, self.mode, self.work, self.count = mcp, mode, pathlib.Path(work), count
        self.work.mkdir(parents=True, exist_ok=True)
        taken = []
        for _ in range(count + 2):
            taken.append(free_port(taken))
        self.redis_port, self.nginx_port, *self.ports = taken
        self.redis = None
        self.instances = [None] * count
        self.nginx = None
        self.logs = []
        # The hosts' upstream children sign 2026-07-28 `requestState` with
        # it: a retry another host's child gets must verify there.
        self.state_key = os.urandom(32).hex()

    @property
    def redis_url(self):
        return f"redis://127.0.0.1:{self.redis_port}/0"

    @property
    def url(self):
        """The MCP endpoint through nginx."""
        return f"http://127.0.0.1:{self.nginx_port}/mcp"

    def instance_url(self, i):
        return f"http://127.0.0.1:{self.ports[i]}/mcp"

    def upstream(self, i):
        """The instance as nginx's $upstream_addr names it."""
        return f"127.0.0.1:{self.ports[i]}"

    def upstream_index(self, upstream):
        """Which instance nginx's $upstream_addr names."""
        return [self.upstream(i) for i in range(self.count)].index(upstream)

    def _log(self, name):
        path = self.work / f"{name}.log"
        handle = open(path, "ab")
        self.logs.append(handle)
        return handle

    def start(self):
        self.start_redis()
        for i in range(self.count):
            self.start_instance(i)
        self.start_nginx()
        return self

    def start_redis(self):
        log = self._log("redis")
        self.redis = subprocess.Popen(
            ["redis-server", "--port", str(self.redis_port), "--bind", "127.0.0.1",
             "--save", "", "--appendonly", "no"],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        wait_for_port(self.redis_port, self.redis)

    def stop_redis(self):
        self.redis.kill()
        self.redis.wait(timeout=10)

    def instance_command(self, i):
        listen = f"127.0.0.1:{self.ports[i]}"
        allow = ["--allow", f"127.0.0.1:{self.nginx_port}"]
        if self.mode == "serve":
            return [self.mcp, "serve", "everything", "--http", listen, "--redis", self.redis_url, *allow]
        config = self.work / "servers.json"
        config.write_text(json.dumps({"mcpServers": {"everything": {
            "command": self.mcp, "args": ["serve", "everything"], "namespace": "",
            "env": {"MCP_STATE_KEY": self.state_key}}}}))
        return [self.mcp, "host", "--http", listen, "--redis", self.redis_url,
                "--config", str(config), *allow]

    def start_instance(self, i):
        log = self._log(f"{self.mode}-{i}")
        env = dict(os.environ, RUST_LOG=os.environ.get("RUST_LOG", "warn"))
        self.instances[i] = subprocess.Popen(
            self.instance_command(i), stdout=log, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, cwd=self.work, env=env, start_new_session=True)
        wait_for_port(self.ports[i], self.instances[i])

    def kill_instance(self, i):
        """SIGKILL, as a crash would (its own stdio children see their stdin
        close and end)."""
        self.instances[i].send_signal(signal.SIGKILL)
        self.instances[i].wait(timeout=10)

    def start_nginx(self):
        prefix = self.work / "nginx"
        for sub in ["logs", "tmp"]:
            (prefix / sub).mkdir(parents=True, exist_ok=True)
        upstreams = "\n".join(
            f"        server 127.0.0.1:{port} max_fails=1 fail_timeout=2s;" for port in self.ports)
        text = (HERE / "nginx.conf.template").read_text()
        text = (text.replace("@PREFIX@", str(prefix)).replace("@LISTEN@", f"127.0.0.1:{self.nginx_port}")
                .replace("@UPSTREAMS@", upstreams))
        (prefix / "nginx.conf").write_text(text)
        command = ["nginx", "-p", str(prefix), "-c", str(prefix / "nginx.conf"),
                   "-e", str(prefix / "logs" / "error.log")]
        if os.geteuid() == 0:
            # Unprivileged even when the rig runs as root.
            for path in [prefix, *prefix.rglob("*")]:
                os.chown(path, 65534, 65534)
            command = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *command]
        log = self._log("nginx")
        self.nginx = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                      start_new_session=True)
        wait_for_port(self.nginx_port, self.nginx)

    @property
    def access_log(self):
        return self.work / "nginx" / "logs" / "access.log"

    def access_entries(self, since=0):
        """The access log's entries from byte `since` on, and its new end."""
        try:
            with open(self.access_log, "rb") as f:
                f.seek(since)
                data = f.read()
        except FileNotFoundError:
            return [], since
        entries = [json.loads(line) for line in data.decode().splitlines() if line.strip()]
        return entries, since + len(data)

    def close(self):
        # Each child leads its own process group: the group goes, with any
        # stdio server a host started, even when the leader is gone.
        for process in [self.nginx, *self.instances, self.redis]:
            if process is None:
                continue
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.wait(timeout=10)
        for handle in self.logs:
            handle.close()
