// "/forgot-password": POST /api/v1/auth/forgot-password {email}; the answer is the same
// whether the address has an account, and so is the message.
import { api } from '../api.js';
import { h, setTitle } from '../dom.js';
import { field, form, submitButton } from '../forms.js';
import { t } from '../i18n.js';

export default function forgotPassword({ root }) {
  setTitle(t('forgot.title'));
  const heading = h('h1', {}, t('forgot.title'));
  const el = form(async ({ email }) => {
    await api.post('/auth/forgot-password', { email });
    root.replaceChildren(heading, h('p', { class: 'notice notice-ok', role: 'status' }, t('forgot.sent', { email })),
      h('p', {}, h('a', { href: '/signin' }, t('signin.title'))));
  },
  h('p', {}, t('forgot.help')),
  field('email', t('field.email'), { type: 'email', autocomplete: 'email', required: true }),
  submitButton(t('forgot.submit')));
  root.replaceChildren(heading, el);
}
