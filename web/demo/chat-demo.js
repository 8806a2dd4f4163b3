// chat-demo.js: the demo page's chat mode, beside its completion mode. A
// conversation with the loaded model through lm.chat.completions.create,
// streamed, its replies rendered as Markdown (markdown.js, which never
// parses HTML). It uses only the public API of wasmlm.js.
//
// The model's session keeps the conversation's keys and values between
// calls, and a prompt that starts with what the cache holds evaluates only
// the rest: each reply shows how many of its prompt's tokens were reused
// from the cache (the prompt's tokens less the ones evaluated,
// timings.prefillTokens) and how many were computed.
//
// A conversation that fills the context goes on with a context shift
// (context_shift, on unless its box is unticked): the oldest half of the
// tokens is dropped, and the reply says so. The conversation survives a
// reload: its messages and system prompt are kept in localStorage after
// each reply, and the model's session — the conversation's tokens and
// their keys and values — in OPFS (lm.saveSession). When the page loads
// the same model again, the conversation is shown again and its session
// restored (lm.restoreSession), so the next reply evaluates only what is
// new, not the whole conversation; New conversation forgets both.

import { renderMarkdown } from './markdown.js';

const $ = (id) => document.getElementById(id);

// Where the conversation is kept across reloads: localStorage's key for
// the messages, and the name of the model's saved session.
const SAVED_KEY = 'wasmlm-demo-chat';
const SESSION = 'wasmlm-demo-chat';

/** The conversation kept in localStorage ({model, system, messages}), or null. */
function readSaved() {
  try {
    const v = JSON.parse(localStorage.getItem(SAVED_KEY));
    return v && typeof v.model === 'string' && Array.isArray(v.messages) ? v : null;
  } catch {
    return null;
  }
}

/**
 * Sets up the chat mode. host: the page's {demo, run, showMessage}
 * (demo.js): demo.lm is the model, demo.state the page's state and
 * demo.running the generation under way, whichever mode started it
 * ({mode, controller}); run(mode, status, work) runs a generation, the
 * page's one way to, and showMessage shows an error message.
 *
 * It returns {modelChanged(lm), sync()}: the page calls modelChanged when a
 * model has loaded (a new conversation starts) and sync whenever its state
 * changes, a generation's start and end included (the buttons follow).
 */
export function setupChat(host) {
  const el = {
    modes: $('modes'), completion: $('mode-completion'), chatMode: $('mode-chat'), panel: $('chat'),
    system: $('system-prompt'), template: $('chat-template'), log: $('chat-log'), input: $('chat-input'),
    temperature: $('chat-temperature'), temperatureValue: $('chat-temperature-value'),
    maxTokens: $('chat-max-tokens'), seed: $('chat-seed'), shift: $('chat-shift'), restored: $('chat-restored'),
    send: $('chat-send'), stop: $('chat-stop'), regenerate: $('chat-regenerate'), clear: $('chat-clear'),
    context: $('chat-context'),
  };

  // The conversation, also on wasmlmDemo.chat for the console (and tests):
  // messages are {role, content} with, for replies, reasoning and stats
  // (what the reply's result said: see turnStats). Whether a reply is being
  // written is the page's: wasmlmDemo.running, of mode 'chat'. restored is
  // what became of a conversation kept across a reload: null, {tokens, ms}
  // (its session restored: tokens cached, not evaluated again) or {error};
  // restoring is true while it is restored; saved is the last save of the
  // session: {tokens, bytes} or {error}.
  const chat = { mode: 'completion', messages: [], restored: null, restoring: false, saved: null };
  host.demo.chat = chat;
  const views = []; // the element of each message, by index

  /** Whether the loaded model can chat: it generates, and its chat template is known. */
  const canChat = () => host.demo.lm?.info.generates === true && host.demo.lm.info.chatTemplate != null;
  /** Whether the page is neither loading a model, generating nor comparing. */
  const idle = () => host.demo.state === 'ready' || host.demo.state === 'error';
  const replying = () => host.demo.running?.mode === 'chat';

  function update() {
    const ready = canChat() && idle() && !chat.restoring;
    el.send.disabled = !ready;
    el.stop.disabled = !replying();
    el.regenerate.disabled = !ready || !chat.messages.some((m) => m.role === 'user');
    el.clear.disabled = !idle() || chat.restoring || chat.messages.length === 0;
  }

  function setMode(mode) {
    chat.mode = mode;
    document.body.dataset.mode = mode;
    el.completion.setAttribute('aria-pressed', String(mode === 'completion'));
    el.chatMode.setAttribute('aria-pressed', String(mode === 'chat'));
    const hash = mode === 'chat' ? '#chat' : '';
    if (location.hash !== hash) history.replaceState(null, '', `${location.pathname}${location.search}${hash}`);
    if (mode === 'chat') el.input.focus();
  }

  /** The request's messages: the system prompt (unless blank), then the conversation's. */
  function requestMessages() {
    const system = el.system.value;
    return [
      ...(system.trim() === '' ? [] : [{ role: 'system', content: system }]),
      ...chat.messages.map(({ role, content }) => ({ role, content })),
    ];
  }

  /** The sampling options from the chat's controls, in OpenAI's names. */
  function options() {
    const o = {
      temperature: Number(el.temperature.value),
      max_tokens: Math.max(1, Math.trunc(Number(el.maxTokens.value)) || 1),
    };
    if (el.seed.value !== '') o.seed = Math.max(0, Math.trunc(Number(el.seed.value)));
    if (!el.shift.checked) o.context_shift = false; // the load's default is on (demo.js)
    return o;
  }

  async function send() {
    const content = el.input.value;
    if (el.send.disabled || content.trim() === '') return;
    el.input.value = '';
    add({ role: 'user', content });
    await reply();
  }

  /** Replaces the last reply with a new one (or replies to a message left without one). */
  async function regenerate() {
    if (el.regenerate.disabled) return;
    if (chat.messages.at(-1)?.role === 'assistant') {
      chat.messages.pop();
      views.pop().remove();
    }
    await reply();
  }

  /** Empties the conversation shown (not the one kept across reloads). */
  function clearView() {
    chat.messages = [];
    views.length = 0;
    el.log.replaceChildren();
    el.context.textContent = '';
    chat.restored = null;
    el.restored.hidden = true;
    el.restored.textContent = '';
    host.showMessage('');
    update();
  }

  /** New conversation: the one shown and the one kept across reloads are forgotten. */
  async function clear() {
    if (replying() || chat.restoring) return;
    clearView();
    localStorage.removeItem(SAVED_KEY);
    chat.saved = null;
    el.input.focus();
    await host.demo.lm?.sessions.delete(SESSION).catch(() => false);
  }

  /**
   * Keeps the conversation across a reload: its messages and system prompt
   * in localStorage, and (save) the model's session in OPFS. A session
   * that cannot be saved (a GPU session, a browser without OPFS) leaves
   * the messages kept, and the next reply after a reload evaluates them
   * again.
   */
  async function keep(lm, save) {
    const messages = chat.messages.map(({ role, content, reasoning, stats }) => ({ role, content, reasoning, stats }));
    try {
      localStorage.setItem(SAVED_KEY, JSON.stringify({ model: lm.name, system: el.system.value, messages }));
    } catch {
      return; // no storage (a private window's quota): the conversation lasts as long as the page
    }
    if (!save) return;
    try {
      const { tokens, bytes } = await lm.saveSession(SESSION);
      chat.saved = { tokens, bytes };
    } catch (err) {
      chat.saved = { error: err.message };
    }
  }

  /**
   * Shows again the conversation kept for lm's model before the page was
   * reloaded (or the model loaded again), and restores its session: its
   * tokens come back cached, not evaluated again.
   */
  async function restore(lm) {
    const saved = readSaved();
    if (!saved || saved.model !== lm.name || !canChat() || saved.messages.length === 0) return;
    chat.restoring = true;
    update();
    el.system.value = saved.system ?? el.system.value;
    for (const m of saved.messages) {
      const msg = { role: m.role, content: String(m.content ?? ''), reasoning: m.reasoning ?? '', stats: m.stats ?? null };
      const view = add(msg);
      if (msg.role === 'assistant') drawer(msg, view).now();
    }
    const started = performance.now();
    let restored;
    try {
      const { tokens } = await lm.restoreSession(SESSION);
      restored = { tokens, ms: performance.now() - started };
    } catch (err) {
      restored = { error: err.message };
    }
    if (host.demo.lm !== lm) return; // another model came meanwhile
    chat.restored = restored;
    chat.restoring = false;
    el.restored.hidden = false;
    // The conversation's tokens, as the context's line counts them; a reply
    // a limit cut leaves its last token unevaluated (the next turn's first),
    // so the session may hold one less: the notice says so.
    const used = showRestoredContext(restored.tokens ?? null);
    const held = used != null && used > restored.tokens
      ? `${restored.tokens} of its ${used} tokens came back in the model's session (the last reply's last token is evaluated with the next turn)`
      : `its ${restored.tokens} tokens came back in the model's session`;
    el.restored.textContent = restored.error == null
      ? `Conversation restored: ${held} from storage in ${restored.ms.toFixed(0)} ms, not evaluated again.`
      : `Conversation restored, but not its session (${restored.error}): the next reply evaluates the conversation again.`;
    update();
  }

  /** Streams the model's reply to the conversation so far. */
  function reply() {
    const lm = host.demo.lm;
    const messages = requestMessages();
    return host.run('chat', 'Replying…', async (signal) => {
      const msg = { role: 'assistant', content: '', reasoning: '', stats: null };
      const view = add(msg);
      view.classList.add('running');
      const draw = drawer(msg, view);
      const opts = options();
      try {
        const stream = await lm.chat.completions.create({ messages, stream: true, ...opts }, { signal });
        for await (const c of stream) {
          const delta = c.choices[0]?.delta;
          if (delta?.content) msg.content += delta.content;
          if (delta?.reasoning_content) msg.reasoning += delta.reasoning_content;
          draw.later();
        }
        const r = await stream.result;
        msg.stats = turnStats(r, opts, lm.info.sessionContextLength);
        draw.now();
        if (msg.content === '' && msg.reasoning === '' && r.finishReason === 'abort') forget(msg);
        showContext(r);
        await keep(lm, true);
        return r.finishReason === 'abort' ? 'Stopped' : 'Done';
      } catch (err) {
        draw.now();
        if (msg.content === '' && msg.reasoning === '') forget(msg);
        await keep(lm, false);
        if (err.code !== 'prompt_too_long') throw err;
        throw new Error(`The conversation and a reply of up to ${opts.max_tokens} tokens (Max tokens) do not fit the model's context (${lm.info.sessionContextLength} tokens): lower Max tokens, start a new conversation, or tick Context shift. (${err.message})`);
      } finally {
        draw.cancel();
        view.classList.remove('running');
      }
    });
  }

  /** Takes an empty reply out of the conversation. */
  function forget(msg) {
    const i = chat.messages.indexOf(msg);
    if (i < 0) return;
    chat.messages.splice(i, 1);
    views.splice(i, 1)[0].remove();
  }

  /**
   * What a reply's result says of it: the prompt's tokens, how many of them
   * the KV cache held from earlier turns (reused, not computed again) and
   * how many were evaluated; the reply's tokens, speed, finish, the seed
   * when it was sampled (opts: the request's options), and the context
   * shifts (how many, and the tokens they dropped). A reply stopped before
   * its prompt was evaluated has no count of reused tokens, nor has one
   * whose prompt, longer than the context (contextLength), was cut (cut:
   * the engine dropped its oldest tokens before evaluating the rest).
   */
  function turnStats(r, opts, contextLength) {
    const prompt = r.usage.promptTokens;
    const computed = r.timings.prefillTokens;
    const evaluated = r.tokens.length > 0 || r.finishReason !== 'abort';
    const shifts = r.usage.contextShifts ?? 0;
    const cut = shifts > 0 && prompt > contextLength;
    return {
      promptTokens: prompt, computed, reused: evaluated && !cut ? prompt - computed : null, evaluated, cut,
      completionTokens: r.usage.completionTokens, finishReason: r.finishReason, seed: opts.temperature > 0 ? r.seed : null,
      timeToFirstTokenMs: r.timings.timeToFirstTokenMs,
      tokensPerSecond: r.timings.decodeTokens > 0 ? r.timings.decodeTokensPerSecond : null,
      shifts, shiftedTokens: r.usage.contextShiftedTokens ?? 0,
    };
  }

  /** How full the context is after the last turn (r: its result), and what a shift dropped of it. */
  function showContext(r) {
    const dropped = r.usage.contextShiftedTokens ?? 0;
    showUsed(r.usage.promptTokens + r.usage.completionTokens - dropped, dropped);
  }

  /**
   * The context's line of a restored conversation: its last turn's, as the
   * line said before the reload (its kept stats), or else the restored
   * session's tokens (tokens; null: none restored). Returns the tokens the
   * line shows (null: none).
   */
  function showRestoredContext(tokens) {
    const last = chat.messages.findLast((m) => m.stats != null)?.stats;
    const dropped = last?.shiftedTokens ?? 0;
    const used = last ? last.promptTokens + last.completionTokens - dropped : tokens;
    if (used != null) showUsed(used, last ? dropped : 0);
    return used;
  }

  /** The context's line: used of its tokens, and the oldest dropped by a shift. */
  function showUsed(used, dropped) {
    if (!(used > 0)) return;
    el.context.textContent = `context ${used} / ${host.demo.lm.info.sessionContextLength} tokens`
      + (dropped > 0 ? ` · shifted: the oldest ${dropped} tokens were dropped` : '');
  }

  /** Adds a message to the conversation and the page; returns its element. */
  function add(msg) {
    chat.messages.push(msg);
    const view = document.createElement('div');
    view.className = `msg ${msg.role}`;
    const who = document.createElement('div');
    who.className = 'who';
    who.textContent = msg.role === 'user' ? 'You' : host.demo.lm.name;
    const body = document.createElement('div');
    body.className = 'body';
    if (msg.role === 'user') body.textContent = msg.content; // what was typed, as typed
    view.append(who, body);
    views.push(view);
    el.log.append(view);
    scroll(true);
    update();
    return view;
  }

  /**
   * Draws a reply as it streams: its Markdown again on each animation frame
   * with new text (not each token: the page then costs the same at any
   * speed), and its stats once it is done.
   */
  function drawer(msg, view) {
    let frame = 0;
    const body = view.querySelector('.body');
    let reasoning = null;
    let drawn = -1;
    const now = () => {
      cancelAnimationFrame(frame);
      frame = 0;
      const follow = nearBottom();
      if (msg.reasoning && !reasoning) {
        reasoning = document.createElement('details');
        reasoning.className = 'reasoning';
        const summary = document.createElement('summary');
        summary.textContent = 'Reasoning';
        reasoning.append(summary, document.createElement('div'));
        view.insertBefore(reasoning, body);
      }
      if (reasoning) reasoning.lastChild.textContent = msg.reasoning;
      if (drawn !== msg.content.length) {
        body.replaceChildren(renderMarkdown(msg.content));
        drawn = msg.content.length;
      }
      if (msg.stats) view.append(statsLine(msg.stats));
      scroll(follow);
    };
    return {
      now,
      later() { frame ||= requestAnimationFrame(now); },
      cancel() { cancelAnimationFrame(frame); frame = 0; },
    };
  }

  /** The line under a reply that says what it cost and what the cache saved. */
  function statsLine(s) {
    const line = document.createElement('div');
    line.className = 'turn';
    const b = (text, title) => Object.assign(document.createElement('b'), { textContent: String(text), title: title ?? '' });
    if (s.evaluated === false || (s.evaluated == null && s.reused == null)) {
      line.append('stopped before the prompt was evaluated');
      return line;
    }
    line.append(
      'prompt ', b(s.promptTokens), ' tokens · ',
      ...(s.cut
        ? ['cut to fit the context, ']
        : [b(s.reused, 'tokens the KV cache held from earlier turns: not computed again'), ' reused from the cache, ']),
      b(s.computed, 'tokens evaluated for this reply'), ' computed · reply ', b(s.completionTokens), ' tokens',
      ...(s.tokensPerSecond == null ? [] : [', ', b(s.tokensPerSecond.toFixed(0)), ' tokens/s']),
      ' · ', b(s.finishReason),
      ...(s.seed == null ? [] : [' · seed ', b(s.seed)]),
    );
    if (s.shifts > 0) {
      const shift = document.createElement('span');
      shift.className = 'shift';
      shift.title = 'The context was full: its oldest tokens were dropped and the rest moved down, without evaluating them again (context_shift)';
      shift.append(' · context shifted ', b(s.shifts), s.shifts === 1 ? ' time: ' : ' times: ', b(s.shiftedTokens), ' oldest tokens dropped');
      line.append(shift);
    }
    line.title = `first token after ${s.timeToFirstTokenMs.toFixed(1)} ms`;
    return line;
  }

  const nearBottom = () => el.log.scrollHeight - el.log.scrollTop - el.log.clientHeight < 40;
  function scroll(follow) {
    if (follow) el.log.scrollTop = el.log.scrollHeight;
  }

  /** A new model: a new conversation, and a word on its chat template. */
  function modelChanged(lm) {
    const { generates, chatTemplate } = lm.info;
    el.modes.hidden = !generates;
    el.panel.hidden = !generates;
    clearView();
    chat.restoring = false;
    el.template.textContent = chatTemplate === 'plain'
      ? `${lm.name} has no chat template: the messages are joined by new lines, with no roles, and the model continues the text (the plain template).`
      : chatTemplate == null
        ? `${lm.name}'s chat template is not one the engine knows, so it cannot chat: use the completion mode.`
        : `Chat template: ${chatTemplate}, from the model file.`;
    update();
    restore(lm);
  }

  // --- wiring -------------------------------------------------------------

  el.completion.addEventListener('click', () => setMode('completion'));
  el.chatMode.addEventListener('click', () => setMode('chat'));
  addEventListener('hashchange', () => setMode(location.hash === '#chat' ? 'chat' : 'completion'));
  el.temperature.addEventListener('input', () => { el.temperatureValue.textContent = el.temperature.value; });
  el.send.addEventListener('click', send);
  el.stop.addEventListener('click', () => { if (replying()) host.demo.running.controller.abort(); });
  el.regenerate.addEventListener('click', regenerate);
  el.clear.addEventListener('click', clear);
  el.input.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      send();
    }
  });
  setMode(location.hash === '#chat' ? 'chat' : 'completion');

  return { modelChanged, sync: update };
}
