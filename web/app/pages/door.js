// "/door/{eventId}": checking people in at the entrance, on a phone. The code is typed or read
// from the ticket's QR code (which holds the confirmation code itself, see tickets.js) by the
// browser's own BarcodeDetector; no decoder is downloaded. The outcome is shown very large
// (colour, word and sign) and announced; the last 10 outcomes stay on this device.
//   GET  /api/v1/events/{id}                      title, time zone, organization
//   GET  /api/v1/events/{id}/ticket-types?size=100  names of the ticket types
//   POST /api/v1/events/{id}/check-in {confirmationCode, method: MANUAL|QR_CODE}
//        (X-Idempotency-Key: a lost answer is asked again with the same key, so a retry is
//        not refused as "already checked in")
import { api, isRetryable, postIdempotent, uuid } from '../api.js';
import { fill, h, setTitle } from '../dom.js';
import { when } from '../format.js';
import { lang } from '../i18n.js';
import { navigate, signInHere } from '../nav.js';
import * as session from '../session.js';
import { t } from '../staff/texts.js';

const KEEP = 10;
const SCAN_MS = 250;
const SAME_CODE_MS = 3000; // a ticket held in front of the camera is read many times
const ICON = { ok: '✔', refused: '✖', error: '⚠', busy: '…' };

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

  async function check(raw, method) {
    const code = normalize(raw);
    if (!isCode(code)) {
      show('refused', t('door.refused'), t('door.why.format'), String(raw).slice(0, 20));
      return 'refused';
    }
    if (busy) return null;
    busy = true;
    const key = pending?.code === code ? pending.key : uuid();
    pending = { code, key };
    show('busy', t('door.checking'), null, code);
    try {
      const reg = await postIdempotent(`/events/${event.id}/check-in`, { confirmationCode: code, method }, key, 3);
      pending = null;
      const name = `${reg.firstName || ''} ${reg.lastName || ''}`.trim();
      const type = types.get(reg.ticketTypeId);
      show('ok', t('door.accepted'), [name, type].filter(Boolean).join(' · '), code);
      return 'ok';
    } catch (e) {
      if (e.name === 'AbortError') return null;
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
    const detector = new window.BarcodeDetector({ formats: ['qr_code'] });
    try {
      stream = await navigator.mediaDevices.getUserMedia({ video: { facingMode: { ideal: 'environment' } }, audio: false });
    } catch (e) {
      note.textContent = e.name === 'NotAllowedError' ? t('door.cameraDenied') : t('door.cameraFailed');
      return false;
    }
    if (signal.aborted) { stop(); return false; } // the page was left meanwhile
    video.srcObject = stream;
    video.hidden = false;
    await video.play().catch(() => {});
    const scan = async () => {
      if (!stream) return;
      if (!busy && !document.hidden && video.readyState >= 2) {
        try {
          const found = await detector.detect(video);
          const raw = found.find((c) => c.rawValue)?.rawValue;
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
      if (stream) timer = setTimeout(scan, SCAN_MS);
    };
    scan();
    note.textContent = t('door.cameraOn');
    button.textContent = t('door.cameraStop');
    return true;
  }

  async function drawCamera() {
    let supported = 'BarcodeDetector' in window;
    if (supported && window.BarcodeDetector.getSupportedFormats) {
      supported = (await window.BarcodeDetector.getSupportedFormats().catch(() => [])).includes('qr_code');
    }
    if (!supported) {
      camera.append(h('p', { class: 'notice' }, t('door.noDetector')));
      return;
    }
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
  root.replaceChildren(
    heading,
    h('p', { class: 'meta' }, h('time', { datetime: event.startsAt }, when(event.startsAt, event.endsAt, event.timezone))),
    typed,
    outcome,
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
  await drawCamera();
  // The input is what the door uses most: it has the focus from the start.
  setTimeout(() => input.focus(), 0);
  return stop;
}
