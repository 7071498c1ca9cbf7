// Dates and prices for people: in the current language, times on the event's clock.
import { lang, t } from './i18n.js';

const locale = () => (lang() === 'ru' ? 'ru-RU' : 'en-GB');

function dateFormat(timeZone, options) {
  try {
    return new Intl.DateTimeFormat(locale(), { ...options, timeZone });
  } catch {
    return new Intl.DateTimeFormat(locale(), { ...options, timeZone: 'UTC' }); // unknown zone
  }
}

const LONG = { dateStyle: 'long', timeStyle: 'short' };

// "12 июля 2025 г., 19:00 – 23:00 (Europe/Moscow)"; without a zone, the viewer's own.
export function when(startIso, endIso, timeZone) {
  const f = dateFormat(timeZone, LONG);
  const start = new Date(startIso);
  const text = endIso ? f.formatRange(start, new Date(endIso)) : f.format(start);
  return timeZone ? `${text} (${timeZone})` : text;
}

export const dateTime = (iso, timeZone) => dateFormat(timeZone, LONG).format(new Date(iso));

// Prices come in the currency's smallest unit; how many decimals that is, Intl knows.
export function price(cents, currency) {
  if (!cents) return t('price.free');
  try {
    const f = new Intl.NumberFormat(locale(), { style: 'currency', currency });
    return f.format(cents / 10 ** f.resolvedOptions().maximumFractionDigits);
  } catch {
    return `${(cents / 100).toFixed(2)} ${currency}`;
  }
}
