/**
 * The galaxy in Chromium (WebGL through SwiftShader, as headless Chromium has no GPU):
 *
 * - `/galaxy` on a service that lays out its demo data in the background: stars drawn, hover and keys
 *   show an entry's text, a click and Enter open its share page, drag and wheel move the view, a
 *   search highlights the matching stars, light and dark themes, and what the page says without
 *   WebGL and without JavaScript;
 * - 100,000 stars: the frame time while turning;
 * - compatibility: a page on another origin reads the CSV and the JSON the way the public galaxy pages
 *   do (fetch, papaparse with `header: true`, parseFloat, a 2D canvas projection from distance 50) and
 *   its stars spread over a good part of the canvas.
 *
 * UPDATE_SCREENSHOTS=1 also writes docs/screenshots/galaxy-*.png.
 */
import fs from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { Browser, BrowserContext, BrowserContextOptions, Page } from 'playwright-core';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { migrate, openDatabase } from '../../src/db/database.ts';
import { LayoutModel } from '../../src/services/galaxy/layout.ts';
import { MODEL_VERSION } from '../../src/services/galaxy/model-version.ts';
import { createStorage } from '../../src/storage/index.ts';
import { freePort, tempDir } from '../helper.ts';
import { startService, type RunningService } from '../process-helper.ts';
import { skipWithout } from '../requirements.ts';
import { until } from '../wait.ts';

const CHROMIUM = '/usr/bin/chromium';
const SKIP = skipWithout(`Chromium at ${CHROMIUM}`, fs.existsSync(CHROMIUM), 'apt-get install chromium');
const SCREENSHOTS = process.env.UPDATE_SCREENSHOTS === '1' ? path.resolve('docs/screenshots') : null;
const BIG = 100_000;
// Headless Chromium draws WebGL in software (SwiftShader) only when asked to.
const WEBGL_ARGS = ['--use-gl=angle', '--use-angle=swiftshader', '--enable-unsafe-swiftshader'];
const COMMON_ARGS = ['--headless', '--no-sandbox', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic'];

// The browser globals the in-page callbacks use (the project's TypeScript has no DOM library).
type Element = {
  dataset: Record<string, string | undefined>;
  getBoundingClientRect(): { left: number; top: number; width: number; height: number };
  dispatchEvent(event: unknown): boolean;
};
declare const document: { getElementById(id: string): Element; documentElement: unknown };
declare const getComputedStyle: (element: unknown) => { getPropertyValue(name: string): string };
declare const KeyboardEvent: new (type: string, init: Record<string, unknown>) => unknown;
declare const requestAnimationFrame: (callback: () => void) => void;
declare const performance: { now(): number };
declare const window: Record<string, unknown>;

interface Star {
  uuid: string;
  x: number;
  y: number;
}

/** stateOf reads the page's state: loading, waiting, ready, no-webgl or error. */
const stateOf = (page: Page) => page.evaluate(() => document.getElementById('galaxy-view').dataset.state);

/** selectedStar is the star the tip shows, with its place on the canvas (CSS pixels). */
async function selectedStar(page: Page): Promise<Star> {
  const tip = page.locator('#galaxy-tip');
  return { uuid: (await tip.getAttribute('data-uuid'))!, x: Number(await tip.getAttribute('data-x')), y: Number(await tip.getAttribute('data-y')) };
}

/** litPixels counts the canvas pixels that differ clearly from its background (its corner). */
async function litPixels(page: Page): Promise<{ lit: number; background: number[] }> {
  const png = await page.locator('#galaxy-canvas').screenshot();
  const { data, info } = await sharp(png).raw().toBuffer({ resolveWithObject: true });
  const at = (i: number) => [data[i]!, data[i + 1]!, data[i + 2]!];
  const inside = (info.width * 10 + 10) * info.channels;
  const background = at(inside);
  let lit = 0;
  for (let i = 0; i < data.length; i += info.channels) {
    const [r, g, b] = at(i);
    if (Math.abs(r! - background[0]!) + Math.abs(g! - background[1]!) + Math.abs(b! - background[2]!) > 60) lit++;
  }
  return { lit, background };
}

const hex = (color: string) => [1, 3, 5].map((i) => parseInt(color.trim().slice(i, i + 2), 16));

/** seedBig writes BIG entries and a stored galaxy of them (random clusters), without computing a layout. */
async function seedBig(file: string): Promise<void> {
  const database = await openDatabase(loadConfig({ DATABASE_URL: file }).database);
  await migrate(database);
  const storage = createStorage(database);
  for (let start = 0; start < BIG; start += 20_000) {
    await storage.entries.insertEntries(
      Array.from({ length: 20_000 }, (_, i) => ({
        uuid: `${(start + i).toString(16).padStart(8, '0')}-0000-4000-8000-${((start + i) * 2654435761 % 2 ** 48).toString(16).padStart(12, '0')}`,
        text: `Star number ${start + i} of the big galaxy.`,
        timestamp: 1_600_000_000 + start + i,
      })),
    );
  }
  const ids = await database.db.selectFrom('entries').select(['id', 'updated_at']).orderBy('id').execute();
  let seed = 7;
  const random = () => ((seed = (seed * 16807) % 2147483647) / 2147483647) * 2 - 1;
  const centres = Array.from({ length: 12 }, () => [random() * 7, random() * 7, random() * 7]);
  const points = ids.map((row, i) => {
    const centre = centres[i % centres.length]!;
    return { entryId: row.id, entryUpdatedAt: Number(row.updated_at), x: centre[0]! + random() * 2.5, y: centre[1]! + random() * 2.5, z: centre[2]! + random() * 2.5, pointSize: 0.1 + 0.25 * (random() + 1) };
  });
  const fit = Date.now();
  await storage.galaxy.writeFitPoints(fit, points);
  const { model } = await LayoutModel.fit([], 1);
  await storage.galaxy.activateFit(fit, null, { revision: await storage.galaxy.revision(), fittedCount: BIG, modelVersion: MODEL_VERSION, model: model.toBytes(), now: Date.now() });
  await database.close();
}

/** The compatibility page: what the public galaxy pages do, as the issue describes them. */
const COMPAT_PAGE = `<!doctype html>
<html><head><meta charset="utf-8"><title>A public galaxy page</title></head>
<body><canvas id="sky" width="800" height="600"></canvas>
<script src="/papaparse.min.js"></script>
<script>
// Reads the galaxy from the service (another origin), projects it from distance 50 with a 60° field
// of view after multiplying the coordinates by \`multiplier\`, and draws each star as a circle of
// radius |point_size| × 20 px, opacity point_size / 0.6 + 0.2, coloured by the uuid's last six digits.
window.drawGalaxy = async function (service, format, multiplier) {
  const response = await fetch(service + '/api/v1/nonsense/galaxy' + (format === 'json' ? '?format=json' : ''));
  const rows = format === 'json' ? await response.json() : Papa.parse((await response.text()).trim(), { header: true }).data;
  const stars = rows.map((row) => ({
    uuid: row.uuid,
    x: parseFloat(row.umap_dim_0) * multiplier,
    y: parseFloat(row.umap_dim_1) * multiplier,
    z: parseFloat(row.umap_dim_2) * multiplier,
    size: parseFloat(row.point_size),
  }));
  const canvas = document.getElementById('sky');
  const context = canvas.getContext('2d');
  const width = canvas.width;
  const height = canvas.height;
  context.fillStyle = '#000';
  context.fillRect(0, 0, width, height);
  const focal = height / 2 / Math.tan(Math.PI / 6);
  const xs = [];
  const ys = [];
  let onCanvas = 0;
  let finite = 0;
  for (const star of stars) {
    if ([star.x, star.y, star.z, star.size].every(Number.isFinite)) finite++;
    const depth = 50 - star.z;
    if (depth <= 0) continue;
    const sx = width / 2 + (star.x / depth) * focal;
    const sy = height / 2 - (star.y / depth) * focal;
    xs.push(sx);
    ys.push(sy);
    if (sx >= 0 && sx <= width && sy >= 0 && sy <= height) onCanvas++;
    context.globalAlpha = Math.min(1, star.size / 0.6 + 0.2);
    context.fillStyle = '#' + star.uuid.slice(-6);
    context.beginPath();
    context.arc(sx, sy, Math.abs(star.size) * 20, 0, 2 * Math.PI);
    context.fill();
  }
  const spread = (values, size) => {
    const sorted = values.slice().sort((a, b) => a - b);
    return (sorted[Math.floor(sorted.length * 0.98)] - sorted[Math.floor(sorted.length * 0.02)]) / size;
  };
  const pixels = context.getImageData(0, 0, width, height).data;
  let lit = 0;
  for (let i = 0; i < pixels.length; i += 4) if (pixels[i] + pixels[i + 1] + pixels[i + 2] > 30) lit++;
  return { stars: stars.length, finite, onCanvas: onCanvas / stars.length, spreadX: spread(xs, width), spreadY: spread(ys, height), litShare: lit / (width * height) };
};
</script></body></html>`;

describe.skipIf(SKIP)('the galaxy in Chromium', () => {
  let dir: string;
  let demo: RunningService;
  let big: RunningService;
  let compat: http.Server;
  let compatUrl: string;
  let browser: Browser;
  let noWebgl: Browser;
  let demoStars: { uuid: string }[];
  const problems: string[] = [];
  const contexts: BrowserContext[] = [];

  async function newPage(options: BrowserContextOptions = {}, on = browser): Promise<Page> {
    const context = await on.newContext({ viewport: { width: 1280, height: 860 }, ...options });
    contexts.push(context);
    const page = await context.newPage();
    page.on('console', (message) => {
      // SwiftShader's own notices are warnings about the software renderer, not the page's errors.
      if (message.type() === 'error') problems.push(`${page.url()}: ${message.text()}`);
    });
    page.on('pageerror', (error) => problems.push(`${page.url()}: ${error.message}`));
    return page;
  }

  async function openGalaxy(service: RunningService, options: BrowserContextOptions = {}, on = browser): Promise<Page> {
    const page = await newPage(options, on);
    await page.goto(`${service.base}/galaxy`);
    await expect.poll(() => stateOf(page), { timeout: 60_000 }).toMatch(/^(ready|no-webgl|error)$/);
    return page;
  }

  beforeAll(async () => {
    dir = tempDir();
    const bigFile = path.join(dir, 'big.db');
    const { chromium } = await import('playwright-core');
    const papaparse = fs.readFileSync(createRequire(import.meta.url).resolve('papaparse/papaparse.min.js'));
    compat = http.createServer((request, response) => {
      if (request.url === '/papaparse.min.js') response.writeHead(200, { 'content-type': 'text/javascript' }).end(papaparse);
      else response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(COMPAT_PAGE);
    });
    const compatPort = await freePort();
    await new Promise<void>((resolve) => compat.listen(compatPort, '127.0.0.1', resolve));
    compatUrl = `http://127.0.0.1:${compatPort}`;
    [demo, browser, noWebgl] = await Promise.all([
      // The demo data, laid out by the service's own background thread.
      startService({ DATABASE_URL: path.join(dir, 'demo.db'), DEMO_DATA: 'auto' }),
      chromium.launch({ executablePath: CHROMIUM, headless: true, args: [...COMMON_ARGS, ...WEBGL_ARGS] }),
      chromium.launch({ executablePath: CHROMIUM, headless: true, args: [...COMMON_ARGS, '--disable-webgl', '--disable-3d-apis'] }),
      seedBig(bigFile),
    ]);
    big = await startService({ DATABASE_URL: bigFile, GALAXY: 'off' });
    // The background thread lays out the demo data within seconds of the start (more on a busy machine).
    await until(() => `the demo galaxy to be laid out:\n${demo.output()}`, async () => (await fetch(`${demo.base}/api/v1/nonsense/galaxy`)).ok, { timeoutMs: 150_000, intervalMs: 100 });
    demoStars = (await (await fetch(`${demo.base}/api/v1/nonsense/galaxy?format=json`)).json()) as { uuid: string }[];
  }, 240_000);

  afterAll(async () => {
    for (const context of contexts) await context.close().catch(() => {});
    await browser?.close();
    await noWebgl?.close();
    await Promise.all([demo?.stop(), big?.stop()]);
    compat?.close();
    fs.rmSync(dir, { recursive: true, force: true });
    expect(problems).toEqual([]);
  });

  it('draws every star, shows a text by keys and by hover, and opens the share page by Enter and by click', async () => {
    const page = await openGalaxy(demo, { colorScheme: 'dark' });
    expect(await stateOf(page)).toBe('ready');
    expect(Number(await page.evaluate(() => document.getElementById('galaxy-view').dataset.stars))).toBe(demoStars.length);
    await expect.poll(async () => (await litPixels(page)).lit, { timeout: 10_000 }).toBeGreaterThan(500);

    // Keys: N selects the first star; its text is the entry's, as the API delivers it.
    await page.locator('#galaxy-canvas').focus();
    await page.keyboard.press('n');
    await expect.poll(() => page.locator('#galaxy-tip').textContent()).toMatch(/Enter to open$/);
    const first = await selectedStar(page);
    expect(first.uuid).toBe(demoStars[0]!.uuid);
    const entry = (await (await fetch(`${demo.base}/api/v1/nonsense/${first.uuid}`)).json()) as { nonsense: string };
    expect(await page.locator('#galaxy-tip').textContent()).toContain(entry.nonsense.replace(/\$\w+\$/g, '').trim().slice(0, 20));
    await page.keyboard.press('n');
    await expect.poll(async () => (await selectedStar(page)).uuid).toBe(demoStars[1]!.uuid);
    await page.keyboard.press('p');
    await expect.poll(async () => (await selectedStar(page)).uuid).toBe(first.uuid);
    await screenshot(page, 'galaxy-desktop-dark');
    await page.keyboard.press('Enter');
    await page.waitForURL(`${demo.base}/nonsense/${first.uuid}`);

    // Hover: the pointer on that star shows the same text, "Click to open"; a click opens its page.
    await page.goto(`${demo.base}/galaxy`);
    await expect.poll(() => stateOf(page)).toBe('ready');
    await page.locator('#galaxy-canvas').focus();
    await page.keyboard.press('n');
    await expect.poll(() => page.locator('#galaxy-tip').textContent()).toMatch(/Enter to open$/);
    const star = await selectedStar(page);
    await page.keyboard.press('Escape');
    await expect.poll(() => page.locator('#galaxy-tip').isHidden()).toBe(true);
    const box = (await page.locator('#galaxy-canvas').boundingBox())!;
    await page.mouse.move(box.x + star.x, box.y + star.y);
    await expect.poll(() => page.locator('#galaxy-tip').textContent()).toMatch(/Click to open$/);
    const hovered = await selectedStar(page);
    // The star under the pointer: the same one, or one drawn on top of it.
    expect(Math.hypot(hovered.x - star.x, hovered.y - star.y)).toBeLessThan(10);
    await page.mouse.click(box.x + star.x, box.y + star.y);
    await page.waitForURL(`${demo.base}/nonsense/${hovered.uuid}`);
  }, 120_000);

  it('turns by drag and by arrow keys, zooms by wheel and by +/-, and goes back with 0', async () => {
    const page = await openGalaxy(demo);
    const canvas = page.locator('#galaxy-canvas');
    await canvas.focus();
    await page.keyboard.press('n');
    await expect.poll(() => page.locator('#galaxy-tip').isVisible()).toBe(true);
    const start = await selectedStar(page);
    const box = (await canvas.boundingBox())!;
    const centre = { x: box.width / 2, y: box.height / 2 };

    // A drag turns the galaxy: the star moves on screen. (Hovering empty sky lets go of the star, so
    // it is chosen again with N after the drag.)
    await page.mouse.move(box.x + 40, box.y + box.height - 40);
    await page.mouse.down();
    await page.mouse.move(box.x + 240, box.y + box.height - 60, { steps: 8 });
    await page.mouse.up();
    await canvas.focus();
    await page.keyboard.press('Escape');
    await page.keyboard.press('n');
    await expect.poll(async () => (await selectedStar(page)).uuid).toBe(start.uuid);
    await expect.poll(async () => Math.abs((await selectedStar(page)).x - start.x)).toBeGreaterThan(20);

    await page.keyboard.press('0');
    await expect.poll(async () => (await selectedStar(page)).x).toBeCloseTo(start.x, 0);
    await page.keyboard.press('ArrowRight');
    await page.keyboard.press('ArrowRight');
    await expect.poll(async () => Math.abs((await selectedStar(page)).x - start.x)).toBeGreaterThan(5);
    await page.keyboard.press('0');

    // Zooming in moves every star away from the centre of the view; zooming out brings it back.
    const from = (s: Star) => Math.hypot(s.x - centre.x, s.y - centre.y);
    await expect.poll(async () => (await selectedStar(page)).x).toBeCloseTo(start.x, 0);
    await page.mouse.move(box.x + centre.x, box.y + centre.y);
    await page.mouse.wheel(0, -400);
    // Off the canvas (the pointer let go of any star it hovered), then the first star again.
    await page.mouse.move(box.x - 20, box.y - 20);
    await canvas.focus();
    await page.keyboard.press('n');
    await expect.poll(async () => (await selectedStar(page)).uuid).toBe(start.uuid);
    await expect.poll(async () => from(await selectedStar(page))).toBeGreaterThan(from(start) * 1.3);
    await page.keyboard.press('0');
    await page.keyboard.press('-');
    await page.keyboard.press('-');
    await expect.poll(async () => from(await selectedStar(page))).toBeLessThan(from(start) * 0.8);
  }, 60_000);

  it('highlights the stars of the entries a search finds', async () => {
    const page = await openGalaxy(demo);
    const found = (await (await fetch(`${demo.base}/api/v1/nonsense?format=json&q=cat`)).json()) as { uuid: string }[];
    expect(found.length).toBeGreaterThan(3);
    await page.getByLabel('Highlight entries containing').fill('cat');
    await page.getByRole('button', { name: 'Highlight' }).click();
    await expect.poll(() => page.locator('#galaxy-matches').textContent()).toMatch(new RegExp(`^${found.length} of ${demoStars.length} stars match “cat”`));
    // N now walks the matches only.
    await page.locator('#galaxy-canvas').focus();
    const seen = new Set<string>();
    for (let i = 0; i < found.length; i++) {
      await page.keyboard.press('n');
      await expect.poll(async () => seen.has((await selectedStar(page)).uuid)).toBe(false);
      seen.add((await selectedStar(page)).uuid);
    }
    expect([...seen].sort()).toEqual(found.map((e) => e.uuid).sort());
    await page.getByLabel('Highlight entries containing').fill('zzzqqqxxx');
    await page.getByRole('button', { name: 'Highlight' }).click();
    await expect.poll(() => page.locator('#galaxy-matches').textContent()).toBe('No star matches “zzzqqqxxx”.');
  }, 60_000);

  it('follows the light and dark themes', async () => {
    for (const colorScheme of ['light', 'dark'] as const) {
      const page = await openGalaxy(demo, { colorScheme });
      const background = hex(await page.evaluate(() => getComputedStyle(document.documentElement).getPropertyValue('--bg')));
      await expect.poll(async () => (await litPixels(page)).background, { timeout: 10_000 }).toEqual(background);
      if (colorScheme === 'light') await screenshot(page, 'galaxy-desktop-light');
    }
  }, 60_000);

  it('says what the galaxy is without WebGL, and without JavaScript', async () => {
    const page = await openGalaxy(demo, {}, noWebgl);
    expect(await stateOf(page)).toBe('no-webgl');
    expect(await page.locator('#galaxy-status').textContent()).toMatch(/cannot draw WebGL.*3D map of the entries.*search the entries.*CSV/);
    expect(await page.locator('#galaxy-canvas').isHidden()).toBe(true);
    expect(await page.getByRole('link', { name: 'search the entries' }).getAttribute('href')).toBe('/search');

    const plain = await newPage({ javaScriptEnabled: false });
    await plain.goto(`${demo.base}/galaxy`);
    expect(await plain.locator('.galaxy-fallback').textContent()).toMatch(/drawn by a script with WebGL/);
    // Without a script the form searches on the search page.
    await plain.getByLabel('Highlight entries containing').fill('cat');
    await plain.getByRole('button', { name: 'Highlight' }).click();
    await plain.waitForURL(`${demo.base}/search?q=cat`);
  }, 60_000);

  it(`turns ${BIG.toLocaleString('en')} stars smoothly`, async () => {
    const page = await openGalaxy(big);
    expect(await stateOf(page)).toBe('ready');
    expect(await page.evaluate(() => document.getElementById('galaxy-view').dataset.stars)).toBe(String(BIG));
    const frames = await page.evaluate(async () => {
      const canvas = document.getElementById('galaxy-canvas');
      const nextFrame = () => new Promise<void>((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)));
      await nextFrame();
      const times: number[] = [];
      for (let i = 0; i < 30; i++) {
        const started = performance.now();
        canvas.dispatchEvent(new KeyboardEvent('keydown', { key: 'ArrowRight', bubbles: true }));
        await nextFrame();
        times.push(performance.now() - started);
      }
      return times.sort((a, b) => a - b);
    });
    const median = frames[Math.floor(frames.length / 2)]!;
    console.log(`galaxy of ${BIG} stars in headless Chromium (SwiftShader, software WebGL): median ${median.toFixed(1)} ms from a turn to its frame on screen`);
    // Software rendering on a shared 2-core machine, beside the rest of the suite; a GPU draws the
    // same single draw call in a fraction of a millisecond. The figure is logged above (100-280 ms
    // here, depending on the host and the load); the bound only catches a turn that redoes the
    // scene's work (a frame of several seconds), not a slow host.
    expect(median).toBeLessThan(1000);
  }, 90_000);

  it('is read by a page on another origin as the public galaxy pages read it (CSV and JSON)', async () => {
    const page = await newPage();
    await page.goto(`${compatUrl}/`);
    for (const format of ['csv', 'json']) {
      for (const multiplier of [1, 2, 3]) {
        const result = (await page.evaluate(
          ([service, f, m]) => (window.drawGalaxy as (s: string, f: string, m: number) => Promise<unknown>)(service, f, m),
          [demo.base, format, multiplier] as [string, string, number],
        )) as { stars: number; finite: number; onCanvas: number; spreadX: number; spreadY: number; litShare: number };
        const label = `${format} ×${multiplier}`;
        expect(result.stars, label).toBe(demoStars.length);
        expect(result.finite, label).toBe(demoStars.length);
        // Not a dot: the central 96% of the stars spread over a good part of the canvas ...
        expect(result.spreadX, label).toBeGreaterThan(0.15 * multiplier);
        expect(result.spreadY, label).toBeGreaterThan(0.15 * multiplier);
        expect(result.litShare, label).toBeGreaterThan(0.01);
        // ... and not off-screen: at the pages' usual scale (×1, ×2) all of them or nearly, even at ×3 most.
        expect(result.onCanvas, label).toBeGreaterThanOrEqual(multiplier === 1 ? 1 : multiplier === 2 ? 0.95 : 0.8);
      }
    }
  }, 60_000);

  async function screenshot(page: Page, name: string) {
    if (SCREENSHOTS === null) return;
    await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`) });
  }
});
