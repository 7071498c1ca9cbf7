// An event's cover in a variant, else the original; hidden until its address comes.
import { api } from './api.js';
import { h } from './dom.js';

const usable = (u) => /^https?:\/\//i.test(u || '') || (u || '').startsWith('/');

export function cover(event, variant, attrs = {}) {
  const img = h('img', { class: 'cover', alt: '', hidden: true, ...attrs });
  if (event.coverImageId) {
    const url = (v) => api.get(`/media/${event.coverImageId}/url${v}`);
    url(`?variant=${variant}`).catch(() => url(''))
      .then(({ url: src }) => {
        if (usable(src)) { img.src = src; img.hidden = false; }
      })
      .catch(() => {});
  }
  return img;
}
