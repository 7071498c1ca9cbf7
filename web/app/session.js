// The signed-in session: tokens and the user from the last AuthResponse, kept in
// localStorage so a reload or a new tab stays signed in. Changes are broadcast as
// `bilet:session` so the header can follow.

const KEY = 'bilet.session';

function read() {
  try {
    return JSON.parse(localStorage.getItem(KEY)) || null;
  } catch {
    return null;
  }
}

function changed() {
  window.dispatchEvent(new Event('bilet:session'));
}

export const accessToken = () => read()?.accessToken || null;
export const refreshToken = () => read()?.refreshToken || null;
export const user = () => read()?.user || null;
export const signedIn = () => Boolean(refreshToken());

// Takes an AuthResponse {accessToken, refreshToken, user, ...}.
export function save(auth) {
  localStorage.setItem(KEY, JSON.stringify({
    accessToken: auth.accessToken,
    refreshToken: auth.refreshToken,
    user: auth.user || user(),
  }));
  changed();
}

export function clear() {
  localStorage.removeItem(KEY);
  changed();
}

// Another tab signed in or out.
window.addEventListener('storage', (e) => { if (e.key === KEY) changed(); });
