// "/org/settings": the organization's name, description and logo. Only its OWNER may change
// them; anyone else sees them read-only, with a sentence saying so.
//   GET  /api/v1/organizations/{id}                  the fields, and my role (myRole)
//   PUT  /api/v1/organizations/{id}                  only the fields that differ: {name, description, logoUrl}
//   POST /api/v1/media/upload (multipart `file`), then PUT /api/v1/organizations/{id} {logoId}
//   PUT  /api/v1/organizations/{id} {logoId: null}   removes the uploaded logo
//   GET  /api/v1/media/{id}/url?variant=MEDIUM       the logo shown (the original until the variant is made)
import { api } from '../api.js';
import { announce, fill, h, setTitle } from '../dom.js';
import { field, form, submitButton } from '../forms.js';
import { imagePicker, invalid, needOrg, orgNav, tenantId, upload } from '../staff/kit.js';
import { t } from '../staff/texts.js';

const OWNER_ONLY = 'set-owner-only';

// The form's values as the API names them: the name trimmed (the server trims it too), the
// logo URL trimmed ('' removes it).
const values = (data) => ({ name: data.name.trim(), description: data.description, logoUrl: data.logoUrl.trim() });

// Only what differs from the organization as it is (an absent description or URL is '').
export const changes = (v, org) =>
  Object.fromEntries(Object.entries(v).filter(([k, x]) => x !== (org[k] ?? '')));

// Read-only for whoever is not the owner: text fields stay readable and focusable, the rest is
// disabled, and every field is described by the sentence saying why.
function readOnly(el) {
  el.querySelectorAll('input, textarea, select, button').forEach((c) => {
    if (c.matches('textarea, input:not([type=file])')) c.readOnly = true;
    else c.disabled = true;
    if (c.matches('input, textarea, select')) {
      c.setAttribute('aria-describedby', `${OWNER_ONLY} ${c.getAttribute('aria-describedby') || ''}`.trim());
    }
  });
}

export default async function orgSettings({ root, signal }) {
  setTitle(t('org.settings'));
  if (!needOrg(root, t('org.settings'))) return undefined;
  const orgId = tenantId();
  let org = await api.get(`/organizations/${orgId}`, { signal });
  const owner = org.myRole === 'OWNER';

  const meta = h('p', { class: 'meta' });
  const drawMeta = () => fill(meta, org.name, ' · ', org.slug, ' · ', t('mem.yourRole', { role: t(`role.${org.myRole}`) }));

  // ---- Name, description, logo URL ----
  const details = form(async (data) => {
    if (!owner) return;
    const v = values(data);
    if (!v.name) throw invalid({ name: t('org.required') });
    const body = changes(v, org);
    if (!Object.keys(body).length) {
      announce(t('set.unchanged'));
      return;
    }
    org = await api.put(`/organizations/${orgId}`, body);
    drawMeta();
    if ('logoUrl' in body) loadLogo();
    announce(t('set.saved'));
  },
  field('name', t('set.name'), { id: 'set-name', value: org.name, maxlength: 255, required: true, autocomplete: 'organization' }),
  field('description', t('set.description'), {
    id: 'set-description', tag: 'textarea', rows: 6, value: org.description || '', maxlength: 5000, hint: t('set.descriptionHint'),
  }),
  field('logoUrl', t('set.logoUrl'), {
    id: 'set-logoUrl', type: 'url', value: org.logoUrl || '', maxlength: 500, hint: t('set.logoUrlHint'),
    autocapitalize: 'none', spellcheck: 'false',
  }),
  submitButton(t('org.save')));

  // ---- The logo ----
  const logoImg = h('img', { class: 'logo-preview', alt: '', hidden: true });
  const logoNote = h('p', { class: 'hint' });
  let shown = 0; // the latest drawing wins over a slower earlier one
  function showLogo(src, note) {
    logoImg.hidden = !src;
    if (src) logoImg.src = src;
    else logoImg.removeAttribute('src');
    logoNote.textContent = note;
  }
  async function loadLogo() {
    const mine = ++shown;
    const show = (src, note) => { if (mine === shown) showLogo(src, note); };
    if (org.logoId) {
      const url = (v) => api.get(`/media/${org.logoId}/url${v}`, { signal });
      try {
        const { url: src } = await url('?variant=MEDIUM').catch(() => url(''));
        show(src, t('set.logoCurrent'));
      } catch (e) {
        if (e.name !== 'AbortError') show(null, t('set.logoUnavailable'));
      }
    } else if (org.logoUrl) {
      show(org.logoUrl, t('set.logoFromUrl'));
    } else {
      show(null, t('set.logoNone'));
    }
  }
  const picker = imagePicker({
    id: 'logo-file',
    label: t('set.logoFile'),
    rules: t('set.logoRules'),
    pickFirst: t('set.logoPick'),
    formOf: () => logoForm,
    preview: (src) => {
      shown += 1; // a link still on its way does not replace the preview
      showLogo(src, t('set.logoPreview'));
    },
    cleared: loadLogo,
  });
  const logoForm = form(async (_, el) => {
    if (!owner) return;
    const file = picker.file(el);
    announce(t('set.logoUploading'));
    const media = await upload(file, signal);
    org = await api.put(`/organizations/${orgId}`, { logoId: media.id });
    el.reset();
    announce(t('set.logoSet'));
    drawRemove();
    // The picked image is the logo now; the stored one replaces it once its link answers.
    shown += 1;
    showLogo(picker.shown(), t('set.logoCurrent'));
    await loadLogo();
  }, picker.field, submitButton(t('set.logoUpload')));

  const removeBox = h('p', {});
  function drawRemove() {
    fill(removeBox, org.logoId && h('button', {
      type: 'button',
      class: 'danger',
      disabled: !owner,
      onclick: async (e) => {
        const button = e.currentTarget;
        button.disabled = true;
        try {
          org = await api.put(`/organizations/${orgId}`, { logoId: null });
          announce(t('set.logoRemoved'));
          drawRemove();
          loadLogo();
          logoForm.querySelector('input').focus();
        } catch (err) {
          button.disabled = false;
          announce(err.message, 'error');
        }
      },
    }, t('set.logoRemove')));
  }

  // ---- The page ----
  drawMeta();
  drawRemove();
  if (!owner) {
    readOnly(details);
    readOnly(logoForm);
  }
  fill(root,
    h('h1', {}, t('org.settings')),
    orgNav('/org/settings'),
    meta,
    !owner && h('p', { class: 'notice', id: OWNER_ONLY }, t('set.ownerOnly')),
    h('section', { 'aria-labelledby': 'set-title' }, h('h2', { id: 'set-title' }, t('set.about')), details),
    h('section', { 'aria-labelledby': 'logo-title' },
      h('h2', { id: 'logo-title' }, t('set.logo')),
      logoImg, logoNote, logoForm, removeBox));
  await loadLogo();
  return picker.release;
}
