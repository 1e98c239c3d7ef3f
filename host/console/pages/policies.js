// Policies (admin): the router's Wasm versions (upload a component or a routing document,
// activate, roll back to an earlier one), the guardrail (its component and settings) and which
// policy served recent requests (from the journal).

import { get, post } from '../api.js';
import { badge, busy, h, load, notice, num, show, table, text, time, values } from '../ui.js';

async function base64(file) {
  const bytes = new Uint8Array(await file.arrayBuffer());
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

function uploadForm(refresh) {
  const out = h('div');
  const form = h('form.stack#policy-form',
    h('div.row',
      h('label', 'Component (.wasm)', h('input', { name: 'component', type: 'file', accept: '.wasm,application/wasm' })),
      h('label', 'Pool', h('select', { name: 'pool' }, h('option', { value: 'fresh' }, 'fresh'), h('option', { value: 'warm' }, 'warm'))),
      h('label.check', h('input', { name: 'activate', type: 'checkbox', checked: true }), ' activate')),
    h('label', 'Routing document (YAML, for the built-in rules router or with a component)',
      h('textarea', { name: 'document', rows: 6, spellcheck: false, placeholder: 'name: my-policy\nroutes:\n  - name: small\n    condition: "prompt_tokens < 500"\n    model: llama-3.2-3b-instruct\ndefault: jais-30b-chat' })),
    h('button', { type: 'submit' }, 'Upload'));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    busy(form.querySelector('button[type=submit]'), async () => {
      const v = values(form);
      const body = { pool: v.pool, activate: form.elements.activate.checked };
      if (v.document) body.document = v.document;
      const file = form.elements.component.files[0];
      if (file) body.component_base64 = await base64(file);
      if (!body.document && !body.component_base64) throw new Error('Choose a component or write a routing document.');
      const version = await post('/v1/admin/policies', body);
      form.reset();
      show(out, notice('ok', `Version ${version.id} (${version.name ?? 'unnamed'}) uploaded${version.active ? ' and active' : ''}.`));
      refresh();
    }, out);
  });
  return h('section.card', h('h2', 'Upload a router version'), form, out);
}

async function versions(refresh, status) {
  const list = await get('/v1/admin/policies');
  const b = list.breaker;
  return [
    table([
      { title: 'Id', cell: (p) => h('span.mono', p.id) },
      { title: 'Name', cell: (p) => text(p.name) },
      { title: 'Kind', cell: (p) => p.kind },
      { title: 'Status', cell: (p) => badge(p.status) },
      { title: 'Origin', cell: (p) => p.origin },
      { title: 'Pool', cell: (p) => p.pool },
      { title: 'Component sha256', cell: (p) => h('span.mono', p.component_sha256.slice(0, 16), '…') },
      { title: 'Created', cell: (p) => time(p.created) },
      { title: 'Error', cell: (p) => text(p.error) },
      {
        title: '',
        cell: (p) => (p.active || p.status === 'failed' ? '' : h('button.secondary', {
          type: 'button', 'data-action': 'activate', 'data-policy': p.id,
          on: { click: (e) => busy(e.currentTarget, async () => {
            await post(`/v1/admin/policies/${encodeURIComponent(p.id)}/activate`);
            show(status, notice('ok', `${p.id} is active.`));
            refresh();
          }, status) },
        }, p.created < (list.data.find((x) => x.active)?.created ?? 0) ? 'Roll back to this' : 'Activate')),
      },
    ], list.data, { id: 'policies-table' }),
    b ? h('p.muted', `Breaker: version ${b.version}, ${b.consecutive_failures} consecutive failures, ${b.trips} trips${b.open_for_seconds ? `, open for ${b.open_for_seconds} s` : ''}.`) : '',
  ];
}

function guardrail() {
  const out = h('div');
  const body = h('div', h('p.muted', 'Loading…'));
  const refresh = () => load(body, async () => {
    const g = await get('/v1/admin/guardrail');
    let settings = g.settings ?? '';
    try { settings = JSON.stringify(JSON.parse(settings), null, 2); } catch { /* keep as text */ }
    const form = h('form.stack#guardrail-form',
      h('dl.kv', h('dt', 'World'), h('dd', g.world), h('dt', 'Component sha256'), h('dd.mono', g.component_sha256)),
      h('label', 'Settings (JSON)', h('textarea', { name: 'settings', rows: 8, spellcheck: false }, settings)),
      h('label', 'Replace the component (.wasm, optional)', h('input', { name: 'component', type: 'file', accept: '.wasm' })),
      h('button', { type: 'submit' }, 'Save guardrail'));
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      busy(form.querySelector('button'), async () => {
        const req = {};
        const text = form.elements.settings.value.trim();
        if (text) req.settings = JSON.parse(text);
        const file = form.elements.component.files[0];
        if (file) req.component_base64 = await base64(file);
        const now = await post('/v1/admin/guardrail', req);
        show(out, notice('ok', `Guardrail active (${now.component_sha256.slice(0, 16)}…).`));
      }, out);
    });
    return form;
  });
  refresh();
  return h('section.card', h('h2', 'Guardrail'), body, out);
}

/** The latest 200 routed requests (entries with a routing policy), newest first: a page of the
 * journal at a time, at most 5 pages (5,000 entries) looked at. */
async function servedBy() {
  const recent = [];
  let read = 0;
  let cursor;
  for (let pages = 0; pages < 5 && recent.length < 200; pages++) {
    const page = await post('/v1/activity/logs', { order: 'desc', limit: 1000, ...(cursor ? { cursor } : {}) });
    read += page.data.length;
    recent.push(...page.data.filter((e) => e.routing_policy !== null));
    cursor = page.next_cursor;
    if (!cursor) break;
  }
  recent.splice(200);
  const counts = new Map();
  for (const e of recent) {
    const k = `${e.routing_policy ?? '—'}\u0000${e.model ?? '—'}`;
    counts.set(k, (counts.get(k) || 0) + 1);
  }
  const rows = [...counts].map(([k, n]) => { const [policy, model] = k.split('\u0000'); return { policy, model, n }; }).sort((a, b) => b.n - a.n);
  return [
    h('p.muted#served-by-note', `The latest ${recent.length} routed requests (of the newest ${num(read)} journal entries read).`),
    table([
      { title: 'Routing policy', cell: (r) => text(r.policy) },
      { title: 'Model', cell: (r) => r.model },
      { title: 'Requests', cell: (r) => num(r.n) },
    ], rows, { id: 'served-by', empty: 'No routed request in the journal yet.' }),
  ];
}

export default {
  title: 'Policies',
  roles: ['admin'],
  render(container) {
    const list = h('div');
    const status = h('div');
    const served = h('div');
    const refresh = () => load(list, () => versions(refresh, status));
    show(container, h('h1', 'Policies'),
      h('section.card', h('h2', 'Router versions'), status, list), uploadForm(refresh),
      guardrail(),
      h('section.card', h('h2', 'Which policy served the latest 200 routed requests'), served));
    refresh();
    load(served, servedBy);
  },
};
