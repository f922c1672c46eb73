/**
 * Character timings of one response's audio: ElevenLabs' `alignment` (`/with-timestamps`), in
 * milliseconds from the response's first sample. One entry per character of the request's text, in
 * order. While a streamed response arrives the arrays grow; the entries present are final.
 */
export interface CharacterAlignment {
  readonly characters: string[];
  readonly startMs: number[];
  readonly endMs: number[];
}
