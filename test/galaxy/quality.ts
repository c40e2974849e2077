/**
 * How well a layout separates labelled groups: the mean silhouette (from -1 to 1; above 0.5 means
 * clearly separated groups) and the nearest-neighbour purity (the share of each point's k nearest
 * neighbours with its own label). Plain O(n²) loops: for the test and benchmark sizes (hundreds to a
 * few thousand points).
 */
function distance(points: ArrayLike<number>, i: number, j: number): number {
  const dx = points[i * 3]! - points[j * 3]!;
  const dy = points[i * 3 + 1]! - points[j * 3 + 1]!;
  const dz = points[i * 3 + 2]! - points[j * 3 + 2]!;
  return Math.sqrt(dx * dx + dy * dy + dz * dz);
}

/** silhouette is the mean silhouette coefficient of 3D points (x, y, z flat) with their labels. */
export function silhouette(points: ArrayLike<number>, labels: readonly (string | number)[]): number {
  const groups = [...new Set(labels)];
  let total = 0;
  for (let i = 0; i < labels.length; i++) {
    const sums = new Map(groups.map((g) => [g, { sum: 0, count: 0 }]));
    for (let j = 0; j < labels.length; j++) {
      if (j === i) continue;
      const group = sums.get(labels[j]!)!;
      group.sum += distance(points, i, j);
      group.count++;
    }
    const own = sums.get(labels[i]!)!;
    const a = own.count > 0 ? own.sum / own.count : 0;
    const b = Math.min(...groups.filter((g) => g !== labels[i]).map((g) => sums.get(g)!.sum / Math.max(1, sums.get(g)!.count)));
    total += own.count === 0 ? 0 : (b - a) / Math.max(a, b);
  }
  return total / labels.length;
}

/** knnPurity is the share of the k nearest neighbours (3D) that carry the point's own label. */
export function knnPurity(points: ArrayLike<number>, labels: readonly (string | number)[], k = 10): number {
  let same = 0;
  for (let i = 0; i < labels.length; i++) {
    const near: [number, number][] = [];
    for (let j = 0; j < labels.length; j++) if (j !== i) near.push([distance(points, i, j), j]);
    near.sort((x, y) => x[0] - y[0]);
    for (const [, j] of near.slice(0, k)) if (labels[j] === labels[i]) same++;
  }
  return same / (labels.length * k);
}
