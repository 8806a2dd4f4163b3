// What the scripts that drive the official openai npm client share: how
// they keep an error the client threw (the Go tests read it as
// clientError), run a call that may throw, and read a streamed chat
// completion.

// errorOf keeps what the client made of an error response.
export function errorOf(e) {
  return {
    name: e.constructor.name, status: e.status ?? null, type: e.type ?? null, param: e.param ?? null, code: e.code ?? null,
    message: e.message, retry_after: e.headers?.get?.("retry-after") ?? null, retry_after_ms: e.headers?.get?.("retry-after-ms") ?? null,
  };
}

// attempt runs fn: {ok: what it returned}, or {error: errorOf what it threw}.
export async function attempt(fn) {
  try {
    return { ok: await fn() };
  } catch (e) {
    return { error: errorOf(e) };
  }
}

// readChatStream reads a streamed chat completion to its end: the role,
// the text, the number of chunks, the finish reason and the usage (sent
// with stream_options.include_usage, else null).
export async function readChatStream(stream) {
  let role = null, text = "", chunks = 0, finish = null, usage = null;
  for await (const chunk of stream) {
    chunks++;
    const choice = chunk.choices[0];
    if (choice) {
      role = choice.delta.role ?? role;
      text += choice.delta.content ?? "";
      finish = choice.finish_reason ?? finish;
    }
    if (chunk.usage) usage = chunk.usage;
  }
  return { role, text, chunks, finish_reason: finish, usage };
}
