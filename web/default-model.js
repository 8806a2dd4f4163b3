// default-model.js: the default model, stories260K (MIT), a GGUF file that
// carries its vocabulary — the package entry wasmlm/default-model. A module
// of its own so that an app bundles the model file only if it imports this:
//
//   import { WasmLM } from 'wasmlm';
//   import { DEFAULT_MODEL } from 'wasmlm/default-model';
//   const lm = await WasmLM.load(DEFAULT_MODEL);
//
// From a static folder (no bundler), WasmLM.load() without a source loads it
// too: wasmlm.js then imports this module from beside itself.

/** The default model: its name and its file's URL, beside this module. */
export const DEFAULT_MODEL = Object.freeze({
  name: 'stories260K',
  model: new URL('./models/stories260K-F16.gguf', import.meta.url).href,
});

export default DEFAULT_MODEL;
