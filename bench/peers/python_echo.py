"""An echo MCP server on the official Python SDK (`mcp` 2.x), to compare
other servers with.

    python_echo.py stdio
    python_echo.py http PORT [--stateless]

Over HTTP it serves Streamable HTTP at http://127.0.0.1:PORT/mcp with JSON
replies, one session per client unless --stateless. Its one tool, `echo`,
takes {"text": ...}.
"""

import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("python-echo", log_level="WARNING")


@server.tool(description="Returns the text it is given")
def echo(text: str) -> str:
    """Returns its text unchanged."""
    return text


def main(argv: list[str]) -> int:
    """Runs the server in the mode the arguments name."""
    if argv == ["stdio"]:
        server.run("stdio")
        return 0
    if len(argv) in (2, 3) and argv[0] == "http" and argv[2:] in ([], ["--stateless"]):
        port = int(argv[1])
        print(f"MCP endpoint: http://127.0.0.1:{port}/mcp", flush=True)
        server.run(
            "streamable-http",
            host="127.0.0.1",
            port=port,
            json_response=True,
            stateless_http=argv[2:] == ["--stateless"],
        )
        return 0
    print("usage: python_echo.py stdio | python_echo.py http PORT [--stateless]", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
