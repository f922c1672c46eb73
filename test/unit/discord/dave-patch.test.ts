/**
 * The patch on @discordjs/voice 0.19.2 (patches/@discordjs+voice+0.19.2.patch, see patches/README.md):
 * when a member's frames keep failing to decrypt on the first epoch of a group (transition id 0),
 * the DAVE session re-keys instead of throwing out of the receive path (which made the receiver
 * destroy that member's stream: the bot went deaf to them).
 *
 * The session is the library's own `DAVESession` in a real MLS group: the bot and one member, both
 * @snazzah/davey sessions, joined the way the voice gateway joins them (its external sender's Add
 * proposal, built and signed with ts-mls; the bot's commit and welcome; transition 0).
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
import {
  decodeMlsMessage,
  encodeExternalSender,
  encodeMlsMessage,
  getCiphersuiteFromName,
  getCiphersuiteImpl,
  proposeExternal,
  type GroupInfo,
} from 'ts-mls';
import { decodeKeyPackage } from 'ts-mls/keyPackage.js';
import { describe, expect, it } from 'vitest';
import { logDave, type DaveConnection } from '../../../adapters/discord/dave.js';

const BOT = '100000000000000001';
const MEMBER = '100000000000000002';
const CHANNEL = '200000000000000001';
/** DAVE v1's MLS ciphersuite (P-256, AES-128-GCM, SHA-256). */
const CIPHERSUITE = 'MLS_128_DHKEMP256_AES128GCM_SHA256_P256' as const;
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

/** An MLS variable-size vector length header (RFC 9420 §2.1.2), for lengths under 16 KiB. */
function varint(n: number): Buffer {
  return n < 0x40 ? Buffer.from([n]) : Buffer.from([0x40 | (n >> 8), n & 0xff]);
}

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
  const cs = await getCiphersuiteImpl(getCiphersuiteFromName(CIPHERSUITE));
  const { signKey, publicKey } = await cs.signature.keygen();
  const externalSender = Buffer.from(
    encodeExternalSender({
      signaturePublicKey: publicKey,
      credential: { credentialType: 'basic', identity: Buffer.from('voice-gateway') },
    }),
  );

  const bot = new Session(1, BOT, CHANNEL, { decryptionFailureTolerance: TOLERANCE });
  const member = new Session(1, MEMBER, CHANNEL, {});
  const botKeyPackage = nextKeyPackage(bot);
  const memberKeyPackage = nextKeyPackage(member);
  bot.reinit();
  member.reinit();
  const firstKeyPackage = await botKeyPackage;
  bot.setExternalSender(externalSender);
  member.setExternalSender(externalSender);

  const keyPackage = decodeKeyPackage(await memberKeyPackage, 0)![0];
  const groupId = Buffer.alloc(8);
  groupId.writeBigUInt64BE(BigInt(CHANNEL));
  // An external sender signs no group context (RFC 9420 §6.1): only the id, epoch and extensions count.
  const groupInfo = {
    groupContext: {
      version: 'mls10',
      cipherSuite: CIPHERSUITE,
      groupId,
      epoch: 0n,
      treeHash: new Uint8Array(),
      confirmedTranscriptHash: new Uint8Array(),
      extensions: [{ extensionType: 'external_senders', extensionData: externalSender }],
    },
  } as unknown as GroupInfo;
  const add = Buffer.from(
    encodeMlsMessage(
      await proposeExternal(groupInfo, { proposalType: 'add', add: { keyPackage } }, publicKey, signKey, cs),
    ),
  );
  const APPEND = 0;
  const commitWelcome = bot.processProposals(
    Buffer.concat([Buffer.from([APPEND]), varint(add.length), add]),
    new Set([MEMBER]),
  );
  if (!commitWelcome) throw new Error('the bot made no commit');
  const [, commitEnd] = decodeMlsMessage(commitWelcome, 0)!;
  expect(bot.processCommit(withTransition(0, commitWelcome.subarray(0, commitEnd)))).toEqual({
    transitionId: 0,
    success: true,
  });
  expect(member.processWelcome(withTransition(0, commitWelcome.subarray(commitEnd)))).toEqual({
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
