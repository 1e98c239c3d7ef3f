"""LangChain's `langchain-openai`: `OpenAIEmbeddings` on its defaults (token arrays) against the
fleet's embedding model behind a guardrail that blocks card numbers, and `ChatOpenAI`."""

from __future__ import annotations


def test_embeddings_send_token_arrays_and_a_card_number_is_refused(langchain, upstream):
    with upstream:
        out = langchain("embeddings")
    assert out["check_embedding_ctx_length"] is True
    assert out["documents"] == {"count": 2, "dims": [384, 384]}, out
    assert out["query_dims"] == 384, out
    # The document with a card number: the client raised the gateway's 400, in the convention's
    # error shape, with the guardrail's code, and the number is not echoed.
    raised = out["card"]["raised"]
    assert raised is not None, "a document with a card number was embedded"
    assert raised["type"] == "BadRequestError" and raised["status"] == 400, raised
    assert raised["code"] == "pii_detected" and raised["body"]["type"] == "guardrail_violation", raised
    assert "credit_card" in raised["message"] and "4111" not in raised["message"], raised
    # LangChain sent token arrays (cl100k_base), which the gateway decoded to check; the refused
    # batch never reached a model.
    embeds = [r for r in upstream.requests if r["path"] == "/v1/embeddings"]
    assert len(embeds) == 2, upstream.requests
    for r in embeds:
        assert all(isinstance(doc, list) and all(isinstance(t, int) for t in doc) for doc in r["body"]["input"]), r
    entries = langchain.journal()
    assert [(e["action"], e["status"]) for e in entries] == [
        ("embeddings", "success"), ("embeddings", "success"), ("embeddings", "blocked")], entries


def test_chat_invoke_and_stream_report_usage(langchain, upstream):
    with upstream:
        out = langchain("chat", "allam-7b-instruct")
    invoke = out["invoke"]
    assert "allam-7b-instruct" in invoke["text"] and invoke["model_name"] == "allam-7b-instruct", invoke
    assert invoke["usage"]["input_tokens"] > 0 and invoke["usage"]["output_tokens"] > 0, invoke
    # On its defaults, with a custom base URL LangChain leaves `stream_options` off (not every
    # endpoint supports it), and the gateway follows the convention: no usage chunk unasked.
    assert out["stream_usage_default"] is None
    plain = out["stream"]
    assert plain["chunks"] > 1 and "Name three rivers." in plain["text"] and plain["finish_reason"] == "stop", plain
    assert plain["usage"] is None, plain
    # `stream_usage=True` (LangChain's switch for it): the usage chunk arrives.
    counted = out["stream_usage"]
    assert counted["text"] == plain["text"] and counted["finish_reason"] == "stop", counted
    usage = counted["usage"]
    assert usage["input_tokens"] > 0 and usage["output_tokens"] > 0, usage
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"], usage
    entries = langchain.journal()
    assert [(e["action"], e["status"]) for e in entries] == [("chat.completions", "success")] * 3, entries


def test_with_structured_output(langchain, upstream):
    with upstream:
        out = langchain("structured", "qwen2.5-coder-32b")
    assert out["type"] == "Retention", out
    assert isinstance(out["value"]["policy"], str) and isinstance(out["value"]["years"], int), out
    [chat] = upstream.requests
    assert chat["body"]["response_format"]["type"] == "json_schema", chat
