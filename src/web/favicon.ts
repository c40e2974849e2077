/**
 * `/favicon.ico` for the clients that ask for it without reading the pages' `<link rel="icon">` (the
 * SVG icon): browsers on the API's JSON and on /docs, feed readers, bookmarks. It is the same icon,
 * drawn once from `static/icon.svg` at 16, 32 and 48 pixels and packed as an ICO file of PNG images.
 * The renderer (resvg, a native module of a few MiB) is loaded with the first request for it, not at
 * start: most processes never draw the icon.
 */
import { contentTag } from '../http/cache.ts';
import { ASSETS } from './assets.ts';

export interface Favicon {
  body: Buffer;
  /** Quoted strong ETag. */
  etag: string;
}

const SIZES = [16, 32, 48] as const;

/** ico packs PNG images into the ICO container: a 6-byte header, a 16-byte entry per image, the images. */
export function ico(images: readonly { size: number; png: Buffer }[]): Buffer {
  const header = Buffer.alloc(6 + 16 * images.length);
  header.writeUInt16LE(0, 0); // reserved
  header.writeUInt16LE(1, 2); // 1 = icon
  header.writeUInt16LE(images.length, 4);
  let offset = header.length;
  images.forEach(({ size, png }, i) => {
    const entry = 6 + 16 * i;
    header.writeUInt8(size >= 256 ? 0 : size, entry); // width (0 means 256)
    header.writeUInt8(size >= 256 ? 0 : size, entry + 1); // height
    header.writeUInt8(0, entry + 2); // no palette
    header.writeUInt8(0, entry + 3); // reserved
    header.writeUInt16LE(1, entry + 4); // colour planes
    header.writeUInt16LE(32, entry + 6); // bits per pixel
    header.writeUInt32LE(png.length, entry + 8);
    header.writeUInt32LE(offset, entry + 12);
    offset += png.length;
  });
  return Buffer.concat([header, ...images.map((image) => image.png)]);
}

let favicon: Promise<Favicon> | undefined;

/** faviconIco returns the ICO, drawn (off the event loop) on first use and kept. */
export function faviconIco(): Promise<Favicon> {
  favicon ??= (async () => {
    const { renderAsync } = await import('@resvg/resvg-js');
    const svg = ASSETS.get('icon.svg')!.body;
    const images = await Promise.all(
      SIZES.map(async (size) => ({ size, png: (await renderAsync(svg, { fitTo: { mode: 'width', value: size } })).asPng() })),
    );
    const body = ico(images);
    return { body, etag: contentTag(body) };
  })();
  favicon.catch(() => {
    favicon = undefined;
  });
  return favicon;
}
