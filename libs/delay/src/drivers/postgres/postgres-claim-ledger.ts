/**
 * The claims of one consumer, by id: how many of each claim's runs are not
 * over yet (their leases are renewed, through the claim's runs row), and the
 * claims whose runs are all over, whose runs row is still to be deleted (by
 * the next claim, or by a statement of its own when no claim follows).
 */
export class PostgresClaimLedger {
  private readonly open = new Map<string, number>();
  /** Open claims with a run whose outcome could not be recorded: never finished, their rows' leases run out. */
  private readonly unrecorded = new Set<string>();
  private finished: string[] = [];

  /** A claim (or a claim asked again) handed `runs` runs to this consumer. */
  opened(claimId: string, runs: number): void {
    if (runs > 0) this.open.set(claimId, (this.open.get(claimId) ?? 0) + runs);
  }

  /**
   * One run of the claim is over: its outcome recorded, or not (given up, or the run never started). A claim with
   * an outcome not recorded keeps its runs row, no longer renewed: once its lease runs out, a claim takes that
   * run back as its next attempt.
   */
  runOver(claimId: string, recorded: boolean): void {
    if (!recorded) this.unrecorded.add(claimId);
    const left = (this.open.get(claimId) ?? 0) - 1;
    if (left > 0) {
      this.open.set(claimId, left);
      return;
    }
    if (!this.open.delete(claimId)) return;
    if (!this.unrecorded.delete(claimId)) this.finished.push(claimId);
  }

  /** Claims with runs not over: their leases are renewed. */
  get leased(): string[] {
    return [...this.open.keys()];
  }

  get holdsLeases(): boolean {
    return this.open.size > 0;
  }

  /** The finished claims, handed to the statement that deletes their runs rows. */
  takeFinished(): string[] {
    const ids = this.finished;
    this.finished = [];
    return ids;
  }

  /** That statement failed: the next one sends them again (deleting twice is harmless). */
  putBack(ids: readonly string[]): void {
    this.finished.push(...ids);
  }
}
