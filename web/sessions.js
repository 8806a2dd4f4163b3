// sessions.js: saved sessions in the origin private file system (OPFS), for
// wasmlm.js (lm.saveSession, lm.restoreSession, lm.sessions). A session's
// state — its tokens, the KV cache's used slots, the recurrent state, the
// last logits (docs/sessions.md) — comes from the worker's Go side as bytes
// (jsbridge's saveState) and goes back to it (loadState), so that a
// conversation survives a reload and continues with the tokens the
// uninterrupted one would give, evaluating nothing again. An ES module.
//
// Each session is one file of OPFS's wasmlm-sessions directory, named by the
// session's name (percent-encoded) and .wlms: a u32 (little-endian) length,
// that many bytes of JSON metadata {name, identity, sha256, kvType, tokens,
// savedAt}, then the engine's state. identity is the model's
// (engine.Model.Identity, which the state carries too) and sha256 the model
// file's when the page knows it (the load option sha256): a session is this
// model's when both agree with the loaded model's, and its KV type is the
// session's.

import { argumentError, codedError, describe } from './errors.js';

const DIR = 'wasmlm-sessions';
const SUFFIX = '.wlms';
const MAX_NAME = 200;

/**
 * The sessions of a model. lm: {call(method, args) → Promise (the worker's
 * Go binding), info (kvType), sha256 (the model file's, or null)}.
 */
export function sessionStore(lm) {
  let identity = null; // the model's, asked once
  const modelIdentity = async () => (identity ??= await lm.call('identity', []));

  /** What a session's file holds first: its metadata. */
  async function readMeta(file) {
    const head = new DataView(await file.slice(0, 4).arrayBuffer());
    if (head.byteLength < 4) throw damaged(file.name);
    const n = head.getUint32(0, true);
    if (n > 1 << 16 || 4 + n > file.size) throw damaged(file.name);
    try {
      return { meta: JSON.parse(await file.slice(4, 4 + n).text()), at: 4 + n };
    } catch {
      throw damaged(file.name);
    }
  }

  /** Whether meta is a session of the loaded model and its KV type; else why not. */
  async function mismatch(meta) {
    if (meta.identity !== await modelIdentity() || (lm.sha256 && meta.sha256 && meta.sha256 !== lm.sha256)) {
      return `it was saved with another model (${meta.sha256 ?? meta.identity})`;
    }
    if (meta.kvType !== lm.info.kvType) {
      return `it was saved with a ${meta.kvType} KV cache, this model's is ${lm.info.kvType}`;
    }
    return null;
  }

  return {
    /** lm.saveSession(name): the session's state saved under name (replacing one of that name). */
    async save(name) {
      const fileName = sessionFile(name);
      const state = await lm.call('saveState', []);
      const id = Array.from(state.subarray(8, 40), (x) => x.toString(16).padStart(2, '0')).join('');
      const meta = { name, identity: id, sha256: lm.sha256 ?? null, kvType: lm.info.kvType, savedAt: new Date().toISOString() };
      const tokens = new DataView(state.buffer, state.byteOffset + 48, 4).getUint32(0, true);
      meta.tokens = tokens;
      const json = new TextEncoder().encode(JSON.stringify(meta));
      const head = new Uint8Array(4);
      new DataView(head.buffer).setUint32(0, json.length, true);
      const dir = await sessionsDir(true);
      const w = await (await dir.getFileHandle(fileName, { create: true })).createWritable();
      try {
        await w.write(new Blob([head, json, state]));
        await w.close();
      } catch (err) {
        await w.abort().catch(() => {});
        throw codedError('storage_failed', `wasmlm: session ${JSON.stringify(name)} could not be saved: ${err?.message ?? err}`, { cause: err });
      }
      return { name, tokens, bytes: 4 + json.length + state.length };
    },

    /** lm.restoreSession(name): the model's session continues from the one saved under name. */
    async restore(name) {
      const fileName = sessionFile(name);
      const file = await fileIn(await sessionsDir(false), fileName);
      if (!file) throw codedError('session_not_found', `wasmlm: no saved session ${JSON.stringify(name)}`, { field: 'name', param: 'name' });
      const { meta, at } = await readMeta(file);
      const why = await mismatch(meta);
      if (why) throw codedError('session_mismatch', `wasmlm: session ${JSON.stringify(name)} cannot be restored: ${why}`);
      const state = new Uint8Array(await file.slice(at).arrayBuffer());
      try {
        const r = await lm.call('loadState', [state]);
        return { name, tokens: r.tokens };
      } catch (err) {
        if (/does not fit this session/.test(err?.message ?? '')) {
          throw codedError('session_mismatch', `wasmlm: session ${JSON.stringify(name)} cannot be restored: ${err.message}`, { cause: err });
        }
        throw err;
      }
    },

    /** lm.sessions.list(): the sessions saved with this model and KV type, oldest first. */
    async list() {
      const dir = await sessionsDir(false);
      if (!dir) return [];
      const out = [];
      for await (const [fileName, handle] of dir.entries()) {
        if (handle.kind !== 'file' || !fileName.endsWith(SUFFIX)) continue;
        const file = await handle.getFile();
        const r = await readMeta(file).catch(() => null);
        if (!r || await mismatch(r.meta)) continue;
        const { name, tokens, kvType, savedAt } = r.meta;
        out.push({ name, tokens, kvType, savedAt, bytes: file.size });
      }
      return out.sort((a, b) => a.savedAt.localeCompare(b.savedAt));
    },

    /** lm.sessions.delete(name): true when a session of that name was deleted. */
    async delete(name) {
      const fileName = sessionFile(name);
      const dir = await sessionsDir(false);
      if (!dir) return false;
      try {
        await dir.removeEntry(fileName);
        return true;
      } catch (err) {
        if (err?.name === 'NotFoundError') return false;
        throw err;
      }
    },
  };
}

/** The file name of session name, which must be a string of 1 to MAX_NAME characters. */
function sessionFile(name) {
  if (typeof name !== 'string' || name.length === 0 || name.length > MAX_NAME) {
    throw argumentError('name', `must be a string of 1 to ${MAX_NAME} characters, got ${describe(name)}`);
  }
  return encodeURIComponent(name) + SUFFIX;
}

/** OPFS's sessions directory (made when create), or null when there is none. */
async function sessionsDir(create) {
  if (!globalThis.navigator?.storage?.getDirectory) {
    throw codedError('storage_failed', 'wasmlm: saved sessions need the origin private file system (navigator.storage.getDirectory), which this context lacks');
  }
  const root = await navigator.storage.getDirectory();
  try {
    return await root.getDirectoryHandle(DIR, { create });
  } catch (err) {
    if (err?.name === 'NotFoundError') return null;
    throw err;
  }
}

/** The File of dir/name, or null. */
async function fileIn(dir, name) {
  if (!dir) return null;
  try {
    return await (await dir.getFileHandle(name)).getFile();
  } catch (err) {
    if (err?.name === 'NotFoundError') return null;
    throw err;
  }
}

/** A session file that is not one. */
function damaged(name) {
  return codedError('session_mismatch', `wasmlm: ${name} in OPFS's ${DIR} is not a saved session`);
}
