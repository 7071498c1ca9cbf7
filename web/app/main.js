// The router and the page frame. Paths are real addresses (history.pushState); the
// server answers every non-API path with index.html, and this module picks the page.
// Each page is its own module, loaded when first visited.
import { api } from './api.js';
import { announce, h, hidden, setTitle, spinner } from './dom.js';
import { lang, setLang, t, LANGS } from './i18n.js';
import { navigate, signInHere } from './nav.js';
import * as session from './session.js';

const page = (name) => () => import(`./pages/${name}.js`);

const ROUTES = [
  { path: /^\/$/, load: page('catalogue') },
  { path: /^\/e\/([^/]+)$/, keys: ['slug'], load: page('event') },
  { path: /^\/e\/([^/]+)\/queue$/, keys: ['slug'], load: page('queue') },
  { path: /^\/signin$/, load: page('signin') },
  { path: /^\/signin\/telegram$/, load: page('signin-telegram') },
  { path: /^\/signup$/, load: page('signup') },
  { path: /^\/verify-email$/, load: page('verify-email') },
  { path: /^\/forgot-password$/, load: page('forgot-password') },
  { path: /^\/reset-password$/, load: page('reset-password') },
  { path: /^\/me\/tickets$/, load: page('tickets'), signedIn: true },
  { path: /^\/me\/tickets\/([^/]+)$/, keys: ['id'], load: page('ticket'), signedIn: true },
  { path: /^\/me\/notifications$/, load: page('notifications'), signedIn: true },
  { path: /^\/me\/profile$/, load: page('profile'), signedIn: true },
  { path: /^\/me\/join$/, load: page('join'), signedIn: true },
  { path: /^\/docs$/, load: page('docs') },
  // Organizers, administrators, the door: their own router, texts and modules.
  { path: /^\/(org|admin|door)(\/|$)/, load: () => import('./staff/router.js'), signedIn: true },
];

const decode = (s) => {
  try {
    return decodeURIComponent(s);
  } catch {
    return s; // a malformed %-escape: let the API answer 404
  }
};

function match(pathname) {
  for (const route of ROUTES) {
    const m = route.path.exec(pathname);
    if (!m) continue;
    const params = {};
    (route.keys || []).forEach((k, i) => { params[k] = decode(m[i + 1]); });
    return { route, params };
  }
  return null;
}

// ---- Header ---------------------------------------------------------------

function navLink(href, label) {
  const current = location.pathname === href ? 'page' : null;
  return h('a', { href, 'aria-current': current }, label);
}

async function signOut() {
  const refreshToken = session.refreshToken();
  session.clear();
  if (refreshToken) api.post('/auth/logout', { refreshToken }).catch(() => {});
  navigate('/');
  announce(t('auth.signedOut'));
}

// On a phone the menu folds behind one button, so the page starts in the first screen; it
// folds again on every navigation. Wider screens show it whole and never see the button.
const header = document.querySelector('header.site');
const toggle = document.getElementById('menu-toggle');
function fold(open) {
  header.classList.toggle('open', open);
  toggle.setAttribute('aria-expanded', String(open));
}
toggle.addEventListener('click', () => fold(!header.classList.contains('open')));
header.addEventListener('keydown', (e) => {
  if (e.key === 'Escape' && header.classList.contains('open')) {
    fold(false);
    toggle.focus();
  }
});

function renderHeader() {
  fold(false);
  document.getElementById('skip').textContent = t('nav.skip');
  toggle.textContent = t('nav.menu');
  const nav = document.getElementById('nav');
  nav.setAttribute('aria-label', t('nav.label'));
  const [isIn, org] = [session.signedIn(), session.claims()?.tenantId];
  nav.replaceChildren(h('ul', {},
    h('li', {}, navLink('/', t('nav.events'))),
    isIn && h('li', {}, navLink('/me/tickets', t('nav.tickets'))),
    isIn && h('li', {}, navLink('/me/notifications', t('nav.notifications'))),
    isIn && h('li', {}, org ? navLink('/org/events', t('nav.org')) : navLink('/org/', t('nav.orgs'))),
    isIn && org && h('li', {}, navLink('/door/', t('nav.door'))),
    isIn && session.user()?.platformAdmin && h('li', {}, navLink('/admin/requests', t('nav.admin'))),
    h('li', {}, navLink('/docs', t('nav.api')))));

  const langs = document.getElementById('lang');
  langs.setAttribute('aria-label', t('nav.language'));
  // The visible "RU"/"EN" begins the accessible name too (voice control users say what they see).
  langs.replaceChildren(...LANGS.map((l) => h('button', {
    type: 'button', lang: l, 'aria-pressed': String(l === lang()),
    onclick: async () => {
      if (l === lang()) return;
      await setLang(l);
      renderHeader();
      render();
    },
  }, l.toUpperCase(), hidden(` ${t(`lang.${l}`)}`))));

  const user = session.user();
  document.getElementById('account').replaceChildren(session.signedIn()
    ? h('span', {}, navLink('/me/profile', user?.firstName || user?.email || t('nav.myProfile')),
      h('button', { type: 'button', class: 'link', onclick: signOut }, t('nav.signOut')))
    : h('span', {}, navLink('/signin', t('nav.signIn')), ' ', navLink('/signup', t('nav.signUp'))));
}

// ---- Pages ----------------------------------------------------------------

let current = { controller: null, cleanup: null };
let first = true;

function errorView(root, err) {
  const missing = err?.status === 404;
  setTitle(t(missing ? 'error.notFoundTitle' : 'error.title'));
  root.replaceChildren(
    h('h1', {}, t(missing ? 'error.notFoundTitle' : 'error.title')),
    h('p', {}, missing ? t('error.notFound') : err?.message || t('error.unknown')),
    h('p', {}, h('a', { href: '/' }, t('error.toCatalogue'))));
}

// The address drawn last: a change of its #fragment alone (the skip link, an in-page anchor,
// Back over one) is the browser's to scroll, not a new page.
let drawn = null;

async function render() {
  drawn = location.pathname + location.search;
  current.controller?.abort();
  current.cleanup?.();
  const controller = new AbortController();
  current = { controller, cleanup: null };
  const url = new URL(location.href);
  const found = match(url.pathname);
  if (found?.route.signedIn && !session.signedIn()) {
    navigate(signInHere(), { replace: true });
    return;
  }
  if (!first) announce('');
  // A page draws into its own container; one left behind by a quick navigation is
  // detached, so its late drawing shows nowhere.
  const root = h('div', {}, spinner());
  const main = document.getElementById('app');
  main.replaceChildren(root);
  main.setAttribute('aria-busy', 'true');
  try {
    if (!found) throw Object.assign(new Error(), { status: 404 });
    const module = await found.route.load();
    const cleanup = await module.default({ root, params: found.params, query: url.searchParams, signal: controller.signal });
    if (controller.signal.aborted) cleanup?.();
    else current.cleanup = cleanup;
  } catch (err) {
    if (err.name === 'AbortError' || controller.signal.aborted) return;
    if (err.status === 401) {
      navigate(signInHere(), { replace: true });
      return;
    }
    errorView(root, err);
  } finally {
    if (!controller.signal.aborted) main.removeAttribute('aria-busy');
  }
  if (controller.signal.aborted) return;
  // After a navigation, focus goes to the new page's heading so a screen reader starts
  // there; on the first load the browser's own start is right. A page may finish loading
  // after the visitor has already moved into it: then the focus stays where they put it.
  if (!first && !root.contains(document.activeElement)) {
    const heading = root.querySelector('h1');
    if (heading) {
      heading.tabIndex = -1;
      heading.focus();
    }
  }
  first = false;
}

// Same-site links navigate without a page load; new tabs, downloads, in-page anchors
// and API addresses keep the browser's behaviour.
document.addEventListener('click', (e) => {
  const a = e.target.closest?.('a[href]');
  if (!a || e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  if (a.target || a.hasAttribute('download') || a.origin !== location.origin) return;
  if (a.pathname.startsWith('/api/')) return;
  if (a.hash && a.pathname === location.pathname && a.search === location.search) return;
  e.preventDefault();
  if (a.pathname + a.search !== location.pathname + location.search) navigate(a.pathname + a.search + a.hash);
});

window.addEventListener('popstate', () => {
  if (location.pathname + location.search === drawn) return;
  renderHeader();
  render();
});
window.addEventListener('bilet:navigate', () => { renderHeader(); render(); });
window.addEventListener('bilet:session', renderHeader);

await setLang(lang()); // sets <html lang>
renderHeader();
render();
