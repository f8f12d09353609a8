"""Checks that the official Python SDK client sees every tool of
`mcp serve everything --http`, in the legacy era (initialize) and in
2026-07-28 (server/discover), where the SDK drops a tool whose
`x-mcp-header` annotations it finds invalid.

Usage: python_sdk_tools.py PATH_TO_MCP_BINARY
Prints `ok: ...` per check; exits non-zero with `FAILED: ...` otherwise.
"""

import json
import sys
import urllib.request

import anyio
from interop_checks import check, start_http
from mcp import Client


def listed_by_the_server(url):
    """Every tool name the server lists, read from its raw 2026-07-28 answers."""
    names, cursor = [], None
    while True:
        params = {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                            "io.modelcontextprotocol/clientCapabilities": {}}}
        if cursor:
            params["cursor"] = cursor
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": params})
        request = urllib.request.Request(url, data=body.encode(), headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2026-07-28",
            "Mcp-Method": "tools/list",
        })
        with urllib.request.urlopen(request, timeout=30) as response:
            result = json.load(response)["result"]
        names += [tool["name"] for tool in result["tools"]]
        cursor = result.get("nextCursor")
        if not cursor:
            return names


async def seen_by_the_sdk(url, mode):
    async with Client(url, mode=mode, read_timeout_seconds=30) as client:
        names, cursor = [], None
        while True:
            result = await client.list_tools(cursor=cursor) if cursor else await client.list_tools()
            names += [tool.name for tool in result.tools]
            cursor = result.next_cursor if hasattr(result, "next_cursor") else result.nextCursor
            if not cursor:
                return client.protocol_version, names


async def main(binary):
    server, url = start_http([binary, "serve", "everything", "--http", "127.0.0.1:0"])
    try:
        listed = listed_by_the_server(url)
        check("region_query" in listed, "the server lists region_query (x-mcp-header arguments)")
        for mode, era in [("legacy", "2025-11-25"), ("auto", "2026-07-28")]:
            version, seen = await seen_by_the_sdk(url, mode)
            check(version == era, f"the SDK speaks {era}", version)
            missing = sorted(set(listed) - set(seen))
            check(not missing, f"the SDK sees all {len(listed)} tools in {era}", missing)
    finally:
        server.terminate()
        server.wait(timeout=10)
    print("python sdk tools: all checks passed")


if __name__ == "__main__":
    anyio.run(main, sys.argv[1])
