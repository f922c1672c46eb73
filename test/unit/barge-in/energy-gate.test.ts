/** The energy gate's options: its thresholds, and a floor learnt from the windows it has heard. */
import { describe, expect, it } from 'vitest';
import { EnergyGate } from '../../../src/barge-in/energy-gate.js';
import { seeded } from '../../../testkit/random.js';

describe('EnergyGate', () => {
  const window = (dbfs: number, seed: number): Int16Array => {
    const random = seeded(seed);
    const a = 32768 * 10 ** (dbfs / 20) * Math.sqrt(3);
    return Int16Array.from({ length: 256 }, () => Math.round((random() * 2 - 1) * a));
  };

  it('by default counts windows not yet seen as digital silence; with floorFromSeenWindows, only those heard', () => {
    const barge = new EnergyGate();
    const amd = new EnergyGate({ floorFromSeenWindows: true });
    const opened = { barge: 0, amd: 0 };
    for (let i = 0; i < 20; i++) {
      if (barge.open(window(-40, i))) opened.barge++;
      if (amd.open(window(-40, i))) opened.amd++;
    }
    expect(opened.barge).toBe(20);
    // The first window has nothing to be judged against; after it, −40 dBFS of noise is the floor.
    expect(opened.amd).toBe(1);
    expect(amd.noiseFloorDbfs).toBeCloseTo(-40, 0);
    expect(amd.open(window(-30, 99))).toBe(true);
    expect(amd.lastLevelDbfs).toBeCloseTo(-30, 0);
  });

  it('takes its thresholds as options', () => {
    const gate = new EnergyGate({
      openAboveFloorDb: 3,
      minLevelDbfs: -70,
      floorWindows: 4,
      floorFromSeenWindows: true,
    });
    gate.open(window(-60, 1));
    expect(gate.open(window(-56, 2))).toBe(true);
    // After four louder windows the quiet one has left the floor's memory.
    for (let i = 0; i < 4; i++) gate.open(window(-50, 3 + i));
    expect(gate.noiseFloorDbfs).toBeGreaterThan(-52);
  });
});
