// The waiting room's admission to an event: the queue page keeps it when the visitor's turn
// comes, the event page shows it (X-Admission) when registering, until it expires.
const key = (event) => `bilet.admission.${event}`;

export function admission(event) {
  try {
    const kept = JSON.parse(localStorage.getItem(key(event)));
    if (kept && Date.parse(kept.expiresAt) > Date.now()) return kept.admission;
  } catch { /* nothing kept, or not readable: none */ }
  return null;
}

export const keepAdmission = (event, admission, expiresAt) =>
  localStorage.setItem(key(event), JSON.stringify({ admission, expiresAt }));

export const forgetAdmission = (event) => localStorage.removeItem(key(event));
