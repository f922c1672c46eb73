/**
 * A cheap first look at each window of the caller's audio: is it clearly louder than the line's own
 * noise? Only then is the neural check worth running, so an idle call costs a few multiply-adds per
 * sample. The noise floor is the quietest window of the last second (minimum statistics): speech has
 * pauses, so it does not raise the floor, while a noisier line raises it within a second.
 */
import { levelDbfs, SILENT_DBFS } from '../audio/level.js';

/** Opens when a window is this much above the noise floor. */
const OPEN_ABOVE_FLOOR_DB = 9;
/** …and at least this loud: digital silence and faint hiss never open it. */
const MIN_LEVEL_DBFS = -50;
/** Windows over which the floor is the minimum (≈ 1 s of 32 ms windows). */
const FLOOR_WINDOWS = 32;

export interface EnergyGateOptions {
  /** dB above the floor that opens the gate. Default 9. */
  openAboveFloorDb?: number;
  /** The gate never opens under this level (dBFS). Default −50. */
  minLevelDbfs?: number;
  /** Windows over which the floor is the minimum. Default 32. */
  floorWindows?: number;
  /**
   * Whether the floor is the quietest of the windows seen so far only (true), or windows not seen yet
   * count as digital silence (false, the default). The barge-in's gate starts as the bot speaks, and
   * anything audible over `minLevelDbfs` in the first second may be the caller. A gate that must judge
   * the very first second of a line as well (answering-machine detection: a noisy line's first second
   * is not speech) takes the floor from what it has heard.
   */
  floorFromSeenWindows?: boolean;
}

export class EnergyGate {
  private readonly levels: Float64Array;
  private readonly openAboveFloorDb: number;
  private readonly minLevelDbfs: number;
  private readonly seenOnly: boolean;
  private next = 0;
  private seen = 0;
  private last = SILENT_DBFS;

  constructor(options: EnergyGateOptions = {}) {
    this.levels = new Float64Array(Math.max(1, Math.round(options.floorWindows ?? FLOOR_WINDOWS))).fill(
      SILENT_DBFS,
    );
    this.openAboveFloorDb = options.openAboveFloorDb ?? OPEN_ABOVE_FLOOR_DB;
    this.minLevelDbfs = options.minLevelDbfs ?? MIN_LEVEL_DBFS;
    this.seenOnly = options.floorFromSeenWindows ?? false;
  }

  /** Whether this window is worth a closer look; then it joins the floor's history. */
  open(window: Int16Array): boolean {
    const level = levelDbfs(window);
    this.last = level;
    const isOpen = level >= this.minLevelDbfs && level >= this.noiseFloorDbfs + this.openAboveFloorDb;
    this.levels[this.next] = level;
    this.next = (this.next + 1) % this.levels.length;
    if (this.seen < this.levels.length) this.seen++;
    return isOpen;
  }

  /** The level of the window judged last (dBFS). */
  get lastLevelDbfs(): number {
    return this.last;
  }

  /** The floor the next window is judged against (`SILENT_DBFS` before any, when only seen ones count). */
  get noiseFloorDbfs(): number {
    const count = this.seenOnly ? this.seen : this.levels.length;
    if (count === 0) return SILENT_DBFS;
    let floor = Number.POSITIVE_INFINITY;
    // The ring fills from slot 0, so the windows seen are its first `seen` slots until it wraps.
    for (let i = 0; i < count; i++) if (this.levels[i]! < floor) floor = this.levels[i]!;
    return floor;
  }

  reset(): void {
    this.levels.fill(SILENT_DBFS);
    this.next = 0;
    this.seen = 0;
    this.last = SILENT_DBFS;
  }
}
