// Journal: search and filter entries (time, team, actor, model, status), newest first unless asked
// otherwise, one entry with its hashes and residency evidence (below the list, which keeps every
// column in view), verification (the server's report for admins; an export verified in this
// browser for everyone), and exports as CSV / JSONL.

import { call, get, post } from '../api.js';
import { verifyExport } from '../verify.js';
import { badge, busy, download, h, instant, notice, num, show, table, text, values } from '../ui.js';

const STATUSES = ['', 'success', 'blocked', 'rejected', 'error'];

function query(form) {
  const v = values(form);
  const q = {};
  for (const k of ['team_id', 'actor_id', 'model', 'action', 'request_id', 'status', 'order']) if (v[k]) q[k] = v[k];
  if (v.from) q.from = instant(v.from);
  if (v.to) q.to = instant(v.to);
  return q;
}

/** A value clipped to its column (the whole of it on hover). */
const clip = (node, whole) => { node.classList.add('clip'); if (whole) node.title = whole; return node; };

/** Integer micro-units → the amount, exactly: 42 → "0.000042". */
const micros = (m) => `${Math.floor(m / 1e6)}.${String(m % 1e6).padStart(6, '0')}`;

function detail(e) {
  const rows = [
    ['Sequence', e.seq], ['Time', e.timestamp], ['Request id', e.request_id], ['Action', e.action],
    ['Status', badge(e.status)], ['Team', text(e.team_id)], ['Actor', text(e.actor_id, '.actor')], ['Key', e.key_id],
    ['Authentication', e.auth ?? 'key'], ['Client certificate (sha256)', e.cert_sha256 ?? '—'],
    ['Model', e.model ?? '—'], ['Routing policy', e.routing_policy ?? '—'],
    ['Residency boundary', e.residency_boundary ?? '—'], ['Replica', e.replica ?? '—'],
    ['Prompt hash', h('span.mono', e.prompt_hash ?? '—')],
    ['Tokens (prompt / completion)', `${num(e.prompt_tokens)} / ${num(e.completion_tokens)}`],
    // Present when the entry carries the charge (its durable record; docs/JOURNAL.md).
    ...(e.charges?.length ? [['Charged', e.charges.map((c) => `${c.model}: ${num(c.tokens_in)} in / ${num(c.tokens_out)} out, ${micros(c.spend_micros)}`).join('; ')]] : []),
    ['Latency', `${(e.latency_us / 1000).toFixed(1)} ms`],
    ['Previous hash', h('span.mono', e.prev_hash)], ['Journal hash', h('span.mono', e.journal_hash)],
  ];
  return h('section.card#entry-detail', h('h2', `Entry ${e.seq}`),
    h('dl.kv', rows.flatMap(([k, v]) => [h('dt', k), h('dd', { dir: 'auto' }, v)])),
    h('p.muted', 'Residency evidence: the boundary the request was held to and the policy that routed it are inside the hashed entry; the journal hash chains it to every earlier entry.'));
}

function verifyPanel(isAdmin) {
  const out = h('div#verify-result', { role: 'status' });
  const server = h('button#verify-server', { type: 'button' }, 'Verify on the server');
  server.addEventListener('click', () => busy(server, async () => {
    const r = await get('/v1/admin/journal/verify');
    show(out, notice(r.ok ? 'ok' : 'error', r.ok ? `OK — the journal verifies (${r.chains.map((c) => `${c.sovereign_id}: ${num(c.entries)} entries, head ${c.head_seq}, ${c.checkpoints_checked} checkpoints`).join('; ')}).` : 'FAILED — the journal does not verify.'),
      h('pre.report', r.report));
  }, out));
  const offline = h('button.secondary#verify-offline', { type: 'button' }, 'Verify an export in this browser');
  offline.addEventListener('click', () => busy(offline, async () => {
    // A fresh checkpoint first, then the list, then the export: every checkpoint's seq is in it.
    await post('/v1/admin/journal/checkpoints');
    const checkpoints = (await get('/v1/admin/journal/checkpoints')).data;
    const res = await call('POST', '/v1/activity/logs', { json: { format: 'jsonl' }, raw: true });
    const sovereignId = res.headers.get('x-sovereign-id');
    const r = await verifyExport(await res.text(), checkpoints, sovereignId);
    show(out, notice(r.ok ? 'ok' : 'error', r.ok
      ? `OK — ${num(r.entries)} entries (seq ${r.first_seq}–${r.head_seq}, ${r.gaps} gaps) recomputed in this browser; ${r.checkpoints_checked} signed checkpoints matched (signatures ${r.signatures}).`
      : `FAILED — line ${r.problem.line ?? '—'}, seq ${r.problem.seq ?? '—'}: ${r.problem.reason}`));
  }, out));
  return h('section.card', h('h2', 'Verification'),
    h('div.row', isAdmin ? server : '', offline),
    h('p.muted', 'In-browser verification creates a signed checkpoint, downloads the whole chain as JSON Lines and checks every hash, link and checkpoint signature with WebCrypto — without trusting the server’s own report.'),
    out);
}

export default {
  title: 'Journal',
  roles: ['admin', 'auditor'],
  render(container, { isAdmin }) {
    const results = h('div');
    const entry = h('div');
    const status = h('div');
    const form = h('form.inline#journal-form',
      h('label', 'From (UTC)', h('input', { name: 'from', type: 'datetime-local' })),
      h('label', 'To (UTC)', h('input', { name: 'to', type: 'datetime-local' })),
      h('label', 'Team id', h('input#journal-team', { name: 'team_id', dir: 'auto', list: 'journal-teams' })),
      h('datalist#journal-teams'),
      h('label', 'Actor', h('input#journal-actor', { name: 'actor_id', dir: 'auto' })),
      h('label', 'Model', h('input#journal-model', { name: 'model' })),
      h('label', 'Status', h('select#journal-status', { name: 'status' }, STATUSES.map((s) => h('option', { value: s }, s || 'any')))),
      h('label', 'Action', h('input', { name: 'action', placeholder: 'chat.completions' })),
      h('label', 'Request id', h('input', { name: 'request_id' })),
      h('label', 'Order', h('select#journal-order', { name: 'order' }, h('option', { value: 'desc' }, 'newest first'), h('option', { value: 'asc' }, 'oldest first'))),
      h('button#journal-search', { type: 'submit' }, 'Search'),
      h('button.secondary#export-csv', { type: 'button' }, 'Export CSV'),
      h('button.secondary#export-jsonl', { type: 'button' }, 'Export JSONL'));

    // Only the latest search is shown: the page's first listing (every team's entries) must not
    // land over a filtered search asked while it was on its way.
    let latest = 0;
    async function search(cursor, pages = []) {
      const mine = ++latest;
      const q = { ...query(form), limit: 50 };
      if (cursor) q.cursor = cursor;
      try {
        const page = await post('/v1/activity/logs', q);
        if (mine !== latest) return;
        show(entry);
        // Long values (ids, actors, actions) are clipped to their column, whole on hover and in
        // the opened entry, so Policy, Status and Tokens stay in view at 1,400 px.
        const list = table([
          { title: 'Seq', cell: (e) => e.seq },
          { title: 'Time (UTC)', cell: (e) => h('span.nowrap', { title: e.timestamp }, e.timestamp.slice(5, 19).replace('T', ' ')) },
          { title: 'Team', cell: (e) => clip(text(e.team_id), e.team_id) },
          { title: 'Actor', cell: (e) => clip(text(e.actor_id, '.actor'), e.actor_id) },
          { title: 'Action', cell: (e) => clip(h('span', e.action), e.action) },
          { title: 'Model', cell: (e) => clip(h('span', e.model ?? '—'), e.model) },
          { title: 'Policy', cell: (e) => clip(h('span', e.routing_policy ?? '—'), e.routing_policy) },
          { title: 'Status', cell: (e) => badge(e.status) },
          { title: 'Tokens', cell: (e) => (e.prompt_tokens === null ? '—' : `${e.prompt_tokens} + ${e.completion_tokens ?? 0}`) },
        ], page.data, {
          id: 'journal-table',
          empty: 'No entry matches.',
          onRow: (e, tr) => {
            for (const r of tr.parentNode.children) r.classList.remove('selected');
            tr.classList.add('selected');
            show(entry, detail(e));
            entry.scrollIntoView({ block: 'nearest' });
          },
        });
        const nav = h('div.row',
          pages.length ? h('button.secondary', { type: 'button', on: { click: () => search(pages.at(-1), pages.slice(0, -1)) } }, 'Previous page') : '',
          page.next_cursor ? h('button.secondary#journal-next', { type: 'button', on: { click: () => search(page.next_cursor, [...pages, cursor]) } }, 'Next page') : '');
        show(results, list, nav);
      } catch (e) {
        if (mine === latest) show(results, notice('error', e.message));
      }
    }

    async function exportAs(format, button) {
      await busy(button, async () => {
        const res = await call('POST', '/v1/activity/logs', { json: { ...query(form), format }, raw: true });
        download(`journal-${new Date().toISOString().slice(0, 19).replace(/:/g, '')}.${format}`, await res.blob());
        show(status, notice('ok', `Exported as ${format.toUpperCase()}.`));
      }, status);
    }

    form.addEventListener('submit', (e) => { e.preventDefault(); search(); });
    form.querySelector('#export-csv').addEventListener('click', (e) => exportAs('csv', e.currentTarget));
    form.querySelector('#export-jsonl').addEventListener('click', (e) => exportAs('jsonl', e.currentTarget));
    if (isAdmin) {
      get('/v1/admin/teams').then((t) => {
        form.querySelector('#journal-teams').replaceChildren(...t.data.map((x) => h('option', { value: x.id }, x.name)));
      }).catch(() => {});
    }
    show(container, h('h1', 'Journal'), h('section.card', form, status), verifyPanel(isAdmin), results, entry);
    search();
  },
};
