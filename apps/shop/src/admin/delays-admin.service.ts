import { Injectable, Logger } from '@nestjs/common';
import { DeadAction, DelayService, Page, PageRequest, PendingAction, TopicSummary } from 'nestjs-delay';
import { NotFoundError } from '../common/errors/not-found.error';
import { RedriveResult } from './redrive-result';

/**
 * What operators' scripts need, as JSON: what is pending, what died, and a
 * way to run the dead again. The topics come from the store, so a new
 * topic shows up here without a change to this file.
 */
@Injectable()
export class DelaysAdminService {
  private readonly logger = new Logger(DelaysAdminService.name);

  constructor(private readonly delay: DelayService) {}

  summary(): Promise<TopicSummary[]> {
    return this.delay.topics();
  }

  pending(topic: string, page: PageRequest): Promise<Page<PendingAction>> {
    return this.delay.list(topic, page);
  }

  dead(topic: string, page: PageRequest): Promise<Page<DeadAction>> {
    return this.delay.listDead(topic, page);
  }

  async redrive(topic: string, id: string): Promise<RedriveResult> {
    if (!(await this.delay.redrive(topic, id))) throw new NotFoundError(`Dead action of ${topic}`, id);
    this.logger.log(`Re-drove dead action "${id}" of ${topic}`);
    return { topic, redriven: 1 };
  }

  async redriveAll(topic: string): Promise<RedriveResult> {
    const redriven = await this.delay.redriveAll(topic);
    if (redriven > 0) this.logger.log(`Re-drove ${redriven} dead action(s) of ${topic}`);
    return { topic, redriven };
  }
}
