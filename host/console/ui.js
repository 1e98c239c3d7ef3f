// Small DOM helpers. User data is only ever set as text (never innerHTML), and every element that
// shows user text gets dir="auto", so Arabic names and prompts read right-to-left on their own.

/** h('tag.class#id', {attr: value, on: {click}}, ...children): an element. */
export function h(spec, attrs = {}, ...children) {
  const [, tag = 'div', rest = ''] = spec.match(/^([a-z0-9]*)(.*)$/i);
  const el = document.createElement(tag || 'div');
  for (const part of rest.match(/[.#][^.#]+/g) || []) {
    if (part[0] === '.') el.classList.add(part.slice(1));
    else el.id = part.slice(1);
  }
  if (attrs === null || typeof attrs !== 'object' || attrs instanceof Node || Array.isArray(attrs)) {
    children.unshift(attrs);
    attrs = {};
  }
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'on') for (const [ev, fn] of Object.entries(v)) el.addEventListener(ev, fn);
    // true → the attribute (so `selected`/`checked` are the defaults a form reset returns to).
    else if (v === true) el.setAttribute(k, '');
    else if (k in el && typeof v !== 'string') el[k] = v;
    else el.setAttribute(k, v);
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

// Bidirectional embedding, override and isolate controls (LRE, RLE, PDF, LRO, RLO, LRI, RLI, FSI,
// PDI): inside a name they reorder what follows ("\u202Eevil" shows as "live"), so they are shown
// as visible marks instead of being obeyed.
const BIDI_CONTROLS = /([\u202A-\u202E\u2066-\u2069])/;

/** User text (names, ids, prompts): isolated in its own direction (`dir="auto"`, which the
 * browser isolates from its neighbours), its bidirectional controls shown, never obeyed. */
export const text = (value, cls = '') => {
  const parts = String(value ?? '—').split(BIDI_CONTROLS).filter((p) => p !== '').map((p) => (BIDI_CONTROLS.test(p)
    ? h('span.bidi-control', { title: 'A bidirectional control character, shown instead of obeyed' }, `U+${p.codePointAt(0).toString(16).toUpperCase()}`)
    : p));
  return h(`span${cls}`, { dir: 'auto' }, parts);
};

/** A table: columns [{title, cell(row) → Node|string}], one row per item. */
export function table(columns, rows, { onRow, empty = 'Nothing yet.', id } = {}) {
  if (!rows.length) return h('p.muted', empty);
  const head = h('tr', columns.map((c) => h('th', { scope: 'col' }, c.title)));
  const body = rows.map((row) => {
    const tr = h('tr', columns.map((c) => h('td', { dir: 'auto' }, c.cell(row))));
    if (onRow) {
      tr.classList.add('clickable');
      tr.tabIndex = 0;
      tr.addEventListener('click', () => onRow(row, tr));
      tr.addEventListener('keydown', (e) => { if (e.key === 'Enter') onRow(row, tr); });
    }
    return tr;
  });
  return h('div.scroll', h('table', { id }, h('thead', head), h('tbody', body)));
}

export const badge = (value) => h(`span.badge.${String(value).replace(/[^a-z0-9_-]/gi, '')}`, value);

/** A message box; kind ok | error | info. A message of nodes (user text in its own text()
 * spans) is laid out left to right; a plain string takes its own direction. */
export const notice = (kind, message) => h(`div.notice.${kind}`, { role: kind === 'error' ? 'alert' : 'status', dir: typeof message === 'string' ? 'auto' : undefined }, message);

/** Replace a container's children. */
export function show(container, ...children) {
  container.replaceChildren();
  append(container, children);
}

/** Runs `fn` with the button disabled; an error lands in `out` (or is rethrown). */
export async function busy(button, fn, out) {
  button.disabled = true;
  try {
    return await fn();
  } catch (e) {
    if (out) show(out, notice('error', e.message));
    else throw e;
  } finally {
    button.disabled = false;
  }
}

/** A destructive button: the first click arms it, the second does it. */
export function dangerButton(label, confirmLabel, action, attrs = {}) {
  const b = h('button.danger', { type: 'button', ...attrs }, label);
  b.addEventListener('click', async () => {
    if (!b.classList.contains('armed')) {
      b.classList.add('armed');
      b.textContent = confirmLabel;
      return;
    }
    b.disabled = true;
    try { await action(); } finally { b.disabled = false; }
  });
  return b;
}

/** A one-time secret, with a copy button; it is never stored. */
export function secretBox(title, secret, note) {
  const out = h('output.mono', { id: 'new-secret' }, secret);
  const status = h('span.muted', { role: 'status' });
  const copy = h('button.secondary', { type: 'button', id: 'copy-secret' }, 'Copy');
  copy.addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(secret);
      status.textContent = 'Copied.';
    } catch {
      const range = document.createRange();
      range.selectNodeContents(out);
      getSelection().removeAllRanges();
      getSelection().addRange(range);
      status.textContent = 'Selected: press Ctrl+C.';
    }
  });
  const box = h('div.secret', { role: 'region', 'aria-label': title },
    h('strong', title), h('div', note || 'Shown this once: copy it now. The gateway keeps only its hash.'),
    out, h('div.row', copy, h('button.secondary', { type: 'button', on: { click: () => box.remove() } }, 'Done'), status));
  return box;
}

/** Form values as an object (empty strings left out). */
export function values(form) {
  const out = {};
  for (const [k, v] of new FormData(form).entries()) {
    if (typeof v === 'string' && v.trim() === '') continue;
    out[k] = typeof v === 'string' ? v.trim() : v;
  }
  return out;
}

const pad = (n) => String(n).padStart(2, '0');

/** Unix seconds → "2026-11-27 05:12" (UTC). */
export function time(secs) {
  if (secs === null || secs === undefined) return '—';
  const d = new Date(secs * 1000);
  return `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}`;
}

export function money(value, currency = '') {
  if (value === null || value === undefined) return '—';
  const digits = Math.abs(value) >= 1 || value === 0 ? 2 : 6;
  return `${value.toFixed(digits)}${currency ? ` ${currency}` : ''}`;
}

export const num = (v) => (v === null || v === undefined ? '—' : Number(v).toLocaleString('en'));

/** A page-level load: the content, or the error in its place. */
export async function load(container, fn) {
  show(container, h('p.muted', 'Loading…'));
  try {
    const content = await fn();
    show(container, content);
  } catch (e) {
    show(container, notice('error', e.message));
  }
}

/** A local <input type="datetime-local"> value → RFC 3339 in UTC (the API's instants). */
export function instant(local) {
  if (!local) return undefined;
  const d = new Date(`${local}Z`);
  return Number.isNaN(d.getTime()) ? undefined : d.toISOString().replace('.000Z', 'Z');
}

/** Save a blob under a file name. */
export function download(name, blob) {
  const a = h('a', { href: URL.createObjectURL(blob), download: name });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
}
