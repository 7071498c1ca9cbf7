// "/me/notifications": linking the Telegram chat and the notification settings.
//   GET  /api/v1/notifications/link          → {linked, linkedAt}: is a chat bound (again when the tab shows)
//   POST /api/v1/notifications/link          → {url, expiresAt}: the bot's one-time deep link
//   GET|PUT /api/v1/notifications/preferences {reminders, changes, waitingList, receipts, language}
import { api } from '../api.js';
import { announce, h, setTitle } from '../dom.js';
import { checkbox, form, submitButton } from '../forms.js';
import { dateTime } from '../format.js';
import { t } from '../i18n.js';

const KINDS = ['reminders', 'changes', 'waitingList', 'receipts'];

// Whether a chat is bound: read on arrival and when the tab shows again (back from Telegram).
function linkState(signal) {
  const el = h('p', { class: 'notice', role: 'status', hidden: true });
  const check = async () => {
    const s = await api.get('/notifications/link', { signal }).catch(() => null);
    if (!s) return;
    el.textContent = s.linked ? t('notif.linked', { time: dateTime(s.linkedAt) }) : t('notif.notLinked');
    el.hidden = false;
  };
  return { el, check };
}

function telegram(state) {
  const out = h('div', { class: 'link-out' });
  const el = form(async () => {
    const link = await api.post('/notifications/link');
    if (!/^https:\/\//.test(link.url)) throw new Error(t('error.unknown'));
    const a = h('a', { href: link.url, target: '_blank', rel: 'noopener noreferrer', class: 'button primary' }, t('notif.open'));
    out.replaceChildren(a, h('p', { class: 'hint' }, t('notif.expires', { time: dateTime(link.expiresAt) })));
    a.focus();
  }, submitButton(t('notif.link')));
  return h('section', { 'aria-labelledby': 'tg-title' },
    h('h2', { id: 'tg-title' }, t('notif.telegram')),
    state, h('p', {}, t('notif.telegramHelp')), el, out);
}

function preferences(prefs) {
  const el = form(async (data) => {
    const body = { language: data.language };
    for (const k of KINDS) body[k] = data[k] === 'on';
    await api.put('/notifications/preferences', body);
    announce(t('notif.saved'));
  },
  h('fieldset', {}, h('legend', {}, t('notif.kinds')), KINDS.map((k) => checkbox(k, t(`notif.${k}`), prefs[k]))),
  h('div', { class: 'field' },
    h('label', { for: 'f-language' }, t('notif.language')),
    h('select', { id: 'f-language', name: 'language' },
      ['ru', 'en'].map((l) => h('option', { value: l, selected: prefs.language === l, lang: l }, t(`lang.${l}`))))),
  submitButton(t('notif.save')));
  return h('section', { 'aria-labelledby': 'prefs-title' }, h('h2', { id: 'prefs-title' }, t('notif.prefs')), el);
}

export default async function notifications({ root, signal }) {
  setTitle(t('notif.title'));
  const state = linkState(signal);
  const [prefs] = await Promise.all([api.get('/notifications/preferences', { signal }), state.check()]);
  root.replaceChildren(h('h1', {}, t('notif.title')), telegram(state.el), preferences(prefs));
  const onShow = () => { if (!document.hidden) state.check(); };
  document.addEventListener('visibilitychange', onShow);
  return () => document.removeEventListener('visibilitychange', onShow);
}
