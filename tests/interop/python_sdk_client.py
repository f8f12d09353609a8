"""Drives `mcp serve everything` over stdio with the official Python SDK client.

Usage: python_sdk_client.py PATH_TO_MCP_BINARY
Exits non-zero (with the failed check) if anything is not as expected.
"""

import asyncio
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import PromptReference


def field(obj, *names):
    """The first attribute of `obj` that exists (SDK versions name fields differently)."""
    for name in names:
        if hasattr(obj, name):
            return getattr(obj, name)
    raise SystemExit(f"FAILED: {type(obj).__name__} has none of {names}")


def check(condition, what):
    if not condition:
        raise SystemExit(f"FAILED: {what}")
    print(f"ok: {what}")


async def main(binary):
    params = StdioServerParameters(command=binary, args=["serve", "everything"])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            check(field(init, "server_info", "serverInfo").name == "mcp-everything", "initialize names the server")

            tools = await session.list_tools()
            names = [t.name for t in tools.tools]
            check("echo" in names and "calculate" in names, "tools/list has echo and calculate")

            echo = await session.call_tool("echo", {"text": "hello from python"})
            check(echo.content[0].text == "hello from python", "echo returns its text")

            calc = await session.call_tool("calculate", {"expression": "2 * (3 + 4) ^ 2"})
            check(calc.content[0].text == "98", "calculate evaluates arithmetic")

            add = await session.call_tool("add", {"a": 1, "b": 2.5})
            check(field(add, "structured_content", "structuredContent") == {"sum": 3.5}, "add returns structured content")

            resources = await session.list_resources()
            check(any(str(r.uri) == "test://static-text" for r in resources.resources), "resources/list")
            text = await session.read_resource("test://static-text")
            check("static text resource" in text.contents[0].text, "resources/read")
            templated = await session.read_resource("test://template/7/data")
            check('"7"' in templated.contents[0].text, "resource template read")

            prompts = await session.list_prompts()
            check(any(p.name == "test_prompt_with_arguments" for p in prompts.prompts), "prompts/list")
            prompt = await session.get_prompt("test_prompt_with_arguments", {"arg1": "x", "arg2": "y"})
            check("arg1='x'" in prompt.messages[0].content.text, "prompts/get with arguments")

            completion = await session.complete(
                PromptReference(type="ref/prompt", name="test_prompt_with_arguments"),
                {"name": "arg1", "value": "te"},
            )
            values = completion.completion.values
            check(values and all(v.startswith("te") for v in values), "completion/complete")
    print("python sdk interop: all checks passed")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
