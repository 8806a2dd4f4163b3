// prompt-api-regexp.js: a JavaScript RegExp as a GBNF grammar (llama.cpp's
// syntax, which chat.completions.create's grammar field takes), for the
// Prompt API's responseConstraint. The grammar accepts exactly the strings
// for which regexp.test(string) is true: an unanchored pattern may be
// surrounded by any text, as test() finds it anywhere. Only a pattern whose
// language GBNF can state exactly is translated; the rest (lookarounds,
// backreferences, word boundaries, anchors inside the pattern, the i, m and
// v flags) throw a NotSupportedError DOMException. With a reply's prefix,
// the grammar is the pattern's derivative by it (Brzozowski's): the
// continuations that complete the prefix to a match. An ES module.

// The pattern is parsed into a tree of four kinds of node:
//   {k: 'set', ranges: [[lo, hi], ...], neg}  one character (a literal: one range of one)
//   {k: 'seq', xs}                            xs one after another (none: the empty string)
//   {k: 'alt', xs}                            one of xs (none: no string at all)
//   {k: 'rep', x, min, max}                   x from min to max times (max may be Infinity)

const MAX_CHAR = 0x10ffff;
const EPS = Object.freeze({ k: 'seq', xs: [] });
const EMPTY = Object.freeze({ k: 'alt', xs: [] });
const ANY = Object.freeze({ k: 'set', ranges: [[0, MAX_CHAR]], neg: false });
const LINE_TERMINATORS = [0x0a, 0x0d, 0x2028, 0x2029].map((x) => [x, x]);
const DIGIT = [[0x30, 0x39]];
const WORD = [[0x30, 0x39], [0x41, 0x5a], [0x5f, 0x5f], [0x61, 0x7a]];
const SPACE = [[0x09, 0x0d], [0x20, 0x20], [0xa0, 0xa0], [0x1680, 0x1680], [0x2000, 0x200a],
  [0x2028, 0x2029], [0x202f, 0x202f], [0x205f, 0x205f], [0x3000, 0x3000], [0xfeff, 0xfeff]];
/** The most nodes a derivative may grow to before the prefix is refused. */
const MAX_NODES = 20000;

function unsupported(what) {
  return new DOMException(`responseConstraint: the RegExp's ${what} has no exact grammar`, 'NotSupportedError');
}

/** regexpToGBNF(re): a GBNF grammar (rule root) for the strings re.test accepts. */
export function regexpToGBNF(re) {
  return `root ::= ${emit(language(re))}\n`;
}

/**
 * regexpToGBNFAfter(re, prefix): a GBNF grammar for the strings s for which
 * re.test(prefix + s) is true; a NotSupportedError when there is none (the
 * prefix already strays from the pattern).
 */
export function regexpToGBNFAfter(re, prefix) {
  let n = language(re);
  for (const ch of prefix) {
    n = derive(n, ch.codePointAt(0));
    if (size(n) > MAX_NODES) throw unsupported('derivative by the prefix');
  }
  if (isEmpty(n)) throw new DOMException('responseConstraint: no reply after the prefix can match the RegExp', 'NotSupportedError');
  return `root ::= ${emit(n)}\n`;
}

/** The tree of the strings re.test accepts. */
function language(re) {
  for (const f of re.flags) {
    if ('imv'.includes(f)) throw unsupported(`flag ${f}`);
  }
  const p = new Parser(re.source, re.flags.includes('s'), re.flags.includes('u'));
  const alts = p.alternatives(true);
  if (p.i < p.src.length) throw unsupported(`character ${p.src[p.i]} at ${p.i}`);
  const anything = { k: 'rep', x: ANY, min: 0, max: Infinity };
  return alt(alts.map(({ start, end, body }) => seq([start ? EPS : anything, body, end ? EPS : anything])));
}

function seq(xs) {
  const out = [];
  for (const x of xs) {
    if (x.k === 'alt' && x.xs.length === 0) return EMPTY;
    if (x.k === 'seq') out.push(...x.xs);
    else out.push(x);
  }
  return out.length === 1 ? out[0] : { k: 'seq', xs: out };
}

function alt(xs) {
  const out = [];
  const seen = new Set();
  for (const x of xs) {
    for (const y of x.k === 'alt' ? x.xs : [x]) {
      const id = JSON.stringify(y);
      if (!seen.has(id)) {
        seen.add(id);
        out.push(y);
      }
    }
  }
  return out.length === 1 ? out[0] : { k: 'alt', xs: out };
}

function rep(x, min, max) {
  if (max === 0) return EPS;
  if (min === 1 && max === 1) return x;
  return { k: 'rep', x, min, max };
}

function matches(set, cp) {
  return set.ranges.some(([lo, hi]) => cp >= lo && cp <= hi) !== set.neg;
}

function nullable(n) {
  switch (n.k) {
    case 'set': return false;
    case 'seq': return n.xs.every(nullable);
    case 'alt': return n.xs.some(nullable);
    default: return n.min === 0 || nullable(n.x);
  }
}

/** Whether n accepts no string at all. */
function isEmpty(n) {
  switch (n.k) {
    case 'set': return n.neg ? n.ranges.some(([lo, hi]) => lo === 0 && hi === MAX_CHAR) : n.ranges.length === 0;
    case 'seq': return n.xs.some(isEmpty);
    case 'alt': return n.xs.every(isEmpty);
    default: return n.min > 0 && isEmpty(n.x);
  }
}

/** The strings s such that the character cp followed by s is in n. */
function derive(n, cp) {
  switch (n.k) {
    case 'set': return matches(n, cp) ? EPS : EMPTY;
    case 'seq': {
      if (n.xs.length === 0) return EMPTY;
      const [first, ...others] = n.xs;
      const rest = seq(others);
      const d = seq([derive(first, cp), rest]);
      return nullable(first) ? alt([d, derive(rest, cp)]) : d;
    }
    case 'alt': return alt(n.xs.map((x) => derive(x, cp)));
    default: return seq([derive(n.x, cp), rep(n.x, Math.max(n.min - 1, 0), n.max - 1)]);
  }
}

function size(n) {
  switch (n.k) {
    case 'set': return 1;
    case 'rep': return 1 + size(n.x);
    default: return n.xs.reduce((s, x) => s + size(x), 1);
  }
}

/** n in GBNF. */
function emit(n) {
  switch (n.k) {
    case 'set':
      if (!n.neg && n.ranges.length === 1 && n.ranges[0][0] === n.ranges[0][1]) return `"${char(n.ranges[0][0])}"`;
      if (n.neg && n.ranges.length === 0) return emit(ANY);
      if (!n.neg && n.ranges.length === 0) return '[^\\x00-\\U0010FFFF]';
      return `[${n.neg ? '^' : ''}${n.ranges.map(([a, b]) => (a === b ? char(a) : `${char(a)}-${char(b)}`)).join('')}]`;
    case 'seq': return n.xs.length === 0 ? '""' : n.xs.map((x) => (x.k === 'alt' ? `(${emit(x)})` : emit(x))).join(' ');
    case 'alt': return n.xs.length === 0 ? '[^\\x00-\\U0010FFFF]' : n.xs.map(emit).join(' | ');
    default: {
      const q = n.max === Infinity ? (n.min === 0 ? '*' : n.min === 1 ? '+' : `{${n.min},}`)
        : n.min === 0 && n.max === 1 ? '?' : n.min === n.max ? `{${n.min}}` : `{${n.min},${n.max}}`;
      return `(${emit(n.x)})${q}`;
    }
  }
}

/** A code point as GBNF writes it inside quotes or brackets. */
function char(cp) {
  if (cp >= 0x20 && cp < 0x7f && !'"\\[]^-'.includes(String.fromCharCode(cp))) return String.fromCharCode(cp);
  if (cp <= 0xff) return `\\x${cp.toString(16).padStart(2, '0')}`;
  if (cp <= 0xffff) return `\\u${cp.toString(16).padStart(4, '0')}`;
  return `\\U${cp.toString(16).padStart(8, '0')}`;
}

class Parser {
  constructor(src, dotAll, unicode) {
    this.src = src;
    this.i = 0;
    this.dotAll = dotAll;
    this.unicode = unicode;
  }

  peek() { return this.src[this.i]; }

  /**
   * a|b|c, until ')' or the end. top: the pattern itself, whose
   * alternatives may start with ^ and end with $ ([{start, end, body}]);
   * otherwise a group's, one node.
   */
  alternatives(top) {
    const alts = [];
    for (;;) {
      let start = false;
      if (top && this.peek() === '^') {
        start = true;
        this.i++;
      }
      const items = [];
      let end = false;
      while (this.i < this.src.length && this.peek() !== '|' && this.peek() !== ')') {
        if (this.peek() === '$') {
          this.i++;
          if (!top || (this.i < this.src.length && this.peek() !== '|')) throw unsupported('$ inside the pattern');
          end = true;
          break;
        }
        items.push(this.quantified());
      }
      alts.push({ start, end, body: seq(items) });
      if (this.peek() !== '|') break;
      this.i++;
    }
    return top ? alts : alt(alts.map((a) => a.body));
  }

  quantified() {
    const atom = this.atom();
    const c = this.peek();
    let min = 1;
    let max = 1;
    if (c === '*' || c === '+' || c === '?') {
      [min, max] = { '*': [0, Infinity], '+': [1, Infinity], '?': [0, 1] }[c];
      this.i++;
    } else if (c === '{') {
      const m = /^\{(\d+)(,(\d*))?\}/.exec(this.src.slice(this.i));
      if (!m) return atom; // a literal '{', as JavaScript reads it without the u flag
      min = Number(m[1]);
      max = m[2] === undefined ? min : m[3] === '' ? Infinity : Number(m[3]);
      if (max < min) throw unsupported('quantifier');
      this.i += m[0].length;
    } else {
      return atom;
    }
    if (this.peek() === '?') this.i++; // lazy: the same language
    if (this.peek() !== undefined && '*+?'.includes(this.peek())) throw unsupported('repeated quantifier');
    return { k: 'rep', x: atom, min, max };
  }

  atom() {
    const c = this.src[this.i++];
    switch (c) {
      case '(': {
        if (this.peek() === '?') {
          const m = /^\?(:|<[A-Za-z_$][\w$]*>)/.exec(this.src.slice(this.i));
          if (!m) throw unsupported('lookaround');
          this.i += m[0].length;
        }
        const body = this.alternatives(false);
        if (this.src[this.i++] !== ')') throw unsupported('unclosed group');
        return body;
      }
      case '[': return this.charClass();
      case '.': return this.dotAll ? ANY : { k: 'set', ranges: LINE_TERMINATORS, neg: true };
      case '\\': return this.escapeSet() ?? single(this.escapeChar());
      case '^': case '$': throw unsupported(`${c} inside the pattern`);
      case '*': case '+': case '?': case ')': case '|': throw unsupported(`${c} at ${this.i - 1}`);
      default: {
        const cp = this.src.codePointAt(this.i - 1);
        if (cp > 0xffff) this.i++;
        return single(cp);
      }
    }
  }

  /** \d \D \w \W \s \S after the backslash as a set, or null. */
  escapeSet() {
    const c = this.peek();
    const sets = { d: DIGIT, w: WORD, s: SPACE };
    const lower = c?.toLowerCase();
    if (!(lower in sets)) return null;
    this.i++;
    return { k: 'set', ranges: sets[lower], neg: c !== lower };
  }

  /** One character's code point after the backslash. */
  escapeChar() {
    const c = this.src[this.i++];
    const simple = { n: 0x0a, r: 0x0d, t: 0x09, f: 0x0c, v: 0x0b, 0: 0 };
    if (c in simple && !(c === '0' && /\d/.test(this.peek() ?? ''))) return simple[c];
    if (c === 'x') return this.hex(2);
    if (c === 'u') {
      if (this.peek() === '{' && this.unicode) {
        const m = /^\{([0-9a-fA-F]{1,6})\}/.exec(this.src.slice(this.i));
        if (!m) throw unsupported('escape');
        this.i += m[0].length;
        return parseInt(m[1], 16);
      }
      return this.hex(4);
    }
    if (c === undefined || /[bBkcpP1-9]/.test(c)) throw unsupported(`escape \\${c ?? ''}`);
    return c.codePointAt(0);
  }

  hex(n) {
    const digits = this.src.slice(this.i, this.i + n);
    if (!new RegExp(`^[0-9a-fA-F]{${n}}$`).test(digits)) throw unsupported('escape');
    this.i += n;
    return parseInt(digits, 16);
  }

  /** [...] after the '['. */
  charClass() {
    let neg = false;
    if (this.peek() === '^') {
      neg = true;
      this.i++;
    }
    const ranges = [];
    const nested = [];
    while (this.peek() !== ']') {
      if (this.i >= this.src.length) throw unsupported('unclosed class');
      const lo = this.classAtom();
      if (typeof lo !== 'number') {
        nested.push(lo);
        continue;
      }
      if (this.peek() === '-' && this.src[this.i + 1] !== ']') {
        this.i++;
        const hi = this.classAtom();
        if (typeof hi !== 'number') throw unsupported('range to a class');
        ranges.push([lo, hi]);
      } else {
        ranges.push([lo, lo]);
      }
    }
    this.i++;
    for (const n of nested) {
      if (n.neg) {
        if (neg || nested.length > 1 || ranges.length) throw unsupported('negated escape inside a class');
        return n;
      }
      ranges.push(...n.ranges);
    }
    return { k: 'set', ranges, neg };
  }

  /** A code point or a set (\d, \w, \s and their negations) inside a class. */
  classAtom() {
    const c = this.src[this.i++];
    if (c !== '\\') {
      const cp = this.src.codePointAt(this.i - 1);
      if (cp > 0xffff) this.i++;
      return cp;
    }
    if (this.peek() === 'b') {
      this.i++;
      return 0x08;
    }
    if (this.peek() === '-') {
      this.i++;
      return 0x2d;
    }
    return this.escapeSet() ?? this.escapeChar();
  }
}

function single(cp) {
  return { k: 'set', ranges: [[cp, cp]], neg: false };
}
