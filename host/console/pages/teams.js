// Teams and keys (admin): create a team and a key (the secret shown once), rotate, revoke
// (immediate), expiry, IP allow-list, role, limits (changed in place); keys searched by name, id
// or prefix and paged; usage per key.

import { get, patch, post } from '../api.js';
import { badge, busy, dangerButton, h, instant, money, notice, num, secretBox, show, table, text, time, values } from '../ui.js';

const PLANS = ['development', 'professional', 'enterprise'];
const ROLES = ['member', 'auditor', 'admin'];

const numberOrNull = (v) => (v === undefined ? undefined : Number(v));

function teamForm(onDone) {
  const out = h('div');
  const form = h('form.inline#team-form',
    h('label', 'Name', h('input#team-name', { name: 'name', required: true, dir: 'auto' })),
    h('label', 'Plan', h('select', { name: 'plan' }, PLANS.map((p) => h('option', { value: p, selected: p === 'enterprise' }, p)))),
    h('label', 'Budget', h('input', { name: 'budget', type: 'number', min: '0', step: 'any', placeholder: 'none' })),
    h('label', 'Tokens / day', h('input', { name: 'token_cap_per_day', type: 'number', min: '0', placeholder: 'none' })),
    h('button#create-team', { type: 'submit' }, 'Create team'));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    busy(form.querySelector('button'), async () => {
      const v = values(form);
      const team = await post('/v1/admin/teams', {
        name: v.name, plan: v.plan, budget: numberOrNull(v.budget), token_cap_per_day: numberOrNull(v.token_cap_per_day),
      });
      form.reset();
      show(out, notice('ok', ['Team ', text(team.name), ` created (${team.id}).`]));
      onDone(team.id);
    }, out);
  });
  return h('section.card', h('h2', 'New team'), form, out);
}

function teamLimitsForm(teams, onDone) {
  const out = h('div');
  const form = h('form.inline#team-limits-form',
    h('label', 'Team', h('select', { name: 'id' }, teams.map((t) => h('option', { value: t.id, dir: 'auto' }, t.name)))),
    h('label', 'Plan', h('select', { name: 'plan' }, h('option', { value: '' }, '(keep)'), PLANS.map((p) => h('option', { value: p }, p)))),
    h('label', 'Budget (empty: none)', h('input', { name: 'budget', type: 'number', min: '0', step: 'any' })),
    h('label', 'Tokens / day (empty: none)', h('input', { name: 'token_cap_per_day', type: 'number', min: '0' })),
    h('button.secondary', { type: 'submit' }, 'Save limits'));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    busy(form.querySelector('button'), async () => {
      const v = values(form);
      const body = { budget: v.budget === undefined ? null : Number(v.budget), token_cap_per_day: v.token_cap_per_day === undefined ? null : Number(v.token_cap_per_day) };
      if (v.plan) body.plan = v.plan;
      await patch(`/v1/admin/teams/${encodeURIComponent(v.id)}`, body);
      onDone();
    }, out);
  });
  return h('div', h('h2', 'Team limits'), form, out);
}

function keyForm(teams, secretSlot, onDone, selectedTeam) {
  const out = h('div');
  const form = h('form.inline#key-form',
    h('label', 'Team', h('select#key-team', { name: 'team_id', required: true },
      // The name isolated (FSI … PDI), so an Arabic name does not reorder the id beside it.
      teams.map((t) => h('option', { value: t.id, selected: t.id === selectedTeam }, `\u2068${t.name}\u2069 (${t.id})`)))),
    h('label', 'Name', h('input#key-name', { name: 'name', dir: 'auto' })),
    h('label', 'Role', h('select#key-role', { name: 'role' }, ROLES.map((r) => h('option', { value: r }, r)))),
    h('label', 'Expires (UTC)', h('input', { name: 'expires_at', type: 'datetime-local' })),
    h('label', 'IP allow-list (CIDRs, comma-separated)', h('input', { name: 'ip_allowlist', placeholder: '10.0.0.0/8, 192.0.2.7/32' })),
    h('label', 'Requests / min', h('input', { name: 'rpm', type: 'number', min: '1' })),
    h('label', 'Tokens / day', h('input', { name: 'tpd', type: 'number', min: '1' })),
    h('label', 'Budget', h('input', { name: 'budget', type: 'number', min: '0', step: 'any' })),
    h('button#create-key', { type: 'submit' }, 'Create key'));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    busy(form.querySelector('button'), async () => {
      const v = values(form);
      const body = { team_id: v.team_id, role: v.role, name: v.name };
      if (v.expires_at) body.expires_at = instant(v.expires_at);
      if (v.ip_allowlist) body.ip_allowlist = v.ip_allowlist.split(',').map((s) => s.trim()).filter(Boolean);
      for (const k of ['rpm', 'tpd', 'budget']) if (v[k] !== undefined) body[k] = Number(v[k]);
      const key = await post('/v1/admin/keys', body);
      show(out);
      show(secretSlot, secretBox(`Secret of key ${key.name ?? key.id} (${key.role})`, key.key));
      onDone();
    }, out);
  });
  return h('section.card', h('h2', 'New key'), form, out);
}

// Keys per page of the keys table.
const PAGE = 20;

/** `group_by=key` rows: one per key. */
function usageByKey(rows) {
  return new Map(rows.map((r) => [r.key_id, { requests: r.requests, tokens: r.tokens_in + r.tokens_out, spend: r.spend }]));
}

/** A key's limits changed in place (`PATCH /v1/admin/keys/{id}`): an empty field clears the
 * limit (the plan's requests/min and tokens/day; no key budget). */
function limitsForm(k, slot, status, refresh) {
  const field = (name, label, value, attrs) => h('label', label, h('input', { name, type: 'number', value: value ?? '', placeholder: 'none', ...attrs }));
  const form = h('form.inline#key-limits-form', { 'data-key': k.id },
    h('strong', 'Limits of ', text(k.name ?? k.id)),
    field('rpm', 'Requests / min', k.rpm, { min: '1' }),
    field('tpd', 'Tokens / day', k.tpd, { min: '1' }),
    field('budget', 'Budget', k.budget, { min: '0', step: 'any' }),
    h('button#save-key-limits', { type: 'submit' }, 'Save limits'),
    h('button.secondary', { type: 'button', on: { click: () => show(slot) } }, 'Cancel'));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    busy(form.querySelector('button[type=submit]'), async () => {
      const v = values(form);
      const body = {};
      for (const f of ['rpm', 'tpd', 'budget']) body[f] = v[f] === undefined ? null : Number(v[f]);
      await patch(`/v1/admin/keys/${encodeURIComponent(k.id)}`, body);
      show(slot);
      show(status, notice('ok', ['Limits of ', text(k.name ?? k.id), ' saved: they apply from the next request.']));
      await refresh();
    }, slot);
  });
  return form;
}

/** Rotation asks first, and for how long the old key keeps working: the API's grace period
 * (empty: the gateway's `access.rotation_grace_seconds`; 0: it stops at once). */
function rotateControl(k, secretSlot, status, refresh) {
  const box = h('span.row');
  const idle = () => show(box, h('button.secondary', {
    type: 'button', 'data-action': 'rotate', 'data-key': k.id, on: { click: () => show(box, confirm) },
  }, 'Rotate'));
  const grace = h('input.grace', { name: 'grace_seconds', type: 'number', min: '0', placeholder: 'default', 'aria-label': 'Grace period (seconds)' });
  const go = h('button.danger.armed', { type: 'button', 'data-action': 'confirm-rotate', 'data-key': k.id }, 'Confirm rotate');
  const cancel = h('button.secondary', { type: 'button', on: { click: idle } }, 'Cancel');
  const confirm = h('span.row.rotate-confirm', h('label', 'Old key works for (s)', grace), go, cancel);
  go.addEventListener('click', () => busy(go, async () => {
    const body = grace.value === '' ? {} : { grace_seconds: Number(grace.value) };
    const r = await post(`/v1/admin/keys/${k.id}/rotate`, body);
    const until = r.replaced_key?.grace_until;
    show(secretSlot, secretBox(`New secret of ${k.name ?? k.id} (rotated)`, r.key,
      `Shown this once: copy it now. ${until ? `The old key keeps working until ${time(until)} (UTC).` : 'The old key stopped at once.'}`));
    await refresh();
  }, status));
  idle();
  return box;
}

export default {
  title: 'Teams & keys',
  roles: ['admin'],
  render(container) {
    const secretSlot = h('div#secret-slot');
    const lists = h('div', h('p.muted', 'Loading…'));
    const status = h('div');
    const editSlot = h('div#key-edit');
    let selectedTeam;
    // The keys' search and page: `after` cursors of the pages before this one.
    let search = '';
    let cursors = [];

    // Only the latest refresh is shown: one asked by an action (a revoke, a save) must not land
    // over a search or a page asked while it was on its way, nor the reverse.
    let latest = 0;
    async function refresh(teamId) {
      if (teamId) selectedTeam = teamId;
      const mine = ++latest;
      try {
        const [teams, keys, usage] = await Promise.all([
          get('/v1/admin/teams'),
          get('/v1/admin/keys', { q: search, limit: PAGE, after: cursors.at(-1) }),
          get('/v1/admin/usage', { group_by: 'key' })]);
        if (mine !== latest) return;
        const names = new Map(teams.data.map((t) => [t.id, t.name]));
        const perKey = usageByKey(usage.data);
        const keyTable = table([
          // A key declared in the config file says so: the file, not this page, decides whether
          // it exists (a restart without its entry revokes it).
          { title: 'Name', cell: (k) => h('span', text(k.name), k.source === 'config' ? [' ', h('span.badge.config', { title: 'Declared in the config file: removing its entry revokes it at the next start' }, 'config')] : '') },
          { title: 'Id / prefix', cell: (k) => h('span.mono', k.id, h('br'), k.prefix) },
          { title: 'Created', cell: (k) => time(k.created_at) },
          { title: 'Team', cell: (k) => text(names.get(k.team_id) ?? k.team_id) },
          { title: 'Role', cell: (k) => k.role },
          { title: 'State', cell: (k) => badge(k.state) },
          { title: 'Expires', cell: (k) => time(k.expires_at) },
          { title: 'IP allow-list', cell: (k) => (k.ip_allowlist.length ? k.ip_allowlist.join(', ') : 'any') },
          { title: 'Limits', cell: (k) => `rpm ${num(k.rpm)} · tpd ${num(k.tpd)} · budget ${money(k.budget)}` },
          { title: 'Usage', cell: (k) => { const u = perKey.get(k.id); return u ? `${num(u.requests)} req · ${num(u.tokens)} tok · ${money(u.spend, usage.currency)}` : '—'; } },
          { title: 'Last used', cell: (k) => time(k.last_used_at) },
          {
            title: '',
            cell: (k) => (k.state === 'revoked' || k.state === 'expired' ? '' : h('div.row',
              h('button.secondary', { type: 'button', 'data-action': 'edit-limits', 'data-key': k.id, on: { click: () => show(editSlot, limitsForm(k, editSlot, status, refresh)) } }, 'Limits'),
              rotateControl(k, secretSlot, status, refresh),
              dangerButton('Revoke', 'Confirm revoke', async () => {
                try {
                  await post(`/v1/admin/keys/${k.id}/revoke`);
                  show(status, notice('ok', ['Key ', text(k.name ?? k.id), ' revoked: refused from now on.']));
                } catch (e) { show(status, notice('error', e.message)); }
                await refresh();
              }, { 'data-action': 'revoke', 'data-key': k.id }))),
          },
        ], keys.data, { id: 'keys-table', empty: search ? 'No key matches.' : 'No keys yet.' });
        const searchBox = h('input#key-search', { type: 'search', name: 'q', value: search, placeholder: 'name, id or prefix', dir: 'auto', 'aria-label': 'Search keys' });
        const searchForm = h('form.inline#key-search-form', h('label', 'Search', searchBox), h('button.secondary', { type: 'submit' }, 'Search'));
        searchForm.addEventListener('submit', (e) => { e.preventDefault(); search = searchBox.value.trim(); cursors = []; refresh(); });
        const first = cursors.length * PAGE;
        const pager = h('div.row#keys-pager',
          h('button.secondary#keys-prev', { type: 'button', disabled: cursors.length === 0, on: { click: () => { cursors.pop(); refresh(); } } }, 'Previous'),
          h('span.muted#keys-range', keys.data.length ? `${first + 1}–${first + keys.data.length} of ${keys.total}` : `0 of ${keys.total}`),
          h('button.secondary#keys-next', { type: 'button', disabled: !keys.has_more, on: { click: () => { cursors.push(keys.last_id); refresh(); } } }, 'Next'));
        const teamTable = table([
          { title: 'Name', cell: (t) => text(t.name, '.team-name') },
          { title: 'Id', cell: (t) => h('span.mono', t.id) },
          { title: 'Plan', cell: (t) => t.plan },
          { title: 'Budget', cell: (t) => money(t.budget, t.spend.currency) },
          { title: 'Spent', cell: (t) => money(t.spend.spent, t.spend.currency) },
          { title: 'Tokens / day', cell: (t) => num(t.token_cap_per_day) },
          { title: 'Regions', cell: (t) => (t.allowed_regions.length ? t.allowed_regions.join(', ') : 'any') },
          { title: 'Created', cell: (t) => time(t.created_at) },
        ], teams.data, { id: 'teams-table' });
        show(lists,
          h('section.card', h('h2', 'Teams'), teamTable, teamLimitsForm(teams.data, () => refresh())),
          keyForm(teams.data, secretSlot, () => refresh(), selectedTeam),
          h('section.card', h('h2', 'Keys'), searchForm, keyTable, pager, editSlot));
      } catch (e) {
        if (mine === latest) show(lists, notice('error', e.message));
      }
    }

    show(container, h('h1', 'Teams & keys'), teamForm((id) => refresh(id)), secretSlot, status, lists);
    refresh();
  },
};
