/**
 * The call as a picture: a scrolling strip of 20 ms levels, voxbridge's voice above the line and the
 * caller's below, with what happened drawn where it happened (utterances, keys, barge-ins).
 */

export type Marker =
  | { kind: 'utterance'; slot: number; label: string }
  | { kind: 'dtmf'; slot: number; label: string }
  /** From the caller's speech onset to the moment the page's audio was cleared. */
  | { kind: 'barge-in'; slot: number; until: number; label: string };

const FLOOR_DB = -60;
const PX_PER_SLOT = 2;
const COLORS = {
  background: '#0f1720',
  grid: '#1f2a36',
  out: '#2dd4bf',
  mic: '#fbbf24',
  muted: '#475569',
  text: '#cbd5e1',
  utterance: '#38bdf8',
  dtmf: '#a78bfa',
  bargeIn: '#f43f5e',
};

export class Scope {
  private readonly out: number[] = [];
  private readonly mic: number[] = [];
  private readonly muted: boolean[] = [];
  private readonly markers: Marker[] = [];
  private frameRequested = false;

  constructor(private readonly canvas: HTMLCanvasElement) {
    this.draw();
  }

  /** The slot (20 ms since the call connected) the next frame will take. */
  get slot(): number {
    return this.out.length;
  }

  push(outDb: number, micDb: number, muted: boolean): void {
    this.out.push(outDb);
    this.mic.push(micDb);
    this.muted.push(muted);
    this.requestDraw();
  }

  mark(marker: Marker): void {
    this.markers.push(marker);
    this.requestDraw();
  }

  clear(): void {
    this.out.length = 0;
    this.mic.length = 0;
    this.muted.length = 0;
    this.markers.length = 0;
    this.requestDraw();
  }

  private requestDraw(): void {
    if (this.frameRequested) return;
    this.frameRequested = true;
    requestAnimationFrame(() => {
      this.frameRequested = false;
      this.draw();
    });
  }

  private draw(): void {
    const { canvas } = this;
    const ratio = window.devicePixelRatio || 1;
    const width = canvas.clientWidth;
    const height = canvas.clientHeight;
    if (canvas.width !== Math.round(width * ratio) || canvas.height !== Math.round(height * ratio)) {
      canvas.width = Math.round(width * ratio);
      canvas.height = Math.round(height * ratio);
    }
    const g = canvas.getContext('2d');
    if (!g) return;
    g.setTransform(ratio, 0, 0, ratio, 0, 0);
    g.fillStyle = COLORS.background;
    g.fillRect(0, 0, width, height);

    const top = 18;
    const mid = top + (height - top) / 2;
    const half = (height - top) / 2 - 4;
    const visible = Math.floor(width / PX_PER_SLOT);
    const first = Math.max(0, this.out.length - visible);
    const x = (slot: number): number => (slot - first) * PX_PER_SLOT;

    // A second's grid line, labelled in seconds since the call connected.
    g.font = '11px system-ui, sans-serif';
    g.textBaseline = 'top';
    for (let s = Math.ceil(first / 50) * 50; s < first + visible; s += 50) {
      g.fillStyle = COLORS.grid;
      g.fillRect(x(s), top, 1, height - top);
      if ((s / 50) % 5 === 0) {
        g.fillStyle = COLORS.muted;
        g.fillText(`${s / 50}s`, x(s) + 3, height - 14);
      }
    }
    g.fillStyle = COLORS.grid;
    g.fillRect(0, mid, width, 1);

    const bar = (db: number): number => (Math.max(0, db - FLOOR_DB) / -FLOOR_DB) * half;
    for (let slot = first; slot < this.out.length; slot++) {
      const up = bar(this.out[slot]!);
      if (up > 0) {
        g.fillStyle = COLORS.out;
        g.fillRect(x(slot), mid - up, PX_PER_SLOT - 0.5, up);
      }
      const down = bar(this.mic[slot]!);
      g.fillStyle = this.muted[slot] ? COLORS.muted : COLORS.mic;
      if (this.muted[slot]) g.fillRect(x(slot), mid + 1, PX_PER_SLOT - 0.5, 2);
      else if (down > 0) g.fillRect(x(slot), mid + 1, PX_PER_SLOT - 0.5, down);
    }

    let utterances = 0;
    for (const m of this.markers) {
      // Utterance labels take turns between two rows, so that short ones in a row stay readable.
      const row = m.kind === 'utterance' ? utterances++ % 2 : 0;
      if (m.kind === 'barge-in') {
        if (m.until < first) continue;
        g.fillStyle = 'rgba(244, 63, 94, 0.18)';
        g.fillRect(x(m.slot), top, Math.max(2, x(m.until) - x(m.slot)), height - top);
        g.fillStyle = COLORS.bargeIn;
        g.fillRect(x(m.until), top, 2, height - top);
        g.fillText(m.label, Math.max(2, x(m.slot)), 2);
        continue;
      }
      if (m.slot < first) continue;
      g.fillStyle = m.kind === 'dtmf' ? COLORS.dtmf : COLORS.utterance;
      g.fillRect(x(m.slot), top, 1, half + 4);
      g.fillText(m.label, x(m.slot) + 3, m.kind === 'dtmf' ? mid + half - 14 : top + 2 + row * 14);
    }
  }
}
