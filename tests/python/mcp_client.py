"""A session of the official MCP Python SDK (`mcp`) with droid-mcp against droid-sim.

    python3 mcp_client.py stdio TRUTH_LOG -- DROID_MCP ARGS...
    python3 mcp_client.py http TRUTH_LOG URL [TOKEN]

Lists the tools, observes, taps a ref and checks in the simulator's truth log that the screen
changed, types text full of shell syntax into a field and checks that the device received it
as typed, runs a short crawl to its end, pauses, resumes and stops another, reads the reports
and the resources, and sends bad calls the server must survive. Prints one JSON object: the
transcript (every call with what it answered) and the facts the Rust test checks. Exits 1 with
the reason when something is wrong.

Driven by tests/integration/mcp_server.rs; the SDK comes from tests/python/requirements.txt.
"""

import asyncio
import json
import os
import sys
import time

from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

# Typed into a field: shell syntax of every kind, no spaces (`input text` types word by word).
TYPED = "a$(reboot);b`id`|c&&d'e\"f>g<h\\i*?"
TOOLS = {"devices", "observe", "act", "crawl", "crawl_status", "crawl_control", "report"}
PACKAGE = "com.example.shop"


class Failed(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failed(message)


def truth(path):
    with open(path, encoding="utf-8") as log:
        return [json.loads(line) for line in log if line.strip()]


def shown(path):
    screens = [line["screen"] for line in truth(path) if "screen" in line]
    return screens[-1] if screens else None


def ref_of(tree, words):
    """The ref of the first tree line holding `words`."""
    for line in tree.splitlines():
        if words in line and "[ref=" in line:
            return int(line.split("[ref=")[1].split("]")[0])
    raise Failed(f"no element with {words!r} in the tree:\n{tree}")


class Session:
    def __init__(self, client, truth_log):
        self.client = client
        self.truth_log = truth_log
        self.transcript = []
        # Every answer's text, to look for what must never be in one.
        self.results = []

    async def call(self, tool, arguments=None, expect_error=False):
        result = await self.client.call_tool(tool, arguments or {})
        kinds = [block.type for block in result.content]
        self.results.append([b.text for b in result.content if b.type == "text"])
        text = next((b.text for b in result.content if b.type == "text"), "")
        entry = {
            "tool": tool,
            "arguments": arguments or {},
            "is_error": result.is_error,
            "content": kinds,
        }
        if result.is_error:
            entry["error"] = text[:300]
        self.transcript.append(entry)
        if expect_error is not None and result.is_error != expect_error:
            raise Failed(f"{tool} {arguments}: is_error={result.is_error}: {text[:500]}")
        return result, entry

    async def crawl_until_ended(self, run):
        for _ in range(600):
            result, _ = await self.call("crawl_status", {"run": run})
            status = result.structured_content["crawls"][0]
            if status["ended"]:
                return status
            await asyncio.sleep(0.2)
        raise Failed(f"crawl {run} did not end")

    async def crawl_until(self, run, state):
        for _ in range(600):
            result, _ = await self.call("crawl_status", {"run": run})
            status = result.structured_content["crawls"][0]
            if status["state"] == state or status["ended"]:
                return status
            await asyncio.sleep(0.1)
        raise Failed(f"crawl {run} never reached {state}")


async def exercise(client, truth_log):
    s = Session(client, truth_log)
    facts = {"protocol_version": client.protocol_version}

    tools = await client.list_tools()
    names = {tool.name for tool in tools.tools}
    check(TOOLS <= names, f"tools listed: {sorted(names)}")
    facts["tools"] = sorted(names)
    for tool in tools.tools:
        check(tool.input_schema.get("type") == "object", f"{tool.name}: input schema")
        check(tool.description, f"{tool.name}: no description")
    facts["output_schemas"] = sorted(t.name for t in tools.tools if t.output_schema)

    result, entry = await s.call("devices")
    devices = result.structured_content["devices"]
    check(len(devices) == 1 and devices[0]["state"] == "device", f"devices: {devices}")
    serial = devices[0]["serial"]
    result, entry = await s.call("devices", {"serial": serial})
    check(result.structured_content["chosen"] == serial, "the device chosen")
    entry["summary"] = f"{serial}: {devices[0]['model']}, Android {devices[0]['android_version']}, {devices[0]['screen_size']}"

    # Observe, then tap a ref: the simulator must show another screen.
    result, entry = await s.call("observe")
    first = result.structured_content
    check("[ref=" in first["tree"], "the tree has refs")
    check("image" in entry["content"], f"observe sent no image: {entry['content']}")
    check(not first["seen_before"], "the first screen is new")
    image = next(b for b in result.content if b.type == "image")
    check(image.mime_type == "image/png", image.mime_type)
    check(max(first["image"]["width"], first["image"]["height"]) <= 1280, first["image"])
    entry["summary"] = f"{first['package']} {first['screen_key']} ({len(first['tree'].splitlines())} tree lines)"
    before = shown(truth_log)
    app = ref_of(first["tree"], '"Demo Shop"')
    result, entry = await s.call("act", {"action": "tap", "ref": app})
    tapped = result.structured_content
    check(tapped["result"]["success"], tapped)
    check(tapped["changed"] and tapped["previous_key"] == first["screen_key"], tapped)
    after = shown(truth_log)
    check(after != before, f"the truth log still shows {before}")
    facts["tap"] = {"before": before, "after": after, "screen_key": tapped["screen_key"]}
    entry["summary"] = f"truth log: {before} -> {after}"

    # Type into a field: the device receives exactly the text, no shell runs any of it.
    result, _ = await s.call("observe")
    skip = ref_of(result.structured_content["tree"], '"Skip"')
    await s.call("act", {"action": "tap", "ref": skip})
    result, _ = await s.call("observe")
    email = ref_of(result.structured_content["tree"], 'TextInput "Email"')
    result, entry = await s.call("act", {"action": "type", "ref": email, "text": TYPED})
    check(TYPED not in json.dumps(result.structured_content), "the typed text is echoed")
    typed = "".join(line.get("text", "") for line in truth(truth_log) if line.get("input") == "text")
    check(TYPED in typed, f"the device received {typed!r}")
    facts["typed"] = typed
    entry["summary"] = "the truth log holds the text exactly as typed"

    # The server's test password: typed, never shown.
    secret = os.environ["MCP_TEST_SECRET"]
    result, _ = await s.call("observe")
    password = ref_of(result.structured_content["tree"], "#password")
    result, entry = await s.call(
        "act", {"action": "type", "ref": password, "text": "{{test_password}}"}
    )
    received = [line.get("text") for line in truth(truth_log) if line.get("input") == "text"]
    check(received[-1] == secret, f"the device received {received[-1]!r} for the password")
    result, _ = await s.call("observe")
    shown_text = json.dumps(result.structured_content)
    check(secret not in json.dumps(s.results) + shown_text, "the test password was shown")
    entry["summary"] = "the password typed; in no answer"

    # Back where the session has been: seen before.
    await s.call("act", {"action": "key", "key": "back"})
    result, entry = await s.call("act", {"action": "key", "key": "back"})
    facts["back_seen_before"] = result.structured_content["seen_before"]

    # Bad calls answer tool errors; the server goes on.
    _, entry = await s.call("act", {"action": "tap", "ref": 9999}, expect_error=True)
    check("9999" in entry["error"], entry)
    _, entry = await s.call("act", {"action": "tap"}, expect_error=True)
    _, entry = await s.call("act", {"action": "launch", "package": "no.such.app"}, expect_error=True)
    _, entry = await s.call("report", {"run": "no-such-run"}, expect_error=True)
    try:
        await client.call_tool("act", {"action": "dance"})
        s.transcript.append({"tool": "act", "arguments": {"action": "dance"}, "is_error": True})
    except Exception as error:  # an invalid argument may be a protocol error
        s.transcript.append({"tool": "act", "arguments": {"action": "dance"}, "protocol_error": str(error)[:200]})

    # A short crawl to its end, and its report.
    started = time.monotonic()
    result, entry = await s.call(
        "crawl", {"package": PACKAGE, "max_steps": 6, "decider": "heuristic"}
    )
    run = result.structured_content["run_id"]
    check(run, "the crawl has a run id")
    # The device is the crawl's while it runs (unless it ended already).
    _, busy = await s.call("act", {"action": "key", "key": "back"}, expect_error=None)
    check(not busy["is_error"] or "is crawling" in busy["error"], busy)
    ended = await s.crawl_until_ended(run)
    check(ended["status"] == "COMPLETED" and ended["step"] == 6, ended)
    facts["crawl"] = {
        "run": run,
        "status": ended["status"],
        "reason": ended["reason"],
        "steps": ended["step"],
        "screens": ended["screens"],
        "crashes": ended["crashes"],
        "seconds": round(time.monotonic() - started, 1),
    }
    result, entry = await s.call("report", {"run": run, "view": "summary"})
    summary = result.structured_content
    check(summary["run_id"] == run and run in summary["text"], summary)
    facts["report_summary_lines"] = len(summary["text"].splitlines())
    result, _ = await s.call("report", {"run": "latest", "view": "crashes"})
    check(isinstance(result.structured_content["data"], list), "crashes are a list")
    result, _ = await s.call("report", {"run": run, "view": "graph"})
    graph = result.structured_content
    check(graph["text"].startswith("digraph"), graph["text"][:80])
    facts["graph"] = {"screens": len(graph["data"]["screens"]), "transitions": len(graph["data"]["transitions"])}
    result, _ = await s.call("report", {"run": run, "view": "json"})
    check(result.structured_content["data"]["run"]["run_id"] == run, "the JSON report")

    # The runs as resources.
    resources = await client.list_resources()
    uris = [resource.uri for resource in resources.resources]
    check(f"droid://runs/{run}/report.txt" in uris, uris)
    text = await client.read_resource(f"droid://runs/{run}/report.txt")
    check(run in text.contents[0].text, "the text report resource")
    facts["resources"] = len(uris)

    # Another crawl: paused, resumed, stopped.
    result, _ = await s.call("crawl", {"package": PACKAGE, "max_steps": 200})
    run2 = result.structured_content["run_id"]
    await s.call("crawl_control", {"command": "pause", "run": run2})
    paused = await s.crawl_until(run2, "PAUSED_MANUAL")
    check(paused["state"] == "PAUSED_MANUAL", paused)
    await s.call("crawl_control", {"command": "resume", "run": run2})
    await s.crawl_until(run2, "RUNNING")
    await s.call("crawl_control", {"command": "stop", "run": run2})
    stopped = await s.crawl_until_ended(run2)
    check(stopped["reason"] == "stopped", stopped)
    facts["controlled"] = {"run": run2, "paused_at": paused["step"], "reason": stopped["reason"]}
    result, _ = await s.call("crawl_status")
    facts["crawls"] = len(result.structured_content["crawls"])
    await s.call("crawl_control", {"command": "stop", "run": run2}, expect_error=True)

    facts["calls"] = len(s.transcript)
    facts["tool_errors"] = sum(1 for e in s.transcript if e.get("is_error"))
    return {"facts": facts, "transcript": s.transcript}


async def legacy(client):
    """A client of the initialize handshake (2025-11-25 and before): the version agreed."""
    tools = await client.list_tools()
    check(TOOLS <= {t.name for t in tools.tools}, "legacy tools")
    result = await client.call_tool("observe", {})
    check(not result.is_error and result.structured_content["screen_key"], "legacy observe")
    return client.protocol_version


async def main():
    mode, truth_log = sys.argv[1], sys.argv[2]
    if mode == "stdio":
        command = sys.argv[sys.argv.index("--") + 1 :]
        server = StdioServerParameters(command=command[0], args=command[1:])
        async with Client(server) as client:
            outcome = await exercise(client, truth_log)
        async with Client(server, mode="legacy") as client:
            outcome["facts"]["legacy_protocol_version"] = await legacy(client)
        return outcome
    url = sys.argv[3]
    headers = {"Authorization": f"Bearer {sys.argv[4]}"} if len(sys.argv) > 4 else None
    async with create_mcp_http_client(headers=headers) as http:
        async with Client(streamable_http_client(url, http_client=http)) as client:
            outcome = await exercise(client, truth_log)
    async with create_mcp_http_client(headers=headers) as http:
        async with Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
            outcome["facts"]["legacy_protocol_version"] = await legacy(client)
    return outcome


def failure(error):
    """The check that failed, inside the SDK's task groups."""
    if isinstance(error, Failed):
        return error
    for inner in getattr(error, "exceptions", ()):
        found = failure(inner)
        if found:
            return found
    return None


if __name__ == "__main__":
    try:
        print(json.dumps(asyncio.run(main()), indent=1))
    except BaseException as error:
        failed = failure(error)
        if failed is None:
            raise
        print(f"mcp_client.py: {failed}", file=sys.stderr)
        sys.exit(1)
