/**
 * The browser phone: `GET /` serves a page that calls voxbridge the way a Twilio gateway does (Media
 * Streams over a WebSocket to `/media/twilio`), and the small JSON routes it needs under `/phone`:
 *
 * - `GET /phone/config`: what the page must ask for (tokens) and whether it can call at all; public.
 * - `GET /phone/voices`: the speech service's voices (`GET /v2/voices`, through our client, so the page
 *   needs no speech API key); behind CONTROL_TOKEN.
 * - `GET /phone/flows`: the IVR flows, for the page's flow picker and its picture of the flow; behind
 *   CONTROL_TOKEN.
 * - `/phone/js/…`: the page's compiled modules (`dist/web`, built by `npm run build`), `/phone/style.css`.
 */
import { readFile } from 'node:fs/promises';
import { extname, join, resolve, sep } from 'node:path';
import type { ServerResponse } from 'node:http';
import type { GatewayName } from '../protocols/types.js';
import type { Flow } from '../flows/schema.js';
import type { SpeechClient } from '../speech/client.js';
import {
  bearerAuthorized,
  sendJson,
  sendMethodNotAllowed,
  sendUnauthorized,
  type RouteHandler,
} from '../http/http.js';
import type { Route } from '../http/router.js';
import { PROJECT_ROOT } from '../paths.js';

/** The page's HTML and CSS, as written (no build step). */
const PAGE_DIR = join(PROJECT_ROOT, 'web', 'phone');
/** The page's TypeScript, compiled by `npm run build` (web/tsconfig.json). */
const SCRIPT_DIR = join(PROJECT_ROOT, 'dist', 'web');

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.map': 'application/json',
};

/** Only what the page is made of is served: these names under PAGE_DIR, and `.js`/`.js.map` under SCRIPT_DIR. */
const PAGE_FILES = new Set(['index.html', 'style.css']);
const SCRIPT_PATH = /^(?:[A-Za-z0-9_-]+\/)*[A-Za-z0-9_.-]+\.js(?:\.map)?$/;

export interface PhonePageOptions {
  gateways: readonly GatewayName[];
  flows: Record<string, Flow>;
  defaultFlow: string | null;
  client: SpeechClient;
  secrets: {
    controlToken: string | undefined;
    mediaStreamToken: string | undefined;
    twilioAuthToken: string | undefined;
  };
}

export interface PhoneConfig {
  media: { path: string; available: boolean; reason?: string; token_required: boolean };
  control: { token_required: boolean };
}

/** What the page needs to know before it can call, without giving anything away. */
export function phoneConfig(options: PhonePageOptions): PhoneConfig {
  const { secrets } = options;
  const media: PhoneConfig['media'] = {
    path: '/media/twilio',
    available: true,
    token_required: secrets.mediaStreamToken !== undefined,
  };
  if (!options.gateways.includes('twilio')) {
    media.available = false;
    media.reason = 'the browser phone speaks the Twilio protocol: add twilio to calls.gateways';
  } else if (secrets.twilioAuthToken !== undefined && secrets.mediaStreamToken === undefined) {
    // A browser cannot sign like Twilio; with MEDIA_STREAM_TOKEN set it may present that instead.
    media.available = false;
    media.reason = 'TWILIO_AUTH_TOKEN is set: set MEDIA_STREAM_TOKEN too for the browser phone to connect';
  }
  return { media, control: { token_required: secrets.controlToken !== undefined } };
}

/** A flow as the page draws it: its nodes in order of declaration, with where each goes. */
function describeFlow(flow: Flow): Record<string, unknown> {
  return {
    start: flow.start,
    nodes: Object.entries(flow.nodes).map(([name, node]) => {
      const next = new Set<string>();
      if ('next' in node && node.next) next.add(node.next);
      if (node.type === 'gather') {
        for (const target of Object.values(node.branches)) next.add(target);
        if (node.otherwise) next.add(node.otherwise);
        if (node.onFail) next.add(node.onFail);
      }
      return { name, type: node.type, next: [...next] };
    }),
  };
}

async function sendFile(res: ServerResponse, path: string, head: boolean): Promise<boolean> {
  let body: Buffer;
  try {
    body = await readFile(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw error;
  }
  res.writeHead(200, {
    'content-type': CONTENT_TYPES[extname(path)] ?? 'application/octet-stream',
    'content-length': body.length,
    'cache-control': 'no-cache',
    'x-content-type-options': 'nosniff',
  });
  res.end(head ? undefined : body);
  return true;
}

/** `GET /`: the page itself. Mounted at `/`, so it sees only that exact path. */
export function phonePageRoot(): RouteHandler {
  return async (req, res, path) => {
    if (path !== '/') return false;
    const method = req.method ?? 'GET';
    if (method !== 'GET' && method !== 'HEAD') return sendMethodNotAllowed(res, 'GET, HEAD');
    return sendFile(res, join(PAGE_DIR, 'index.html'), method === 'HEAD');
  };
}

/** Everything under `/phone`. */
export function phonePageApi(options: PhonePageOptions): RouteHandler {
  const config = phoneConfig(options);
  return async (req, res, path) => {
    const method = req.method ?? 'GET';
    if (method !== 'GET' && method !== 'HEAD') return sendMethodNotAllowed(res, 'GET, HEAD');
    const head = method === 'HEAD';
    if (path === '/config') {
      sendJson(res, 200, config);
      return true;
    }
    if (path === '/voices' || path === '/flows') {
      if (!bearerAuthorized(req, options.secrets.controlToken)) {
        sendUnauthorized(res);
        return true;
      }
      if (path === '/flows') {
        const flows = Object.fromEntries(Object.entries(options.flows).map(([n, f]) => [n, describeFlow(f)]));
        sendJson(res, 200, { default_flow: options.defaultFlow, flows });
        return true;
      }
      const page = await options.client.listVoices({ pageSize: 100 });
      sendJson(res, 200, {
        voices: page.voices.map((v) => ({ voice_id: v.voiceId, name: v.name, category: v.category })),
      });
      return true;
    }
    const name = path.slice(1);
    if (PAGE_FILES.has(name) && name !== 'index.html') {
      if (await sendFile(res, join(PAGE_DIR, name), head)) return true;
    } else if (name.startsWith('js/') && SCRIPT_PATH.test(name.slice(3))) {
      const file = resolve(SCRIPT_DIR, name.slice(3));
      if (file.startsWith(SCRIPT_DIR + sep) && (await sendFile(res, file, head))) return true;
    }
    sendJson(res, 404, { error: `no route for ${method} /phone${path}` });
    return true;
  };
}

/** The browser phone's routes: `GET /` and everything under `/phone`. */
export function phonePageRoutes(options: PhonePageOptions): Route[] {
  return [
    { prefix: '/phone', handler: phonePageApi(options) },
    { prefix: '/', handler: phonePageRoot() },
  ];
}
