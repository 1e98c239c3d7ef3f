// An example webhook shaper in JavaScript (componentize-qjs): formats gateway events as
// Slack-style chat-ops messages, `{"text": …, "blocks": [...]}` (Slack's incoming webhooks; Mattermost
// and Rocket.Chat accept the same `text`). For example:
//
//   :warning: guardrail.violation on req-0193… — entities email, phone — request_blocked
//
// Settings (the `settings` given at upload, JSON, all optional):
//
//   {"skip": ["routing.rule"], "username": "sovereign", "icon_emoji": ":shield:"}
//
// `skip`: event kinds this target does not get (shape returns null: not delivered).
//
// WIT → JS: the `event` record is an object with camelCase keys (`requestId`, `detailsJson`,
// `teamId`, `userId`; empty strings when absent), `option<delivery>` is the delivery or null,
// headers are `[name, value]` pairs. The host signs what this returns and strips hop-by-hop,
// credential and `webhook-*` headers; a throw is a trap: the event goes to the dead-letter queue.

import host from "sovereign:policy/host@0.1.0";

function settings() {
  const text = host.configGet("settings");
  if (text == null || text.trim() === "") return {};
  // Bad settings throw: the upload's smoke call fails, so they never reach a delivery.
  return JSON.parse(text);
}

function parseDetails(text) {
  try {
    const d = JSON.parse(text);
    return d !== null && typeof d === "object" ? d : { value: d };
  } catch (_) {
    return {};
  }
}

const list = (xs) => (Array.isArray(xs) && xs.length > 0 ? xs.join(", ") : "none");
const money = (v, currency) => `${v.toFixed(2)}${currency ? " " + currency : ""}`;
const onRequest = (e) => (e.requestId ? ` on ${e.requestId}` : "");

// One line per event kind: [emoji, text after the kind].
const FORMATS = {
  "guardrail.violation": (e, d) => [
    ":warning:",
    `${onRequest(e)} — entities ${list(d.entities)} — ${d.action_taken ?? "?"}`,
  ],
  "routing.rule": (e, d) => [
    ":twisted_rightwards_arrows:",
    `${onRequest(e)} — rule ${d.rule ?? "?"} of ${d.policy ?? "?"} chose ${d.model ?? "?"}`,
  ],
  "cost.threshold": (e, d) => [
    ":moneybag:",
    ` — ${d.scope ?? "?"} ${d.scope_id ?? ""} passed ${d.threshold ?? "?"}% of its budget` +
      (typeof d.spend === "number" && typeof d.budget === "number"
        ? ` (${money(d.spend, d.currency)} of ${money(d.budget, d.currency)})`
        : ""),
  ],
  "model.fallback": (e, d) => [
    ":leftwards_arrow_with_hook:",
    `${onRequest(e)} — ${d.from ?? d.failed_model ?? "?"} failed${d.reason ? ` (${d.reason})` : ""}, ` +
      `fell back to ${d.to ?? d.model ?? "?"}`,
  ],
  "request.completed": (e, d) => [
    ":white_check_mark:",
    `${onRequest(e)} — ${d.model ?? "?"}` +
      (d.total_tokens != null ? `, ${d.total_tokens} tokens` : "") +
      (d.latency_ms != null ? `, ${d.latency_ms} ms` : "") +
      (d.status != null ? `, status ${d.status}` : ""),
  ],
};

function generic(e, d) {
  const keys = Object.keys(d).slice(0, 6);
  const summary = keys.map((k) => `${k}=${JSON.stringify(d[k])}`).join(", ");
  return [":information_source:", `${onRequest(e)}${summary ? " — " + summary : ""}`];
}

export const webhookShaper = {
  shape(e, target) {
    const s = settings();
    if (Array.isArray(s.skip) && s.skip.includes(e.kind)) return null;
    const d = parseDetails(e.detailsJson);
    const [emoji, rest] = (FORMATS[e.kind] ?? generic)(e, d);
    const text = `${emoji} ${e.kind}${rest}`;
    const context = [`at ${e.timestamp}`];
    if (e.teamId) context.push(`team ${e.teamId}`);
    if (e.userId) context.push(`user ${e.userId}`);
    const message = {
      text,
      blocks: [
        { type: "section", text: { type: "mrkdwn", text } },
        { type: "context", elements: [{ type: "mrkdwn", text: context.join(" · ") }] },
      ],
    };
    if (typeof s.username === "string") message.username = s.username;
    if (typeof s.icon_emoji === "string") message.icon_emoji = s.icon_emoji;
    return {
      body: JSON.stringify(message),
      contentType: "application/json",
      // Kept by the host: lets the receiver (or a proxy in front of it) deduplicate retries.
      headers: [["X-Sovereign-Event-Id", e.id]],
    };
  },
};
