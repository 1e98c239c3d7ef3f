// Charts as inline SVG, no library: grouped bars over time (one group per x label, one bar per
// series), lines over time (a gap where a value is missing) and a budget-burn bar with its
// thresholds marked. Colours come from CSS classes (s0…s7),
// so the CSP needs no inline styles.

import { text } from './ui.js';

const NS = 'http://www.w3.org/2000/svg';

function el(tag, attrs = {}, text) {
  const e = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
}

function niceMax(v) {
  if (v <= 0) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

function short(v) {
  if (v >= 1e6) return `${+(v / 1e6).toFixed(1)}M`;
  if (v >= 1e3) return `${+(v / 1e3).toFixed(1)}k`;
  if (v > 0 && v < 0.01) return `${+v.toPrecision(2)}`;
  return `${+v.toFixed(2)}`;
}

/**
 * Grouped bars: labels (x), series [{name, values: [number per label]}]. Returns a <figure> with
 * the SVG and a legend; `title` is the figure's caption (and the SVG's accessible name).
 */
export function barChart({ title, labels, series, format = short }) {
  const W = 420, H = 200, L = 60, R = 6, T = 10, B = 24;
  const max = niceMax(Math.max(0, ...series.flatMap((s) => s.values)));
  const svg = el('svg', { class: 'chart', viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': title });
  const plotW = W - L - R, plotH = H - T - B;
  for (let i = 0; i <= 4; i++) {
    const y = T + plotH - (plotH * i) / 4;
    svg.append(el('line', { class: 'axis', x1: L, x2: W - R, y1: y, y2: y }));
    svg.append(el('text', { x: L - 4, y: y + 4, 'text-anchor': 'end' }, format((max * i) / 4)));
  }
  const group = plotW / Math.max(1, labels.length);
  const bar = Math.max(1, (group * 0.8) / Math.max(1, series.length));
  labels.forEach((label, i) => {
    const x0 = L + group * i + group * 0.1;
    series.forEach((s, j) => {
      const v = s.values[i] || 0;
      if (v <= 0) return;
      const hgt = (plotH * v) / max;
      const r = el('rect', { class: `s${j % 8}`, x: x0 + bar * j, y: T + plotH - hgt, width: Math.max(0.5, bar - 1), height: hgt });
      r.append(el('title', {}, `${s.name} · ${label}: ${format(v)}`));
      svg.append(r);
    });
    if (labels.length <= 10 || i % Math.ceil(labels.length / 10) === 0) {
      svg.append(el('text', { x: L + group * i + group / 2, y: H - 10, 'text-anchor': 'middle' }, label));
    }
  });
  return figure(title, svg, series.map((s) => s.name));
}

/**
 * Lines over time: labels (x), series [{name, values: [number|null per label]}]; a null breaks
 * the line (a minute without requests has no latency). Each point carries a <title>.
 */
export function lineChart({ title, labels, series, format = short, id }) {
  const W = 420, H = 200, L = 60, R = 6, T = 10, B = 24;
  const max = niceMax(Math.max(0, ...series.flatMap((s) => s.values.filter((v) => v !== null && v !== undefined))));
  const svg = el('svg', { class: 'chart', viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': title });
  if (id) svg.id = id;
  const plotW = W - L - R, plotH = H - T - B;
  for (let i = 0; i <= 4; i++) {
    const y = T + plotH - (plotH * i) / 4;
    svg.append(el('line', { class: 'axis', x1: L, x2: W - R, y1: y, y2: y }));
    svg.append(el('text', { x: L - 4, y: y + 4, 'text-anchor': 'end' }, format((max * i) / 4)));
  }
  const step = plotW / Math.max(1, labels.length - 1);
  const x = (i) => L + step * i;
  const y = (v) => T + plotH - (plotH * v) / max;
  series.forEach((s, j) => {
    let run = [];
    const flush = () => {
      if (run.length > 1) svg.append(el('polyline', { class: `s${j % 8}`, points: run.join(' ') }));
      run = [];
    };
    s.values.forEach((v, i) => {
      if (v === null || v === undefined) { flush(); return; }
      run.push(`${x(i).toFixed(1)},${y(v).toFixed(1)}`);
      const dot = el('circle', { class: `s${j % 8}`, cx: x(i), cy: y(v), r: 1.6, 'data-series': j });
      dot.append(el('title', {}, `${s.name} · ${labels[i]}: ${format(v)}`));
      svg.append(dot);
    });
    flush();
  });
  const every = Math.ceil(labels.length / 6);
  labels.forEach((label, i) => {
    if (i % every === 0) svg.append(el('text', { x: x(i), y: H - 10, 'text-anchor': 'middle' }, label));
  });
  return figure(title, svg, series.map((s) => s.name));
}

/**
 * Ranked horizontal bars: rows [{label, value}] largest first (a label is user text: its
 * bidirectional controls are shown as marks, never obeyed, and it is isolated with
 * `unicode-bidi: isolate` from the style sheet).
 */
export function rankChart({ title, rows, format = short, id }) {
  const W = 420, row = 22, L = 150, R = 60, T = 6;
  const H = T * 2 + row * Math.max(1, rows.length);
  const max = Math.max(0, ...rows.map((r) => r.value)) || 1;
  const svg = el('svg', { class: 'chart rank', viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': title });
  if (id) svg.id = id;
  rows.forEach((r, i) => {
    const y = T + row * i;
    const label = String(r.label).replace(/[\u202A-\u202E\u2066-\u2069]/g, (c) => `U+${c.codePointAt(0).toString(16).toUpperCase()}`);
    svg.append(el('text', { class: 'rank-label', x: L - 6, y: y + 15, 'text-anchor': 'end' }, label.length > 24 ? `${label.slice(0, 23)}…` : label));
    const w = ((W - L - R) * r.value) / max;
    const bar = el('rect', { class: 's0', x: L, y: y + 4, width: Math.max(0.5, w), height: row - 8, 'data-label': r.label });
    bar.append(el('title', {}, `${label}: ${format(r.value)}`));
    svg.append(bar);
    svg.append(el('text', { x: L + w + 4, y: y + 15 }, format(r.value)));
  });
  return figure(title, svg, []);
}

/**
 * Budget burn: spent (and reserved) against the limit, the thresholds (percent) marked as dashed
 * lines, the limit as a solid one.
 */
export function burnChart({ title, spent, reserved = 0, limit, thresholds = [50, 80, 100], currency = '' }) {
  const W = 1200, H = 52, L = 8, R = 24;
  const scale = Math.max(limit, spent + reserved) * 1.05 || 1;
  const x = (v) => L + ((W - L - R) * v) / scale;
  const svg = el('svg', { class: 'chart burn', viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': title });
  svg.append(el('rect', { class: 'axis', x: L, y: 8, width: W - L - R, height: 22, fill: '#f0f2f5' }));
  svg.append(el('rect', { class: spent >= limit ? 's4' : 's0', x: L, y: 8, width: Math.max(0, x(spent) - L), height: 22 }));
  if (reserved > 0) svg.append(el('rect', { class: 's2', x: x(spent), y: 8, width: x(spent + reserved) - x(spent), height: 22, opacity: 0.5 }));
  for (const t of thresholds) {
    const v = (limit * t) / 100;
    const cls = t >= 100 ? 'limit' : 'threshold';
    svg.append(el('line', { class: cls, x1: x(v), x2: x(v), y1: 2, y2: 36, 'data-threshold': t }));
    svg.append(el('text', { x: x(v), y: 50, 'text-anchor': 'middle' }, `${t}%`));
  }
  const pct = limit > 0 ? ((100 * spent) / limit).toFixed(1) : '—';
  // The name (user text) in its own direction, its bidi controls shown; the figures after it
  // left to right.
  const name = text(title, '.burn-name');
  const figures = `${+spent.toPrecision(3)} of ${limit} ${currency} spent (${pct}%)${reserved > 0 ? `, ${+reserved.toPrecision(3)} reserved` : ''}`;
  return figure([name, ' — ', figures], svg, []);
}

/** caption: text (its own direction) or nodes (laid out left to right). */
function figure(caption, svg, names) {
  const fig = document.createElement('figure');
  fig.className = 'card';
  const cap = document.createElement('figcaption');
  if (typeof caption === 'string') {
    cap.setAttribute('dir', 'auto');
    cap.textContent = caption;
  } else {
    cap.append(...caption);
  }
  fig.append(cap, svg);
  if (names.length) {
    const legend = document.createElement('div');
    legend.className = 'legend';
    names.forEach((n, j) => {
      const item = document.createElement('span');
      item.setAttribute('dir', 'auto');
      const sw = document.createElement('i');
      sw.className = `s${j % 8}`;
      item.append(sw, n);
      legend.append(item);
    });
    fig.append(legend);
  }
  return fig;
}
