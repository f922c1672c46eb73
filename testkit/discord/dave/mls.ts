/**
 * The voice gateway's side of DAVE's MLS (RFC 9420, ciphersuite 2: P-256, AES-128-GCM, SHA-256), as
 * the fake voice server needs it: the external sender's key and package (op 25), external Add and
 * Remove proposals signed with that key (op 27), the references that commits name them by, a
 * member's key package checked (op 26), and a member's commit and welcome taken apart (op 28 → 29,
 * 30). Encoding, decoding and signing are ts-mls's; the members' side is @snazzah/davey (OpenMLS),
 * so the two meet only on the wire.
 *
 * Sources: the DAVE protocol (github.com/discord/dave-protocol, protocol.md: "Delivery Service",
 * "Voice Gateway Opcodes") and RFC 9420 §5.2 (RefHash), §6 (framing), §12.1 (proposals).
 */
import { createHash } from 'node:crypto';
import { p256 } from '@noble/curves/nist.js';
import {
  decodeMlsMessage,
  encodeExternalSender,
  encodeMlsMessage,
  getCiphersuiteFromName,
  getCiphersuiteImpl,
  proposeExternal,
  type CiphersuiteImpl,
  type GroupInfo,
  type KeyPackage,
  type Proposal,
} from 'ts-mls';
import { decodeKeyPackage, verifyKeyPackage } from 'ts-mls/keyPackage.js';
import { decodeWelcome, encodeWelcome } from 'ts-mls/welcome.js';

/** DAVE protocol version 1's MLS ciphersuite. */
const CIPHERSUITE = 'MLS_128_DHKEMP256_AES128GCM_SHA256_P256' as const;

let suite: Promise<CiphersuiteImpl> | undefined;
function ciphersuite(): Promise<CiphersuiteImpl> {
  suite ??= getCiphersuiteImpl(getCiphersuiteFromName(CIPHERSUITE));
  return suite;
}

/** An MLS variable-size vector length header (RFC 9420 §2.1.2). */
export function mlsVarint(n: number): Buffer {
  if (n < 0x40) return Buffer.from([n]);
  if (n < 0x4000) return Buffer.from([0x40 | (n >> 8), n & 0xff]);
  const out = Buffer.alloc(4);
  out.writeUInt32BE((0x80000000 | n) >>> 0);
  return out;
}

/** A vector of byte strings (`opaque x<V>` items back to back inside one `<V>`). */
export function mlsVector(items: readonly Uint8Array[], itemsAreOpaque: boolean): Buffer {
  const body = Buffer.concat(itemsAreOpaque ? items.flatMap((i) => [mlsVarint(i.length), i]) : items);
  return Buffer.concat([mlsVarint(body.length), body]);
}

/** RefHash(label, value) with SHA-256 (RFC 9420 §5.2). */
function refHash(label: string, value: Uint8Array): Buffer {
  const l = Buffer.from(label);
  return createHash('sha256')
    .update(Buffer.concat([mlsVarint(l.length), l, mlsVarint(value.length), value]))
    .digest();
}

/** The MLS group id of a channel: its snowflake, big-endian (as @snazzah/davey and libdave make it). */
export function groupIdOf(channelId: string): Uint8Array {
  const id = Buffer.alloc(8);
  id.writeBigUInt64BE(BigInt(channelId));
  return id;
}

/** The user id in a basic credential: the snowflake, big-endian. */
function userIdOf(identity: Uint8Array): string | undefined {
  return identity.length === 8 ? Buffer.from(identity).readBigUInt64BE().toString() : undefined;
}

/** A proposal the gateway broadcast: the message, and the reference a commit names it by. */
export interface SentProposal {
  readonly message: Buffer;
  readonly ref: Buffer;
}

/** A member's key package, read and checked. */
export interface CheckedKeyPackage {
  readonly bytes: Buffer;
  readonly keyPackage: KeyPackage;
  /** Its KeyPackageRef, which a Welcome's secrets are addressed to. */
  readonly ref: Buffer;
}

/** A commit a member sent (op 28), taken apart. */
export interface ReceivedCommit {
  /** The MLSMessage to announce (op 29). */
  readonly commit: Buffer;
  readonly epoch: bigint;
  /** The proposals it commits, by reference (DAVE allows no other kind). */
  readonly refs: Buffer[];
  /** Proposals it carries inline (invalid in DAVE: the gateway refuses such a commit). */
  readonly inline: number;
  /** The Welcome that came with it, if members were added. */
  readonly welcome: Buffer | undefined;
}

/** The voice gateway's external sender: one P-256 key, a basic credential. */
export class ExternalSender {
  private constructor(
    private readonly signKey: Uint8Array,
    private readonly publicKey: Uint8Array,
    /** The ExternalSender struct (op 25's payload). */
    readonly packageBytes: Buffer,
    private readonly cs: CiphersuiteImpl,
  ) {}

  static async create(): Promise<ExternalSender> {
    const signKey = p256.utils.randomSecretKey();
    const publicKey = p256.getPublicKey(signKey, false); // SEC1 uncompressed, as MLS uses
    const credential = { credentialType: 'basic' as const, identity: Buffer.from('voice-gateway') };
    const pkg = Buffer.from(encodeExternalSender({ signaturePublicKey: publicKey, credential }));
    return new ExternalSender(signKey, publicKey, pkg, await ciphersuite());
  }

  /** An external Add for `keyPackage` in the group `channelId` at `epoch`. */
  add(channelId: string, epoch: bigint, keyPackage: KeyPackage): Promise<SentProposal> {
    return this.propose(channelId, epoch, { proposalType: 'add', add: { keyPackage } });
  }

  /** An external Remove of the member at `leafIndex`. */
  remove(channelId: string, epoch: bigint, leafIndex: number): Promise<SentProposal> {
    return this.propose(channelId, epoch, { proposalType: 'remove', remove: { removed: leafIndex } });
  }

  /**
   * Reads a key package (op 26) and checks it as the gateway does: ciphersuite 2, a basic credential
   * whose identity is the sender's user id, the widest lifetime, a valid signature.
   */
  async checkKeyPackage(bytes: Buffer, userId: string): Promise<CheckedKeyPackage> {
    const decoded = decodeKeyPackage(bytes, 0);
    if (!decoded || decoded[1] !== bytes.length) throw new Error('not a key package');
    const keyPackage = decoded[0];
    if (keyPackage.cipherSuite !== CIPHERSUITE) throw new Error(`ciphersuite ${keyPackage.cipherSuite}`);
    const { credential } = keyPackage.leafNode;
    if (credential.credentialType !== 'basic' || userIdOf(credential.identity) !== userId)
      throw new Error('credential is not the sender');
    const { lifetime } = keyPackage.leafNode as { lifetime?: { notBefore: bigint; notAfter: bigint } };
    if (lifetime && (lifetime.notBefore !== 0n || lifetime.notAfter !== 2n ** 64n - 1n))
      throw new Error('lifetime is not the widest');
    if (!(await verifyKeyPackage(keyPackage, this.cs.signature))) throw new Error('bad signature');
    return { bytes, keyPackage, ref: refHash('MLS 1.0 KeyPackage Reference', bytes) };
  }

  private async propose(channelId: string, epoch: bigint, proposal: Proposal): Promise<SentProposal> {
    const groupInfo = {
      groupContext: {
        version: 'mls10',
        cipherSuite: CIPHERSUITE,
        groupId: groupIdOf(channelId),
        epoch,
        treeHash: new Uint8Array(),
        confirmedTranscriptHash: new Uint8Array(),
        extensions: [{ extensionType: 'external_senders', extensionData: this.packageBytes }],
      },
    } as unknown as GroupInfo; // only the context's id, epoch and extensions are read
    const message = Buffer.from(
      encodeMlsMessage(await proposeExternal(groupInfo, proposal, this.publicKey, this.signKey, this.cs)),
    );
    // An external sender's PublicMessage has no membership tag: AuthenticatedContent is the message
    // after its 2-byte version.
    return { message, ref: refHash('MLS 1.0 Proposal Reference', message.subarray(2)) };
  }
}

/** Takes apart op 28's payload: an MLSMessage commit, then an optional Welcome. */
export function readCommitWelcome(payload: Buffer): ReceivedCommit {
  const decoded = decodeMlsMessage(payload, 0);
  if (!decoded) throw new Error('not an MLS message');
  const [message, end] = decoded;
  if (message.wireformat !== 'mls_public_message') throw new Error('a commit must be a PublicMessage');
  const content = message.publicMessage.content;
  if (content.contentType !== 'commit') throw new Error('not a commit');
  const refs: Buffer[] = [];
  let inline = 0;
  for (const p of content.commit.proposals) {
    if (p.proposalOrRefType === 'reference') refs.push(Buffer.from(p.reference));
    else inline++;
  }
  return {
    commit: payload.subarray(0, end),
    epoch: content.epoch,
    refs,
    inline,
    welcome: end < payload.length ? payload.subarray(end) : undefined,
  };
}

/** The part of `welcome` addressed to one new member (by KeyPackageRef), as op 30 carries it. */
export function welcomeFor(welcome: Buffer, keyPackageRef: Buffer): Buffer | undefined {
  const decoded = decodeWelcome(welcome, 0);
  if (!decoded) throw new Error('not a Welcome');
  const mine = decoded[0].secrets.filter((s) => keyPackageRef.equals(s.newMember));
  if (mine.length === 0) return undefined;
  return Buffer.from(encodeWelcome({ ...decoded[0], secrets: mine }));
}

/** The end of an end-to-end encrypted frame: DAVE's magic marker (protocol.md, "Protocol Frame Check"). */
export function isDaveFrame(frame: Buffer): boolean {
  return frame.length > 2 && frame[frame.length - 1] === 0xfa && frame[frame.length - 2] === 0xfa;
}
