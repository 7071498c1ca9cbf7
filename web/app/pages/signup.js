// "/signup": POST /api/v1/auth/register {email, password, firstName, lastName} → UserDto,
// then POST /api/v1/auth/login with the same address and password: the account works at
// once while the verification mail is on its way. Telegram's sign-in, offered above, makes an
// account too.
import { api } from '../api.js';
import { announce, fill, h, setTitle } from '../dom.js';
import { field, form, submitButton } from '../forms.js';
import { t } from '../i18n.js';
import { navigate, safeNext } from '../nav.js';
import * as session from '../session.js';
import { messengerSignIn } from './signin.js';

export default async function signup({ root, query, signal }) {
  setTitle(t('signup.title'));
  const next = safeNext(query.get('next'));
  const messenger = await messengerSignIn(next, signal);
  const el = form(async ({ firstName, lastName, email, password }) => {
    await api.post('/auth/register', { email, password, firstName, lastName });
    session.save(await api.post('/auth/login', { email, password }));
    navigate(next, { replace: true });
    announce(t('signup.done', { email }));
  },
  field('firstName', t('field.firstName'), { autocomplete: 'given-name' }),
  field('lastName', t('field.lastName'), { autocomplete: 'family-name' }),
  field('email', t('field.email'), { type: 'email', autocomplete: 'email', required: true }),
  field('password', t('field.password'), {
    type: 'password', autocomplete: 'new-password', required: true, hint: t('field.passwordRule'),
  }),
  submitButton(t('signup.submit')));

  fill(root,
    h('h1', {}, t('signup.title')),
    messenger,
    el,
    h('p', {}, t('signup.haveAccount'), ' ', h('a', { href: `/signin?next=${encodeURIComponent(next)}` }, t('signin.title'))));
}
