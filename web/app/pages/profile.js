// "/me/profile": the signed-in person's own account — their name, their picture, their
// password, the devices signed in (each can be signed out from here), and closing the account
// with what it does.
//   GET    /api/v1/users/me                  the profile (avatarId among it)
//   PUT    /api/v1/users/me                  {firstName, lastName}; {avatarId} or {avatarId: null}
//   POST   /api/v1/media/upload?personal=true multipart `file`: the picture, a personal file
//   GET    /api/v1/media/{id}/url?variant=SMALL   the picture's link (else the original's)
//   PUT    /api/v1/users/me/password         {currentPassword, newPassword} → 204, every session ends
//   GET    /api/v1/users/me/sessions         [{id, client, startedAt, lastUsedAt, expiresAt}]
//   DELETE /api/v1/users/me/sessions/{id}    204; the access token's `sid` names this device's
//   DELETE /api/v1/users/me                  204; 422 owns_organizations
// and a link to /me/join (a group's code).
// Every result is said next to what was pressed (and aloud, through the status region).
import { api } from '../api.js';
import { announce, fill, h, hidden, setTitle } from '../dom.js';
import { resultLine } from '../result-line.js';
import { dateTime } from '../format.js';
import { field, fieldError, form, submitButton } from '../forms.js';
import { navigate } from '../nav.js';
import * as session from '../session.js';
import { imagePicker, upload } from '../staff/kit.js';
import { loadTexts, t } from '../staff/texts.js';

const section = (id, title, ...children) =>
  h('section', { 'aria-labelledby': id }, h('h2', { id }, title), ...children);

// "Chrome on Android" would need a parser of User-Agents; the text itself, shortened, tells a
// person their own devices apart well enough.
const clientName = (client) => {
  if (!client) return t('profile.unknownDevice');
  return client.length > 90 ? `${client.slice(0, 90)}…` : client;
};

export default async function profile({ root, signal }) {
  const [me] = await Promise.all([api.get('/users/me', { signal }), loadTexts(['profile'])]);
  setTitle(t('profile.title'));

  // ---- Name ----
  const nameSaid = resultLine();
  const names = form(async ({ firstName, lastName }) => {
    const updated = await api.put('/users/me', { firstName: firstName.trim(), lastName: lastName.trim() });
    session.save({ accessToken: session.accessToken(), refreshToken: session.refreshToken(), user: { ...session.user(), ...updated } });
    nameSaid.say(t('profile.saved'));
  },
  field('firstName', t('field.firstName'), { value: me.firstName || '', autocomplete: 'given-name', maxlength: 100 }),
  field('lastName', t('field.lastName'), { value: me.lastName || '', autocomplete: 'family-name', maxlength: 100 }),
  submitButton(t('profile.save')));

  // ---- Picture ----
  // An avatar must be a personal file of its user (the API refuses anything else with 422):
  // the upload asks to be personal, so it is one while acting for an organization too.
  const avatarSaid = resultLine();
  let avatarId = me.avatarId || null;
  const avatarImg = h('img', { class: 'cover-preview', alt: '', height: 128, hidden: true });
  const avatarNote = h('p', { class: 'hint' });
  const showAvatar = (src, note) => {
    avatarImg.hidden = !src;
    if (src) avatarImg.src = src;
    avatarNote.textContent = note;
  };
  async function loadAvatar() {
    if (!avatarId) { showAvatar(null, t('profile.avatarNone')); return; }
    // Variants are made shortly after an upload: until then the original.
    const url = (v) => api.get(`/media/${avatarId}/url${v}`, { signal });
    try {
      const { url: src } = await url('?variant=SMALL').catch(() => url(''));
      showAvatar(src, t('profile.avatarCurrent'));
    } catch (err) {
      if (err.name !== 'AbortError') showAvatar(null, t('profile.avatarUnavailable'));
    }
  }
  const keep = (updated) => {
    avatarId = updated.avatarId || null;
    session.save({ accessToken: session.accessToken(), refreshToken: session.refreshToken(), user: { ...session.user(), ...updated } });
  };
  const picker = imagePicker({
    id: 'avatar-file',
    label: t('profile.avatarChoose'),
    rules: t('profile.avatarRules'),
    pickFirst: t('profile.avatarPick'),
    formOf: () => avatarForm,
    preview: (src) => showAvatar(src, t('profile.avatarPreview')),
    cleared: loadAvatar,
  });
  const avatarForm = form(async (_, el) => {
    const file = picker.file(el);
    const media = await upload(file, signal, { personal: true });
    keep(await api.put('/users/me', { avatarId: media.id }));
    el.reset();
    drawRemove();
    avatarSaid.say(t('profile.avatarSaved'));
    // The picked image stands until the stored one's link answers.
    showAvatar(picker.shown(), t('profile.avatarCurrent'));
    await loadAvatar();
  }, picker.field, submitButton(t('profile.avatarSave')));
  const removeBox = h('p', {});
  function drawRemove() {
    fill(removeBox, avatarId && h('button', {
      type: 'button',
      class: 'danger',
      onclick: async (e) => {
        const button = e.currentTarget;
        button.disabled = true;
        try {
          keep(await api.put('/users/me', { avatarId: null }));
          drawRemove();
          await loadAvatar();
          avatarSaid.say(t('profile.avatarRemoved'));
          // The pressed button is gone: on to what comes next, choosing another.
          avatarForm.querySelector('input[type=file], button')?.focus();
        } catch (err) {
          button.disabled = false;
          avatarSaid.say(err.message, 'error');
        }
      },
    }, t('profile.avatarRemove')));
  }
  drawRemove();

  // ---- Password ----
  const passwordSaid = resultLine();
  const password = form(async ({ currentPassword, newPassword, repeatPassword }, el) => {
    if (newPassword !== repeatPassword) {
      fieldError(el, 'repeatPassword', t('reset.mismatch'));
      el.elements.repeatPassword.focus();
      return;
    }
    await api.put('/users/me/password', { currentPassword, newPassword });
    // Every session has ended, this one too: sign in again with the new password.
    session.clear();
    navigate('/signin');
    announce(t('profile.passwordChanged'));
  },
  h('input', { type: 'text', name: 'username', autocomplete: 'username', value: me.email || '', hidden: true }),
  field('currentPassword', t('profile.currentPassword'), { id: 'pw-current', type: 'password', autocomplete: 'current-password', hint: t('profile.noPasswordYet') }),
  field('newPassword', t('field.newPassword'), { id: 'pw-new', type: 'password', autocomplete: 'new-password', required: true, hint: t('field.passwordRule') }),
  field('repeatPassword', t('field.repeatPassword'), { id: 'pw-repeat', type: 'password', autocomplete: 'new-password', required: true }),
  submitButton(t('profile.changePassword')));

  // ---- Sessions ----
  const sessionsSaid = resultLine();
  const sessionsBox = h('div', {});
  const mine = session.claims()?.sid;
  async function loadSessions() {
    const list = await api.get('/users/me/sessions', { signal });
    fill(sessionsBox, h('ul', { class: 'sessions' }, list.map((s) => {
      const here = s.id === mine;
      const name = clientName(s.client);
      return h('li', { class: 'session' },
        h('p', {}, h('strong', {}, name), here && h('span', { class: 'badge badge-confirmed' }, t('profile.thisDevice'))),
        h('p', { class: 'meta' }, t('profile.sessionTimes', { started: dateTime(s.startedAt), used: dateTime(s.lastUsedAt) })),
        h('button', {
          type: 'button',
          class: here ? null : 'danger',
          onclick: async (e) => {
            const button = e.currentTarget;
            if (here) {
              const refreshToken = session.refreshToken();
              session.clear();
              if (refreshToken) api.post('/auth/logout', { refreshToken }).catch(() => {});
              navigate('/');
              announce(t('auth.signedOut'));
              return;
            }
            button.disabled = true;
            try {
              await api.del(`/users/me/sessions/${encodeURIComponent(s.id)}`);
              sessionsSaid.say(t('profile.sessionEnded', { name }));
              await loadSessions();
              sessionsBox.querySelector('button')?.focus();
            } catch (err) {
              button.disabled = false;
              sessionsSaid.say(err.message, 'error');
            }
          },
        }, t('nav.signOut'), hidden(`: ${name}`)));
    })));
  }

  // ---- Closing the account ----
  const deleteSaid = resultLine();
  const closing = h('button', {
    type: 'button',
    class: 'danger',
    onclick: async (e) => {
      if (!window.confirm(t('profile.deleteConfirm'))) return;
      const button = e.currentTarget;
      button.disabled = true;
      try {
        await api.del('/users/me');
        session.clear();
        navigate('/');
        announce(t('profile.deleted'));
      } catch (err) {
        button.disabled = false;
        deleteSaid.say(err.message, 'error');
      }
    },
  }, t('profile.delete'));

  root.replaceChildren(
    h('h1', {}, t('profile.title')),
    me.email && h('p', { class: 'meta' }, t('profile.email', { email: me.email })),
    section('profile-name', t('profile.name'), names, nameSaid),
    section('profile-avatar', t('profile.avatar'), avatarImg, avatarNote, avatarForm, removeBox, avatarSaid),
    section('profile-password', t('profile.password'), h('p', { class: 'hint' }, t('profile.passwordHint')), password, passwordSaid),
    section('profile-groups', t('profile.groups'), h('p', {}, t('profile.groupsHint'), ' ', h('a', { href: '/me/join' }, t('profile.join')))),
    section('profile-sessions', t('profile.sessions'), h('p', { class: 'hint' }, t('profile.sessionsHint')), sessionsBox, sessionsSaid),
    section('profile-delete', t('profile.deleteTitle'),
      h('ul', {}, ['profile.deleteSignsOut', 'profile.deleteTickets', 'profile.deleteMemberships', 'profile.deleteEmail', 'profile.deleteOwners']
        .map((k) => h('li', {}, t(k)))),
      closing, deleteSaid));
  await Promise.all([loadSessions(), loadAvatar()]);
  return picker.release;
}
