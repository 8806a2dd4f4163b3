// cache.worker.js: the dedicated worker through which cache.js writes model
// files into the Origin Private File System. A classic worker script with no
// dependencies.
//
// Why a worker: FileSystemSyncAccessHandle, which only dedicated workers
// have, writes in place. The page's FileSystemWritableFileStream writes to
// a temporary copy that replaces the file only when the stream is closed —
// so a tab closed mid-download would lose every byte of that session, and
// resuming would first copy the bytes already there — and Safari before 26
// has no FileSystemWritableFileStream at all. Here every written byte is in
// the file as soon as write returns, and flushed to disk every few MiB.
//
// Messages: { id, op, ...args } → { id, value } or { id, error: { name, message } };
// write's value is the written bytes' buffer, transferred back for reuse.
// Some browsers' first versions of the handle had async methods; every call
// is awaited, which costs nothing with the synchronous ones.

const handles = new Map(); // file name → FileSystemSyncAccessHandle

async function directory(name) {
  const root = await navigator.storage.getDirectory();
  return root.getDirectoryHandle(name, { create: true });
}

async function open(dir, name) {
  if (handles.has(name)) throw new DOMException(`${name} is already open`, 'InvalidStateError');
  const file = await (await directory(dir)).getFileHandle(name, { create: true });
  const handle = await file.createSyncAccessHandle();
  handles.set(name, handle);
  return handle;
}

function handle(name) {
  const h = handles.get(name);
  if (!h) throw new DOMException(`${name} is not open`, 'InvalidStateError');
  return h;
}

async function writeAll(h, bytes, at) {
  for (let done = 0; done < bytes.length;) {
    const n = await h.write(bytes.subarray(done), { at: at + done });
    if (!(n > 0)) throw new DOMException(`wrote ${done} of ${bytes.length} bytes`, 'InvalidStateError');
    done += n;
  }
}

async function close(name) {
  const h = handle(name);
  handles.delete(name);
  try {
    await h.flush();
  } finally {
    await h.close();
  }
}

/** A value sent back by transferring it (an ArrayBuffer), not by copying. */
class Transfer {
  constructor(buffer) {
    this.buffer = buffer;
  }
}

const ops = {
  /** Whether this browser gives workers FileSystemSyncAccessHandle. */
  probe() {
    return typeof FileSystemFileHandle === 'function' &&
      typeof FileSystemFileHandle.prototype.createSyncAccessHandle === 'function';
  },
  /** Opens dir/name (created if missing), truncated to size bytes. */
  async open({ dir, name, size }) {
    const h = await open(dir, name);
    await h.truncate(size);
  },
  /**
   * Writes bytes (a Uint8Array) at offset at of the open file name, and
   * sends their buffer back for the page's next bytes.
   */
  async write({ name, bytes, at }) {
    await writeAll(handle(name), bytes, at);
    return new Transfer(bytes.buffer);
  },
  async flush({ name }) {
    await handle(name).flush();
  },
  async close({ name }) {
    await close(name);
  },
  /** Replaces the whole of dir/name with bytes. */
  async writeFile({ dir, name, bytes }) {
    const h = await open(dir, name);
    try {
      await h.truncate(0);
      await writeAll(h, bytes, 0);
    } finally {
      await close(name);
    }
  },
};

self.onmessage = async ({ data }) => {
  try {
    const value = await ops[data.op](data);
    if (value instanceof Transfer) self.postMessage({ id: data.id, value: value.buffer }, [value.buffer]);
    else self.postMessage({ id: data.id, value });
  } catch (err) {
    self.postMessage({ id: data.id, error: { name: err?.name ?? 'Error', message: err?.message ?? String(err) } });
  }
};
