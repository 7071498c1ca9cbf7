// The door without a network: the event's valid tickets kept on the phone (from
// GET /events/{id}/door?tickets=true), the check-ins made while offline decided against them,
// and the queue of those check-ins sent when the network is back, each with the idempotency
// key it was given when decided, so a resend is never counted twice. The server has the last
// word: a ticket two offline phones both let in comes back 409 from the second one's sync and
// is reported as used twice. No DOM here; the keys of localStorage are per event.

const listKey = (eventId) => `bilet.door.${eventId}.list`;
const queueKey = (eventId) => `bilet.door.${eventId}.queue`;

function read(key, fallback) {
  try {
    return JSON.parse(localStorage.getItem(key)) ?? fallback;
  } catch {
    return fallback;
  }
}

function write(key, value) {
  try {
    localStorage.setItem(key, JSON.stringify(value));
    return true;
  } catch {
    return false; // full or forbidden: kept in memory for this visit
  }
}

// The tickets as last read: {readAt, tickets: {CODE: {name, type, at}}}, `at` when it was
// checked in (by the server's list, or on this phone since).
export function loadList(eventId) {
  return read(listKey(eventId), null);
}

// Keeps the server's answer, with this phone's own offline check-ins not yet synced laid over
// it (the server does not know them yet).
export function keepList(eventId, answer, queue) {
  const tickets = {};
  for (const x of answer.tickets || []) tickets[x.code] = { name: x.name, type: x.ticketTypeId, at: x.checkedInAt };
  for (const q of queue) if (tickets[q.code] && !tickets[q.code].at) tickets[q.code].at = q.at;
  const list = { readAt: answer.readAt, tickets };
  write(listKey(eventId), list);
  return list;
}

// Keeps the list as this phone changed it (its own check-ins marked).
export const saveList = (eventId, list) => write(listKey(eventId), list);

// What the door says to a code while offline: let in (and remember it), or refused because
// the code is not on the list or was already used.
export function decide(list, code, now = new Date().toISOString()) {
  const ticket = list?.tickets?.[code];
  if (!ticket) return { kind: 'refused', why: 'unknown' };
  if (ticket.at) return { kind: 'refused', why: 'already', at: ticket.at, name: ticket.name, type: ticket.type };
  ticket.at = now;
  return { kind: 'ok', name: ticket.name, type: ticket.type, at: now };
}

export const loadQueue = (eventId) => read(queueKey(eventId), []);
export const keepQueue = (eventId, queue) => write(queueKey(eventId), queue);

// People whose name (or code) holds every word typed, at most `limit`.
export function findByName(list, text, limit = 8) {
  const words = String(text).toLowerCase().split(/\s+/).filter(Boolean);
  if (!words.length || !list) return [];
  const found = [];
  for (const [code, ticket] of Object.entries(list.tickets)) {
    const hay = `${ticket.name} ${code}`.toLowerCase();
    if (words.every((w) => hay.includes(w))) found.push({ code, ...ticket });
    if (found.length >= limit) break;
  }
  return found;
}

// Sends the queued check-ins one by one with `send(item)` (resolving to the server's answer,
// throwing its error). Returns what happened to each sent one: {item, outcome: 'ok' |
// 'twice' | 'refused', error}; stops at the first that could not reach the server (the rest
// wait for the next try) and keeps what is left.
export async function sync(eventId, queue, send, isUnreached) {
  const done = [];
  while (queue.length) {
    const item = queue[0];
    try {
      await send(item);
      done.push({ item, outcome: 'ok' });
    } catch (e) {
      if (isUnreached(e)) break;
      done.push({ item, outcome: e.status === 409 ? 'twice' : 'refused', error: e });
    }
    queue.shift();
    keepQueue(eventId, queue);
  }
  return done;
}
