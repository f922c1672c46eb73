/**
 * The local speech service on a loopback port, as the benchmarks that measure its engines run it: every
 * core a worker, one key with every scope, the service's own routes under `/api/speech` as the app mounts
 * them. `close()` stops it and removes its data directory.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { SCOPES } from '../src/service/auth.js';
import type { OnnxModelConfig } from '../src/service/engine/onnx/model-dir.js';
import { LocalSpeechService } from '../src/service/index.js';
import { SpeechClient } from '../src/speech/client.js';

export interface BenchService {
  readonly service: LocalSpeechService;
  readonly dataDir: string;
  /** A client of `/stream` (and whole bodies); `timed` asks for character timings. */
  client(timed?: boolean): SpeechClient;
  close(): Promise<void>;
}

const KEY = 'bench-local-service-key-0123456789abcdef';

/**
 * Starts the service; `prepare(dataDir)` runs before it opens its store (to put voices in it);
 * `onnxModels`, neural voices to load besides the built-in engines.
 */
export async function startBenchService(
  name: string,
  prepare?: (dataDir: string) => Promise<void>,
  options: { onnxModels?: readonly OnnxModelConfig[] } = {},
): Promise<BenchService> {
  const dataDir = await mkdtemp(join(tmpdir(), `voxbridge-bench-${name}-`));
  await prepare?.(dataDir);
  const service = await LocalSpeechService.start({
    dataDir,
    keys: [{ id: 'default', key: KEY, scopes: SCOPES }],
    workers: availableParallelism(),
    ...(options.onnxModels ? { onnxModels: options.onnxModels } : {}),
  });
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    void service.handle(req, res, url.pathname.slice('/api/speech'.length), url);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const clients: SpeechClient[] = [];
  return {
    service,
    dataDir,
    client: (timed = false) => {
      const c = new SpeechClient({
        baseUrl: base,
        pathPrefix: '/api/speech',
        apiKey: KEY,
        timestamps: timed,
      });
      clients.push(c);
      return c;
    },
    close: async () => {
      await Promise.all(clients.map((c) => c.close()));
      await new Promise((resolve) => server.close(resolve));
      await service.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
