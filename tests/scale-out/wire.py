"""Raw Streamable HTTP for the checks the SDK client does not expose:
JSON-RPC requests on a legacy session, and SSE streams read event by event
(with their ids, to resume with Last-Event-ID)."""

import json

import httpx

LEGACY = "2025-11-25"
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


class Session:
    """A legacy (initialize) session, over any URL: nginx or one instance."""

    def __init__(self, http, url, capabilities=None):
        self.http, self.url, self.id = http, url, None
        self.capabilities = capabilities or {}
        self.next_id = 0

    def headers(self, **extra):
        headers = dict(HEADERS, **{"mcp-protocol-version": LEGACY})
        if self.id:
            headers["mcp-session-id"] = self.id
        headers.update(extra)
        return headers

    async def initialize(self):
        response = await self.post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": LEGACY, "capabilities": self.capabilities,
            "clientInfo": {"name": "scale-out-rig", "version": "1"}}})
        body = await reply(response)
        if response.status_code != 200 or "result" not in body:
            raise AssertionError(f"initialize answered {response.status_code}: {body}")
        self.id = response.headers["mcp-session-id"]
        done = await self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        if done.status_code != 202:
            raise AssertionError(f"notifications/initialized answered {done.status_code}")
        return self

    async def post(self, message, url=None, stream=False):
        request = self.http.build_request("POST", url or self.url, headers=self.headers(),
                                          content=json.dumps(message))
        return await self.http.send(request, stream=stream)

    async def request(self, method, params=None, url=None):
        """One request; its status, its JSON-RPC answer and the response."""
        self.next_id += 1
        response = await self.post({"jsonrpc": "2.0", "id": self.next_id, "method": method,
                                    "params": params or {}}, url=url)
        return response.status_code, await reply(response), response

    async def call(self, method, params=None, url=None):
        """One request that must succeed: its result."""
        status, body, _ = await self.request(method, params, url)
        if status != 200 or "result" not in body:
            raise AssertionError(f"{method} answered {status}: {body}")
        return body["result"]

    async def listen(self, url=None, last_event_id=None):
        """The session's GET stream, open (status checked)."""
        extra = {"accept": "text/event-stream"}
        if last_event_id:
            extra["last-event-id"] = last_event_id
        request = self.http.build_request("GET", url or self.url, headers=self.headers(**extra))
        response = await self.http.send(request, stream=True)
        if response.status_code != 200:
            await response.aread()
            raise AssertionError(f"GET stream answered {response.status_code}: {response.text}")
        return response


MODERN = "2026-07-28"


def modern(id, method, params=None, capabilities=None):
    """A 2026-07-28 request: stateless, the client's identity in `_meta`."""
    params = dict(params or {})
    params["_meta"] = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": capabilities or {},
        "io.modelcontextprotocol/clientInfo": {"name": "scale-out-rig", "version": "1"},
    }
    return {"jsonrpc": "2.0", "id": id, "method": method, "params": params}


async def post_modern(http, url, message, stream=False):
    """POSTs a 2026-07-28 request with the headers that era wants."""
    headers = dict(HEADERS, **{"mcp-protocol-version": MODERN, "mcp-method": message["method"]})
    if message["method"] == "tools/call":
        headers["mcp-name"] = message["params"]["name"]
    elif "taskId" in message.get("params", {}):
        headers["mcp-name"] = message["params"]["taskId"]
    request = http.build_request("POST", url, headers=headers, content=json.dumps(message))
    return await http.send(request, stream=stream)


async def reply(response):
    """The JSON-RPC message of a response, JSON or one SSE stream's last
    message ({} when there is none)."""
    if response.status_code == 202:
        return {}
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        last = {}
        async for event in events(response):
            if event["data"]:
                last = json.loads(event["data"])
        return last
    text = (await response.aread()).decode()
    try:
        return json.loads(text) if text else {}
    except ValueError:
        return {"text": text}


async def events(response):
    """The SSE events of a streamed response: {"id", "data"} each."""
    event = {"id": None, "data": ""}
    async for line in response.aiter_lines():
        if line == "":
            if event["data"] or event["id"]:
                yield event
            event = {"id": None, "data": ""}
        elif line.startswith(":"):
            continue
        else:
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "id":
                event["id"] = value
            elif field == "data":
                event["data"] = event["data"] + "\n" + value if event["data"] else value


def client():
    return httpx.AsyncClient(timeout=httpx.Timeout(30.0, read=30.0),
                             limits=httpx.Limits(max_connections=64))
