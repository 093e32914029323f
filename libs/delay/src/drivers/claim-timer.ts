/** setTimeout's limit (about 24.8 days): a longer delay would fire at once. */
const MAX_TIMEOUT_MS = 2_147_483_647;

/**
 * The one timer a topic consumer keeps: when to look for due work next, on
 * the store's clock. Asking for a later time than the one armed changes
 * nothing; asking for an earlier one re-arms it.
 */
export class ClaimTimer {
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Infinity;

  /** `skew` is the store's clock minus this process's, kept fresh by the consumer. */
  constructor(
    private readonly skew: { readonly value: number },
    private readonly fire: () => void,
  ) {}

  /** The store time it is armed for; Infinity when not armed. */
  get armedAt(): number {
    return this.timerAt;
  }

  /** Fires at store time `at`, unless it is already armed for that time or earlier. */
  armAt(at: number): void {
    if (at >= this.timerAt) return;
    this.disarm();
    this.timerAt = at;
    // +1 ms: never look before the due time by the store's clock, or the claim finds nothing.
    const delay = Math.max(0, at - (Date.now() + this.skew.value) + 1);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.timerAt = Infinity;
      this.fire();
    }, Math.min(delay, MAX_TIMEOUT_MS));
  }

  disarm(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Infinity;
  }
}
