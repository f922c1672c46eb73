/**
 * What another instance answers, read as something a stranger sent: a registry entry may point anywhere
 * (anyone who can write to Redis can add one), so an answer is read up to a size and within a time, and
 * failing either costs the one request that asked, with a coded error, never the process's memory.
 */
import type { Dispatcher } from 'undici';

export type PeerAnswerCode =
  /** Larger than the bound (`cluster.maxAnswerBytes`): cut, not relayed. */
  | 'owner_answer_too_large'
  /** Not there within `cluster.answerTimeoutMs`. */
  | 'owner_timeout'
  /** Cut mid-answer. */
  | 'owner_answer_broken';

export class PeerAnswerError extends Error {
  override readonly name = 'PeerAnswerError';
  constructor(
    readonly code: PeerAnswerCode,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }

  /** What the client is answered: the instance it reached is a gateway to the owner. */
  get status(): 502 | 504 {
    return this.code === 'owner_timeout' ? 504 : 502;
  }
}

/**
 * An answer's whole body, up to `limitBytes`: a larger declared `Content-Length` is refused unread, and
 * a body that passes the limit while it arrives is cut there (its connection destroyed). The caller
 * bounds the time (its request's signal).
 */
export async function readAnswer(answer: Dispatcher.ResponseData, limitBytes: number): Promise<Buffer> {
  const tooLarge = (): PeerAnswerError => {
    answer.body.destroy();
    return new PeerAnswerError('owner_answer_too_large', `the answer is larger than ${limitBytes} bytes`);
  };
  const declared = Number(answer.headers['content-length']);
  if (Number.isFinite(declared) && declared > limitBytes) throw tooLarge();
  const parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of answer.body) {
    const buf = chunk as Buffer;
    size += buf.length;
    if (size > limitBytes) throw tooLarge();
    parts.push(buf);
  }
  return Buffer.concat(parts, size);
}
