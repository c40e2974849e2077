// The client-side variables ($AUTHOR$, $SERVER$, $CHANNEL$, ${app_name}) that the API leaves in the
// text for chat clients; the site shows the neutral words the page states in data-client-words.

const CLIENT_TOKEN = /\$AUTHOR\$|\$SERVER\$|\$CHANNEL\$|\$\{app_name\}/g;

/** @type {Record<string, string>} */
const words = JSON.parse(document.body.dataset.clientWords || '{}');

/**
 * withClientWords replaces the client-side variables of `text` with the site's words, in one pass.
 * @param {string} text
 * @returns {string}
 */
export function withClientWords(text) {
  return text.replace(CLIENT_TOKEN, (token) => words[token] ?? token);
}
