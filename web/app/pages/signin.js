// "/signin?next=…": POST /api/v1/auth/login {email, password} → AuthResponse, and above it
// the link to Telegram's sign-in page when GET /api/v1/auth/messenger offers a bot.
import { api } from '../api.js';
import { announce, fill, h, setTitle } from '../dom.js';
import { field, form, submitButton } from '../forms.js';
import { dateTime } from '../format.js';
import { t } from '../i18n.js';
import { navigate, safeNext } from '../nav.js';
import * as session from '../session.js';
import { authLink } from '../telegram.js';

// The messenger is the primary way in, so it comes first; without a bot, or without an
// answer, the page is the email form alone. Shared with the sign-up page.
export async function messengerSignIn(next, signal) {
  let href = null;
  try {
    href = authLink(await api.get('/auth/messenger', { signal }), location.origin, next);
  } catch { /* not offered */ }
  return href && [
    h('p', {}, h('a', { class: 'button telegram', href }, t('telegram.signIn'))),
    h('p', { class: 'or-line' }, t('telegram.orEmail')),
  ];
}

export default async function signin({ root, query, signal }) {
  setTitle(t('signin.title'));
  const next = safeNext(query.get('next'));
  const messenger = await messengerSignIn(next, signal);
  const el = form(async ({ email, password }) => {
    try {
      session.save(await api.post('/auth/login', { email, password }));
    } catch (e) {
      // A locked account says until when.
      if (e.code === 'account_locked' && e.details?.lockedUntil) {
        e.message = `${e.message} ${t('signin.lockedUntil', { time: dateTime(e.details.lockedUntil) })}`;
      }
      throw e;
    }
    navigate(next, { replace: true });
    announce(t('signin.done'));
  },
  field('email', t('field.email'), { type: 'email', autocomplete: 'username', required: true }),
  field('password', t('field.password'), { type: 'password', autocomplete: 'current-password', required: true }),
  submitButton(t('signin.submit')));

  fill(root,
    h('h1', {}, t('signin.title')),
    messenger,
    el,
    h('p', {}, h('a', { href: '/forgot-password' }, t('signin.forgot'))),
    h('p', {}, t('signin.noAccount'), ' ', h('a', { href: `/signup?next=${encodeURIComponent(next)}` }, t('signup.title'))));
}
