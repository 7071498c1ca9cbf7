// "/verify-email?token=…": POST /api/v1/auth/verify-email {token}; on a refusal (used or
// expired link) a new mail can be asked for: POST /api/v1/auth/resend-verification {email}.
import { api } from '../api.js';
import { h, setTitle } from '../dom.js';
import { field, form, submitButton } from '../forms.js';
import { t } from '../i18n.js';

function resendForm() {
  const done = h('p', { role: 'status' });
  const el = form(async ({ email }) => {
    await api.post('/auth/resend-verification', { email });
    done.textContent = t('verify.resent');
  },
  field('email', t('field.email'), { type: 'email', autocomplete: 'email', required: true }),
  submitButton(t('verify.resend')));
  return h('section', { 'aria-labelledby': 'resend-title' }, h('h2', { id: 'resend-title' }, t('verify.resendTitle')), el, done);
}

export default async function verifyEmail({ root, query, signal }) {
  setTitle(t('verify.title'));
  const token = (query.get('token') || '').trim();
  const heading = h('h1', {}, t('verify.title'));
  if (!token) {
    root.replaceChildren(heading, h('p', {}, t('verify.noToken')), resendForm());
    return;
  }
  try {
    await api.post('/auth/verify-email', { token }, { signal });
    root.replaceChildren(heading, h('p', { class: 'notice notice-ok' }, t('verify.done')),
      h('p', {}, h('a', { href: '/' }, t('error.toCatalogue'))));
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    root.replaceChildren(heading, h('p', { class: 'notice notice-error' }, t('verify.failed'), ' ', e.message), resendForm());
  }
}
