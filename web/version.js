// version.js: the package's version, the repository's VERSION file's
// (tools/npmpack's tests hold the two equal; npmpack refuses to pack them
// unequal). A SharedWorker's name carries it (shared.js), so that tabs of
// two versions never share an engine.

/** wasmlm's version. */
export const VERSION = '0.1.0';
