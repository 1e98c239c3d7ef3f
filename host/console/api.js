// The public API, called with the signed-in key as the bearer header. The key lives in this tab's
// sessionStorage only: never a cookie, never a URL, never localStorage.

const KEY = 'sovereign.console.key';

export const session = {
  key: () => sessionStorage.getItem(KEY),
  save: (key) => sessionStorage.setItem(KEY, key),
  clear: () => sessionStorage.removeItem(KEY),
};

/** An API failure: the HTTP status and the OpenAI-shaped error body's message and code. */
export class ApiError extends Error {
  constructor(status, error) {
    super(error?.message || `HTTP ${status}`);
    this.status = status;
    this.code = error?.code ?? null;
    this.type = error?.type ?? null;
  }
}

function url(path, query) {
  if (!query) return path;
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v !== undefined && v !== null && v !== '') params.set(k, String(v));
  }
  const s = params.toString();
  return s ? `${path}?${s}` : path;
}

/**
 * One call. `json`: a body sent as JSON; `form`: a FormData (multipart); `raw`: answer the
 * Response (for exports). Non-2xx answers throw ApiError.
 */
export async function call(method, path, { json, form, query, raw, key } = {}) {
  const headers = { Authorization: `Bearer ${key ?? session.key() ?? ''}` };
  let body;
  if (json !== undefined) {
    headers['Content-Type'] = 'application/json';
    body = JSON.stringify(json);
  } else if (form) {
    body = form;
  }
  const res = await fetch(url(path, query), {
    method, headers, body, credentials: 'omit', cache: 'no-store', referrerPolicy: 'no-referrer',
  });
  if (!res.ok) {
    let error = null;
    try { error = (await res.json()).error; } catch { /* not JSON */ }
    throw new ApiError(res.status, error);
  }
  if (raw) return res;
  const type = res.headers.get('content-type') || '';
  return type.includes('application/json') ? res.json() : res.text();
}

export const get = (path, query) => call('GET', path, { query });
export const post = (path, json) => call('POST', path, { json: json ?? {} });
export const patch = (path, json) => call('PATCH', path, { json });
export const put = (path, json) => call('PUT', path, { json });
export const del = (path) => call('DELETE', path);

/**
 * The key's role, found through the public API only: listing keys is admin-only; the journal's
 * read API is open to auditors (and admins). Anything else (a member, a bad key) is refused.
 */
export async function detectRole(key) {
  try {
    await call('GET', '/v1/admin/keys', { key });
    return 'admin';
  } catch (e) {
    if (!(e instanceof ApiError) || e.status !== 403) throw signInError(e);
  }
  try {
    await call('POST', '/v1/activity/logs', { key, json: { limit: 1 } });
    return 'auditor';
  } catch (e) {
    if (e instanceof ApiError && e.status === 403) {
      throw new Error('This key is valid but is neither an admin nor an auditor key: the console needs one of those.');
    }
    throw signInError(e);
  }
}

function signInError(e) {
  if (e instanceof ApiError && e.status === 401) return new Error(`The gateway refused this key: ${e.message}`);
  if (e instanceof ApiError) return new Error(`Sign-in failed (HTTP ${e.status}): ${e.message}`);
  return new Error(`Cannot reach the gateway: ${e.message}`);
}
