/**
 * The slash-command handlers with a fake interaction: the answers a user gets when something stands in
 * the way (no channel, missing permissions, a full channel, a typo in a character's name, direct
 * messages), which answers are private, and the command definitions Discord receives. Joining and
 * speaking for real are in test/integration/discord-bot.test.ts.
 */
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { ApplicationCommandOptionType, InteractionContextType } from 'discord.js';
import { COMMANDS, handleCommand, type CommandContext } from '../../../adapters/discord/commands.js';
import { DEFAULT_RECONNECT } from '../../../adapters/discord/connection-keeper.js';
import { DiscordGuilds } from '../../../adapters/discord/guilds.js';
import { SpeechClient } from '../../../src/speech/client.js';
import { FakeGuildAccess, FakeInteraction } from '../../helpers/discord/fake-interaction.js';

const GUILD = '100000000000000001';
const VOICE = '200000000000000001';

function context(overrides: Partial<CommandContext> = {}): { ctx: CommandContext; access: FakeGuildAccess } {
  const access = new FakeGuildAccess();
  const guilds = new DiscordGuilds({
    settings: {
      voiceId: 'voxbridge-default',
      bargeIn: { enabled: true, minSpeechMs: 200, maxGapMs: 120, minLevelDbfs: -45 },
      reconnect: DEFAULT_RECONNECT,
      guilds: {},
      narration: { narrator: 'Narrator', cast: { Narrator: { voiceId: 'a' }, Goblin: { voiceId: 'b' } } },
      joinTimeoutMs: 5000,
    },
    // Never reached by these tests: nothing here joins a channel.
    source: new SpeechClient({ baseUrl: 'http://127.0.0.1:9', apiKey: 'unused' }),
    logger: pino({ level: 'silent' }),
  });
  const ctx: CommandContext = {
    guilds,
    access,
    listVoices: () =>
      Promise.resolve([
        { voiceId: 'voxbridge-default', name: 'Vox (built-in)' },
        { voiceId: 'gm-deep', name: 'Deep narrator' },
      ]),
    logger: pino({ level: 'silent' }),
    ...overrides,
  };
  return { ctx, access };
}

describe('slash command handlers', () => {
  it('refuse direct messages', async () => {
    const { ctx } = context();
    const i = new FakeInteraction('say', { guildId: null, strings: { text: 'hi' } });
    await handleCommand(i, ctx);
    expect(i.answers).toEqual([
      { content: expect.stringMatching(/in a server/) as unknown, ephemeral: true },
    ]);
  });

  it('/join with the invoker in no voice channel says how to do it, privately', async () => {
    const { ctx } = context();
    const i = new FakeInteraction('join');
    await handleCommand(i, ctx);
    expect(i.last).toEqual({
      content: expect.stringMatching(/Join a voice channel first/) as unknown,
      ephemeral: true,
    });
    expect(ctx.guilds.list()).toHaveLength(0);
  });

  it('/join names the permissions the bot lacks instead of failing silently', async () => {
    const { ctx, access } = context();
    access.addChannel({ id: VOICE, missing: ['Connect', 'Speak'] });
    const i = new FakeInteraction('join', { channel: VOICE });
    await handleCommand(i, ctx);
    expect(i.last?.ephemeral).toBe(true);
    expect(i.last?.content).toMatch(new RegExp(`can't join <#${VOICE}>.*Connect and Speak permissions`));
    expect(ctx.guilds.list()).toHaveLength(0);
  });

  it('/join of a full channel, and of a channel that is not a voice channel, are answered', async () => {
    const { ctx, access } = context();
    access.addChannel({ id: VOICE, full: true });
    const full = new FakeInteraction('join', { channel: VOICE });
    await handleCommand(full, ctx);
    expect(full.last?.content).toBe(`<#${VOICE}> is full.`);
    const text = new FakeInteraction('join', { channel: '200000000000000099' });
    await handleCommand(text, ctx);
    expect(text.last?.content).toMatch(/is not a voice channel/);
  });

  it('/say into the invoker’s channel without Speak permission is refused before anything is said', async () => {
    const { ctx, access } = context();
    access.addChannel({ id: VOICE, missing: ['Speak'] });
    access.members.set('400000000000000001', VOICE);
    const i = new FakeInteraction('say', { strings: { text: 'Hello there' } });
    await handleCommand(i, ctx);
    expect(i.last?.content).toMatch(/missing the Speak permission there/);
    expect(i.last?.ephemeral).toBe(true);
  });

  it('/stop and /skip with nothing playing say so', async () => {
    const { ctx } = context();
    const stop = new FakeInteraction('stop');
    await handleCommand(stop, ctx);
    expect(stop.last).toEqual({ content: 'Nothing to stop.', ephemeral: true });
    const skip = new FakeInteraction('skip');
    await handleCommand(skip, ctx);
    expect(skip.last).toEqual({ content: 'Nothing is playing.', ephemeral: true });
  });

  it('/voices lists names and ids privately; a failing service becomes an answer, not a crash', async () => {
    const { ctx } = context();
    const i = new FakeInteraction('voices');
    await handleCommand(i, ctx);
    expect(i.last?.ephemeral).toBe(true);
    expect(i.last?.content).toContain('Vox (built-in) — `voxbridge-default`');
    expect(i.last?.content).toContain('Deep narrator — `gm-deep`');

    const broken = context({ listVoices: () => Promise.reject(new Error('service unavailable')) });
    const j = new FakeInteraction('voices');
    await handleCommand(j, broken.ctx);
    expect(j.last?.content).toBe('Something went wrong: service unavailable');
  });

  it('/narrate with an unknown character names it and the cast, and joins nothing', async () => {
    const { ctx, access } = context();
    access.addChannel({ id: VOICE });
    access.members.set('400000000000000001', VOICE);
    const i = new FakeInteraction('narrate', {
      strings: { script: '[Goblin] Halt! [Gobiln] Who goes there?' },
    });
    await handleCommand(i, ctx);
    expect(i.last?.ephemeral).toBe(true);
    expect(i.last?.content).toMatch(/Gobiln/);
    expect(i.last?.content).toMatch(/Characters: Narrator, Goblin/);
    expect(ctx.guilds.list()).toHaveLength(0);
  });

  it('/bargein turns barge-in off and on for this guild only', async () => {
    const { ctx } = context();
    const off = new FakeInteraction('bargein', { booleans: { enabled: false } });
    await handleCommand(off, ctx);
    expect(ctx.guilds.bargeInEnabled(GUILD)).toBe(false);
    expect(ctx.guilds.bargeInEnabled('100000000000000002')).toBe(true);
    expect(off.last?.content).toMatch(/Barge-in is off/);
    const on = new FakeInteraction('bargein', { booleans: { enabled: true } });
    await handleCommand(on, ctx);
    expect(ctx.guilds.bargeInEnabled(GUILD)).toBe(true);
  });

  it('the definitions: every command, guild-only, required text with Discord’s length limit', () => {
    expect(COMMANDS.map((c) => c.name).sort()).toEqual(
      ['bargein', 'join', 'leave', 'narrate', 'relay', 'say', 'skip', 'stop', 'voices'].sort(),
    );
    for (const c of COMMANDS) expect(c.contexts).toEqual([InteractionContextType.Guild]);
    const say = COMMANDS.find((c) => c.name === 'say')!;
    const text = say.options!.find((o) => o.name === 'text')!;
    expect(text).toMatchObject({
      type: ApplicationCommandOptionType.String,
      required: true,
      max_length: 6000,
    });
    const join = COMMANDS.find((c) => c.name === 'join')!;
    expect(join.options![0]).toMatchObject({ type: ApplicationCommandOptionType.Channel, name: 'channel' });
  });
});
