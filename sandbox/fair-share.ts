/**
 * The one rule both engines' pools follow to hand a free worker (QuickJS) or process (isolated-vm)
 * to a waiting run: one agent's many runs must never keep another agent's run waiting.
 */

/** A run waiting for a worker or process; `owner` is its agent (undefined: anonymous, never capped). */
export interface FairWaiter {
  readonly owner: number | undefined
}

/** A worker or process of a pool: busy while a run holds it, for that run's agent (`owner`). */
export interface FairHolder {
  readonly state: string
  readonly owner: number | undefined
}

/** How many workers or processes each agent holds now. */
export function heldByOwner(holders: Iterable<FairHolder>): Map<number, number> {
  const held = new Map<number, number>()
  for (const { state, owner } of holders) if (state === 'busy' && owner !== undefined) held.set(owner, (held.get(owner) ?? 0) + 1)
  return held
}

/** Whether `owner` holds `perAgent` or more. On every run's path, so it allocates nothing. */
export function atCap(holders: Iterable<FairHolder>, owner: number | undefined, perAgent: number): boolean {
  if (owner === undefined) return false
  let count = 0
  for (const holder of holders) if (holder.state === 'busy' && holder.owner === owner) count += 1
  return count >= perAgent
}

/**
 * Which of `waiters` (in arrival order) is served next: among those whose agent holds fewer than
 * `perAgent`, the oldest of the agent holding the fewest. Undefined when every waiter's agent is at
 * its cap.
 */
export function nextFairWaiter(waiters: readonly FairWaiter[], held: ReadonlyMap<number, number>, perAgent: number): number | undefined {
  let best: number | undefined
  let fewest = Number.POSITIVE_INFINITY
  for (const [index, waiter] of waiters.entries()) {
    const count = waiter.owner === undefined ? 0 : (held.get(waiter.owner) ?? 0)
    if (waiter.owner !== undefined && count >= perAgent) continue
    if (count < fewest) {
      fewest = count
      best = index
    }
  }
  return best
}
