/**
 * The card's design as satori element trees (satori's object form: `{ type, props }`, no JSX).
 * Everything visual lives here; render.ts decides the font size and rasterises. A card is two trees:
 * the plate (background and footer), the same for every card of a service, which a render worker
 * draws once; and the text area (the entry's text beside its accent rule), drawn for each card and
 * laid over the plate at TEXT_AREA.
 */
import { badgeLetter } from '../../domain/display-text.ts';
import { FONT_FAMILY } from './fonts.ts';
import type { CardLocale } from './scripts.ts';

/**
 * The version of the card's design. It is part of every cache key and ETag, so raise it whenever the
 * design or the renderer changes the pixels, and cached cards are replaced.
 */
export const CARD_DESIGN_VERSION = 4;

export const CARD_WIDTH = 1200;
export const CARD_HEIGHT = 630;

const PADDING_X = 84;
const PADDING_TOP = 60;
const FOOTER_HEIGHT = 96;
const TEXT_GAP = 20;
const ACCENT_WIDTH = 6;
const LOGO_SIZE = 44;
const ACCENT_GAP = 32;

/** Where the text area sits on the card, in pixels: between the top padding and the footer. */
export const TEXT_AREA = {
  left: PADDING_X,
  top: PADDING_TOP,
  width: CARD_WIDTH - 2 * PADDING_X,
  height: CARD_HEIGHT - PADDING_TOP - FOOTER_HEIGHT - TEXT_GAP,
} as const;

/** The box the entry's text must fit in, in pixels: the text area but for the accent rule. */
export const TEXT_BOX = {
  width: TEXT_AREA.width - ACCENT_WIDTH - ACCENT_GAP,
  height: TEXT_AREA.height,
} as const;

export interface ElementNode {
  type: string;
  key?: string;
  props: { style?: Record<string, string | number>; children?: Child | Child[]; [prop: string]: unknown };
}
type Child = ElementNode | string;

const el = (type: string, style: Record<string, string | number>, children?: Child | Child[], key?: string): ElementNode => ({
  type,
  ...(key === undefined ? {} : { key }),
  props: children === undefined ? { style } : { style, children },
});

/** How the text runs: its direction and, for CJK text, the locale that picks Han glyphs. */
export interface TextFlow {
  direction: 'ltr' | 'rtl';
  lang?: CardLocale | undefined;
}

export interface TextStyle {
  fontSize: number;
  lineHeight: number;
  fontWeight: 400 | 600;
  /** Lines to clamp to with an ellipsis, when even the smallest size overflows. */
  maxLines?: number;
}

export const TEXT_KEY = 'entry-text';

/** textNode is the entry's text as laid out on the card, also used alone to measure it. */
export function textNode(text: string, style: TextStyle, flow: TextFlow = { direction: 'ltr' }): ElementNode {
  const node = el(
    'div',
    {
      // Right-to-left lines start at the right; satori orders the runs of mixed text inside a line.
      direction: flow.direction,
      // Satori clamps lines only in block layout.
      display: style.maxLines === undefined ? 'flex' : 'block',
      width: TEXT_BOX.width,
      flexShrink: 0,
      fontFamily: FONT_FAMILY,
      fontSize: style.fontSize,
      fontWeight: style.fontWeight,
      lineHeight: style.lineHeight,
      letterSpacing: style.fontSize >= 48 ? -0.5 : 0,
      color: '#fdfcff',
      whiteSpace: 'pre-wrap',
      wordBreak: 'break-word',
      ...(style.maxLines === undefined ? {} : { lineClamp: style.maxLines, overflow: 'hidden', textOverflow: 'ellipsis' }),
    },
    text,
    TEXT_KEY,
  );
  if (flow.lang !== undefined) node.props.lang = flow.lang;
  return node;
}

/**
 * plateNode is what every card of a service shares: the background (a deep indigo-to-violet gradient
 * with a pink glow) and the footer with the service's name.
 */
export function plateNode(appName: string): ElementNode {
  return el(
    'div',
    {
      width: CARD_WIDTH,
      height: CARD_HEIGHT,
      display: 'flex',
      flexDirection: 'column',
      justifyContent: 'flex-end',
      boxSizing: 'border-box',
      padding: `0 ${PADDING_X}px`,
      fontFamily: FONT_FAMILY,
      backgroundColor: '#1e1b4b',
      // A vertical gradient compresses to almost nothing in PNG; the glow costs ~60 KB and is worth it.
      backgroundImage:
        'radial-gradient(circle at 92% 0%, rgba(244, 114, 182, 0.5) 0%, rgba(244, 114, 182, 0) 35%), ' +
        'linear-gradient(180deg, #1e1b4b 0%, #4c1d7a 100%)',
    },
    footerNode(appName),
  );
}

/**
 * textAreaNode is what each card draws over the plate, around an already sized text: the text,
 * centred in the text area, with the accent rule beside it (on its right when the text runs right to
 * left). Nothing clips it: the text is sized to fit, and the area is the whole canvas it is drawn on.
 */
export function textAreaNode(text: ElementNode, direction: 'ltr' | 'rtl' = 'ltr'): ElementNode {
  return el(
    'div',
    { display: 'flex', flexDirection: 'column', justifyContent: 'center', width: TEXT_AREA.width, height: TEXT_AREA.height },
    // The accent bar stretches to the height of the text, like a quotation's rule.
    el('div', { display: 'flex', flexDirection: direction === 'rtl' ? 'row-reverse' : 'row' }, [
      el('div', {
        width: ACCENT_WIDTH,
        borderRadius: ACCENT_WIDTH / 2,
        [direction === 'rtl' ? 'marginLeft' : 'marginRight']: ACCENT_GAP,
        flexShrink: 0,
        backgroundImage: 'linear-gradient(180deg, #f472b6 0%, #fb923c 100%)',
      }),
      text,
    ]),
  );
}

/** footerNode is the footer: a rule, the badge with the service name's first letter, and the name. */
function footerNode(appName: string): ElementNode {
  return el(
    'div',
    {
      display: 'flex',
      alignItems: 'center',
      height: FOOTER_HEIGHT,
      boxSizing: 'border-box',
      borderTop: '1.5px solid rgba(255, 255, 255, 0.16)',
      flexShrink: 0,
    },
    [
      el(
        'div',
        {
          display: 'flex',
          alignItems: 'center',
          justifyContent: 'center',
          width: LOGO_SIZE,
          height: LOGO_SIZE,
          borderRadius: 12,
          backgroundImage: 'linear-gradient(135deg, #f472b6 0%, #fb923c 100%)',
          color: '#1e1b4b',
          fontSize: 26,
          fontWeight: 600,
          marginRight: 16,
          flexShrink: 0,
        },
        badgeLetter(appName),
      ),
      // APP_NAME may be up to 80 characters: one line, cut with an ellipsis.
      el(
        'div',
        {
          display: 'block',
          maxWidth: CARD_WIDTH - 2 * PADDING_X - LOGO_SIZE - 16,
          fontSize: 26,
          fontWeight: 600,
          color: '#f5f3ff',
          letterSpacing: 0.2,
          whiteSpace: 'nowrap',
          overflow: 'hidden',
          textOverflow: 'ellipsis',
        },
        appName,
      ),
    ],
  );
}
