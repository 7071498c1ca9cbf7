// Texts of the organizer, administrator and door pages (and of /docs, and of paying for a
// ticket: pay.js). They live in their own dictionaries (lang/org.ru.js, lang/door.en.js,
// lang/docs.ru.js, lang/pay.ru.js, …), loaded with those pages only, so a page that does not
// use them never downloads them. Keys missing here are the shared ones of i18n.js.
import { has as hasShared, lang, t as shared } from '../i18n.js';

const TEXTS = { ru: {}, en: {} };
const loaded = new Set();

// Loads dictionaries (`org`, `door`) in the current language; the router calls it before
// every drawing, so a language switch finds its texts.
export async function loadTexts(names) {
  const l = lang();
  await Promise.all(names.map(async (name) => {
    if (loaded.has(`${name}.${l}`)) return;
    Object.assign(TEXTS[l], (await import(`../lang/${name}.${l}.js`)).default);
    loaded.add(`${name}.${l}`);
  }));
}

export const has = (key) => key in TEXTS[lang()] || hasShared(key);

export function t(key, vars) {
  const text = TEXTS[lang()][key];
  if (text === undefined) return shared(key, vars);
  return vars ? text.replace(/\{(\w+)\}/g, (_, k) => vars[k] ?? '') : text;
}

// Counted texts, as i18n.js's tn.
export function tn(key, n, vars = {}) {
  const form = new Intl.PluralRules(lang()).select(n);
  return t(has(`${key}.${form}`) ? `${key}.${form}` : `${key}.other`, { n, ...vars });
}
