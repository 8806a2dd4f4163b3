// promptapi_regexp_cases.mjs: for TestBrowserPromptAPIRegexpGrammars, prints as
// JSON each RegExp's grammar (prompt-api-regexp.js), alone and after
// prefixes, with sample strings and whether re.test(prefix + sample) is
// true, which the Go test holds the grammar's acceptance to.
import { regexpToGBNF, regexpToGBNFAfter } from '../../web/prompt-api-regexp.js';

const patterns = [
  [/hello/, ['', 'he', 'xxhel', 'hello']],
  [/^Greetings and salutations.*/, ['', 'Greetings', 'invalid']],
  [/^[a-z]+@[a-z]+\.(com|org)$/, ['', 'ab@', 'a@b.co', 'a@@']],
  [/^\d{3}-\d{4}$/, ['', '12', '123-', '1234']],
  [/^(yes|no)$/, ['', 'y', 'n', 'x']],
  [/a|^b$/, ['', 'b', 'c']],
  [/^(ab)+c$/, ['', 'aba', 'abab', 'ac']],
  [/x\d{2,3}/, ['', 'zzx1', 'x12']],
  [/^[^\s,]{2,}\s?$/, ['', 'a', 'ab ', 'a,']],
  [/^\u00e9+.$/s, ['', '\u00e9', '\u00e9\n']],
  [/^(?:a|b)*?c{0}d$/, ['', 'ab', 'abd']],
  [/^a{2}b?$/, ['', 'a', 'aa', 'aab']],
  [/^[\d.]+(?<unit>px|em)$/, ['', '1.5', '1.5p']],
  [/^\x41\u0042[^\n]*$/, ['', 'AB', 'A']],
];

// A seeded generator (mulberry32): the same samples every run.
let state = 42;
function random() {
  state = (state + 0x6d2b79f5) | 0;
  let t = Math.imul(state ^ (state >>> 15), 1 | state);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}

const cases = [];
for (const [re, prefixes] of patterns) {
  const alphabet = [...new Set([...re.source.replace(/\\[dswDSW]/g, ''), '1', '2', ' ', '\n', 'a', 'b', 'x', '@', '.', '-', '\u00e9'])];
  for (const prefix of prefixes) {
    const samples = new Set(['', 'hello', 'Greetings and salutations', 'a@b.com', '123-4567', 'yes', 'no', 'b', 'ababc', 'x123', 'ab', '\u00e9\u00e9x', 'abd', 'aab', '1.5px', 'AB cd',
      // what completes the prefixes above
      ' and salutations!', 'b.com', 'x.org', '3-4567', '-4567', '4567', 'es', 'o', 'bc', 'x', 'B hi', '3']);
    for (let i = 0; i < 300; i++) {
      const n = Math.floor(random() * 9);
      let s = '';
      for (let j = 0; j < n; j++) s += alphabet[Math.floor(random() * alphabet.length)];
      samples.add(s);
    }
    const want = [...samples].map((s) => [s, re.test(prefix + s)]);
    let grammar = null;
    let refused = false;
    try {
      grammar = prefix === '' ? regexpToGBNF(re) : regexpToGBNFAfter(re, prefix);
    } catch (e) {
      if (e.name !== 'NotSupportedError') throw e;
      refused = true;
    }
    cases.push({ pattern: String(re), prefix, grammar, refused, samples: want });
  }
}
process.stdout.write(JSON.stringify(cases));
