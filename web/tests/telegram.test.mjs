// Telegram sign-in without Telegram's script: the link to its sign-in page and the account it
// sends back in the fragment. Run: node --test web/tests/
import test from 'node:test';
import assert from 'node:assert/strict';
import { authLink, readAuthResult } from '../app/telegram.js';

const config = { botId: 123456, botUsername: 'bilet_bot', authUrl: 'https://oauth.telegram.org/auth' };

// What Telegram puts after `#tgAuthResult=`: base64url of the JSON, without padding.
const base64url = (value) => Buffer.from(JSON.stringify(value)).toString('base64url');
const account = {
  id: 42, first_name: 'Ann', last_name: 'Lee', username: 'ann', photo_url: 'https://t.me/i/userpic/320/ann.jpg',
  auth_date: 1_700_000_000, hash: 'a'.repeat(64),
};

test('authLink builds the address of Telegram\'s sign-in page', () => {
  assert.equal(authLink(config, 'https://bilet.example', '/e/rust-meetup?x=1&y=2'),
    'https://oauth.telegram.org/auth?bot_id=123456&origin=https%3A%2F%2Fbilet.example&request_access=write'
    + '&return_to=https%3A%2F%2Fbilet.example%2Fsignin%2Ftelegram%3Fnext%3D%252Fe%252Frust-meetup%253Fx%253D1%2526y%253D2');
});

test('authLink keeps next through both encodings', () => {
  const url = new URL(authLink(config, 'http://localhost:8080', '/me/tickets?page=2'));
  assert.equal(url.origin + url.pathname, 'https://oauth.telegram.org/auth');
  assert.equal(url.searchParams.get('bot_id'), '123456');
  assert.equal(url.searchParams.get('origin'), 'http://localhost:8080');
  assert.equal(url.searchParams.get('request_access'), 'write');
  const back = new URL(url.searchParams.get('return_to'));
  assert.equal(back.origin, 'http://localhost:8080');
  assert.equal(back.pathname, '/signin/telegram');
  assert.equal(back.searchParams.get('next'), '/me/tickets?page=2');
});

test('authLink gives nothing for an unusable config', () => {
  for (const bad of [null, {}, { ...config, botId: 0 }, { ...config, botId: 'x' }, { ...config, authUrl: 'javascript:alert(1)' },
    { ...config, authUrl: undefined }]) {
    assert.equal(authLink(bad, 'https://bilet.example', '/'), null, JSON.stringify(bad));
  }
});

test('readAuthResult decodes base64url without padding', () => {
  const encoded = base64url(account);
  assert.ok(!encoded.endsWith('='));
  assert.deepEqual(readAuthResult(`#tgAuthResult=${encoded}`), account);
  assert.deepEqual(readAuthResult(`tgAuthResult=${encoded}`), account);
});

test('readAuthResult decodes padded and plain base64', () => {
  // A length that needs padding, and bytes that base64 writes as "+" and "/".
  const value = { ...account, first_name: '??>>~~', last_name: 'ü' };
  const plain = Buffer.from(JSON.stringify(value)).toString('base64');
  assert.match(plain, /=$/);
  assert.match(plain, /[+/]/);
  assert.deepEqual(readAuthResult(`#tgAuthResult=${plain}`), value);
  assert.deepEqual(readAuthResult(`#tgAuthResult=${encodeURIComponent(plain)}`), value);
  const url = base64url(value);
  const padded = url.padEnd(Math.ceil(url.length / 4) * 4, '=');
  assert.match(padded, /=$/);
  assert.deepEqual(readAuthResult(`#tgAuthResult=${padded}`), value);
});

test('readAuthResult keeps Cyrillic names', () => {
  const value = { ...account, first_name: 'Анна', last_name: 'Ёлкина-Щукина', username: 'anna' };
  const result = readAuthResult(`#tgAuthResult=${base64url(value)}`);
  assert.equal(result.first_name, 'Анна');
  assert.equal(result.last_name, 'Ёлкина-Щукина');
  assert.equal(result.id, 42);
  assert.equal(result.auth_date, 1_700_000_000);
});

test('readAuthResult finds the result among other fragment parameters', () => {
  const encoded = base64url(account);
  assert.deepEqual(readAuthResult(`#state=abc&tgAuthResult=${encoded}&x=1`), account);
  assert.deepEqual(readAuthResult(`#tgAuthResult=${encoded}&other=2`), account);
  assert.equal(readAuthResult('#notTgAuthResult=abc&tgAuthResultX=1'), null);
});

test('readAuthResult refuses what is not a signed account', () => {
  const cases = {
    'no fragment': '',
    'undefined': undefined,
    'another fragment': '#section-2',
    'empty value': '#tgAuthResult=',
    'cancelled': '#tgAuthResult=false',
    'not base64': '#tgAuthResult=%%%***',
    'broken escape': '#tgAuthResult=%E0%A4%A',
    'not JSON': `#tgAuthResult=${Buffer.from('hello there').toString('base64url')}`,
    'not UTF-8': `#tgAuthResult=${Buffer.from([0x22, 0xff, 0xfe, 0x22]).toString('base64url')}`,
    'an array': `#tgAuthResult=${base64url([account])}`,
    'a string': `#tgAuthResult=${base64url('account')}`,
    'a number': `#tgAuthResult=${base64url(42)}`,
    'null': `#tgAuthResult=${base64url(null)}`,
    'no hash': `#tgAuthResult=${base64url({ ...account, hash: undefined })}`,
    'empty hash': `#tgAuthResult=${base64url({ ...account, hash: '' })}`,
    'no id': `#tgAuthResult=${base64url({ ...account, id: undefined })}`,
    'no auth_date': `#tgAuthResult=${base64url({ ...account, auth_date: undefined })}`,
  };
  for (const [name, hash] of Object.entries(cases)) assert.equal(readAuthResult(hash), null, name);
});
