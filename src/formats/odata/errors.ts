/**
 * The OData v2 error format: `<m:error>` in XML, or `{"error": …}` in JSON when the request asked for
 * JSON. Every OData error response carries it, so OData clients show the message instead of failing to
 * parse a problem+json body they do not know.
 */
import { escapeText, NS, XML_DECLARATION } from './xml.ts';

export const XML_ERROR_CONTENT_TYPE = 'application/xml;charset=utf-8';
export const JSON_ERROR_CONTENT_TYPE = 'application/json;charset=utf-8';

/** xmlError renders an error message as an OData v2 XML error document. */
export function xmlError(message: string, code = ''): string {
  return (
    `${XML_DECLARATION}<m:error xmlns:m="${NS.m}"><m:code>${escapeText(code)}</m:code>` +
    `<m:message xml:lang="en-US">${escapeText(message)}</m:message></m:error>\n`
  );
}

/** jsonError renders an error message as an OData v2 JSON error document. */
export function jsonError(message: string, code = ''): string {
  return `${JSON.stringify({ error: { code, message: { lang: 'en-US', value: message } } })}\n`;
}
