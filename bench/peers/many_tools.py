#!/usr/bin/env python3
"""A minimal MCP server with many tools, for measuring a host's catalog.

    many_tools.py NAME COUNT

Speaks newline-delimited JSON-RPC 2.0 on stdin and stdout (the stdio
transport of the 2024-11-05 to 2025-11-25 revisions), with the Python
standard library only. It lists COUNT tools in one page, named
`{verb}_{object}_{n}` (`create_item_0`, `delete_folder_1`, ...), each
described in a sentence or two that names server NAME, with the same
input schema (`id`, `limit`, `query`; `id` required); the get_ and list_
tools are marked read-only. A call of any listed tool returns the tool's
name as text. `ping` returns {}; notifications are ignored; any other
method is -32601.
"""

import json
import sys

VERBS = ["create", "delete", "list", "get", "update", "search", "archive", "export", "share", "count"]
OBJECTS = ["item", "folder", "label", "comment", "report"]
REVISIONS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]
LATEST = "2025-11-25"


def tool(server: str, n: int) -> dict:
    """The n-th tool of server `server`."""
    verb = VERBS[n % len(VERBS)]
    obj = OBJECTS[(n // len(VERBS)) % len(OBJECTS)]
    name = f"{verb}_{obj}_{n}"
    article = "an" if obj[0] in "aeiou" else "a"
    description = f"{verb.capitalize()} {article} {obj} in {server}'s workspace."
    if n % 2:
        description += f" The {obj} is named by its id; limit and query narrow what {verb} touches."
    definition = {
        "name": name,
        "description": description,
        "inputSchema": {
            "type": "object",
            "properties": {
                "id": {"type": "string", "description": f"The {obj}'s id"},
                "limit": {"type": "integer", "minimum": 1, "description": "At most this many"},
                "query": {"type": "string", "description": "Words to match"},
            },
            "required": ["id"],
        },
    }
    if verb in ("get", "list"):
        definition["annotations"] = {"readOnlyHint": True}
    return definition


def main(argv: list) -> int:
    """Serves until stdin closes."""
    if len(argv) != 2 or not argv[1].isdigit():
        print("usage: many_tools.py NAME COUNT", file=sys.stderr)
        return 2
    server, count = argv[0], int(argv[1])
    tools = [tool(server, n) for n in range(count)]
    names = {t["name"] for t in tools}
    # The tools/list result is the same every time: serialized once.
    listed = json.dumps({"tools": tools}, separators=(",", ":"))

    def reply(id_, result=None, error=None, raw=None):
        if raw is not None:
            line = '{"jsonrpc":"2.0","id":%s,"result":%s}' % (json.dumps(id_), raw)
        elif error is not None:
            line = json.dumps({"jsonrpc": "2.0", "id": id_, "error": error}, separators=(",", ":"))
        else:
            line = json.dumps({"jsonrpc": "2.0", "id": id_, "result": result}, separators=(",", ":"))
        sys.stdout.write(line + "\n")
        sys.stdout.flush()

    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            message = json.loads(line)
        except ValueError:
            reply(None, error={"code": -32700, "message": "Parse error"})
            continue
        if not isinstance(message, dict):
            reply(None, error={"code": -32600, "message": "Invalid Request"})
            continue
        method = message.get("method")
        if "id" not in message:
            continue  # a notification, or a response to nothing we asked
        if not isinstance(method, str):
            continue  # a response: this server asks nothing, so nothing to match
        id_ = message["id"]
        params = message.get("params") or {}
        if method == "initialize":
            asked = params.get("protocolVersion") if isinstance(params, dict) else None
            reply(id_, {
                "protocolVersion": asked if asked in REVISIONS else LATEST,
                "capabilities": {"tools": {}},
                "serverInfo": {"name": f"many-tools-{server}", "version": "0.1.0"},
            })
        elif method == "ping":
            reply(id_, {})
        elif method == "tools/list":
            reply(id_, raw=listed)
        elif method == "tools/call":
            name = params.get("name") if isinstance(params, dict) else None
            if name in names:
                reply(id_, {"content": [{"type": "text", "text": name}]})
            else:
                reply(id_, error={"code": -32602, "message": f"Unknown tool: {name}"})
        else:
            reply(id_, error={"code": -32601, "message": f"Method not found: {method}"})
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except (BrokenPipeError, KeyboardInterrupt):
        sys.exit(0)
