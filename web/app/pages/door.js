// "/door/{eventId}": checking people in at the entrance, on a phone, with or without a
// network. The code is typed, found by name, or read from the ticket's QR code (which holds
// the confirmation code itself, see tickets.js) by the camera: the browser's own
// BarcodeDetector where it has one, jsQR elsewhere (staff/scanner.js, fetched once the page
// is drawn, so the camera reads codes offline too). The outcome is shown very large (colour, word and sign) and announced; the last 10 outcomes stay
// on this device. The page has its own compact bar (the site's header is hidden here) with the
// figures ("12 of 450 in") and whether it is online.
// Offline (staff/door-offline.js): the event's valid tickets are kept on the phone and
// refreshed every 15 s; a code checked while the network is gone is decided against them and
// queued; the queue is sent when the network returns, and a ticket another phone had let in
// meanwhile is reported as used twice.
//   GET  /api/v1/events/{id}                      title, time zone, organization
//   GET  /api/v1/events/{id}/ticket-types?size=100  names of the ticket types
//   GET  /api/v1/events/{id}/door?tickets=true     figures and the valid tickets
//   POST /api/v1/events/{id}/check-in {confirmationCode, method: MANUAL|QR_CODE}
//        (X-Idempotency-Key: a lost answer is asked again with the same key, so a retry is
//        not refused as "already checked in"; a queued offline check-in keeps its key)
import { api, isRetryable, postIdempotent, uuid } from '../api.js';
import { fill, h, setTitle } from '../dom.js';
import { when } from '../format.js';
import { lang } from '../i18n.js';
import { navigate, signInHere } from '../nav.js';
import * as session from '../session.js';
import { decide, findByName, keepList, keepQueue, loadList, loadQueue, saveList, sync } from '../staff/door-offline.js';
import { qrReader, warm } from '../staff/scanner.js';
import { t, tn } from '../staff/texts.js';

const KEEP = 10;
const SCAN_MS = 250;
const SAME_CODE_MS = 3000; // a ticket held in front of the camera is read many times
const ICON = { ok: '✔', refused: '✖', error: '⚠', busy: '…' };
const REFRESH_MS = 15_000;
const SYNC_MS = 10_000;

// Cyrillic letters that look like Latin ones (a Russian keyboard), spaces and dashes.
const LOOKALIKE = { А: 'A', В: 'B', Е: 'E', К: 'K', М: 'M', Н: 'H', О: 'O', Р: 'P', С: 'C', Т: 'T', У: 'Y', Х: 'X' };
export const normalize = (raw) => String(raw).toUpperCase().replace(/[\s-]/g, '')
  .replace(/[АВЕКМНОРСТУХ]/g, (c) => LOOKALIKE[c]);
export const isCode = (code) => /^[A-Z0-9]{8}$/.test(code);

// Why the server refused, in the door's words; null when it said nothing about the ticket
// (no connection, overload): that is not a refusal, the person must be checked again.
export function refusal(e) {
  if (e.status === 409 || e.code === 'conflict') return t('door.why.already');
  if (e.code === 'business_rule_violation' && e.details?.eventId) return t('door.why.otherEvent', { title: e.details.eventTitle });
  if (e.code === 'business_rule_violation') return t('door.why.notConfirmed');
  if (e.status === 404) return t('door.why.unknown');
  if (e.code === 'validation_error') return t('door.why.format');
  if (e.status === 403) return t('door.why.forbidden');
  return null;
}

const store = (eventId) => `bilet.door.${eventId}`;

function readHistory(eventId) {
  try {
    return JSON.parse(localStorage.getItem(store(eventId))) || [];
  } catch {
    return [];
  }
}

export default async function door({ root, params, signal }) {
  const eventId = params.eventId;
  setTitle(t('door.title'));
  const event = await api.get(`/events/${encodeURIComponent(eventId)}`, { signal });
  setTitle(`${t('door.title')}: ${event.title}`);
  const heading = h('h1', { tabindex: '-1' }, t('door.title'), h('span', { class: 'door-event' }, event.title));
  if (event.tenantId !== session.claims()?.tenantId) {
    root.replaceChildren(heading, h('p', { class: 'notice notice-error' }, t('door.otherOrg'), ' ', h('a', { href: '/org/' }, t('door.switch'))));
    return undefined;
  }
  const types = await api.get(`/events/${event.id}/ticket-types?size=100`, { signal })
    .then((p) => new Map(p.data.map((x) => [x.id, x.name]))).catch(() => new Map());
  document.body.classList.add('door-mode');

  // ---- The phone's list, the queue, the figures ----
  let list = loadList(event.id);
  const queue = loadQueue(event.id);
  let reachable = navigator.onLine !== false;
  const hhmm = new Intl.DateTimeFormat(lang() === 'ru' ? 'ru-RU' : 'en-GB', { timeStyle: 'short' });
  const figures = h('p', { class: 'door-figures', 'aria-live': 'polite' });
  const byType = h('ul', { class: 'door-types' });
  const state = h('p', { class: 'door-state', role: 'status' });
  let counts = null;
  function drawState() {
    if (counts) {
      figures.textContent = t('door.in', { in: counts.checkedIn, of: counts.expected });
      fill(byType, counts.byType.length > 1 && counts.byType.map((x) => h('li', {},
        `${x.name}: ${t('door.in', { in: x.checkedIn, of: x.expected })}`)));
    }
    const waiting = queue.length ? ` ${tn('door.queued', queue.length)}` : '';
    state.className = `door-state ${reachable ? 'door-online' : 'door-offline'}`;
    state.textContent = reachable
      ? `${t('door.online')}${waiting}`
      : `${t('door.offline', { time: list ? hhmm.format(new Date(list.readAt)) : '—' })}${waiting}`;
  }
  // A check-in of this phone counts at once, in the total and in its type's line; the
  // server's figures come with the next refresh.
  function countIn(typeId) {
    if (!counts) return;
    counts.checkedIn += 1;
    const line = counts.byType?.find((x) => x.ticketTypeId === typeId);
    if (line) line.checkedIn += 1;
  }
  async function refreshDoor() {
    try {
      const answer = await api.get(`/events/${event.id}/door?tickets=true`, { signal });
      list = keepList(event.id, answer, queue);
      // The server's figures do not know this phone's queued check-ins yet.
      counts = answer;
      for (const q of queue) countIn(list.tickets[q.code]?.type);
      reachable = true;
    } catch (e) {
      if (e.name === 'AbortError') return;
      if (isRetryable(e)) reachable = false;
    }
    drawState();
  }

  // ---- Outcome and history ----
  const outcome = h('div', { class: 'outcome', 'aria-live': 'assertive', 'aria-atomic': 'true' });
  const historyList = h('ol', { class: 'door-history' });
  let history = readHistory(event.id);
  const clock = new Intl.DateTimeFormat(lang() === 'ru' ? 'ru-RU' : 'en-GB', { timeStyle: 'medium' });

  function drawHistory() {
    fill(historyList, history.length
      ? history.map((x) => h('li', { class: `past past-${x.kind}` },
        h('span', { class: 'past-icon', 'aria-hidden': 'true' }, ICON[x.kind]),
        h('time', { datetime: x.at }, clock.format(new Date(x.at))), ' ',
        h('code', {}, x.code), ' ',
        h('strong', {}, x.title), x.detail && ` — ${x.detail}`))
      : h('li', { class: 'hint' }, t('door.noHistory')));
  }

  let pendingShow = null;
  function show(kind, title, detail, code) {
    clearTimeout(pendingShow);
    outcome.className = `outcome outcome-${kind}`;
    const body = [
      h('span', { class: 'outcome-icon', 'aria-hidden': 'true' }, ICON[kind]),
      h('span', { class: 'outcome-title' }, title),
      detail && h('span', { class: 'outcome-detail' }, detail),
      code && h('span', { class: 'outcome-code' }, t('door.code'), ' ', h('code', {}, code)),
    ];
    if (kind === 'busy') { fill(outcome, body); return; }
    // Emptied, then filled a moment later: the same outcome twice is announced twice.
    outcome.replaceChildren();
    pendingShow = setTimeout(() => fill(outcome, body), 50);
    // A short buzz for yes, a long double one for no (phones allow it after a first touch).
    if (navigator.userActivation?.hasBeenActive) navigator.vibrate?.(kind === 'ok' ? 120 : [250, 120, 250]);
    history = [{ at: new Date().toISOString(), code, kind, title, detail }, ...history].slice(0, KEEP);
    try { localStorage.setItem(store(event.id), JSON.stringify(history)); } catch { /* full: the screen still shows it */ }
    drawHistory();
  }

  // ---- Checking in ----
  let busy = false;
  let pending = null; // {code, key} of a check whose answer never came

  // Decided on the phone, the network being gone: let in and queued, or refused.
  function checkOffline(code, key, method) {
    pending = null;
    if (!list) {
      show('error', t('door.failed'), t('door.noList'), code);
      return 'error';
    }
    const d = decide(list, code);
    const who = [d.name, types.get(d.type)].filter(Boolean).join(' · ');
    if (d.kind === 'refused') {
      const why = d.why === 'already' ? t('door.why.alreadyAt', { time: hhmm.format(new Date(d.at)) }) : t('door.why.notOnList');
      show('refused', t('door.refused'), [who, why].filter(Boolean).join(' — '), code);
      return 'refused';
    }
    queue.push({ code, key, method, at: d.at });
    keepQueue(event.id, queue);
    saveList(event.id, list);
    countIn(d.type);
    show('ok', t('door.accepted'), [who, t('door.acceptedOffline')].filter(Boolean).join(' — '), code);
    drawState();
    return 'ok';
  }

  // One check at a time, in the order they came: a code typed while the camera's is being
  // checked waits its turn instead of being dropped.
  let inflight = Promise.resolve();
  function check(raw, method) {
    const run = inflight.then(() => checkNow(raw, method));
    inflight = run.catch(() => {});
    return run;
  }

  async function checkNow(raw, method) {
    const code = normalize(raw);
    if (!isCode(code)) {
      show('refused', t('door.refused'), t('door.why.format'), String(raw).slice(0, 20));
      return 'refused';
    }
    busy = true;
    const key = pending?.code === code ? pending.key : uuid();
    pending = { code, key };
    if (!reachable || navigator.onLine === false) {
      try {
        return checkOffline(code, key, method);
      } finally {
        busy = false;
      }
    }
    show('busy', t('door.checking'), null, code);
    try {
      const reg = await postIdempotent(`/events/${event.id}/check-in`, { confirmationCode: code, method }, key, 2);
      pending = null;
      if (list?.tickets[code]) list.tickets[code].at = new Date().toISOString();
      countIn(reg.ticketTypeId);
      drawState();
      const name = `${reg.firstName || ''} ${reg.lastName || ''}`.trim();
      const type = types.get(reg.ticketTypeId);
      show('ok', t('door.accepted'), [name, type].filter(Boolean).join(' · '), code);
      return 'ok';
    } catch (e) {
      if (e.name === 'AbortError') return null;
      // No answer: the network is gone (or the server is): the phone decides.
      if (isRetryable(e) && list) {
        reachable = false;
        return checkOffline(code, key, method);
      }
      if (!isRetryable(e)) pending = null;
      if (e.status === 401) { navigate(signInHere()); return null; }
      const why = refusal(e);
      if (why) show('refused', t('door.refused'), why, code);
      else show('error', t('door.failed'), e.status ? `${e.message} ${t('door.tryAgain')}` : e.message, code);
      return why ? 'refused' : 'error';
    } finally {
      busy = false;
    }
  }

  const input = h('input', {
    id: 'door-code', name: 'code', class: 'door-code', autocomplete: 'off', autocapitalize: 'characters',
    autocorrect: 'off', spellcheck: 'false', enterkeyhint: 'go', maxlength: 24, 'aria-describedby': 'door-code-hint',
  });
  const typed = h('form', { class: 'door-form', novalidate: true },
    h('label', { for: 'door-code' }, t('door.codeLabel')),
    h('p', { class: 'hint', id: 'door-code-hint' }, t('door.codeHint')),
    h('div', { class: 'door-row' }, input, h('button', { type: 'submit', class: 'primary' }, t('door.check'))));
  typed.addEventListener('submit', async (e) => {
    e.preventDefault();
    if (!input.value.trim()) { input.focus(); return; }
    const result = await check(input.value, 'MANUAL');
    // Ready for the next person: an accepted code is cleared, a refused one selected so
    // that typing replaces it (or a typo can be fixed).
    if (result === 'ok') input.value = '';
    input.focus();
    if (result && result !== 'ok') input.select();
  });

  // ---- Sending the queue when the network is back ----
  const report = h('ul', { class: 'door-report', 'aria-live': 'polite' });
  let syncing = false;
  async function trySync() {
    if (syncing || !queue.length || navigator.onLine === false) return;
    syncing = true;
    try {
      const done = await sync(event.id, queue,
        (item) => postIdempotent(`/events/${event.id}/check-in`, { confirmationCode: item.code, method: item.method }, item.key, 1),
        isRetryable);
      for (const { item, outcome: result, error } of done) {
        const name = list?.tickets[item.code]?.name || '';
        if (result === 'ok') continue;
        const said = result === 'twice' ? t('door.usedTwice', { time: hhmm.format(new Date(item.at)) }) : refusal(error) || error.message;
        report.prepend(h('li', { class: 'past past-refused' },
          h('span', { class: 'past-icon', 'aria-hidden': 'true' }, ICON.refused),
          h('code', {}, item.code), ' ', h('strong', {}, name), ` — ${said}`));
      }
      const synced = done.filter((x) => x.outcome === 'ok').length;
      if (done.length) {
        report.prepend(h('li', { class: 'past past-ok' },
          h('span', { class: 'past-icon', 'aria-hidden': 'true' }, ICON.ok),
          tn('door.synced', synced), done.length > synced ? ` ${tn('door.syncProblems', done.length - synced)}` : ''));
      }
      if (queue.length === 0 || done.length) reachable = true;
    } finally {
      syncing = false;
    }
    await refreshDoor();
  }
  const online = () => { reachable = true; drawState(); trySync(); };
  const offline = () => { reachable = false; drawState(); };
  window.addEventListener('online', online);
  window.addEventListener('offline', offline);
  const syncTimer = setInterval(() => { if (queue.length) trySync(); }, SYNC_MS);
  const refreshTimer = setInterval(() => { if (!document.hidden && !queue.length) refreshDoor(); }, REFRESH_MS);

  // ---- Finding someone by name (from the phone's list: offline too) ----
  const found = h('ul', { class: 'door-found' });
  const nameInput = h('input', { id: 'door-name', type: 'search', autocomplete: 'off', 'aria-describedby': 'door-name-hint', 'aria-controls': 'door-found' });
  found.id = 'door-found';
  function drawFound() {
    const people = findByName(list, nameInput.value);
    fill(found, nameInput.value.trim() && !people.length ? h('li', { class: 'hint' }, t('door.nobodyFound'))
      : people.map((x) => h('li', {},
        h('span', {}, h('strong', {}, x.name || '—'), ' · ', types.get(x.type) || '', ' · ', h('code', {}, x.code)),
        x.at ? h('span', { class: 'hint' }, ` ${t('door.inAt', { time: hhmm.format(new Date(x.at)) })}`)
          : h('button', {
            type: 'button',
            onclick: async () => {
              await check(x.code, 'MANUAL');
              drawFound();
            },
          }, t('door.checkIn'), h('span', { class: 'visually-hidden' }, `: ${x.name}`)))));
  }
  nameInput.addEventListener('input', drawFound);
  const byName = h('div', { class: 'door-search' },
    h('label', { for: 'door-name' }, t('door.byName')),
    h('p', { class: 'hint', id: 'door-name-hint' }, t('door.byNameHint')),
    nameInput, found);

  // ---- The camera ----
  const camera = h('section', { class: 'camera', 'aria-labelledby': 'camera-title' }, h('h2', { id: 'camera-title' }, t('door.camera')));
  const video = h('video', { class: 'scanner', muted: true, playsinline: true, hidden: true, 'aria-label': t('door.cameraView') });
  video.muted = true;
  let stream = null;
  let timer = null;
  let last = { code: null, seen: 0 };

  function stop() {
    clearTimeout(timer);
    stream?.getTracks().forEach((track) => track.stop());
    stream = null;
    video.srcObject = null;
    video.hidden = true;
  }

  async function startCamera(button, note) {
    // The decoder (jsQR where the browser has no detector of its own) loads while the browser
    // asks for the camera: both take a moment.
    const reading = qrReader();
    reading.catch(() => {}); // a refused camera leaves it unawaited
    try {
      stream = await navigator.mediaDevices.getUserMedia({ video: { facingMode: { ideal: 'environment' } }, audio: false });
    } catch (e) {
      note.textContent = e.name === 'NotAllowedError' ? t('door.cameraDenied') : t('door.cameraFailed');
      return false;
    }
    let read;
    try {
      read = await reading;
    } catch {
      // Never loaded on this phone and no network now: typing still works.
      stop();
      note.textContent = t('door.decoderFailed');
      return false;
    }
    if (signal.aborted) { stop(); return false; } // the page was left meanwhile
    video.srcObject = stream;
    video.hidden = false;
    await video.play().catch(() => {});
    // Starting the camera asks for a read: the ticket in front of it is checked even if it
    // was the last one read (already used, then, and the door says so).
    last = { code: null, seen: 0 };
    // One frame at a time, a few a second: the next is read only once this one and its
    // check are done, so reads never pile up on a slow phone. The loop belongs to this
    // stream: after Stop and Start while a check was waiting, the old loop ends there
    // instead of running beside the new one.
    const mine = stream;
    const scan = async () => {
      if (stream !== mine) return;
      if (!busy && !document.hidden && video.readyState >= 2) {
        try {
          const raw = await read(video);
          if (stream !== mine) return; // stopped while the frame was decoded
          const now = Date.now();
          // The same ticket is read again only once it has been out of sight for a moment.
          const again = raw && raw === last.code && now - last.seen < SAME_CODE_MS;
          if (raw === last.code) last.seen = now;
          if (raw && !again) {
            last = { code: raw, seen: now };
            // The focus stays where it is: moving it to the input would open the phone's
            // keyboard over the camera.
            await check(raw, 'QR_CODE');
            last.seen = Date.now();
          }
        } catch { /* a frame that could not be read */ }
      }
      if (stream === mine) timer = setTimeout(scan, SCAN_MS);
    };
    scan();
    note.textContent = t('door.cameraOn');
    button.textContent = t('door.cameraStop');
    return true;
  }

  function drawCamera() {
    if (!navigator.mediaDevices?.getUserMedia) {
      camera.append(h('p', { class: 'notice' }, t('door.noCamera')));
      return;
    }
    const note = h('p', { class: 'hint', 'aria-live': 'polite' }, t('door.cameraHint'));
    const button = h('button', {
      type: 'button',
      onclick: async () => {
        if (stream) {
          stop();
          button.textContent = t('door.cameraStart');
          note.textContent = t('door.cameraOff');
          return;
        }
        button.disabled = true;
        await startCamera(button, note);
        button.disabled = false;
      },
    }, t('door.cameraStart'));
    camera.append(button, note, video);
  }

  drawHistory();
  drawState();
  root.replaceChildren(
    h('div', { class: 'door-bar' },
      h('a', { href: '/door/', class: 'door-back' }, t('door.back')),
      heading,
      h('p', { class: 'meta' }, h('time', { datetime: event.startsAt }, when(event.startsAt, event.endsAt, event.timezone))),
      figures, byType, state),
    typed,
    outcome,
    report,
    byName,
    camera,
    h('section', { 'aria-labelledby': 'history-title' },
      h('h2', { id: 'history-title' }, t('door.history')),
      historyList,
      h('button', {
        type: 'button',
        class: 'link',
        onclick: () => {
          history = [];
          localStorage.removeItem(store(event.id));
          drawHistory();
          input.focus();
        },
      }, t('door.clearHistory'))));
  drawCamera();
  await refreshDoor();
  trySync();
  // The decoder comes now, while there is a network, after what the door needs first: a
  // camera started later in a basement without signal still reads codes.
  if (navigator.mediaDevices?.getUserMedia) (window.requestIdleCallback || setTimeout)(() => warm());
  // The input is what the door uses most: it has the focus from the start.
  setTimeout(() => input.focus(), 0);
  return () => {
    stop();
    clearInterval(syncTimer);
    clearInterval(refreshTimer);
    window.removeEventListener('online', online);
    window.removeEventListener('offline', offline);
    document.body.classList.remove('door-mode');
  };
}
