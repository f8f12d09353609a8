"""FastMCP's proxy (`fastmcp` on PyPI) in front of one stdio MCP server, to
compare other gateways with.

    fastmcp_proxy.py PORT COMMAND [ARG...]

Serves Streamable HTTP at http://127.0.0.1:PORT/mcp, with FastMCP's
defaults otherwise (stateful sessions, SSE replies), proxying to COMMAND
ARG... run over stdio. It uses FastMCP's documented proxy API,
`create_proxy`, with a Claude-Desktop-style config of one server, so the
server's tools keep their names (a config of one server adds no prefix).
"""

import os
import sys

# No update check against PyPI (it runs with the banner, which is off
# anyway): the benchmark sends nothing off the machine.
os.environ.setdefault("FASTMCP_CHECK_FOR_UPDATES", "off")

from fastmcp.server import create_proxy  # noqa: E402


def main(argv: list[str]) -> int:
    """Runs the proxy the arguments describe."""
    if len(argv) < 2 or not argv[0].isdigit():
        print("usage: fastmcp_proxy.py PORT COMMAND [ARG...]", file=sys.stderr)
        return 2
    port = int(argv[0])
    config = {"mcpServers": {"upstream": {"command": argv[1], "args": argv[2:]}}}
    proxy = create_proxy(config, name="fastmcp-proxy")
    print(f"MCP endpoint: http://127.0.0.1:{port}/mcp", flush=True)
    proxy.run(
        transport="http",
        host="127.0.0.1",
        port=port,
        show_banner=False,
        log_level="WARNING",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
