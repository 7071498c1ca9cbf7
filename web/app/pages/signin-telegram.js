// "/signin/telegram?next=…#tgAuthResult=…": where Telegram's sign-in page sends the browser
// back. POST /api/v1/auth/messenger {id, first_name, …, auth_date, hash} → AuthResponse.
import { api } from '../api.js';
import { announce, h, setTitle } from '../dom.js';
import { t } from '../i18n.js';
import { navigate, safeNext } from '../nav.js';
import * as session from '../session.js';
import { readAuthResult } from '../telegram.js';

// The fragment is gone from the address after the first drawing, so a redraw of this page
// (a language switch while waiting, or after a failure) follows the same attempt. A page load
// holds at most one: Telegram comes back with a full load.
let attempt = null;

function start(hash) {
  const result = readAuthResult(hash);
  if (result) {
    // Saved here rather than by the page: a redraw must not sign in twice, and leaving the
    // page while waiting still ends signed in, as the visitor asked.
    attempt = api.post('/auth/messenger', result).then((auth) => session.save(auth));
  } else {
    attempt = Promise.reject(Object.assign(new Error(), { code: 'no_result' }));
  }
  attempt.catch(() => {}); // handled by whichever drawing awaits it
}

function failure(e) {
  if (e.code === 'no_result') return t('telegram.noResult');
  if (e.status === 401) return t('telegram.rejected');
  if (e.status === 404 || e.status === 503 || e.code === 'messenger_not_configured') return t('telegram.off');
  return e.message || t('error.unknown');
}

export default function signinTelegram({ root, query, signal }) {
  setTitle(t('telegram.signIn'));
  const next = safeNext(query.get('next'));
  if (location.hash || !attempt) {
    const { hash } = location;
    // A signed pass to the account for some minutes: out of the address at once, so neither
    // a reload, Back, the history list nor a copied address can replay it.
    history.replaceState(history.state, '', location.pathname + location.search);
    start(hash);
  }
  const heading = h('h1', {}, t('telegram.signIn'));
  const body = h('div', {}, h('p', { class: 'loading', role: 'status' }, t('telegram.pending')));
  root.replaceChildren(heading, body);
  // Not awaited: the router focuses the heading and clears aria-busy now, so the outcome
  // below is announced when it comes.
  attempt.then(() => {
    if (signal.aborted) return;
    navigate(next, { replace: true });
    announce(t('signin.done'));
  }, (e) => {
    if (signal.aborted) return;
    setTitle(t('telegram.failed'));
    heading.textContent = t('telegram.failed');
    body.replaceChildren(
      h('p', { class: 'notice notice-error', role: 'alert' }, failure(e)),
      h('p', {}, h('a', { href: `/signin?next=${encodeURIComponent(next)}` }, t('signin.title'))));
  });
}
