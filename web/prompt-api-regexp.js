// prompt-api-regexp.js: a JavaScript RegExp as a GBNF grammar (llama.cpp's
// syntax, which chat.completions.create's grammar field takes), for the
// Prompt API's responseConstraint. The grammar accepts exactly the strings
// for which regexp.test(string) is true: an unanchored pattern may be
// surrounded by any text, as test() finds it anywhere. Only a pattern whose
// language GBNF can state exactly is translated; the rest (lookarounds,
// backreferences, word boundaries, anchors inside the pattern, the i, m and
// v flags) throw a NotSupportedError DOMException. An ES module.

/** Every character: what `.` matches with the s flag, and the text around an unanchored pattern. */
const ANY = '[\\x00-\\U0010FFFF]';
const LINE_TERMINATORS = [0x0a, 0x0d, 0x2028, 0x2029];
const DIGIT = [[0x30, 0x39]];
const WORD = [[0x30, 0x39], [0x41, 0x5a], [0x5f, 0x5f], [0x61, 0x7a]];
const SPACE = [[0x09, 0x0d], [0x20, 0x20], [0xa0, 0xa0], [0x1680, 0x1680], [0x2000, 0x200a],
  [0x2028, 0x2029], [0x202f, 0x202f], [0x205f, 0x205f], [0x3000, 0x3000], [0xfeff, 0xfeff]];

function unsupported(what) {
  return new DOMException(`responseConstraint: the RegExp's ${what} has no exact grammar`, 'NotSupportedError');
}

/** regexpToGBNF(re): a GBNF grammar (rule root) for the strings re.test accepts. */
export function regexpToGBNF(re) {
  for (const f of re.flags) {
    if ('imv'.includes(f)) throw unsupported(`flag ${f}`);
  }
  const p = new Parser(re.source, re.flags.includes('s'), re.flags.includes('u'));
  const alts = p.alternatives(true);
  if (p.i < p.src.length) throw unsupported(`character ${p.src[p.i]} at ${p.i}`);
  const parts = alts.map(({ start, end, body }) => `${start ? '' : `${ANY}* `}${body}${end ? '' : ` ${ANY}*`}`);
  return `root ::= ${parts.map((s) => `(${s})`).join(' | ')}\n`;
}

class Parser {
  constructor(src, dotAll, unicode) {
    this.src = src;
    this.i = 0;
    this.dotAll = dotAll;
    this.unicode = unicode;
  }

  peek() { return this.src[this.i]; }

  /** a|b|c, until ')' or the end; top: anchors allowed at each alternative's ends. */
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
      alts.push({ start, end, body: items.length ? items.join(' ') : '""' });
      if (this.peek() !== '|') break;
      this.i++;
    }
    if (!top) return alts.map((a) => a.body).join(' | ');
    return alts;
  }

  quantified() {
    const atom = this.atom();
    const c = this.peek();
    let q = '';
    if (c === '*' || c === '+' || c === '?') {
      q = c;
      this.i++;
    } else if (c === '{') {
      const m = /^\{(\d+)(,(\d*))?\}/.exec(this.src.slice(this.i));
      if (m) {
        q = m[2] === undefined ? `{${m[1]}}` : `{${m[1]},${m[3]}}`;
        this.i += m[0].length;
      }
    }
    if (q && this.peek() === '?') this.i++; // lazy: the same language
    if (q && this.peek() !== undefined && '*+?{'.includes(this.peek())) throw unsupported('repeated quantifier');
    return q ? `(${atom})${q}` : atom;
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
        return `(${body})`;
      }
      case '[': return this.charClass();
      case '.': return this.dotAll ? ANY : classText(LINE_TERMINATORS.map((x) => [x, x]), true);
      case '\\': {
        const set = this.escapeSet();
        if (set) return classText(set.ranges, set.negate);
        return literal(this.escapeChar());
      }
      case '^': case '$': throw unsupported(`${c} inside the pattern`);
      case '*': case '+': case '?': case '{': case ')': case '|': throw unsupported(`${c} at ${this.i - 1}`);
      default: {
        const cp = this.src.codePointAt(this.i - 1);
        if (cp > 0xffff) this.i++;
        return literal(cp);
      }
    }
  }

  /** \d \D \w \W \s \S after the backslash, or null. */
  escapeSet() {
    const c = this.peek();
    const sets = { d: DIGIT, w: WORD, s: SPACE };
    const lower = c?.toLowerCase();
    if (!(lower in sets)) return null;
    this.i++;
    return { ranges: sets[lower], negate: c !== lower };
  }

  /** One character's code point after the backslash. */
  escapeChar() {
    const c = this.src[this.i++];
    const simple = { n: 0x0a, r: 0x0d, t: 0x09, f: 0x0c, v: 0x0b, 0: 0 };
    if (c in simple && !(c === '0' && /\d/.test(this.peek() ?? ''))) return simple[c];
    if (c === 'x') return this.hex(2);
    if (c === 'u') {
      if (this.peek() === '{' && this.unicode) {
        const end = this.src.indexOf('}', this.i);
        const cp = parseInt(this.src.slice(this.i + 1, end), 16);
        this.i = end + 1;
        return cp;
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
    let negate = false;
    if (this.peek() === '^') {
      negate = true;
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
      if (n.negate) {
        if (negate || nested.length > 1 || ranges.length) throw unsupported('negated escape inside a class');
        return classText(n.ranges, true);
      }
      ranges.push(...n.ranges);
    }
    if (!ranges.length) return negate ? ANY : '[^\\x00-\\U0010FFFF]';
    return classText(ranges, negate);
  }

  /** A code point or a {ranges, negate} set inside a class. */
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

/** A code point as GBNF writes it inside quotes or brackets. */
function char(cp) {
  if (cp >= 0x20 && cp < 0x7f && !'"\\[]^-'.includes(String.fromCharCode(cp))) return String.fromCharCode(cp);
  if (cp <= 0xff) return `\\x${cp.toString(16).padStart(2, '0')}`;
  if (cp <= 0xffff) return `\\u${cp.toString(16).padStart(4, '0')}`;
  return `\\U${cp.toString(16).padStart(8, '0')}`;
}

function literal(cp) {
  return `"${char(cp)}"`;
}

function classText(ranges, negate) {
  return `[${negate ? '^' : ''}${ranges.map(([a, b]) => (a === b ? char(a) : `${char(a)}-${char(b)}`)).join('')}]`;
}
