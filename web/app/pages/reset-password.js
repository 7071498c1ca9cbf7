// "/reset-password?token=…": POST /api/v1/auth/reset-password {token, newPassword} → 204.
// Every session of the account ends, this one too.
import { api } from '../api.js';
import { h, setTitle } from '../dom.js';
import { field, fieldError, form, submitButton } from '../forms.js';
import { t } from '../i18n.js';
import * as session from '../session.js';

export default function resetPassword({ root, query }) {
  setTitle(t('reset.title'));
  const token = (query.get('token') || '').trim();
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
