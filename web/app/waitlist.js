// The waiting lists this browser joined, per event. The API tells no one whether they are
// on a list, so the event page remembers what it did to show "join" or "leave".
const KEY = 'bilet.waiting';

function all() {
  try {
    return JSON.parse(localStorage.getItem(KEY)) || {};
  } catch {
    return {};
  }
}

export const isWaiting = (eventId, typeId) => (all()[eventId] || []).includes(typeId);

export function joined(eventId, typeId) {
  const lists = all();
  lists[eventId] = [...new Set([...(lists[eventId] || []), typeId])];
  localStorage.setItem(KEY, JSON.stringify(lists));
}

// Leaving is per event: DELETE /events/{id}/waitlist leaves all its lists.
export function left(eventId) {
  const lists = all();
  delete lists[eventId];
  localStorage.setItem(KEY, JSON.stringify(lists));
}
