// Telegram sign-in without Telegram's widget script (no third-party script here): a plain
// link to Telegram's OAuth page, which sends the browser back to /signin/telegram with the
// signed account in the fragment. No DOM, so the tests run it under node.

// The address of Telegram's sign-in page for the config of GET /api/v1/auth/messenger, or
// null when the config is not usable (no link is better than a broken or foreign one).
export function authLink(config, origin, next) {
  const { botId, authUrl } = config || {};
  if (!/^[1-9]\d*$/.test(String(botId)) || typeof authUrl !== 'string' || !/^https?:\/\//i.test(authUrl)) return null;
  const returnTo = `${origin}/signin/telegram?next=${encodeURIComponent(next)}`;
  return `${authUrl}${authUrl.includes('?') ? '&' : '?'}bot_id=${botId}&origin=${encodeURIComponent(origin)}`
    + `&request_access=write&return_to=${encodeURIComponent(returnTo)}`;
}

// The account in `#tgAuthResult=<base64 JSON>`, as Telegram signed it (it goes to the API
// unchanged, since the API checks the hash over exactly these fields), or null.
export function readAuthResult(hash) {
  // Not URLSearchParams: it would turn the "+" of plain base64 into spaces.
  const part = String(hash || '').replace(/^#/, '').split('&').find((p) => p.startsWith('tgAuthResult='));
  if (!part) return null;
  try {
    const value = decodeURIComponent(part.slice('tgAuthResult='.length))
      .replace(/-/g, '+').replace(/_/g, '/').replace(/=+$/, '');
    if (!/^[A-Za-z0-9+/]+$/.test(value) || value.length % 4 === 1) return null;
    const binary = atob(value + '='.repeat((4 - (value.length % 4)) % 4));
    // atob gives one character per byte; names in Cyrillic and the like are UTF-8 bytes.
    const text = new TextDecoder('utf-8', { fatal: true })
      .decode(Uint8Array.from(binary, (c) => c.charCodeAt(0)));
    const data = JSON.parse(text);
    if (!data || typeof data !== 'object' || Array.isArray(data)) return null;
    if (data.id == null || data.auth_date == null || typeof data.hash !== 'string' || !data.hash) return null;
    return data;
  } catch {
    return null; // a broken %-escape, base64, UTF-8 or JSON
  }
}
