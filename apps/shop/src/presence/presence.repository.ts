import { Injectable } from '@nestjs/common';
import { UserPresence } from './user-presence';

/** In-memory presence of every user seen since startup. */
@Injectable()
export class PresenceRepository {
  private readonly presences = new Map<string, UserPresence>();

  findByUserId(userId: string): UserPresence | undefined {
    return this.presences.get(userId);
  }

  findAll(): UserPresence[] {
    return Array.from(this.presences.values());
  }

  save(presence: UserPresence): void {
    this.presences.set(presence.userId, presence);
  }
}
