/**
 * One voice channel's DAVE delivery service, as Discord's voice gateway runs it (protocol.md, "Group
 * Key Exchange"): it knows the group's epoch and each member's leaf, sends the external sender
 * package, turns key packages into external Add proposals and departures into Removes, picks the
 * first valid commit of an epoch and announces it (op 29) with welcomes to the added (op 30), waits
 * for every member's "ready" (op 23, or a timeout) before executing the transition (op 22), resets a
 * sole remaining member (op 24 epoch 1, op 21 transition 0), and answers an invalid commit/welcome
 * (op 31) by removing the flagging member and adding it again.
 *
 * The first commit of a new group is announced with transition id 0 (executed at once, as the
 * protocol's "(re)initialization" transition); later ones with ids from 1.
 *
 * Peers are the channel's clients: the bot (over its WebSocket) and simulated members (in process),
 * each sent the same JSON and binary messages.
 */
import {
  ExternalSender,
  mlsVector,
  readCommitWelcome,
  welcomeFor,
  type CheckedKeyPackage,
  type SentProposal,
} from './mls.js';

export const DAVE_OP = {
  clientsConnect: 11,
  clientDisconnect: 13,
  prepareTransition: 21,
  executeTransition: 22,
  transitionReady: 23,
  prepareEpoch: 24,
  externalSender: 25,
  keyPackage: 26,
  proposals: 27,
  commitWelcome: 28,
  announceCommit: 29,
  welcome: 30,
  invalidCommitWelcome: 31,
} as const;

/** A client of the channel, as the delivery service reaches it. */
export interface DavePeer {
  readonly userId: string;
  sendJson(op: number, d: unknown): void;
  sendBinary(op: number, payload: Buffer): void;
}

/** What the fake can be told to do wrong, to test recovery. */
export interface DaveFaults {
  /** Announce the next commit to everyone but this user (who stays in the old epoch). */
  withholdNextCommitFrom?: string | undefined;
}

export interface DaveChannelOptions {
  /** How long to wait for every member's op 23 before executing a transition (Discord: ~2 s). */
  transitionTimeoutMs?: number;
}

/** One event of the group's life, for tests to read. */
export type DaveEvent =
  | { kind: 'commit'; epoch: bigint; transitionId: number; committer: string; members: string[] }
  | { kind: 'execute'; transitionId: number; waited: 'all-ready' | 'timeout' }
  | { kind: 'sole-member-reset'; userId: string }
  | { kind: 'invalid'; userId: string; transitionId: number }
  | { kind: 'refused-commit'; userId: string; why: string }
  | { kind: 'refused-key-package'; userId: string; why: string };

interface PeerState {
  readonly peer: DavePeer;
  keyPackage: CheckedKeyPackage | undefined;
}

interface InFlight extends SentProposal {
  readonly kind: 'add' | 'remove';
  readonly userId: string;
  readonly keyPackage?: CheckedKeyPackage;
  readonly leaf?: number;
}

export class DaveChannel {
  readonly events: DaveEvent[] = [];
  readonly faults: DaveFaults = {};
  private readonly peers = new Map<string, PeerState>();
  /** Members of the established group by leaf index (empty: no established group). */
  private leaves = new Map<string, number>();
  private epoch = 0n;
  private inflight: InFlight[] = [];
  private transition: { id: number; awaiting: Set<string>; timer: NodeJS.Timeout } | undefined;
  private nextTransitionId = 1;
  private chain: Promise<unknown> = Promise.resolve();
  private readonly transitionTimeoutMs: number;

  constructor(
    readonly channelId: string,
    private readonly sender: ExternalSender,
    options: DaveChannelOptions = {},
  ) {
    this.transitionTimeoutMs = options.transitionTimeoutMs ?? 2000;
  }

  /** Whether the channel has an established MLS group. */
  get established(): boolean {
    return this.leaves.size > 0;
  }

  get currentEpoch(): bigint {
    return this.epoch;
  }

  /** Users in the established group. */
  get members(): string[] {
    return [...this.leaves.keys()];
  }

  get clients(): string[] {
    return [...this.peers.keys()];
  }

  /** Whether a transition is announced and not yet executed. */
  get transitioning(): boolean {
    return this.transition !== undefined;
  }

  /** A client identified with DAVE and got its session description: it learns who is here. */
  join(peer: DavePeer): void {
    const others = [...this.peers.values()];
    this.peers.set(peer.userId, { peer, keyPackage: undefined });
    for (const o of others) o.peer.sendJson(DAVE_OP.clientsConnect, { user_ids: [peer.userId] });
    if (others.length > 0)
      peer.sendJson(DAVE_OP.clientsConnect, { user_ids: others.map((o) => o.peer.userId) });
    peer.sendBinary(DAVE_OP.externalSender, this.sender.packageBytes);
  }

  /** A client's socket closed (`peer`: only if that is still the user's client here). */
  leave(userId: string, peer?: DavePeer): void {
    if (peer && this.peers.get(userId)?.peer !== peer) return;
    if (!this.peers.delete(userId)) return;
    for (const o of this.peers.values()) o.peer.sendJson(DAVE_OP.clientDisconnect, { user_id: userId });
    this.serially(async () => {
      // Its in-flight add is revoked; it is removed from the group.
      this.revokeAdds(userId);
      await this.removeFromGroup(userId);
    });
  }

  onBinary(userId: string, op: number, payload: Buffer): void {
    this.serially(async () => {
      const state = this.peers.get(userId);
      if (!state) return;
      if (op === DAVE_OP.keyPackage) await this.onKeyPackage(state, payload);
      else if (op === DAVE_OP.commitWelcome) this.onCommitWelcome(userId, payload);
    });
  }

  onJson(userId: string, op: number, d: Record<string, unknown>): void {
    if (op === DAVE_OP.transitionReady) {
      const t = this.transition;
      if (t && d['transition_id'] === t.id) {
        t.awaiting.delete(userId);
        if (t.awaiting.size === 0) this.execute('all-ready');
      }
    } else if (op === DAVE_OP.invalidCommitWelcome) {
      this.events.push({ kind: 'invalid', userId, transitionId: Number(d['transition_id']) });
      this.serially(async () => {
        const state = this.peers.get(userId);
        if (state) state.keyPackage = undefined; // its new key package follows
        await this.removeFromGroup(userId);
      });
    }
  }

  close(): void {
    if (this.transition) clearTimeout(this.transition.timer);
    this.transition = undefined;
  }

  private serially(fn: () => Promise<void>): void {
    this.chain = this.chain.then(fn).catch((error: unknown) => {
      // A fake's own bug must fail the test loudly, not hang it.
      process.emitWarning(`fake DAVE delivery service: ${String(error)}`);
    });
  }

  private async onKeyPackage(state: PeerState, payload: Buffer): Promise<void> {
    let checked: CheckedKeyPackage;
    try {
      checked = await this.sender.checkKeyPackage(payload, state.peer.userId);
    } catch (error) {
      this.events.push({ kind: 'refused-key-package', userId: state.peer.userId, why: String(error) });
      return;
    }
    // A replaced key package: its earlier add is revoked.
    this.revokeAdds(state.peer.userId);
    state.keyPackage = checked;
    const leaf = this.leaves.get(state.peer.userId);
    if (leaf !== undefined) {
      // Already in the group with another key package: removed, then added again.
      this.leaves.delete(state.peer.userId);
      await this.propose('remove', state.peer.userId, undefined, leaf);
    }
    if (this.established) {
      await this.propose('add', state.peer.userId, checked);
    } else {
      // Initial group creation: every other pending member gets the add; the newcomer gets the adds
      // already in flight for the others.
      await this.propose('add', state.peer.userId, checked);
      const earlier = this.inflight.filter((p) => p.userId !== state.peer.userId && p.kind === 'add');
      if (earlier.length > 0)
        state.peer.sendBinary(
          DAVE_OP.proposals,
          Buffer.concat([
            Buffer.from([0]),
            mlsVector(
              earlier.map((p) => p.message),
              false,
            ),
          ]),
        );
    }
  }

  /** Revokes the in-flight adds of `userId` (it left, or sent another key package). */
  private revokeAdds(userId: string): void {
    const stale = this.inflight.filter((p) => p.kind === 'add' && p.userId === userId);
    if (stale.length === 0) return;
    this.inflight = this.inflight.filter((p) => !stale.includes(p));
    this.broadcastProposals(
      1,
      stale.map((p) => p.ref),
      this.established ? this.members : this.pendingWithGroup(),
    );
  }

  /** Takes `userId` out of the group: a Remove for the others, or a reset when one is left. */
  private async removeFromGroup(userId: string): Promise<void> {
    const leaf = this.leaves.get(userId);
    if (leaf === undefined) return;
    this.leaves.delete(userId);
    if (this.leaves.size <= 1) this.soleMemberReset();
    else await this.propose('remove', userId, undefined, leaf);
  }

  /** Broadcasts one proposal for the current epoch to the members that must commit it. */
  private async propose(
    kind: 'add' | 'remove',
    userId: string,
    keyPackage?: CheckedKeyPackage,
    leaf?: number,
  ): Promise<void> {
    const sent =
      kind === 'add'
        ? await this.sender.add(this.channelId, this.epoch, keyPackage!.keyPackage)
        : await this.sender.remove(this.channelId, this.epoch, leaf!);
    this.inflight.push({
      ...sent,
      kind,
      userId,
      ...(keyPackage ? { keyPackage } : {}),
      ...(leaf === undefined ? {} : { leaf }),
    });
    const to = this.established ? this.members : this.pendingWithGroup().filter((u) => u !== userId);
    this.broadcastProposals(0, [sent.message], to);
  }

  /** Pending clients that sent a key package (so they hold a local group to commit in). */
  private pendingWithGroup(): string[] {
    return [...this.peers.values()].filter((s) => s.keyPackage).map((s) => s.peer.userId);
  }

  private broadcastProposals(operation: 0 | 1, items: Buffer[], to: readonly string[]): void {
    const payload = Buffer.concat([Buffer.from([operation]), mlsVector(items, operation === 1)]);
    for (const userId of to) this.peers.get(userId)?.peer.sendBinary(DAVE_OP.proposals, payload);
  }

  private onCommitWelcome(userId: string, payload: Buffer): void {
    let commit;
    try {
      commit = readCommitWelcome(payload);
    } catch (error) {
      this.events.push({ kind: 'refused-commit', userId, why: String(error) });
      return;
    }
    const refuse = (why: string): void => void this.events.push({ kind: 'refused-commit', userId, why });
    if (commit.epoch !== this.epoch) return refuse(`epoch ${commit.epoch}, not ${this.epoch}`);
    if (commit.inline > 0) return refuse('inline proposals');
    if (commit.refs.length === 0) return refuse('no proposals');
    const named = commit.refs.map((ref) => this.inflight.find((p) => p.ref.equals(ref)));
    if (named.some((p) => p === undefined)) return refuse('a proposal the gateway did not send');
    // Every unrevoked proposal of the epoch (in a new group: all but the committer's own add).
    const required = this.inflight.filter((p) => this.established || p.userId !== userId);
    if (required.some((p) => !commit.refs.some((r) => r.equals(p.ref)))) return refuse('misses a proposal');
    if (!this.established && !this.peers.get(userId)?.keyPackage) return refuse('committer has no group');

    // The new tree: removes, then adds into the leftmost blank leaves (RFC 9420 §12.3).
    const creating = !this.established;
    const leaves = creating ? new Map([[userId, 0]]) : new Map(this.leaves);
    const proposals = named as InFlight[];
    for (const p of proposals) if (p.kind === 'remove') leaves.delete(p.userId);
    const added: InFlight[] = [];
    for (const p of proposals) {
      if (p.kind !== 'add') continue;
      const used = new Set(leaves.values());
      let leaf = 0;
      while (used.has(leaf)) leaf++;
      leaves.set(p.userId, leaf);
      added.push(p);
    }
    if (added.length > 0 && !commit.welcome) return refuse('adds without a welcome');

    const before = creating ? [userId] : [...this.leaves.keys()].filter((u) => leaves.has(u));
    this.leaves = leaves;
    this.epoch = creating ? 1n : this.epoch + 1n;
    this.inflight = [];
    const transitionId = creating ? 0 : this.takeTransitionId();
    this.events.push({
      kind: 'commit',
      epoch: this.epoch,
      transitionId,
      committer: userId,
      members: [...leaves.keys()],
    });
    const announce = Buffer.concat([u16(transitionId), commit.commit]);
    const withheld = this.faults.withholdNextCommitFrom;
    this.faults.withholdNextCommitFrom = undefined;
    for (const member of before)
      if (member !== withheld) this.peers.get(member)?.peer.sendBinary(DAVE_OP.announceCommit, announce);
    for (const p of added) {
      const welcome = welcomeFor(commit.welcome!, p.keyPackage!.ref);
      const peer = this.peers.get(p.userId);
      if (welcome && peer) {
        peer.keyPackage = undefined; // used
        peer.peer.sendBinary(DAVE_OP.welcome, Buffer.concat([u16(transitionId), welcome]));
      }
    }
    if (transitionId !== 0) {
      const awaiting = new Set([...leaves.keys()].filter((u) => u !== withheld));
      const timer = setTimeout(() => this.execute('timeout'), this.transitionTimeoutMs);
      if (this.transition) clearTimeout(this.transition.timer);
      this.transition = { id: transitionId, awaiting, timer };
    }
    // Clients still pending (their key package came too late for this commit) are proposed anew.
    for (const s of this.peers.values())
      if (s.keyPackage && !leaves.has(s.peer.userId))
        this.serially(() => this.propose('add', s.peer.userId, s.keyPackage));
  }

  private takeTransitionId(): number {
    const id = this.nextTransitionId;
    this.nextTransitionId = id >= 0xffff ? 1 : id + 1;
    return id;
  }

  private execute(waited: 'all-ready' | 'timeout'): void {
    const t = this.transition;
    if (!t) return;
    clearTimeout(t.timer);
    this.transition = undefined;
    this.events.push({ kind: 'execute', transitionId: t.id, waited });
    for (const s of this.peers.values())
      if (this.leaves.has(s.peer.userId)) s.peer.sendJson(DAVE_OP.executeTransition, { transition_id: t.id });
  }

  /** One member left in the group: it goes back to a pending group of its own. */
  private soleMemberReset(): void {
    const [sole] = this.leaves.keys();
    this.leaves = new Map();
    this.epoch = 0n;
    this.inflight = [];
    if (this.transition) clearTimeout(this.transition.timer);
    this.transition = undefined;
    if (sole === undefined) return;
    this.events.push({ kind: 'sole-member-reset', userId: sole });
    const peer = this.peers.get(sole);
    if (!peer) return;
    peer.keyPackage = undefined; // a new one follows
    peer.peer.sendJson(DAVE_OP.prepareEpoch, { epoch: 1, protocol_version: 1 });
    peer.peer.sendJson(DAVE_OP.prepareTransition, { transition_id: 0, protocol_version: 1 });
  }
}

function u16(n: number): Buffer {
  const b = Buffer.alloc(2);
  b.writeUInt16BE(n);
  return b;
}
