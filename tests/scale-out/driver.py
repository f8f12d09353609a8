"""The scale-out rig's checks, black-box over processes and sockets: three
MCP instances on one Redis behind nginx (round-robin, no affinity).

Usage: driver.py --mcp PATH_TO_MCP --mode serve|host --work DIR
                 --expected-failures FILE

Each case prints `ok CASE` or `FAIL CASE: why`. Cases named in the
expected-failures file (`CASE reason`, one a line) must fail; one that
passes fails the run, so the list only shrinks. Any other failure fails
the run. Every wait is bounded."""

import argparse
import asyncio
import json
import subprocess
import sys
import time
import traceback
import warnings

import anyio
import mcp_types as types
from mcp import Client

import wire
from rig import Rig

# The SDK warns of each legacy method it is asked for; the checks call
# them on purpose.
warnings.filterwarnings("ignore", message=r".*(deprecated|removed) as of 2026")

CASE_SECONDS = 60
EVENTS = 1200


def check(condition, what):
    if not condition:
        raise AssertionError(what)


def spread(rig, since, session=None):
    """The instances that answered the requests logged by nginx from byte
    `since` on (of one session if given): {upstream: count}."""
    entries, _ = rig.access_entries(since)
    counts = {}
    for entry in entries:
        if session is not None and session not in (entry["session"], entry["new_session"]):
            continue
        if entry["upstream"]:
            counts[entry["upstream"]] = counts.get(entry["upstream"], 0) + 1
    return counts


def busiest_session(rig, since):
    entries, _ = rig.access_entries(since)
    counts = {}
    for entry in entries:
        if entry["session"]:
            counts[entry["session"]] = counts.get(entry["session"], 0) + 1
    check(counts, "nginx logged no request of a session")
    return max(counts, key=counts.get)


async def every_call(client, modern):
    """Every kind of call, each checked."""
    tools = [t.name for t in (await client.list_tools()).tools]
    check("echo" in tools and "update_watched_resource" in tools, f"tools/list: {tools[:5]}...")
    echo = await client.call_tool("echo", {"text": "through nginx"})
    check(echo.content[0].text == "through nginx", f"tools/call echo: {echo}")
    calc = await client.call_tool("calculate", {"expression": "6*7"})
    check(calc.content[0].text == "42", f"tools/call calculate: {calc}")
    resources = [str(r.uri) for r in (await client.list_resources()).resources]
    check("test://static-text" in resources, f"resources/list: {resources}")
    read = await client.read_resource("test://static-text")
    check("static text resource" in read.contents[0].text, f"resources/read: {read}")
    templates = (await client.list_resource_templates()).resource_templates
    check(any("template" in t.uri_template for t in templates), f"resources/templates/list: {templates}")
    templated = await client.read_resource("test://template/7/data")
    check('"7"' in templated.contents[0].text, f"templated read: {templated}")
    prompts = [p.name for p in (await client.list_prompts()).prompts]
    check("test_prompt_with_arguments" in prompts, f"prompts/list: {prompts}")
    prompt = await client.get_prompt("test_prompt_with_arguments", {"arg1": "x", "arg2": "y"})
    check("arg1='x'" in prompt.messages[0].content.text, f"prompts/get: {prompt}")
    completion = await client.complete(types.PromptReference(type="ref/prompt", name="test_prompt_with_arguments"),
                                       {"name": "arg1", "value": "te"})
    check("test" in completion.completion.values, f"completion/complete: {completion}")
    if not modern:
        # Neither is part of the modern era (2026-07-28).
        await client.set_logging_level("info")
        await client.send_ping()


async def sdk_calls(rig, era):
    """The official Python SDK client makes every kind of call through
    nginx; in the legacy era its session's requests land on several
    instances."""
    _, since = rig.access_entries()
    mode = "legacy" if era == "legacy" else "auto"
    async with Client(rig.url, mode=mode, read_timeout_seconds=30) as client:
        want = "2026-07-28" if era == "modern" else wire.LEGACY
        check(client.protocol_version == want, f"protocol {client.protocol_version}, not {want}")
        for _ in range(2):
            await every_call(client, era == "modern")
    await asyncio.sleep(0.2)
    if era == "legacy":
        session = busiest_session(rig, since)
        counts = spread(rig, since, session)
    else:
        counts = spread(rig, since)
    print(f"  requests per instance ({era}): {json.dumps(counts)}")
    check(len(counts) == rig.count, f"the requests reached {len(counts)} of {rig.count} instances")


def run_mcp(rig, *args, timeout=60):
    done = subprocess.run([rig.mcp, *args], capture_output=True, text=True, timeout=timeout)
    return done.returncode, done.stdout, done.stderr


async def cli_calls(rig, era):
    """Our own client (`mcp call`, `mcp tools`, ...) through nginx."""
    s = ["--server", rig.url, "--era", era]

    def ok(*args):
        code, out, err = run_mcp(rig, *args)
        check(code == 0, f"mcp {' '.join(args)}: exit {code}: {err.strip()}")
        return out

    def result(method, params="{}"):
        return json.loads(ok("call", *s, method, params))

    _, since = rig.access_entries()
    check("update_watched_resource" in ok("tools", *s), "mcp tools lists the tools")
    check(result("tools/call", json.dumps({"name": "echo", "arguments": {"text": "cli"}}))["content"][0]["text"] == "cli",
          "tools/call echo")
    check(ok("tool", *s, "calculate", "expression=6*7").strip() == "42", "mcp tool calculate")
    check(any(r["uri"] == "test://static-text" for r in result("resources/list")["resources"]), "resources/list")
    check("static text" in ok("read", *s, "test://static-text"), "mcp read")
    check(result("resources/templates/list")["resourceTemplates"], "resources/templates/list")
    check("test_prompt_with_arguments" in ok("prompts", *s), "mcp prompts")
    check("arg1='x'" in ok("prompt", *s, "test_prompt_with_arguments", "arg1=x", "arg2=y"), "mcp prompt")
    values = result("completion/complete", json.dumps({
        "ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
        "argument": {"name": "arg1", "value": "te"}}))["completion"]["values"]
    check("test" in values, f"completion/complete: {values}")
    if era == "legacy":
        result("logging/setLevel", '{"level": "info"}')
        result("ping")
    await asyncio.sleep(0.2)
    counts = spread(rig, since)
    print(f"  requests per instance (mcp CLI, {era}): {json.dumps(counts)}")
    check(len(counts) == rig.count, f"the requests reached {len(counts)} of {rig.count} instances")


def stream_instance(response, rig):
    upstream = response.headers.get("x-upstream", "")
    # After a failed try nginx names every upstream it tried; the last answered.
    upstream = upstream.split(",")[-1].strip()
    return rig.upstream_index(upstream)


async def sse_resume_after_sigkill(rig):
    """A GET stream cut by SIGKILL of its instance resumes through nginx on
    another with Last-Event-ID: every resources/updated (one per tool call
    through nginx, 1,200 in all) arrives once."""
    async with wire.client() as http:
        subscriber = await wire.Session(http, rig.url).initialize()
        await subscriber.call("resources/subscribe", {"uri": "test://watched-resource"})
        producer = await wire.Session(http, rig.url).initialize()
        seen_ids, updates = set(), 0
        duplicates = 0
        last_id = None

        async def produce(count):
            queue = asyncio.Queue()
            for _ in range(count):
                queue.put_nowait(None)

            async def worker():
                while not queue.empty():
                    queue.get_nowait()
                    await producer.call("tools/call", {"name": "update_watched_resource", "arguments": {}})
            await asyncio.gather(*(worker() for _ in range(8)))

        async def read(response, until, deadline):
            nonlocal updates, duplicates, last_id
            try:
                async for event in wire.events(response):
                    if event["id"]:
                        if event["id"] in seen_ids:
                            duplicates += 1
                        seen_ids.add(event["id"])
                        last_id = event["id"]
                    if event["data"]:
                        message = json.loads(event["data"])
                        if message.get("method") == "notifications/resources/updated":
                            updates += 1
                    if updates >= until or time.monotonic() > deadline:
                        return True
            except (wire.httpx.ReadError, wire.httpx.RemoteProtocolError, wire.httpx.ReadTimeout):
                return False
            return False

        async def read_until(response, until, deadline):
            try:
                return await asyncio.wait_for(read(response, until, deadline),
                                              max(0.1, deadline - time.monotonic()))
            except asyncio.TimeoutError:
                return False

        stream = await subscriber.listen()
        victim = stream_instance(stream, rig)
        print(f"  the stream is on instance {victim} ({rig.upstream(victim)})")
        first = EVENTS // 3
        await produce(first)
        # Read part of it, and leave the rest unread when the instance dies.
        await read_until(stream, first // 2, time.monotonic() + 10)
        read_before = updates
        rig.kill_instance(victim)
        await stream.aclose()
        await produce(EVENTS - first)
        deadline = time.monotonic() + 15
        resumes = 0
        while updates < EVENTS and time.monotonic() < deadline:
            resumes += 1
            check(last_id, "no event id to resume from")
            stream = await subscriber.listen(last_event_id=last_id)
            check(stream_instance(stream, rig) != victim, "resumed on the dead instance")
            await read_until(stream, EVENTS, deadline)
            await stream.aclose()
        rig.start_instance(victim)
        print(f"  {read_before} updates read before the kill, {updates} in all after {resumes} resume(s); "
              f"{duplicates} repeated ids")
        check(duplicates == 0, f"{duplicates} events repeated")
        check(updates == EVENTS, f"{updates} of {EVENTS} resources/updated arrived")


async def read_answer(response, id, deadline, first_id=False):
    """Reads a request's SSE stream until the answer to `id`, the stream's
    end, or `deadline` (or, with `first_id`, the first event with an id):
    (the answer or None, the last event id, the methods of the
    notifications before it)."""
    answer, last_id, notes = None, None, []

    async def read():
        nonlocal answer, last_id
        async for event in wire.events(response):
            if event["id"]:
                last_id = event["id"]
                if first_id:
                    return
            if event["data"]:
                message = json.loads(event["data"])
                if message.get("id") == id and "method" not in message:
                    answer = message
                    return
                if "method" in message:
                    notes.append(message["method"])

    try:
        await asyncio.wait_for(read(), max(0.1, deadline - time.monotonic()))
    except (asyncio.TimeoutError, wire.httpx.ReadError, wire.httpx.RemoteProtocolError):
        pass
    return answer, last_id, notes


async def call_resumed_after_sigkill(rig):
    """A call whose instance is killed mid-call ends within a bounded time:
    its stream, resumed through nginx on another instance with
    Last-Event-ID, delivers a JSON-RPC error for it, rather than ending
    without an answer again and again."""
    async with wire.client() as http:
        session = await wire.Session(http, rig.url).initialize()
        call = {"jsonrpc": "2.0", "id": 77, "method": "tools/call",
                "params": {"name": "test_tool_slow", "arguments": {"durationMs": 60000},
                           "_meta": {"progressToken": "slow"}}}
        response = await session.post(call, stream=True)
        check(response.status_code == 200, f"tools/call answered {response.status_code}")
        victim = stream_instance(response, rig)
        _, last_id, _ = await read_answer(response, 77, time.monotonic() + 10, first_id=True)
        check(last_id, "the call's stream carried no event id to resume from")
        rig.kill_instance(victim)
        await response.aclose()
        deadline = time.monotonic() + 20
        answer, resumes = None, 0
        while answer is None and time.monotonic() < deadline:
            resumes += 1
            stream = await session.listen(last_event_id=last_id)
            check(stream_instance(stream, rig) != victim, "resumed on the dead instance")
            answer, resumed_id, _ = await read_answer(stream, 77, deadline)
            last_id = resumed_id or last_id
            await stream.aclose()
        check(answer is not None, f"no answer to the call in 20 s, after {resumes} resumption(s)")
        check("error" in answer, f"the call was answered with no error: {answer}")
        print(f"  after {resumes} resumption(s): {json.dumps(answer)[:200]}")


async def call_resumed_elsewhere_while_running(rig):
    """A call whose stream is resumed on another instance while its own
    instance still runs it is not answered there with an error: it is
    answered, once done, on its own instance."""
    async with wire.client() as http:
        session = await wire.Session(http, rig.url).initialize()
        call = {"jsonrpc": "2.0", "id": 78, "method": "tools/call",
                "params": {"name": "test_tool_slow", "arguments": {"durationMs": 1500},
                           "_meta": {"progressToken": "slow"}}}
        response = await session.post(call, url=rig.instance_url(0), stream=True)
        check(response.status_code == 200, f"tools/call answered {response.status_code}")
        _, last_id, _ = await read_answer(response, 78, time.monotonic() + 10, first_id=True)
        check(last_id, "the call's stream carried no event id to resume from")
        await response.aclose()
        elsewhere = await session.listen(url=rig.instance_url(1), last_event_id=last_id)
        answer, _, _ = await read_answer(elsewhere, 78, time.monotonic() + 5)
        await elsewhere.aclose()
        check(answer is None, f"answered on another instance while it runs: {answer}")
        home = await session.listen(url=rig.instance_url(0), last_event_id=last_id)
        answer, _, _ = await read_answer(home, 78, time.monotonic() + 20)
        await home.aclose()
        check(answer is not None and "result" in answer, f"no result on its own instance: {answer}")


async def progress_after_redis_restart(rig):
    """After Redis restarts, a new session's call on every instance
    streams its progress notifications and its result."""
    async with wire.client() as http:
        rig.stop_redis()
        rig.start_redis()
        deadline = time.monotonic() + 20
        for i in range(rig.count):
            while True:
                try:
                    session = await wire.Session(http, rig.instance_url(i)).initialize()
                    break
                except AssertionError:
                    check(time.monotonic() < deadline, f"instance {i}: no new session 20 s after Redis came back")
                    await asyncio.sleep(0.2)
            call = {"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                    "params": {"name": "test_tool_with_progress", "arguments": {},
                               "_meta": {"progressToken": f"p{i}"}}}
            response = await session.post(call, stream=True)
            check(response.status_code == 200, f"instance {i}: tools/call answered {response.status_code}")
            answer, _, notes = await read_answer(response, 5, time.monotonic() + 30)
            await response.aclose()
            progress = notes.count("notifications/progress")
            check(answer is not None and "result" in answer, f"instance {i}: no result within 30 s: {answer}")
            check(progress == 3, f"instance {i}: {progress} of 3 progress notifications ({notes})")


async def resources_updated_across_instances(rig):
    """resources/updated raised on instance 1 (by another session) reaches
    a subscriber whose stream is on instance 0."""
    async with wire.client() as http:
        a, b = rig.instance_url(0), rig.instance_url(1)
        subscriber = await wire.Session(http, a).initialize()
        await subscriber.call("resources/subscribe", {"uri": "test://watched-resource"})
        stream = await subscriber.listen()
        other = await wire.Session(http, b).initialize()

        async def first_update():
            async for event in wire.events(stream):
                if event["data"] and json.loads(event["data"]).get("method") == "notifications/resources/updated":
                    return json.loads(event["data"])
        # The other instances hear of the subscription through Redis, not
        # at once (a host then subscribes its own upstream): the change is
        # made again until an update arrives, for at most 10 s.
        waiting = asyncio.ensure_future(first_update())
        deadline = time.monotonic() + 10
        while not waiting.done() and time.monotonic() < deadline:
            await other.call("tools/call", {"name": "update_watched_resource", "arguments": {}})
            await asyncio.wait([waiting], timeout=0.5)
        if waiting.done():
            update = waiting.result()
        else:
            waiting.cancel()
            update = None
        await stream.aclose()
        check(update is not None, "no resources/updated within 10 s on the stream of instance 0")
        check(update["params"]["uri"] == "test://watched-resource", f"{update}")


async def resources_updated_across_instances_modern(rig):
    """Modern era: a subscriptions/listen stream on instance 0 hears of a
    change made by a (stateless) tool call on instance 1."""
    async with wire.client() as http:
        uri = "test://watched-resource"
        listen = wire.modern("listen-1", "subscriptions/listen",
                             {"notifications": {"resourceSubscriptions": [uri]}})
        stream = await wire.post_modern(http, rig.instance_url(0), listen, stream=True)
        check(stream.status_code == 200, f"subscriptions/listen answered {stream.status_code}")
        messages = wire.events(stream)

        async def next_method(method):
            async for event in messages:
                if event["data"] and json.loads(event["data"]).get("method") == method:
                    return json.loads(event["data"])
        update = None
        try:
            acknowledged = await asyncio.wait_for(next_method("notifications/subscriptions/acknowledged"), 10)
            check(acknowledged is not None, "the listen stream ended unacknowledged")
            # The other instances hear of the subscription through Redis,
            # not at once: the change is made again until an update
            # arrives, for at most 10 s.
            waiting = asyncio.ensure_future(next_method("notifications/resources/updated"))
            deadline = time.monotonic() + 10
            n = 0
            while not waiting.done() and time.monotonic() < deadline:
                n += 1
                called = await wire.post_modern(http, rig.instance_url(1), wire.modern(
                    n, "tools/call", {"name": "update_watched_resource", "arguments": {}}))
                body = await wire.reply(called)
                check(called.status_code == 200 and "result" in body, f"tools/call on instance 1: {body}")
                await asyncio.wait([waiting], timeout=0.5)
            if waiting.done():
                update = waiting.result()
            else:
                waiting.cancel()
        finally:
            await stream.aclose()
        check(update is not None, "no resources/updated within 10 s on the listen stream of instance 0")
        check(update["params"]["uri"] == uri, f"{update}")
        check(update["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "listen-1", f"{update}")


async def elicitation_answer_elsewhere(rig):
    """A tool's elicitation/create comes on instance 0's POST stream; the
    client's answer is POSTed to instance 1; the tool's result follows on
    instance 0's stream."""
    async with wire.client() as http:
        a, b = rig.instance_url(0), rig.instance_url(1)
        session = await wire.Session(http, a, {"elicitation": {}}).initialize()
        response = await session.post({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {
            "name": "test_elicitation", "arguments": {"message": "who are you?"}}}, stream=True)
        check(response.status_code == 200, f"tools/call answered {response.status_code}")
        messages = wire.events(response)

        async def next_message():
            async for event in messages:
                if event["data"]:
                    return json.loads(event["data"])
        ask = await asyncio.wait_for(next_message(), 10)
        check(ask and ask.get("method") == "elicitation/create", f"not an elicitation: {ask}")
        answer = {"jsonrpc": "2.0", "id": ask["id"], "result": {
            "action": "accept", "content": {"username": "ada", "email": "ada@example.com"}}}
        posted = await session.post(answer, url=b)
        await posted.aread()
        check(posted.status_code == 202, f"the answer POSTed to instance 1 got {posted.status_code}: {posted.text}")
        try:
            result = await asyncio.wait_for(next_message(), 10)
        except asyncio.TimeoutError:
            result = None
        await response.aclose()
        check(result is not None and result.get("id") == 9, f"no tool result within 10 s: {result}")
        text = result["result"]["content"][0]["text"]
        check("accept" in text and "ada" in text, f"result: {text}")


async def elicitation_modern_retry_elsewhere(rig):
    """Modern era: input_required, then the retry (with the answer and the
    requestState) on another instance (round-robin through nginx: each
    request goes to the next instance)."""
    asked = []

    async def on_elicit(context, params):
        asked.append(params)
        return types.ElicitResult(action="accept", content={"name": "ada"})

    async with Client(rig.url, mode="auto", elicitation_callback=on_elicit, read_timeout_seconds=30) as client:
        check(client.protocol_version == "2026-07-28", f"protocol {client.protocol_version}")
        for _ in range(3):
            result = await client.call_tool("test_input_required_result_elicitation", {})
            check(not result.is_error, f"result: {result}")
            check("ada" in result.content[0].text, f"result: {result.content[0].text}")
    check(len(asked) == 3, f"asked {len(asked)} times")


async def tasks_across_instances(rig):
    """A legacy session's task started on instance 0 is followed on
    instance 1, its result awaited on instance 2, and listed through nginx
    (behind `mcp host`, a task of the upstream's 2026-07-28 extension,
    bridged by the host)."""
    async with wire.client() as http:
        session = await wire.Session(http, rig.url).initialize()
        started = await session.call("tools/call", {
            "name": "slow_compute", "arguments": {"seconds": 1, "label": "rig"}, "task": {"ttl": 60000}},
            url=rig.instance_url(0))
        task = started["task"]["taskId"]
        got = await session.call("tasks/get", {"taskId": task}, url=rig.instance_url(1))
        check(got["taskId"] == task, f"tasks/get on instance 1: {got}")
        result = await session.call("tasks/result", {"taskId": task}, url=rig.instance_url(2))
        check(result["content"][0]["text"] == "rig: computed in 1 s", f"tasks/result on instance 2: {result}")
        listed = await session.call("tasks/list")
        check([t["taskId"] for t in listed["tasks"]] == [task], f"tasks/list: {listed}")


async def tasks_across_instances_modern(rig):
    """A 2026-07-28 task started on instance 0 is polled on the others
    until it completes."""
    tasks = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
    async with wire.client() as http:
        call = wire.modern(1, "tools/call", {"name": "slow_compute", "arguments": {
            "seconds": 1, "label": "rig"}}, capabilities=tasks)
        body = await wire.reply(await wire.post_modern(http, rig.instance_url(0), call))
        check(body.get("result", {}).get("resultType") == "task", f"not a task: {body}")
        task = body["result"]["taskId"]
        deadline = time.monotonic() + 20
        n = 0
        while True:
            n += 1
            get = wire.modern(2, "tasks/get", {"taskId": task}, capabilities=tasks)
            got = await wire.reply(await wire.post_modern(http, rig.instance_url(1 + n % 2), get))
            check(got.get("result", {}).get("taskId") == task, f"tasks/get on instance {1 + n % 2}: {got}")
            if got["result"]["status"] == "completed":
                text = got["result"]["result"]["content"][0]["text"]
                check(text == "rig: computed in 1 s", f"result: {got}")
                break
            check(time.monotonic() < deadline, f"not completed within 20 s: {got}")
            await asyncio.sleep(0.2)


async def redis_restart(rig):
    """Redis down: clear 503s with JSON-RPC errors (and a clear error from
    our client); Redis back, empty, on the same port: new sessions work on
    every instance without restarting them."""
    async with wire.client() as http:
        session = await wire.Session(http, rig.url).initialize()
        await session.call("tools/list")
        rig.stop_redis()
        for _ in range(rig.count):
            status, body, _ = await session.request("tools/list")
            check(status == 503 and "error" in body, f"with Redis down tools/list answered {status}: {body}")
        print(f"  Redis down: {status} {json.dumps(body)[:160]}")
        fresh = wire.Session(http, rig.url)
        response = await fresh.post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": wire.LEGACY, "capabilities": {}, "clientInfo": {"name": "rig", "version": "1"}}})
        body = await wire.reply(response)
        check(response.status_code == 503 and "error" in body, f"initialize answered {response.status_code}: {body}")
        code, _, err = run_mcp(rig, "call", "--server", rig.url, "--era", "legacy", "--timeout", "10", "ping")
        check(code != 0 and err.strip(), "mcp call succeeded with Redis down")
        print(f"  mcp call with Redis down: {err.strip().splitlines()[-1][:160]}")
        rig.start_redis()
        deadline = time.monotonic() + 20
        while True:
            try:
                fresh = await wire.Session(http, rig.url).initialize()
                break
            except AssertionError:
                check(time.monotonic() < deadline, "no new session 20 s after Redis came back")
                await asyncio.sleep(0.2)
        for i in range(rig.count):
            result = await fresh.call("tools/call", {"name": "echo", "arguments": {"text": f"on {i}"}},
                                      url=rig.instance_url(i))
            check(result["content"][0]["text"] == f"on {i}", f"instance {i}: {result}")
    async with Client(rig.url, mode="legacy", read_timeout_seconds=30) as client:
        await every_call(client, False)


def cases(rig):
    return [
        ("sdk-calls-legacy", lambda: sdk_calls(rig, "legacy")),
        ("sdk-calls-modern", lambda: sdk_calls(rig, "modern")),
        ("cli-calls-legacy", lambda: cli_calls(rig, "legacy")),
        ("cli-calls-modern", lambda: cli_calls(rig, "modern")),
        ("sse-resume-after-sigkill", lambda: sse_resume_after_sigkill(rig)),
        ("resources-updated-across-instances", lambda: resources_updated_across_instances(rig)),
        ("resources-updated-across-instances-modern", lambda: resources_updated_across_instances_modern(rig)),
        ("elicitation-answer-elsewhere", lambda: elicitation_answer_elsewhere(rig)),
        ("elicitation-modern-retry-elsewhere", lambda: elicitation_modern_retry_elsewhere(rig)),
        ("tasks-across-instances", lambda: tasks_across_instances(rig)),
        ("tasks-across-instances-modern", lambda: tasks_across_instances_modern(rig)),
        ("redis-restart", lambda: redis_restart(rig)),
        ("call-resumed-after-sigkill", lambda: call_resumed_after_sigkill(rig)),
        ("call-resumed-elsewhere-while-running", lambda: call_resumed_elsewhere_while_running(rig)),
        ("progress-after-redis-restart", lambda: progress_after_redis_restart(rig)),
    ]


def read_expected(path):
    expected = {}
    for line in open(path):
        line = line.strip()
        if line and not line.startswith("#"):
            name, _, reason = line.partition(" ")
            expected[name] = reason.strip()
    return expected


def describe(error):
    if isinstance(error, BaseExceptionGroup):
        return "; ".join(describe(e) for e in error.exceptions)
    if isinstance(error, (asyncio.TimeoutError, TimeoutError)):
        return f"no answer within {CASE_SECONDS} s"
    return f"{type(error).__name__}: {error}".strip()


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mcp", required=True)
    parser.add_argument("--mode", choices=["serve", "host"], required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--expected-failures", required=True)
    parser.add_argument("--only", action="append", default=[])
    args = parser.parse_args()
    expected = read_expected(args.expected_failures)
    rig = Rig(args.mcp, args.mode, args.work)
    problems = []
    try:
        rig.start()
        print(f"{args.mode}: nginx on {rig.nginx_port}, instances on {rig.ports}, Redis on {rig.redis_port}")
        for name, run in cases(rig):
            full = f"{args.mode}/{name}"
            if args.only and name not in args.only:
                continue
            started = time.monotonic()
            try:
                await asyncio.wait_for(run(), CASE_SECONDS)
                error = None
            except Exception as e:  # noqa: BLE001 - every failure is reported
                error = describe(e)
                if not isinstance(e, AssertionError):
                    traceback.print_exc(limit=3, file=sys.stdout)
            finally:
                for i, process in enumerate(rig.instances):
                    if process.poll() is not None:
                        rig.start_instance(i)
                if rig.redis.poll() is not None:
                    rig.start_redis()
            took = f"{time.monotonic() - started:.1f}s"
            if error is None and full in expected:
                print(f"UNEXPECTED PASS {full} ({took}): remove it from the expected failures")
                problems.append(full)
            elif error is None:
                print(f"ok {full} ({took})")
            elif full in expected:
                print(f"expected failure {full} ({took}): {error}\n  (listed: {expected[full]})")
            else:
                print(f"FAIL {full} ({took}): {error}")
                problems.append(full)
    finally:
        rig.close()
    if problems:
        print(f"{args.mode}: {len(problems)} problem(s): {', '.join(problems)}; logs in {args.work}")
        return 1
    print(f"{args.mode}: every case as expected")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
