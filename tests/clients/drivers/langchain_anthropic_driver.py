"""LangChain's `ChatAnthropic` (`langchain-anthropic`) pointed at the gateway with `base_url` and
`api_key`, otherwise on its defaults, in one process: invoke, stream, and
tools (`bind_tools`, then the tool's result sent back as a `ToolMessage`), plainly and streamed.
Prints `RESULT {json}`.

usage: langchain_anthropic_driver.py MODEL   (GATEWAY_URL: the gateway's root, no /v1)
"""

import json
import os
import sys

from langchain_anthropic import ChatAnthropic
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import tool

URL, KEY = os.environ["GATEWAY_URL"], os.environ["GATEWAY_KEY"]
RESULT = "Order SOV-4417 ships on Tuesday."


@tool
def look_up_order(text: str) -> str:
    """Looks up the order the customer is asking about."""
    return RESULT


def usage(message) -> dict | None:
    return dict(message.usage_metadata) if message.usage_metadata else None


def main(model: str) -> dict:
    llm = ChatAnthropic(model=model, base_url=URL, api_key=KEY, max_retries=0, timeout=20)
    out = {}
    whole = llm.invoke("What is the capital of France?")
    out["invoke"] = {"text": whole.content, "usage": usage(whole),
                     "model_name": whole.response_metadata.get("model_name"),
                     "stop_reason": whole.response_metadata.get("stop_reason")}
    total, chunks = None, 0
    for chunk in llm.stream("Name three rivers."):
        total = chunk if total is None else total + chunk
        chunks += 1
    out["stream"] = {"chunks": chunks, "text": total.text, "usage": usage(total),
                     "stop_reason": total.response_metadata.get("stop_reason")}

    with_tools = llm.bind_tools([look_up_order])
    for name, streamed in [("tools", False), ("stream_tools", True)]:
        history = [HumanMessage("Where is my order?")]
        if streamed:
            first = None
            for chunk in with_tools.stream(history):
                first = chunk if first is None else first + chunk
        else:
            first = with_tools.invoke(history)
        calls = first.tool_calls
        history.append(first)
        for call in calls:
            history.append(ToolMessage(look_up_order.invoke(call["args"]), tool_call_id=call["id"]))
        final = with_tools.invoke(history)
        out[name] = {"calls": [{"name": c["name"], "args": c["args"]} for c in calls],
                     "first_stop": first.response_metadata.get("stop_reason"),
                     "text": final.text, "final_stop": final.response_metadata.get("stop_reason"),
                     "usage": usage(final)}
    return out


if __name__ == "__main__":
    print("RESULT " + json.dumps(main(sys.argv[1]), ensure_ascii=False))
