// "/reset-password?token=…": POST /api/v1/auth/reset-password {token, newPassword} → 204.
// Every session of the account ends, this one too.
import { api } from '../api.js';
import { h, setTitle } from '../dom.js';
import { field, fieldError, form, submitButton } from '../forms.js';
import { t } from '../i18n.js';
import { navigate } from '../nav.js';
import * as session from '../session.js';

const TOKEN = 'bilet.resetToken';

export default function resetPassword({ root, query }) {
  setTitle(t('reset.title'));
  // The token leaves the address bar (and the history, and a shared screen) at once: kept in
  // this tab only, so a reload still finds it.
  const given = (query.get('token') || '').trim();
  if (given) {
    sessionStorage.setItem(TOKEN, given);
    navigate('/reset-password', { replace: true });
    return;
  }
  const token = sessionStorage.getItem(TOKEN) || '';
  const heading = h('h1', {}, t('reset.title'));
  if (!token) {
    root.replaceChildren(heading, h('p', {}, t('reset.noToken')), h('p', {}, h('a', { href: '/forgot-password' }, t('forgot.title'))));
    return;
  }
  const el = form(async ({ newPassword, repeatPassword }, formEl) => {
    if (newPassword !== repeatPassword) {
      fieldError(formEl, 'repeatPassword', t('reset.mismatch'));
      formEl.elements.repeatPassword.focus();
      return;
    }
    await api.post('/auth/reset-password', { token, newPassword });
    sessionStorage.removeItem(TOKEN);
    session.clear();
    root.replaceChildren(heading, h('p', { class: 'notice notice-ok', role: 'status' }, t('reset.done')),
      h('p', {}, h('a', { href: '/signin' }, t('signin.title'))));
  },
  field('newPassword', t('field.newPassword'), {
    type: 'password', autocomplete: 'new-password', required: true, hint: t('field.passwordRule'),
  }),
  field('repeatPassword', t('field.repeatPassword'), { type: 'password', autocomplete: 'new-password', required: true }),
  submitButton(t('reset.submit')));
  root.replaceChildren(heading, el);
}
