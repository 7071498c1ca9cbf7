// Texts of paying for a ticket, of refunds and of a ticket's own page, loaded with them only
// (pay.js, staff/texts.js): the event page fetches them only for a reservation to pay, so
// every other visitor is spared them. The shared ones are in en.js. The same keys as pay.ru.js.
export default {
  'pay.button': 'Pay',
  'pay.heldFor': 'Seat held for {time}',
  'pay.timeUp': 'The time to pay is over.',
  'pay.opening': 'Opening the payment page…',
  'pay.unavailable': 'The payment provider does not answer. Please try again in a moment.',
  'pay.waiting': 'Waiting for the payment confirmation…',
  'pay.slow': 'The confirmation has not come yet. If you paid, it will: reload this page in a minute.',
  'pay.declined': 'The payment was declined. You can try again.',
  'pay.received': 'Payment received. Here is your ticket.',
  'refund.sent': 'Refund of {amount}: on its way.',
  'refund.done': 'Refund of {amount}: succeeded.',
  'refund.failed': 'Refund of {amount}: failed — contact the organizer.',
  'refund.why.NO_SEAT': 'Your payment came after the seat’s hold had run out and the seat had gone, so the money goes back.',
  'refund.why.EVENT_CANCELLED_BEFORE_PAYMENT': 'The event was cancelled before your payment came.',
  'refund.why.ALREADY_PAID': 'The ticket had been paid already; this payment goes back.',
  'refund.why.AMOUNT_MISMATCH': 'The payment did not match the ticket’s price, so it goes back.',
  'reason.REFUNDED_BY_ORGANIZER': 'the organizer refunded the ticket',
  'ticket.open': 'Open the ticket',
  'ticket.pdf': 'Download PDF',
  'ticket.google': 'Add to Google Wallet',
  'ticket.apple': 'Add to Apple Wallet',
};
