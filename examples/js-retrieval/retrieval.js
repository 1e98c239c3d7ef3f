// An example retrieval policy in JavaScript (componentize-qjs): the same rules as
// examples/rust-retrieval. A document classified above the caller's clearance never leaves the
// gateway; among the rest, the highest `newest_first` metadata value comes first.
//
// Settings (the `settings` given at upload, JSON):
//
//   {"levels": ["public", "internal", "confidential", "secret"],
//    "clearance": {"identity:records-bot": "confidential", "key:key_42": "secret",
//                  "team:team_ops": "internal", "role:admin": "secret"},
//    "default": "public", "newest_first": "version"}
//
// The caller's clearance is the first entry found for its certificate identity, key, team, role,
// else `default`, else the lowest level. A document without `classification` is at the lowest
// level; an unknown classification is above every clearance.
//
// WIT → JS: records are objects with camelCase keys (`teamId`, `keyId`, `documentId`, `chunkId`
// is a BigInt); `metadata` is JSON text; `result<selection, rejection>` returns the selection
// (`{keep: [indices], rule}`) or throws a rejection `{status, code, message}` (the query is
// refused with that status). Build with `scripts/build-examples js-retrieval`.

import host from "sovereign:policy/host@0.1.0";

const DEFAULT_LEVELS = ["public", "internal", "confidential", "secret"];

function settings() {
  const text = host.configGet("settings");
  return text ? JSON.parse(text) : {};
}

export const retrieval = {
  review(caller, query, candidates) {
    const s = settings();
    const levels = s.levels ?? DEFAULT_LEVELS;
    const table = s.clearance ?? {};
    const keys = [
      caller.identity != null ? `identity:${caller.identity}` : null,
      `key:${caller.keyId}`,
      `team:${caller.teamId}`,
      `role:${caller.role}`,
    ];
    const found = keys.find((k) => k !== null && typeof table[k] === "string");
    const name = found ? table[found] : s.default;
    const clearance = Math.max(0, levels.indexOf(name));
    const meta = candidates.map((c) => {
      try {
        return JSON.parse(c.metadata) ?? {};
      } catch (_) {
        return {};
      }
    });
    const level = (m) =>
      m.classification === undefined ? 0 : levels.includes(m.classification) ? levels.indexOf(m.classification) : Infinity;
    let keep = meta.map((m, i) => [m, i]).filter(([m]) => level(m) <= clearance).map(([, i]) => i);
    if (s.newest_first) {
      const v = (i) => {
        const x = Number(meta[i][s.newest_first]);
        return Number.isFinite(x) ? x : -Infinity;
      };
      keep = keep.slice().sort((a, b) => v(b) - v(a)); // stable: equal versions keep the ranking
    }
    return { keep, rule: "js-clearance" };
  },
};
