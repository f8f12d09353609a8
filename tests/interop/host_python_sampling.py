"""Sampling answered by `mcp host`'s own model, seen from the official Python SDK client.

Usage: host_python_sampling.py --url URL --era legacy|modern --model NAME

The host (.ci/interop-model.sh) serves the official TypeScript
server-everything (`everything`, 2025-11-25) and this project's
everything server pinned to 2025-11-25 (`ours-legacy`) and in 2026-07-28
(`ours`); its `[model]` is llama-cpp-python's server with SmolLM2-135M and
`[sampling] approve = "allow"`. This client declares no sampling: each
server's request for a completion (a `sampling/createMessage` request, or
a question of an `input_required` round) is answered by the host's model,
and the tool's answer carries the model's reply. The wording of a tiny
model's reply is never checked; its shape is.

Prints `ok: ...` per check; exits non-zero with `FAILED: ...` on the first
mismatch.
"""

import argparse
import json
import sys

import anyio
import mcp_types as types
from mcp import Client
from mcp.shared.exceptions import MCPError

ERA = "?"


def fail(what, detail=None):
    suffix = f"\n  got: {detail}" if detail is not None else ""
    print(f"FAILED (python {ERA}): {what}{suffix}", file=sys.stderr)
    sys.exit(1)


def check(condition, what, detail=None):
    if not condition:
        fail(what, detail)
    print(f"ok (python {ERA}): {what}", flush=True)


async def call(client, name, arguments):
    try:
        result = await client.call_tool(name, arguments)
    except MCPError as e:
        fail(f"tools/call {name}: error {e.error.code}: {e.error.message}")
    text = "\n".join(getattr(c, "text", "") for c in result.content)
    if result.is_error:
        fail(f"tools/call {name}: isError", text)
    return text


async def main():
    global ERA
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--era", choices=["legacy", "modern"], required=True)
    parser.add_argument("--model", required=True)
    args = parser.parse_args()
    ERA = args.era
    mode = "legacy" if args.era == "legacy" else "auto"
    async with Client(
        args.url,
        mode=mode,
        client_info=types.Implementation(name="host-sampling-python", version="1.0.0"),
        read_timeout_seconds=120,
    ) as client:
        expected = "2025-11-25" if args.era == "legacy" else "2026-07-28"
        check(client.protocol_version == expected, f"the session speaks {expected}", client.protocol_version)

        # The TypeScript server asks with a request and prints the result whole.
        text = await call(client, "everything__trigger-sampling-request", {"prompt": "Say hi", "maxTokens": 16})
        prefix = "LLM sampling result:"
        check(text.startswith(prefix), "server-everything's trigger-sampling-request is answered", text)
        sampled = json.loads(text[len(prefix):])
        check(sampled.get("role") == "assistant" and sampled.get("model") == args.model,
              f"the result is the host's model's ({args.model}), as the assistant", sampled)
        check(sampled.get("content", {}).get("type") == "text" and sampled["content"].get("text"),
              "with a text reply", sampled)
        check(sampled.get("stopReason") in ("endTurn", "maxTokens"), "and a stop reason", sampled)
        usage = sampled.get("_meta", {}).get("mcp-host/usage", {})
        check(0 < usage.get("outputTokens", 0) <= 16, "and the tokens used, within maxTokens", sampled)

        # This project's server, in each era: a request (2025-11-25) and an
        # input_required round (2026-07-28).
        for server in ("ours-legacy", "ours"):
            text = await call(client, f"{server}__test_sampling", {"prompt": "Say hi"})
            check(text.startswith("LLM response: ") and len(text) > len("LLM response: "),
                  f"{server}'s test_sampling is answered by the host's model", text)
    print(f"python sdk client ({args.era}): all sampling checks passed")


if __name__ == "__main__":
    anyio.run(main)
