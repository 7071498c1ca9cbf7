// The door without a network (staff/door-offline.js): decisions against the phone's list, the
// list kept with the phone's own queued check-ins, finding by name, and the queue's sending,
// which stops at the first unreachable answer and reports a ticket used twice. Run:
// node --test web/tests/
import test from 'node:test';
import assert from 'node:assert/strict';

const store = new Map();
globalThis.localStorage ??= {
  getItem: (k) => (store.has(k) ? store.get(k) : null),
  setItem: (k, v) => store.set(k, String(v)),
  removeItem: (k) => store.delete(k),
};
const { decide, findByName, keepList, loadList, loadQueue, sync } = await import('../app/staff/door-offline.js');

const answer = {
  readAt: '2026-12-07T18:00:00Z',
  tickets: [
    { code: 'AAAA1111', name: 'Ann Lee', ticketTypeId: 't1', checkedInAt: null },
    { code: 'BBBB2222', name: 'Борис Годунов', ticketTypeId: 't1', checkedInAt: '2026-12-07T17:55:00Z' },
    { code: 'CCCC3333', name: 'Clara Lee', ticketTypeId: 't2', checkedInAt: null },
  ],
};

test('a code is let in once, refused the second time and when it is not on the list', () => {
  const list = keepList('e1', answer, []);
  const first = decide(list, 'AAAA1111', '2026-12-07T18:01:00Z');
  assert.deepEqual(first, { kind: 'ok', name: 'Ann Lee', type: 't1', at: '2026-12-07T18:01:00Z' });
  const again = decide(list, 'AAAA1111');
  assert.equal(again.kind, 'refused');
  assert.equal(again.why, 'already');
  assert.equal(again.at, '2026-12-07T18:01:00Z');
  assert.equal(decide(list, 'BBBB2222').why, 'already', 'checked in before the list was read');
  assert.equal(decide(list, 'ZZZZ9999').why, 'unknown');
  assert.equal(decide(null, 'AAAA1111').why, 'unknown');
});

test('a new list keeps the check-ins still queued on this phone', () => {
  const list = keepList('e2', answer, [{ code: 'CCCC3333', key: 'k', at: '2026-12-07T18:02:00Z' }]);
  assert.equal(list.tickets.CCCC3333.at, '2026-12-07T18:02:00Z');
  assert.deepEqual(loadList('e2'), list, 'kept on the phone');
});

test('people are found by every word of their name, or by code', () => {
  const list = keepList('e3', answer, []);
  assert.deepEqual(findByName(list, 'lee').map((x) => x.code), ['AAAA1111', 'CCCC3333']);
  assert.deepEqual(findByName(list, 'ann LEE').map((x) => x.code), ['AAAA1111']);
  assert.deepEqual(findByName(list, 'годун').map((x) => x.code), ['BBBB2222']);
  assert.deepEqual(findByName(list, 'cccc').map((x) => x.code), ['CCCC3333']);
  assert.deepEqual(findByName(list, '  '), []);
  assert.deepEqual(findByName(list, 'lee', 1).length, 1);
});

test('the queue is sent in order, stops when the server cannot be reached, and reports a second use', async () => {
  const queue = [
    { code: 'AAAA1111', key: 'k1', at: '1' },
    { code: 'CCCC3333', key: 'k2', at: '2' },
    { code: 'BBBB2222', key: 'k3', at: '3' },
    { code: 'DDDD4444', key: 'k4', at: '4' },
  ];
  const answers = {
    k1: null,
    k2: { status: 409 },
    k3: { status: 422 },
    k4: { status: 0 },
  };
  const sent = [];
  const done = await sync('e4', queue, async (item) => {
    sent.push(item.key);
    if (answers[item.key]) throw answers[item.key];
    return {};
  }, (e) => e.status === 0);
  assert.deepEqual(sent, ['k1', 'k2', 'k3', 'k4']);
  assert.deepEqual(done.map((x) => x.outcome), ['ok', 'twice', 'refused']);
  assert.deepEqual(queue.map((x) => x.key), ['k4'], 'the unsent one waits, with its key');
  assert.deepEqual(loadQueue('e4').map((x) => x.key), ['k4']);
});
