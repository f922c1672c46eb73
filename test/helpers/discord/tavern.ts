/** The one guild the Discord integration tests play in: a text channel, a voice channel, a member in it. */
import type { FakeGuildOptions } from '../../../testkit/discord/gateway.js';

export interface TavernIds {
  guild: string;
  text: string;
  voice: string;
  /** The member sitting in the voice channel. */
  member: string;
}

/** "The Tavern": `general` (text) and `Tavern` (voice), with `member` in the voice channel. */
export function tavern(ids: TavernIds): FakeGuildOptions {
  return {
    id: ids.guild,
    name: 'The Tavern',
    channels: [
      { id: ids.text, name: 'general', type: 0 },
      { id: ids.voice, name: 'Tavern', type: 2 },
    ],
    voiceStates: [{ userId: ids.member, channelId: ids.voice }],
  };
}
