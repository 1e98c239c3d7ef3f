// Usage: requests, tokens and spend per team and model over time (one usage query for the whole
// range, per UTC day: `group_by=day`), spend by key (the same rows, summed per key; key names
// from the keys list for an admin), and each team's budget burn with its thresholds marked.

import { get } from '../api.js';
import { barChart, burnChart, rankChart } from '../chart.js';
import { h, load, money, num, show, table, text, values } from '../ui.js';

const DAY = 86_400;
// The gateway's default `[budgets] thresholds` (docs/LIMITS.md); the API does not expose them.
const THRESHOLDS = [50, 80, 100];

function days(n) {
  const today = Math.floor(Date.now() / 1000 / DAY) * DAY;
  return Array.from({ length: n }, (_, i) => today - (n - 1 - i) * DAY);
}

const label = (t) => new Date(t * 1000).toISOString().slice(5, 10);

async function render(out, { team, range }, isAdmin) {
  const starts = days(range);
  const [usage, teams, keys] = await Promise.all([
    get('/v1/admin/usage', { team_id: team, from: starts[0], to: starts.at(-1) + DAY, group_by: 'day' }),
    isAdmin ? get('/v1/admin/teams') : Promise.resolve({ data: [] }),
    isAdmin ? get('/v1/admin/keys', { team_id: team }) : Promise.resolve({ data: [] }),
  ]);
  // The range's days, each with its rows (the API says which day a row is).
  const perDay = starts.map((from) => ({ data: usage.data.filter((r) => r.day === from) }));
  const currency = usage.currency ?? '';
  const names = new Map(teams.data.map((t) => [t.id, t.name]));
  const models = [...new Set(perDay.flatMap((d) => d.data.map((r) => r.model)))].sort();
  const sum = (d, model, f) => d.data.filter((r) => r.model === model).reduce((a, r) => a + f(r), 0);
  const series = (f) => models.map((m) => ({ name: m, values: perDay.map((d) => sum(d, m, f)) }));
  const labels = starts.map(label);

  const byTeam = new Map();
  for (const d of perDay) {
    for (const r of d.data) {
      const key = `${r.team_id}\u0000${r.model}`;
      const t = byTeam.get(key) || { team_id: r.team_id, model: r.model, requests: 0, tokens_in: 0, tokens_out: 0, spend: 0 };
      t.requests += r.requests; t.tokens_in += r.tokens_in; t.tokens_out += r.tokens_out; t.spend += r.spend;
      byTeam.set(key, t);
    }
  }
  const rows = [...byTeam.values()].sort((a, b) => b.spend - a.spend || b.requests - a.requests);

  // Spend by key: the range's rows summed per key, the top 10.
  const keyNames = new Map(keys.data.map((k) => [k.id, k.name ? `${k.name} (${k.prefix})` : k.id]));
  const perKey = new Map();
  for (const r of usage.data) {
    const k = perKey.get(r.key_id) || { key_id: r.key_id, team_id: r.team_id, requests: 0, spend: 0 };
    k.requests += r.requests; k.spend += r.spend;
    perKey.set(r.key_id, k);
  }
  const topKeys = [...perKey.values()].sort((a, b) => b.spend - a.spend || b.requests - a.requests).slice(0, 10);

  const burn = teams.data.filter((t) => t.spend.limit !== null && (!team || t.id === team));
  return [
    models.length ? '' : h('p.muted', 'No usage in this range.'),
    h('div.grid#usage-charts',
      barChart({ title: 'Requests per day, by model', labels, series: series((r) => r.requests) }),
      barChart({ title: 'Tokens per day (in + out), by model', labels, series: series((r) => r.tokens_in + r.tokens_out) }),
      barChart({ title: `Spend per day (${currency}), by model`, labels, series: series((r) => r.spend) })),
    h('section.card#spend-by-key', h('h2', `Spend by key (${currency}), top 10`),
      topKeys.length
        ? rankChart({ id: 'chart-spend-by-key', title: `Spend by key over the last ${range} days`, rows: topKeys.map((k) => ({ label: keyNames.get(k.key_id) ?? k.key_id, value: k.spend })), format: (v) => money(v) })
        : h('p.muted', 'No usage in this range.')),
    h('section.card', h('h2', 'Per team and model'), table([
      { title: 'Team', cell: (r) => text(names.get(r.team_id) ?? r.team_id) },
      { title: 'Model', cell: (r) => r.model },
      { title: 'Requests', cell: (r) => num(r.requests) },
      { title: 'Tokens in', cell: (r) => num(r.tokens_in) },
      { title: 'Tokens out', cell: (r) => num(r.tokens_out) },
      { title: 'Spend', cell: (r) => money(r.spend, currency) },
    ], rows, { id: 'usage-table', empty: 'No usage in this range.' })),
    h('section#budget-burn', h('h2', 'Budget burn'),
      isAdmin
        ? (burn.length
          ? burn.map((t) => burnChart({ title: t.name, spent: t.spend.spent, reserved: t.spend.reserved, limit: t.spend.limit, thresholds: THRESHOLDS, currency: t.spend.currency }))
          : h('p.muted', 'No team has a budget.'))
        : h('p.muted', 'Team budgets are read from the admin API (GET /v1/admin/teams): an auditor key sees spend, not limits.')),
  ];
}

export default {
  title: 'Usage',
  roles: ['admin', 'auditor'],
  render(container, { isAdmin }) {
    const out = h('div');
    const teamField = isAdmin
      ? h('select#usage-team', { name: 'team' }, h('option', { value: '' }, 'All teams'))
      : h('input#usage-team', { name: 'team', placeholder: 'your team id (optional)' });
    const form = h('form.inline#usage-form',
      h('label', 'Team', teamField),
      h('label', 'Range', h('select', { name: 'range' }, [7, 14, 30].map((n) => h('option', { value: n }, `last ${n} days`)))),
      h('button', { type: 'submit' }, 'Show'));
    const run = () => { const v = values(form); load(out, () => render(out, { team: v.team, range: Number(v.range || 7) }, isAdmin)); };
    form.addEventListener('submit', (e) => { e.preventDefault(); run(); });
    if (isAdmin) {
      get('/v1/admin/teams').then((teams) => {
        for (const t of teams.data) teamField.append(h('option', { value: t.id, dir: 'auto' }, t.name));
      }).catch(() => {});
    }
    show(container, h('h1', 'Usage'), h('section.card', form), out);
    run();
  },
};
