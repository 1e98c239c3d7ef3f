// MCP servers (admin; docs/MCP.md): the upstream servers with their teams and each team's tool
// grant, their credentials named (never shown), where each was declared; register a server,
// remove one registered here (the config file's are removed there); a key's tool allowlist read,
// replaced and removed.

import { del, get, post, put } from '../api.js';
import { badge, busy, dangerButton, h, load, notice, show, table, text, values } from '../ui.js';

/** "team: tool, tool" lines → {team: [tool, …]}. */
function grants(lines) {
  const out = {};
  for (const line of (lines || '').split('\n')) {
    if (!line.trim()) continue;
    const at = line.indexOf(':');
    if (at < 1) throw new Error(`"${line.trim()}": write a team's tools as "team: tool, tool".`);
    out[line.slice(0, at).trim()] = list(line.slice(at + 1));
  }
  return out;
}

/** "Name: value" lines → {Name: value}. */
function headers(lines) {
  const out = {};
  for (const line of (lines || '').split('\n')) {
    if (!line.trim()) continue;
    const at = line.indexOf(':');
    if (at < 1) throw new Error('Write each header as "Name: value".');
    out[line.slice(0, at).trim()] = line.slice(at + 1).trim();
  }
  return out;
}

const list = (s) => (s || '').split(/[\s,]+/).map((x) => x.trim()).filter(Boolean);

/** Each granted team with its tools: "all tools" unless the server narrows the team's grant. */
const granted = (s) => h('ul.plain', s.teams.map((t) => h('li', { 'data-team': t },
  text(t), ': ', s.tools[t] ? text(s.tools[t].join(', '), '.mono') : h('span.muted', 'all tools'))));

export default {
  title: 'MCP servers',
  roles: ['admin'],
  render(container) {
    const status = h('div');
    const listBox = h('div');
    const keyBox = h('div');
    const form = h('form.inline#mcp-server-form',
      h('label', 'Name', h('input', { name: 'name', required: true, pattern: '[a-z][a-z0-9-]{0,31}', placeholder: 'records' })),
      h('label', 'URL', h('input', { name: 'url', type: 'url', required: true, placeholder: 'https://records.internal/mcp' })),
      h('label', 'Teams (ids, comma-separated)', h('input', { name: 'teams', required: true, dir: 'auto' })),
      h('label', 'Narrowed grants (one "team: tool, tool" a line; optional)', h('textarea', { name: 'tools', rows: 2, dir: 'auto' })),
      h('label', 'Bearer token (optional)', h('input', { name: 'bearer', type: 'password', autocomplete: 'off' })),
      h('label', 'Headers (one "Name: value" a line; optional)', h('textarea', { name: 'headers', rows: 2, autocomplete: 'off' })),
      h('button', { type: 'submit' }, 'Register'));
    const keyForm = h('form.inline#mcp-key-form',
      h('label', 'Key id', h('input', { name: 'key_id', required: true, placeholder: 'key_…' })),
      h('button.secondary', { type: 'button', 'data-action': 'load-key', on: { click: (e) => busy(e.currentTarget, () => showKey(), status) } }, 'Show'),
      h('label', 'Allowed tools (<server>__<tool> or <server>__*, comma-separated)', h('input', { name: 'tools', dir: 'auto' })),
      h('button', { type: 'submit' }, 'Save allowlist'));

    const keyId = () => {
      const id = values(keyForm).key_id;
      if (!id) throw new Error('Enter a key id.');
      return id;
    };
    const showKey = async () => {
      const id = keyId();
      const k = await get(`/v1/admin/mcp/keys/${encodeURIComponent(id)}`);
      keyForm.elements.tools.value = (k.tools || []).join(', ');
      show(keyBox, h('p#mcp-key-current', { 'data-key': id },
        k.tools === null
          ? h('span', text(id), ' has no allowlist: it may use every tool its team is granted.')
          : h('span', text(id), ' may use only: ', text(k.tools.join(', '), '.mono'))),
      k.tools === null ? null : dangerButton('Remove allowlist', 'Confirm remove', async () => {
        try {
          await del(`/v1/admin/mcp/keys/${encodeURIComponent(id)}`);
          await showKey();
        } catch (e) { show(status, notice('error', e.message)); }
      }, { 'data-action': 'remove-allowlist' }));
    };

    const refresh = () => load(listBox, async () => {
      const servers = await get('/v1/admin/mcp/servers');
      return table([
        { title: 'Name', cell: (s) => text(s.name, '.mono') },
        { title: 'URL', cell: (s) => text(s.url) },
        { title: 'Teams and tools', cell: granted },
        { title: 'Credentials', cell: (s) => (s.credentials.length ? s.credentials.join(', ') : '—') },
        { title: 'Source', cell: (s) => badge(s.source) },
        {
          title: '',
          cell: (s) => (s.source === 'config'
            ? h('span.muted', 'in the config file')
            : dangerButton('Remove', 'Confirm remove', async () => {
              try { await del(`/v1/admin/mcp/servers/${encodeURIComponent(s.name)}`); } catch (e) { show(status, notice('error', e.message)); }
              refresh();
            }, { 'data-action': 'remove' })),
        },
      ], servers.data, { id: 'mcp-servers-table', empty: 'No MCP server.' });
    });

    form.addEventListener('submit', (e) => {
      e.preventDefault();
      busy(form.querySelector('button[type=submit]'), async () => {
        const v = values(form);
        const body = { name: v.name, url: v.url, teams: list(v.teams), tools: grants(v.tools), headers: headers(v.headers) };
        if (v.bearer) body.bearer = v.bearer;
        const s = await post('/v1/admin/mcp/servers', body);
        form.reset();
        show(status, notice('ok', h('span', 'Registered ', text(s.name), '.')));
        refresh();
      }, status);
    });
    keyForm.addEventListener('submit', (e) => {
      e.preventDefault();
      busy(keyForm.querySelector('button[type=submit]'), async () => {
        const id = keyId();
        await put(`/v1/admin/mcp/keys/${encodeURIComponent(id)}`, { tools: list(values(keyForm).tools) });
        show(status, notice('ok', h('span', 'Saved the allowlist of ', text(id), '.')));
        await showKey();
      }, status);
    });
    show(container, h('h1', 'MCP servers'), status,
      h('section.card', h('h2', 'Servers'), listBox),
      h('section.card', h('h2', 'Register a server'), form),
      h('section.card', h('h2', 'A key\'s tool allowlist'),
        h('p.muted', 'A key with an allowlist may use only the listed tools of its team\'s grant; without one, all of them.'),
        keyForm, keyBox));
    refresh();
  },
};
