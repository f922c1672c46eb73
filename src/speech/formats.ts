/** The three output formats of the speech-service contract, and what each one is on the wire. */
export const OUTPUT_FORMATS = ['pcm_24000', 'wav_24000', 'mp3_44100_192'] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

/**
 * The spec lists `output_format` as required with a default; we treat it as optional
 * (docs/speech-service.md).
 */
export const DEFAULT_OUTPUT_FORMAT: OutputFormat = 'wav_24000';

export interface FormatInfo {
  /** What our service sends. */
  readonly contentType: string;
  readonly sampleRate: number;
  readonly container: 'raw' | 'wav' | 'mp3';
  /** Bytes of one second of audio (MP3: its nominal bit rate), container overhead aside. */
  readonly bytesPerSecond: number;
  /**
   * Media types (lower case, no parameters) a server may declare for this format: ours, ElevenLabs'
   * (`audio/pcm` for raw PCM) and the common aliases.
   */
  readonly mediaTypes: readonly string[];
}

export const FORMAT_INFO: Readonly<Record<OutputFormat, FormatInfo>> = {
  pcm_24000: {
    contentType: 'audio/L16;rate=24000;channels=1',
    sampleRate: 24_000,
    container: 'raw',
    bytesPerSecond: 48_000,
    mediaTypes: ['audio/l16', 'audio/pcm'],
  },
  wav_24000: {
    contentType: 'audio/wav',
    sampleRate: 24_000,
    container: 'wav',
    bytesPerSecond: 48_000,
    mediaTypes: ['audio/wav', 'audio/x-wav', 'audio/wave', 'audio/vnd.wave'],
  },
  mp3_44100_192: {
    contentType: 'audio/mpeg',
    sampleRate: 44_100,
    container: 'mp3',
    bytesPerSecond: 24_000,
    mediaTypes: ['audio/mpeg', 'audio/mp3'],
  },
};

/**
 * "Bytes of some type" (RFC 9110 §8.3: what a recipient may assume when the header is missing). It
 * claims nothing, so it is accepted for every format, as a missing Content-Type is: generic proxies
 * and raw-PCM servers send it.
 */
const UNTYPED = 'application/octet-stream';

/**
 * Whether a response's Content-Type fits the requested format, so a web page (a login portal, a wrong
 * base URL) is never played as audio. A missing header or `application/octet-stream` is accepted;
 * anything else must be one of the format's media types. For raw PCM, a `rate` or `channels`
 * parameter that contradicts the format (`audio/L16;rate=16000`) is refused too: played as 24 kHz
 * mono it would come out at the wrong speed.
 */
export function acceptsContentType(format: OutputFormat, contentType: string | undefined): boolean {
  if (contentType === undefined || contentType.trim() === '') return true;
  const [type = '', ...params] = contentType.split(';');
  const mediaType = type.trim().toLowerCase();
  if (mediaType === UNTYPED) return true;
  const info = FORMAT_INFO[format];
  if (!info.mediaTypes.includes(mediaType)) return false;
  if (info.container !== 'raw') return true;
  for (const param of params) {
    const [name = '', value = ''] = param.split('=').map((part) => part.trim().toLowerCase());
    const unquoted = value.replace(/^"(.*)"$/, '$1');
    if (name === 'rate' && unquoted !== String(info.sampleRate)) return false;
    if (name === 'channels' && unquoted !== '1') return false;
  }
  return true;
}

export function isOutputFormat(value: unknown): value is OutputFormat {
  return typeof value === 'string' && (OUTPUT_FORMATS as readonly string[]).includes(value);
}

/** Media types (no parameters) a with-timestamps answer may declare, besides none or octet-stream. */
export const TIMESTAMPS_MEDIA_TYPES: readonly string[] = [
  'application/json',
  'application/x-ndjson',
  'application/ndjson',
  'application/jsonl',
];

/** Whether a with-timestamps answer's Content-Type fits: JSON (or nothing said), never a page or audio. */
export function acceptsTimestampsContentType(contentType: string | undefined): boolean {
  if (contentType === undefined || contentType.trim() === '') return true;
  const mediaType = (contentType.split(';')[0] ?? '').trim().toLowerCase();
  return mediaType === UNTYPED || TIMESTAMPS_MEDIA_TYPES.includes(mediaType);
}
