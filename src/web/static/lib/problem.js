// What failed responses say, as the page scripts show it.

/**
 * problemDetail is the problem+json detail of a failed response, or a sentence about its status.
 * @param {Response} response
 * @returns {Promise<string>}
 */
export async function problemDetail(response) {
  try {
    const problem = await response.json();
    if (problem && typeof problem.detail === 'string') return problem.detail;
  } catch {
    // Not JSON: fall through to the status line.
  }
  return `The service answered ${response.status} ${response.statusText}.`;
}
