// What the site's page scripts share, loaded before each of them: `window.nonsenseSite`.
'use strict';

window.nonsenseSite = Object.freeze({
  /** The problem+json detail of a failed response, or a sentence about its status. */
  async problemDetail(response) {
    try {
      const problem = await response.json();
      if (problem && typeof problem.detail === 'string') return problem.detail;
    } catch {
      // Not JSON: fall through to the status line.
    }
    return `The service answered ${response.status} ${response.statusText}.`;
  },
});
