// The caller's own registrations, for the tickets page and the event page:
// GET /api/v1/registrations (mine, paged, `eventId` and `status` filters). Against an older
// server without it (404), the list is put together from the per-event lists of the events
// this browser registered for, keeping the caller's own rows.
import { api } from './api.js';
import * as session from './session.js';

const KNOWN = 'bilet.myEvents';
export const ACTIVE = ['RESERVED', 'PENDING', 'CONFIRMED', 'CHECKED_IN'];

function known() {
  try {
    return JSON.parse(localStorage.getItem(KNOWN)) || [];
  } catch {
    return [];
  }
}

export function rememberEvent(id) {
  const ids = known().filter((x) => x !== id);
  localStorage.setItem(KNOWN, JSON.stringify([id, ...ids].slice(0, 50)));
}

// A page {data, page, totalPages, hasNext, hasPrevious, partial}; `partial` when the
// fallback was used.
export async function myRegistrations({ eventId, page = 0, size = 20, signal } = {}) {
  const q = new URLSearchParams({ page, size, sort: 'createdAt,desc' });
  if (eventId) q.set('eventId', eventId);
  try {
    return { ...(await api.get(`/registrations?${q}`, { signal })), partial: false };
  } catch (e) {
    if (e.status !== 404 && e.status !== 405) throw e;
  }
  const me = session.user()?.id;
  const ids = eventId ? [eventId] : known();
  const lists = await Promise.allSettled(ids.map((id) =>
    api.get(`/events/${id}/registrations?size=100&sort=createdAt,desc`, { signal })));
  const data = lists.flatMap((r) => (r.status === 'fulfilled' ? r.value.data : []))
    .filter((r) => r.userId === me)
    .sort((a, b) => b.createdAt.localeCompare(a.createdAt));
  return { data, page: 0, totalPages: 1, hasNext: false, hasPrevious: false, partial: true };
}
