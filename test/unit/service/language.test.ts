import { describe, expect, it } from 'vitest';
import type { EngineDescriptor } from '../../../src/service/engine/engine.js';
import type { EspeakVoiceParams, FliteVoiceParams } from '../../../src/service/engine/voice-params.js';
import { chooseEngine, EngineCatalog, LANGUAGE_CODE } from '../../../src/service/voices/language.js';

const licence = { spdx: 'x', copyleft: false, package: 'x', summary: 'x' };
const FLITE: EngineDescriptor = {
  id: 'flite',
  name: 'Flite',
  licence,
  languages: ['en', 'en-us'],
  voices: [],
};
const ESPEAK: EngineDescriptor = {
  id: 'espeak-ng',
  name: 'eSpeak NG',
  licence: { ...licence, copyleft: true },
  languages: ['de', 'en', 'en-gb-scotland', 'en-us', 'pt', 'pt-br', 'zh-yue'],
  voices: [],
};
const both = new EngineCatalog([FLITE, ESPEAK]);
const fliteOnly = new EngineCatalog([FLITE]);

const flite: FliteVoiceParams = { engine: 'flite', voice: 'kal16', f0Hz: 95, f0RangeHz: 11, rate: 1 };
const espeak: EspeakVoiceParams = {
  engine: 'espeak-ng',
  language: 'en-us',
  variant: 'f3',
  pitch: 60,
  range: 50,
  rateWpm: 180,
};

describe('chooseEngine', () => {
  it("speaks a Flite voice with Flite in English (the voice's own language, or asked for)", () => {
    for (const language of [undefined, 'en', 'en-GB', 'en-us'])
      expect(chooseEngine({ engine: flite, espeak }, language, fliteOnly)).toEqual({
        ok: true,
        params: flite,
      });
  });

  it("speaks another language with eSpeak-NG at the voice's eSpeak settings, in eSpeak's name for it", () => {
    expect(chooseEngine({ engine: flite, espeak }, 'de', both)).toEqual({
      ok: true,
      params: { ...espeak, language: 'de' },
    });
    expect(chooseEngine({ engine: flite, espeak }, 'pt-BR', both)).toMatchObject({
      params: { language: 'pt-br' },
    });
    expect(chooseEngine({ engine: flite, espeak }, 'zh', both)).toMatchObject({
      params: { language: 'zh-yue' },
    });
    // A voice without eSpeak settings of its own gets eSpeak's defaults.
    expect(chooseEngine({ engine: flite }, 'de', both)).toMatchObject({
      ok: true,
      params: { variant: 'm3' },
    });
  });

  it('refuses a language no engine here speaks, and says when installing eSpeak-NG would help', () => {
    const withoutEspeak = chooseEngine({ engine: flite, espeak }, 'de', fliteOnly);
    expect(withoutEspeak).toMatchObject({ ok: false });
    expect(!withoutEspeak.ok && withoutEspeak.message).toMatch(/eSpeak-NG.*not installed/);
    const nowhere = chooseEngine({ engine: flite, espeak }, 'xx', both);
    expect(!nowhere.ok && nowhere.message).toBe('no engine here speaks "xx"');
  });

  it('gives an English eSpeak voice to Flite when eSpeak is not installed, and keeps it on eSpeak when it is', () => {
    expect(chooseEngine({ engine: espeak, espeak }, undefined, both)).toEqual({ ok: true, params: espeak });
    const moved = chooseEngine({ engine: espeak, espeak }, undefined, fliteOnly);
    expect(moved).toMatchObject({ ok: true, params: { engine: 'flite', voice: 'slt' } });
    const german = { ...espeak, language: 'de' };
    expect(chooseEngine({ engine: german, espeak: german }, undefined, fliteOnly)).toMatchObject({
      ok: false,
    });
  });

  it('takes language tags as requests carry them, and nothing else', () => {
    for (const tag of ['en', 'de', 'pt-BR', 'zh-Hans', 'yue']) expect(LANGUAGE_CODE.test(tag)).toBe(true);
    for (const tag of ['', 'english', 'en_US', 'e', 'en-', '../x'])
      expect(LANGUAGE_CODE.test(tag)).toBe(false);
  });
});
