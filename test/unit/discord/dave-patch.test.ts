/**
 * The patch on @discordjs/voice 0.19.2 (patches/@discordjs+voice+0.19.2.patch, see patches/README.md):
 * when a member's frames keep failing to decrypt on the first epoch of a group (transition id 0),
 * the DAVE session re-keys instead of throwing out of the receive path (which made the receiver
 * destroy that member's stream: the bot went deaf to them).
 *
 * The session is the library's own `DAVESession` in a real MLS group: the bot and one member, both
 * @snazzah/davey sessions, joined the way the voice gateway joins them (its external sender's Add
 * proposal, from the fake gateway's MLS side, testkit/discord/dave/mls.ts; the bot's commit and
 * welcome; transition 0).
 */
import { EventEmitter } from 'node:events';
import { createRequire } from 'node:module';
import { Writable } from 'node:stream';
import {
  DAVESession as EsmDAVESession,
  NetworkingStatusCode,
  VoiceConnectionStatus,
  type DAVESession,
  type VoiceConnectionState,
} from '@discordjs/voice';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { logDave, type DaveConnection } from '../../../adapters/discord/dave.js';
import {
  ExternalSender,
  mlsVector,
  readCommitWelcome,
  welcomeFor,
} from '../../../testkit/discord/dave/mls.js';

const BOT = '100000000000000001';
const MEMBER = '100000000000000002';
const CHANNEL = '200000000000000001';
/** An Opus packet (not the 3-byte silence frame, which the session passes through untouched). */
const OPUS = Buffer.from([0x78, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09]);
/** Failures in a row the session tolerates before it re-keys (the library's default, which voxbridge keeps). */
const TOLERANCE = 36;

/** Both builds of the library carry the patch: the ESM one (what voxbridge loads) and the CommonJS one. */
const BUILDS: ReadonlyArray<readonly [string, typeof EsmDAVESession]> = [
  ['ESM', EsmDAVESession],
  [
    'CommonJS',
    (createRequire(import.meta.url)('@discordjs/voice') as typeof import('@discordjs/voice')).DAVESession,
  ],
];

/** A transition id before an MLS payload, as ops 29 and 30 carry it. */
function withTransition(transitionId: number, payload: Buffer): Buffer {
  const head = Buffer.alloc(2);
  head.writeUInt16BE(transitionId);
  return Buffer.concat([head, payload]);
}

function nextKeyPackage(session: DAVESession): Promise<Buffer> {
  return new Promise((resolve) => session.once('keyPackage', resolve));
}

/**
 * The bot and a member in one group at transition 0, as the voice gateway makes it: its external
 * sender (op 25) to both, an external Add of the member's key package (op 27) to the bot, whose
 * commit goes back to it (op 29) and whose welcome goes to the member (op 30).
 */
async function groupOfTwo(
  Session: typeof EsmDAVESession,
): Promise<{ bot: DAVESession; member: DAVESession; firstKeyPackage: Buffer }> {
  const gateway = await ExternalSender.create();

  const bot = new Session(1, BOT, CHANNEL, { decryptionFailureTolerance: TOLERANCE });
  const member = new Session(1, MEMBER, CHANNEL, {});
  const botKeyPackage = nextKeyPackage(bot);
  const memberKeyPackage = nextKeyPackage(member);
  bot.reinit();
  member.reinit();
  const firstKeyPackage = await botKeyPackage;
  bot.setExternalSender(gateway.packageBytes);
  member.setExternalSender(gateway.packageBytes);

  const keyPackage = await gateway.checkKeyPackage(await memberKeyPackage, MEMBER);
  const add = await gateway.add(CHANNEL, 0n, keyPackage.keyPackage);
  const APPEND = 0;
  const commitWelcome = bot.processProposals(
    Buffer.concat([Buffer.from([APPEND]), mlsVector([add.message], false)]),
    new Set([MEMBER]),
  );
  if (!commitWelcome) throw new Error('the bot made no commit');
  const { commit, welcome } = readCommitWelcome(commitWelcome);
  if (!welcome) throw new Error('the bot made no welcome');
  const memberWelcome = welcomeFor(welcome, keyPackage.ref);
  if (!memberWelcome) throw new Error("the welcome is not addressed to the member's key package");
  expect(bot.processCommit(withTransition(0, commit))).toEqual({
    transitionId: 0,
    success: true,
  });
  expect(member.processWelcome(withTransition(0, memberWelcome))).toEqual({
    transitionId: 0,
    success: true,
  });
  return { bot, member, firstKeyPackage };
}

/** The guild's log of `dave`, as voxbridge keeps it (adapters/discord/dave.ts): its warnings. */
function warningsOf(dave: DAVESession): string[] {
  const warnings: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      const line = JSON.parse(chunk.toString('utf8')) as { level: number; msg: string };
      if (line.level >= 40) warnings.push(line.msg);
      done();
    },
  });
  const networking = Object.assign(new EventEmitter(), { state: { code: NetworkingStatusCode.Ready, dave } });
  const connection = Object.assign(new EventEmitter(), {
    state: { status: VoiceConnectionStatus.Ready, networking } as unknown as VoiceConnectionState,
  }) as DaveConnection;
  logDave(connection, pino({ level: 'debug' }, stream));
  return warnings;
}

describe.each(BUILDS)('DAVE decryption that keeps failing on transition 0 (%s build)', (_build, Session) => {
  it('re-keys (invalidates transition 0, sends a new key package) instead of throwing', async () => {
    const { bot, member, firstKeyPackage } = await groupOfTwo(Session);
    const warnings = warningsOf(bot);
    expect(bot.lastTransitionId).toBe(0);
    expect(bot.session?.ready).toBe(true);

    // The group works: the member's frame decrypts.
    const frame = member.encrypt(OPUS);
    expect(frame.equals(OPUS)).toBe(false);
    expect(bot.decrypt(frame, MEMBER)).toEqual(OPUS);

    // Then the member's frames stop decrypting (as when the bot missed a commit).
    const invalidated: number[] = [];
    const keyPackages: Buffer[] = [];
    const debug: string[] = [];
    bot.on('invalidateTransition', (id: number) => invalidated.push(id));
    bot.on('keyPackage', (kp: Buffer) => keyPackages.push(kp));
    bot.on('debug', (message: string) => debug.push(message));
    const tampered = Buffer.from(frame);
    tampered[1]! ^= 0xff;
    for (let n = 1; n <= TOLERANCE; n++) expect(bot.decrypt(tampered, MEMBER)).toBeNull();
    expect(invalidated).toEqual([]);
    // One more: the failure past the tolerance, where 0.19.2 threw.
    expect(bot.decrypt(tampered, MEMBER)).toBeNull();

    expect(invalidated).toEqual([0]);
    expect(keyPackages).toHaveLength(1);
    expect(keyPackages[0]!.equals(firstKeyPackage)).toBe(false);
    expect(debug).toContain('Invalidating transition 0');
    expect(bot.reinitializing).toBe(true);
    // A fresh session, waiting for the gateway to add it to the group again.
    expect(bot.session?.ready).toBe(false);
    // Frames that arrive meanwhile are passed on as they are, never thrown.
    expect(() => bot.decrypt(tampered, MEMBER)).not.toThrow();
    // What the operator sees: one warning.
    await new Promise((resolve) => setImmediate(resolve));
    expect(warnings).toEqual(['DAVE: decryption kept failing; re-keying (transition 0)']);
    bot.destroy();
    member.destroy();
  });
});
