/**
 * The voices of the ONNX models the operator configured, as voices of the service: one per speaker of
 * each model that loaded, visible to every key (like the built-in cast), listed by `GET /v2/voices`.
 * Their ids come from the model's name and the speaker, so they stay the same across restarts and
 * machines: `onnx-<model>` for a single-speaker model, `onnx-<model>-<speaker id>` for the speakers of
 * a multi-speaker one (`onnx-vits-piper-en-us-libritts-r-medium-12`).
 */
import type { EngineDescriptor } from '../engine/engine.js';
import type { StoredVoice } from './store.js';

export const ONNX_VOICE_PREFIX = 'onnx-';

export function onnxVoices(engine: EngineDescriptor | undefined): StoredVoice[] {
  if (!engine) return [];
  const perModel = new Map<string, number>();
  for (const v of engine.voices)
    if (v.params?.engine === 'onnx') perModel.set(v.params.model, (perModel.get(v.params.model) ?? 0) + 1);
  const voices: StoredVoice[] = [];
  for (const v of engine.voices) {
    const params = v.params;
    if (params?.engine !== 'onnx') continue;
    const several = (perModel.get(params.model) ?? 0) > 1 || params.speaker !== 0;
    const language = v.languages[0];
    voices.push({
      voice_id: `${ONNX_VOICE_PREFIX}${params.model}${several ? `-${params.speaker}` : ''}`,
      name: v.name ?? params.model,
      owner: null,
      category: 'premade',
      description: 'A neural voice (VITS) this service runs offline, from a model its operator installed.',
      labels: {
        ...(language ? { language } : {}),
        ...(v.languages[1] ? { accent: v.languages[1] } : {}),
        use_case: 'general',
        engine: 'onnx',
      },
      created_at_unix: 0,
      engine: params,
      samples: [],
    });
  }
  return voices;
}
