/**
 * The page's side of voxbridge's HTTP routes: `/phone/config`, `/phone/voices`, `/phone/flows`, and the
 * control API (`/calls/{id}`, its `say` and its event stream), with `Authorization: Bearer` when the
 * server wants CONTROL_TOKEN.
 */

export interface PhoneConfig {
  media: { path: string; available: boolean; reason?: string; token_required: boolean };
  control: { token_required: boolean };
}

export interface VoiceInfo {
  voice_id: string;
  name: string;
  category: string;
}

export interface FlowInfo {
  start: string;
  nodes: Array<{ name: string; type: string; next: string[] }>;
}

/** A call event as the control API streams it, snake_case like the rest of it (see docs/calls.md). */
export interface CallEvent {
  type: string;
  seq?: number;
  [field: string]: unknown;
}

/**
 * An utterance's result, as `say` answers it and `utterance.finished` carries it (docs/calls.md). Read
 * from the server, so each field is checked before use where a wrong type would mislead.
 */
export interface UtteranceResultJson {
  status: 'played' | 'interrupted' | 'failed';
  played_ms: number;
  heard_text: string;
  error?: { code: string; message: string };
  first_byte_ms: number | null;
  first_frame_ms: number | null;
  underruns: number;
}

export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export class ControlClient {
  constructor(private readonly token: () => string | undefined) {}

  private headers(json = false): Record<string, string> {
    const headers: Record<string, string> = {};
    const token = this.token();
    if (token) headers['authorization'] = `Bearer ${token}`;
    if (json) headers['content-type'] = 'application/json';
    return headers;
  }

  private async json<T>(path: string, init: RequestInit = {}): Promise<T> {
    const res = await fetch(path, {
      ...init,
      headers: { ...this.headers(init.body !== undefined), ...init.headers },
    });
    const body = (await res.json().catch(() => ({}))) as { error?: string };
    if (!res.ok) throw new HttpError(res.status, body.error ?? `${res.status} ${res.statusText}`);
    return body as T;
  }

  static async config(): Promise<PhoneConfig> {
    const res = await fetch('/phone/config');
    if (!res.ok) throw new HttpError(res.status, `GET /phone/config answered ${res.status}`);
    return (await res.json()) as PhoneConfig;
  }

  async voices(): Promise<VoiceInfo[]> {
    return (await this.json<{ voices: VoiceInfo[] }>('/phone/voices')).voices;
  }

  async flows(): Promise<{ default_flow: string | null; flows: Record<string, FlowInfo> }> {
    return this.json('/phone/flows');
  }

  /** Whether the call exists yet (the server registers it when the start message arrives). */
  async callExists(id: string): Promise<boolean> {
    try {
      await this.json(`/calls/${encodeURIComponent(id)}`);
      return true;
    } catch (error) {
      if (error instanceof HttpError && error.status === 404) return false;
      throw error;
    }
  }

  /** `POST /calls/{id}/say` without waiting for the utterance: its events tell how it went. */
  async say(id: string, text: string, voiceId: string | undefined, now: boolean): Promise<string> {
    const body = { text, wait: false, ...(voiceId ? { voice_id: voiceId } : {}), ...(now ? { now } : {}) };
    const answer = await this.json<{ id: string }>(`/calls/${encodeURIComponent(id)}/say`, {
      method: 'POST',
      body: JSON.stringify(body),
    });
    return answer.id;
  }

  /**
   * Follows a call's events from its first (`?after=0`) until the stream ends or `signal` aborts. A
   * fetch rather than an EventSource, which cannot send the Authorization header.
   */
  async follow(id: string, onEvent: (event: CallEvent) => void, signal: AbortSignal): Promise<void> {
    const res = await fetch(`/calls/${encodeURIComponent(id)}/events?after=0`, {
      headers: { ...this.headers(), accept: 'text/event-stream' },
      signal,
    });
    if (!res.ok || !res.body) throw new HttpError(res.status, `the call's events answered ${res.status}`);
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value;
      let end: number;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const data = block
          .split('\n')
          .filter((line) => line.startsWith('data:'))
          .map((line) => line.slice(5).trimStart())
          .join('\n');
        const type = /^event: ?(.*)$/m.exec(block)?.[1];
        if (!data || !type) continue;
        onEvent({ ...(JSON.parse(data) as Record<string, unknown>), type });
      }
    }
  }
}
