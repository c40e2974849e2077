// The admin JSON API as the moderation page calls it. The token lives in sessionStorage (this tab
// only, gone when it closes) and travels as a Bearer header; it is never put in a URL or a cookie.

export const TOKEN_KEY = 'nonsense-admin-token';

/**
 * @typedef {object} ApiResult
 * @property {boolean} ok
 * @property {number} status
 * @property {any} data The JSON body, or null.
 * @property {string} detail The problem+json detail of a failure.
 * @property {string | null} next The path of a list's next page.
 * @property {string | null} etag
 */

/** @type {(detail: string) => void} */
let unauthorized = () => {};

/**
 * onUnauthorized sets what a 401 does: the token was revoked or is wrong, so the session ends.
 * @param {(detail: string) => void} handler
 */
export function onUnauthorized(handler) {
  unauthorized = handler;
}

/**
 * nextPage reads the `Link: <…>; rel="next"` header of a list page: the next page's path, or null.
 * @param {Response} response
 * @returns {string | null}
 */
function nextPage(response) {
  const match = /<([^>]*)>\s*;\s*rel="?next"?/.exec(response.headers.get('link') || '');
  if (!match) return null;
  // The service gives absolute links; the page asks its own origin, where it found the API.
  const url = new URL(match[1], location.href);
  return url.pathname + url.search;
}

/**
 * api sends one request with the token. `detail` of the result is the problem+json detail of a
 * failure, `next` the path of a list's next page (or null).
 * @param {string} method
 * @param {string} path
 * @param {unknown} [body] JSON, or a Blob sent as it is with `contentType`
 * @param {string} [contentType]
 * @param {Record<string, string>} [extraHeaders]
 * @returns {Promise<ApiResult>}
 */
export async function api(method, path, body, contentType, extraHeaders = {}) {
  /** @type {Record<string, string>} */
  const headers = { ...extraHeaders, authorization: `Bearer ${sessionStorage.getItem(TOKEN_KEY) || ''}`, accept: 'application/json' };
  /** @type {BodyInit | undefined} */
  let payload;
  if (body instanceof Blob) {
    payload = body;
    headers['content-type'] = contentType ?? 'application/octet-stream';
  } else if (body !== undefined) {
    payload = JSON.stringify(body);
    headers['content-type'] = 'application/json';
  }
  let response;
  try {
    response = await fetch(path, { method, headers, body: payload, cache: 'no-store' });
  } catch {
    return { ok: false, status: 0, data: null, detail: 'The service could not be reached. Check the connection and try again.', next: null, etag: null };
  }
  let data = null;
  if (response.status !== 204 && response.status !== 304) {
    try {
      data = await response.json();
    } catch {
      data = null;
    }
  }
  const detail = response.ok ? '' : data && typeof data.detail === 'string' ? data.detail : `The service answered ${response.status}.`;
  if (response.status === 401 && path.startsWith('/api/v1/admin/')) unauthorized(detail);
  return { ok: response.ok, status: response.status, data, detail, next: nextPage(response), etag: response.headers.get('etag') };
}
