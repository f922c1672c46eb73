/**
 * The browser phone's page: call voxbridge as a gateway would, and watch the call. Wires the DOM of
 * `index.html` to a `PhoneCall` (audio and the media stream), the control API (events, say) and the
 * `Scope` (the picture). (Over 400 lines on purpose: this is the page's one controller, every handler
 * of its DOM and of the call's events over the same state; the audio, the wire, the control API and
 * the drawing are each in their own module.)
 */
import {
  ControlClient,
  HttpError,
  type CallEvent,
  type FlowInfo,
  type PhoneConfig,
  type UtteranceResultJson,
} from './control.js';
import { PhoneCall } from './phone-call.js';
import { Scope } from './scope.js';

const WORKLET_URL = '/phone/js/web/phone/worklet.js';
/** A 20 ms frame louder than this counts as speech heard. */
const HEARD_DB = -45;
/** How long the page looks for its call on the control API after the start message. */
const FIND_CALL_MS = 5000;

function $<T extends HTMLElement>(id: string): T {
  const el = document.getElementById(id);
  if (!el) throw new Error(`the page lacks #${id}`);
  return el as T;
}

const ui = {
  status: $<HTMLOutputElement>('status'),
  callId: $('call-id'),
  notice: $<HTMLParagraphElement>('notice'),
  flow: $<HTMLSelectElement>('flow'),
  voice: $<HTMLSelectElement>('voice'),
  call: $<HTMLButtonElement>('call'),
  hangup: $<HTMLButtonElement>('hangup'),
  mute: $<HTMLButtonElement>('mute'),
  keypad: $('keypad'),
  say: $<HTMLFormElement>('say'),
  sayText: $<HTMLTextAreaElement>('say-text'),
  sayNow: $<HTMLInputElement>('say-now'),
  saySend: $<HTMLButtonElement>('say-send'),
  firstAudio: $('stat-first-audio'),
  bargeIn: $('stat-barge-in'),
  heard: $('stat-heard'),
  utterances: $('stat-utterances'),
  said: $('stat-said'),
  scope: $<HTMLCanvasElement>('scope'),
  flowMap: $<HTMLOListElement>('flow-map'),
  transcript: $<HTMLOListElement>('transcript'),
  events: $<HTMLOListElement>('events'),
  tokens: $<HTMLDialogElement>('tokens'),
  controlToken: $<HTMLInputElement>('control-token'),
  mediaToken: $<HTMLInputElement>('media-token'),
  changeTokens: $<HTMLButtonElement>('change-tokens'),
};

const scope = new Scope(ui.scope);
const tokens = {
  control: sessionStorage.getItem('voxbridge.controlToken') ?? undefined,
  media: sessionStorage.getItem('voxbridge.mediaToken') ?? undefined,
};
const control = new ControlClient(() => tokens.control);
let config: PhoneConfig | undefined;
let flows: Record<string, FlowInfo> = {};

/** The call in progress, and what the page keeps of it. */
let current:
  | {
      phone: PhoneCall;
      events: AbortController;
      heardMs: number;
      utterances: Map<string, { li: HTMLLIElement; text: string }>;
      clears: Array<{ at: number; slot: number }>;
      /** Barge-ins reported before the page saw their clear. */
      waitingForClear: CallEvent[];
      flowName: string | undefined;
    }
  | undefined;

function setStatus(state: 'idle' | 'connecting' | 'in-call' | 'ended' | 'failed', text: string): void {
  ui.status.dataset['state'] = state;
  ui.status.textContent = text;
}

function notify(text: string | undefined): void {
  ui.notice.hidden = text === undefined;
  ui.notice.textContent = text ?? '';
}

function setInCall(inCall: boolean): void {
  ui.call.disabled = inCall || !config?.media.available;
  ui.hangup.disabled = !inCall;
  ui.saySend.disabled = !inCall;
  ui.flow.disabled = inCall;
}

function option(select: HTMLSelectElement, value: string, label: string): void {
  const o = document.createElement('option');
  o.value = value;
  o.textContent = label;
  select.append(o);
}

/** Asks for the tokens the server wants; resolves once the dialog is closed. */
async function askForTokens(): Promise<void> {
  if (!config) return;
  $('control-token-field').hidden = !config.control.token_required;
  $('media-token-field').hidden = !config.media.token_required;
  ui.controlToken.value = tokens.control ?? '';
  ui.mediaToken.value = tokens.media ?? '';
  ui.tokens.showModal();
  await new Promise((resolve) => ui.tokens.addEventListener('close', resolve, { once: true }));
  tokens.control = ui.controlToken.value.trim() || undefined;
  tokens.media = ui.mediaToken.value.trim() || undefined;
  for (const [key, value] of [
    ['voxbridge.controlToken', tokens.control],
    ['voxbridge.mediaToken', tokens.media],
  ] as const)
    if (value) sessionStorage.setItem(key, value);
    else sessionStorage.removeItem(key);
}

/** Flows and voices, asking for CONTROL_TOKEN again while the server refuses it. */
async function loadCatalog(): Promise<void> {
  for (;;) {
    try {
      const [voices, described] = await Promise.all([control.voices(), control.flows()]);
      ui.voice.replaceChildren();
      option(ui.voice, '', 'the call’s voice');
      for (const v of voices) option(ui.voice, v.voice_id, `${v.name} (${v.category})`);
      flows = described.flows;
      ui.flow.replaceChildren();
      option(ui.flow, '', described.default_flow ? `default (${described.default_flow})` : 'none');
      for (const name of Object.keys(flows)) option(ui.flow, name, name);
      return;
    } catch (error) {
      if (error instanceof HttpError && error.status === 401) {
        notify('CONTROL_TOKEN was refused: enter it again.');
        await askForTokens();
        continue;
      }
      notify(`Could not load voices and flows: ${(error as Error).message}`);
      return;
    }
  }
}

function drawFlow(name: string | undefined): void {
  ui.flowMap.replaceChildren();
  const flow = name === undefined ? undefined : flows[name];
  if (!flow) return;
  for (const node of flow.nodes) {
    const li = document.createElement('li');
    li.dataset['node'] = node.name;
    li.title = `${node.type} → ${node.next.join(', ') || 'end'}`;
    li.textContent = node.name;
    ui.flowMap.append(li);
  }
}

function showNode(node: string): void {
  for (const li of ui.flowMap.querySelectorAll<HTMLLIElement>('li')) {
    const here = li.dataset['node'] === node;
    if (li.classList.contains('current') && !here) li.classList.add('visited');
    li.classList.toggle('current', here);
  }
}

function ms(value: unknown): string {
  return typeof value === 'number' ? `${Math.round(value)} ms` : '–';
}

function logEvent(event: CallEvent): void {
  const li = document.createElement('li');
  const { type, seq: _seq, at: _at, call_id: _callId, ...rest } = event;
  li.textContent = `${type} ${JSON.stringify(rest)}`;
  ui.events.prepend(li);
}

function onEvent(event: CallEvent): void {
  if (!current) return;
  logEvent(event);
  switch (event.type) {
    case 'call.state':
    case 'call.started': {
      const flow = typeof event['flow'] === 'string' ? event['flow'] : undefined;
      if (flow !== current.flowName) {
        current.flowName = flow;
        drawFlow(flow);
      }
      if (event.type === 'call.started') setStatus('in-call', 'in call');
      return;
    }
    case 'flow': {
      const flowEvent = event['event'] as { type: string; node?: string };
      if (flowEvent.type === 'flow.node' && flowEvent.node) showNode(flowEvent.node);
      return;
    }
    case 'utterance.started': {
      const id = String(event['utterance_id']);
      const text = String(event['text']);
      const li = document.createElement('li');
      li.dataset['status'] = 'speaking';
      li.dataset['utterance'] = id;
      li.textContent = text;
      ui.transcript.prepend(li);
      current.utterances.set(id, { li, text });
      ui.utterances.textContent = String(current.utterances.size);
      scope.mark({
        kind: 'utterance',
        slot: scope.slot,
        label: text.length > 28 ? `${text.slice(0, 27)}…` : text,
      });
      return;
    }
    case 'utterance.finished':
      finishUtterance(String(event['utterance_id']), event['result'] as UtteranceResultJson);
      return;
    case 'barge-in':
      if (!placeBargeIn(event)) current.waitingForClear.push(event);
      return;
    case 'dtmf':
      scope.mark({ kind: 'dtmf', slot: scope.slot, label: `key ${String(event['digit'])}` });
      return;
    case 'gather.result':
      if (event['input'] === 'speech') showRecognized(event);
      return;
    case 'call.ended':
      setStatus('ended', `ended: ${String(event['reason'])}`);
      return;
  }
}

function finishUtterance(id: string, result: UtteranceResultJson): void {
  const entry = current?.utterances.get(id);
  if (!entry) return;
  const status = result.status;
  const heard = typeof result.heard_text === 'string' ? result.heard_text : '';
  entry.li.dataset['status'] = status;
  entry.li.replaceChildren();
  if (status === 'interrupted') {
    // What the caller heard, then what the barge-in cut off.
    const cutAt = entry.text.startsWith(heard) ? heard.length : 0;
    entry.li.append(document.createTextNode(entry.text.slice(0, cutAt)));
    const cut = document.createElement('span');
    cut.className = 'cut';
    cut.textContent = entry.text.slice(cutAt);
    entry.li.append(cut);
  } else entry.li.append(document.createTextNode(entry.text));
  const meta = document.createElement('span');
  meta.className = 'meta';
  meta.textContent =
    `${status} · played ${ms(result.played_ms)} · first byte ${ms(result.first_byte_ms)}` +
    ` · first frame ${ms(result.first_frame_ms)}` +
    (result.error?.message ? ` · ${result.error.message}` : '');
  entry.li.append(meta);
}

/**
 * What a menu recognised the caller saying (a `gather.result` of `input: speech`): in the transcript on
 * the caller's side, with the key it stood for (or no match), its confidence and how soon after the
 * caller's turn ended it came; and as the last thing said.
 */
function showRecognized(event: CallEvent): void {
  const text = typeof event['text'] === 'string' ? event['text'] : '';
  const digits = typeof event['digits'] === 'string' ? event['digits'] : undefined;
  const confidence = typeof event['confidence'] === 'number' ? event['confidence'] : undefined;
  const next = typeof event['next'] === 'string' ? event['next'] : undefined;
  const li = document.createElement('li');
  li.dataset['status'] = 'heard';
  li.dataset['matched'] = String(digits !== undefined);
  li.append(document.createTextNode(text === '' ? '(nothing recognised)' : `“${text}”`));
  const meta = document.createElement('span');
  meta.className = 'meta';
  meta.textContent =
    `you · ${digits === undefined ? 'no match' : `key ${digits}`}` +
    ` · confidence ${confidence === undefined ? '–' : confidence.toFixed(2)}` +
    ` · ${ms(event['latency_ms'])} after your turn ended` +
    (next === undefined ? '' : ` → ${next}`);
  li.append(meta);
  ui.transcript.prepend(li);
  ui.said.textContent = digits === undefined ? 'no match' : `“${text}” → ${digits}`;
  ui.said.title = meta.textContent;
  scope.mark({ kind: 'dtmf', slot: scope.slot, label: text === '' ? 'said ?' : `said “${text}”` });
}

/**
 * Draws a barge-in from the caller's speech onset to the clear that silenced the page, and shows that
 * time. False while the clear has not arrived yet.
 */
function placeBargeIn(event: CallEvent): boolean {
  if (!current) return true;
  const onsetMs = Number(event['onset_ms']);
  const detectedMs = Number(event['detected_ms']);
  const sentAt = current.phone.sentTime(onsetMs);
  const clear = current.clears.find((c) => sentAt !== undefined && c.at >= sentAt);
  if (!clear || sentAt === undefined) return false;
  current.clears = current.clears.filter((c) => c !== clear);
  const stopMs = clear.at - sentAt;
  ui.bargeIn.textContent = `${Math.round(stopMs)} ms`;
  ui.bargeIn.dataset['ms'] = String(Math.round(stopMs));
  ui.bargeIn.title = `speech onset → audio cut here; detected after ${Math.round(detectedMs - onsetMs)} ms of speech`;
  scope.mark({
    kind: 'barge-in',
    slot: Math.floor(onsetMs / 20),
    until: clear.slot,
    label: `barge-in: cut ${Math.round(stopMs)} ms after you spoke`,
  });
  return true;
}

async function findCall(id: string): Promise<void> {
  const deadline = performance.now() + FIND_CALL_MS;
  while (!(await control.callExists(id))) {
    if (performance.now() > deadline) throw new Error('the server did not register the call');
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function startCall(): Promise<void> {
  if (!config || current) return;
  notify(undefined);
  scope.clear();
  ui.transcript.replaceChildren();
  ui.events.replaceChildren();
  for (const el of [ui.firstAudio, ui.bargeIn, ui.said]) {
    el.textContent = '–';
    delete el.dataset['ms'];
  }
  ui.heard.textContent = '0.0 s';
  ui.heard.dataset['ms'] = '0';
  ui.utterances.textContent = '0';
  const url = new URL(config.media.path, location.href);
  url.protocol = location.protocol === 'https:' ? 'wss:' : 'ws:';
  if (tokens.media) url.searchParams.set('token', tokens.media);
  const flow = ui.flow.value;
  const phone = new PhoneCall(
    { url: url.href, parameters: flow ? { flow } : {}, workletUrl: WORKLET_URL },
    {
      connected: () => setStatus('in-call', 'in call'),
      frame: (outDb, micDb, muted) => {
        scope.push(outDb, micDb, muted);
        if (!current) return;
        if (outDb > HEARD_DB) {
          current.heardMs += 20;
          if (current.heardMs % 100 === 0) {
            ui.heard.textContent = `${(current.heardMs / 1000).toFixed(1)} s`;
            ui.heard.dataset['ms'] = String(current.heardMs);
          }
        }
        if (ui.firstAudio.dataset['ms'] === undefined && phone.firstAudioAt && phone.connectedAt) {
          const firstMs = Math.round(phone.firstAudioAt - phone.connectedAt);
          ui.firstAudio.textContent = `${firstMs} ms`;
          ui.firstAudio.dataset['ms'] = String(firstMs);
          ui.firstAudio.title = 'from the media stream opening to the first audible audio played here';
        }
      },
      cleared: (at) => {
        if (!current) return;
        current.clears.push({ at, slot: scope.slot });
        current.waitingForClear = current.waitingForClear.filter((e) => !placeBargeIn(e));
      },
      ended: (reason) => {
        const state = ui.status.dataset['state'];
        if (state !== 'ended' && state !== 'failed') setStatus('ended', `ended: ${reason}`);
        const events = current?.events;
        current = undefined;
        setInCall(false);
        // The event stream ends by itself with call.ended; give it a moment, then stop following.
        setTimeout(() => events?.abort(), 3000);
      },
    },
  );
  current = {
    phone,
    events: new AbortController(),
    heardMs: 0,
    utterances: new Map(),
    clears: [],
    waitingForClear: [],
    flowName: undefined,
  };
  phone.muted = ui.mute.getAttribute('aria-pressed') === 'true';
  ui.callId.textContent = phone.callSid;
  setStatus('connecting', 'connecting…');
  setInCall(true);
  try {
    const warning = await phone.start();
    if (warning) notify(warning);
    await findCall(phone.callSid);
    const events = current?.events;
    if (!events) return;
    control.follow(phone.callSid, onEvent, events.signal).catch((error: unknown) => {
      if ((error as Error).name !== 'AbortError')
        notify(`Lost the call's events: ${(error as Error).message}`);
    });
  } catch (error) {
    // A browser is not told why an upgrade was refused; the token is the likely reason when one is set.
    const hint = config.media.token_required ? ' (check MEDIA_STREAM_TOKEN: Tokens…)' : '';
    notify(`The call failed: ${(error as Error).message}${hint}`);
    setStatus('failed', 'failed');
    phone.hangup();
  }
}

function press(digit: string): void {
  if (!current) return;
  current.phone.dtmf(digit);
  const button = ui.keypad.querySelector<HTMLButtonElement>(`[data-digit="${CSS.escape(digit)}"]`);
  button?.classList.add('pressed');
  setTimeout(() => button?.classList.remove('pressed'), 200);
}

ui.call.addEventListener('click', () => void startCall());
ui.changeTokens.addEventListener('click', () => void askForTokens().then(loadCatalog));
ui.hangup.addEventListener('click', () => current?.phone.hangup());
ui.mute.addEventListener('click', () => {
  const muted = ui.mute.getAttribute('aria-pressed') !== 'true';
  ui.mute.setAttribute('aria-pressed', String(muted));
  ui.mute.textContent = muted ? 'Unmute' : 'Mute';
  if (current) current.phone.muted = muted;
});
ui.keypad.addEventListener('click', (e) => {
  const digit = (e.target as HTMLElement).closest<HTMLButtonElement>('[data-digit]')?.dataset['digit'];
  if (digit) press(digit);
});
document.addEventListener('keydown', (e) => {
  if (e.target instanceof HTMLInputElement || e.target instanceof HTMLTextAreaElement) return;
  if (/^[0-9*#]$/.test(e.key)) press(e.key);
});
ui.say.addEventListener('submit', (e) => {
  e.preventDefault();
  const text = ui.sayText.value.trim();
  if (!current || !text) return;
  control.say(current.phone.callSid, text, ui.voice.value || undefined, ui.sayNow.checked).then(
    () => {
      ui.sayText.value = '';
    },
    (error: unknown) => notify(`Say failed: ${(error as Error).message}`),
  );
});

async function init(): Promise<void> {
  try {
    config = await ControlClient.config();
  } catch (error) {
    notify(`Cannot reach voxbridge: ${(error as Error).message}`);
    return;
  }
  if (!config.media.available) notify(config.media.reason ?? 'calls are not available');
  ui.changeTokens.hidden = !config.control.token_required && !config.media.token_required;
  const missing =
    (config.control.token_required && !tokens.control) || (config.media.token_required && !tokens.media);
  if (missing) await askForTokens();
  await loadCatalog();
  setInCall(false);
  setStatus('idle', 'ready to call');
}

void init();
