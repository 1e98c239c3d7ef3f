"""The Messages stream invariants (issue 45), checked on every streamed Messages test, whether the
gateway translated a chat stream or relayed a native one, and on the recorded streams of the client
libraries and Claude Code in tests/clients: the bugs peers shipped (LiteLLM
#32357, #13373, #25321, #24176; `../shared/MCP-AND-MESSAGES.md` §5) each fail one assertion here.

- exactly one `message_start`, first, with non-zero input usage;
- every event's `type` is its `event:` name;
- blocks started in index order (0, 1, 2, …), one open at a time; every delta inside the started,
  not yet stopped block, of a kind that block takes;
- a thinking block has a `signature_delta` before its stop;
- a tool block whose input was streamed: the concatenated `partial_json` parses to an object,
  never `{}`;
- no block left open; `message_delta` (with a stop reason) right before `message_stop`, last —
  unless the stream ended with an `error` event.
"""

from __future__ import annotations

import json

import httpx

DELTA_BLOCK = {"text_delta": "text", "input_json_delta": "tool_use", "thinking_delta": "thinking",
               "signature_delta": "thinking"}


def check_stream(events: list[tuple[str, dict]]) -> dict:
    """Asserts the invariants; returns the blocks as a client rebuilds them (`blocks`, each with
    its `input` parsed from the streamed fragments and `fragments`, their count) and the
    `message_start` and `message_delta` payloads."""
    names = [e for e, _ in events]
    assert names.count("message_start") == 1 and names[0] == "message_start", names
    start = events[0][1]["message"]
    assert start["usage"]["input_tokens"] > 0, "message_start with zero input usage"
    for name, data in events:
        assert data["type"] == name, (name, data)
    open_index, next_index, blocks = None, 0, {}
    for name, data in events:
        if name == "content_block_start":
            assert open_index is None, f"block {data['index']} started inside block {open_index}"
            assert data["index"] == next_index, f"block {data['index']} started, {next_index} expected"
            open_index, next_index = data["index"], next_index + 1
            blocks[open_index] = {**data["content_block"], "partial": "", "fragments": 0}
        elif name == "content_block_delta":
            assert open_index is not None and data["index"] == open_index, \
                f"a delta for block {data['index']} while {open_index} is open"
            d, block = data["delta"], blocks[open_index]
            assert DELTA_BLOCK.get(d["type"]) == block["type"], (d, block["type"])
            if d["type"] == "text_delta":
                block["text"] += d["text"]
            elif d["type"] == "input_json_delta":
                block["partial"] += d["partial_json"]
                block["fragments"] += 1
            elif d["type"] == "thinking_delta":
                block["thinking"] += d["thinking"]
            elif d["type"] == "signature_delta":
                block["signature"] = d["signature"]
        elif name == "content_block_stop":
            assert data["index"] == open_index, f"stop of block {data['index']} while {open_index} is open"
            block = blocks[open_index]
            if block["type"] == "tool_use" and block["partial"]:
                block["input"] = json.loads(block["partial"])
                assert isinstance(block["input"], dict) and block["input"] != {}, \
                    "streamed arguments ended as {}"
            if block["type"] == "thinking":
                assert block.get("signature"), "a thinking block stopped without its signature"
            open_index = None
        elif name in ("message_delta", "message_stop"):
            assert open_index is None, f"{name} while block {open_index} is open"
    assert open_index is None, "a block never stopped"
    if "error" not in names:
        delta = names.index("message_delta")
        assert names[delta + 1:] == ["message_stop"], names
        assert events[delta][1]["delta"]["stop_reason"] is not None
    return {"blocks": [blocks[i] for i in sorted(blocks)], "start": start,
            "delta": next((d for n, d in events if n == "message_delta"), None)}


def raw_events(http_client: httpx.Client, body: dict, headers: dict | None = None,
               path: str = "/v1/messages") -> list[tuple[str, dict]]:
    """A streamed Messages request's named events, in order."""
    events, name = [], None
    with http_client.stream("POST", path, json=body, headers=headers or {}) as r:
        assert r.status_code == 200, r.read()
        assert r.headers["content-type"].startswith("text/event-stream")
        for line in r.iter_lines():
            if line.startswith("event: "):
                name = line[len("event: "):]
            elif line.startswith("data: "):
                events.append((name, json.loads(line[len("data: "):])))
    return events


def checked(http_client: httpx.Client, body: dict, headers: dict | None = None) -> dict:
    """`raw_events`, then `check_stream`."""
    return check_stream(raw_events(http_client, body, headers))
