"""LangChain's `langchain-openai` pointed at the gateway with `base_url` and `api_key`, otherwise
on its defaults. Prints `RESULT {json}`.

usage: langchain_driver.py embeddings | chat MODEL | structured MODEL

- embeddings: `OpenAIEmbeddings(model="multilingual-e5-small")`. Its defaults
  (`check_embedding_ctx_length=True`, tiktoken's cl100k_base for a model tiktoken does not know)
  send token arrays, not text. Clean documents embed; a document holding a card number is
  refused by the gateway's guardrail, and the client raises.
- chat: `ChatOpenAI` invoke, stream (on its defaults, which leave `stream_options` off for a
  custom base URL, so a stream carries no usage) and stream with `stream_usage=True`.
- structured: `ChatOpenAI.with_structured_output(PydanticModel)` (its default method,
  `json_schema`: `response_format` on chat completions).
"""

import json
import os
import sys

import openai
from langchain_openai import ChatOpenAI, OpenAIEmbeddings
from pydantic import BaseModel

URL, KEY = os.environ["GATEWAY_URL"], os.environ["GATEWAY_KEY"]

CLEAN = ["The retention period for customer records is seven years.",
         "مدة الاحتفاظ بسجلات العملاء سبع سنوات."]
CARD = "Refund the customer on card 4111 1111 1111 1111 by Friday."


def error(e: Exception) -> dict:
    body = getattr(e, "body", None)
    return {"type": type(e).__name__, "status": getattr(e, "status_code", None),
            "code": getattr(e, "code", None), "body": body if isinstance(body, (dict, list, str)) else None,
            "message": str(e)[:500]}


def embeddings() -> dict:
    emb = OpenAIEmbeddings(model="multilingual-e5-small", base_url=URL, api_key=KEY)
    out = {"check_embedding_ctx_length": emb.check_embedding_ctx_length}
    docs = emb.embed_documents(CLEAN)
    out["documents"] = {"count": len(docs), "dims": [len(v) for v in docs]}
    out["query_dims"] = len(emb.embed_query("How long are customer records kept?"))
    try:
        emb.embed_documents([CLEAN[0], CARD])
        out["card"] = {"raised": None}
    except openai.APIStatusError as e:
        out["card"] = {"raised": error(e)}
    return out


def usage(message) -> dict | None:
    return dict(message.usage_metadata) if message.usage_metadata else None


def chat(model: str) -> dict:
    llm = ChatOpenAI(model=model, base_url=URL, api_key=KEY)
    whole = llm.invoke("What is the capital of France?")
    out = {"stream_usage_default": llm.stream_usage,
           "invoke": {"text": whole.content, "usage": usage(whole),
                      "model_name": whole.response_metadata.get("model_name")}}
    for name, kwargs in [("stream", {}), ("stream_usage", {"stream_usage": True})]:
        total = None
        chunks = 0
        for chunk in llm.stream("Name three rivers.", **kwargs):
            total = chunk if total is None else total + chunk
            chunks += 1
        out[name] = {"chunks": chunks, "text": total.content, "usage": usage(total),
                     "finish_reason": total.response_metadata.get("finish_reason")}
    return out


class Retention(BaseModel):
    policy: str
    years: int


def structured(model: str) -> dict:
    llm = ChatOpenAI(model=model, base_url=URL, api_key=KEY)
    answer = llm.with_structured_output(Retention).invoke("How long are customer records kept?")
    return {"type": type(answer).__name__, "value": answer.model_dump()}


if __name__ == "__main__":
    command, *args = sys.argv[1:]
    print("RESULT " + json.dumps({"embeddings": embeddings, "chat": chat, "structured": structured}[command](*args),
                                 ensure_ascii=False))
