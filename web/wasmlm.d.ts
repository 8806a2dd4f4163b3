// Types of wasmlm.js: a language model that runs in a Web Worker.

/**
 * Where a model comes from: a URL (hf:owner/repo/file.gguf for a file on
 * Hugging Face: LoadOptions.hfEndpoint), bytes, or a file the user picked; a split
 * GGUF (name-00001-of-00003.gguf, as llama-gguf-split writes them) by its
 * first part's URL (the others are found by name) or by all its parts, in
 * order, as URLs or Blobs.
 */
export type ModelSource = string | URL | ArrayBuffer | ArrayBufferView | Blob | ReadonlyArray<string | URL | Blob> | ModelDescription;

/**
 * A model and its name, as wasmlm/default-model's DEFAULT_MODEL: load(description) is
 * load(description.model, {name: description.name}). In Node.js a string that is not a
 * URL with a scheme is a file path (relative to the working directory).
 */
export interface ModelDescription {
  readonly model: string | URL | ArrayBuffer | ArrayBufferView | Blob | ReadonlyArray<string | URL | Blob>;
  readonly name?: string;
}

export interface LoadProgress {
  /** Bytes read so far, over all the files (and workers) of the load. */
  loaded: number;
  /** Bytes in all, once every file's size is known. */
  total?: number;
  /** Whether every file came from the cache. */
  cached: boolean;
  /**
   * 'download' while a model is downloaded into the cache, 'verify' while
   * cached bytes are hashed against the sha256 option (then the model is
   * read from the cache: the progress starts again, without phase); absent
   * otherwise.
   */
  phase?: 'download' | 'verify';
}

export interface LoadOptions {
  /** A llama2.c checkpoint's tokenizer.bin (GGUF files carry their vocabulary). */
  tokenizer?: ModelSource;
  /**
   * Called as bytes arrive. A tab that joins a model another tab loaded into their
   * SharedWorker (shared) reads nothing: one call, loaded and total the file's size, cached true.
   */
  onProgress?: (progress: LoadProgress) => void;
  /**
   * Keep downloads in the model cache (the Origin Private File System, Cache
   * Storage where there is none) and read them from there (default true).
   */
  cache?: boolean;
  /** Positions the session holds; 0 or omitted: the model's, at most 4096. */
  contextLength?: number;
  /** Aborts the download: the load rejects with code 'aborted'. */
  signal?: AbortSignal;
  /** The model's name in chat completions (default: the file's name). */
  name?: string;
  /**
   * Run the matrix products on the SIMD128 kernels where the browser
   * supports WebAssembly SIMD (default true): their relaxed-SIMD build
   * (wasmlm-simd-relaxed.wasm) where it also has relaxed SIMD, else
   * wasmlm-simd.wasm. 'simd128' keeps to wasmlm-simd.wasm; false runs the
   * pure-Go kernels. All give the same tokens; `info.simd` and
   * `info.simdRelaxed` say which run.
   */
  simd?: boolean | 'simd128';
  /**
   * Split the model across this many Web Workers, or 'auto' (the default):
   * autoWorkers(info, navigator.hardwareConcurrency, crossOriginIsolated),
   * which splits a model only where measurement says more workers are faster
   * (big layers; never the default model). Each worker holds about 1/N of the
   * weights and computes its part of every layer and of every prompt block;
   * they swap activations by postMessage, or through shared memory where the
   * page is cross-origin isolated (`info.exchange`), and the tokens are
   * exactly those of one worker. A GGUF model splits at most `headCountKv` ways (a larger
   * number rejects); a llama2.c checkpoint runs in one worker. See
   * web/README.md, "Several workers".
   */
  workers?: number | 'auto';
  /**
   * The KV cache's type: 'f16' halves it (llama.cpp's default), 'f32' keeps
   * full precision; 'auto' (the default): f16 for models over 100M
   * parameters, f32 below.
   */
  kvType?: 'auto' | 'f16' | 'f32';
  /**
   * The default of chat completions' context_shift and n_keep (a request's own win), and of
   * the completions lm.serve's endpoint answers: true, or
   * { nKeep } (n_keep's default, tokens of the prompt after BOS a shift keeps; -1: the whole
   * prompt), lets a chat that fills the context keep them, drop the oldest half of the rest and
   * go on, for models that can (docs/context.md). A request without max_tokens stays within the
   * context. Default false.
   */
  contextShift?: boolean | { nKeep?: number };
  /**
   * The model file's SHA-256 (64 hex digits): the cached copy must match it
   * (see README, "Model cache"); not for a model in parts.
   */
  sha256?: string;
  /**
   * Run the engine build with the OpenAI endpoint that lm.serve needs,
   * wasmlm-serve.wasm (package httpapi and Go's net/http: 2.8 MB more, 0.8 MB
   * gzipped), instead of wasmlm.wasm (default false). A model loaded
   * without it cannot serve: lm.serve rejects with 'serve_failed'.
   */
  serve?: boolean;
  /**
   * Where the forward pass runs. 'auto' (the default): on the GPU through
   * WebGPU where navigator.gpu gives an adapter that is not a fallback
   * (software) one, the GPU path runs the model's architecture and tensor
   * types and its buffers fit the device's limits; on the CPU otherwise,
   * `info.deviceReason` saying why. 'webgpu': on the GPU, any adapter's
   * (a fallback one too), or the load rejects with code
   * 'device_unsupported' naming what is missing. 'cpu': on the CPU,
   * without touching navigator.gpu. The GPU serves one worker: 'webgpu'
   * with workers > 1 rejects with 'invalid_argument' (field 'workers'),
   * and 'auto' with workers > 1 runs on the CPU. `info.device` says where
   * the model runs. See web/README.md, "The device".
   */
  device?: 'auto' | 'webgpu' | 'cpu';
  /**
   * Run the engine in a SharedWorker that every tab of the origin loading the same model
   * with shared: true uses (the same URLs, tokenizer, contextLength, kvType, simd, serve,
   * device and sha256): one copy of the model in memory and one queue, each tab with its
   * own session and KV cache, freed when the tab closes or unloads. Default false. The
   * model must be at a URL (not bytes, a Blob or a blob: URL); it runs in one worker:
   * workers > 1 rejects with 'invalid_argument' (field 'workers'). Where the page cannot
   * (no SharedWorker, as Chrome on Android; no Web Locks; a model not at a URL; wasmlm.js
   * from another origin) it runs in a dedicated worker: `info.shared` false, and
   * `info.sharedReason` says why. See web/README.md, "One model for all tabs".
   */
  shared?: boolean;
  /**
   * Where a source written hf:owner/repo/file.gguf (or
   * hf:owner/repo/file.gguf@revision) downloads from: the source is
   * `${hfEndpoint}/owner/repo/resolve/${revision ?? 'main'}/file.gguf`.
   * Default https://huggingface.co (in Node.js the HF_ENDPOINT environment
   * variable, where it is set). See docs/try-a-model.md.
   */
  hfEndpoint?: string;
}

/** What loading a model would take, in bytes (inspect's memory). */
export interface MemoryEstimate {
  /** The model's bytes held in memory (the file; a split GGUF's parts joined). */
  weights: number;
  /** A session's keys and values, for sessionContextLength positions in kvType. */
  kvCache: number;
  /** A hybrid model's recurrent layers' state (float32, whatever kvType), 0 for others. */
  recurrentState: number;
  /** Everything else: activations, logits, tokenizer, the Go runtime. */
  scratch: number;
  total: number;
  /** The workers the estimate is for: the option's, or the fewest that fit. */
  workers: number;
  /** The most any one of them takes. */
  perWorker: { weights: number; kvCache: number; scratch: number; total: number };
  /** The fewest workers it fits in; null when no split fits. */
  workersNeeded: number | null;
  /** Whether it fits in workers workers. */
  fits: boolean;
  /**
   * The limits: a worker's WebAssembly memory (32-bit: 4 GiB, less the
   * program's own), and navigator.deviceMemory where the browser says less
   * than 8 GiB (null otherwise).
   */
  limits: { worker: number; device: number | null };
  /**
   * What a load on the GPU (device 'auto' or 'webgpu') would take of its
   * memory: the weights, uploaded in their stored form, and the KV cache,
   * which lives there.
   */
  gpu: number;
}

/** What WasmLM.inspect says of a model, from its header alone. */
export interface ModelInspection extends Omit<ModelInfo, 'simdReason' | 'simdRelaxed' | 'workers' | 'generates' | 'pooling' | 'reranks' | 'tokenTypes' | 'classes' | 'device' | 'deviceReason' | 'adapter'> {
  /** The file's chat template source (Jinja), "" when it has none. */
  chatTemplateSource: string;
  /** The files of the model (a split GGUF's parts). */
  parts: number;
  memory: MemoryEstimate;
}

/** inspect's options; load's others are accepted and ignored, so one object serves both calls. */
export interface InspectOptions extends Omit<LoadOptions, 'contextLength' | 'kvType' | 'workers' | 'signal'> {
  contextLength?: number;
  kvType?: 'auto' | 'f16' | 'f32';
  /** Estimate for this many workers ('auto' or omitted: the fewest that fit). */
  workers?: number | 'auto';
  signal?: AbortSignal;
}

/** What a model is; the fields of `wasmlm info`, in camelCase. */
export interface ModelInfo {
  format: 'llama2c' | 'gguf';
  architecture: string;
  vocabSize: number;
  contextLength: number;
  embeddingLength: number;
  feedForwardLength: number;
  blockCount: number;
  headCount: number;
  headCountKv: number;
  /** The width of one attention head (GGUF's attention.key_length; embeddingLength / headCount unless the file says otherwise, as Qwen3's do). */
  keyLength: number;
  ropeFreqBase: number;
  rmsNormEps: number;
  /** The positions a sliding-window layer attends to (Gemma 2 and 3: their KV cache holds only those); absent when no layer slides. */
  slidingWindow?: number;
  sharedOutput: boolean;
  parameters: number;
  /** How many tensors have each type (GGUF's names: F32, F16, Q8_0, ...). */
  tensorTypes: Record<string, number>;
  /** The bytes the tensors of each type hold (vectors as the float32 they are held as): the weights' type is the one with the most. */
  tensorBytes: Record<string, number>;
  fileSize: number;
  bosTokenId: number;
  eosTokenId: number;
  /** GGUF metadata (long arrays summarised). */
  metadata?: Record<string, unknown>;
  /** The tokenizer's kind: "llama" (SentencePiece) or "gpt2" (byte-level BPE), GGUF's tokenizer.ggml.model. */
  tokenizer: string;
  /** Each layer's recipe, layer by layer (Gemma 3's sliding and global layers, SmolLM3's layers without rotations differ). */
  layers: LayerSpec[];
  /** What some families' files say (absent where a model says none of it): the dimensions of a head that rotate, when fewer than keyLength (Phi-4-mini's partial rotary). */
  ropeDimensionCount?: number;
  /** The rope frequency factors the model has: 'long/short' (Phi-3's LongRoPE) or 'freqs'. */
  ropeFactors?: 'long/short' | 'freqs';
  /** LongRoPE's attention factor, and the context above which a session rotates by the long factors. */
  ropeAttnFactor?: number;
  ropeOriginalContextLength?: number;
  /** The rope scaling the file says: 'linear' (positions divided by ropeScalingFactor) or 'yarn' (YaRN with that factor: gpt-oss's 32); absent: none. */
  ropeScaling?: 'linear' | 'yarn';
  ropeScalingFactor?: number;
  /** Every n-th layer has no rotary embeddings (SmolLM3: 4). */
  noRopeInterval?: number;
  /** Granite's multipliers: of the embedding (also Gemma's √dim), of the attention scores (for 1/√keyLength), of each sub-layer's output; the logits are divided by logitScale. */
  embeddingScale?: number;
  attentionScale?: number;
  residualScale?: number;
  logitScale?: number;
  /** Sliding-window models (Gemma 2 and 3): how many layers slide, the pattern (of every n layers the last attends to all positions), and the sliding layers' rope base where it differs. */
  slidingLayers?: number;
  slidingWindowPattern?: number;
  ropeFreqBaseSwa?: number;
  /** How queries and keys are RMS-normalised: 'heads' (each head: Qwen3, Gemma 3) or 'all' (all at once: OLMo 2). */
  qkNorm?: 'heads' | 'all';
  /** Gemma: the queries' scale (1/√query_pre_attn_scalar as llama.cpp derives it), and the soft-caps of the attention scores (Gemma 2) and of the logits (Gemma 2; Gemma 3 when its file says). */
  queryScale?: number;
  attnSoftcap?: number;
  finalSoftcap?: number;
  /** A hybrid model's recurrent layers: the positions its short convolutions span (LFM2: 3), and the bytes of a session's recurrent state (float32, beside the KV cache). */
  shortConvKernel?: number;
  recurrentStateBytes?: number;
  /** A mixture of experts (Qwen3-30B-A3B: 128 experts, 8 a token, each 768 wide; Qwen1.5-MoE's also a shared expert of expertSharedFeedForwardLength). */
  expertCount?: number;
  expertUsedCount?: number;
  expertFeedForwardLength?: number;
  expertSharedFeedForwardLength?: number;
  /** The recurrent layers' shape, as the ssm.* keys say (Qwen3.5's Gated DeltaNet: a convolution over convKernel positions, groupCount query and key heads and timeStepRank value heads of stateSize, innerSize = timeStepRank·stateSize). */
  ssm?: { convKernel: number; innerSize: number; stateSize: number; timeStepRank: number; groupCount: number };
  /** Why the model cannot be split across workers (OLMo 2 normalises every head of q and k at once); absent when it can. */
  splitError?: string;
  /** The chat template family used by chat.completions ("plain": contents joined by "\n"); null if unrecognised. */
  chatTemplate: string | null;
  /** The positions this model's session holds. */
  sessionContextLength: number;
  /** Set when sessionContextLength exceeds the positions the model was trained for (contextLength), which the load option contextLength allows as llama.cpp does: output degrades past them. load logs it once with console.warn. */
  warning?: string;
  /** The session's KV cache type: the load option kvType, 'auto' resolved for the model (F16 above 100M parameters). */
  kvType: 'f16' | 'f32';
  /** Whether the matrix products run on the SIMD128 kernels. */
  simd: boolean;
  /** Whether those are the relaxed-SIMD build (wasmlm-simd-relaxed.wasm). */
  simdRelaxed: boolean;
  /**
   * Why they do not, when simd is false: the `simd: false` load option, a
   * browser without WebAssembly SIMD, or wasmlm-simd.wasm failing to load.
   */
  simdReason?: string;
  /** Where the forward pass runs: on the GPU through WebGPU, or on the CPU (the load option device). */
  device: 'webgpu' | 'cpu';
  /**
   * Why not on the GPU, when device is 'cpu': the `device: 'cpu'` load
   * option, no WebGPU or no adapter, a fallback adapter (which 'auto'
   * skips), what the GPU path lacks for this model, a model split across
   * workers, a device lost earlier on this page.
   */
  deviceReason?: string;
  /** The GPU's adapter, when device is 'webgpu' (GPUAdapterInfo; fallback: a software adapter such as SwiftShader). */
  adapter?: GPUAdapterDescription;
  /** The number of Web Workers the model runs on (the load option workers). */
  workers: number;
  /**
   * How a split model's workers (workers > 1) exchange their parts of each step:
   * 'shared-memory' (SharedArrayBuffer and Atomics.wait) where the page is cross-origin
   * isolated (served with COOP and COEP) and in Node.js (unless WASMLM_SHARED_MEMORY=0),
   * else 'messages' (postMessage). Absent on one worker.
   */
  exchange?: 'shared-memory' | 'messages';
  /** Loaded with shared: true: whether it runs in a SharedWorker (true) or fell back to a dedicated worker (false). Absent otherwise. */
  shared?: boolean;
  /** Why a shared: true load runs in a dedicated worker, when shared is false. */
  sharedReason?: string;
  /**
   * Whether the model generates text. An embedding model (bert, nomic-bert) does not:
   * generate, stream and chat.completions.create reject with code 'unsupported_model';
   * it embeds (embeddings.create) or, a reranker, ranks (rerank).
   */
  generates: boolean;
  /**
   * How embeddings.create pools the model's final states into a vector: the mean of the
   * tokens' (decoders, and encoders whose file says so), the first ([CLS]) token's, the
   * last token's (Qwen3-Embedding), or 'rank': a reranker, which ranks rather than embeds.
   * The vectors have embeddingLength values.
   */
  pooling: 'mean' | 'cls' | 'last' | 'rank';
  /** Whether the model is a reranker (rerank scores documents against a query). */
  reranks: boolean;
  /** An encoder's token types (BERT's segment embeddings); absent for a decoder. */
  tokenTypes?: number;
  /** A reranker's classification head's outputs (its first is the score); absent otherwise. */
  classes?: number;
}

/** A WebGPU adapter, as GPUAdapterInfo describes it (ModelInfo.adapter). */
export interface GPUAdapterDescription {
  vendor: string;
  architecture: string;
  description: string;
  /** isFallbackAdapter: a software implementation (SwiftShader), which device 'auto' skips. */
  fallback: boolean;
}

/** One layer's recipe (ModelInfo.layers): how it mixes positions, where it normalises, its attention, its feed-forward. */
export interface LayerSpec {
  /** How the layer mixes positions: softmax attention over its KV cache, or a recurrent layer's fixed-size state: LFM2's gated short convolution, Qwen3.5's Gated DeltaNet, Granite 4's Mamba-2. */
  kind: 'attention' | 'shortconv' | 'deltanet' | 'mamba2';
  /** Where it normalises around each sub-layer f: 'pre' x + f(norm(x)), 'post' x + norm(f(x)) (OLMo 2), 'pre+post' (Gemma), 'residual' norm(x + f(x)) (BERT). */
  norms: 'pre' | 'post' | 'pre+post' | 'residual';
  /** Queries and keys RMS-normalised: each head (Qwen3, Gemma 3) or all at once (OLMo 2); absent: not. */
  qkNorm?: 'heads' | 'all';
  attention: {
    /** The positions a query attends to, its own included (sliding-window layers); absent: every position. */
    window?: number;
    /** No rotary embeddings in this layer (SmolLM3's every 4th). */
    nope?: boolean;
    /** The layer's rotary base and linear scaling, where they are not the model's (Gemma 3's sliding layers). */
    ropeFreqBase?: number;
    ropeScale?: number;
    /** The attention's scale: of the scores (Granite), or with scaleQueries of the queries (Gemma); absent: 1/√keyLength on the scores. */
    scale?: number;
    scaleQueries?: boolean;
    /** The scores' soft-cap (Gemma 2). */
    softcap?: number;
    /** The query projection also gives each head's output gate, and the heads' output is multiplied by σ(gate) (Qwen3.5). */
    gated?: boolean;
    /** The layer rotates without the file's rope_freqs, which only the other layers use (Gemma 4's sliding layers). */
    noRopeFactors?: boolean;
    /** Each value head is RMS-normalised, without weights, before it is cached (Gemma 4). */
    valueNorm?: boolean;
    /** The layer keeps no cache of its own: it attends over layer kvLayer's (Gemma 4's last layers). */
    sharedKv?: boolean;
    kvLayer?: number;
    /** Each head has an attention sink, a learned logit in its softmax's denominator (gpt-oss). */
    sinks?: boolean;
  };
  /** The feed-forward: SwiGLU, GeGLU (Gemma), GELU without a gate (BERT), or a mixture of experts (moe). */
  ffn: 'swiglu' | 'geglu' | 'gelu' | 'moe';
  /** A mixture of experts' recipe (ffn 'moe'): `used` of `experts` chosen for each token by the router's logits — a softmax over all of them ('softmax'), or over the chosen ones only ('softmax_top_k': gpt-oss) — their weights renormalised to sum 1 (normTopK: Qwen3-MoE) and scaled (weightsScale), beside a shared expert (shared: Qwen1.5/2-MoE, Qwen3.5-MoE); each expert's gated unit (gpt-oss's clamped 'swiglu_oai'). */
  moe?: {
    experts: number;
    used: number;
    /** How the router's logits become probabilities: a softmax over the experts, a softmax over the chosen ones only (gpt-oss), or each expert's sigmoid (LFM2-MoE, chosen with the layer's selection bias, weighted without it). */
    gating: 'softmax' | 'softmax_top_k' | 'sigmoid';
    normTopK?: boolean;
    weightsScale?: number;
    shared?: boolean;
    activation: 'swiglu' | 'geglu' | 'swiglu_oai';
    /** The layer's dense feed-forward runs beside the experts, each branch with norms of its own, and the two are added (Gemma 4). */
    dense?: boolean;
    /** The router reads the residual stream normalised, scaled by 1/√dim and a weight per channel, rather than the experts' input (Gemma 4). */
    routerNorm?: boolean;
  };
  /** Each sub-layer's output is multiplied by it before it joins the residual stream (Granite). */
  residualScale?: number;
  /** The layer's head width, key/value heads and feed-forward width, where they are not the model's (Gemma 4's sliding layers and shared-cache layers). */
  headDim?: number;
  kvHeads?: number;
  hiddenDim?: number;
  /** The layer adds its slice of the per-layer embeddings after its feed-forward (Gemma 4). */
  perLayerInput?: boolean;
  /** The residual stream is AltUp's streams, predicted before the layer and corrected after it, with a LAuReL branch beside attention and the per-layer embedding added to the streams but the active one (Gemma 3n). */
  altup?: boolean;
  /** The feed-forward's gate keeps only what exceeds its mean by this many standard deviations (Gemma 3n's first 10 layers). */
  gateSparsity?: number;
}

export interface TokenizeOptions {
  /** Add the vocabulary's BOS token (default true). */
  addBos?: boolean;
  /** Parse special-token text such as "<s>" into those tokens (default false). */
  special?: boolean;
}

/**
 * Generation options. Omitted fields take the defaults of the `wasmlm
 * generate` CLI. Wrong types and out-of-range values reject with an Error
 * naming the field (code "invalid_argument").
 */
export interface GenerateOptions {
  /** Tokens to generate at most (default 256; 0: until the context is full). */
  maxTokens?: number;
  /** Softmax temperature (default 0.8); 0 is greedy. */
  temperature?: number;
  /** Keep the k most likely tokens (default 40; 0: off). */
  topK?: number;
  /** Nucleus sampling: keep the most likely tokens up to this probability mass (default 0.95; 1: off). */
  topP?: number;
  /** Drop tokens less likely than minP × the most likely (default 0.05; 0: off). */
  minP?: number;
  /** llama.cpp's repeat penalty over the last 64 tokens (default 1: off). */
  repeatPenalty?: number;
  /** OpenAI's presence penalty, in [-2, 2] (default 0). */
  presencePenalty?: number;
  /** OpenAI's frequency penalty, in [-2, 2] (default 0). */
  frequencyPenalty?: number;
  /** PRNG seed, an integer in [0, 2^53); omitted: a random one, reported in the result. */
  seed?: number;
  /** Stop strings (at most 16): the text ends before the first one. */
  stop?: string | string[];
  /** Add each token's sampling trace to the stream's chunks. */
  trace?: boolean;
  /** Aborts the generation; it then resolves with finishReason "abort". */
  signal?: AbortSignal;
  /**
   * Called in the page after each evaluated block of prompt tokens (32
   * at a time; a cached prefix is not evaluated again), the last call with
   * done === total: for a progress bar while a long prompt runs before the
   * first token. A callback that throws does not stop the generation.
   */
  onPromptProgress?: (progress: { done: number; total: number }) => void;
  /** Hold the text to JSON or a JSON schema (OpenAI's response_format; the keys inside as OpenAI spells them). */
  responseFormat?: ResponseFormat | null;
  /** Hold the text to a GBNF grammar (llama.cpp's syntax, from its rule root); not with a JSON responseFormat. */
  grammar?: string | null;
}

/** A JSON Schema, as a plain object (converted to a grammar: see grammar/jsonschema for the keywords). */
export type JSONSchema = { [keyword: string]: unknown } | boolean;

/** OpenAI's response_format. */
export type ResponseFormat =
  | { type: 'text' }
  /** Any JSON object; with schema (llama.cpp's form), JSON valid for it. */
  | { type: 'json_object'; schema?: JSONSchema }
  /** name: 1 to 64 letters, digits, '_' or '-'. */
  | { type: 'json_schema'; json_schema: { name: string; description?: string; schema: JSONSchema; strict?: boolean } };

/** A function the model may call (OpenAI's tools[i]). */
export interface Tool {
  type: 'function';
  function: {
    /** 1 to 64 letters, digits, '_' or '-'; unique among the tools. */
    name: string;
    description?: string;
    /** The JSON schema of the arguments, an object schema; omitted: no arguments. */
    parameters?: { [keyword: string]: unknown };
    /** Accepted; a forced call always matches its parameters. */
    strict?: boolean;
  };
}

/** OpenAI's tool_choice: 'auto' (the default with tools), 'none', 'required', or one function. */
export type ToolChoice = 'auto' | 'none' | 'required' | { type: 'function'; function: { name: string } };

/** A call the model made (message.tool_calls[i]); arguments is a JSON text. */
export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** A tool call in a streamed delta: the first with index, id, type and name (arguments ''), then its arguments. */
export interface ToolCallDelta {
  index: number;
  id?: string;
  type?: 'function';
  function: { name?: string; arguments: string };
}

export type FinishReason = 'stop' | 'length' | 'context' | 'abort';

export interface Timings {
  timeToFirstTokenMs: number;
  prefillMs: number;
  prefillTokens: number;
  prefillTokensPerSecond: number;
  decodeMs: number;
  decodeTokens: number;
  decodeTokensPerSecond: number;
  /** Time spent handing control to the worker's event loop between tokens. */
  yieldMs: number;
  /**
   * With workers > 1: the time worker 0 spent waiting for the other workers'
   * parts of its gathers (the exchange's latency, plus any wait for a slower
   * worker), and how many gathers it waited for; 0 with one worker.
   */
  exchangeMs: number;
  exchanges: number;
}

export interface GenerateResult {
  /** The generated text (the prompt excluded). */
  text: string;
  /** Generated token ids. */
  tokens: number[];
  /** The prompt's token ids (empty if aborted before it started). */
  promptTokens: number[];
  finishReason: FinishReason;
  /** The seed used: give it back to reproduce the run. */
  seed: number;
  /** contextShifts, contextShiftedTokens: a chat's context shifts (context_shift), else 0. */
  usage: { promptTokens: number; completionTokens: number; totalTokens: number; contextShifts: number; contextShiftedTokens: number };
  timings: Timings;
  /**
   * The size of the worker's WebAssembly memory when the generation ended, in
   * bytes: the model, its KV cache and the Go heap. WebAssembly memory never
   * shrinks, so this is the worker's peak so far.
   */
  wasmMemoryBytes: number;
  /**
   * With workers > 1: every worker's memory in bytes, worker 0's (the
   * wasmMemoryBytes above) first; null for a worker that did not answer.
   */
  wasmMemoryBytesPerWorker?: Array<number | null>;
  /** A chat's: the reply's reasoning ("<think>...</think>", trimmed; "" if none) and the rest, its content. */
  reasoning?: string;
  content?: string;
  /** A chat's with tools (tool_choice not 'none'): the calls parsed from the reply ([] for none); content is then the rest. */
  toolCalls?: Array<{ id: string; name: string; arguments: string }>;
}

export interface TraceCandidate {
  id: number;
  /** The text this token would add. */
  text: string;
  logit: number;
  /** Probability from the model (temperature 1). */
  prob: number;
  /** After temperature. */
  probTemp: number;
  /** After top-k, top-p and min-p, renormalised (0: cut). */
  probFinal: number;
}

export interface Trace {
  /** The ten most likely candidates, most likely first. */
  top: TraceCandidate[];
  /** Candidates left after the cuts. */
  kept: number;
  chosen: number;
  chosenRank: number;
  greedy: boolean;
}

export interface StreamChunk {
  /** Text this token makes final (may be empty while a UTF-8 character or possible stop string is held back). */
  text: string;
  /** The token id; -1 for held-back text released at the end. */
  token: number;
  /** With options.trace. */
  trace?: Trace;
}

/** An async iterable of chunks; break out of the loop to abort. */
export interface TokenStream extends AsyncIterableIterator<StreamChunk> {
  /** Resolves when the generation ends, to what generate() would. */
  result: Promise<GenerateResult>;
}

export type ChatMessage =
  | { role: 'system' | 'developer' | 'user' | string; content: string | null | Array<{ type: 'text'; text: string }>; name?: string }
  /** An assistant's turn; with tool_calls, the calls it made (content may be null). */
  | { role: 'assistant'; content: string | null | Array<{ type: 'text'; text: string }>; tool_calls?: ToolCall[]; reasoning_content?: string }
  /** A call's result, answering tool_call_id. */
  | { role: 'tool'; tool_call_id: string; content: string | Array<{ type: 'text'; text: string }>; name?: string };

/** A saved session: its name and how many tokens of conversation it holds. */
export interface SavedSession {
  name: string;
  tokens: number;
}

/**
 * OpenAI's chat completion request, read by the same Go code as the HTTP API's
 * /v1/chat/completions: the same checks, messages and OpenAI's defaults (temperature 1,
 * top_p 1, top_k/min_p/penalties off, no max_tokens: until the context is full), so the same
 * request and seed give the same tokens. Every field but signal must be JSON.
 */
export interface ChatCompletionRequest {
  messages: ChatMessage[];
  /**
   * A session saved with lm.saveSession(name) to restore first: the request's prompt, if it
   * begins with the saved conversation, evaluates only what follows (not sent to the Go side).
   */
  session?: string;
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  model?: string;
  max_tokens?: number;
  max_completion_tokens?: number;
  temperature?: number;
  top_p?: number;
  seed?: number;
  stop?: string | string[];
  presence_penalty?: number;
  frequency_penalty?: number;
  /** Token id → bias in [-100, 100], added to its logit. */
  logit_bias?: Record<string, number> | null;
  /**
   * Each token's log-probability (choices[].logprobs), and those of its top_logprobs (0–20)
   * most likely alternatives: the log-softmax of the model's raw logits, before penalties,
   * temperature and a grammar's mask.
   */
  logprobs?: boolean;
  top_logprobs?: number;
  /** llama.cpp server extensions. */
  top_k?: number;
  min_p?: number;
  repeat_penalty?: number;
  /**
   * false switches a thinking template's reasoning off (Qwen3: the empty think block after the
   * assistant opening); default true. Ignored by templates without the switch.
   */
  enable_thinking?: boolean;
  /**
   * llama.cpp's form of the template's options: enable_thinking (it must agree with the field
   * above) and date_string, the day the template writes (Llama 3.x's tool prompt, gpt-oss's
   * system message; without it gpt-oss's prompt has today's UTC date) are read.
   */
  chat_template_kwargs?: { enable_thinking?: boolean; date_string?: string; [key: string]: unknown } | null;
  /** Only 1. */
  n?: number;
  /**
   * Go past a full context as llama.cpp's server does: keep the first n_keep tokens (after BOS),
   * drop the oldest half of the rest, re-rotate the cached keys, go on; a prompt longer than the
   * context is cut alike. Needs max_tokens. Default: load's contextShift. A model with
   * recurrent layers cannot (invalid_argument, field context_shift). See docs/context.md.
   */
  context_shift?: boolean;
  /** Tokens of the prompt after BOS a context shift keeps (-1: the whole prompt); default 0. */
  n_keep?: number;
  signal?: AbortSignal;
  /** JSON or a JSON schema; with tools, only with tool_choice 'none'. */
  response_format?: ResponseFormat | null;
  /** A GBNF grammar (llama.cpp's extension); with tools, only with tool_choice 'none'. */
  grammar?: string | null;
  /** Functions the model may call (1 to 128). */
  tools?: Tool[] | null;
  /** Only with tools; default 'auto'. 'required' or a function forces a call (sampled under its grammar). */
  tool_choice?: ToolChoice | null;
  /** Only with tools: whether a reply may hold several calls (default true; false keeps the first). */
  parallel_tool_calls?: boolean | null;
}

/** OpenAI's finish reasons ('tool_calls': the reply is calls), plus "abort" when the request's signal aborted it. */
export type ChatFinishReason = 'stop' | 'length' | 'tool_calls' | 'abort';

export interface ChatCompletion {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  /**
   * message.content is the reply without its reasoning; reasoning_content, present when the reply
   * started with "<think>...</think>", is that reasoning (trimmed), as llama.cpp's server returns it.
   */
  choices: Array<{
    index: 0;
    /** content is null when the reply is only tool calls. */
    message: { role: 'assistant'; content: string | null; reasoning_content?: string; tool_calls?: ToolCall[] };
    /** null unless the request asks for logprobs. */
    logprobs: ChatLogprobs | null;
    finish_reason: ChatFinishReason;
  }>;
  usage: ChatUsage;
  /** Where the time went, as the HTTP API's and llama.cpp's server's completions say. */
  timings: ChatTimings;
  seed: number;
}

/** A token's text, log-probability and UTF-8 bytes. */
export interface TokenLogprob { token: string; logprob: number; bytes: number[] }

/** OpenAI's choices[].logprobs: every generated token (the reasoning's and tool calls' too). */
export interface ChatLogprobs {
  content: Array<TokenLogprob & { top_logprobs: TokenLogprob[] }>;
  refusal: null;
}

export interface ChatCompletionChunk {
  id: string;
  object: 'chat.completion.chunk';
  created: number;
  model: string;
  /**
   * A delta holds the role (first chunk), a piece of the content, a piece of the reasoning
   * (reasoning_content), or a piece of a tool call (after the content, once the reply is whole).
   */
  choices: Array<{
    index: 0;
    delta: { role?: 'assistant'; content?: string; reasoning_content?: string; tool_calls?: ToolCallDelta[] };
    /** With logprobs, the tokens whose text this chunk's delta is the first to carry. */
    logprobs: ChatLogprobs | null;
    finish_reason: ChatFinishReason | null;
  }>;
  usage?: ChatUsage;
  /** With usage (stream_options.include_usage), on its chunk: as ChatCompletion's. */
  timings?: ChatTimings;
}

/** A chat completion's timings (llama.cpp-style, as the HTTP API's): milliseconds and rates. */
export interface ChatTimings {
  /** Waiting for the model's earlier requests. */
  queue_ms: number;
  time_to_first_token_ms: number;
  prefill_ms: number;
  /** The prompt tokens evaluated (those the session did not hold already). */
  prefill_tokens: number;
  prefill_tokens_per_second: number;
  decode_ms: number;
  decode_tokens: number;
  decode_tokens_per_second: number;
}

/** A chat completion's tokens; the context shifts' only when one happened (context_shift). */
export interface ChatUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  /** How many times the context shifted (a prompt cut to fit counts one). */
  context_shifts?: number;
  /** How many tokens the shifts dropped in all. */
  context_shifted_tokens?: number;
}

export interface ChatCompletionStream extends AsyncIterableIterator<ChatCompletionChunk> {
  /** Aborts the generation, like the OpenAI SDK's Stream.controller. */
  controller: AbortController;
  result: Promise<GenerateResult>;
}

export interface EmbeddingRequest {
  /** A text, or up to 2048 texts; none may be empty. */
  input: string | string[];
  /**
   * 'float' (the default): each embedding a number[] (OpenAI's shape; the values are
   * float32s, exactly); 'base64': the base64 of its little-endian float32 bytes, as
   * OpenAI encodes it.
   */
  encoding_format?: 'float' | 'base64';
  /** If given, it must be the model's embedding length (info.embeddingLength): wasmlm does not shorten embeddings. */
  dimensions?: number;
  /** Cut a text longer than the context to fit (default false: it rejects with code 'prompt_too_long'). */
  truncate?: boolean;
  /** Scale each embedding to unit length (default true, as llama.cpp's server does); false: as pooled. */
  normalize?: boolean;
  /** Aborts the call: it rejects with code 'aborted'. Or in the second argument, as with the OpenAI SDK. */
  signal?: AbortSignal;
  /** Accepted and ignored (OpenAI's requests have them): the model is the loaded one. */
  model?: string;
  user?: string;
}

export interface EmbeddingResponse<E = number[]> {
  object: 'list';
  /** One embedding per input, in the inputs' order. */
  data: Array<{ object: 'embedding'; index: number; embedding: E; truncated?: true }>; // truncated: the text was cut to fit (truncate: true)
  /** The model's name (the load option name). */
  model: string;
  /** The tokens evaluated, special tokens included ([CLS] … [SEP], BOS). */
  usage: { prompt_tokens: number; total_tokens: number };
}

export interface RerankRequest {
  query: string;
  /** Up to 2048 texts to score against query. */
  documents: string[];
  /** Return the top_n most relevant (an integer >= 1; default: all). */
  top_n?: number;
  /** Add each result's document, { text } (default false). */
  return_documents?: boolean;
  /** Cut a document that does not fit the context with the query (default false: the call rejects with code 'prompt_too_long'). */
  truncate?: boolean;
  /** Aborts the call: it rejects with code 'aborted'. */
  signal?: AbortSignal;
  /** Accepted and ignored. */
  model?: string;
}

export interface RerankResponse {
  object: 'list';
  model: string;
  /**
   * The most relevant document first (equal scores in the documents' order), as llama.cpp's
   * server sorts them. relevance_score is the reranker's raw score (a logit: higher is more
   * relevant), as llama.cpp's server reports it; index is the document's in the request.
   */
  results: Array<{ index: number; relevance_score: number; document?: { text: string } }>;
  /** The tokens of every (query, document) pair, special tokens included. */
  usage: { prompt_tokens: number; total_tokens: number };
}

/**
 * The code of every error wasmlm.js rejects with. The engine's (Go's policy.CodeOf and the
 * bridge's), the same in every host, and the page's own for what fails around the engine.
 */
export type ErrorCode =
  | 'invalid_argument'  // an argument or option is wrong (field and param name it): fix the call
  | 'invalid_model'     // the model's bytes are malformed, truncated or inconsistent, or its weights not finite
  | 'unsupported_model' // a well-formed model this engine cannot run (architecture, tensor type, tokenizer),
                        // or a call the model cannot do: generating with an embedding model, rerank
                        // with a model that does not rerank, embeddings from a reranker
  | 'prompt_too_long'   // the prompt does not fit in the context
  | 'no_model'          // the model was unloaded (every call after unload(), and those it cut short)
  | 'js_exception'      // your code threw: a callback (onProgress), a getter of an argument
  | 'exchange_failed'   // the workers of a split model lost touch: load the model again
  | 'device_unsupported' // device: 'webgpu' cannot be honoured: no WebGPU adapter, an architecture or tensor
                        // type the GPU path lacks, buffers over the device's limits, a model too large
                        // for one worker
  | 'device_lost'       // the model's GPU device was lost mid-call: the model is done (later calls reject
                        // the same way); load it again, and device 'auto' then runs it on the CPU
  | 'busy'              // the engine was generating already (the page queues instead; not seen there)
  | 'internal'          // a bug: the call failed in a way it never should; the runtime goes on
  | 'fetch_failed'      // the model, its tokenizer or wasmlm.wasm (wasmlm-serve.wasm) could not be read: an
                        // HTTP error status (then status), the network, an unreadable Blob
  | 'worker_failed'     // a worker could not start (refused, wasmlm.worker.js or wasmlm.wasm missing or
                        // broken) or died (the Go program stopped, an uncaught error): load the model again
  | 'aborted'           // the signal of a load, embeddings.create or rerank aborted it (the Error's name is
                        // 'AbortError'; a load's cause is the signal's reason)
  | 'model_too_large'   // the model does not fit the workers asked for (or any): memory and workersNeeded say why
  | 'integrity_failed'  // a downloaded model's SHA-256 is not the sha256 option's
  | 'storage_failed'    // the model cache could not store a file (storage full, denied); load reads
                        // from the network instead, WasmLM.cache's calls reject with it; saveSession
                        // could not write its file, or there is no OPFS
  | 'session_not_found' // restoreSession(name), or a chat's session, names no saved session
  | 'session_mismatch'  // the saved session is of another model or KV type (or not a session)
  | 'serve_failed'      // lm.serve could not serve: the model was loaded without { serve: true }, or
                        // the Service Worker could not be registered or take control of the page
                        // (no secure context, the page outside workerScope, the browser refused)
  | 'error';            // anything else

/**
 * Every rejection of wasmlm.js is an Error with a code. Generations aborted by their signal do
 * not reject: they resolve with finishReason "abort"; embeddings and rerankings, which have no
 * partial result, reject with code 'aborted'.
 */
export interface WasmLMError extends Error {
  code: ErrorCode;
  /** For an invalid option or argument: its name ("topK", "stop[1]"; in chat.completions.create, the request field as OpenAI names it: "top_k", "messages[0].content"). */
  field?: string;
  /** The same name as OpenAI's API spells it ("top_k", "stop[1]"). */
  param?: string;
  /** With code fetch_failed: the HTTP status of the response, when there was one. */
  status?: number;
  /** With code model_too_large: what the model takes, and the workers that would fit it (null: none). */
  memory?: MemoryEstimate;
  workersNeeded?: number | null;
}

export declare const CACHE_NAME: string;
/** The most workers the load option workers: 'auto' uses. */
export declare const MAX_AUTO_WORKERS: number;
/**
 * How many workers the load option workers: 'auto' splits a model across:
 * as many as each keep enough of every layer's weights to pay for the
 * exchanges between workers (measured: 1.5 MiB with the SIMD kernels by
 * messages, 1.25 MiB through shared memory, 256 KiB with pure Go; a layer's
 * bytes counted at most 17/16 a weight), at most hardwareConcurrency − 1 but
 * at least 2 (on 2 cores both compute), MAX_AUTO_WORKERS and the model's
 * key/value heads, at least 1; 1 for a llama2.c checkpoint.
 * info: lm.info, or WasmLM.inspect's result; info.simd false counts the
 * pure-Go kernels, anything else the SIMD ones (load's default).
 * sharedMemory: whether the workers would exchange through shared memory
 * (the page is cross-origin isolated); false by default.
 * An info that is not an object throws an invalid_argument TypeError.
 */
export declare function autoWorkers(
  info: Pick<ModelInfo, 'format' | 'fileSize' | 'parameters' | 'blockCount' | 'embeddingLength' | 'feedForwardLength' | 'headCount' | 'headCountKv'> & Partial<Pick<ModelInfo, 'keyLength' | 'simd'>>,
  hardwareConcurrency: number | undefined,
  sharedMemory?: boolean,
): number;

/** An entry of the model cache. */
export interface CacheEntry {
  url: string;
  /** Bytes stored (null while another tab writes the file). */
  size: number | null;
  /** The server's size for the file, when known. */
  total?: number;
  /** Whether every byte is stored (a model is read from the cache only then). */
  complete: boolean;
  /** The SHA-256 the bytes were verified to have (the sha256 load option), when they were. */
  sha256?: string;
  storage: 'opfs' | 'cache-storage';
  /** When the entry was last written, in ms since 1970. */
  modified?: number;
}

/** WasmLM.cache. delete and clear wait for a download of the entry (in any tab) to end. */
export interface ModelCache {
  list(): Promise<CacheEntry[]>;
  /** Deletes url's entry (for a split model's first part, every part's); whether there was one. */
  delete(url: string | URL): Promise<boolean>;
  /** Deletes every entry; how many there were. */
  clear(): Promise<number>;
}

export declare class WasmLM {
  private constructor();
  /**
   * Loads a model into a new Web Worker (in Node.js a worker_threads Worker); no source: the default
   * model beside wasmlm.js, which a bundled app imports from wasmlm/default-model instead.
   */
  static load(source?: ModelSource | null, options?: LoadOptions): Promise<WasmLM>;
  /** Deletes cached model downloads: WasmLM.cache.clear(), without its count. */
  static clearCache(): Promise<void>;
  /** The model cache: what it holds, and deleting from it. */
  static readonly cache: ModelCache;
  /**
   * What a model is and what loading it would take, from its GGUF header
   * alone (a Range request for a URL's first bytes, a slice of a Blob).
   */
  /**
   * The page's own OpenAI endpoint: a Service Worker answers fetches under options.scope ('/v1/')
   * with the OpenAI-compatible API over options.model (by default the last model loaded with
   * { serve: true } that is still loaded): options.model.serve(options).
   */
  static serve(options?: ServeOptions & { model?: WasmLM }): Promise<Server>;
  static inspect(source?: ModelSource | null, options?: InspectOptions): Promise<ModelInspection>;
  readonly info: ModelInfo;
  readonly name: string;
  tokenize(text: string, options?: TokenizeOptions): Promise<number[]>;
  detokenize(ids: readonly number[] | Int32Array | Uint32Array | Uint16Array): Promise<string>;
  /** Generations run one at a time: a call made while another runs waits its turn. */
  generate(prompt: string, options?: GenerateOptions): Promise<GenerateResult>;
  stream(prompt: string, options?: GenerateOptions): TokenStream;
  /**
   * Saves the conversation the model's session holds (tokens, KV cache, recurrent state, last
   * logits) under name in the origin private file system, tied to this model and its KV type;
   * replaces a session of that name. See docs/sessions.md.
   */
  saveSession(name: string): Promise<SavedSession & { bytes: number }>;
  /**
   * Restores the session saved under name: the next generation whose prompt begins with its
   * conversation evaluates only what follows. Rejects with code session_not_found, or
   * session_mismatch for a session of another model or KV type.
   */
  restoreSession(name: string): Promise<SavedSession>;
  /** The sessions saved with this model and KV type, oldest first; delete: whether one was. */
  readonly sessions: {
    list(): Promise<Array<SavedSession & { kvType: 'f16' | 'f32'; savedAt: string; bytes: number }>>;
    delete(name: string): Promise<boolean>;
  };
  readonly chat: {
    readonly completions: {
      create(body: ChatCompletionRequest & { stream?: false }, options?: { signal?: AbortSignal }): Promise<ChatCompletion>;
      create(body: ChatCompletionRequest & { stream: true }, options?: { signal?: AbortSignal }): Promise<ChatCompletionStream>;
    };
    /**
     * The tokens a chat request's prompt takes: its messages and tools as the model's chat template
     * writes them, ending with the reply's opening (a completion's usage.prompt_tokens). Counted
     * even past the context (where create rejects), without generating and without waiting for one.
     */
    countTokens(body: Pick<ChatCompletionRequest, 'messages'> & Partial<ChatCompletionRequest>): Promise<number>;
  };
  /**
   * OpenAI-shaped embeddings of the input texts, from any model (a decoder's are the mean of
   * its final states; an embedding model's as its file says: info.pooling). Embeddings wait
   * their turn with generations, in call order.
   */
  readonly embeddings: {
    create(body: EmbeddingRequest & { encoding_format?: 'float' }, options?: { signal?: AbortSignal }): Promise<EmbeddingResponse<number[]>>;
    create(body: EmbeddingRequest & { encoding_format: 'base64' }, options?: { signal?: AbortSignal }): Promise<EmbeddingResponse<string>>;
  };
  /** Scores documents against a query with a reranker (info.reranks), as llama.cpp's server does. */
  rerank(body: RerankRequest, options?: { signal?: AbortSignal }): Promise<RerankResponse>;
  /**
   * Serves this model as an OpenAI-compatible API to the page's own fetches under scope: a
   * Service Worker (wasmlm.sw.js) hands each request to this page, which runs it with package
   * httpapi's handler in the model's worker (the same validation, errors and Server-Sent Events
   * as `wasmlm serve`), so `new OpenAI({ baseURL: server.baseURL, dangerouslyAllowBrowser: true })`
   * streams from the model. Served generations take their turn with the page's own calls.
   * The model must be loaded with { serve: true } (LoadOptions.serve), which runs the engine build
   * that has the endpoint; otherwise, and when the Service Worker cannot be registered, it rejects
   * with code 'serve_failed'. Outside a browser page (Node.js, Deno, Bun, a worker) it rejects
   * with 'serve_failed' at once, saying what works there: lm.chat.completions.create, or the
   * HTTP API of `wasmlm serve` (the Go CLI).
   */
  serve(options?: ServeOptions): Promise<Server>;
  /**
   * The model's worker: a SharedWorker's (shared: true) loads, tabs, their sessions and
   * WebAssembly memory; a dedicated worker's shared is false and it counts this page.
   */
  workerStats(): Promise<WorkerStats>;
  /**
   * Terminates the worker; pending and later calls reject. A model in a SharedWorker
   * stays loaded for the other tabs: only this tab's session is freed. In Node.js a program
   * need not call it to exit: the worker threads hold the process open only while a call is pending.
   */
  unload(): void;
}

/** lm.workerStats(): what the model's worker holds. */
export interface WorkerStats {
  /** Whether the worker is a SharedWorker (the load option shared, where the page has one). */
  shared: boolean;
  /** How many times the worker loaded a model: 1, however many tabs share it. */
  loads: number;
  /** The tabs (pages, by their Web Locks client id) connected to it; a dedicated worker's: 1. */
  tabs: number;
  /** The loads connected to it: a page that loads the model twice (or uses the Prompt API over a load of its own) counts twice; a dedicated worker's: 1. */
  connections: number;
  /** The tabs' sessions: open, and allocated (their KV cache made, at their first call). A dedicated worker's: its page's session, open: 1, allocated once a call has used it. */
  sessions: { open: number; allocated: number };
  /** The worker's WebAssembly memory, in bytes (it never shrinks: its peak). */
  wasmMemoryBytes: number | null;
}

/** Options of lm.serve. */
export interface ServeOptions {
  /**
   * The path under which the API answers, standing for /v1/ (default '/v1/'); starts and ends with
   * '/', and holds neither the page nor wasmlm's files. A page, and the pages of a site, may serve several.
   */
  scope?: string;
  /**
   * The Service Worker registration's scope: the pages it controls, which must include this page
   * (default: the folder of wasmlm.sw.js; above it the server must send Service-Worker-Allowed).
   */
  workerScope?: string;
  /**
   * The URL of wasmlm.sw.js, on the page's origin (default: the one beside wasmlm.js). A Service
   * Worker controls only the pages under its folder: with wasmlm in a subfolder, a bundler's assets
   * folder or a CDN, copy wasmlm.sw.js (it imports nothing) to the site's root and give its URL.
   */
  serviceWorker?: string | URL;
}

/** What lm.serve resolves to. */
export interface Server {
  readonly scope: string;
  /** location.origin + scope without its last '/': the openai client's baseURL. */
  readonly baseURL: string;
  readonly registration: ServiceWorkerRegistration;
  /** This page stops answering (the Service Worker stays registered for the next serve). */
  close(): void;
  /** close(), and unregisters the Service Worker. */
  unregister(): Promise<boolean>;
}

export default WasmLM;
