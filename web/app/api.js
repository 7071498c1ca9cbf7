// fetch() for /api/v1: JSON both ways, the bearer token, Accept-Language of the current
// language, one silent token refresh on 401, and errors as ApiError carrying the server's
// {code, message, details}.
import { lang, t } from './i18n.js';
import * as session from './session.js';

const BASE = '/api/v1';

export class ApiError extends Error {
  constructor(status, body, retryAfter = null) {
    super(body?.message || t('error.http', { status }));
    this.status = status; // 0: no answer (network)
    this.code = body?.code || (status ? `http_${status}` : 'network');
    this.details = body?.details || null;
    this.retryAfter = retryAfter;
  }
}

// Several requests may get 401 at once; they share one refresh, since a refresh token
// works only once.
let refreshing = null;

function refreshSession() {
  refreshing ||= (async () => {
    try {
      const auth = await send('POST', '/auth/refresh', { refreshToken: session.refreshToken() }, {});
      session.save(auth);
      return true;
    } catch (e) {
      if (e.status === 401 || e.status === 400) session.clear();
      return false;
    } finally {
      refreshing = null;
    }
  })();
  return refreshing;
}

async function send(method, path, body, { signal, headers = {} }) {
  const h = { Accept: 'application/json', 'Accept-Language': lang(), ...headers };
  // The gateway refuses any request with an expired token, public ones too; sign-in and
  // refresh calls need none, so they never carry one.
  const token = path.startsWith('/auth/') ? null : session.accessToken();
  if (token) h.Authorization = `Bearer ${token}`;
  if (body !== undefined) h['Content-Type'] = 'application/json';
  let res;
  try {
    res = await fetch(BASE + path, {
      method, signal, headers: h, body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new ApiError(0, { code: 'network', message: t('error.network') });
  }
  if (res.status === 204) return null;
  const json = (res.headers.get('Content-Type') || '').includes('json')
    ? await res.json().catch(() => null) : null;
  if (res.ok) return json;
  const retry = Number(res.headers.get('Retry-After') ?? json?.retryAfter);
  throw new ApiError(res.status, json, Number.isFinite(retry) ? retry : null);
}

export async function request(method, path, body, options = {}) {
  try {
    return await send(method, path, body, options);
  } catch (e) {
    const expired = e.status === 401 && session.accessToken() && !path.startsWith('/auth/');
    if (!expired) throw e;
    // Refreshed: retry with the new token. Refused: the session is gone, and the retry
    // goes without a token (public reads still work, the rest answers 401 again).
    await refreshSession();
    return send(method, path, body, options);
  }
}

export const api = {
  get: (path, options) => request('GET', path, undefined, options),
  post: (path, body, options) => request('POST', path, body, options),
  put: (path, body, options) => request('PUT', path, body, options),
  del: (path, options) => request('DELETE', path, undefined, options),
};

// No answer, or an answer that says "not now": the same request may simply be sent again.
export function isRetryable(e) {
  return e instanceof ApiError && (e.status === 0 || e.status === 429 || e.status >= 502
    || e.code === 'idempotency_in_progress');
}

// A creating POST under X-Idempotency-Key, retried with the same key while the outcome is
// unknown: the server answers a repeat with the first answer, so nothing is done twice.
export async function postIdempotent(path, body, key, attempts = 4, headers = {}) {
  for (let i = 1; ; i++) {
    try {
      return await api.post(path, body, { headers: { 'X-Idempotency-Key': key, ...headers } });
    } catch (e) {
      if (i >= attempts || !isRetryable(e)) throw e;
      const wait = e.retryAfter != null ? e.retryAfter * 1000 : 500 * 2 ** (i - 1);
      await new Promise((r) => setTimeout(r, Math.min(wait, 8000)));
    }
  }
}

export function uuid() {
  if (crypto.randomUUID) return crypto.randomUUID();
  // Plain http on a LAN address is not a secure context: no randomUUID there.
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const hex = [...b].map((x) => x.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
