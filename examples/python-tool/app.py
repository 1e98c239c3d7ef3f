"""An example tool policy in Python (componentize-py): deny named tools, cap a search's result
count, and redact card numbers from every tool's results.

Settings (the `settings` given at upload, JSON, all optional):

    {"deny": ["delete_records", "drop_table"], "max_limit": 50}

`deny`: tools (their own names on the MCP server) refused with a reason the caller sees;
`max_limit`: a call whose `limit` argument is larger is rewritten to this limit. Every result's
text blocks are scanned for card numbers (13 to 19 digits, spaces or dashes between them, passing
the Luhn check); each one found becomes `[REDACTED card]`.

WIT -> Python: `call-verdict` and `result-verdict` are variants: `CallVerdict_Allow()`,
`CallVerdict_Deny(reason)`, `CallVerdict_Rewrite(arguments)`; `ResultVerdict_Pass()`,
`ResultVerdict_Redact(result)`, `ResultVerdict_Replace(result)`. Arguments and results are JSON
text. Build with `scripts/build-examples python-tool`.
"""

import json
import re

from wit_world import exports
from wit_world.exports.tool import (
    CallVerdict,
    CallVerdict_Allow,
    CallVerdict_Deny,
    CallVerdict_Rewrite,
    ResultVerdict,
    ResultVerdict_Pass,
    ResultVerdict_Redact,
    ToolCall,
)
from wit_world.imports import host

CARD = re.compile(r"\b\d(?:[ -]?\d){12,18}\b")


def settings() -> dict:
    text = host.config_get("settings")
    return json.loads(text) if text else {}


def luhn(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2 == 1:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def redact(text: str) -> str:
    def one(m: re.Match) -> str:
        digits = re.sub(r"\D", "", m.group(0))
        return "[REDACTED card]" if luhn(digits) else m.group(0)
    return CARD.sub(one, text)


class Tool(exports.Tool):
    def check_call(self, call: ToolCall) -> CallVerdict:
        conf = settings()
        if call.tool in conf.get("deny", []):
            return CallVerdict_Deny(f"the tool `{call.tool}` is not allowed for team {call.caller.team_id}")
        cap = conf.get("max_limit")
        if cap is not None:
            args = json.loads(call.arguments or "{}")
            if isinstance(args.get("limit"), int) and args["limit"] > cap:
                args["limit"] = cap
                return CallVerdict_Rewrite(json.dumps(args))
        return CallVerdict_Allow()

    def check_result(self, call: ToolCall, result: str) -> ResultVerdict:
        value = json.loads(result)
        changed = False
        for block in value.get("content", []):
            text = block.get("text")
            if isinstance(text, str):
                clean = redact(text)
                if clean != text:
                    block["text"] = clean
                    changed = True
        if not changed:
            return ResultVerdict_Pass()
        host.log(host.Level.INFO, f"redacted card numbers from {call.server}.{call.tool}")
        return ResultVerdict_Redact(json.dumps(value))
