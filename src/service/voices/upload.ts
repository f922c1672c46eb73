/**
 * Receives `POST /v1/voices/add`'s multipart body: fields into memory (few and small), sample files
 * straight to disk in a staging directory of the voice store, each stream awaited (backpressure from
 * the disk), sized and hashed as it passes. Nothing of a file is held in memory but the chunk in
 * transit, and every byte is reserved against the store's size bound before it is written.
 */
import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import { join } from 'node:path';
import { Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import busboy from 'busboy';
import { badRequest, ServiceHttpError } from '../http-errors.js';
import type { StagedSample, VoiceStore } from './store.js';

export interface UploadLimits {
  readonly maxFiles: number;
  readonly maxFileBytes: number;
  readonly maxTotalBytes: number;
}

/** Form fields of one request; more are refused, never dropped. */
export const MAX_FIELDS = 32;
const MAX_FIELD_BYTES = 64 * 1024;

/** A received upload. `dispose()` removes what is left of its files and releases its reservation. */
export interface Upload {
  readonly fields: ReadonlyMap<string, string>;
  readonly files: readonly StagedSample[];
  dispose(): Promise<void>;
}

export function storeFull(store: VoiceStore, why?: string): ServiceHttpError {
  return new ServiceHttpError(
    507,
    'voice_storage_full',
    why ??
      `the voice store is full (${store.maxBytes} bytes of samples); delete voices or raise service.voices.maxStoreBytes`,
    'files',
  );
}

/**
 * Reads the whole multipart body. Resolves once every file is on disk; rejects, once the files written
 * so far are removed, with a ServiceHttpError (400, also when the body is malformed or cut short or the
 * client goes away mid-upload; 507 when the store or the disk is full), or with the disk's error.
 */
export async function receiveUpload(
  req: IncomingMessage,
  store: VoiceStore,
  limits: UploadLimits,
): Promise<Upload> {
  const type = req.headers['content-type'] ?? '';
  if (!type.toLowerCase().startsWith('multipart/form-data'))
    throw badRequest('body must be multipart/form-data', 'body');
  let parser: busboy.Busboy;
  try {
    parser = busboy({
      headers: req.headers,
      limits: {
        files: limits.maxFiles,
        fileSize: limits.maxFileBytes,
        fields: MAX_FIELDS,
        fieldSize: MAX_FIELD_BYTES,
      },
    });
  } catch (error) {
    throw badRequest(`malformed multipart body: ${(error as Error).message}`, 'body');
  }
  const dir = await store.stagingDir();
  let reserved = 0;
  let disposed = false;
  const dispose = async (): Promise<void> => {
    if (disposed) return;
    disposed = true;
    store.release(reserved);
    reserved = 0;
    await rm(dir, { recursive: true, force: true });
  };

  const fields = new Map<string, string>();
  /** By arrival order: writes may finish in another order. */
  const files: Array<StagedSample | undefined> = [];
  /** Stops every file still being written, before their files are removed. */
  const stopWriting = new AbortController();
  const written: Array<Promise<void>> = [];
  let total = 0;
  let failure: Error | undefined;

  const done = new Promise<void>((resolve, reject) => {
    /** A ServiceHttpError is the client's to hear; anything else becomes a 500. */
    const fail = (error: Error): void => {
      if (failure) return;
      failure = error;
      req.unpipe(parser);
      // What the client still sends is read and dropped, so the answer can reach it.
      req.resume();
      stopWriting.abort(error);
      reject(error);
    };

    parser.on('field', (name, value, info) => {
      if (info.nameTruncated) fail(badRequest('a field name is too long', 'body'));
      else if (info.valueTruncated) fail(badRequest(`field ${name} is too long`, name));
      else fields.set(name, value);
    });
    parser.on('fieldsLimit', () => fail(badRequest(`more than ${MAX_FIELDS} form fields`, 'body')));
    parser.on('filesLimit', () =>
      fail(badRequest(`at most ${limits.maxFiles} files may be sent`, 'files', 'too_many_files')),
    );
    parser.on('file', (name, stream, info) => {
      if (failure || name !== 'files') {
        stream.on('error', () => {});
        stream.resume();
        if (name !== 'files') fail(badRequest(`unexpected file field ${name}; samples go in "files"`, name));
        return;
      }
      const slot = files.length;
      files.push(undefined);
      const path = join(dir, `upload-${slot + 1}`);
      const hash = createHash('sha256');
      let size = 0;
      const meter = new Transform({
        transform(chunk: Buffer, _encoding, callback: TransformCallback): void {
          size += chunk.length;
          total += chunk.length;
          if (total > limits.maxTotalBytes) {
            callback(
              badRequest(`samples exceed ${limits.maxTotalBytes} bytes in all`, 'files', 'file_too_large'),
            );
            return;
          }
          if (!store.tryReserve(chunk.length)) {
            callback(storeFull(store));
            return;
          }
          reserved += chunk.length;
          hash.update(chunk);
          callback(null, chunk);
        },
      });
      let truncated = false;
      stream.on('limit', () => {
        truncated = true;
        fail(
          badRequest(`file ${info.filename} exceeds ${limits.maxFileBytes} bytes`, 'files', 'file_too_large'),
        );
      });
      written.push(
        pipeline(stream, meter, createWriteStream(path, { flags: 'wx' }), {
          signal: stopWriting.signal,
        }).then(
          () => {
            if (truncated || failure) return;
            files[slot] = {
              fileName: info.filename || 'sample',
              mimeType: info.mimeType,
              path,
              sizeBytes: size,
              sha256: hash.digest('hex'),
            };
          },
          (error: unknown) => fail(writeFailure(error, info.filename, store)),
        ),
      );
    });
    parser.on('error', (error: unknown) =>
      fail(badRequest(`malformed multipart body: ${errorMessage(error)}`, 'body')),
    );
    parser.on('close', () => {
      // Files finish writing after the parser has read their last byte.
      void Promise.all(written).then(() => {
        if (!failure) resolve();
      });
    });
    req.on('error', (error) => fail(badRequest(`the upload failed: ${error.message}`, 'body')));
    req.on('close', () => {
      if (!req.complete) fail(badRequest('the upload was cut short: the client went away', 'body'));
    });
    req.pipe(parser);
  });

  try {
    await done;
  } catch (error) {
    // Every writer has stopped (its streams were destroyed) before the directory goes.
    await Promise.allSettled(written);
    await dispose();
    throw error;
  }
  return { fields, files: files.filter((f) => f !== undefined), dispose };
}

/**
 * Why a file's pipeline failed: our own refusal (a limit), the disk (full: 507; otherwise the server's
 * fault, a 500), or the body itself (busboy's "Unexpected end of form" and the like: 400).
 */
function writeFailure(error: unknown, fileName: string | undefined, store: VoiceStore): Error {
  if (error instanceof ServiceHttpError) return error;
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (code === 'ENOSPC' || code === 'EDQUOT') return storeFull(store, 'the disk is full');
  if ((error as NodeJS.ErrnoException | undefined)?.syscall !== undefined)
    return new Error(`writing an uploaded sample failed`, { cause: error });
  return badRequest(`the upload of ${fileName || 'a file'} failed: ${errorMessage(error)}`, 'files');
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
