// Reading an OpenAPI 3.1 document (as utoipa writes it) for /docs: `$ref`s resolved, operations
// grouped by tag, schemas flattened into rows one level deep. No DOM: the tests run it in node.

const METHODS = ['get', 'put', 'post', 'patch', 'delete', 'head', 'options', 'trace'];

// Lower case, every run of other characters one dash, none at the ends.
export const slug = (s) => String(s).toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '');

// An operation's fragment: anchor('get', '/api/v1/events/{id}') === 'op-get-api-v1-events-id'.
export const anchor = (method, path) => `op-${slug(`${method}-${path}`)}`;

// One step of a JSON pointer: %-escapes, then ~1 for '/' and ~0 for '~'.
function step(p) {
  try { p = decodeURIComponent(p); } catch { /* kept as written */ }
  return p.replace(/~1/g, '/').replace(/~0/g, '~');
}

export const refName = (ref) => step(String(ref).split('/').pop());

// Follows `$ref` (local "#/…" pointers only) until a node without one; null when a pointer
// leads nowhere or the references go round in a circle.
export function resolve(doc, node) {
  const seen = new Set();
  while (node && typeof node === 'object' && typeof node.$ref === 'string') {
    if (seen.has(node.$ref) || !node.$ref.startsWith('#')) return null;
    seen.add(node.$ref);
    node = node.$ref.slice(1).split('/').filter(Boolean)
      .map(step)
      .reduce((at, key) => (at && typeof at === 'object' ? at[key] : undefined), doc) ?? null;
  }
  return node ?? null;
}

const wrap = (s) => (/ [|&] /.test(s) ? `(${s})` : s);

// A short type: "EventDto", "string (uuid) | null", "TicketTypeDto[]", "A | B".
export function typeLabel(s) {
  if (!s || typeof s !== 'object') return '';
  if (s.$ref) return refName(s.$ref);
  if (s.enum) return s.enum.map((v) => JSON.stringify(v)).join(' | ');
  for (const [key, sep] of [['oneOf', ' | '], ['anyOf', ' | '], ['allOf', ' & ']]) {
    // "T | null" rather than "null | T", as utoipa writes Option<T> as oneOf [null, T].
    if (Array.isArray(s[key])) return s[key].map(typeLabel).filter(Boolean).sort((a, b) => (a === 'null') - (b === 'null')).join(sep);
  }
  const types = [s.type ?? (s.properties ? 'object' : 'any')].flat();
  return types.map((ty) => {
    if (ty === 'array') return `${wrap(typeLabel(s.items) || 'any')}[]`;
    if (ty === 'object' && s.additionalProperties && typeof s.additionalProperties === 'object') {
      return `map<string, ${typeLabel(s.additionalProperties) || 'any'}>`;
    }
    return ty !== 'null' && s.format ? `${ty} (${s.format})` : ty;
  }).join(' | ');
}

// The object a schema stands for: through `$ref`s, "T | null" and array items, with the
// names of the references passed (to stop at a cycle). allOf parts are merged.
export function target(doc, schema, names = []) {
  for (let i = 0; schema && i < 16; i++) {
    if (schema.$ref) {
      names = [...names, refName(schema.$ref)];
      schema = resolve(doc, schema);
    } else if (schema.items && !schema.properties) {
      schema = schema.items;
    } else if (schema.oneOf || schema.anyOf) {
      const parts = (schema.oneOf || schema.anyOf).filter((p) => p?.type !== 'null');
      if (parts.length !== 1) break;
      schema = parts[0];
    } else if (schema.allOf) {
      const merged = { properties: {}, required: [] };
      for (const part of schema.allOf) {
        const { schema: s, names: n } = target(doc, part, names);
        Object.assign(merged.properties, s?.properties);
        merged.required.push(...(s?.required || []));
        names = n;
      }
      schema = merged;
    } else break;
  }
  return { schema, names };
}

// The values of an enum behind a reference ("EventStatus"); an inline enum shows them as its type.
export const values = (doc, schema) => (schema && !schema.enum && target(doc, schema).schema?.enum) || null;

// Rows of a body or response schema: {name, type, required, description, values, depth,
// cycle}; `values` are those of a referenced enum (an inline one is its type already).
// Properties of properties come one level down (depth 1); a reference back to a schema
// already open is marked `cycle` and not opened again.
export function fields(doc, schema, depth = 0, open = []) {
  const { schema: s, names } = target(doc, schema, open);
  if (!s?.properties) return [];
  const required = new Set(s.required || []);
  const rows = [];
  for (const [name, prop] of Object.entries(s.properties)) {
    const inner = target(doc, prop, names);
    const cycle = inner.names.slice(names.length).some((n) => names.includes(n));
    // utoipa puts the description of an Option<Enum> field on the reference inside oneOf.
    const part = (prop.oneOf || prop.anyOf || []).find((p) => p?.description);
    rows.push({
      name, type: typeLabel(prop), required: required.has(name), depth, cycle,
      description: prop.description || part?.description || inner.schema?.description || '',
      values: values(doc, prop),
    });
    if (depth < 1 && !cycle && inner.schema?.properties) {
      const prefix = /\[\]$/.test(typeLabel(prop)) ? `${name}[].` : `${name}.`;
      rows.push(...fields(doc, prop, depth + 1, names).map((r) => ({ ...r, name: prefix + r.name })));
    }
  }
  return rows;
}

// The first content of a request body or response: {type, schema}.
export function content(doc, holder) {
  const [type, media] = Object.entries(resolve(doc, holder)?.content || {})[0] || [];
  return type ? { type, schema: media?.schema || null } : null;
}

// Every operation, in the document's order, grouped by tag (the document's tags first).
export function groups(doc, untagged = '') {
  const used = new Set(); // '/a/{b}' and '/a/b' would share an anchor: the second gets '-2'
  const unique = (id) => {
    let out = id;
    for (let n = 2; used.has(out); n++) out = `${id}-${n}`;
    used.add(out);
    return out;
  };
  const byTag = new Map((doc.tags || []).map((tg) => [tg.name, { name: tg.name, description: tg.description || '', ops: [] }]));
  for (const [path, item] of Object.entries(doc.paths || {})) {
    for (const method of METHODS) {
      const op = item?.[method];
      if (!op) continue;
      // The path's parameters, unless the operation redefines one (same name and place).
      const own = (op.parameters || []).map((p) => resolve(doc, p)).filter(Boolean);
      const params = (item.parameters || []).map((p) => resolve(doc, p))
        .filter((p) => p && !own.some((o) => o.name === p.name && o.in === p.in)).concat(own);
      const body = op.requestBody ? resolve(doc, op.requestBody) : null;
      const tag = op.tags?.[0] ?? untagged;
      if (!byTag.has(tag)) byTag.set(tag, { name: tag, description: '', ops: [] });
      byTag.get(tag).ops.push({
        method, path, op, params, body, id: unique(anchor(method, path)),
        text: [method, path, op.summary, op.description, op.operationId, ...(op.tags || [])].join(' ').toLowerCase(),
      });
    }
  }
  return [...byTag.values()].filter((g) => g.ops.length);
}

// Every word of the filter appears in the operation's method, path, texts or tags.
export const matches = (entry, query) =>
  query.toLowerCase().split(/\s+/).filter(Boolean).every((w) => entry.text.includes(w));
