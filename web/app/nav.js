// Navigation without a page load. Pages call navigate(); main.js listens for
// `bilet:navigate` and renders the route, so pages never import the router.

export function navigate(url, { replace = false } = {}) {
  history[replace ? 'replaceState' : 'pushState'](null, '', url);
  window.dispatchEvent(new Event('bilet:navigate'));
}

// Only a path on this site may be a return address (no "//evil.example").
export function safeNext(next) {
  return next && next.startsWith('/') && !next.startsWith('//') ? next : '/';
}

// The sign-in page that comes back here afterwards.
export const signInHere = () =>
  `/signin?next=${encodeURIComponent(location.pathname + location.search)}`;
