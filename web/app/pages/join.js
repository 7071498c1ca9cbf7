// "/me/join?code=…": joining with a code someone gave: a group's (its private events open to
// its members) or an organization's invite (its staff). A link with `?code=` joins as soon as
// the page opens; otherwise the code is typed. A group code is tried first (what participants
// are given), then an organization's invite.
//   POST /api/v1/groups/join/{code}          → the group joined; 404 unknown, 409 already in
//   POST /api/v1/organizations/join/{code}   → the organization joined
import { api } from '../api.js';
import { h, setTitle } from '../dom.js';
import { resultLine } from '../result-line.js';
import { field, form, submitButton } from '../forms.js';
import { navigate } from '../nav.js';
import { loadTexts, t } from '../staff/texts.js';

// A code as the API reads it: no slash, backslash, percent or control character.
const usable = (code) => code && code.length <= 32 && !/[\u0000-\u001f\u007f/\\%]/.test(code) && code !== '.' && code !== '..';

const GIVEN = 'bilet.joinCode';

export default async function join({ root, query }) {
  // A shared link's code leaves the address (and the history) at once; this tab joins with it.
  if (query.get('code')) {
    sessionStorage.setItem(GIVEN, query.get('code'));
    navigate('/me/join', { replace: true });
    return;
  }
  const given = sessionStorage.getItem(GIVEN);
  sessionStorage.removeItem(GIVEN);
  await loadTexts(['profile']);
  setTitle(t('join.title'));
  const said = resultLine();
  const say = said.say;

  async function tryCode(raw) {
    const code = raw.trim();
    if (!usable(code)) {
      say(t('join.badCode'), 'error');
      return;
    }
    const path = encodeURIComponent(code);
    try {
      const group = await api.post(`/groups/join/${path}`);
      say(t('join.group', { name: group.name }), 'ok');
      return;
    } catch (e) {
      if (e.status === 409) { say(t('join.already'), 'ok'); return; }
      if (e.status !== 404) throw e;
    }
    try {
      const org = await api.post(`/organizations/join/${path}`);
      say(t('join.organization', { name: org.name }), 'ok');
    } catch (e) {
      if (e.status === 404) say(t('join.unknown'), 'error');
      else throw e;
    }
  }

  const el = form(async ({ code }) => tryCode(code),
    field('code', t('join.code'), { id: 'join-code', maxlength: 32, autocomplete: 'off', spellcheck: 'false', value: given || '', hint: t('join.hint') }),
    submitButton(t('join.submit')));
  root.replaceChildren(h('h1', {}, t('join.title')), el, said,
    h('p', {}, h('a', { href: '/' }, t('join.toEvents'))));
  if (given) await tryCode(given).catch((e) => say(e.message, 'error'));
}
