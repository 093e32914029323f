import { IsString, MaxLength, MinLength } from 'class-validator';
import { TopicParams } from './topic-params.dto';

export class DeadActionParams extends TopicParams {
  /** The dead action's `id` from the dead listing: its key, plus a suffix for a batch. */
  @IsString()
  @MinLength(1)
  @MaxLength(600)
  readonly id!: string;
}
