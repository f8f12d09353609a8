"""Drives `mcp host` (the gateway of .ci/interop-host.sh) with the official Python SDK client.

Usage: host_python_client.py --url URL --era legacy|modern --fixture FILE --fixture-text TEXT
                             --repo DIR --commit-message TEXT [--restart SERVER]

The host serves six upstreams (filesystem, memory, everything over stdio,
everything-http over Streamable HTTP, time, git). --era legacy connects with
the initialize handshake, --era modern with server/discover (2026-07-28).
--restart SERVER runs only the restart check instead: kills that stdio
upstream (its pid from GET /status) with SIGKILL, watches its tools leave
and come back, and calls it again.

Prints `ok: ...` per check; exits non-zero with `FAILED: ...` on the first
mismatch.
"""

import argparse
import json
import os
import signal
import sys
import time
import urllib.request

import anyio
import mcp_types as types
from mcp import Client
from mcp.shared.exceptions import MCPError

SAMPLED_TEXT = "Paris, said the python sampler"

EXPECTED_TOOLS = [
    "filesystem__read_file",
    "filesystem__read_text_file",
    "filesystem__list_directory",
    "memory__create_entities",
    "memory__open_nodes",
    "time__get_current_time",
    "git__git_status",
    "git__git_log",
    "everything__echo",
    "everything__trigger-long-running-operation",
    "everything__trigger-sampling-request",
    "everything-http__echo",
    "everything-http__trigger-long-running-operation",
]

ERA = "?"


class CheckFailed(Exception):
    """A check did not hold; its message is the `FAILED: ...` line."""


def fail(what, detail=None):
    suffix = f"\n  got: {detail}" if detail is not None else ""
    raise CheckFailed(f"FAILED (python {ERA}): {what}{suffix}")


def check(condition, what, detail=None):
    if not condition:
        fail(what, detail)
    print(f"ok (python {ERA}): {what}", flush=True)


def find_failure(error):
    """The CheckFailed inside `error` (the SDK's task groups wrap it), if any."""
    if isinstance(error, CheckFailed):
        return error
    for inner in getattr(error, "exceptions", ()):
        found = find_failure(inner)
        if found is not None:
            return found
    return None


def text_of(result):
    """All of a tool result's text, its structured content and its error flag, as one string."""
    parts = [getattr(c, "text", "") for c in result.content]
    if result.structured_content is not None:
        parts.append(json.dumps(result.structured_content))
    return "\n".join(parts)


async def call(client, what, name, arguments, **kwargs):
    """Calls a tool; a JSON-RPC error or an isError result fails the check `what`."""
    try:
        result = await client.call_tool(name, arguments, **kwargs)
    except MCPError as e:
        fail(f"{what}: tools/call {name} {json.dumps(arguments)}: error {e.error.code}: {e.error.message}")
    if result.is_error:
        fail(f"{what}: tools/call {name} {json.dumps(arguments)}: isError", text_of(result))
    return text_of(result)


def status(url):
    base = url.rsplit("/mcp", 1)[0]
    with urllib.request.urlopen(f"{base}/status", timeout=10) as response:
        return json.load(response)


def server_status(url, name):
    for server in status(url)["servers"]:
        if server["name"] == name:
            return server
    fail(f"GET /status lists no server {name!r}")


async def sampler(context, params):
    return types.CreateMessageResult(
        role="assistant",
        content=types.TextContent(type="text", text=SAMPLED_TEXT),
        model="interop-model",
        stop_reason="endTurn",
    )


async def tool_names(client):
    listed = await client.list_tools(cache_mode="bypass")
    names = [t.name for t in listed.tools]
    while listed.next_cursor:
        listed = await client.list_tools(cursor=listed.next_cursor, cache_mode="bypass")
        names += [t.name for t in listed.tools]
    return names


async def main_checks(client, args):
    era = ERA
    names = await tool_names(client)
    missing = [n for n in EXPECTED_TOOLS if n not in names]
    check(not missing, f"tools/list has every server's tools with their prefixes ({len(names)} tools)", f"missing {missing}; listed {names}")

    text = await call(client, "filesystem read", "filesystem__read_text_file", {"path": args.fixture})
    check(args.fixture_text in text, "filesystem__read_text_file reads the fixture file", text)

    entity = f"interop-python-{era}"
    observation = f"created by the python sdk client, {era} era"
    await call(
        client,
        "memory create",
        "memory__create_entities",
        {"entities": [{"name": entity, "entityType": "test", "observations": [observation]}]},
    )
    text = await call(client, "memory read", "memory__open_nodes", {"names": [entity]})
    check(observation in text, "memory__create_entities then memory__open_nodes reads the entity back", text)

    text = await call(client, "time", "time__get_current_time", {"timezone": "Asia/Tokyo"})
    check("Asia/Tokyo" in text and "+09:00" in text, "time__get_current_time in Asia/Tokyo", text)

    text = await call(client, "git log", "git__git_log", {"repo_path": args.repo, "max_count": 1})
    check(args.commit_message in text, "git__git_log shows the fixture repo's commit", text)
    text = await call(client, "git status", "git__git_status", {"repo_path": args.repo})
    check("nothing to commit" in text, "git__git_status of the fixture repo", text)

    for prefix in ("everything", "everything-http"):
        message = f"hello from python {era} via {prefix}"
        text = await call(client, f"{prefix} echo", f"{prefix}__echo", {"message": message})
        check(f"Echo: {message}" in text, f"{prefix}__echo answers", text)

    resources = (await client.list_resources(cache_mode="bypass")).resources
    uris = [str(r.uri) for r in resources]
    wanted = [u for u in uris if u.endswith("architecture.md")]
    check(wanted, "resources/list has server-everything's architecture.md", uris)
    # Both everythings list the same URIs, so the host rewrites them per server.
    check(
        any(u.startswith("mcp-host:everything/") for u in wanted) and any(u.startswith("mcp-host:everything-http/") for u in wanted),
        "a URI two upstreams list is rewritten for each (mcp-host:NAMESPACE/...)",
        wanted,
    )
    for uri in wanted:
        read = await client.read_resource(uri, cache_mode="bypass")
        body = read.contents[0].text if hasattr(read.contents[0], "text") else ""
        check(len(body) > 100 and "#" in body, f"resources/read {uri}", body[:200])
    # The host answers the upstream's contents as they are, with the
    # upstream's own URI, not the rewritten one the client read.
    got = str(read.contents[0].uri)
    check(got == uri, f"resources/read {uri} answers contents with the URI read", f"contents[0].uri = {got}")

    # A resource_link in a tool result must be readable through the host;
    # when two upstreams list the same URIs the host rewrites them in its
    # lists but not in tool results, and does not route the original.
    result = await client.call_tool("everything__get-resource-links", {"count": 2})
    links = [str(c.uri) for c in result.content if c.type == "resource_link"]
    check(links, f"everything__get-resource-links returns resource links {links}", text_of(result))
    try:
        read = await client.read_resource(links[0], cache_mode="bypass")
        readable, detail = bool(read.contents), read.contents
    except MCPError as e:
        readable, detail = False, f"resources/read {{\"uri\": \"{links[0]}\"}} -> error {e.error.code}: {e.error.message}"
    check(readable, f"a resource_link from a tool result ({links[0]}) can be read through the host", detail)

    prompts = [p.name for p in (await client.list_prompts(cache_mode="bypass")).prompts]
    check("everything__simple-prompt" in prompts, "prompts/list has everything__simple-prompt", prompts)
    prompt = await client.get_prompt("everything__simple-prompt")
    check(prompt.messages and getattr(prompt.messages[0].content, "text", ""), "prompts/get everything__simple-prompt", prompt)

    for prefix in ("everything", "everything-http"):
        progress = []

        async def on_progress(value, total, message, progress=progress):
            progress.append(value)

        text = await call(
            client,
            f"{prefix} progress",
            f"{prefix}__trigger-long-running-operation",
            {"duration": 1, "steps": 3},
            progress_callback=on_progress,
        )
        check("completed" in text, f"{prefix}__trigger-long-running-operation completes", text)
        check(len(progress) >= 1, f"progress notifications cross the host from {prefix} ({progress})", progress)

    # A legacy upstream asks for sampling in the middle of the call: a
    # legacy client is asked with a request, a 2026-07-28 client in an
    # input_required round of its call; either way the answer goes back.
    for prefix in ("everything", "everything-http"):
        text = await call(client, f"{prefix} sampling", f"{prefix}__trigger-sampling-request", {"prompt": "Capital of France?", "maxTokens": 20})
        check(SAMPLED_TEXT in text, f"sampling/createMessage from {prefix} reaches this client and its answer goes back", text)


async def restart_check(client, args):
    server = args.restart
    tool = f"{server}__open_nodes"
    entity = "interop-restart-probe"
    observation = "written before the kill"
    await call(
        client,
        "memory create",
        f"{server}__create_entities",
        {"entities": [{"name": entity, "entityType": "test", "observations": [observation]}]},
    )
    before = server_status(args.url, server)
    check(before["state"] == "ready" and before["pid"], f"GET /status: {server} is ready with pid {before['pid']}", before)
    os.kill(before["pid"], signal.SIGKILL)
    killed_at = time.monotonic()
    print(f"   killed {server} (pid {before['pid']}) with SIGKILL")

    # Watch for the upstream to leave: its state not ready, or its tools gone.
    seen_state = None
    seen_gone = False
    deadline = killed_at + 30
    while time.monotonic() < deadline and not (seen_state and seen_gone):
        now = server_status(args.url, server)
        if now["state"] != "ready" or now["pid"] != before["pid"]:
            seen_state = seen_state or f"{now['state']} (restarts {now['restarts']}, pid {now['pid']}, lastError {now['lastError']!r})"
        names = await tool_names(client)
        if tool not in names:
            seen_gone = True
        if now["state"] == "ready" and now["pid"] != before["pid"]:
            break  # already back
        await anyio.sleep(0.05)
    check(seen_state is not None, f"GET /status shows {server} leave the ready state: {seen_state}", seen_state)
    check(seen_gone, f"tools/list drops {tool} while {server} is down")

    back = None
    while time.monotonic() < deadline:
        now = server_status(args.url, server)
        names = await tool_names(client)
        if now["state"] == "ready" and tool in names:
            back = now
            break
        await anyio.sleep(0.1)
    took = time.monotonic() - killed_at
    check(back is not None, f"{server} is back within 30 s ({took:.1f} s)", server_status(args.url, server))
    check(back["pid"] != before["pid"] and back["restarts"] > before["restarts"], f"GET /status: new pid {back['pid']}, restarts {back['restarts']}", back)
    text = await call(client, "memory read after restart", tool, {"names": [entity]})
    check(observation in text, f"{tool} works again after the restart (reads what was written before the kill)", text)
    check(args.list_changed, "notifications/tools/list_changed reached this client" if args.list_changed else "no notifications/tools/list_changed reached this client", args.list_changed)


async def main():
    global ERA
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--era", choices=["legacy", "modern"], required=True)
    parser.add_argument("--fixture", required=True)
    parser.add_argument("--fixture-text", required=True)
    parser.add_argument("--repo", required=True)
    parser.add_argument("--commit-message", required=True)
    parser.add_argument("--restart")
    args = parser.parse_args()
    ERA = args.era
    args.list_changed = []

    async def on_message(message):
        if isinstance(message, types.ToolListChangedNotification):
            args.list_changed.append(time.monotonic())

    # "auto" probes server/discover (2026-07-28) and falls back to initialize;
    # "legacy" forces the initialize handshake.
    mode = "legacy" if args.era == "legacy" else "auto"
    async with Client(
        args.url,
        mode=mode,
        sampling_callback=sampler,
        message_handler=on_message,
        client_info=types.Implementation(name="host-interop-python", version="1.0.0"),
        read_timeout_seconds=60,
    ) as client:
        version = client.protocol_version
        if args.era == "legacy":
            check(version == "2025-11-25", f"initialize negotiates {version}", version)
        else:
            check(version == "2026-07-28", f"server/discover settles {version}", version)
        if args.restart:
            await restart_check(client, args)
        else:
            await main_checks(client, args)
    print(f"python sdk client ({args.era}): all checks passed")


if __name__ == "__main__":
    try:
        anyio.run(main)
    except BaseException as error:
        failure = find_failure(error)
        if failure is None:
            raise
        print(failure, file=sys.stderr)
        sys.exit(1)
