"""Checks views of `mcp host` with the official Python SDK client: a
view served at /views/NAME/mcp lists only its tools and calls them, in
the legacy era (initialize) and in 2026-07-28 (server/discover); a view
in discovery mode lists its three tools, whose search finds a tool and
whose call_tool calls it.

Usage: python_sdk_view.py PATH_TO_MCP_BINARY
Prints `ok: ...` per check; exits non-zero with `FAILED: ...` otherwise.
"""

import json
import os
import sys
import tempfile

import anyio
from interop_checks import check, start_http
from mcp import Client


def text_of(result):
    return "\n".join(getattr(c, "text", "") for c in result.content)


async def check_small_view(url, mode, era):
    async with Client(url, mode=mode, read_timeout_seconds=30) as client:
        check(client.protocol_version == era, f"the SDK speaks {era} to the view", client.protocol_version)
        names = sorted(tool.name for tool in (await client.list_tools()).tools)
        check(names == ["everything__add", "everything__echo"], f"the view lists its two tools ({era})", names)
        result = await client.call_tool("everything__echo", {"text": "through a view"})
        check("through a view" in text_of(result), f"a call through the view is answered ({era})", text_of(result))


async def check_discovery_view(url):
    async with Client(url, mode="auto", read_timeout_seconds=30) as client:
        names = [tool.name for tool in (await client.list_tools()).tools]
        check(names == ["search_tools", "describe_tool", "call_tool"], "a discovery view lists its three tools", names)
        found = await client.call_tool("search_tools", {"query": "echo back a message", "limit": 3})
        top = [tool["name"] for tool in (found.structured_content or {}).get("tools", [])]
        check("everything__echo" in top, "search_tools finds echo among the first three", top)
        called = await client.call_tool("call_tool", {"name": "everything__echo", "arguments": {"text": "found and called"}})
        check("found and called" in text_of(called), "call_tool calls it", text_of(called))


async def main(binary):
    with tempfile.TemporaryDirectory() as folder:
        config = os.path.join(folder, "servers.json")
        with open(config, "w") as file:
            json.dump({"mcpServers": {"everything": {"command": binary, "args": ["serve", "everything"]}}}, file)
        settings = os.path.join(folder, "host.toml")
        with open(settings, "w") as file:
            file.write('[views.small]\nservers = ["every*"]\ntools = ["*__echo", "*__add"]\n\n'
                       '[views.find]\ndiscovery = true\n')
        host, url = start_http([binary, "host", "--http", "127.0.0.1:0", "--config", config,
                                "--settings", settings])
        try:
            base = url.rsplit("/mcp", 1)[0]
            for mode, era in [("legacy", "2025-11-25"), ("auto", "2026-07-28")]:
                await check_small_view(f"{base}/views/small/mcp", mode, era)
            await check_discovery_view(f"{base}/views/find/mcp")
        finally:
            host.terminate()
            host.wait(timeout=10)
    print("python sdk views: all checks passed")


if __name__ == "__main__":
    anyio.run(main, sys.argv[1])
