// Types of default-model.js (the package entry wasmlm/default-model).

import type { ModelDescription } from './wasmlm.js';

/** The default model, stories260K (MIT): its name and its file's URL, beside the module. */
export declare const DEFAULT_MODEL: ModelDescription & { readonly name: string; readonly model: string };
export default DEFAULT_MODEL;
