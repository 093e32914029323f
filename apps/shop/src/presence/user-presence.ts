export interface UserPresence {
  readonly userId: string;
  readonly online: boolean;
  readonly lastSeenAt: string;
  /** While online: when the user goes offline unless another heartbeat comes first. */
  readonly offlineDueAt?: string;
  /** While offline: when silence made them so. */
  readonly offlineSince?: string;
}
