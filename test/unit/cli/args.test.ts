/** The command lines the CLI understands, and the usage errors (exit 2) for those it does not. */
import { describe, expect, it } from 'vitest';
import { integerOption, keyValueOptions, serviceTarget, UsageError } from '../../../src/cli/args.js';
import { mediaStreamUrl, parseCall } from '../../../src/cli/call.js';
import { runCli, splitLeading } from '../../../src/cli/cli.js';
import { parseSay, type SayPlan } from '../../../src/cli/say.js';
import { parseVoices } from '../../../src/cli/voices.js';

const PIPE = { stdoutIsTTY: false };
const TTY = { stdoutIsTTY: true };

function usage(fn: () => unknown): UsageError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(UsageError);
    return error as UsageError;
  }
  throw new Error('expected a usage error');
}

function sayPlan(args: string[], env = {}, io = PIPE): SayPlan {
  const parsed = parseSay(args, env, io);
  if (parsed.help) throw new Error('unexpected help');
  return parsed.plan;
}

describe('say', () => {
  it('takes the text, voice, format and output, with defaults', () => {
    expect(sayPlan(['Hello', 'there.', '-o', 'out.wav'])).toEqual({
      text: 'Hello there.',
      voiceId: 'voxbridge-default',
      format: 'wav_24000',
      modelId: undefined,
      output: 'out.wav',
      play: false,
      target: { baseUrl: 'http://127.0.0.1:8080/api/speech', apiKey: '' },
    });
    const plan = sayPlan(
      ['--voice', 'v1', '--format', 'mp3_44100_192', '--model', 'm', '--play', 'Hi.'],
      {},
      TTY,
    );
    expect(plan).toMatchObject({ voiceId: 'v1', format: 'mp3_44100_192', modelId: 'm', play: true });
    expect(plan.output).toBeUndefined();
  });

  it('"-" reads stdin; a piped stdout is the default output', () => {
    expect(sayPlan(['-'])).toMatchObject({ text: undefined, output: '-' });
    expect(parseSay(['--help'], {}, TTY)).toEqual({ help: true });
  });

  it('says what is wrong', () => {
    expect(usage(() => parseSay(['-o', 'x'], {}, TTY)).message).toContain('missing the text');
    expect(usage(() => parseSay(['Hi.'], {}, TTY)).message).toContain('give -o FILE or --play');
    expect(usage(() => parseSay(['--format', 'ulaw_8000', 'Hi.'], {}, PIPE)).message).toBe(
      '--format must be one of pcm_24000, wav_24000, mp3_44100_192, got "ulaw_8000"',
    );
    expect(usage(() => parseSay(['--bogus', 'Hi.'], {}, PIPE)).message).toBe("unknown option '--bogus'");
    expect(usage(() => parseSay(['Hi.', '--voice'], {}, PIPE)).message).toBe(
      "option '--voice <value>' argument missing",
    );
    expect(usage(() => parseSay(['--play=yes', 'Hi.'], {}, PIPE)).message).toContain('--play');
    expect(usage(() => parseSay(['--voice', '', 'Hi.'], {}, PIPE)).message).toBe('--voice must not be empty');
    expect(usage(() => parseSay(['-o', '', 'Hi.'], {}, PIPE)).message).toContain('--output must name a file');
    expect(usage(() => parseSay(['--bogus'], {}, PIPE)).command).toBe('say');
  });
});

describe('the speech service target', () => {
  it('--url and --key, else SPEECH_BASE_URL and SPEECH_API_KEY, else this machine on $PORT', () => {
    expect(serviceTarget({}, { PORT: '9000' }, 'say')).toEqual({
      baseUrl: 'http://127.0.0.1:9000/api/speech',
      apiKey: '',
    });
    // SPEECH_BASE_URL is a server's base, as the app reads it: the prefix is added.
    expect(
      serviceTarget({}, { SPEECH_BASE_URL: 'https://tts.example.com/', SPEECH_API_KEY: 'k' }, 'say'),
    ).toEqual({
      baseUrl: 'https://tts.example.com/api/speech',
      apiKey: 'k',
    });
    expect(
      serviceTarget({ url: 'http://h:1/api/speech/', key: 'cli' }, { SPEECH_API_KEY: 'env' }, 'say'),
    ).toEqual({
      baseUrl: 'http://h:1/api/speech',
      apiKey: 'cli',
    });
    expect(serviceTarget({ url: 'http://h/proxy/tts' }, {}, 'say').baseUrl).toBe('http://h/proxy/tts');
  });

  it('keeps credentials in the URL for the client to send, and never shows them in a message', () => {
    expect(
      serviceTarget({}, { SPEECH_BASE_URL: 'https://bob:hunter2-PASS@tts.example/' }, 'say').baseUrl,
    ).toBe('https://bob:hunter2-PASS@tts.example/api/speech');
    const message = usage(() => serviceTarget({ url: 'ftp://bob:hunter2-PASS@h/' }, {}, 'say')).message;
    expect(message).toContain('must be http(s)');
    expect(message).not.toContain('hunter2');
  });

  it('refuses what is not an http(s) URL', () => {
    expect(usage(() => serviceTarget({ url: 'not a url' }, {}, 'say')).message).toBe(
      '--url is not a URL: "not a url"',
    );
    expect(usage(() => serviceTarget({}, { SPEECH_BASE_URL: '::' }, 'say')).message).toContain(
      'SPEECH_BASE_URL',
    );
    expect(usage(() => serviceTarget({ url: 'ftp://h/' }, {}, 'say')).message).toContain('must be http(s)');
    expect(usage(() => serviceTarget({ url: 'http://h/?x=1' }, {}, 'say')).message).toContain('no query');
  });
});

describe('voices', () => {
  it('list and add', () => {
    expect(parseVoices(['list', '--json', '--search', 'ada'], {})).toMatchObject({
      help: false,
      plan: { action: 'list', json: true, search: 'ada' },
    });
    expect(
      parseVoices(
        ['add', '--name', 'Ada', 'a.wav', 'b.mp3', '--label', 'accent=british', '--label', 'x=a=b'],
        {},
      ),
    ).toMatchObject({
      help: false,
      plan: {
        action: 'add',
        name: 'Ada',
        files: ['a.wav', 'b.mp3'],
        labels: { accent: 'british', x: 'a=b' },
      },
    });
    expect(parseVoices(['--help'], {})).toEqual({ help: true });
    expect(parseVoices(['add', '--help'], {})).toEqual({ help: true });
  });

  it('says what is wrong', () => {
    expect(usage(() => parseVoices([], {})).message).toBe('missing the action: list or add');
    expect(usage(() => parseVoices(['remove'], {})).message).toBe(
      'unknown voices action "remove" (list or add)',
    );
    expect(usage(() => parseVoices(['list', 'extra'], {})).message).toBe('unexpected argument "extra"');
    expect(usage(() => parseVoices(['add', 'a.wav'], {})).message).toBe('add needs --name NAME');
    expect(usage(() => parseVoices(['add', '--name', 'A'], {})).message).toContain(
      'at least one audio sample',
    );
    expect(usage(() => parseVoices(['add', '--name', 'A', '--label', 'oops', 'a.wav'], {})).message).toBe(
      '--label must look like key=value, got "oops"',
    );
  });
});

describe('call', () => {
  it('takes the flow, digits, recording and hang-up time', () => {
    const parsed = parseCall(
      [
        '--flow',
        'default',
        '--param',
        'lang=en',
        '--digits',
        '1#a',
        '--record',
        'r.wav',
        '--hangup-after-ms',
        '5000',
      ],
      { PORT: '9000', MEDIA_STREAM_TOKEN: 'tok' },
    );
    expect(parsed).toMatchObject({
      help: false,
      plan: {
        url: 'ws://127.0.0.1:9000/media/twilio',
        token: 'tok',
        parameters: { lang: 'en', flow: 'default' },
        digits: '1#A',
        record: 'r.wav',
        hangupAfterMs: 5000,
        play: true,
        mic: false,
      },
    });
    if (parsed.help) return;
    expect(parsed.plan.callSid).toMatch(/^CA[0-9a-f]{32}$/);
    expect(parseCall(['--no-play', '--call-sid', 'CA1'], {})).toMatchObject({
      plan: { play: false, callSid: 'CA1', parameters: {} },
    });
  });

  it('turns a server URL into its Twilio media-stream endpoint', () => {
    expect(mediaStreamUrl('http://127.0.0.1:8080', {})).toBe('ws://127.0.0.1:8080/media/twilio');
    expect(mediaStreamUrl('https://voice.example.com/api/speech', {})).toBe(
      'wss://voice.example.com/media/twilio',
    );
    expect(mediaStreamUrl('wss://h/base/media/twilio/tok', {})).toBe('wss://h/base/media/twilio/tok');
    expect(mediaStreamUrl('ws://h/media/twilio?x=1', {})).toBe('ws://h/media/twilio?x=1');
    expect(mediaStreamUrl(undefined, {})).toBe('ws://127.0.0.1:8080/media/twilio');
  });

  it('says what is wrong', () => {
    expect(usage(() => parseCall(['--digits', '12x'], {})).message).toBe(
      '--digits takes keys 0-9 * # A-D, got "12x"',
    );
    expect(usage(() => parseCall(['--hangup-after-ms', 'soon'], {})).message).toContain(
      '--hangup-after-ms must be a whole number',
    );
    expect(usage(() => parseCall(['--hangup-after-ms', '0'], {})).message).toContain('from 1 to');
    expect(usage(() => parseCall(['--url', 'ftp://h'], {})).message).toBe(
      '--url must be ws(s) or http(s), got "ftp://h"',
    );
    expect(usage(() => parseCall(['now'], {})).message).toBe('unexpected argument "now"');
    expect(usage(() => parseCall(['--flow', ''], {})).message).toBe('--flow must name a flow');
    expect(usage(() => parseCall(['--mic=1'], {})).command).toBe('call');
  });
});

describe('helpers', () => {
  it('whole numbers only', () => {
    expect(integerOption('n', '42', 'call')).toBe(42);
    for (const bad of ['-1', '1.5', '1e3', '', ' 7'])
      expect(usage(() => integerOption('n', bad, 'call')).message).toContain('--n must be a whole number');
    expect(usage(() => integerOption('n', '11', 'call', { max: 10 })).message).toBe(
      '--n must be a whole number from 0 to 10, got "11"',
    );
  });

  it('key=value', () => {
    expect(keyValueOptions('param', ['a=1', 'b='], 'call')).toEqual({ a: '1', b: '' });
    expect(usage(() => keyValueOptions('param', ['=1'], 'call')).message).toContain('key=value');
  });
});

describe('the top level', () => {
  it('keeps global options given before the command', () => {
    expect(splitLeading(['--url', 'http://h', '--key=k', 'say', 'Hi.'])).toEqual({
      kind: 'command',
      globals: ['--url', 'http://h', '--key=k'],
      rest: ['say', 'Hi.'],
    });
    expect(splitLeading(['-V'])).toEqual({ kind: 'version' });
    expect(splitLeading(['--help', 'say'])).toEqual({ kind: 'help' });
    expect(usage(() => splitLeading([])).message).toBe('no command given');
    expect(usage(() => splitLeading(['--url'])).message).toBe("option '--url <value>' argument missing");
    expect(usage(() => splitLeading(['--loud', 'say'])).message).toBe(
      "unknown option '--loud' before the command",
    );
  });

  it('a usage error exits 2 with the message and where to look', async () => {
    let err = '';
    const io = { out: () => undefined, err: (text: string) => void (err += text) };
    expect(await runCli(['say', '--bogus', 'Hi.'], {}, io)).toBe(2);
    expect(err).toBe("voxbridge say: unknown option '--bogus'\nSee `voxbridge say --help`.\n");
    err = '';
    expect(await runCli(['fly'], {}, io)).toBe(2);
    expect(err).toBe('voxbridge: unknown command "fly" (say, voices, call)\nSee `voxbridge --help`.\n');
  });

  it('help and version exit 0 on stdout', async () => {
    let out = '';
    const io = { out: (text: string) => void (out += text), err: () => undefined };
    expect(await runCli(['call', '--help'], {}, io)).toBe(0);
    expect(out).toMatch(/^Usage: voxbridge call/);
    out = '';
    expect(await runCli(['--version'], {}, io)).toBe(0);
    expect(out).toMatch(/^\d+\.\d+\.\d+/);
  });
});
