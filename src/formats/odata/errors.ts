/**
 * The OData v2 error format: `<error>` in the metadata namespace in XML, or `{"error": …}` in JSON when
 * the request asked for JSON. Every OData error response carries it, so OData clients show the message
 * instead of failing to parse a problem+json body they do not know.
 *
 * The XML declares the metadata namespace as the default namespace instead of binding it to `m:`, as
 * WCF Data Services and SAP Gateway write it: SAP UI5 looks the elements up by their qualified names
 * `error` and `message`, so it finds nothing in a prefixed `m:error` and shows a generic text instead
 * of the service's message.
 */
import { escapeText, NS } from './xml.ts';

export const XML_ERROR_CONTENT_TYPE = 'application/xml;charset=utf-8';
export const JSON_ERROR_CONTENT_TYPE = 'application/json;charset=utf-8';

/** xmlError renders an error message as an OData v2 XML error document. */
export function xmlError(message: string, code = ''): string {
  const codeElement = code === '' ? '<code/>' : `<code>${escapeText(code)}</code>`;
  return (
    `<?xml version="1.0" encoding="utf-8"?><error xmlns="${NS.m}">${codeElement}` +
    `<message xml:lang="en-US">${escapeText(message)}</message></error>\n`
  );
}

/** jsonError renders an error message as an OData v2 JSON error document. */
export function jsonError(message: string, code = ''): string {
  return `${JSON.stringify({ error: { code, message: { lang: 'en-US', value: message } } })}\n`;
}
