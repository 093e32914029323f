/** Marks a user offline when it fires; keyed by user id, re-armed by every heartbeat. */
export const USER_OFFLINE = 'user.offline';

/** What each heartbeat arms the offline action with: which heartbeat it follows. */
export interface UserOfflinePayload {
  readonly lastSeenAt: string;
}
