// One click intent, one X-Idempotency-Key. The key and its body stay in sessionStorage
// until the server gives a definite answer: retries, a double click, even a reload after a
// lost answer reuse them, and the server answers a repeat with the first registration
// instead of taking a second seat.
import { uuid } from './api.js';

const name = (scope) => `bilet.intent.${scope}`;

export function intent(scope, body) {
  const saved = sessionStorage.getItem(name(scope));
  if (saved) return JSON.parse(saved);
  const fresh = { key: uuid(), body };
  sessionStorage.setItem(name(scope), JSON.stringify(fresh));
  return fresh;
}

export const endIntent = (scope) => sessionStorage.removeItem(name(scope));
