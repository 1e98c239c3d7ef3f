// An example router in JavaScript (componentize-qjs): teams first. The routing document (the
// `policy` setting, JSON here) may pin a team to a model:
//
//   {"teams": {"research": "qwen2.5-coder-32b"}}
//
// A request from a pinned team goes to its model while it is healthy (rule `team:<id>`); any
// other request goes to the fastest healthy model that speaks the prompt's language (observed
// p50 latency, unmeasured models last, ties by price; rule `fastest-speaker`), else to the
// cheapest healthy model (rule `cheapest-healthy`). Policy name (`X-Route-Policy`): `js-teams`.
//
// WIT → JS: records are objects with camelCase keys, `option<T>` is the value or null, and a
// `result` is returned (ok) or thrown (err, here a `rejection` record).

import host from "sovereign:policy/host@0.1.0";

const POLICY = "js-teams";

function reject(status, code, message) {
  host.log("error", message);
  return { status, code, message };
}

function documentSettings() {
  const text = host.configGet("policy");
  if (text == null || text.trim() === "") return {};
  try {
    return JSON.parse(text);
  } catch (e) {
    throw reject(500, "policy_misconfigured", `the routing document is not JSON: ${e}`);
  }
}

const cost = (m) => m.inputCostPerMtok + m.outputCostPerMtok;
const latency = (m) => (m.latencyP50Ms == null ? Infinity : m.latencyP50Ms);

function decision(model, rule) {
  return { model: model.id, fallbacks: [], rule, policy: POLICY };
}

export const router = {
  route(facts, candidates) {
    const healthy = candidates.filter((m) => m.healthy);
    const teams = documentSettings().teams ?? {};
    const pinned = teams[facts.teamId];
    if (pinned !== undefined) {
      const model = healthy.find((m) => m.id === pinned);
      if (model) return decision(model, `team:${facts.teamId}`);
      host.log("warn", `team ${facts.teamId}: pinned model ${pinned} is not available`);
    }
    const speakers = healthy
      .filter((m) => m.languages.includes(facts.language))
      .sort((a, b) => latency(a) - latency(b) || cost(a) - cost(b));
    if (speakers.length > 0) return decision(speakers[0], "fastest-speaker");
    const cheapest = [...healthy].sort((a, b) => cost(a) - cost(b))[0];
    if (cheapest) return decision(cheapest, "cheapest-healthy");
    throw reject(503, "no_healthy_model", "No model is available.");
  },
};
