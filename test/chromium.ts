/** Debian's Chromium, as the browser tests launch it (playwright-core downloads no browser). */
import type { Browser } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';

/** Flags that keep a headless Chromium from reaching for the network at start (this machine has none). */
export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic'];

/** launchChromium starts a headless Chromium with CHROMIUM_ARGS. */
export async function launchChromium(): Promise<Browser> {
  const { chromium } = await import('playwright-core');
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
}
