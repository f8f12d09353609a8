"""Checks consent in `mcp host` with the official Python SDK client as the
approver: a tool the policy marks `ask` is put to the calling client as
an elicitation form (a request in the middle of the call in the legacy
era, an `input_required` round in 2026-07-28, which the SDK answers and
retries); the SDK's callback sees the server, the tool and the arguments,
allows once with edited arguments, and the upstream gets them; a
refusal ends the call with an error; a tool the policy allows is not
asked about.

Usage: python_sdk_consent.py PATH_TO_MCP_BINARY
Prints `ok: ...` per check; exits non-zero with `FAILED: ...` otherwise.
"""

import json
import os
import sys
import tempfile

import anyio
from interop_checks import check, start_http
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import ElicitResult


def text_of(result):
    return "\n".join(getattr(c, "text", "") for c in result.content)


class Person:
    """Answers each form with the next answer, and keeps what it was shown."""

    def __init__(self, answers):
        self.answers = list(answers)
        self.shown = []

    async def __call__(self, context, params):
        self.shown.append(params.message)
        decision, arguments = self.answers.pop(0)
        content = {"decision": decision}
        if arguments is not None:
            content["arguments"] = json.dumps(arguments)
        return ElicitResult(action="accept", content=content)


async def check_era(url, mode, era):
    person = Person([("allow-once", {"text": "edited by the person"}), ("deny", None)])
    async with Client(url, mode=mode, read_timeout_seconds=30, elicitation_callback=person) as client:
        check(client.protocol_version == era, f"the SDK speaks {era}", client.protocol_version)
        result = await client.call_tool("everything__echo", {"text": "as sent"})
        check(text_of(result) == "edited by the person",
              f"the person's edited arguments reach the server ({era})", text_of(result))
        shown = person.shown[0]
        for part in ['"everything"', "echo", "as sent", "echo asks"]:
            check(part in shown, f"the form shows {part} ({era})", shown)
        try:
            await client.call_tool("everything__echo", {"text": "again"})
            check(False, f"a refusal ends the call ({era})")
        except MCPError as error:
            check("refused" in str(error), f"a refusal ends the call with an error ({era})", str(error))
        added = await client.call_tool("everything__add", {"a": 2, "b": 3})
        check("5" in text_of(added) and len(person.shown) == 2,
              f"a tool the policy allows is not asked about ({era})", (text_of(added), len(person.shown)))


async def main(binary):
    with tempfile.TemporaryDirectory() as folder:
        config = os.path.join(folder, "servers.json")
        with open(config, "w") as file:
            json.dump({"mcpServers": {"everything": {"command": binary, "args": ["serve", "everything"]}}}, file)
        settings = os.path.join(folder, "host.toml")
        with open(settings, "w") as file:
            file.write('[guard]\napprovers = ["client"]\nstore = "guard.db"\n\n'
                       '[[policy]]\ndecision = "ask"\nserver = "everything"\ntool = "echo"\n'
                       'name = "echo asks"\n')
        host, url = start_http([binary, "host", "--http", "127.0.0.1:0", "--config", config,
                                "--settings", settings])
        try:
            for mode, era in [("legacy", "2025-11-25"), ("auto", "2026-07-28")]:
                await check_era(url, mode, era)
        finally:
            host.terminate()
            host.wait(timeout=10)
    print("python sdk consent: all checks passed")


if __name__ == "__main__":
    anyio.run(main, sys.argv[1])
