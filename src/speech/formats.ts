/** The three output formats of the speech-service contract, and what each one is on the wire. */
export const OUTPUT_FORMATS = ['pcm_24000', 'wav_24000', 'mp3_44100_192'] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

/** The spec lists `output_format` as required with a default; we treat it as optional (speech-api.md). */
export const DEFAULT_OUTPUT_FORMAT: OutputFormat = 'wav_24000';

export interface FormatInfo {
  readonly contentType: string;
  readonly sampleRate: number;
  readonly container: 'raw' | 'wav' | 'mp3';
}

export const FORMAT_INFO: Readonly<Record<OutputFormat, FormatInfo>> = {
  pcm_24000: { contentType: 'audio/L16;rate=24000;channels=1', sampleRate: 24_000, container: 'raw' },
  wav_24000: { contentType: 'audio/wav', sampleRate: 24_000, container: 'wav' },
  mp3_44100_192: { contentType: 'audio/mpeg', sampleRate: 44_100, container: 'mp3' },
};

export function isOutputFormat(value: unknown): value is OutputFormat {
  return typeof value === 'string' && (OUTPUT_FORMATS as readonly string[]).includes(value);
}
