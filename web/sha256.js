// sha256.js: an incremental SHA-256 (FIPS 180-4) for cache.js. An ES module
// with no dependencies.
//
// WebCrypto's crypto.subtle.digest takes the whole message at once, and a
// model is 1–8 GB: this one takes it in pieces as they stream in, holding
// 64 bytes of it. Its tests compare it with crypto.subtle.digest
// (TestBrowserCacheSHA256).

/** The round constants: the first 32 bits of the fractional parts of the cube roots of the first 64 primes. */
const K = new Int32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);

/** The initial hash value: the first 32 bits of the fractional parts of the square roots of the first 8 primes. */
const H0 = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];

/** An incremental SHA-256: update(bytes) any number of times, then digest() or hex() once. */
export class Sha256 {
  #h = new Int32Array(H0); // the hash value so far
  #w = new Int32Array(64); // the message schedule of one block
  #block = new Uint8Array(64); // an incomplete block carried between updates
  #fill = 0; // bytes in #block
  #length = 0; // bytes hashed in all
  #done = false;

  /** Adds bytes (a Uint8Array) to the message. */
  update(bytes) {
    if (this.#done) throw new Error('sha256: update after digest');
    this.#length += bytes.length;
    let at = 0;
    if (this.#fill > 0) {
      const n = Math.min(64 - this.#fill, bytes.length);
      this.#block.set(bytes.subarray(0, n), this.#fill);
      this.#fill += n;
      at = n;
      if (this.#fill < 64) return this;
      compress(this.#h, this.#w, this.#block, 0, 64);
      this.#fill = 0;
    }
    const whole = at + ((bytes.length - at) & ~63);
    compress(this.#h, this.#w, bytes, at, whole);
    if (whole < bytes.length) {
      this.#block.set(bytes.subarray(whole));
      this.#fill = bytes.length - whole;
    }
    return this;
  }

  /** The 32-byte digest of everything added; the hash cannot be updated after. */
  digest() {
    if (this.#done) throw new Error('sha256: digest twice');
    // Padding: a 1 bit, zeros to 56 bytes mod 64, the length in bits as a big-endian 64-bit number.
    const bits = this.#length * 8; // exact up to 2^53 bits (1 PiB)
    const pad = new Uint8Array((this.#fill < 56 ? 64 : 128) - this.#fill);
    pad[0] = 0x80;
    const view = new DataView(pad.buffer);
    view.setUint32(pad.length - 8, Math.floor(bits / 0x100000000));
    view.setUint32(pad.length - 4, bits >>> 0);
    this.update(pad);
    this.#done = true;
    const out = new Uint8Array(32);
    const outView = new DataView(out.buffer);
    for (let i = 0; i < 8; i++) outView.setInt32(i * 4, this.#h[i]);
    return out;
  }

  /** The digest as 64 lower-case hexadecimal digits. */
  hex() {
    return Array.from(this.digest(), (b) => b.toString(16).padStart(2, '0')).join('');
  }
}

/**
 * Hashes the 64-byte blocks of bytes from at to end (a multiple of 64 bytes
 * on) into the hash value h, with w as the message schedule. The state stays
 * in locals across blocks, which V8 runs about a fifth faster than fields.
 */
function compress(h, w, bytes, at, end) {
  let h0 = h[0], h1 = h[1], h2 = h[2], h3 = h[3], h4 = h[4], h5 = h[5], h6 = h[6], h7 = h[7];
  for (; at < end; at += 64) {
    for (let i = 0, j = at; i < 16; i++, j += 4) {
      w[i] = (bytes[j] << 24) | (bytes[j + 1] << 16) | (bytes[j + 2] << 8) | bytes[j + 3];
    }
    for (let i = 16; i < 64; i++) {
      const x = w[i - 15];
      const y = w[i - 2];
      const s0 = ((x >>> 7) | (x << 25)) ^ ((x >>> 18) | (x << 14)) ^ (x >>> 3);
      const s1 = ((y >>> 17) | (y << 15)) ^ ((y >>> 19) | (y << 13)) ^ (y >>> 10);
      w[i] = (w[i - 16] + s0 + w[i - 7] + s1) | 0;
    }
    let a = h0, b = h1, c = h2, d = h3, e = h4, f = h5, g = h6, hh = h7;
    for (let i = 0; i < 64; i++) {
      const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
      const ch = (e & f) ^ (~e & g);
      const t1 = (hh + S1 + ch + K[i] + w[i]) | 0;
      const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
      const maj = (a & b) ^ (a & c) ^ (b & c);
      const t2 = (S0 + maj) | 0;
      hh = g;
      g = f;
      f = e;
      e = (d + t1) | 0;
      d = c;
      c = b;
      b = a;
      a = (t1 + t2) | 0;
    }
    h0 = (h0 + a) | 0;
    h1 = (h1 + b) | 0;
    h2 = (h2 + c) | 0;
    h3 = (h3 + d) | 0;
    h4 = (h4 + e) | 0;
    h5 = (h5 + f) | 0;
    h6 = (h6 + g) | 0;
    h7 = (h7 + hh) | 0;
  }
  h[0] = h0; h[1] = h1; h[2] = h2; h[3] = h3; h[4] = h4; h[5] = h5; h[6] = h6; h[7] = h7;
}
