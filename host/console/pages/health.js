// Models & health (admin, auditor): every configured model with its region, locality, circuit
// breaker and the last 15 minutes' requests, error rate, latency and time to first token; and
// per-minute charts of latency, error rate and TTFT (all models, or one). This replica's view,
// from its in-memory ring (`GET /v1/admin/models`, `GET /v1/admin/traffic`); Prometheus has the
// fleet's.

import { get } from '../api.js';
import { lineChart } from '../chart.js';
import { badge, h, load, num, show, table, values } from '../ui.js';

const WINDOWS = [15, 60, 180, 360];

const hhmm = (t) => new Date(t * 1000).toISOString().slice(11, 16);
const pct = (v) => (v === null || v === undefined ? '—' : `${(100 * v).toFixed(1)} %`);
const ms = (v) => (v === null || v === undefined ? '—' : `${v < 10 ? v.toFixed(1) : Math.round(v)} ms`);
const msFormat = (v) => (v >= 1000 ? `${+(v / 1000).toFixed(1)}s` : `${+v.toFixed(0)}ms`);

function modelsTable(models) {
  return table([
    { title: 'Model', cell: (m) => h('span.mono', m.id) },
    { title: 'Kind', cell: (m) => m.kind },
    { title: 'Region', cell: (m) => m.region },
    { title: 'Where', cell: (m) => (m.local ? 'local' : 'remote') },
    { title: 'Breaker', cell: (m) => badge(m.breaker) },
    { title: 'In rotation', cell: (m) => (m.in_rotation ? 'yes' : 'no') },
    { title: 'Requests', cell: (m) => num(m.requests) },
    { title: 'Error rate', cell: (m) => pct(m.error_rate) },
    { title: 'Latency p50 / p95', cell: (m) => `${ms(m.latency_ms.p50)} / ${ms(m.latency_ms.p95)}` },
    { title: 'TTFT p95', cell: (m) => ms(m.ttft_ms.p95) },
    { title: 'Fallbacks', cell: (m) => (m.fallbacks.length ? m.fallbacks.join(', ') : '—') },
  ], models, { id: 'models-table', empty: 'No models are configured.' });
}

async function charts({ model, minutes }) {
  const t = await get('/v1/admin/traffic', { model, minutes });
  const labels = t.data.map((d) => hhmm(d.minute));
  const line = (name, f) => ({ name, values: t.data.map(f) });
  const rate = (n) => (d) => (d.requests ? n(d) / d.requests : null);
  return [
    h('p.muted#traffic-note', `${model || 'All models'}, the last ${minutes} minutes on replica ${t.replica}: `,
      `${num(t.total.requests)} requests, ${pct(t.total.error_rate)} errors, p95 latency ${ms(t.total.latency_ms.p95)}, p95 time to first token ${ms(t.total.ttft_ms.p95)}.`),
    h('div.grid#traffic-charts',
      lineChart({ id: 'chart-latency', title: 'Latency per minute (p50, p95)', labels, format: msFormat, series: [line('p50', (d) => d.latency_ms.p50), line('p95', (d) => d.latency_ms.p95)] }),
      lineChart({ id: 'chart-errors', title: 'Error rate per minute (4xx, 5xx)', labels, format: (v) => `${+(100 * v).toFixed(1)}%`, series: [line('4xx', rate((d) => d.client_errors)), line('5xx', rate((d) => d.server_errors))] }),
      lineChart({ id: 'chart-ttft', title: 'Time to first token per minute (p50, p95; streams)', labels, format: msFormat, series: [line('p50', (d) => d.ttft_ms.p50), line('p95', (d) => d.ttft_ms.p95)] })),
  ];
}

export default {
  title: 'Models & health',
  roles: ['admin', 'auditor'],
  render(container) {
    const list = h('div', h('p.muted', 'Loading…'));
    const out = h('div');
    const modelField = h('select#traffic-model', { name: 'model' }, h('option', { value: '' }, 'All models'));
    const form = h('form.inline#traffic-form',
      h('label', 'Model', modelField),
      h('label', 'Window', h('select', { name: 'minutes' }, WINDOWS.map((n) => h('option', { value: n, selected: n === 60 }, `last ${n} minutes`)))),
      h('button', { type: 'submit' }, 'Show'));
    const run = () => { const v = values(form); load(out, () => charts({ model: v.model, minutes: Number(v.minutes || 60) })); };
    form.addEventListener('submit', (e) => { e.preventDefault(); run(); });
    load(list, async () => {
      const models = await get('/v1/admin/models');
      for (const m of models.data) modelField.append(h('option', { value: m.id }, m.id));
      return [h('p.muted', `Each model as replica ${models.replica} sees it now; figures over the last ${models.minutes} minutes.`), modelsTable(models.data)];
    });
    show(container, h('h1', 'Models & health'),
      h('section.card', h('h2', 'Models'), list),
      h('section.card', h('h2', 'Traffic'), form, out));
    run();
  },
};
