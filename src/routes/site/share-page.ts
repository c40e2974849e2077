/**
 * The share page of an entry (`GET /nonsense/<uuid>`): a small self-contained HTML page with the
 * entry's text and the Open Graph and Twitter card tags that make chat apps and social sites unfurl
 * a link into the entry's share image. It shows the same text as the card (server variables seeded by
 * the UUID, client-side variables as neutral words), so preview and page agree.
 *
 * It is deliberately script-free and self-contained (one inline style allowed by its hash): it is what
 * link previews fetch and what people following a shared link land on. Its actions are plain links:
 * the PNG download, the report form (`/nonsense/<uuid>/report`) and the rest of the site.
 */
import { createHash } from 'node:crypto';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { badgeLetter } from '../../domain/display-text.ts';
import { IMAGE_EXTENSIONS, scanCustomEmojis, type ImageType } from '../../domain/emojis.ts';
import { parseUuid } from '../../domain/uuid.ts';
import { CARD_HEIGHT, CARD_WIDTH } from '../../formats/share-image/card.ts';
import { contentTag, notModified } from '../../http/cache.ts';
import { badRequest, notFound } from '../../http/problem.ts';
import { assetUrl } from '../../web/assets.ts';
import { escapeHtml } from '../../web/html.ts';
import { absoluteBase } from '../../plugins/links.ts';

export { escapeHtml };

const DESCRIPTION_LENGTH = 200;

// The site's own Noto Sans (the files the card is drawn with), so page and card look alike.
const STYLE = `
@font-face{font-family:"Noto Sans";font-weight:400;font-display:swap;src:local("Noto Sans"),local("NotoSans-Regular"),url("${assetUrl('noto-sans-400.ttf')}") format("truetype")}
@font-face{font-family:"Noto Sans";font-weight:600;font-display:swap;src:local("Noto Sans SemiBold"),local("NotoSans-SemiBold"),url("${assetUrl('noto-sans-600.ttf')}") format("truetype")}
*{box-sizing:border-box}
html{color-scheme:dark}
body{margin:0;min-height:100vh;display:flex;align-items:center;justify-content:center;padding:24px;
font-family:"Noto Sans",system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#fdfcff;
background:radial-gradient(circle at 92% 0%,rgba(244,114,182,.45),rgba(244,114,182,0) 40%),linear-gradient(180deg,#1e1b4b,#4c1d7a) fixed}
main{width:100%;max-width:760px}
blockquote{margin:0;padding:4px 0 4px 28px;border-left:6px solid #f472b6;border-image:linear-gradient(180deg,#f472b6,#fb923c) 1;
font-size:clamp(1.25rem,3.2vw,2rem);font-weight:600;line-height:1.35;white-space:pre-wrap;overflow-wrap:anywhere}
.emoji{height:1.15em;width:auto;vertical-align:-0.2em}
footer{display:flex;flex-wrap:wrap;align-items:center;gap:12px;margin-top:40px;padding-top:20px;border-top:1px solid rgba(255,255,255,.16);font-weight:600}
.logo{display:inline-flex;align-items:center;justify-content:center;width:36px;height:36px;border-radius:10px;
background:linear-gradient(135deg,#f472b6,#fb923c);color:#1e1b4b}
.home{display:inline-flex;align-items:center;gap:12px;color:inherit;text-decoration:none}
nav{margin-left:auto;display:flex;flex-wrap:wrap;gap:4px 16px;font-weight:400}
a{color:#f9a8d4}
a:hover{color:#fff}
a:focus-visible{outline:3px solid #fde68a;outline-offset:3px;border-radius:4px}
`;

// The style never depends on the entry, so the policy can allow exactly it and no other inline style.
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "img-src 'self'",
  "font-src 'self'",
  `style-src 'sha256-${createHash('sha256').update(STYLE).digest('base64')}'`,
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const PageParams = Type.Object({ id: Type.String({ maxLength: 100 }) });

const sharePageRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/nonsense/:id', { schema: { hide: true, params: PageParams } }, async (request, reply) => {
    const uuid = parseUuid(request.params.id);
    if (uuid === null) throw badRequest(`"${request.params.id.slice(0, 60)}" is not a UUID; expected the form 6f1c2a0e-8a4b-4c1e-9f57-2f3b9d0c1a11.`);
    const entry = await app.entryService.findEntry(uuid);
    if (entry === null) throw notFound(`No entry has the UUID ${uuid}.`);
    const card = await app.cards.describe(app.storage, entry);
    const html = sharePage({
      base: absoluteBase(request, reply),
      uuid,
      text: card.text,
      emojiFiles: new Map(card.emojis.map((e) => [e.name, `${e.name}.${IMAGE_EXTENSIONS[e.contentType as ImageType] ?? 'png'}`])),
      appName: app.config.appName,
    });
    reply.header('content-security-policy', CONTENT_SECURITY_POLICY).header('x-content-type-options', 'nosniff').header('referrer-policy', 'no-referrer');
    if (notModified(request, reply, contentTag(html), 'no-cache')) return reply;
    return reply.type('text/html; charset=utf-8').send(html);
  });
};

export interface SharePageInput {
  /** The service's base URL, without a trailing slash. */
  base: string;
  uuid: string;
  /** The text as the card shows it. */
  text: string;
  /** Image file names (`toast.png`) of the custom emojis the text uses, by name. */
  emojiFiles: ReadonlyMap<string, string>;
  appName: string;
}

/** sharePage renders the page; every piece of text in it is escaped. */
export function sharePage({ base, uuid, text, emojiFiles, appName }: SharePageInput): string {
  const pageUrl = `${base}/nonsense/${uuid}`;
  const imageUrl = `${base}/api/v1/nonsense/${uuid}.png`;
  const description = summary(text);
  // Escaping first is safe: it never touches `:name:` codes, and names are plain [a-z0-9_].
  const body = scanCustomEmojis(
    escapeHtml(text),
    (name) => emojiFiles.has(name),
    (name) => `<img class="emoji" src="/api/v1/emojis/${emojiFiles.get(name)!}" alt=":${name}:" title=":${name}:">`,
  );
  const meta = (attribute: 'property' | 'name', key: string, value: string) => `<meta ${attribute}="${key}" content="${escapeHtml(value)}">`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(appName)}</title>
${meta('name', 'description', description)}
<link rel="canonical" href="${escapeHtml(pageUrl)}">
<link rel="icon" href="${assetUrl('icon.svg')}" type="image/svg+xml">
${meta('property', 'og:type', 'website')}
${meta('property', 'og:site_name', appName)}
${meta('property', 'og:title', appName)}
${meta('property', 'og:description', description)}
${meta('property', 'og:url', pageUrl)}
${meta('property', 'og:image', imageUrl)}
${meta('property', 'og:image:type', 'image/png')}
${meta('property', 'og:image:width', String(CARD_WIDTH))}
${meta('property', 'og:image:height', String(CARD_HEIGHT))}
${meta('property', 'og:image:alt', description)}
${meta('name', 'twitter:card', 'summary_large_image')}
${meta('name', 'twitter:title', appName)}
${meta('name', 'twitter:description', description)}
${meta('name', 'twitter:image', imageUrl)}
<style>${STYLE}</style>
</head>
<body>
<main>
<blockquote dir="auto">${body}</blockquote>
<footer>
<a class="home" href="/"><span class="logo" aria-hidden="true">${escapeHtml(badgeLetter(appName))}</span><span>${escapeHtml(appName)}</span></a>
<nav aria-label="This entry"><a href="/api/v1/nonsense/${uuid}.png" download="nonsense-${uuid}.png">Download PNG</a><a href="/nonsense/${uuid}/report">Report</a><a href="/">Another one</a><a href="/search">Search</a><a href="/api/v1/nonsense/${uuid}">JSON</a></nav>
</footer>
</main>
</body>
</html>
`;
}

/** summary is the text on one line, cut to about DESCRIPTION_LENGTH characters at a word boundary. */
export function summary(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  const characters = [...line];
  if (characters.length <= DESCRIPTION_LENGTH) return line;
  const cut = characters.slice(0, DESCRIPTION_LENGTH - 1).join('');
  const space = cut.lastIndexOf(' ');
  return `${(space > DESCRIPTION_LENGTH / 2 ? cut.slice(0, space) : cut).replace(/[\s.,;:!?-]+$/, '')}…`;
}

export default sharePageRoutes;
