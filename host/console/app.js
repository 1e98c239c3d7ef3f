// The console's shell: sign-in, the role, the navigation and a tiny hash router (#/teams, …).
// Every page is a module with {title, roles, render(container, ctx)}.

import { detectRole, session } from './api.js';
import { h, show } from './ui.js';
import teams from './pages/teams.js';
import usage from './pages/usage.js';
import journal from './pages/journal.js';
import policies from './pages/policies.js';
import documents from './pages/documents.js';
import webhooks from './pages/webhooks.js';
import health from './pages/health.js';
import mcp from './pages/mcp.js';

const PAGES = { teams, usage, health, journal, policies, documents, webhooks, mcp };
const $ = (id) => document.getElementById(id);
let role = null;

function pagesFor(r) {
  return Object.entries(PAGES).filter(([, p]) => p.roles.includes(r));
}

function route() {
  if (!role) return;
  const allowed = pagesFor(role);
  const name = location.hash.replace(/^#\/?/, '').split('?')[0];
  const entry = allowed.find(([n]) => n === name);
  if (!entry) {
    location.replace(`#/${allowed[0][0]}`);
    return;
  }
  const [, page] = entry;
  for (const a of $('nav').querySelectorAll('a')) {
    a.classList.toggle('current', a.dataset.page === name);
    if (a.dataset.page === name) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  document.title = `${page.title} · Sovereign Gateway`;
  const container = $('page');
  container.dataset.page = name;
  show(container);
  page.render(container, { role, isAdmin: role === 'admin' });
}

function signedIn(r) {
  role = r;
  document.body.dataset.role = r;
  $('sign-in').hidden = true;
  $('page').hidden = false;
  $('sign-out').hidden = false;
  show($('who'), 'Signed in as ', h('b', { id: 'role' }, r));
  show($('nav'), pagesFor(r).map(([name, p]) => h('a', { href: `#/${name}`, 'data-page': name }, p.title)));
  route();
}

function signedOut(message) {
  role = null;
  session.clear();
  delete document.body.dataset.role;
  $('sign-in').hidden = false;
  $('page').hidden = true;
  $('sign-out').hidden = true;
  show($('who'));
  show($('nav'));
  show($('page'));
  const err = $('sign-in-error');
  err.hidden = !message;
  err.textContent = message || '';
  $('key').value = '';
}

async function signIn(event) {
  event.preventDefault();
  const button = $('sign-in-button');
  const key = $('key').value.trim();
  button.disabled = true;
  try {
    const r = await detectRole(key);
    session.save(key);
    $('key').value = '';
    $('sign-in-error').hidden = true;
    signedIn(r);
  } catch (e) {
    signedOut(e.message);
  } finally {
    button.disabled = false;
  }
}

async function start() {
  $('sign-in-form').addEventListener('submit', signIn);
  $('sign-out').addEventListener('click', () => { signedOut(); location.hash = ''; });
  window.addEventListener('hashchange', route);
  const key = session.key();
  if (!key) return signedOut();
  try {
    signedIn(await detectRole(key));
  } catch (e) {
    signedOut(e.message);
  }
}

start();
