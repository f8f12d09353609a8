"""What the Python interop scripts share: a check that prints `ok: ...` or
stops with `FAILED: ...`, and starting an `mcp` that serves HTTP."""

import subprocess


def check(condition, what, detail=None):
    """Prints `ok: WHAT`, or exits non-zero with `FAILED: WHAT` (and what was got)."""
    if not condition:
        suffix = f"\n  got: {detail}" if detail is not None else ""
        raise SystemExit(f"FAILED: {what}{suffix}")
    print(f"ok: {what}")


def start_http(args):
    """Starts `args` (an `mcp` serving HTTP, stdout piped); the process and the
    endpoint URL it prints first (`MCP endpoint: URL`)."""
    process = subprocess.Popen(args, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, text=True)
    for line in process.stdout:
        if line.startswith("MCP endpoint: "):
            return process, line.removeprefix("MCP endpoint: ").strip()
    process.wait(timeout=10)
    raise SystemExit(f"FAILED: {args[0]} {args[1]} printed no endpoint")
