/**
 * The Discord control API, for a game master's tool or a virtual tabletop: speak narration markup in
 * a guild, stop, skip, join and leave, without Discord commands. Mounted at `/discord`, behind
 * CONTROL_TOKEN.
 *
 *   GET    /discord/guilds                        guilds the bot speaks in
 *   GET    /discord/guilds/{guildId}              one of them (with its end-to-end encryption: e2ee)
 *   POST   /discord/guilds/{guildId}/join         { channel_id }            (needs the bot running)
 *   DELETE /discord/guilds/{guildId}              leave
 *   POST   /discord/guilds/{guildId}/say          { text, voice_id?, interruptible?, now?, wait? }
 *   POST   /discord/guilds/{guildId}/stop | skip
 *   PUT    /discord/guilds/{guildId}/barge-in     { enabled }
 *   POST   /discord/guilds/{guildId}/relay        { relay }                 hand the channel to a relay app
 *   GET    /discord/guilds/{guildId}/relay        the relay running there
 *   DELETE /discord/guilds/{guildId}/relay        stop it (the bot stays in the channel)
 *
 * `text` is narration markup: `[Goblin] You shall not pass! [Narrator] The goblin raises its spear.`
 * Untagged text is the narrator's (in `voice_id` when given).
 */
import type { DiscordGatewayAdapterCreator } from '@discordjs/voice';
import { z } from 'zod';
import {
  bearerAuthorized,
  pathSegments,
  readJsonBody,
  sendBadPath,
  sendJson,
  sendMethodNotAllowed,
  sendUnauthorized,
  type RouteHandler,
} from '../../src/http/http.js';
import { parseScript, ScriptError, type ScriptLine } from '../../src/speaker/script.js';
import { readSay, sendInvalid } from '../../src/control/say-request.js';
import { utteranceResultJson } from '../../src/control/result.js';
import { SpeakerQueueFullError } from '../../src/speaker/speaker.js';
import type { GuildRelay } from './guild-relay.js';
import { NotInVoiceError, RelayRunningError, UnknownRelayError, type DiscordGuilds } from './guilds.js';
import type { GuildVoice } from './guild-voice.js';

/** join and barge-in bodies are a few bytes. */
const MAX_BODY_BYTES = 4096;

const joinBody = z.strictObject({
  channel_id: z.string().regex(/^\d{1,25}$/, 'must be a channel id (snowflake)'),
});
const bargeInBody = z.strictObject({ enabled: z.boolean() });
const relayBody = z.strictObject({ relay: z.string().min(1).max(40) });

export interface DiscordControlOptions {
  guilds: DiscordGuilds;
  controlToken: string | undefined;
  /** The guild's voice adapter, from the running bot; undefined when the bot is not running. */
  adapterCreator?: (guildId: string) => DiscordGatewayAdapterCreator | undefined;
  /**
   * Why a join is not answered here, when the bot runs in other processes (its shards): answered 503,
   * since the process that should answer is starting or gone.
   */
  botElsewhere?: string | undefined;
}

/** A guild as `GET /discord/guilds/{id}` answers it (and the list, item by item). */
export function describeGuild(voice: GuildVoice, guilds: DiscordGuilds): Record<string, unknown> {
  const { e2ee } = voice;
  return {
    guild_id: voice.guildId,
    channel_id: voice.channelId,
    status: voice.status,
    speaking: voice.speaker.speakingId ?? null,
    queued: voice.speaker.queued,
    barge_in: guilds.bargeInEnabled(voice.guildId),
    relay: guilds.relayOf(voice.guildId)?.name ?? null,
    e2ee: { protocol_version: e2ee.protocolVersion, voice_privacy_code: e2ee.voicePrivacyCode },
  };
}

/** A guild's relay as `/discord/guilds/{id}/relay` answers it. */
function describeRelay(relay: GuildRelay): Record<string, unknown> {
  return {
    guild_id: relay.guildId,
    channel_id: relay.channelId,
    relay: relay.name,
    session_id: relay.sessionId,
    prompts: relay.prompts,
  };
}

export function discordControlApi(options: DiscordControlOptions): RouteHandler {
  const { guilds } = options;
  return async (req, res, path, url) => {
    if (!bearerAuthorized(req, options.controlToken)) {
      sendUnauthorized(res);
      return true;
    }
    const method = req.method ?? 'GET';
    const parts = pathSegments(path);
    if (!parts) return sendBadPath(res);
    if (parts[0] !== 'guilds') return false;
    if (parts.length === 1) {
      if (method !== 'GET') return sendMethodNotAllowed(res, 'GET');
      sendJson(res, 200, { guilds: guilds.list().map((v) => describeGuild(v, guilds)) });
      return true;
    }
    const guildId = parts[1]!;
    const action = parts.slice(2).join('/');
    const notInVoice = (): true => {
      sendJson(res, 404, {
        error: `voxbridge is not in a voice channel in guild ${guildId}: use /join in Discord or POST /discord/guilds/${guildId}/join`,
      });
      return true;
    };

    switch (action) {
      case '': {
        const voice = guilds.get(guildId);
        if (!voice) return notInVoice();
        if (method === 'GET') sendJson(res, 200, describeGuild(voice, guilds));
        else if (method === 'DELETE') {
          await guilds.leave(guildId);
          res.writeHead(204).end();
        } else sendMethodNotAllowed(res, 'GET, DELETE');
        return true;
      }
      case 'join': {
        if (method !== 'POST') return sendMethodNotAllowed(res, 'POST');
        const read = await readJsonBody(req, res, MAX_BODY_BYTES);
        if (!read) return true;
        const parsed = joinBody.safeParse(read.body);
        if (!parsed.success) {
          sendInvalid(res, parsed.error);
          return true;
        }
        if (options.botElsewhere !== undefined) {
          sendJson(res, 503, { error: `guild ${guildId}: ${options.botElsewhere}` }, { 'retry-after': '2' });
          return true;
        }
        if (!options.adapterCreator) {
          sendJson(res, 503, { error: 'the Discord bot is not running (set DISCORD_TOKEN)' });
          return true;
        }
        const adapter = options.adapterCreator(guildId);
        if (!adapter) {
          sendJson(res, 404, { error: `the bot is not a member of guild ${guildId}` });
          return true;
        }
        try {
          const voice = await guilds.join(guildId, parsed.data.channel_id, adapter);
          sendJson(res, 200, describeGuild(voice, guilds));
        } catch (error) {
          sendJson(res, 502, { error: `could not connect: ${(error as Error).message}` });
        }
        return true;
      }
      case 'say': {
        // PUT: a text streamed with `curl -T -`.
        if (method !== 'POST' && method !== 'PUT') return sendMethodNotAllowed(res, 'POST, PUT');
        const voice = guilds.get(guildId);
        if (!voice) {
          req.resume();
          return notInVoice();
        }
        const input = await readSay(req, res, url);
        if (!input) return true;
        const { text, voice_id, interruptible, now, wait } = input;
        const { cast, narrator } = guilds.settings.narration;
        if (typeof text !== 'string') {
          // Streamed: spoken as it arrives in one voice (the narrator's, or voice_id); tags need a whole script.
          let handle;
          try {
            handle = voice.say(text, {
              voiceId: voice_id ?? cast[narrator]?.voiceId,
              interruptible,
              ...(now ? { priority: 'now' as const } : {}),
            });
          } catch (error) {
            if (!(error instanceof SpeakerQueueFullError)) throw error;
            sendJson(res, 429, { error: error.message, code: error.code });
            return true;
          }
          if (wait === false) {
            sendJson(res, 202, { utterances: [{ id: handle.id, character: narrator }] });
            return true;
          }
          const result = await handle.result;
          sendJson(res, 200, {
            utterances: [{ id: handle.id, character: narrator, ...utteranceResultJson(result) }],
          });
          return true;
        }
        let lines: ScriptLine[];
        try {
          lines = parseScript(text, cast, narrator);
        } catch (error) {
          if (!(error instanceof ScriptError)) throw error;
          sendJson(res, 400, { error: error.message, param: 'text', characters: Object.keys(cast) });
          return true;
        }
        if (voice_id) for (const line of lines) if (line.character === narrator) line.voiceId = voice_id;
        let handles;
        try {
          handles = voice.narrate(lines, { interruptible, ...(now ? { priority: 'now' as const } : {}) });
        } catch (error) {
          if (!(error instanceof SpeakerQueueFullError)) throw error;
          sendJson(res, 429, { error: error.message, code: error.code });
          return true;
        }
        const utterances = lines.map((line, index) => ({
          id: handles[index]!.id,
          character: line.character,
          voice_id: line.voiceId,
          text: line.text,
        }));
        if (wait === false) {
          sendJson(res, 202, { utterances });
          return true;
        }
        // The HTTP client going away does not cancel the speech: the channel still hears it.
        const results = await Promise.all(handles.map((h) => h.result));
        sendJson(res, 200, {
          utterances: utterances.map((u, index) => ({ ...u, ...utteranceResultJson(results[index]!) })),
        });
        return true;
      }
      case 'stop':
      case 'skip': {
        if (method !== 'POST') return sendMethodNotAllowed(res, 'POST');
        const voice = guilds.get(guildId);
        if (!voice) return notInVoice();
        const done = action === 'stop' ? voice.stop() : voice.skip();
        sendJson(res, 200, { [action === 'stop' ? 'stopped' : 'skipped']: done });
        return true;
      }
      case 'barge-in': {
        if (method !== 'PUT') return sendMethodNotAllowed(res, 'PUT');
        const read = await readJsonBody(req, res, MAX_BODY_BYTES);
        if (!read) return true;
        const parsed = bargeInBody.safeParse(read.body);
        if (!parsed.success) {
          sendInvalid(res, parsed.error);
          return true;
        }
        guilds.setBargeIn(guildId, parsed.data.enabled);
        sendJson(res, 200, { guild_id: guildId, barge_in: parsed.data.enabled });
        return true;
      }
      case 'relay': {
        if (method === 'POST') {
          const read = await readJsonBody(req, res, MAX_BODY_BYTES);
          if (!read) return true;
          const parsed = relayBody.safeParse(read.body);
          if (!parsed.success) {
            sendInvalid(res, parsed.error);
            return true;
          }
          let relay: GuildRelay;
          try {
            relay = guilds.startRelay(guildId, parsed.data.relay);
          } catch (error) {
            if (error instanceof NotInVoiceError) return notInVoice();
            if (error instanceof UnknownRelayError)
              sendJson(res, 400, { error: error.message, param: 'relay', relays: error.relays });
            else if (error instanceof RelayRunningError)
              sendJson(res, 409, {
                error: `${error.message}: DELETE /discord/guilds/${guildId}/relay`,
                relay: error.relay,
              });
            else throw error;
            return true;
          }
          sendJson(res, 201, describeRelay(relay));
          return true;
        }
        if (method !== 'GET' && method !== 'DELETE') return sendMethodNotAllowed(res, 'GET, POST, DELETE');
        if (!guilds.get(guildId)) return notInVoice();
        const relay = guilds.relayOf(guildId);
        if (!relay) {
          sendJson(res, 404, {
            error: `no relay runs in guild ${guildId}: POST /discord/guilds/${guildId}/relay with { relay } starts one`,
          });
          return true;
        }
        if (method === 'GET') sendJson(res, 200, describeRelay(relay));
        else {
          await relay.stop();
          res.writeHead(204).end();
        }
        return true;
      }
      default:
        sendJson(res, 404, { error: `no route for ${method} /discord/${parts.join('/')}` });
        return true;
    }
  };
}
