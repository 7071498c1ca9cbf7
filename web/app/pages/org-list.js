// "/org": my organizations, and acting for one of them ("switch": a new access token whose
// tenantId is that organization, kept like any other token in session.js).
//   GET  /api/v1/organizations?size=100&sort=name,asc
//   POST /api/v1/organizations/{id}/switch          → {accessToken, tenantId, roles}
//   POST /api/v1/organizations/join/{inviteCode}    → the organization joined
//   POST /api/v1/groups/join/{code}                 → a group's code typed here instead
import { api } from '../api.js';
import { announce, fill, h, setTitle, spinner } from '../dom.js';
import { field, form, submitButton } from '../forms.js';
import { invalid, orgNav, switchTo, tenantId } from '../staff/kit.js';
import { t } from '../staff/texts.js';

export default async function orgList({ root, signal }) {
  setTitle(t('org.orgs'));
  const list = h('div', {}, spinner());

  async function load() {
    const page = await api.get('/organizations?size=100&sort=name,asc', { signal });
    const current = tenantId();
    fill(list, page.data.length
      ? h('ul', { class: 'cards' }, page.data.map((org) => {
        const id = `org-${org.id}`;
        const here = org.id === current;
        return h('li', { class: here ? 'card card-current' : 'card' }, h('article', { 'aria-labelledby': id },
          h('h2', { id }, org.name),
          h('p', { class: 'meta' }, org.slug, ' · ', t(`role.${org.myRole}`)),
          org.description && h('p', { class: 'description' }, org.description),
          here
            ? h('p', { class: 'notice notice-ok' }, t('org.actingFor'), ' ',
              h('a', { href: '/org/events' }, t('org.events')), ' · ', h('a', { href: '/org/report' }, t('org.report')), ' · ',
              h('a', { href: '/org/members' }, t('org.members')), ' · ', h('a', { href: '/org/settings' }, t('org.settings')))
            : h('button', {
              type: 'button',
              class: 'primary',
              onclick: async (e) => {
                const button = e.currentTarget;
                button.disabled = true;
                try {
                  await switchTo(org.id);
                  await load();
                  announce(t('org.switched', { name: org.name }));
                  list.querySelector('.card-current a')?.focus();
                } catch (err) {
                  button.disabled = false;
                  announce(err.message, 'error');
                }
              },
            }, t('org.switch'), h('span', { class: 'visually-hidden' }, `: ${org.name}`))));
      }))
      : h('p', {}, t('org.noOrgs')));
  }

  const join = form(async ({ code }) => {
    if (!code.trim()) throw invalid({ code: t('org.required') });
    let org;
    try {
      org = await api.post(`/organizations/join/${encodeURIComponent(code.trim())}`);
    } catch (e) {
      // A group's code typed here (participants are given those): joined where it belongs.
      if (e.status !== 404) throw e;
      const group = await api.post(`/groups/join/${encodeURIComponent(code.trim())}`).catch((g) => {
        if (g.status === 409) return { already: true };
        throw g.status === 404 ? e : g;
      });
      join.reset();
      announce(group.already ? t('org.groupAlready') : t('org.groupJoined', { name: group.name }));
      return;
    }
    join.reset();
    await load();
    announce(t('org.joined', { name: org.name }));
  },
  field('code', t('org.inviteCode'), { id: 'join-code', maxlength: 32, autocomplete: 'off', spellcheck: 'false', hint: t('org.inviteHint') }),
  submitButton(t('org.join')));

  fill(root,
    h('h1', {}, t('org.orgs')),
    tenantId() && orgNav('/org/'),
    list,
    h('section', { 'aria-labelledby': 'join-title' }, h('h2', { id: 'join-title' }, t('org.joinTitle')), join),
    h('section', { 'aria-labelledby': 'req-title' }, h('h2', { id: 'req-title' }, t('org.newOrg')),
      h('p', {}, t('org.newOrgHelp'), ' ', h('a', { href: '/org/request' }, t('req.title')))));
  await load();
}
