// The overview of /org/events/{id}: what an organizer does to the event as a whole (publish,
// unpublish, complete, cancel, delete) and its ticket types, which it cannot be sold without.
//   POST   /api/v1/events/{id}/publish|unpublish|complete|cancel,  DELETE /api/v1/events/{id}
//   the ticket types: staff/ticket-types.js
import { api } from '../api.js';
import { announce, fill, h, hidden, spinner } from '../dom.js';
import { navigate } from '../nav.js';
import { lifecycle } from './kit.js';
import { t } from './texts.js';
import { ticketTypesSection } from './ticket-types.js';

export default async function overview({ root, event, changed, heading, signal }) {
  const actions = h('div', { class: 'event-actions' });
  function drawActions() {
    const current = event();
    fill(actions,
      lifecycle(current, (next) => {
        changed(next);
        drawActions();
        (actions.querySelector('.lifecycle button') || heading).focus();
      }),
      // A published event is unpublished (or cancelled) first: participants hold its tickets.
      current.status !== 'PUBLISHED' && h('p', {}, h('button', { type: 'button', class: 'danger', onclick: remove },
        t('ev.delete'), hidden(`: ${current.title}`))));
  }

  async function remove() {
    const { id, title } = event();
    if (!window.confirm(t('ev.confirmDelete', { title }))) return;
    try {
      await api.del(`/events/${id}`);
      navigate('/org/events');
      announce(t('ev.deleted', { title }));
    } catch (e) {
      announce(e.message, 'error');
    }
  }

  const types = ticketTypesSection(event(), signal);
  drawActions();
  types.box.replaceChildren(spinner());
  root.replaceChildren(actions, types.el);
  await types.load().catch((e) => { if (e.name !== 'AbortError') types.box.replaceChildren(h('p', {}, e.message)); });
}
