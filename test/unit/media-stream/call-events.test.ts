/** The call events' wire shape: what the event stream and a flow's webhook receive. */
import { describe, expect, it } from 'vitest';
import { toWire, type CallEvent } from '../../../adapters/media-stream/call-events.js';

const head = { seq: 3, at: '2030-01-01T00:00:00.000Z', callId: 'CA1' } as const;
const wireHead = { seq: 3, at: '2030-01-01T00:00:00.000Z', call_id: 'CA1' };

/** Every key of a JSON value, at any depth, except under `parameters` (the caller's own). */
function keys(value: unknown): string[] {
  if (typeof value !== 'object' || value === null) return [];
  return Object.entries(value).flatMap(([k, v]) => [k, ...(k === 'parameters' ? [] : keys(v))]);
}

const events: CallEvent[] = [
  {
    ...head,
    type: 'call.started',
    gateway: 'twilio',
    streamId: 'MZ1',
    flow: 'default',
    parameters: { customerId: 'c-42', 'x-Trace': 't' },
  },
  { ...head, type: 'utterance.started', utteranceId: 'u1', text: 'Hello.' },
  {
    ...head,
    type: 'utterance.finished',
    utteranceId: 'u1',
    result: {
      status: 'failed',
      playedMs: 0,
      heardText: '',
      error: { code: 'timeout', message: 'no answer' },
      firstByteMs: undefined,
      firstFrameMs: undefined,
      underruns: 0,
    },
  },
  {
    ...head,
    type: 'barge-in',
    utteranceId: undefined,
    onsetMs: 1000,
    detectedMs: 1300,
    playedMs: 800,
    heardText: 'Hel',
  },
  { ...head, type: 'dtmf', digit: '5' },
  {
    ...head,
    type: 'flow',
    event: { type: 'flow.node', flow: 'default', node: 'menu', detail: { digits: '1', next: 'key-1' } },
  },
  {
    ...head,
    type: 'gather.result',
    flow: 'default',
    node: 'menu',
    input: 'speech',
    digits: '3',
    text: 'three please',
    words: [
      { word: 'three', startMs: 2010, endMs: 2380 },
      { word: 'please', startMs: 2380, endMs: 2800 },
    ],
    confidence: 0.91,
    latencyMs: 42,
    next: 'key-3',
  },
  {
    ...head,
    type: 'gather.result',
    flow: 'default',
    node: 'menu',
    input: 'dtmf',
    digits: '9',
    text: undefined,
    words: [],
    confidence: undefined,
    latencyMs: undefined,
    next: undefined,
  },
  { ...head, type: 'call.ended', reason: 'hangup' },
];

describe('toWire', () => {
  it('puts every call event in snake_case, nested objects too', () => {
    for (const event of events) {
      const wire = JSON.parse(JSON.stringify(toWire(event))) as unknown;
      expect(
        keys(wire).filter((k) => /[A-Z]/.test(k)),
        event.type,
      ).toEqual([]);
    }
  });

  it('gives each event its documented shape', () => {
    expect(events.map((e) => JSON.parse(JSON.stringify(toWire(e))) as unknown)).toStrictEqual([
      {
        ...wireHead,
        type: 'call.started',
        gateway: 'twilio',
        stream_id: 'MZ1',
        flow: 'default',
        // The caller's keys, as they came.
        parameters: { customerId: 'c-42', 'x-Trace': 't' },
      },
      { ...wireHead, type: 'utterance.started', utterance_id: 'u1', text: 'Hello.' },
      {
        ...wireHead,
        type: 'utterance.finished',
        utterance_id: 'u1',
        result: {
          status: 'failed',
          played_ms: 0,
          heard_text: '',
          error: { code: 'timeout', message: 'no answer' },
          first_byte_ms: null,
          first_frame_ms: null,
          underruns: 0,
        },
      },
      {
        ...wireHead,
        type: 'barge-in',
        utterance_id: null,
        onset_ms: 1000,
        detected_ms: 1300,
        played_ms: 800,
        heard_text: 'Hel',
      },
      { ...wireHead, type: 'dtmf', digit: '5' },
      {
        ...wireHead,
        type: 'flow',
        event: { type: 'flow.node', flow: 'default', node: 'menu', detail: { digits: '1', next: 'key-1' } },
      },
      {
        ...wireHead,
        type: 'gather.result',
        flow: 'default',
        node: 'menu',
        input: 'speech',
        digits: '3',
        text: 'three please',
        words: [
          { word: 'three', start_ms: 2010, end_ms: 2380 },
          { word: 'please', start_ms: 2380, end_ms: 2800 },
        ],
        confidence: 0.91,
        latency_ms: 42,
        next: 'key-3',
      },
      {
        ...wireHead,
        type: 'gather.result',
        flow: 'default',
        node: 'menu',
        input: 'dtmf',
        // What speech alone has is null for keys; a key with no branch and no `otherwise` retries.
        digits: '9',
        text: null,
        words: [],
        confidence: null,
        latency_ms: null,
        next: null,
      },
      { ...wireHead, type: 'call.ended', reason: 'hangup' },
    ]);
  });

  it('leaves the event it was given alone: in-process code keeps reading camelCase', () => {
    const event = events[1]!;
    const before = structuredClone(event);
    toWire(event);
    expect(event).toStrictEqual(before);
  });
});
