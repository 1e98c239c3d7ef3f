"""LlamaIndex's `OpenAILike` on its defaults (`is_chat_model=False`: the legacy
`POST /v1/completions`), pointed at the gateway with `api_base` and `api_key`. Prints
`RESULT {json}`.

usage: llamaindex_driver.py MODEL
"""

import json
import os
import sys

from llama_index.llms.openai_like import OpenAILike


def main(model: str) -> dict:
    llm = OpenAILike(model=model, api_base=os.environ["GATEWAY_URL"], api_key=os.environ["GATEWAY_KEY"])
    whole = llm.complete("Summarise the retention policy in one sentence.")
    chunks = list(llm.stream_complete("List three colours."))
    raw = whole.raw.model_dump() if hasattr(whole.raw, "model_dump") else whole.raw
    return {
        "is_chat_model": llm.metadata.is_chat_model,
        "complete": {"text": whole.text, "object": raw.get("object"), "model": raw.get("model"),
                     "usage": raw.get("usage")},
        "stream": {"chunks": len(chunks), "text": chunks[-1].text if chunks else "",
                   "deltas": "".join(c.delta or "" for c in chunks)},
    }


if __name__ == "__main__":
    print("RESULT " + json.dumps(main(sys.argv[1])))
