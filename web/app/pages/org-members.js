// "/org/members": the organization's members, invites for new moderators, and the groups that
// private events are for.
//   GET    /api/v1/organizations/{id}                        name, my role
//   GET    /api/v1/organizations/{id}/members?page&size&sort=joinedAt,asc
//   DELETE /api/v1/organizations/{id}/members/{userId}       the owner removes; anyone leaves
//   POST   /api/v1/organizations/{id}/invite {role: MODERATOR, messengerUsername?}
//   GET    /api/v1/organizations/{id}/invites?page&size&sort=createdAt,desc   the pending ones
//   DELETE /api/v1/organizations/{id}/invites/{inviteId}    withdraw one
//   GET    /api/v1/organizations/{id}/groups?page&size,  POST (create) {name, description}
//   PUT|DELETE /api/v1/groups/{id},  POST /api/v1/groups/{id}/invite,  GET /api/v1/groups/{id}/members
// A role cannot be changed here: an organization has one OWNER, and invites and members are
// MODERATORs (domain/src/identity/members.rs), so PUT …/members/{userId} has nothing to offer.
import { api } from '../api.js';
import { announce, fill, h, setTitle, spinner } from '../dom.js';
import { field, form, submitButton } from '../forms.js';
import { dateTime } from '../format.js';
import { navigate } from '../nav.js';
import * as session from '../session.js';
import { copyButton, invalid, needOrg, orgNav, pager, scroller, tenantId } from '../staff/kit.js';
import { t, tn } from '../staff/texts.js';

const hiddenName = (text) => h('span', { class: 'visually-hidden' }, text);
const fullName = (m) => `${m.firstName || ''} ${m.lastName || ''}`.trim() || m.email || m.userId;

// A code with its messenger link, to pass on.
function share(code, link, expiresAt) {
  return h('div', { class: 'notice share' },
    h('p', {}, t('inv.code'), ' ', h('code', { class: 'code' }, code), ' ', copyButton(code, t('inv.copyCode'))),
    h('p', {}, h('a', { href: link, target: '_blank', rel: 'noopener noreferrer' }, link), ' ', copyButton(link, t('inv.copyLink'))),
    expiresAt && h('p', { class: 'hint' }, t('inv.expires', { date: dateTime(expiresAt) })));
}

export default async function orgMembers({ root, signal }) {
  setTitle(t('org.members'));
  if (!needOrg(root, t('org.members'))) return;
  const orgId = tenantId();
  const org = await api.get(`/organizations/${orgId}`, { signal });
  const owner = org.myRole === 'OWNER';
  const me = session.user()?.id;
  const failed = (e) => { if (e.name !== 'AbortError') announce(e.message, 'error'); };

  // ---- Members ----
  const members = h('div', { class: 'results' }, spinner());
  let memberPage = 0;

  async function removeMember(m) {
    const self = m.userId === me;
    if (!window.confirm(t(self ? 'mem.confirmLeave' : 'mem.confirmRemove', { name: fullName(m), org: org.name }))) return;
    try {
      await api.del(`/organizations/${orgId}/members/${m.userId}`);
      if (self) {
        navigate('/org/');
        announce(t('mem.left', { org: org.name }));
        return;
      }
      announce(t('mem.removed', { name: fullName(m) }));
      await loadMembers();
      members.querySelector('.count')?.focus();
    } catch (e) {
      announce(e.message, 'error');
    }
  }

  async function loadMembers() {
    const page = await api.get(`/organizations/${orgId}/members?page=${memberPage}&size=50&sort=joinedAt,asc`, { signal });
    fill(members,
      h('p', { class: 'count', tabindex: '-1' }, tn('mem.found', page.totalElements)),
      scroller(t('mem.title'), h('table', {},
        h('caption', { class: 'visually-hidden' }, t('mem.title')),
        h('thead', {}, h('tr', {}, [t('mem.name'), t('mem.email'), t('mem.role'), t('mem.joined'), t('org.actions')].map((x) => h('th', { scope: 'col' }, x)))),
        h('tbody', {}, page.data.map((m) => h('tr', {},
          h('th', { scope: 'row' }, fullName(m), m.userId === me && ` ${t('mem.you')}`),
          h('td', {}, m.email || '—'),
          h('td', {}, t(`role.${m.role}`)),
          h('td', {}, dateTime(m.joinedAt)),
          h('td', { class: 'row-actions' },
            m.role !== 'OWNER' && (owner || m.userId === me) && h('button', { type: 'button', class: 'danger', onclick: () => removeMember(m) },
              m.userId === me ? t('mem.leave') : [t('mem.remove'), hiddenName(`: ${fullName(m)}`)]))))))),
      pager(page, (p) => { memberPage = p; loadMembers().then(() => members.querySelector('.count').focus()).catch(failed); }));
  }

  // ---- Invites: the pending ones (unused, unexpired), newest first ----
  const invites = h('div', { class: 'results' }, spinner());
  let invitePage = 0;

  function inviteItem(inv) {
    return h('li', { class: 'card', tabindex: '-1', 'data-invite': inv.id },
      h('p', {}, inv.messengerUsername ? t('inv.for', { name: `@${inv.messengerUsername}` }) : t('inv.anyone'),
        ' ', h('span', { class: 'hint' }, t('inv.createdAt', { date: dateTime(inv.createdAt) }))),
      share(inv.inviteCode, inv.deepLink, inv.expiresAt),
      h('div', { class: 'actions' },
        h('button', { type: 'button', class: 'danger', onclick: () => withdrawInvite(inv) },
          t('inv.withdraw'), hiddenName(`: ${inv.inviteCode}`))));
  }

  async function loadInvites() {
    const page = await api.get(`/organizations/${orgId}/invites?page=${invitePage}&size=20&sort=createdAt,desc`, { signal });
    // The last invite of a later page withdrawn or used: show the page before.
    if (!page.data.length && invitePage > 0) {
      invitePage -= 1;
      return loadInvites();
    }
    fill(invites,
      h('p', { class: 'count', tabindex: '-1' }, tn('inv.found', page.totalElements)),
      page.data.length ? h('ul', { class: 'cards' }, page.data.map(inviteItem)) : h('p', {}, t('inv.none')),
      pager(page, (p) => { invitePage = p; loadInvites().then(() => invites.querySelector('.count').focus()).catch(failed); }));
    return page;
  }

  async function withdrawInvite(inv) {
    if (!window.confirm(t('inv.confirmWithdraw', { code: inv.inviteCode }))) return;
    try {
      await api.del(`/organizations/${orgId}/invites/${inv.id}`);
      announce(t('inv.withdrawn'));
    } catch (e) {
      // 404: used or withdrawn meanwhile; the list below shows how things stand.
      announce(e.message, 'error');
    }
    try {
      await loadInvites();
      invites.querySelector('.count')?.focus();
    } catch (e) {
      failed(e);
    }
  }

  const inviteForm = form(async (data) => {
    const username = data.messengerUsername.trim().replace(/^@/, '');
    const invite = await api.post(`/organizations/${orgId}/invite`, { role: 'MODERATOR', ...(username && { messengerUsername: username }) });
    inviteForm.reset();
    announce(t('inv.created'));
    invitePage = 0;
    try {
      await loadInvites();
    } catch (e) {
      if (e.name === 'AbortError') return;
      // The list could not be read: the new invite is shown alone, so its code is not lost.
      fill(invites, h('ul', { class: 'cards' }, inviteItem({ ...invite, createdAt: new Date().toISOString() })));
    }
    (invites.querySelector(`[data-invite="${invite.id}"]`) || invites.querySelector('.count'))?.focus();
  },
  field('messengerUsername', t('inv.username'), { id: 'inv-username', hint: t('inv.usernameHint'), maxlength: 100, autocapitalize: 'none', spellcheck: 'false' }),
  submitButton(t('inv.create')));

  // ---- Groups ----
  const groups = h('div', { class: 'results' }, spinner());
  let groupPage = 0;
  const groupEditor = h('div', {});

  function groupForm(group, prefix, done) {
    const el = form(async (data) => {
      const body = { name: data.name.trim(), description: data.description };
      if (!body.name) throw invalid({ name: t('org.required') });
      const saved = group ? await api.put(`/groups/${group.id}`, body) : await api.post(`/organizations/${orgId}/groups`, body);
      await loadGroups();
      done(saved);
    },
    field('name', t('grp.name'), { id: `${prefix}-name`, value: group?.name || '', maxlength: 255, required: true }),
    field('description', t('grp.description'), { id: `${prefix}-description`, tag: 'textarea', rows: 2, value: group?.description || '' }),
    h('div', { class: 'actions' },
      submitButton(group ? t('org.save') : t('grp.create')),
      group && h('button', { type: 'button', onclick: () => done(null) }, t('org.cancelEdit'))));
    return el;
  }

  function editGroup(g) {
    const el = groupForm(g, 'grp-edit', (saved) => {
      groupEditor.replaceChildren();
      if (saved) announce(t('grp.saved', { name: saved.name }));
      groups.querySelector(`[data-edit="${g.id}"]`)?.focus();
    });
    groupEditor.replaceChildren(h('section', { class: 'card editor', 'aria-labelledby': 'grp-edit-title' },
      h('h3', { id: 'grp-edit-title' }, t('grp.editing', { name: g.name })), el));
    el.querySelector('input').focus();
  }

  async function deleteGroup(g) {
    if (!window.confirm(t('grp.confirmDelete', { name: g.name }))) return;
    try {
      await api.del(`/groups/${g.id}`);
      announce(t('grp.deleted', { name: g.name }));
      await loadGroups();
      groups.querySelector('.count')?.focus();
    } catch (e) {
      announce(e.message, 'error');
    }
  }

  function groupItem(g) {
    const id = `grp-${g.id}`;
    const out = h('div', {});
    const people = h('details', {
      ontoggle: async (e) => {
        if (!e.target.open || e.target.dataset.loaded) return;
        e.target.dataset.loaded = '1';
        const list = e.target.querySelector('.people');
        try {
          const page = await api.get(`/groups/${g.id}/members?size=100&sort=firstName,asc`, { signal });
          fill(list, page.data.length
            ? h('ul', {}, page.data.map((m) => h('li', {}, fullName(m), ' ', h('span', { class: 'hint' }, dateTime(m.joinedAt)))))
            : h('p', {}, t('grp.noMembers')),
          page.totalElements > page.data.length && h('p', { class: 'hint' }, tn('grp.more', page.totalElements - page.data.length)));
        } catch (err) {
          delete e.target.dataset.loaded;
          fill(list, h('p', {}, err.message));
        }
      },
    }, h('summary', {}, t('grp.members'), hiddenName(`: ${g.name}`)), h('div', { class: 'people' }, spinner()));
    return h('li', { class: 'card' }, h('article', { 'aria-labelledby': id },
      h('h3', { id }, g.name),
      g.description && h('p', { class: 'description' }, g.description),
      h('div', { class: 'actions' },
        h('button', {
          type: 'button',
          onclick: async (e) => {
            const button = e.currentTarget;
            button.disabled = true;
            try {
              const invite = await api.post(`/groups/${g.id}/invite`);
              fill(out, share(invite.inviteCode, invite.deepLink));
              announce(t('grp.inviteReady', { name: g.name }));
              out.querySelector('button')?.focus();
            } catch (err) {
              announce(err.message, 'error');
            } finally {
              button.disabled = false;
            }
          },
        }, t('grp.invite'), hiddenName(`: ${g.name}`)),
        h('button', { type: 'button', 'data-edit': g.id, onclick: () => editGroup(g) }, t('org.edit'), hiddenName(`: ${g.name}`)),
        h('button', { type: 'button', class: 'danger', onclick: () => deleteGroup(g) }, t('org.delete'), hiddenName(`: ${g.name}`))),
      out, people));
  }

  async function loadGroups() {
    const page = await api.get(`/organizations/${orgId}/groups?page=${groupPage}&size=20&sort=name,asc`, { signal });
    fill(groups,
      h('p', { class: 'count', tabindex: '-1' }, tn('grp.found', page.totalElements)),
      page.data.length ? h('ul', { class: 'cards' }, page.data.map(groupItem)) : h('p', {}, t('grp.none')),
      pager(page, (p) => { groupPage = p; loadGroups().then(() => groups.querySelector('.count').focus()).catch(failed); }));
  }

  const newGroup = groupForm(null, 'grp-new', (saved) => {
    newGroup.reset();
    announce(t('grp.created', { name: saved.name }));
    newGroup.querySelector('input').focus();
  });

  root.replaceChildren(
    h('h1', {}, t('org.members')),
    orgNav('/org/members'),
    h('p', { class: 'meta' }, org.name, ' · ', t('mem.yourRole', { role: t(`role.${org.myRole}`) })),
    h('section', { 'aria-labelledby': 'mem-title' }, h('h2', { id: 'mem-title' }, t('mem.title')), members),
    h('section', { 'aria-labelledby': 'inv-title' },
      h('h2', { id: 'inv-title' }, t('inv.title')),
      h('p', { class: 'hint' }, t('inv.help')),
      inviteForm,
      h('h3', {}, t('inv.pending')),
      invites),
    h('section', { 'aria-labelledby': 'grp-title' },
      h('h2', { id: 'grp-title' }, t('grp.title')),
      h('p', { class: 'hint' }, t('grp.help')),
      groups, groupEditor,
      h('section', { class: 'card', 'aria-labelledby': 'grp-new-title' }, h('h3', { id: 'grp-new-title' }, t('grp.new')), newGroup)));
  await Promise.all([
    loadMembers().catch((e) => { if (e.name !== 'AbortError') members.replaceChildren(h('p', {}, e.message)); }),
    loadInvites().catch((e) => { if (e.name !== 'AbortError') invites.replaceChildren(h('p', {}, e.message)); }),
    loadGroups().catch((e) => { if (e.name !== 'AbortError') groups.replaceChildren(h('p', {}, e.message)); }),
  ]);
}
