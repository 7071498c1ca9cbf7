// Every visible text, in Russian (the default) and English. The choice is kept in
// localStorage and sent to the API as Accept-Language, so server messages match.

export const LANGS = ['ru', 'en'];
const KEY = 'bilet.lang';

// Only the language in use is loaded; the other comes when the visitor switches.
const TEXTS = {};
const load = async (l) => { TEXTS[l] ||= (await import(`./lang/${l}.js`)).default; };

// Node (the tests) has no localStorage.
const store = globalThis.localStorage;

function stored() {
  try {
    const l = store?.getItem(KEY);
    return LANGS.includes(l) ? l : 'ru';
  } catch {
    return 'ru';
  }
}

let current = stored();
await load(current);

export const lang = () => current;

export async function setLang(l) {
  const next = LANGS.includes(l) ? l : 'ru';
  await load(next);
  current = next;
  try { store?.setItem(KEY, current); } catch { /* private mode: keep it for this visit */ }
  if (globalThis.document) document.documentElement.lang = current;
}

export const has = (key) => key in TEXTS[current];

export function t(key, vars) {
  const text = TEXTS[current][key] ?? key;
  return vars ? text.replace(/\{(\w+)\}/g, (_, k) => vars[k] ?? '') : text;
}

// Counted texts: key.one / key.few / key.many / key.other as the language's plural rules say.
export function tn(key, n, vars = {}) {
  const form = new Intl.PluralRules(current).select(n);
  return t(has(`${key}.${form}`) ? `${key}.${form}` : `${key}.other`, { n, ...vars });
}
