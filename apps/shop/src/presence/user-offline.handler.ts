import { Injectable } from '@nestjs/common';
import { DelayContext, OnDelayExpired } from 'nestjs-delay';
import { USER_OFFLINE, UserOfflinePayload } from './presence-topics';
import { PresenceService } from './presence.service';

@Injectable()
export class UserOfflineHandler {
  constructor(private readonly presence: PresenceService) {}

  @OnDelayExpired(USER_OFFLINE)
  async onSilence({ key, payload }: DelayContext<UserOfflinePayload>): Promise<void> {
    await this.presence.markOfflineIfSilent(key, payload);
  }
}
