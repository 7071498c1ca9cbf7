// The money of a cancelled or lapsed paid ticket on its way back, as its participant sees it:
//   GET /api/v1/registrations/{id}/refunds   newest first
// One line per refund, nothing when there is none; a list that cannot be read leaves the
// ticket shown without it.
import { api } from './api.js';
import { fill, h } from './dom.js';
import { price } from './format.js';
import { t } from './staff/texts.js';

// Asked for and sent are the same to the participant: the money is on its way.
const SAID = { REQUESTED: 'sent', SENT: 'sent', SUCCEEDED: 'done', FAILED: 'failed' };

// "Refund of 1 500,00 ₽: succeeded."
export const refundText = (r) => t(`refund.${SAID[r.status] || 'sent'}`, { amount: price(r.amountCents, r.currency) });

// Only registrations that may have been paid and are over have refunds to show.
export const mayHaveRefunds = (reg) => reg.priceCents > 0 && ['CANCELLED', 'EXPIRED'].includes(reg.status);

export function refundNote(reg, signal) {
  const box = h('div', { class: 'refunds' });
  api.get(`/registrations/${reg.id}/refunds`, { signal })
    .then((list) => fill(box, (list || []).map((r) => h('p', {
      class: r.status === 'FAILED' ? 'notice notice-error' : 'notice',
    }, refundText(r)))))
    .catch(() => {});
  return box;
}
