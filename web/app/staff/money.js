// Money as the organizer reads it: amounts in the currency's smallest unit (zero is an amount
// here, not "free"), and the revenue tables of the dashboard and the report. A line of money
// is the MoneyDto of the revenue answers:
//   {currency, paidCents, payments, refundedCents, refunds, refundPendingCents, netCents}
import { h } from '../dom.js';
import { lang } from '../i18n.js';
import { scroller } from './kit.js';
import { t, tn } from './texts.js';

// 150000, 'RUB' → "1 500,00 ₽"; 0 → "0,00 ₽".
export function amount(cents, currency) {
  try {
    const f = new Intl.NumberFormat(lang() === 'ru' ? 'ru-RU' : 'en-GB', { style: 'currency', currency });
    return f.format(cents / 10 ** f.resolvedOptions().maximumFractionDigits);
  } catch {
    return `${(cents / 100).toFixed(2)} ${currency}`;
  }
}

const sub = (text) => h('span', { class: 'sub' }, text);

// A table of money lines, one row each: rows [{head, money}], `head` the row's header (a
// currency code, an event's link), `headLabel` its column's.
export function moneyTable(caption, headLabel, rows) {
  const heads = [headLabel, t('money.received'), t('money.refunded'), t('money.pending'), t('money.net')];
  return scroller(caption, h('table', {},
    h('caption', {}, caption),
    h('thead', {}, h('tr', {}, heads.map((x) => h('th', { scope: 'col' }, x)))),
    h('tbody', {}, rows.map(({ head, money: m }) => h('tr', {},
      h('th', { scope: 'row' }, head),
      h('td', { class: 'num' }, amount(m.paidCents, m.currency), sub(tn('money.payments', m.payments))),
      h('td', { class: 'num' }, amount(m.refundedCents, m.currency), m.refunds > 0 && sub(tn('money.refunds', m.refunds))),
      h('td', { class: 'num' }, amount(m.refundPendingCents, m.currency)),
      h('td', { class: 'num' }, h('strong', {}, amount(m.netCents, m.currency))))))));
}

// Per currency: [MoneyDto] → the table, or null for none.
export const byCurrency = (lines) => (lines.length
  ? moneyTable(t('money.byCurrency'), t('money.currency'), lines.map((m) => ({ head: m.currency, money: m })))
  : null);
