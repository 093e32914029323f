import { IsString, MaxLength } from 'class-validator';

/** Any string passes here; a topic with no actions lists nothing. */
export class TopicParams {
  @IsString()
  @MaxLength(100)
  readonly topic!: string;
}
