// Documents: the team's library (list; upload and delete for admins — the API gives those to
// members and admins), and a retrieval box that shows the citations and the confidence.

import { del, call, get, post } from '../api.js';
import { badge, busy, dangerButton, h, load, notice, num, show, table, text, time, values } from '../ui.js';

function uploadForm(refresh) {
  const out = h('div');
  const form = h('form.inline#document-form',
    h('label', 'File (PDF, DOCX, text)', h('input', { name: 'file', type: 'file', required: true })),
    h('label', 'Collection', h('input', { name: 'collection', dir: 'auto', placeholder: 'default' })),
    h('label', 'Metadata (JSON object)', h('input', { name: 'metadata', dir: 'auto', placeholder: '{"lang": "ar"}' })),
    h('button', { type: 'submit' }, 'Upload'));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    busy(form.querySelector('button'), async () => {
      const fd = new FormData();
      const v = values(form);
      fd.append('file', form.elements.file.files[0]);
      if (v.collection) fd.append('collection', v.collection);
      if (v.metadata) fd.append('metadata', v.metadata);
      const doc = await call('POST', '/v1/documents/upload?wait=true', { form: fd });
      form.reset();
      show(out, notice('ok', [text(doc.filename), ` uploaded: ${doc.chunks} chunks in ${doc.collection}.`]));
      refresh();
    }, out);
  });
  return h('section.card', h('h2', 'Upload'), form, out);
}

async function list(collection, canWrite, refresh, status) {
  const page = await get('/v1/documents', { collection, limit: 100, order: 'desc' });
  return table([
    { title: 'File', cell: (d) => text(d.filename) },
    { title: 'Collection', cell: (d) => text(d.collection) },
    { title: 'Kind', cell: (d) => d.kind },
    { title: 'Pages', cell: (d) => num(d.pages) },
    { title: 'Chunks', cell: (d) => num(d.chunks) },
    { title: 'Status', cell: (d) => badge(d.status) },
    { title: 'Uploaded', cell: (d) => time(d.created_at) },
    { title: 'sha256', cell: (d) => h('span.mono', d.sha256.slice(0, 12), '…') },
    { title: '', cell: (d) => (canWrite ? dangerButton('Delete', 'Confirm delete', async () => {
      try { await del(`/v1/documents/${encodeURIComponent(d.id)}`); show(status, notice('ok', [text(d.filename), ' deleted.'])); } catch (e) { show(status, notice('error', e.message)); }
      refresh();
    }, { 'data-action': 'delete', 'data-document': d.id }) : '') },
  ], page.data, { id: 'documents-table', empty: 'No document in this collection.' });
}

function queryBox() {
  const out = h('div#rag-result');
  const form = h('form.stack#rag-form',
    h('label', 'Question', h('textarea', { name: 'query', rows: 2, dir: 'auto', required: true })),
    h('div.row',
      h('label', 'Collection', h('input', { name: 'collection', dir: 'auto', placeholder: 'all' })),
      h('label', 'Top k', h('input', { name: 'top_k', type: 'number', min: '1', max: '50', value: '5' })),
      h('button', { type: 'submit' }, 'Search')));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    busy(form.querySelector('button'), async () => {
      const v = values(form);
      const r = await post('/v1/rag/query', { query: v.query, collection: v.collection, top_k: Number(v.top_k || 5) });
      show(out,
        h('p', 'Confidence ', h('b#rag-confidence', r.confidence.toFixed(2)), ` · ${r.citations.length} citations · model ${r.model}`),
        r.citations.map((c, i) => h('blockquote.card', { dir: 'auto' },
          h('div.muted', `[${i + 1}] `, text(c.filename), ` · page ${c.page ?? '—'} · ¶ ${c.paragraph} · score ${c.score.toFixed(3)} · confidence ${c.confidence.toFixed(2)}`),
          h('p', { dir: 'auto' }, c.text))));
    }, out);
  });
  return h('section.card', h('h2', 'Try a retrieval query'), form, out);
}

export default {
  title: 'Documents',
  roles: ['admin', 'auditor'],
  render(container, { isAdmin }) {
    const listBox = h('div');
    const status = h('div');
    const filter = h('form.inline', h('label', 'Collection', h('input', { name: 'collection', dir: 'auto', placeholder: 'all' })), h('button.secondary', { type: 'submit' }, 'Show'));
    const refresh = () => load(listBox, () => list(values(filter).collection, isAdmin, refresh, status));
    filter.addEventListener('submit', (e) => { e.preventDefault(); refresh(); });
    show(container, h('h1', 'Documents'),
      isAdmin ? uploadForm(refresh) : h('p.muted', 'Read-only: uploading, deleting and querying documents need a member or admin key.'),
      h('section.card', h('h2', 'Library'), filter, status, listBox),
      isAdmin ? queryBox() : '');
    refresh();
  },
};
