/**
 * PNG files made for tests of image limits: a valid file whose header declares any size, with a tiny
 * image (a header reader sees the size, a decoder fails), or with every row of a black 1-bit image
 * (60,000 × 60,000 pixels compress to 437 KB, and decoding them would take gigabytes).
 */
import { once } from 'node:events';
import zlib from 'node:zlib';

const SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** pngChunk is one PNG chunk: length, type, data, CRC. */
function pngChunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(zlib.crc32(body));
  return Buffer.concat([length, body, crc]);
}

/** png is a 1-bit greyscale PNG of width × height pixels with `image` as its compressed data. */
function png(width: number, height: number, image: Buffer): Buffer {
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header[8] = 1; // bit depth; colour type (greyscale), compression, filter and interlace stay 0
  return Buffer.concat([SIGNATURE, pngChunk('IHDR', header), pngChunk('IDAT', image), pngChunk('IEND', Buffer.alloc(0))]);
}

/** pngDeclaring is a tiny PNG whose header declares width × height pixels; its data holds one row. */
export function pngDeclaring(width: number, height: number = width): Buffer {
  return png(width, height, zlib.deflateSync(Buffer.alloc(1 + Math.ceil(width / 8))));
}

/** blackPng is a whole PNG of side × side black pixels, compressed as a stream (no row is held twice). */
export async function blackPng(side: number): Promise<Buffer> {
  const rowBytes = 1 + Math.ceil(side / 8);
  const deflate = zlib.createDeflate({ level: 9 });
  const parts: Buffer[] = [];
  deflate.on('data', (part: Buffer) => parts.push(part));
  const rows = Buffer.alloc(rowBytes * 1000); // filter byte 0 and black pixels
  for (let done = 0; done < side; done += 1000) {
    if (!deflate.write(rows.subarray(0, rowBytes * Math.min(1000, side - done)))) await once(deflate, 'drain');
  }
  deflate.end();
  await once(deflate, 'end');
  return png(side, side, Buffer.concat(parts));
}
