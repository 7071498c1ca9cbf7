// Files the API answers that are not JSON (exports, a ticket's PDF or wallet pass): fetched with
// the bearer token and the language, since a plain link could not carry the token, then saved
// through a temporary link. Shared by the organizer's pages (staff/kit.js) and the ticket page.
import { ApiError, api } from './api.js';
import { h } from './dom.js';
import { lang, t } from './i18n.js';
import * as session from './session.js';

// fetch with the bearer token and the language; a 401 gets one refresh (api.js refreshes on
// a 401 of its own, so a cheap read of /users/me does it) and one retry. Errors are ApiError.
export async function fetchRaw(method, path, { body, headers = {}, signal } = {}, retried = false) {
  const token = session.accessToken();
  const sent = { Accept: '*/*', 'Accept-Language': lang(), ...headers };
  if (token) sent.Authorization = `Bearer ${token}`;
  let res;
  try {
    res = await fetch(`/api/v1${path}`, { method, body, headers: sent, signal });
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new ApiError(0, { code: 'network', message: t('error.network') });
  }
  if (res.status === 401 && token && !retried) {
    await api.get('/users/me').catch(() => {});
    if (session.accessToken() && session.accessToken() !== token) return fetchRaw(method, path, { body, headers, signal }, true);
  }
  if (!res.ok) {
    const json = await res.json().catch(() => null);
    const retry = Number(res.headers.get('Retry-After'));
    throw new ApiError(res.status, json, Number.isFinite(retry) && retry > 0 ? retry : null);
  }
  return res;
}

// Saves `blob` as `name` through a temporary link.
export function save(blob, name) {
  const url = URL.createObjectURL(blob);
  const a = h('a', { href: url, download: name, hidden: true });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

// A file the API answers: to a POST with JSON `body`, or to a GET when `body` is null; saved
// under the name its Content-Disposition gives, else `fallbackName`.
export async function download(path, body, fallbackName) {
  const res = body == null
    ? await fetchRaw('GET', path)
    : await fetchRaw('POST', path, {
      body: JSON.stringify(body),
      headers: { 'Content-Type': 'application/json' },
    });
  const named = /filename="?([^";]+)"?/i.exec(res.headers.get('Content-Disposition') || '');
  save(await res.blob(), named ? named[1] : fallbackName);
}
