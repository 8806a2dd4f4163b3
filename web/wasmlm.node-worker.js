// wasmlm.node-worker.js: the worker_threads entry of wasmlm.node.js. It
// gives the thread what wasmlm.worker.js expects of a Web Worker's global
// scope (self, postMessage, onmessage) and its fetch of file: URLs, then runs it.

import { parentPort } from 'node:worker_threads';
import { host } from './host.js';
import { nodeFetch } from './wasmlm.node-fetch.js';

globalThis.self = globalThis;
host.fetch = nodeFetch; // the worker reads the model's ranges itself
globalThis.postMessage = (message, transfer) => parentPort.postMessage(message, transfer);

// Imported only now, after the globals it uses exist; messages that arrive
// meanwhile wait in the port, which starts delivering once listened to.
await import('./wasmlm.worker.js');
parentPort.on('message', (data) => globalThis.onmessage?.({ data }));
