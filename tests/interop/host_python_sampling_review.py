"""A person at `mcp host`'s terminal reviews a server's sampling for the official Python SDK client.

Usage: host_python_sampling_review.py --mcp MCP --config FILE --settings FILE --venv-python PY

Starts `mcp host --config FILE --settings FILE --http 127.0.0.1:0` on a
pseudo-terminal of its own (its controlling terminal, as a person's shell
gives), with `[sampling] approve = "ask"` and the local model in the
settings. The official Python SDK client (run by PY), declaring no
sampling, calls `ours-legacy__test_sampling`; at the host's terminal the
request is shown, its last message edited, sent; the model's reply shown
and given to the server; the tool's answer reaches the client. Then the
same call is refused at the terminal, and the client gets the refusal.

Prints `ok: ...` per check; exits non-zero with `FAILED: ...` on the first
mismatch.
"""

import argparse
import os
import pty
import select
import signal
import subprocess
import sys
import time


def fail(what, detail=""):
    print(f"FAILED: {what}\n  {detail}", file=sys.stderr)
    sys.exit(1)


class Terminal:
    """The host's pseudo-terminal: what it has shown, and keys to type."""

    def __init__(self, argv):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.execv(argv[0], argv)
        self.shown = ""

    def wait_for(self, text, start, seconds=120):
        deadline = time.monotonic() + seconds
        while True:
            at = self.shown.find(text, start)
            if at >= 0:
                return at
            left = deadline - time.monotonic()
            if left <= 0:
                fail(f"{text!r} was never shown", self.shown[-2000:])
            ready, _, _ = select.select([self.fd], [], [], min(left, 0.5))
            if ready:
                try:
                    self.shown += os.read(self.fd, 4096).decode(errors="replace")
                except OSError:
                    fail(f"the host's terminal closed before {text!r}", self.shown[-2000:])

    def type(self, keys):
        os.write(self.fd, keys.encode())

    def stop(self):
        os.kill(self.pid, signal.SIGTERM)
        os.waitpid(self.pid, 0)


CLIENT = r'''
import sys, anyio
from mcp import Client
import mcp_types as types
from mcp.shared.exceptions import MCPError

async def main():
    async with Client(sys.argv[1], mode="legacy", read_timeout_seconds=120,
                      client_info=types.Implementation(name="review-python", version="1")) as client:
        try:
            result = await client.call_tool("ours-legacy__test_sampling", {"prompt": sys.argv[2]})
        except MCPError as error:
            print(f"ERROR {error.error.message}", flush=True)
            return
        text = "\n".join(getattr(c, "text", "") for c in result.content)
        print(("ERROR " if result.is_error else "OK ") + text, flush=True)

anyio.run(main)
'''


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mcp", required=True)
    parser.add_argument("--config", required=True)
    parser.add_argument("--settings", required=True)
    parser.add_argument("--venv-python", required=True)
    args = parser.parse_args()
    host = Terminal([args.mcp, "host", "--config", args.config, "--settings", args.settings,
                     "--http", "127.0.0.1:0"])
    try:
        at = host.wait_for("MCP endpoint: ", 0) + len("MCP endpoint: ")
        end = host.wait_for("/mcp", at) + len("/mcp")
        url = host.shown[at:end]
        print(f"ok: mcp host on its own terminal serves {url}", flush=True)

        # Edited, sent, the reply given to the server.
        call = subprocess.Popen([args.venv_python, "-c", CLIENT, url, "Say hi"],
                                stdout=subprocess.PIPE, text=True)
        asked = host.wait_for("Send it to the model?", end)
        shown = host.shown[end:asked]
        for part in ['Server "ours-legacy"', "user: Say hi", "at most 100 tokens"]:
            if part not in shown:
                fail(f"the request is shown with {part!r}", shown)
        print("ok: the host's terminal shows the server's request whole", flush=True)
        host.type("e\n")
        edit = host.wait_for("The last message, on one line: ", asked)
        host.type("Say hello\n")
        asked = host.wait_for("Send it to the model?", edit)
        host.type("y\n")
        review = host.wait_for("Give this reply to the server?", asked)
        host.type("y\n")
        out, _ = call.communicate(timeout=120)
        if not out.startswith("OK LLM response: "):
            fail("the tool's answer reaches the Python client", out)
        print(f"ok: edited, sent, reviewed; the Python SDK client got {out.strip()[:60]!r}", flush=True)

        # Refused at the terminal: the model is not asked, the client is told.
        call = subprocess.Popen([args.venv_python, "-c", CLIENT, url, "Say bye"],
                                stdout=subprocess.PIPE, text=True)
        host.wait_for("Send it to the model?", review)
        host.type("n\n")
        out, _ = call.communicate(timeout=120)
        if "refused the sampling request" not in out:
            fail("a refusal at the terminal reaches the Python client", out)
        print("ok: refused at the terminal; the Python SDK client is told", flush=True)
    finally:
        host.stop()
    print("sampling review at the host's terminal: all checks passed")


if __name__ == "__main__":
    main()
