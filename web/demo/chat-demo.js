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

import { renderMarkdown } from './markdown.js';

const $ = (id) => document.getElementById(id);

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
    maxTokens: $('chat-max-tokens'), seed: $('chat-seed'),
    send: $('chat-send'), stop: $('chat-stop'), regenerate: $('chat-regenerate'), clear: $('chat-clear'),
    context: $('chat-context'),
  };

  // The conversation, also on wasmlmDemo.chat for the console (and tests):
  // messages are {role, content} with, for replies, reasoning and stats
  // (what the reply's result said: see turnStats). Whether a reply is being
  // written is the page's: wasmlmDemo.running, of mode 'chat'.
  const chat = { mode: 'completion', messages: [] };
  host.demo.chat = chat;
  const views = []; // the element of each message, by index

  /** Whether the loaded model can chat: it generates, and its chat template is known. */
  const canChat = () => host.demo.lm?.info.generates === true && host.demo.lm.info.chatTemplate != null;
  /** Whether the page is neither loading a model, generating nor comparing. */
  const idle = () => host.demo.state === 'ready' || host.demo.state === 'error';
  const replying = () => host.demo.running?.mode === 'chat';

  function update() {
    const ready = canChat() && idle();
    el.send.disabled = !ready;
    el.stop.disabled = !replying();
    el.regenerate.disabled = !ready || !chat.messages.some((m) => m.role === 'user');
    el.clear.disabled = !idle() || chat.messages.length === 0;
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

  function clear() {
    if (replying()) return;
    chat.messages = [];
    views.length = 0;
    el.log.replaceChildren();
    el.context.textContent = '';
    host.showMessage('');
    update();
    el.input.focus();
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
        msg.stats = turnStats(r, opts);
        draw.now();
        if (msg.content === '' && msg.reasoning === '' && r.finishReason === 'abort') forget(msg);
        showContext(r);
        return r.finishReason === 'abort' ? 'Stopped' : 'Done';
      } catch (err) {
        draw.now();
        if (msg.content === '' && msg.reasoning === '') forget(msg);
        if (err.code !== 'prompt_too_long') throw err;
        throw new Error(`The conversation no longer fits the model's context (${lm.info.sessionContextLength} tokens): start a new conversation. (${err.message})`);
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
   * how many were evaluated; the reply's tokens, speed, finish, and the
   * seed when it was sampled (opts: the request's options). A reply
   * stopped before its prompt was evaluated has no count of reused tokens.
   */
  function turnStats(r, opts) {
    const prompt = r.usage.promptTokens;
    const computed = r.timings.prefillTokens;
    const evaluated = r.tokens.length > 0 || r.finishReason !== 'abort';
    return {
      promptTokens: prompt, computed, reused: evaluated ? prompt - computed : null,
      completionTokens: r.usage.completionTokens, finishReason: r.finishReason, seed: opts.temperature > 0 ? r.seed : null,
      timeToFirstTokenMs: r.timings.timeToFirstTokenMs,
      tokensPerSecond: r.timings.decodeTokens > 0 ? r.timings.decodeTokensPerSecond : null,
    };
  }

  /** How full the context is after the last turn. */
  function showContext(r) {
    const used = r.usage.promptTokens + r.usage.completionTokens;
    if (used > 0) el.context.textContent = `context ${used} / ${host.demo.lm.info.sessionContextLength} tokens`;
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
    if (s.reused == null) {
      line.append('stopped before the prompt was evaluated');
      return line;
    }
    line.append(
      'prompt ', b(s.promptTokens), ' tokens · ',
      b(s.reused, 'tokens the KV cache held from earlier turns: not computed again'), ' reused from the cache, ',
      b(s.computed, 'tokens evaluated for this reply'), ' computed · reply ', b(s.completionTokens), ' tokens',
      ...(s.tokensPerSecond == null ? [] : [', ', b(s.tokensPerSecond.toFixed(0)), ' tokens/s']),
      ' · ', b(s.finishReason),
      ...(s.seed == null ? [] : [' · seed ', b(s.seed)]),
    );
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
    clear();
    el.template.textContent = chatTemplate === 'plain'
      ? `${lm.name} has no chat template: the messages are joined by new lines, with no roles, and the model continues the text (the plain template).`
      : chatTemplate == null
        ? `${lm.name}'s chat template is not one the engine knows, so it cannot chat: use the completion mode.`
        : `Chat template: ${chatTemplate}, from the model file.`;
    update();
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
