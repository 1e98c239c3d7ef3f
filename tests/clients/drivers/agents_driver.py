"""The OpenAI Agents SDK on its default model provider (the Responses API), pointed at the
gateway the way its docs say for another OpenAI-compatible endpoint: a default `AsyncOpenAI`
client, tracing off (nothing outside is reachable). Prints `RESULT {json}`.

usage: agents_driver.py run|stream|structured|env MODEL

- run: `Runner.run_sync` with a function tool, then a second turn the SDK's way:
  `result.to_input_list()` plus the next user message (the whole history, items with their ids).
- stream: `Runner.run_streamed` with the tool, then a second turn chained with
  `previous_response_id` (the gateway's stored responses carry the history).
- structured: an agent with `output_type` (a Pydantic model: `text.format` json_schema).
- env: no code at all to reach the gateway: the SDK's own client from `OPENAI_BASE_URL` and
  `OPENAI_API_KEY`, tracing off by `OPENAI_AGENTS_DISABLE_TRACING=1` (the caller sets them).
"""

import asyncio
import json
import os
import sys

from openai import AsyncOpenAI
from pydantic import BaseModel

from agents import Agent, Runner, function_tool, set_default_openai_client, set_tracing_disabled

calls: list[str] = []


@function_tool
def look_up_order(text: str) -> str:
    """Looks up the order the customer is asking about.

    Args:
        text: what the customer said about the order.
    """
    calls.append(text)
    return "Order SOV-4417 ships on Tuesday."


class Retention(BaseModel):
    policy: str
    years: int


def summary(result, events=()) -> dict:
    usage = result.context_wrapper.usage
    return {
        "final_output": result.final_output if isinstance(result.final_output, str)
        else result.final_output.model_dump(),
        "items": [item.type for item in result.new_items],
        "responses": [r.response_id for r in result.raw_responses],
        "usage": {"requests": usage.requests, "input_tokens": usage.input_tokens,
                  "output_tokens": usage.output_tokens, "total_tokens": usage.total_tokens},
        "raw_event_types": sorted(set(events)),
    }


async def streamed(agent, prompt, **kwargs):
    result = Runner.run_streamed(agent, prompt, **kwargs)
    events = [e.data.type async for e in result.stream_events() if e.type == "raw_response_event"]
    return summary(result, events), result


def main(mode: str, model: str) -> dict:
    if mode != "env":
        set_default_openai_client(AsyncOpenAI(base_url=os.environ["GATEWAY_URL"], api_key=os.environ["GATEWAY_KEY"]))
        set_tracing_disabled(True)
    agent = Agent(name="Support", instructions="You help customers with their orders.", model=model,
                  tools=[look_up_order])
    prompt = "Where is my order?"
    if mode == "env":
        out = summary(Runner.run_sync(agent, prompt))
    elif mode == "run":
        first = Runner.run_sync(agent, prompt)
        out = {"first": summary(first)}
        second = Runner.run_sync(agent, first.to_input_list() + [{"role": "user", "content": "Thanks! And the invoice?"}])
        out["second"] = summary(second)
    elif mode == "stream":
        async def both():
            out = {}
            out["first"], first = await streamed(agent, prompt)
            out["second"], _ = await streamed(agent, "Thanks! And the invoice?",
                                              previous_response_id=first.last_response_id)
            return out

        out = asyncio.run(both())
    else:
        agent = Agent(name="Policies", instructions="Answer from the records policy.", model=model,
                      output_type=Retention)
        result = Runner.run_sync(agent, "How long are customer records kept?")
        out = {**summary(result), "output_type": type(result.final_output).__name__}
    out["tool_calls"] = calls
    return out


if __name__ == "__main__":
    print("RESULT " + json.dumps(main(*sys.argv[1:3]), ensure_ascii=False))
