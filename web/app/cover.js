// An event's cover: /media/{id}/image redirects to the file (a variant, else the original);
// one that does not load is hidden rather than drawn broken.
import { h } from './dom.js';

export function cover(event, variant, attrs = {}) {
  const img = h('img', { class: 'cover', alt: '', hidden: !event.coverImageId, ...attrs });
  if (event.coverImageId) {
    const at = `/api/v1/media/${event.coverImageId}/image`;
    img.onerror = () => {
      if (img.src.includes('?variant=')) img.src = at;
      else img.hidden = true;
    };
    img.src = `${at}?variant=${variant}`;
  }
  return img;
}
