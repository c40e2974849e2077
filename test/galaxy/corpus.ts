/**
 * Generated texts for the galaxy's quality test and benchmark, reproducible from a seed.
 *
 * - `families`: entries about cats, weather and trains (200 each by default): a statement about the
 *   family's subject (adjective, noun, verb, object, place, each picked from ten or so) between an
 *   opener and a closer that all families share ("Breaking news:", "Experts are baffled.").
 * - `topicCorpus`: any number of entries over TOPICS.length topics, for the scale benchmark: each text
 *   mixes words of one main topic with common words and, sometimes, a word of another topic.
 */
import { uniformInt } from 'pure-rand/distribution/uniformInt';
import { xoroshiro128plus } from 'pure-rand/generator/xoroshiro128plus';

type Pick = <T>(items: readonly T[]) => T;

function picker(seed: number): { pick: Pick; int: (min: number, max: number) => number } {
  const rng = xoroshiro128plus(seed);
  const int = (min: number, max: number) => uniformInt(rng, min, max);
  return { pick: (items) => items[int(0, items.length - 1)]!, int };
}

// Openers and closers are shared by all families, so that generic words link texts across topics.
const OPENERS = [
  'Yesterday', 'Breaking news:', 'Fun fact:', 'According to my aunt,', 'Apparently', 'Nobody believes me, but', 'Every Tuesday',
  'In my humble opinion,', 'Rumour has it that', 'Last night', 'For the record,', 'Scientists say', 'Once again', 'Honestly,', 'Meanwhile,',
];
const CLOSERS = [
  'Nobody could explain it.', 'Experts are baffled.', 'Coincidence?', 'I am not making this up.', 'The committee is investigating.',
  'My neighbour saw it too.', 'It was a Tuesday, of course.', 'Frankly suspicious.', 'Nobody in the office noticed.', 'Details at eleven.',
  'We do not talk about it.', 'This happens more than you think.', 'Send help.', 'It was beautiful.', 'Typical.',
];

interface Vocabulary {
  nouns: readonly string[];
  objects: readonly string[];
  verbs: readonly string[];
  adjectives: readonly string[];
  places: readonly string[];
}

const FAMILY_WORDS: Record<'cats' | 'weather' | 'trains', Vocabulary> = {
  cats: {
    nouns: ['cat', 'kitten', 'tabby', 'tomcat', 'kitty', 'Siamese cat', 'alley cat', 'Persian cat', 'moggy', 'feline'],
    objects: ['a ball of yarn', 'the catnip mouse', 'a cardboard box', 'the scratching post', 'a bowl of tuna', 'the litter box', 'a laser dot', 'the cat flap', 'a saucer of milk', 'a feather toy'],
    verbs: ['purred at', 'pounced on', 'meowed at', 'knocked over', 'napped on', 'scratched', 'hissed at', 'licked', 'chased', 'kneaded'],
    adjectives: ['fluffy', 'ginger', 'whiskered', 'sleepy', 'purring', 'striped', 'black', 'grumpy'],
    places: ['on the windowsill', 'under the sofa', 'in the laundry basket', 'by the fish tank', 'on the keyboard', 'in the cat basket', 'on the warm radiator', 'behind the curtains'],
  },
  weather: {
    nouns: ['thunderstorm', 'cold front', 'drizzle', 'heatwave', 'fog bank', 'blizzard', 'hailstorm', 'tornado', 'monsoon', 'sea breeze'],
    objects: ['the forecast', 'a rainbow', 'the barometer', 'an umbrella', 'the cloud cover', 'a puddle', 'the humidity', 'a snowdrift', 'the wind chill', 'a lightning bolt'],
    verbs: ['rained on', 'flooded', 'froze', 'drenched', 'blew away', 'thundered over', 'soaked', 'chilled', 'fogged up', 'snowed on'],
    adjectives: ['gloomy', 'humid', 'freezing', 'stormy', 'misty', 'windy', 'sunny', 'overcast'],
    places: ['over the hills', 'across the coast', 'in the valley', 'above the clouds', 'along the seafront', 'over the weather station', 'in the meteorology office', 'under a grey sky'],
  },
  trains: {
    nouns: ['train', 'locomotive', 'night express', 'freight train', 'tram', 'steam engine', 'commuter train', 'sleeper carriage', 'railcar', 'diesel shunter'],
    objects: ['the platform', 'a railway ticket', 'the timetable', 'the signal box', 'a level crossing', 'the station clock', 'the rails', 'a dining car', 'the ticket barrier', 'the departure board'],
    verbs: ['departed from', 'derailed near', 'arrived at', 'whistled at', 'shunted', 'rattled past', 'stopped at', 'coupled with', 'was delayed by', 'steamed past'],
    adjectives: ['punctual', 'delayed', 'rusty', 'electric', 'crowded', 'overnight', 'vintage', 'express'],
    places: ['at the junction', 'in the railway station', 'on platform nine', 'through the tunnel', 'along the branch line', 'at the depot', 'past the signal', 'on the viaduct'],
  },
};

export type Family = keyof typeof FAMILY_WORDS;
export const FAMILIES = Object.keys(FAMILY_WORDS) as Family[];

const capitalise = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);

/** clause is one statement about a family: "the fluffy kitten knocked over a ball of yarn under the sofa". */
function clause(words: Vocabulary, pick: Pick): string {
  return `the ${pick(words.adjectives)} ${pick(words.nouns)} ${pick(words.verbs)} ${pick(words.objects)} ${pick(words.places)}`;
}

/** families generates `perFamily` distinct texts for each family, labelled. */
export function families(perFamily = 200, seed = 17): { text: string; family: Family }[] {
  const { pick, int } = picker(seed);
  const out: { text: string; family: Family }[] = [];
  const seen = new Set<string>();
  for (const family of FAMILIES) {
    let made = 0;
    while (made < perFamily) {
      const words = FAMILY_WORDS[family];
      const second = int(0, 2) === 0 ? `, and then ${clause(words, pick)}` : '';
      const text = `${pick(OPENERS)} ${clause(words, pick)}${second}. ${pick(CLOSERS)}`;
      if (seen.has(text)) continue;
      seen.add(text);
      out.push({ text, family });
      made++;
    }
  }
  return out;
}

const COMMON = ['today', 'again', 'quietly', 'suddenly', 'the', 'a', 'very', 'my', 'our', 'somehow', 'never', 'always', 'before', 'after', 'lunch', 'office', 'neighbour', 'Tuesday', 'because', 'reasons'];

const SYLLABLES = ['ka', 'lo', 'mi', 'ren', 'tas', 'vu', 'zo', 'pel', 'dri', 'gan', 'sho', 'bit', 'nux', 'quo', 'fer', 'lam', 'tri', 'osk', 'yul', 'wem'];

/** TOPICS: 40 made-up vocabularies of 30 words each, for corpora far larger than the families. */
const TOPICS: string[][] = (() => {
  const { pick } = picker(4242);
  return Array.from({ length: 40 }, () => Array.from({ length: 30 }, () => pick(SYLLABLES) + pick(SYLLABLES) + pick(SYLLABLES)));
})();

/** topicCorpus generates `count` texts (distinct but for rare repeats) and the topic each one is mostly about. */
export function* topicCorpus(count: number, seed = 1): Generator<{ text: string; topic: number }> {
  const { pick, int } = picker(seed);
  for (let i = 0; i < count; i++) {
    const topic = int(0, TOPICS.length - 1);
    const words: string[] = [];
    const length = int(6, 22);
    for (let w = 0; w < length; w++) {
      const roll = int(0, 99);
      words.push(roll < 45 ? pick(TOPICS[topic]!) : roll < 95 ? pick(COMMON) : pick(pick(TOPICS)));
    }
    yield { text: `${capitalise(words.join(' '))}.`, topic };
  }
}
