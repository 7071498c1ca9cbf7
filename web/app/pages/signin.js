// "/signin?next=…": POST /api/v1/auth/login {email, password} → AuthResponse.
import { api } from '../api.js';
import { announce, h, setTitle } from '../dom.js';
import { field, form, submitButton } from '../forms.js';
import { dateTime } from '../format.js';
import { t } from '../i18n.js';
import { navigate, safeNext } from '../nav.js';
import * as session from '../session.js';

export default function signin({ root, query }) {
  setTitle(t('signin.title'));
  const next = safeNext(query.get('next'));
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

  root.replaceChildren(
    h('h1', {}, t('signin.title')),
    el,
    h('p', {}, h('a', { href: '/forgot-password' }, t('signin.forgot'))),
    h('p', {}, t('signin.noAccount'), ' ', h('a', { href: `/signup?next=${encodeURIComponent(next)}` }, t('signup.title'))));
}
