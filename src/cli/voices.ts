/** `voxbridge voices list` and `voxbridge voices add`: the speech service's voices. */
import { readFile } from 'node:fs/promises';
import { basename, extname } from 'node:path';
import type { AddVoiceFile, Voice } from '../speech/client.js';
import {
  CliError,
  GLOBAL_HELP,
  GLOBAL_OPTIONS,
  keyValueOptions,
  noPositionals,
  parseCommand,
  serviceTarget,
  UsageError,
  type Env,
  type Parsed,
  type ServiceTarget,
} from './args.js';
import { explainSpeechError, openClient } from './service.js';

export const VOICES_HELP = `Usage: voxbridge voices list [--json] [--search TEXT]
       voxbridge voices add --name NAME SAMPLE... [--description TEXT] [--label KEY=VALUE]...

list   every voice the key can use: id, name and category (--json: the whole records, as JSON)
add    creates a voice from audio samples (WAV or MP3) and prints its id on stdout

${GLOBAL_HELP}

Examples:
  voxbridge voices list
  voxbridge voices list --json | jq -r '.[].voice_id'
  voxbridge voices add --name "Ada" --description "calm, low" ada-1.wav ada-2.wav`;

const LIST_OPTIONS = { ...GLOBAL_OPTIONS, json: { type: 'boolean' }, search: { type: 'string' } } as const;

const ADD_OPTIONS = {
  ...GLOBAL_OPTIONS,
  name: { type: 'string' },
  description: { type: 'string' },
  label: { type: 'string', multiple: true },
  json: { type: 'boolean' },
} as const;

export interface ListPlan {
  action: 'list';
  json: boolean;
  search: string | undefined;
  target: ServiceTarget;
}

export interface AddPlan {
  action: 'add';
  name: string;
  files: string[];
  description: string | undefined;
  labels: Record<string, string>;
  json: boolean;
  target: ServiceTarget;
}

export type VoicesPlan = ListPlan | AddPlan;

export function parseVoices(args: readonly string[], env: Env): Parsed<VoicesPlan> {
  const [action, ...rest] = args;
  if (action === undefined || action === '--help' || action === '-h') {
    if (action === undefined) throw new UsageError('missing the action: list or add', 'voices');
    return { help: true };
  }
  if (action === 'list') {
    const { values, positionals } = parseCommand('voices', rest, LIST_OPTIONS);
    if (values.help) return { help: true };
    noPositionals(positionals, 'voices');
    const target = serviceTarget(values, env, 'voices');
    return { help: false, plan: { action, json: values.json ?? false, search: values.search, target } };
  }
  if (action === 'add') {
    const { values, positionals } = parseCommand('voices', rest, ADD_OPTIONS);
    if (values.help) return { help: true };
    if (values.name === undefined || values.name.trim() === '')
      throw new UsageError('add needs --name NAME', 'voices');
    if (positionals.length === 0)
      throw new UsageError('add needs at least one audio sample (a WAV or MP3 file)', 'voices');
    return {
      help: false,
      plan: {
        action,
        name: values.name,
        files: positionals,
        description: values.description,
        labels: keyValueOptions('label', values.label ?? [], 'voices'),
        json: values.json ?? false,
        target: serviceTarget(values, env, 'voices'),
      },
    };
  }
  throw new UsageError(`unknown voices action "${action}" (list or add)`, 'voices');
}

/** The wire's own field names, so the JSON reads like the API's. */
function voiceJson(v: Voice): Record<string, unknown> {
  return {
    voice_id: v.voiceId,
    name: v.name,
    category: v.category,
    ...(v.description === undefined ? {} : { description: v.description }),
    labels: v.labels,
    ...(v.createdAtUnix === undefined ? {} : { created_at_unix: v.createdAtUnix }),
  };
}

/** Left-aligned columns, two spaces apart. */
export function table(header: readonly string[], rows: ReadonlyArray<readonly string[]>): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]): string =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}

/** Pages of 100 until the service says there are no more. */
const MAX_PAGES = 1000;

async function listAll(plan: ListPlan): Promise<Voice[]> {
  const client = openClient(plan.target);
  try {
    const voices: Voice[] = [];
    let token: string | undefined;
    for (let page = 0; page < MAX_PAGES; page++) {
      const got = await client.listVoices({
        pageSize: 100,
        ...(token === undefined ? {} : { nextPageToken: token }),
        ...(plan.search === undefined ? {} : { search: plan.search }),
      });
      voices.push(...got.voices);
      token = got.nextPageToken;
      if (!got.hasMore || token === undefined) break;
    }
    return voices;
  } catch (error) {
    throw explainSpeechError(error, plan.target, 'voices');
  } finally {
    await client.close();
  }
}

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  '.wav': 'audio/wav',
  '.wave': 'audio/wav',
  '.mp3': 'audio/mpeg',
};

async function readSample(path: string): Promise<AddVoiceFile> {
  let data: Buffer;
  try {
    data = await readFile(path);
  } catch (error) {
    throw new CliError(`cannot read ${path}: ${(error as Error).message}`);
  }
  if (data.length === 0) throw new CliError(`${path} is empty`);
  const contentType = CONTENT_TYPES[extname(path).toLowerCase()];
  return { data, filename: basename(path), ...(contentType ? { contentType } : {}) };
}

async function add(plan: AddPlan): Promise<string> {
  const files = await Promise.all(plan.files.map(readSample));
  const client = openClient(plan.target);
  try {
    const added = await client.addVoice({
      name: plan.name,
      files,
      ...(plan.description === undefined ? {} : { description: plan.description }),
      ...(Object.keys(plan.labels).length === 0 ? {} : { labels: plan.labels }),
    });
    return plan.json
      ? JSON.stringify({ voice_id: added.voiceId, requires_verification: added.requiresVerification })
      : added.voiceId;
  } catch (error) {
    throw explainSpeechError(error, plan.target, 'voices');
  } finally {
    await client.close();
  }
}

/** Runs the plan; resolves with what goes to stdout. */
export async function runVoices(plan: VoicesPlan): Promise<string> {
  if (plan.action === 'add') return add(plan);
  const voices = await listAll(plan);
  if (plan.json) return JSON.stringify(voices.map(voiceJson), null, 2);
  return table(
    ['ID', 'NAME', 'CATEGORY'],
    voices.map((v) => [v.voiceId, v.name, v.category]),
  );
}
