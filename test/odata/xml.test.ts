import { describe, expect, it } from 'vitest';
import { ODataRequestError } from '../../src/domain/odata/errors.ts';
import { parseQueryOptions } from '../../src/domain/odata/query-options.ts';
import { parseResourcePath } from '../../src/domain/odata/resource-path.ts';
import { escapeAttribute, escapeText, xmlSafe } from '../../src/formats/odata/xml.ts';
import { acceptedFormat } from '../../src/formats/odata/negotiate.ts';
import { parseXml } from './atom-reader.ts';

describe('XML escaping', () => {
  it('escapes markup in text and attributes', () => {
    expect(escapeText(`<a href="x">'&amp;'</a> ]]>`)).toBe('&lt;a href=&quot;x&quot;&gt;&apos;&amp;amp;&apos;&lt;/a&gt; ]]&gt;');
    expect(escapeAttribute('a\tb\nc\rd"e')).toBe('a&#x9;b&#xA;c&#xD;d&quot;e');
  });

  it('replaces characters XML 1.0 forbids, lone surrogates included, and keeps pairs and allowed controls', () => {
    expect(xmlSafe('a\u0000b\u0001c\u0008d\u000Be\u000Cf\u001Fg\uFFFEh\uFFFFi')).toBe('a\uFFFDb\uFFFDc\uFFFDd\uFFFDe\uFFFDf\uFFFDg\uFFFDh\uFFFDi');
    expect(xmlSafe('lone \uD800 high, lone \uDC00 low, pair 🦆')).toBe('lone \uFFFD high, lone \uFFFD low, pair 🦆');
    expect(xmlSafe('tab\tnewline\ncr\r')).toBe('tab\tnewline\ncr\r');
  });

  it('round-trips any string through a real parser, line breaks included', () => {
    const hostile = 'x\r\ny\rz\n<&>"\'\t\u0001\uD800]]>';
    const doc = parseXml(`<r a="${escapeAttribute(hostile)}">${escapeText(hostile)}</r>`);
    const expected = 'x\r\ny\rz\n<&>"\'\t\uFFFD\uFFFD]]>';
    expect(doc.documentElement!.textContent).toBe(expected);
    expect(doc.documentElement!.getAttribute('a')).toBe(expected);
  });
});

describe('resource paths', () => {
  it.each([
    ['', { kind: 'service' }],
    ['/', { kind: 'service' }],
    ['/$metadata', { kind: 'metadata' }],
    ['/nonsense_list', { kind: 'collection' }],
    ['//nonsense_list/', { kind: 'collection' }],
    ['/nonsense_list/$count', { kind: 'count' }],
    ["/nonsense_list(guid'6F1C2A0E-8A4B-4C1E-9F57-2F3B9D0C1A11')", { kind: 'entity', uuid: '6f1c2a0e-8a4b-4c1e-9f57-2f3b9d0c1a11' }],
    ["/nonsense_list(uuid=guid'6f1c2a0e-8a4b-4c1e-9f57-2f3b9d0c1a11')", { kind: 'entity', uuid: '6f1c2a0e-8a4b-4c1e-9f57-2f3b9d0c1a11' }],
    ['/nonsense_list(guid%276f1c2a0e-8a4b-4c1e-9f57-2f3b9d0c1a11%27)', { kind: 'entity', uuid: '6f1c2a0e-8a4b-4c1e-9f57-2f3b9d0c1a11' }],
  ])('%s', (path, expected) => {
    expect(parseResourcePath(path)).toEqual(expected);
  });

  it.each([
    ['/nonsense_list(1)', 400],
    ["/nonsense_list(guid'x')", 400],
    ["/nonsense_list(guid'6f1c2a0e-8a4b-4c1e-9f57-2f3b9d0c1a11'", 400],
    ["/nonsense_list(guid'6f1c2a0e-8a4b-4c1e-9f57-2f3b9d0c1a11')/nonsense", 400],
    ['/%E0%A4%A', 400],
    ['/other', 404],
    ['/$batch', 404],
  ])('refuses %s with %i', (path, status) => {
    expect(() => parseResourcePath(path)).toThrow(ODataRequestError);
    try {
      parseResourcePath(path);
    } catch (error) {
      expect((error as ODataRequestError).status).toBe(status);
    }
  });
});

describe('query options and negotiation', () => {
  it('parses every option', () => {
    const query = parseQueryOptions({
      $filter: 'multiline',
      $orderby: 'timestamp desc',
      $select: 'timestamp, uuid',
      $top: '5',
      $skip: '2',
      $skiptoken: '1700000000.6f1c2a0e-8a4b-4c1e-9f57-2f3b9d0c1a11',
      $inlinecount: 'allpages',
      $format: 'JSON',
      all: 'true',
      'sap-client': '100',
    });
    expect(query).toMatchObject({
      select: ['uuid', 'timestamp'],
      top: 5,
      skip: 2,
      skipToken: { timestamp: 1700000000, uuid: '6f1c2a0e-8a4b-4c1e-9f57-2f3b9d0c1a11' },
      inlineCount: true,
      format: 'json',
      all: true,
    });
    expect(query.orderBy).toHaveLength(1);
    expect(parseQueryOptions({ $select: '*' }).select).toHaveLength(6);
    expect(parseQueryOptions({ $expand: '' }).all).toBe(false);
  });

  it.each([
    ['application/json', 'json'],
    ['application/json;odata=verbose', 'json'],
    ['application/atom+xml,application/xml;q=0.9', 'atom'],
    ['application/json;q=0.5, application/atom+xml', 'atom'],
    ['application/xml;q=0.1, application/json', 'json'],
    ['*/*', 'atom'],
    ['', 'atom'],
    ['text/html', 'atom'],
  ])('Accept %j gives %s', (accept, format) => {
    expect(acceptedFormat(accept)).toBe(format);
  });
});
