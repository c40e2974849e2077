/**
 * Which writing systems a card's text uses, by Unicode script properties: the extra fonts it needs,
 * the locale that decides between Chinese, Japanese and Korean glyphs of shared Han characters, and
 * the direction of its lines. Pure and cheap (a few regular expression scans), so the fonts a card
 * uses depend on its text alone, never on what the process happened to render before.
 */

/** A font beyond the bundled Noto Sans (which covers Latin, Greek, Cyrillic and Devanagari). */
export type ScriptFace = 'arabic' | 'hebrew' | 'thai' | 'japanese' | 'korean' | 'chinese-simplified' | 'chinese-traditional';

/** Satori's locale names, as its `lang` attribute takes them. */
export type CardLocale = 'ja-JP' | 'ko-KR' | 'zh-CN' | 'zh-TW';

export interface TextScripts {
  /** The extra faces the text needs, in a fixed order (so the same text always gets the same fonts). */
  faces: ScriptFace[];
  /** The locale for Han characters, when the text has CJK characters. */
  lang: CardLocale | undefined;
  /** `rtl` when the first strong letter is from a right-to-left script (like HTML's `dir="auto"`). */
  direction: 'ltr' | 'rtl';
}

/** Every face in the order it is handed to satori. */
export const SCRIPT_FACES: readonly ScriptFace[] = ['arabic', 'hebrew', 'thai', 'japanese', 'korean', 'chinese-simplified', 'chinese-traditional'];

const ARABIC = /\p{Script=Arabic}/u;
const HEBREW = /\p{Script=Hebrew}/u;
const THAI = /\p{Script=Thai}/u;
const KANA = /[\p{Script=Hiragana}\p{Script=Katakana}]/u;
const HANGUL = /\p{Script=Hangul}/u;
const BOPOMOFO = /\p{Script=Bopomofo}/u;
// Han ideographs, and the CJK punctuation and full-width forms that only CJK fonts draw.
const HAN_OR_CJK_PUNCTUATION = /[\p{Script=Han}\u3000-\u303f\uff01-\uff60\uffe0-\uffe6]/u;
// The first letter decides the direction; marks, digits and punctuation are neutral.
const FIRST_LETTER = /\p{L}/u;
const RTL_LETTER = /[\p{Script=Arabic}\p{Script=Hebrew}\p{Script=Syriac}\p{Script=Thaana}\p{Script=Nko}\p{Script=Samaritan}\p{Script=Mandaic}\p{Script=Adlam}]/u;

// Very common characters written differently in Simplified and Traditional Chinese, pair by pair.
const SIMPLIFIED = '这个们来说时会对国为与后开关学过还应么经点发体见长电问题东车书马门话语让认识记读写买卖钱间现实样种无从头爱气听边运动业员儿网图号万给难离脑觉乐欢鸟鱼龙';
const TRADITIONAL = '這個們來說時會對國為與後開關學過還應麼經點發體見長電問題東車書馬門話語讓認識記讀寫買賣錢間現實樣種無從頭愛氣聽邊運動業員兒網圖號萬給難離腦覺樂歡鳥魚龍';

/**
 * textScripts looks at every text a card shows (the entry and the service name) and says which
 * faces, CJK locale and direction the first of them needs. Han characters follow the text's other
 * CJK letters: Japanese with kana, Korean with Hangul, else Chinese, Traditional when the text has
 * more characters of the Traditional list above than of the Simplified one (a tie is Simplified).
 */
export function textScripts(text: string, ...others: string[]): TextScripts {
  const all = [text, ...others].join('\n');
  const faces = new Set<ScriptFace>();
  if (ARABIC.test(all)) faces.add('arabic');
  if (HEBREW.test(all)) faces.add('hebrew');
  if (THAI.test(all)) faces.add('thai');
  const kana = KANA.test(all);
  const hangul = HANGUL.test(all);
  if (kana) faces.add('japanese');
  if (hangul) faces.add('korean');
  let lang: CardLocale | undefined;
  if (kana) lang = 'ja-JP';
  else if (hangul) lang = 'ko-KR';
  else if (HAN_OR_CJK_PUNCTUATION.test(all) || BOPOMOFO.test(all)) {
    const traditional = BOPOMOFO.test(all) || count(all, TRADITIONAL) > count(all, SIMPLIFIED);
    lang = traditional ? 'zh-TW' : 'zh-CN';
    faces.add(traditional ? 'chinese-traditional' : 'chinese-simplified');
  }
  return { faces: SCRIPT_FACES.filter((face) => faces.has(face)), lang, direction: textDirection(text) };
}

/** textDirection is `rtl` when the first letter of `text` belongs to a right-to-left script. */
export function textDirection(text: string): 'ltr' | 'rtl' {
  const match = FIRST_LETTER.exec(text);
  return match !== null && RTL_LETTER.test(match[0]) ? 'rtl' : 'ltr';
}

function count(text: string, characters: string): number {
  let n = 0;
  for (const c of text) if (characters.includes(c)) n++;
  return n;
}
