export interface RedriveResult {
  readonly topic: string;
  /** How many dead actions are due again. */
  readonly redriven: number;
}
