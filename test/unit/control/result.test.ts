import { describe, expect, it } from 'vitest';
import { interruptResultJson, resultError, utteranceResultJson } from '../../../src/control/result.js';
import { SpeechServiceError } from '../../../src/speech/errors.js';
import type { UtteranceResult } from '../../../src/speaker/speaker.js';

const metrics = { firstByteMs: 42, firstFrameMs: 61, underruns: 1, cachedSegments: 0, requestedSegments: 2 };

describe('an utterance result on the wire', () => {
  it('is snake_case with every field, and no error when it played', () => {
    const played: UtteranceResult = { status: 'played', playedMs: 1200, heardText: 'Hello.', metrics };
    expect(utteranceResultJson(played)).toStrictEqual({
      status: 'played',
      played_ms: 1200,
      heard_text: 'Hello.',
      first_byte_ms: 42,
      first_frame_ms: 61,
      underruns: 1,
    });
  });

  it('keeps the times it never measured as null, so the keys survive JSON', () => {
    const failed: UtteranceResult = {
      status: 'failed',
      playedMs: 0,
      heardText: '',
      error: new SpeechServiceError({ code: 'voice_not_found', message: 'no voice x', retryable: false }),
      metrics: { ...metrics, firstByteMs: undefined, firstFrameMs: undefined, underruns: 0 },
    };
    expect(JSON.parse(JSON.stringify(utteranceResultJson(failed)))).toStrictEqual({
      status: 'failed',
      played_ms: 0,
      heard_text: '',
      error: { code: 'voice_not_found', message: 'no voice x' },
      first_byte_ms: null,
      first_frame_ms: null,
      underruns: 0,
    });
  });

  it('makes any failure {code, message}: an uncoded Error, a string, anything else', () => {
    expect(resultError(new Error('speaker is closed'))).toEqual({
      code: 'error',
      message: 'speaker is closed',
    });
    expect(resultError('went wrong')).toEqual({ code: 'error', message: 'went wrong' });
    expect(resultError({ code: 42 })).toEqual({ code: 'error', message: 'utterance failed' });
    expect(resultError(null)).toEqual({ code: 'error', message: 'utterance failed' });
  });

  it('puts an interrupt on the wire in the same case', () => {
    expect(interruptResultJson({ interrupted: true, playedMs: 300, heardText: 'Hi' })).toStrictEqual({
      interrupted: true,
      played_ms: 300,
      heard_text: 'Hi',
    });
  });
});
