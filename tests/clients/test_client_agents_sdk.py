"""The OpenAI Agents SDK (`openai-agents`) on its default model provider, the Responses API:
an agent with a function tool, `Runner.run_sync` and `Runner.run_streamed`, a second turn
both ways the SDK offers (the history as input items, `previous_response_id`), structured output.
The simulator answers a request offering tools with a call to the first tool, then echoes the
tool's output: the tool ran, and its result is in the final output."""

from __future__ import annotations

import json

RESULT = "Order SOV-4417 ships on Tuesday."


def assert_tool_turn(turn: dict, requests: int = 2):
    assert turn["items"] == ["tool_call_item", "tool_call_output_item", "message_output_item"], turn
    assert RESULT in turn["final_output"], turn
    assert len(turn["responses"]) == requests and all(r.startswith("resp_") for r in turn["responses"]), turn
    usage = turn["usage"]
    assert usage["requests"] == requests and usage["input_tokens"] > 0 and usage["output_tokens"] > 0, usage
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"], usage


def test_run_sync_with_a_function_tool_through_auto_router(agents, upstream):
    with upstream:
        out = agents("run", "auto-router")
    # The tool ran (the simulated model called it with its answer as `text`), and the final
    # answer carries what the tool returned.
    assert len(out["tool_calls"]) == 2 and "Where is my order?" in out["tool_calls"][0], out
    assert_tool_turn(out["first"])
    # Second turn: `to_input_list()` (the first turn's items, ids and all) plus a user message.
    assert_tool_turn(out["second"])
    assert "Thanks! And the invoice?" in out["tool_calls"][1], out
    # Every call was the Responses API, and the gateway served all four.
    entries = agents.journal()
    assert [(e["action"], e["status"]) for e in entries] == [("responses.create", "success")] * 4, entries
    # Upstream: chat completions carrying the tool, its call, the tool's result; the second
    # turn's history reached the model.
    chats = [r for r in upstream.requests if r["path"] == "/v1/chat/completions"]
    assert len(chats) == 4, upstream.requests
    assert chats[0]["body"]["tools"][0]["function"]["name"] == "look_up_order"
    assert [m["role"] for m in chats[1]["body"]["messages"]] == ["system", "user", "assistant", "tool"]
    assert chats[1]["body"]["messages"][-1]["content"] == RESULT
    second = json.dumps(chats[2]["body"]["messages"], ensure_ascii=False)
    assert "Where is my order?" in second and RESULT in second and "Thanks! And the invoice?" in second


def test_run_streamed_and_a_turn_chained_by_previous_response_id(agents, upstream):
    with upstream:
        out = agents("stream", "qwen2.5-coder-32b")
    for turn in (out["first"], out["second"]):
        assert_tool_turn(turn)
        assert {"response.created", "response.output_item.added", "response.function_call_arguments.delta",
                "response.output_text.delta", "response.completed"} <= set(turn["raw_event_types"]), turn
    entries = agents.journal()
    assert [(e["action"], e["status"]) for e in entries] == [("responses.create", "success")] * 4, entries
    # The second turn sent only its new message and `previous_response_id`: the gateway rebuilt
    # the history from its stored responses.
    chats = [r for r in upstream.requests if r["path"] == "/v1/chat/completions"]
    assert len(chats) == 4 and all(c["body"].get("stream") for c in chats), upstream.requests
    second = json.dumps(chats[2]["body"]["messages"], ensure_ascii=False)
    assert "Where is my order?" in second and RESULT in second and "Thanks! And the invoice?" in second, second


def test_structured_output_type(agents, upstream):
    with upstream:
        out = agents("structured", "magistral-small")
    assert out["output_type"] == "Retention", out
    assert isinstance(out["final_output"]["policy"], str) and isinstance(out["final_output"]["years"], int), out
    assert [e["action"] for e in agents.journal()] == ["responses.create"]
    # `text.format` became the chat convention's `response_format`.
    [chat] = upstream.requests
    assert chat["body"]["response_format"]["type"] == "json_schema", chat


def test_configured_by_environment_variables_alone(agents, gateway, keys):
    """The zero-code way: the SDK's own client reads OPENAI_BASE_URL and OPENAI_API_KEY."""
    out = agents("env", "llama-3.2-3b-instruct", env={
        "OPENAI_BASE_URL": f"{gateway.url}/v1", "OPENAI_API_KEY": keys["agents"],
        "OPENAI_AGENTS_DISABLE_TRACING": "1"})
    assert_tool_turn(out)
    assert [e["action"] for e in agents.journal()] == ["responses.create"] * 2
