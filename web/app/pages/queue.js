// "/e/{slug}/queue": the waiting room of an event's on-sale. Opening it takes a place (or the
// one the account holds); where the visitor stands is pushed by the server and shown as it
// changes, and when their turn comes the admission is kept for the event page.
//   GET    /api/v1/events/by-slug/{slug}         the event
//   GET    /api/v1/events/{id}/waiting-room      the room (public)
//   POST   /api/v1/events/{id}/queue             take a place, or the one held
//   GET    /api/v1/events/{id}/queue/events      the place, pushed (Server-Sent Events, read
//                                                with fetch: EventSource sends no token)
//   GET    /api/v1/events/{id}/queue             the place, every 5 s while no stream comes
//                                                (with its pass: no read of the place)
//   DELETE /api/v1/events/{id}/queue             leave (the place is kept a while)
import { api } from '../api.js';
import { keepAdmission } from '../admission.js';
import { h, setTitle } from '../dom.js';
import { dateTime } from '../format.js';
import { signInHere } from '../nav.js';
import * as session from '../session.js';
import { loadTexts, t, tn } from '../staff/texts.js';

const sleep = (ms, signal) => new Promise((resolve) => {
  const timer = setTimeout(resolve, ms);
  signal.addEventListener('abort', () => { clearTimeout(timer); resolve(); }, { once: true });
});

export default async function queuePage({ root, params, signal }) {
  await loadTexts(['queue']);
  const event = await api.get(`/events/by-slug/${encodeURIComponent(params.slug)}`, { signal });
  setTitle(t('queue.title', { title: event.title }));
  const room = await api.get(`/events/${event.id}/waiting-room`, { signal })
    .catch((e) => { if (e.status === 404) return null; throw e; });
  const eventPage = `/e/${encodeURIComponent(params.slug)}`;
  const back = h('p', {}, h('a', { href: eventPage }, t('queue.back')));
  const heading = h('h1', {}, t('queue.title', { title: event.title }));
  if (!room) {
    root.replaceChildren(heading, h('p', {}, t('queue.none')), back);
    return;
  }
  const at = (iso) => dateTime(iso, event.timezone);
  const status = h('p', { class: 'queue-status', role: 'status' });
  const detail = h('p', { class: 'meta' });
  const actions = h('div', { class: 'actions' });
  root.replaceChildren(h('article', { class: 'queue' }, heading,
    h('p', { class: 'hint' }, t('queue.fair', { time: at(room.onSaleAt) })),
    status, detail, actions, back));
  if (!session.signedIn()) {
    status.textContent = t('queue.signedOut');
    actions.replaceChildren(h('a', { class: 'button primary', href: signInHere() }, t('queue.signIn')));
    return;
  }

  const button = (label, onclick, primary) =>
    h('button', { type: 'button', class: primary ? 'primary' : null, onclick }, label);
  const join = async () => show(await api.post(`/events/${event.id}/queue`, undefined, { signal }));
  let pass = null; // the place's pass (X-Queue-Place); a left place has none
  const leave = async () => {
    await api.del(`/events/${event.id}/queue`, { signal });
    pass = null;
    show(await api.get(`/events/${event.id}/queue`, { signal }));
  };
  let shown = '';

  function show(place) {
    if (place.status !== 'LEFT') pass = place.placePass || pass;
    const key = `${place.status}:${place.ahead}:${place.admission}`;
    if (key === shown) return;
    shown = key;
    detail.textContent = '';
    switch (place.status) {
      case 'PRE_QUEUE':
        status.textContent = t('queue.preQueue', { time: at(place.onSaleAt) });
        actions.replaceChildren(button(t('queue.leave'), leave));
        break;
      case 'WAITING':
        status.textContent = place.ahead ? tn('queue.ahead', place.ahead) : t('queue.next');
        detail.textContent = t('queue.wait', { minutes: Math.max(1, Math.ceil(place.estimatedWaitSeconds / 60)) });
        actions.replaceChildren(button(t('queue.leave'), leave));
        break;
      case 'ADMITTED':
        keepAdmission(event.id, place.admission, place.admissionExpiresAt);
        status.textContent = t('queue.admitted', { time: at(place.admissionExpiresAt) });
        actions.replaceChildren(h('a', { class: 'button primary', href: eventPage }, t('queue.register')));
        break;
      case 'EXPIRED':
        status.textContent = t('queue.expired');
        actions.replaceChildren(button(t('queue.again'), join, true));
        break;
      case 'LEFT':
        status.textContent = t('queue.left', { time: at(place.keptUntil) });
        actions.replaceChildren(button(t('queue.comeBack'), join, true));
        break;
      case 'SOLD_OUT':
        status.textContent = t('queue.soldOut');
        actions.replaceChildren(h('a', { class: 'button', href: eventPage }, t('queue.waitlist')));
        break;
      default:
        status.textContent = place.status;
    }
  }

  // Server-Sent Events through fetch: each stream lasts a while and is opened again; while
  // none can be had (a proxy that buffers, an expired token), the place is asked every 5 s.
  async function follow() {
    while (!signal.aborted) {
      try {
        const res = await fetch(`/api/v1/events/${event.id}/queue/events`, {
          headers: { Accept: 'text/event-stream', Authorization: `Bearer ${session.accessToken()}` },
          signal,
        });
        if (!res.ok || !res.body) throw new Error(`HTTP ${res.status}`);
        const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
        let text = '';
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          text += value;
          let end;
          while ((end = text.indexOf('\n\n')) >= 0) {
            const block = text.slice(0, end);
            text = text.slice(end + 2);
            const name = /^event: ?(.*)$/m.exec(block)?.[1];
            const data = block.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim()).join('\n');
            if (name === 'place') show(JSON.parse(data));
            if (name === 'closed') {
              status.textContent = t('queue.closed');
              actions.replaceChildren(h('a', { class: 'button primary', href: eventPage }, t('queue.register')));
              return;
            }
          }
        }
        await sleep(1000, signal);
      } catch (e) {
        if (signal.aborted) return;
        const headers = pass ? { 'X-Queue-Place': pass } : {};
        const place = await api.get(`/events/${event.id}/queue`, { signal, headers }).catch(() => null);
        if (place) show(place);
        await sleep(5000, signal);
      }
    }
  }

  await join();
  follow();
}
