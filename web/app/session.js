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

// The access token's claims, read, not checked: tenantId (after a switch) and roles.
export function claims() {
  try {
    return JSON.parse(atob(accessToken().split('.')[1].replace(/-/g, '+').replace(/_/g, '/')));
  } catch {
    return null;
  }
}

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
