"""LlamaIndex's `OpenAILike` (`llama-index-llms-openai-like`) on its defaults: `is_chat_model`
is false, so `complete` and `stream_complete` call the legacy `POST /v1/completions`."""

from __future__ import annotations


def test_complete_and_stream_complete_over_legacy_completions(llamaindex, upstream):
    with upstream:
        out = llamaindex("magistral-small")
    assert out["is_chat_model"] is False
    whole = out["complete"]
    assert "magistral-small" in whole["text"] and "Summarise the retention policy" in whole["text"], whole
    assert whole["object"] == "text_completion" and whole["model"] == "magistral-small", whole
    usage = whole["usage"]
    assert usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0, usage
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"], usage
    stream = out["stream"]
    assert stream["chunks"] > 1 and "List three colours." in stream["text"], stream
    assert stream["deltas"] == stream["text"], stream
    entries = llamaindex.journal()
    assert [(e["action"], e["status"]) for e in entries] == [("completions.create", "success")] * 2, entries
    assert [r["path"] for r in upstream.requests] == ["/v1/completions"] * 2, upstream.requests
    assert upstream.requests[1]["body"]["stream"] is True
