// The money of a cancelled or lapsed paid ticket on its way back, as its participant sees it:
//   GET /api/v1/registrations/{id}/refunds   newest first
// One line per refund, nothing when there is none; a list that cannot be read leaves the
// ticket shown without it. A refund is asked for a moment after its ticket is cancelled, and
// reaches the provider a moment later, so the list is asked again every few seconds while it
// is empty (briefly) or a refund is still on its way (for a few minutes), as long as it is on
// the page.
import { api } from './api.js';
import { fill, h } from './dom.js';
import { price } from './format.js';
import { has, t } from './staff/texts.js';

// Asked for and sent are the same to the participant: the money is on its way.
const SAID = { REQUESTED: 'sent', SENT: 'sent', SUCCEEDED: 'done', FAILED: 'failed' };
const AGAIN_MS = 3000;
const WHILE_EMPTY_MS = 20_000;
const WHILE_PENDING_MS = 180_000;

// "Refund of 1 500,00 ₽: succeeded." and, when the ticket itself does not say it, why.
export function refundText(r) {
  const said = t(`refund.${SAID[r.status] || 'sent'}`, { amount: price(r.amountCents, r.currency) });
  return has(`refund.why.${r.reason}`) ? `${said} ${t(`refund.why.${r.reason}`)}` : said;
}

// Only registrations that may have been paid and are over have refunds to show.
export const mayHaveRefunds = (reg) => reg.priceCents > 0 && ['CANCELLED', 'EXPIRED'].includes(reg.status);

export function refundNote(reg, signal) {
  const box = h('div', { class: 'refunds' });
  const started = Date.now();
  let shown = null;
  const ask = () => api.get(`/registrations/${reg.id}/refunds`, { signal })
    .then((list) => {
      const refunds = list || [];
      const key = JSON.stringify(refunds.map((r) => [r.id, r.status]));
      if (key !== shown) {
        shown = key;
        fill(box, refunds.map((r) => h('p', {
          class: r.status === 'FAILED' ? 'notice notice-error' : 'notice',
        }, refundText(r))));
      }
      const waited = Date.now() - started;
      return refunds.length ? refunds.some((r) => SAID[r.status] === 'sent') && waited < WHILE_PENDING_MS
        : waited < WHILE_EMPTY_MS;
    })
    // Not read this time: asked again while a refund could still be on its way.
    .catch(() => !signal.aborted && Date.now() - started < WHILE_PENDING_MS);
  const round = async () => {
    const again = await ask();
    // Drawn once, then asked again only while the ticket is still shown.
    if (again && !signal.aborted && (box.isConnected || Date.now() - started < AGAIN_MS)) setTimeout(round, AGAIN_MS);
  };
  round();
  return box;
}
