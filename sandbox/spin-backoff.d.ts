/** See spin-backoff.js. */
export declare class SpinBackoff {
  /** Whether to stay awake for this wait. */
  shouldSpin(): boolean
  /** The other side answered while this one was awake. */
  hit(): void
  /** This side stayed awake for nothing. */
  miss(): void
}
