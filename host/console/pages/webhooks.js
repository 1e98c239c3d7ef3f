// Webhooks (admin): subscriptions (create — the signing secret shown once —, delete), their
// recent deliveries with status, and a test event.

import { del, get, post } from '../api.js';
import { badge, busy, dangerButton, h, load, notice, secretBox, show, table, text, time, values } from '../ui.js';

const EVENTS = ['request.completed', 'routing.rule', 'cost.threshold', 'model.fallback', 'guardrail.violation'];

async function deliveries(hook, again) {
  const page = await get(`/v1/admin/webhooks/${encodeURIComponent(hook.id)}/deliveries`, { limit: 20 });
  // While something is pending, look again each second (the page stays current without a click).
  if (page.data.some((d) => d.state === 'pending')) setTimeout(again, 1000);
  return [h('div.row', h('h3', { dir: 'auto' }, `Recent deliveries — ${hook.url}`),
    h('button.secondary#deliveries-refresh', { type: 'button', on: { click: again } }, 'Refresh')), table([
    { title: 'Seq', cell: (d) => d.seq },
    { title: 'Event', cell: (d) => h('span', d.event, h('br'), h('span.mono.muted', d.event_id)) },
    { title: 'State', cell: (d) => badge(d.state) },
    { title: 'Attempts', cell: (d) => d.attempts },
    { title: 'Last status', cell: (d) => d.last_status ?? '—' },
    { title: 'Last error', cell: (d) => text(d.last_error) },
    // Deliveries count time in milliseconds (docs/WEBHOOKS.md).
    { title: 'Created', cell: (d) => time(d.created_at / 1000) },
    { title: 'Done', cell: (d) => (d.done_at === null ? '—' : time(d.done_at / 1000)) },
  ], page.data, { id: 'deliveries-table', empty: 'No delivery yet.' })];
}

export default {
  title: 'Webhooks',
  roles: ['admin'],
  render(container) {
    const secretSlot = h('div');
    const status = h('div');
    const listBox = h('div');
    const detail = h('div.card#deliveries', { hidden: true });
    const form = h('form.inline#webhook-form',
      h('label', 'URL', h('input', { name: 'url', type: 'url', required: true, placeholder: 'https://siem.example/hooks' })),
      h('fieldset.row', h('legend', 'Events'), h('label.check', h('input', { type: 'checkbox', name: 'events', value: '*' }), ' all'),
        EVENTS.map((e) => h('label.check', h('input', { type: 'checkbox', name: 'events', value: e }), ` ${e}`))),
      h('label', 'Team id (optional)', h('input', { name: 'team_id' })),
      h('label', 'Description', h('input', { name: 'description', dir: 'auto' })),
      h('button', { type: 'submit' }, 'Subscribe'));

    let shown = null;
    const showDeliveries = (hook) => {
      shown = hook.id;
      detail.hidden = false;
      const again = () => {
        if (shown === hook.id && detail.isConnected && !detail.hidden) {
          deliveries(hook, again).then((c) => show(detail, c)).catch((e) => show(detail, notice('error', e.message)));
        }
      };
      load(detail, () => deliveries(hook, again));
    };
    const refresh = () => load(listBox, async () => {
      const list = await get('/v1/admin/webhooks');
      return table([
        { title: 'URL', cell: (w) => text(w.url) },
        { title: 'Events', cell: (w) => w.events.join(', ') },
        { title: 'Team', cell: (w) => text(w.team_id ?? 'all') },
        { title: 'Description', cell: (w) => text(w.description) },
        { title: 'Created', cell: (w) => time(w.created_at) },
        {
          title: '',
          cell: (w) => h('div.row',
            h('button.secondary', { type: 'button', 'data-action': 'deliveries', on: { click: () => showDeliveries(w) } }, 'Deliveries'),
            h('button.secondary', { type: 'button', 'data-action': 'test', on: { click: (e) => busy(e.currentTarget, async () => {
              const t = await post(`/v1/admin/webhooks/${encodeURIComponent(w.id)}/test`);
              show(status, notice('ok', `Test event ${t.event_id} queued.`));
              showDeliveries(w);
            }, status) } }, 'Send test event'),
            dangerButton('Delete', 'Confirm delete', async () => {
              try { await del(`/v1/admin/webhooks/${encodeURIComponent(w.id)}`); } catch (e) { show(status, notice('error', e.message)); }
              detail.hidden = true;
              shown = null;
              refresh();
            }, { 'data-action': 'delete' })),
        },
      ], list.data, { id: 'webhooks-table', empty: 'No subscription.' });
    });

    form.addEventListener('submit', (e) => {
      e.preventDefault();
      busy(form.querySelector('button[type=submit]'), async () => {
        const v = values(form);
        const events = new FormData(form).getAll('events');
        if (!events.length) throw new Error('Choose at least one event.');
        const w = await post('/v1/admin/webhooks', { url: v.url, events, team_id: v.team_id ?? null, description: v.description ?? null });
        form.reset();
        show(status);
        show(secretSlot, secretBox(`Signing secret of ${w.url}`, w.secret, 'Shown this once: the receiver verifies the webhook-signature header with it (Standard Webhooks).'));
        refresh();
      }, status);
    });
    show(container, h('h1', 'Webhooks'), h('section.card', h('h2', 'New subscription'), form), secretSlot, status,
      h('section.card', h('h2', 'Subscriptions'), listBox), detail);
    refresh();
  },
};
