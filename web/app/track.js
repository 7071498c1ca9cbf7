// Page views and registration starts for the organizer's dashboard (POST /api/v1/analytics/track).
import { api, uuid } from './api.js';

// An anonymous visitor counts once per browser among "unique views".
function visitorId() {
  let id = localStorage.getItem('bilet.visitor');
  if (!id) localStorage.setItem('bilet.visitor', (id = uuid()));
  return id;
}

export function track(eventType, eventId, properties = {}) {
  api.post('/analytics/track', { eventType, eventId, properties: { visitorId: visitorId(), ...properties } })
    .catch(() => {}); // counting never gets in the visitor's way
}

// ?source=vk on an event's address: where the visitor came from (1–64 of a-z 0-9 - _).
export function sourceOf(query) {
  const s = (query.get('source') || '').toLowerCase();
  return /^[a-z0-9_-]{1,64}$/.test(s) ? s : null;
}
