import { IsString, MaxLength } from 'class-validator';

/** Any string passes here; an unknown topic is a 404 from the service, like any unknown resource. */
export class TopicParams {
  @IsString()
  @MaxLength(100)
  readonly topic!: string;
}
