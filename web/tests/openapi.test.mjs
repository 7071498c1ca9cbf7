// The reading of the OpenAPI document behind /docs (web/app/openapi.js), on a small document
// written by hand the way utoipa 5 writes one. Run: node --test web/tests/
import test from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { anchor, content, fields, groups, matches, resolve, slug, typeLabel } from '../app/openapi.js';

const doc = {
  openapi: '3.1.0',
  info: { title: 'sample', version: '1' },
  tags: [{ name: 'events', description: 'Events' }, { name: 'empty' }],
  paths: {
    '/api/v1/events/{id}': {
      parameters: [{ $ref: '#/components/parameters/Id' }],
      get: {
        tags: ['events'], summary: 'An event.', operationId: 'get_event',
        parameters: [{ name: 'lang', in: 'query', required: false, schema: { type: ['string', 'null'] } }],
        responses: {
          200: { description: '', content: { 'application/json': { schema: { $ref: '#/components/schemas/Event' } } } },
          404: { $ref: '#/components/responses/NotFound' },
        },
      },
      put: {
        tags: ['events'], summary: 'Changes an event.',
        requestBody: { $ref: '#/components/requestBodies/EventChange' },
        responses: { 204: { description: 'changed' } },
      },
    },
    '/api/v1/tree': {
      post: {
        summary: 'A tree of nodes.',
        requestBody: { required: true, content: { 'application/json': { schema: { $ref: '#/components/schemas/Node' } } } },
        responses: { 201: { description: '', content: { 'application/json': { schema: { type: 'array', items: { $ref: '#/components/schemas/Node' } } } } } },
      },
    },
    '/api/v1/loop': {
      delete: {
        tags: ['events'],
        requestBody: { content: { 'application/json': { schema: { $ref: '#/components/schemas/LoopA' } } } },
        responses: {},
      },
    },
  },
  components: {
    parameters: { Id: { name: 'id', in: 'path', required: true, schema: { type: 'string', format: 'uuid' } } },
    requestBodies: {
      EventChange: { required: false, content: { 'application/json': { schema: { oneOf: [{ type: 'null' }, { $ref: '#/components/schemas/EventChange' }] } } } },
    },
    responses: { NotFound: { description: 'no such event', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } } },
    schemas: {
      Error: { type: 'object', required: ['code'], properties: { code: { type: 'string' }, details: { type: ['object', 'null'] } } },
      Place: { type: 'string', enum: ['OFFLINE', 'ONLINE'] },
      Location: {
        type: 'object', required: ['city'],
        properties: { city: { type: 'string', description: 'City' }, event: { $ref: '#/components/schemas/Event' } },
      },
      Event: {
        type: 'object', required: ['id', 'title', 'place'],
        properties: {
          id: { type: 'string', format: 'uuid' },
          title: { type: 'string' },
          place: { $ref: '#/components/schemas/Place' },
          location: { oneOf: [{ type: 'null' }, { $ref: '#/components/schemas/Location' }] },
          prices: { type: 'array', items: { type: 'integer', format: 'int64' } },
          tags: { type: 'object', additionalProperties: { type: 'string' } },
        },
      },
      EventChange: {
        allOf: [{ $ref: '#/components/schemas/Named' }, { type: 'object', properties: { capacity: { type: ['integer', 'null'], format: 'int32' } } }],
      },
      Named: { type: 'object', required: ['title'], properties: { title: { type: 'string' } } },
      Node: {
        type: 'object', required: ['name'],
        properties: {
          name: { type: 'string' },
          parent: { oneOf: [{ type: 'null' }, { $ref: '#/components/schemas/Node' }] },
          children: { type: 'array', items: { $ref: '#/components/schemas/Node' } },
          meta: { type: 'object', properties: { depth: { type: 'integer' }, self: { $ref: '#/components/schemas/Node' } } },
        },
      },
      LoopA: { $ref: '#/components/schemas/LoopB' },
      LoopB: { $ref: '#/components/schemas/LoopA' },
    },
  },
};

const rows = (list) => list.map((r) => `${r.name}: ${r.type}${r.required ? ' *' : ''}${r.cycle ? ' ↻' : ''}`);

test('anchors are URL-safe and name the method and path', () => {
  assert.equal(anchor('get', '/api/v1/events/{id}'), 'op-get-api-v1-events-id');
  assert.equal(anchor('post', '/api/v1/events/{id}/ticket-types'), 'op-post-api-v1-events-id-ticket-types');
  assert.equal(anchor('delete', '/api/v1/Media/{key}.png?x'), 'op-delete-api-v1-media-key-png-x');
  assert.equal(slug('Sign-in, tokens'), 'sign-in-tokens');
  for (const g of groups(doc)) for (const e of g.ops) assert.match(e.id, /^op-[a-z]+(-[a-z0-9]+)+$/);
});

test('two paths that would share an anchor get different ones', () => {
  const twins = { paths: { '/a/{b}': { get: { responses: {} } }, '/a/b': { get: { responses: {} } } } };
  assert.deepEqual(groups(twins)[0].ops.map((e) => e.id), ['op-get-a-b', 'op-get-a-b-2']);
});

test('$ref pointers resolve, through chains; a circle or a missing target gives null', () => {
  assert.equal(resolve(doc, { $ref: '#/components/schemas/Place' }).enum.length, 2);
  assert.equal(resolve(doc, { $ref: '#/components/responses/NotFound' }).description, 'no such event');
  assert.equal(resolve(doc, { $ref: '#/components/schemas/LoopA' }), null);
  assert.equal(resolve(doc, { $ref: '#/components/schemas/Nothing' }), null);
  assert.equal(resolve(doc, { $ref: 'https://example.org/other.json#/x' }), null);
  const plain = { type: 'string' };
  assert.equal(resolve(doc, plain), plain);
  // JSON pointer escapes: ~1 is '/', ~0 is '~'.
  assert.equal(resolve({ paths: { '/a/{b}': 1 } }, { $ref: '#/paths/~1a~1%7Bb%7D' }), 1);
});

test('types read as short labels', () => {
  const s = doc.components.schemas;
  assert.equal(typeLabel(s.Event.properties.id), 'string (uuid)');
  assert.equal(typeLabel(s.Event.properties.place), 'Place');
  assert.equal(typeLabel(s.Event.properties.location), 'Location | null');
  assert.equal(typeLabel(s.Event.properties.prices), 'integer (int64)[]');
  assert.equal(typeLabel(s.Event.properties.tags), 'map<string, string>');
  assert.equal(typeLabel(s.Place), '"OFFLINE" | "ONLINE"');
  assert.equal(typeLabel(s.Error.properties.details), 'object | null');
  assert.equal(typeLabel(s.EventChange.allOf[1].properties.capacity), 'integer (int32) | null');
  assert.equal(typeLabel({ type: 'array', items: { oneOf: [{ type: 'null' }, { $ref: '#/x/Y' }] } }), '(Y | null)[]');
  assert.equal(typeLabel({}), 'any');
});

test('a body schema becomes rows, nested one level, required marked', () => {
  assert.deepEqual(rows(fields(doc, { $ref: '#/components/schemas/Event' })), [
    'id: string (uuid) *',
    'title: string *',
    'place: Place *',
    'location: Location | null',
    'location.city: string *',
    'location.event: Event ↻', // back to the schema being shown: not opened again
    'prices: integer (int64)[]',
    'tags: map<string, string>',
  ]);
  assert.equal(fields(doc, { $ref: '#/components/schemas/Event' })[4].description, 'City');
  assert.equal(fields(doc, { $ref: '#/components/schemas/Event' })[4].depth, 1);
});

test('a schema that contains itself is shown once, its cycles marked', () => {
  assert.deepEqual(rows(fields(doc, { $ref: '#/components/schemas/Node' })), [
    'name: string *',
    'parent: Node | null ↻',
    'children: Node[] ↻',
    'meta: object',
    'meta.depth: integer',
    'meta.self: Node ↻',
  ]);
  // Arrays of objects open their items, named with [].
  const list = { type: 'array', items: { $ref: '#/components/schemas/Location' } };
  assert.deepEqual(rows(fields(doc, { type: 'object', properties: { list } })).slice(0, 3),
    ['list: Location[]', 'list[].city: string *', 'list[].event: Event']);
});

test('allOf parts merge, nullable bodies unwrap, circles give nothing', () => {
  const body = resolve(doc, { $ref: '#/components/requestBodies/EventChange' });
  const c = content(doc, body);
  assert.equal(c.type, 'application/json');
  assert.equal(typeLabel(c.schema), 'EventChange | null');
  assert.deepEqual(rows(fields(doc, c.schema)), ['title: string *', 'capacity: integer (int32) | null']);
  assert.deepEqual(fields(doc, { $ref: '#/components/schemas/LoopA' }), []);
  assert.deepEqual(fields(doc, { type: 'string' }), []);
});

test('operations group by tag in the document order, path parameters included', () => {
  const view = groups(doc, 'Other');
  assert.deepEqual(view.map((g) => g.name), ['events', 'Other'], 'a tag without operations is left out');
  const [get, put, del] = view[0].ops;
  assert.deepEqual([get.method, put.method, del.method], ['get', 'put', 'delete']);
  assert.deepEqual(get.params.map((p) => `${p.in}:${p.name}:${p.required}`), ['path:id:true', 'query:lang:false']);
  assert.equal(typeLabel(get.params[1].schema), 'string | null');
  assert.equal(put.body.required, false);
  const notFound = content(doc, get.op.responses[404]);
  assert.equal(typeLabel(notFound.schema), 'Error');
  assert.equal(typeLabel(content(doc, view[1].ops[0].op.responses[201]).schema), 'Node[]');
  assert.equal(content(doc, put.op.responses[204]), null);
});

test('the filter keeps operations having every word', () => {
  const ops = groups(doc).flatMap((g) => g.ops);
  const ids = (q) => ops.filter((e) => matches(e, q)).map((e) => e.id);
  assert.equal(ids('').length, 4);
  assert.deepEqual(ids('PUT events'), ['op-put-api-v1-events-id']);
  assert.deepEqual(ids('tree'), ['op-post-api-v1-tree']);
  assert.deepEqual(ids('get_event'), ['op-get-api-v1-events-id']);
  assert.deepEqual(ids('an event'), ['op-get-api-v1-events-id', 'op-put-api-v1-events-id']);
  assert.deepEqual(ids('nothing'), []);
});

test('the /docs code stays small and only /docs loads it', () => {
  const app = new URL('../app/', import.meta.url);
  const size = ['pages/docs.js', 'openapi.js'].reduce((n, f) => n + readFileSync(new URL(f, app)).length, 0);
  assert.ok(size < 15_000, `${size} bytes`);
  const main = readFileSync(new URL('main.js', app), 'utf8');
  assert.match(main, /path: \/\^\\\/docs\$\/, load: page\('docs'\)/);
  // Static imports of the router and of every other page reach neither module.
  const seen = new Set();
  const visit = (url) => {
    if (seen.has(url.href)) return;
    seen.add(url.href);
    const text = readFileSync(url, 'utf8');
    for (const m of text.matchAll(/^\s*import\s[^;]*?from\s+'([^']+)'/gms)) visit(new URL(m[1], url));
  };
  visit(new URL('main.js', app));
  for (const f of readdirSync(new URL('pages/', app))) if (f !== 'docs.js') visit(new URL(`pages/${f}`, app));
  const reached = [...seen].map((href) => href.slice(app.href.length));
  assert.ok(reached.length > 10);
  for (const f of reached) assert.ok(!/^(openapi\.js|pages\/docs\.js|lang\/docs\.)/.test(f), f);
});
