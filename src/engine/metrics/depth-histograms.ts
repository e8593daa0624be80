// Per-depth layer-confidence samples labelled accepted/rejected, binned for display and ranked for
// the AUC. Label rule (docs/trace-format.md): in a request-step, drafted depth d is "accepted"
// when the accepted path reached depth d (accepted.length > d), else "rejected" — when some node
// at depth d was verified. A layer none of whose nodes reached the target (a gate cut it, or the
// budget left it out) is counted apart ("unverified") and left out of the AUC. Counted as
// rejected, every gate would confirm itself: the samples below τ_d would all read rejected, and
// the AUC at a gated depth would rise with τ_d whatever the confidence is worth. Nor is such a
// layer counted as rejected when the path broke above it, though it surely would have been: below
// τ_d only rejections would then be labelled, and the AUC would rise with τ_d all the same.

import type { DepthHistogram, RequestStep } from '../../shared/events.js';
import { mannWhitneyAuc } from './auc.js';

export const DEFAULT_HISTOGRAM_BINS = 20;

/** A growable Float64Array: confidences are kept raw so the AUC is exact, not binned. */
class SampleBuffer {
  private data = new Float64Array(64);
  length = 0;
  push(v: number): void {
    if (this.length === this.data.length) {
      const grown = new Float64Array(this.data.length * 2);
      grown.set(this.data);
      this.data = grown;
    }
    this.data[this.length++] = v;
  }
  view(): Float64Array {
    return this.data.subarray(0, this.length);
  }
}

export interface DepthHistogramOptions {
  /** Equal-width bins over [0, 1]. */
  bins?: number;
  /** Fewer samples than this in either group gives auc = null. */
  aucMinSamples?: number;
}

export class DepthHistogramAccumulator {
  private readonly bins: number;
  private readonly aucMinSamples: number;
  private readonly edges: number[];
  private readonly accepted: SampleBuffer[] = [];
  private readonly rejected: SampleBuffer[] = [];
  private readonly unverified: SampleBuffer[] = [];

  constructor(options: DepthHistogramOptions = {}) {
    this.bins = options.bins ?? DEFAULT_HISTOGRAM_BINS;
    this.aucMinSamples = options.aucMinSamples ?? 1;
    if (!Number.isInteger(this.bins) || this.bins < 1) throw new Error(`histogram bins must be a positive integer, got ${this.bins}`);
    this.edges = Array.from({ length: this.bins + 1 }, (_, k) => k / this.bins);
  }

  /**
   * Label and store every drafted depth's layer confidence of one request-step. A depth whose
   * gate truncated the request before the layer entered the tree has no `confidences` entry, but
   * its gate check carries the same c_{i,d}: use it.
   */
  addRequestStep(request: RequestStep): void {
    const acceptedLength = request.accepted.length;
    const depths = Math.max(request.confidences.length, ...request.gates.map((g) => g.depth + 1));
    let verifiedDepths: Set<number> | undefined;
    for (let depth = 0; depth < depths; depth++) {
      const confidence = request.confidences[depth] ?? request.gates.find((g) => g.depth === depth)?.confidence;
      if (confidence === undefined) continue;
      verifiedDepths ??= new Set(request.nodes.flatMap((n) => (n.verified && n.depth >= 0 ? [n.depth] : [])));
      const label = !verifiedDepths.has(depth) ? 'unverified' : acceptedLength > depth ? 'accepted' : 'rejected';
      this.add(depth, confidence, label);
    }
  }

  add(depth: number, confidence: number, label: 'accepted' | 'rejected' | 'unverified'): void {
    if (!Number.isFinite(confidence)) return; // a depth the engine did not draft may carry NaN
    while (this.accepted.length <= depth) {
      this.accepted.push(new SampleBuffer());
      this.rejected.push(new SampleBuffer());
      this.unverified.push(new SampleBuffer());
    }
    this[label][depth].push(confidence);
  }

  /** One histogram per depth seen, depth 0 first. */
  histograms(): DepthHistogram[] {
    return this.accepted.map((acc, depth) => {
      const rej = this.rejected[depth];
      return {
        depth,
        edges: [...this.edges],
        accepted: this.binCounts(acc.view()),
        rejected: this.binCounts(rej.view()),
        unverified: this.binCounts(this.unverified[depth].view()),
        auc: mannWhitneyAuc(acc.view(), rej.view(), this.aucMinSamples),
      };
    });
  }

  /** Raw labelled samples of one depth, for calibration (thresholds need the values, not the bins); unverified ones have no label. */
  samples(depth: number): { accepted: Float64Array; rejected: Float64Array } {
    if (depth >= this.accepted.length) return { accepted: new Float64Array(0), rejected: new Float64Array(0) };
    return { accepted: this.accepted[depth].view().slice(), rejected: this.rejected[depth].view().slice() };
  }

  private binCounts(values: Float64Array): number[] {
    const counts = new Array<number>(this.bins).fill(0);
    for (const v of values) {
      // Clamp: 1.0 belongs to the last bin, and nothing falls outside [0, 1].
      const bin = Math.min(this.bins - 1, Math.max(0, Math.floor(v * this.bins)));
      counts[bin]++;
    }
    return counts;
  }
}
