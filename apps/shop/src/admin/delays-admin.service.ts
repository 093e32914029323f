import { Injectable, Logger } from '@nestjs/common';
import { DeadAction, DelayService, Page, PageRequest, PendingAction } from 'nestjs-delay';
import { NotFoundError } from '../common/errors/not-found.error';
import { DELAY_TOPICS } from './delay-topics';
import { RedriveResult } from './redrive-result';
import { TopicSummary } from './topic-summary';

/** What operators need: what is pending, what died, and a way to run the dead again. */
@Injectable()
export class DelaysAdminService {
  private readonly logger = new Logger(DelaysAdminService.name);

  constructor(private readonly delay: DelayService) {}

  async summary(): Promise<TopicSummary[]> {
    return Promise.all(
      DELAY_TOPICS.map(async (topic) => {
        const [pending, dead] = await Promise.all([this.delay.count(topic), this.delay.countDead(topic)]);
        return { topic, pending, dead };
      }),
    );
  }

  pending(topic: string, page: PageRequest): Promise<Page<PendingAction>> {
    return this.delay.list(this.known(topic), page);
  }

  dead(topic: string, page: PageRequest): Promise<Page<DeadAction>> {
    return this.delay.listDead(this.known(topic), page);
  }

  async redrive(topic: string, id: string): Promise<RedriveResult> {
    if (!(await this.delay.redrive(this.known(topic), id))) throw new NotFoundError(`Dead action of ${topic}`, id);
    this.logger.log(`Re-drove dead action "${id}" of ${topic}`);
    return { topic, redriven: 1 };
  }

  async redriveAll(topic: string): Promise<RedriveResult> {
    const redriven = await this.delay.redriveAll(this.known(topic));
    if (redriven > 0) this.logger.log(`Re-drove ${redriven} dead action(s) of ${topic}`);
    return { topic, redriven };
  }

  private known(topic: string): string {
    if (!DELAY_TOPICS.includes(topic)) throw new NotFoundError('Topic', topic);
    return topic;
  }
}
