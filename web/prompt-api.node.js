// prompt-api.node.js: the npm package's wasmlm/prompt-api for Node.js (the
// exports' node condition, which Deno takes too): prompt-api.js with the
// model in a worker thread, as wasmlm.node.js, the package's Node.js entry,
// sets up (the model's worker, file paths as sources) before any load.

import './wasmlm.node.js';

export * from './prompt-api.js';
