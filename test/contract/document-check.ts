/**
 * Holding answers to the API description: for each request the service answers, find the operation
 * `/openapi.json` declares for it and check the status, the media type and the body (JSON Schema
 * 2020-12, with Ajv) against it. test/helper.ts installs it on every test app, so the whole HTTP test
 * suite is a consumer of the document: an answer the document does not declare fails the test.
 *
 * Paths the document does not cover (the site's pages, static files, /docs, /metrics) are not
 * checked. Under the documented prefixes, a path that matches no documented path must be answered
 * with an error (404 in the API, or a refusal of the URL or the body; the OData interface refuses
 * unknown resources in its own format), and a documented path asked with another method with a 405
 * whose `Allow` lists only documented methods (or a refusal of the body, which is read first), as a
 * 405 the path declares. Every OPTIONS request is a CORS preflight, declared per path.
 *
 * Response headers: an answer carrying one of CHECKED_HEADERS must be one whose response declares it
 * (`headers`), with a value its schema takes, and a header a response declares `required` must be
 * there. The others are not checked: the connection's own (Date, Connection, Keep-Alive,
 * Transfer-Encoding), the representation's (Content-Type, which is checked as the media type,
 * Content-Length, Content-Encoding), Vary, and the security and CORS headers every answer carries
 * alike (Access-Control-Allow-Origin, Access-Control-Expose-Headers, Cross-Origin-*,
 * Referrer-Policy, X-Content-Type-Options, X-Frame-Options, Content-Security-Policy).
 */
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

type Json = Record<string, unknown>;
interface MediaType {
  schema?: Json;
}
interface HeaderObject {
  required?: boolean;
  schema?: Json;
  $ref?: string;
}
interface ResponseObject {
  description?: string;
  headers?: Record<string, HeaderObject>;
  content?: Record<string, MediaType>;
  $ref?: string;
}
interface Operation {
  responses: Record<string, ResponseObject>;
}
export interface OpenApiDocument {
  paths: Record<string, Record<string, Operation>>;
  components?: { schemas?: Record<string, Json>; responses?: Record<string, ResponseObject>; headers?: Record<string, HeaderObject> };
}

/**
 * The response headers clients rely on, which an answer may carry only where the document declares
 * them (lower-case, as Node gives them).
 */
export const CHECKED_HEADERS: readonly string[] = [
  'x-request-id',
  'etag',
  'cache-control',
  'retry-after',
  'ratelimit-limit',
  'ratelimit-remaining',
  'ratelimit-reset',
  'www-authenticate',
  'allow',
  'content-disposition',
  'link',
  'dataserviceversion',
  'access-control-allow-methods',
  'access-control-allow-headers',
  'access-control-max-age',
];

/** What the checker needs of an answer (a light-my-request response has it all). */
export interface Answer {
  statusCode: number;
  headers: Record<string, string | string[] | number | undefined>;
  body: string;
  rawPayload: Buffer;
}

const DOCUMENTED = /^\/(api\/v1(\/|$)|odata\/v2(\/|$)|healthz$|readyz$)/;
const COMPONENTS = 'https://nonsense.test/components/schemas/';
const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'];
const ODATA_ERROR_TYPES = ['application/xml', 'application/json'];
/** A body refused while it is read: not JSON (400), too large (413), of a type nobody parses (415). */
const BODY_REFUSED = [400, 413, 415];

interface Template {
  path: string;
  pattern: RegExp;
  literal: number;
}

/** baseType is a media type without parameters, lower-case: `text/csv; charset=utf-8` → `text/csv`. */
function baseType(type: string | undefined): string {
  return (type ?? '').split(';', 1)[0]!.trim().toLowerCase();
}

/** Rewrites `#/components/schemas/X` so that Ajv finds the component among its schemas. */
function rewriteRefs(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(rewriteRefs);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, inner]) => [
      key,
      key === '$ref' && typeof inner === 'string' && inner.startsWith('#/components/schemas/') ? COMPONENTS + inner.slice('#/components/schemas/'.length) : rewriteRefs(inner),
    ]),
  );
}

export class DocumentCheck {
  private readonly ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
  private readonly templates: Template[];
  private readonly validators = new Map<Json, ValidateFunction>();

  constructor(private readonly document: OpenApiDocument) {
    addFormats.default(this.ajv);
    for (const [name, schema] of Object.entries(document.components?.schemas ?? {})) {
      this.ajv.addSchema(rewriteRefs({ ...schema, $id: undefined }) as Json, COMPONENTS + name);
    }
    this.templates = Object.keys(document.paths).map((path) => {
      const parts = path.split(/(\{[^}]+\})/);
      const pattern = parts.map((part) => (/^\{[^}]+\}$/.test(part) ? '([^/]+)' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))).join('');
      return { path, pattern: new RegExp(`^${pattern}$`), literal: parts.filter((part) => !part.startsWith('{')).join('').length };
    });
  }

  /** pathOf finds the documented path a request path falls under: the most specific that matches. */
  pathOf(requestPath: string): string | null {
    let path = requestPath.replace(/\/{2,}/g, '/');
    try {
      path = decodeURIComponent(path);
    } catch {
      return null;
    }
    const match = (candidate: string) => this.templates.filter((template) => template.pattern.test(candidate)).sort((a, b) => b.literal - a.literal)[0]?.path;
    // The service ignores a trailing slash, so the document does too where it does not declare the path with one (`/odata/v2/`).
    return match(path) ?? (path.length > 1 && path.endsWith('/') ? match(path.slice(0, -1)) : undefined) ?? null;
  }

  /**
   * problems lists what is wrong with `answer` to `method url` by the document, empty when it is a
   * declared answer.
   */
  problems(method: string, url: string, answer: Answer): string[] {
    const requestPath = url.split('?', 1)[0]!;
    if (!DOCUMENTED.test(requestPath)) return [];
    const odata = requestPath.startsWith('/odata/');
    const type = baseType(answer.headers['content-type'] as string | undefined);
    const path = this.pathOf(requestPath);
    if (path === null) {
      // A preflight is answered at any URL, the same way.
      if (method === 'OPTIONS' && answer.statusCode === 204 && answer.rawPayload.length === 0) return [];
      if (odata) {
        return answer.statusCode >= 400 && ODATA_ERROR_TYPES.includes(type) ? [] : [`${answer.statusCode} ${type} for an OData resource the document does not have; expected an OData error`];
      }
      // Nothing is there (404), or the URL itself is broken (400: bad percent-encoding, 414: too long).
      const refused = [...BODY_REFUSED, 404, 414].includes(answer.statusCode) && (type === 'application/problem+json' || method === 'HEAD');
      return refused ? [] : [`${answer.statusCode} ${type} for a path the document does not have; expected a 404 problem`];
    }
    const item = this.document.paths[path]!;
    const operation = item[method === 'HEAD' ? 'get' : method.toLowerCase()];
    if (operation === undefined) {
      const documented = METHODS.filter((m) => item[m] !== undefined && m !== 'options').map((m) => m.toUpperCase());
      const allowed = String(answer.headers.allow ?? '').split(/,\s*/).filter((m) => m !== '' && m !== 'OPTIONS' && !(m === 'HEAD' && documented.includes('GET')));
      const errorType = odata ? ODATA_ERROR_TYPES.includes(type) : type === 'application/problem+json' || method === 'HEAD';
      if (answer.statusCode === 405 && allowed.every((m) => documented.includes(m))) {
        // The 405 a path answers for its other methods is declared on its operations.
        const declaring = METHODS.map((m) => item[m]).find((op) => op?.responses['405'] !== undefined);
        if (declaring === undefined) return [`${method} ${path} answered 405, which no operation of the path declares`];
        return this.checkAnswer(`${method} ${path}`, method, declaring.responses['405']!, answer);
      }
      // A body is read (and may be refused) before the method is found to have no route.
      if (BODY_REFUSED.includes(answer.statusCode) && errorType) return [];
      return [`${answer.statusCode} ${type} (Allow: ${String(answer.headers.allow)}) for ${method} on ${path}, which documents ${documented.join(', ')}; expected a 405 allowing those`];
    }
    const declared = operation.responses[String(answer.statusCode)] ?? operation.responses[`${String(answer.statusCode)[0]}XX`] ?? operation.responses.default;
    if (declared === undefined) {
      return [`${method} ${path} answered ${answer.statusCode}, which it does not declare (declared: ${Object.keys(operation.responses).join(', ')}): ${answer.body.slice(0, 200)}`];
    }
    return this.checkAnswer(`${method} ${path}`, method, declared, answer);
  }

  /** checkAnswer holds an answer to the response declared for it: headers, media type and body. */
  private checkAnswer(where: string, method: string, declared: ResponseObject, answer: Answer): string[] {
    const response = this.resolve(declared);
    const type = baseType(answer.headers['content-type'] as string | undefined);
    const headerProblems = this.checkHeaders(`${where} ${answer.statusCode}`, response, answer);
    if (headerProblems.length > 0) return headerProblems;
    const bodyless = method === 'HEAD' || answer.statusCode === 304 || answer.statusCode === 204;
    if (bodyless && answer.rawPayload.length > 0) return [`${where} answered ${answer.statusCode} with a body`];
    if (response.content === undefined) {
      return answer.rawPayload.length === 0 ? [] : [`${where} answered ${answer.statusCode} with a body, but declares none`];
    }
    const media = Object.entries(response.content).find(([declaredType]) => baseType(declaredType) === type);
    if (media === undefined) {
      return [`${where} answered ${answer.statusCode} as "${type}", but declares ${Object.keys(response.content).join(', ')}`];
    }
    if (bodyless || media[1].schema === undefined) return [];
    return this.checkBody(`${where} ${answer.statusCode} ${type}`, type, media[1].schema, answer);
  }

  /** checkHeaders finds checked headers the response does not declare, values off their schema, and required ones missing. */
  private checkHeaders(where: string, response: ResponseObject, answer: Answer): string[] {
    const declared = new Map(Object.entries(response.headers ?? {}).map(([name, header]) => [name.toLowerCase(), this.resolveHeader(header)]));
    const problems: string[] = [];
    for (const name of CHECKED_HEADERS) {
      const value = answer.headers[name];
      const header = declared.get(name);
      if (value === undefined) {
        if (header?.required) problems.push(`${where}: the required header ${name} is missing`);
        continue;
      }
      if (header === undefined) {
        problems.push(`${where}: the header ${name} (${String(value)}) is not declared (declared: ${[...declared.keys()].join(', ') || 'none'})`);
        continue;
      }
      if (header.schema === undefined) continue;
      const text = String(value);
      const validate = this.validator(header.schema);
      const types = ([] as unknown[]).concat(header.schema.type ?? []);
      const read = (types.includes('integer') || types.includes('number')) && /^-?\d+$/.test(text) ? Number(text) : text;
      if (!validate(read)) problems.push(`${where}: the header ${name} (${text}) does not match its schema: ${(validate.errors ?? []).map((e) => e.message).join('; ')}`);
    }
    return problems;
  }

  private resolveHeader(header: HeaderObject): HeaderObject {
    if (header.$ref === undefined) return header;
    const found = this.document.components?.headers?.[header.$ref.replace('#/components/headers/', '')];
    if (found === undefined) throw new Error(`The document refers to the missing header ${header.$ref}`);
    return this.resolveHeader(found);
  }

  private resolve(response: ResponseObject): ResponseObject {
    if (response.$ref === undefined) return response;
    const name = response.$ref.replace('#/components/responses/', '');
    const found = this.document.components?.responses?.[name];
    if (found === undefined) throw new Error(`The document refers to the missing response ${response.$ref}`);
    return this.resolve(found);
  }

  private validator(schema: Json): ValidateFunction {
    let validate = this.validators.get(schema);
    if (validate === undefined) {
      validate = this.ajv.compile(rewriteRefs(schema) as Json);
      this.validators.set(schema, validate);
    }
    return validate;
  }

  private checkBody(where: string, type: string, schema: Json, answer: Answer): string[] {
    let value: unknown;
    if (type === 'application/json' || type.endsWith('+json')) {
      try {
        value = JSON.parse(answer.body);
      } catch {
        return [`${where}: the body is not JSON: ${answer.body.slice(0, 200)}`];
      }
    } else if (type.startsWith('image/')) {
      if (answer.rawPayload.length === 0) return [`${where}: the image is empty`];
      const png = answer.rawPayload.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
      return type === 'image/png' && !png ? [`${where}: the body is not a PNG`] : [];
    } else {
      value = answer.body;
    }
    const validate = this.validator(schema);
    if (validate(value)) return [];
    const errors = (validate.errors ?? []).slice(0, 5).map((error) => `${error.instancePath || '(body)'} ${error.message ?? ''}`);
    return [`${where}: the body does not match the declared schema: ${errors.join('; ')}`];
  }
}
