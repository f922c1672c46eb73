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

export class EnergyGate {
  private readonly levels = new Float64Array(FLOOR_WINDOWS).fill(SILENT_DBFS);
  private next = 0;

  /** Whether this window is worth a closer look; then it joins the floor's history. */
  open(window: Int16Array): boolean {
    const level = levelDbfs(window);
    const isOpen = level >= MIN_LEVEL_DBFS && level >= this.noiseFloorDbfs + OPEN_ABOVE_FLOOR_DB;
    this.levels[this.next] = level;
    this.next = (this.next + 1) % FLOOR_WINDOWS;
    return isOpen;
  }

  get noiseFloorDbfs(): number {
    let floor = Number.POSITIVE_INFINITY;
    for (const l of this.levels) if (l < floor) floor = l;
    return floor;
  }

  reset(): void {
    this.levels.fill(SILENT_DBFS);
    this.next = 0;
  }
}
