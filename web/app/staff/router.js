// The router of the organizer (/org/…), administrator (/admin/…) and door (/door/…) pages,
// loaded by main.js only for those addresses. A page here is a page as main.js knows it
// ({root, params, query, signal} → cleanup); this module finds it, loads its texts and draws it.
import { loadTexts } from './texts.js';

const page = (name) => () => import(`../pages/${name}.js`);
const ORG = ['org'];
const DOOR = ['door'];

const ROUTES = [
  { path: /^\/org\/?$/, load: page('org-list'), texts: ORG },
  { path: /^\/org\/request$/, load: page('org-request'), texts: ORG },
  { path: /^\/org\/events$/, load: page('org-events'), texts: ORG },
  // One event: its overview, and each of its sections at an address of its own.
  { path: /^\/org\/events\/([^/]+)(?:\/(details|registrations|refunds|export))?$/, keys: ['eventId', 'section'], load: page('org-event'), texts: ORG },
  { path: /^\/org\/events\/([^/]+)\/dashboard$/, keys: ['eventId'], load: page('org-dashboard'), texts: ORG },
  { path: /^\/org\/members$/, load: page('org-members'), texts: ORG },
  { path: /^\/org\/settings$/, load: page('org-settings'), texts: ORG },
  { path: /^\/org\/report$/, load: page('org-report'), texts: ORG },
  { path: /^\/admin\/?(requests)?$/, load: page('admin-requests'), texts: ORG },
  { path: /^\/door\/?$/, load: page('door-events'), texts: DOOR },
  { path: /^\/door\/([^/]+)$/, keys: ['eventId'], load: page('door'), texts: DOOR },
];

const decode = (s) => {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
};

export default async function staff(context) {
  for (const route of ROUTES) {
    const m = route.path.exec(location.pathname);
    if (!m) continue;
    const params = {};
    // An optional part left out (the overview of an event has no section) is ''.
    (route.keys || []).forEach((k, i) => { params[k] = m[i + 1] === undefined ? '' : decode(m[i + 1]); });
    const [module] = await Promise.all([route.load(), loadTexts(route.texts)]);
    return module.default({ ...context, params });
  }
  throw Object.assign(new Error(), { status: 404 });
}
