/**
 * Members' turns for a relay, fed packets as the guild decodes them (48 kHz stereo with their level):
 * when a turn ends, what it holds, and the bounds (noise too short to be a turn, members at once, the
 * longest turn).
 */
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { levelDbfs } from '../../../src/audio/level.js';
import {
  MemberTurns,
  type MemberTurn,
  type MemberTurnsOptions,
} from '../../../adapters/discord/member-turns.js';

const PACKET_SAMPLES = 960;
const END_OF_TURN_MS = 120;

/** 20 ms of 48 kHz stereo: a 300 Hz tone (`amplitude` 0: silence), phase-continuous from `packet`. */
function packet(index: number, amplitude = 8000): Int16Array {
  const out = new Int16Array(PACKET_SAMPLES * 2);
  for (let i = 0; i < PACKET_SAMPLES; i++) {
    const v = Math.round(amplitude * Math.sin((2 * Math.PI * 300 * (index * PACKET_SAMPLES + i)) / 48_000));
    out[2 * i] = out[2 * i + 1] = v;
  }
  return out;
}

function turns(options: Partial<MemberTurnsOptions> = {}): { turns: MemberTurns; heard: MemberTurn[] } {
  const heard: MemberTurn[] = [];
  const t = new MemberTurns({
    endOfTurnMs: END_OF_TURN_MS,
    minSpeechMs: 200,
    minLevelDbfs: -45,
    onTurn: (turn) => heard.push(turn),
    logger: pino({ level: 'silent' }),
    ...options,
  });
  return { turns: t, heard };
}

/** `count` packets of `userId`, as if they had arrived 20 ms apart and just finished arriving. */
function talk(t: MemberTurns, userId: string, count: number, amplitude = 8000): void {
  const start = performance.now() - count * 20;
  for (let k = 0; k < count; k++) {
    const pcm = packet(k, amplitude);
    t.packet(userId, pcm, levelDbfs(pcm), start + k * 20);
  }
}

const wait = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('MemberTurns', () => {
  it("ends a member's turn endOfTurnMs after their last audible packet, with its audio at 16 kHz mono", async () => {
    const { turns: t, heard } = turns();
    talk(t, 'ada', 50); // 1 s
    t.runEnd('ada');
    await wait(END_OF_TURN_MS / 2);
    expect(heard).toEqual([]);
    await wait(END_OF_TURN_MS);
    expect(heard).toHaveLength(1);
    const [turn] = heard;
    expect(turn).toMatchObject({ userId: 'ada', speechMs: 1000 });
    expect(turn!.endMs - turn!.startMs).toBe(1000);
    // 1 s at 16 kHz: nothing before the first packet, nothing after the last.
    expect(turn!.audio.length).toBeGreaterThan(15_900);
    expect(turn!.audio.length).toBeLessThan(16_100);
    expect(t.talking).toBe(0);
  });

  it('drops a run too short to be speech, and silent packets never open a turn', async () => {
    const { turns: t, heard } = turns();
    talk(t, 'ada', 5); // 100 ms: a cough
    talk(t, 'bob', 50, 0);
    t.runEnd('ada');
    t.runEnd('bob');
    await wait(END_OF_TURN_MS * 2);
    expect(heard).toEqual([]);
    expect(t.talking).toBe(0);
  });

  it('follows at most maxTalkers members at once; another is heard once one is done', async () => {
    const { turns: t, heard } = turns({ maxTalkers: 2 });
    talk(t, 'ada', 20);
    talk(t, 'bob', 20);
    talk(t, 'cyd', 20);
    expect(t.talking).toBe(2);
    for (const id of ['ada', 'bob', 'cyd']) t.runEnd(id);
    await wait(END_OF_TURN_MS * 2);
    expect(heard.map((h) => h.userId).sort()).toEqual(['ada', 'bob']);
    talk(t, 'cyd', 20);
    t.runEnd('cyd');
    await wait(END_OF_TURN_MS * 2);
    expect(heard.map((h) => h.userId)).toContain('cyd');
  });

  it('cuts a turn at maxTurnMs; the rest is the next turn', async () => {
    const { turns: t, heard } = turns({ maxTurnMs: 1000 });
    talk(t, 'ada', 75); // 1.5 s without a pause
    expect(heard).toHaveLength(1);
    expect(heard[0]!.endMs - heard[0]!.startMs).toBe(1000);
    t.runEnd('ada');
    await wait(END_OF_TURN_MS * 2);
    expect(heard).toHaveLength(2);
    expect(heard[1]!.endMs - heard[1]!.startMs).toBe(500);
  });

  it('ends no turn once closed', async () => {
    const { turns: t, heard } = turns();
    talk(t, 'ada', 50);
    t.close();
    await wait(END_OF_TURN_MS * 2);
    expect(heard).toEqual([]);
    expect(t.talking).toBe(0);
  });
});
