// A confirmed ticket's files on its own page: "Download PDF", and "Add to Google Wallet" /
// "Add to Apple Wallet" where the installation issues those passes (its signing keys are
// configured); otherwise their buttons are not drawn.
//   GET /api/v1/registrations/{id}/ticket.pdf        the PDF, saved as ticket-<code>.pdf
//   GET /api/v1/wallet                               {google, apple}: which passes exist
//   GET /api/v1/registrations/{id}/wallet/google     {url}: the signed "save" link
//   GET /api/v1/registrations/{id}/wallet/apple      the .pkpass, which the phone opens
// Their texts come with pay.js's ready().
import { api } from './api.js';
import { announce, h } from './dom.js';
import { download, fetchRaw } from './download.js';
import { t } from './staff/texts.js';

// Asked once a visit: the answer changes only with the installation's settings.
let offered = null;
const wallets = (signal) => {
  offered ||= api.get('/wallet', { signal }).catch(() => {
    offered = null;
    return { google: false, apple: false };
  });
  return offered;
};

// A button that runs `act`, busy meanwhile, telling a failure in the status region.
function action(label, act) {
  const button = h('button', { type: 'button' }, label);
  button.onclick = async () => {
    button.disabled = true;
    try {
      await act();
    } catch (e) {
      if (e.name !== 'AbortError') announce(e.message, 'error');
    } finally {
      button.disabled = false;
    }
  };
  return button;
}

// The files of `reg` (CONFIRMED): the PDF at once, the wallet buttons once it is known which
// exist. The Google link is signed when drawn, so the button is a plain link a tap follows.
export function ticketFiles(reg, signal) {
  const path = `/registrations/${encodeURIComponent(reg.id)}`;
  const box = h('p', { class: 'ticket-files actions' },
    action(t('ticket.pdf'), () => download(`${path}/ticket.pdf`, null, `ticket-${reg.confirmationCode}.pdf`)));
  wallets(signal).then(async ({ google, apple }) => {
    if (google) {
      const link = await api.get(`${path}/wallet/google`, { signal }).catch(() => null);
      if (link?.url) box.append(h('a', { href: link.url, target: '_blank', rel: 'noopener noreferrer', class: 'wallet' }, t('ticket.google')));
    }
    if (apple) {
      // Safari hands a pass it opens to Wallet; a blob of the pass's type opens as one.
      box.append(action(t('ticket.apple'), async () => {
        const res = await fetchRaw('GET', `${path}/wallet/apple`);
        const pass = new Blob([await res.arrayBuffer()], { type: 'application/vnd.apple.pkpass' });
        const url = URL.createObjectURL(pass);
        window.location.assign(url);
        setTimeout(() => URL.revokeObjectURL(url), 60_000);
      }));
    }
  });
  return box;
}
