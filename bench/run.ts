/** `npm run bench`: every benchmark, figures printed as tables to quote in closing notes. */
import { availableParallelism, cpus } from 'node:os';
import { benchAnswers } from './answers.js';
import { benchBargeIn } from './barge-in.js';
import { benchBrowserPhone } from './browser-phone.js';
import { benchCallControl } from './call-control.js';
import { benchCallsLoad } from './calls.js';
import { benchCluster, benchSharedPhrases } from './cluster.js';
import { benchDiscord } from './discord.js';
import { benchDiscordShards } from './discord-shards.js';
import { benchEchoLines } from './echo-lines.js';
import { benchEchoOffline } from './echo-offline.js';
import { benchHardening } from './hardening.js';
import { benchMenus } from './menus.js';
import { benchRelay } from './relay.js';
import { benchService } from './service.js';
import { benchSpeaker } from './speaker.js';
import { benchTalkers } from './talkers.js';
import { benchTwiml } from './twiml.js';
import { benchVad } from './vad.js';

console.log(
  `# voxbridge benchmarks — node ${process.version}, ${availableParallelism()} cores (${cpus()[0]?.model ?? '?'})`,
);
const only = process.argv[2];
if (!only || only === 'service') await benchService();
if (!only || only === 'speaker') await benchSpeaker();
if (!only || only === 'vad') await benchVad();
if (!only || only === 'barge-in') await benchBargeIn();
if (!only || only === 'echo-lines') await benchEchoLines();
if (!only || only === 'echo-offline') await benchEchoOffline();
if (!only || only === 'calls') await benchCallsLoad();
if (!only || only === 'cluster') await benchCluster();
if (!only || only === 'cluster' || only === 'shared-phrases') await benchSharedPhrases();
if (!only || only === 'discord') await benchDiscord();
if (!only || only === 'discord-shards') await benchDiscordShards();
if (!only || only === 'browser-phone') await benchBrowserPhone();
if (!only || only === 'relay') await benchRelay();
if (!only || only === 'answers') await benchAnswers();
if (!only || only === 'twiml') await benchTwiml();
if (!only || only === 'talkers') await benchTalkers(process.argv.slice(3));
if (!only || only === 'hardening') await benchHardening();
if (!only || only === 'menus') await benchMenus();
if (!only || only === 'call-control') await benchCallControl();
