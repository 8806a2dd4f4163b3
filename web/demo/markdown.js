// markdown.js: a small Markdown renderer for the demo page's chat replies.
// An ES module with no dependencies.
//
// It is safe by construction: it builds the DOM with createElement, text
// nodes and a fixed set of tags, and never parses HTML, so model text such
// as <img src=x onerror=...> or <script> is shown as the characters it is.
// The only attribute that takes model text is a link's href, and only as an
// absolute http(s) URL (rel="noopener noreferrer"); any other link, and
// every image, is shown as its text. Tags it makes: p, br, strong, em, del,
// code, pre, a, h1-h6, ul, ol, li, blockquote, hr, table, thead, tbody, tr,
// th, td. Everything else is text.
//
// What it reads: paragraphs (a single line break is a <br>), # headings,
// fenced code blocks (``` or ~~~, unclosed ones run to the end, as a reply
// being streamed has them), lists (-, *, + or 1. and 1), nested by
// indentation), > quotes, --- rules, | tables |, and inline **bold**,
// __bold__, *italic*, _italic_, ~~struck~~, `code`, [links](url),
// <https://autolinks>, bare https:// URLs and backslash escapes.

const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)[^`]*$/;
const HEADING = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;
const RULE = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/;
const QUOTE = /^ {0,3}> ?(.*)$/;
const ITEM = /^(\s*)([-*+]|\d{1,9}[.)])[ \t]+(.*)$/;
const TABLE_RULE = /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/;
const ESCAPABLE = '\\`*_{}[]()#+-.!|~<>"\'';
const MAX_DEPTH = 16; // nested quotes and lists deeper than this are text

/**
 * Renders Markdown text as a DocumentFragment of safe nodes (see the
 * module's comment). doc: the Document to create them in.
 */
export function renderMarkdown(text, doc = document) {
  const out = doc.createDocumentFragment();
  blocks(new Builder(doc), String(text).replace(/\r\n?/g, '\n').split('\n'), out, 0);
  return out;
}

/** Builder makes the nodes: elements of a fixed set of tags and text. */
class Builder {
  constructor(doc) { this.doc = doc; }

  /** An element of tag with children (strings become text nodes). */
  el(tag, ...children) {
    const e = this.doc.createElement(tag);
    e.append(...children);
    return e;
  }

  /** A link to href if it is an absolute http(s) URL; otherwise null. */
  link(href, ...children) {
    let url;
    try {
      url = new URL(href.trim());
    } catch {
      return null;
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return null;
    const a = this.el('a', ...children);
    a.href = url.href;
    a.rel = 'noopener noreferrer';
    a.target = '_blank';
    return a;
  }
}

/** Renders lines as blocks into parent; depth counts the enclosing quotes and lists. */
function blocks(b, lines, parent, depth) {
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (line.trim() === '') {
      i++;
      continue;
    }
    let m;
    if ((m = FENCE.exec(line))) {
      // A fence closes at a line of the same character at least as long.
      const close = new RegExp(`^ {0,3}${m[1][0] === '`' ? '`' : '~'}{${m[1].length},}\\s*$`);
      const body = [];
      for (i++; i < lines.length && !close.test(lines[i]); i++) body.push(lines[i]);
      i++;
      const code = b.el('code', body.join('\n'));
      if (/^[\w+#.-]{1,32}$/.test(m[2])) code.className = `language-${m[2]}`;
      parent.append(b.el('pre', code));
      continue;
    }
    if ((m = HEADING.exec(line))) {
      const h = b.el(`h${m[1].length}`);
      inline(b, m[2] ?? '', h);
      parent.append(h);
      i++;
      continue;
    }
    if (RULE.test(line)) {
      parent.append(b.el('hr'));
      i++;
      continue;
    }
    if (depth < MAX_DEPTH && QUOTE.test(line)) {
      const inner = [];
      for (; i < lines.length && (m = QUOTE.exec(lines[i])); i++) inner.push(m[1]);
      const quote = b.el('blockquote');
      blocks(b, inner, quote, depth + 1);
      parent.append(quote);
      continue;
    }
    if (depth < MAX_DEPTH && ITEM.test(line)) {
      i = list(b, lines, i, parent, depth);
      continue;
    }
    if (line.includes('|') && i + 1 < lines.length && TABLE_RULE.test(lines[i + 1]) && lines[i + 1].includes('-')) {
      i = table(b, lines, i, parent);
      continue;
    }
    // A paragraph: lines up to a blank one or the start of another block.
    const para = [line];
    for (i++; i < lines.length && lines[i].trim() !== '' && !startsBlock(lines[i]); i++) para.push(lines[i]);
    const p = b.el('p');
    inline(b, para.map((l) => l.trim()).join('\n'), p);
    parent.append(p);
  }
}

/** Whether line starts a block other than a paragraph (which it then ends). */
function startsBlock(line) {
  return FENCE.test(line) || HEADING.test(line) || RULE.test(line) || QUOTE.test(line) || ITEM.test(line);
}

/**
 * Renders the list starting at lines[i] into parent and returns the index
 * of the line after it. An item's more indented lines are its own blocks
 * (a nested list, a second paragraph); a list ends at a blank line that
 * no indented line follows, or at a line of lesser indentation.
 */
function list(b, lines, i, parent, depth) {
  const first = ITEM.exec(lines[i]);
  const indent = first[1].length;
  const ordered = /\d/.test(first[2]);
  const el = b.el(ordered ? 'ol' : 'ul');
  if (ordered) {
    const start = parseInt(first[2], 10);
    if (start !== 1) el.start = start;
  }
  while (i < lines.length) {
    const m = ITEM.exec(lines[i]);
    if (!m || m[1].length !== indent || /\d/.test(m[2]) !== ordered) break;
    const body = [m[3]];
    const inner = indent + 2;
    for (i++; i < lines.length; i++) {
      const l = lines[i];
      const lead = l.length - l.trimStart().length;
      if (l.trim() === '') {
        // Blank lines continue the item only if an indented line follows.
        const k = nonBlank(lines, i);
        if (k === lines.length || lines[k].length - lines[k].trimStart().length < inner) break;
        body.push('');
        i = k - 1;
        continue;
      }
      if (lead >= inner) body.push(l.slice(Math.min(lead, inner + 2)));
      else if (!startsBlock(l) && body[body.length - 1] !== '') body.push(l.trim()); // a lazy continuation
      else break;
    }
    const li = b.el('li');
    // A one-paragraph item is its text, not a <p>.
    const tight = body.length === 1 || (!body.includes('') && !body.slice(1).some(startsBlock));
    if (tight) inline(b, body.map((l) => l.trim()).join('\n'), li);
    else blocks(b, body, li, depth + 1);
    el.append(li);
    // Blank lines between items: the list goes on if an item of its own follows.
    const k = nonBlank(lines, i);
    const next = k < lines.length ? ITEM.exec(lines[k]) : null;
    if (k > i && next && next[1].length === indent) i = k;
  }
  parent.append(el);
  return i;
}

/** The index of the first line from i that is not blank (lines.length if none). */
function nonBlank(lines, i) {
  while (i < lines.length && lines[i].trim() === '') i++;
  return i;
}

/** Renders the table whose header is lines[i] into parent; returns the index after it. */
function table(b, lines, i, parent) {
  const cells = (line) => {
    let s = line.trim();
    if (s.startsWith('|')) s = s.slice(1);
    if (s.endsWith('|') && !s.endsWith('\\|')) s = s.slice(0, -1);
    return s.split(/(?<!\\)\|/).map((c) => c.trim());
  };
  const aligns = cells(lines[i + 1]).map((c) => (c.startsWith(':') && c.endsWith(':') ? 'center' : c.endsWith(':') ? 'right' : ''));
  const row = (line, tag) => {
    const tr = b.el('tr');
    cells(line).slice(0, aligns.length).forEach((c, k) => {
      const td = b.el(tag);
      if (aligns[k]) td.className = `align-${aligns[k]}`;
      inline(b, c, td);
      tr.append(td);
    });
    return tr;
  };
  const head = b.el('thead', row(lines[i], 'th'));
  const body = b.el('tbody');
  for (i += 2; i < lines.length && lines[i].includes('|') && lines[i].trim() !== ''; i++) body.append(row(lines[i], 'td'));
  parent.append(b.el('table', head, body));
  return i;
}

// Inline emphasis: a delimiter run opens when a non-space follows it and
// closes at the next same run that follows a non-space. An underscore run
// must also not be inside a word (snake_case stays as it is).
const EMPHASIS = [['**', 'strong'], ['__', 'strong'], ['~~', 'del'], ['*', 'em'], ['_', 'em']];
const BARE_URL = /^https?:\/\/[^\s<>]*[^\s<>.,:;"'!?)\]]/;
const WORD = /[\p{L}\p{N}]/u;

/** Renders inline Markdown text into parent. */
function inline(b, text, parent, depth = 0) {
  const index = new InlineIndex(text);
  let buf = '';
  const flush = () => {
    if (buf) parent.append(buf);
    buf = '';
  };
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === '\\' && i + 1 < text.length && ESCAPABLE.includes(text[i + 1])) {
      buf += text[i + 1];
      i += 2;
      continue;
    }
    if (c === '\n') {
      flush();
      parent.append(b.el('br'));
      i++;
      continue;
    }
    if (c === '`') {
      let n = 1;
      while (text[i + n] === '`') n++;
      const end = index.closingTicks(i + n, n);
      if (end < 0) {
        buf += text.slice(i, i + n);
        i += n;
        continue;
      }
      let code = text.slice(i + n, end).replace(/\n/g, ' ');
      if (code.length > 2 && code.startsWith(' ') && code.endsWith(' ')) code = code.slice(1, -1);
      flush();
      parent.append(b.el('code', code));
      i = end + n;
      continue;
    }
    if (depth < MAX_DEPTH && (c === '*' || c === '_' || c === '~')) {
      const span = emphasis(index, i);
      if (span) {
        flush();
        const e = b.el(span.tag);
        inline(b, text.slice(span.from, span.to), e, depth + 1);
        parent.append(e);
        i = span.end;
        continue;
      }
    }
    if (c === '[' || (c === '!' && text[i + 1] === '[')) {
      const l = linkAt(index, c === '!' ? i + 1 : i);
      if (l) {
        flush();
        const label = b.doc.createDocumentFragment();
        if (c === '!') label.append(l.label || l.href); // an image: its text, never the image
        else inline(b, l.label, label, depth + 1);
        parent.append(b.link(l.href, label) ?? label);
        i = l.end;
        continue;
      }
    }
    if (c === '<') {
      const m = /^<(https?:\/\/[^\s<>]+)>/.exec(text.slice(i, i + 2048));
      const a = m && b.link(m[1], m[1]);
      if (a) {
        flush();
        parent.append(a);
        i += m[0].length;
        continue;
      }
    }
    if (c === 'h' && (i === 0 || !WORD.test(text[i - 1]))) {
      const m = BARE_URL.exec(text.slice(i, i + 2048));
      const a = m && b.link(m[0], m[0]);
      if (a) {
        flush();
        parent.append(a);
        i += m[0].length;
        continue;
      }
    }
    buf += c;
    i++;
  }
  flush();
}

/**
 * What inline looks up in a text, each found in one pass when first asked
 * for, so that a text of many unclosed delimiters (a reply being streamed,
 * or a hostile one) renders in about linear time, not quadratic.
 */
class InlineIndex {
  constructor(text) {
    this.text = text;
    this.closers = new Map(); // delimiter → the sorted positions where it can close a span
    this.pairs = null; // '[' position → its ']'
    this.unclosedTicks = new Set(); // the backtick run lengths no later run closes
  }

  /** The position of the run of exactly n backticks closing a code span, from from; -1 if none. */
  closingTicks(from, n) {
    if (this.unclosedTicks.has(n)) return -1;
    const t = this.text;
    for (let j = t.indexOf('`', from); j >= 0; j = t.indexOf('`', j)) {
      let k = j;
      while (t[k] === '`') k++;
      if (k - j === n) return j;
      j = k;
    }
    this.unclosedTicks.add(n); // a later search would fail as this one did
    return -1;
  }

  /**
   * The first position after from where delim can close a span: the start
   * of the delimiter at the end of a run of its character that follows a
   * non-space (***x*** closes ** at its last two stars), not inside a word
   * for an underscore, and for a single * or _ not a run of two (a strong
   * span's delimiter); -1 if none.
   */
  closeAfter(delim, from) {
    let list = this.closers.get(delim);
    if (!list) {
      list = [];
      const t = this.text;
      const ch = delim[0];
      for (let j = t.indexOf(ch); j >= 0; j = t.indexOf(ch, j)) {
        let end = j;
        while (t[end] === ch) end++;
        const close = end - delim.length;
        if (end - j >= delim.length && close > 0 && !/\s/.test(t[close - 1])
          && !(ch === '_' && end < t.length && WORD.test(t[end]))
          && !(delim.length === 1 && end - j === 2)) list.push(close);
        j = end;
      }
      this.closers.set(delim, list);
    }
    let lo = 0;
    let hi = list.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (list[mid] <= from) lo = mid + 1;
      else hi = mid;
    }
    return lo < list.length ? list[lo] : -1;
  }

  /** The position of the ']' that closes the '[' at i (escapes skipped), or -1. */
  closingBracket(i) {
    if (!this.pairs) {
      this.pairs = new Map();
      const open = [];
      const t = this.text;
      for (let j = 0; j < t.length; j++) {
        if (t[j] === '\\') j++;
        else if (t[j] === '[') open.push(j);
        else if (t[j] === ']' && open.length > 0) this.pairs.set(open.pop(), j);
      }
    }
    return this.pairs.get(i) ?? -1;
  }
}

/** The emphasis span opening at position i of the index's text: {tag, from, to, end}, or null. */
function emphasis(index, i) {
  const text = index.text;
  for (const [delim, tag] of EMPHASIS) {
    if (!text.startsWith(delim, i)) continue;
    const from = i + delim.length;
    if (from >= text.length || /\s/.test(text[from])) continue;
    if (delim[0] === '_' && i > 0 && WORD.test(text[i - 1])) continue;
    const close = index.closeAfter(delim, from);
    if (close >= 0) return { tag, from, to: close, end: close + delim.length };
  }
  return null;
}

/** The link [label](href) whose '[' is at position i of the index's text: {label, href, end}, or null. */
function linkAt(index, i) {
  const text = index.text;
  const j = index.closingBracket(i);
  if (j < 0 || text[j + 1] !== '(') return null;
  const m = /^\(\s*<?([^\s()<>]*(?:\([^\s()<>]*\)[^\s()<>]*)*)>?(?:\s+(?:"[^"]*"|'[^']*'))?\s*\)/.exec(text.slice(j + 1, j + 4096));
  if (!m) return null;
  return { label: text.slice(i + 1, j), href: m[1], end: j + 1 + m[0].length };
}
