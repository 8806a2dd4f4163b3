// Types of prompt-api.js (npm: wasmlm/prompt-api): the Prompt API's
// LanguageModel over wasmlm, and installPolyfill. See docs/prompt-api.md.

import type { LoadOptions, ModelSource, WasmLM } from './wasmlm.js';

export type Availability = 'unavailable' | 'downloadable' | 'downloading' | 'available';
export type LanguageModelMessageRole = 'system' | 'user' | 'assistant';
export type LanguageModelMessageType = 'text' | 'image' | 'audio' | 'tool-call' | 'tool-response';

export interface LanguageModelMessageContent {
  type: LanguageModelMessageType;
  /** Text; images and audio are refused with NotSupportedError. */
  value: unknown;
}

export interface LanguageModelMessage {
  role: LanguageModelMessageRole;
  content: string | LanguageModelMessageContent[];
  /** On a final assistant message: the reply continues this text. */
  prefix?: boolean;
}

export type LanguageModelPrompt = string | LanguageModelMessage[];

export interface LanguageModelExpected {
  type: LanguageModelMessageType;
  languages?: string[];
}

export interface LanguageModelTool {
  name: string;
  description: string;
  /** A JSON Schema of type "object": the tool's arguments. */
  inputSchema: object;
  /** Called by the session with the model's arguments; its result goes back to the model. */
  execute: (args: any) => unknown | Promise<unknown>;
}

export interface LanguageModelCreateCoreOptions {
  expectedInputs?: LanguageModelExpected[];
  expectedOutputs?: LanguageModelExpected[];
  tools?: LanguageModelTool[];
  /** Our extension (extension-only in the specification), given with topK or not at all (one alone: NotSupportedError): 0 is greedy; below 0 RangeError; above 2, 2. */
  temperature?: number;
  /** Our extension, given with temperature: below 1 RangeError; above 128, 128. */
  topK?: number;
}

export interface CreateMonitor extends EventTarget {}

export interface LanguageModelCreateOptions extends LanguageModelCreateCoreOptions {
  signal?: AbortSignal;
  /** Receives the target of the downloadprogress ProgressEvents (loaded 0 … 1, total 1). */
  monitor?: (monitor: CreateMonitor) => void;
  initialPrompts?: LanguageModelMessage[];
}

export interface LanguageModelPromptOptions {
  /** A JSON Schema, or a RegExp (see docs/prompt-api.md for the subset). */
  responseConstraint?: object | RegExp;
  omitResponseConstraintInput?: boolean;
  signal?: AbortSignal;
}

export interface LanguageModelParams {
  defaultTopK: number;
  maxTopK: number;
  defaultTemperature: number;
  maxTemperature: number;
}

/** A conversation with the model (the specification's LanguageModel). */
export declare class LanguageModel extends EventTarget {
  private constructor();
  static availability(options?: LanguageModelCreateCoreOptions): Promise<Availability>;
  static params(): Promise<LanguageModelParams | null>;
  static create(options?: LanguageModelCreateOptions): Promise<LanguageModel>;
  prompt(input: LanguageModelPrompt, options?: LanguageModelPromptOptions): Promise<string>;
  /** A ReadableStream of the reply's text; async-iterable as browsers make ReadableStreams. */
  promptStreaming(input: LanguageModelPrompt, options?: LanguageModelPromptOptions): ReadableStream<string> & AsyncIterable<string>;
  append(input: LanguageModelPrompt, options?: { signal?: AbortSignal }): Promise<undefined>;
  measureContextUsage(input: LanguageModelPrompt, options?: LanguageModelPromptOptions): Promise<number>;
  readonly contextUsage: number;
  readonly contextWindow: number;
  oncontextoverflow: ((this: LanguageModel, ev: Event) => any) | null;
  clone(options?: { signal?: AbortSignal }): Promise<LanguageModel>;
  destroy(): void;
}

/**
 * Makes this module's LanguageModel globalThis.LanguageModel where there is
 * none or the browser's own answers 'unavailable'; its sessions load src
 * (default: the default model) with loadOptions, or src itself when it is a
 * loaded WasmLM. Resolves to the class in use.
 */
export declare function installPolyfill(src?: ModelSource | WasmLM, loadOptions?: LoadOptions): Promise<typeof LanguageModel>;

export default LanguageModel;
