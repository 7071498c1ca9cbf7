// /org/events/{id}/details: the event's own fields (description, time, place, access) and its
// cover. A cancelled or completed event shows them without letting them change.
//   PUT    /api/v1/events/{id}                       fields (only those that differ); {coverImageId} for the cover
//   GET    /api/v1/organizations/{tenantId}/groups
//   POST   /api/v1/media/upload (multipart `file`),  GET /api/v1/media/{id}/url?variant=MEDIUM
import { api } from '../api.js';
import { announce, fill, h } from '../dom.js';
import { form, submitButton } from '../forms.js';
import { eventForm } from './event-form.js';
import { imagePicker, tenantId, upload } from './kit.js';
import { t } from './texts.js';

const FINAL = ['CANCELLED', 'COMPLETED'];

export default async function details({ root, event, changed, signal }) {
  const groups = await api.get(`/organizations/${tenantId()}/groups?size=100&sort=name,asc`, { signal })
    .then((p) => p.data).catch(() => []);

  // ---- The event's fields ----
  const edit = h('section', { 'aria-labelledby': 'fields-heading' });
  const final = FINAL.includes(event().status);
  const el = eventForm({
    current: event,
    groups,
    prefix: 'edit',
    saved: (next, wasChanged) => {
      changed(next);
      announce(wasChanged ? t('ev.saved') : t('ev.unchanged'));
    },
  });
  if (final) el.querySelectorAll('input, select, textarea, button').forEach((c) => { c.disabled = true; });
  fill(edit, h('h2', { id: 'fields-heading' }, t('ev.fields')), final && h('p', { class: 'hint' }, t('ev.final')), el);

  // ---- Cover ----
  const coverImg = h('img', { class: 'cover-preview', alt: '', hidden: true });
  const coverNote = h('p', { class: 'hint' });
  function showCover(src, note) {
    coverImg.hidden = !src;
    if (src) coverImg.src = src;
    coverNote.textContent = note;
  }
  async function loadCover() {
    const { coverImageId } = event();
    if (!coverImageId) { showCover(null, t('cover.none')); return; }
    const url = (v) => api.get(`/media/${coverImageId}/url${v}`, { signal });
    try {
      const { url: src } = await url('?variant=MEDIUM').catch(() => url(''));
      showCover(src, t('cover.current'));
    } catch {
      showCover(null, t('cover.unavailable'));
    }
  }
  const picker = imagePicker({
    id: 'cover-file',
    label: t('cover.choose'),
    rules: t('cover.rules'),
    pickFirst: t('cover.pick'),
    formOf: () => coverForm,
    preview: (src) => showCover(src, t('cover.preview')),
    cleared: loadCover,
  });
  const coverForm = form(async (_, formEl) => {
    const file = picker.file(formEl);
    announce(t('cover.uploading'));
    const media = await upload(file, signal);
    changed(await api.put(`/events/${event().id}`, { coverImageId: media.id }));
    formEl.reset();
    announce(t('cover.set'));
    drawRemoveCover();
    // The picked image is the cover now; the stored one replaces it once its link answers
    // (the original at once, the medium variant when it is made).
    showCover(picker.shown(), t('cover.current'));
    await loadCover();
  }, picker.field, submitButton(t('cover.upload')));
  const removeBox = h('p', {});
  function drawRemoveCover() {
    fill(removeBox, event().coverImageId && h('button', {
      type: 'button',
      onclick: async () => {
        try {
          changed(await api.put(`/events/${event().id}`, { coverImageId: null }));
          announce(t('cover.removed'));
          drawRemoveCover();
          loadCover();
          coverForm.querySelector('input').focus();
        } catch (e) {
          announce(e.message, 'error');
        }
      },
    }, t('cover.remove')));
  }

  drawRemoveCover();
  root.replaceChildren(edit,
    h('section', { 'aria-labelledby': 'cover-title' },
      h('h2', { id: 'cover-title' }, t('cover.title')), coverImg, coverNote, coverForm, removeBox));
  await loadCover();
  return picker.release;
}
