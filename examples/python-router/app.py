"""An example router in Python (componentize-py): prompt size first.

A short prompt (under `short_below` tokens, 200 unless the routing document says otherwise) goes to
the cheapest healthy model that speaks its language (rule `short-prompt`); a longer one to the
dearest such model, taken as the strongest (rule `long-prompt`); a language nobody speaks to the
cheapest healthy model (rule `cheapest-healthy`). The routing document (the `policy` setting) is
optional, one `key: value` per line; `name:` sets the policy name, `py-size` by default
(`X-Route-Policy`).

WIT -> Python: records are dataclasses with snake_case fields; `option<T>` is the value or None;
a `result`'s error is raised as `Err(Rejection(...))`. Build with `scripts/build-examples`.
"""

from componentize_py_types import Err
from wit_world import exports
from wit_world.exports.router import RouteDecision
from wit_world.imports import host
from wit_world.imports.types import ModelInfo, Rejection, RequestFacts


def settings() -> dict[str, str]:
    text = host.config_get("policy") or ""
    pairs = (line.split(":", 1) for line in text.splitlines() if ":" in line)
    return {k.strip(): v.strip() for k, v in pairs}


def cost(m: ModelInfo) -> float:
    return m.input_cost_per_mtok + m.output_cost_per_mtok


class Router(exports.Router):
    def route(self, facts: RequestFacts, candidates: list[ModelInfo]) -> RouteDecision:
        conf = settings()
        policy = conf.get("name", "py-size")
        try:
            short_below = int(conf.get("short_below", "200"))
        except ValueError:
            raise Err(Rejection(500, "policy_misconfigured", "short_below must be an integer"))
        healthy = [m for m in candidates if m.healthy]
        speakers = sorted((m for m in healthy if facts.language in m.languages), key=cost)
        if speakers:
            if facts.prompt_tokens < short_below:
                model, rule = speakers[0], "short-prompt"
            else:
                model, rule = speakers[-1], "long-prompt"
        elif healthy:
            model, rule = min(healthy, key=cost), "cheapest-healthy"
        else:
            raise Err(Rejection(503, "no_healthy_model", "No model is available."))
        host.log(host.Level.DEBUG, f"{facts.prompt_tokens} tokens -> {model.id} ({rule})")
        fallbacks = [m.id for m in speakers if m.id != model.id][:2]
        return RouteDecision(model=model.id, fallbacks=fallbacks, rule=rule, policy=policy)
