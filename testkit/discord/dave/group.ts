/**
 * Two @snazzah/davey sessions in one DAVE group, joined the way the voice gateway joins them (its
 * external sender, an external Add of the second's key package, the first's commit and welcome), for
 * benchmarks and unit tests that need end-to-end encryption without a voice server.
 */
import davey from '@snazzah/davey';
import { ExternalSender, mlsVector } from './mls.js';

export interface DaveGroupOfTwo {
  /** The committer (the group's creator). */
  readonly first: davey.DAVESession;
  /** The member it welcomed. */
  readonly second: davey.DAVESession;
}

export async function daveGroupOfTwo(
  channelId: string,
  firstUserId: string,
  secondUserId: string,
): Promise<DaveGroupOfTwo> {
  const sender = await ExternalSender.create();
  const first = new davey.DAVESession(1, firstUserId, channelId);
  const second = new davey.DAVESession(1, secondUserId, channelId);
  first.setExternalSender(sender.packageBytes);
  second.setExternalSender(sender.packageBytes);
  first.getSerializedKeyPackage(); // its local group, at epoch 0
  const key = await sender.checkKeyPackage(second.getSerializedKeyPackage(), secondUserId);
  const add = await sender.add(channelId, 0n, key.keyPackage);
  const { commit, welcome } = first.processProposals(0, mlsVector([add.message], false), [
    firstUserId,
    secondUserId,
  ]);
  if (!commit || !welcome) throw new Error('no commit and welcome for the add');
  first.processCommit(commit);
  second.processWelcome(welcome);
  if (!first.ready || !second.ready) throw new Error('the group is not ready');
  return { first, second };
}
