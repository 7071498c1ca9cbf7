// Navigation without a page load. Pages call navigate(); main.js listens for
// `bilet:navigate` and renders the route, so pages never import the router.

export function navigate(url, { replace = false } = {}) {
  history[replace ? 'replaceState' : 'pushState'](null, '', url);
  window.dispatchEvent(new Event('bilet:navigate'));
}

// Only a path on this site may be a return address: not "//evil.example", nor "/\\evil.example"
// (which browsers read as the former), nor anything else whose resolved origin is another.
export function safeNext(next) {
  if (!next || !next.startsWith('/')) return '/';
  try {
    const url = new URL(next, location.origin);
    return url.origin === location.origin ? url.pathname + url.search + url.hash : '/';
  } catch {
    return '/';
  }
}

// The sign-in page that comes back here afterwards.
export const signInHere = () =>
  `/signin?next=${encodeURIComponent(location.pathname + location.search)}`;
