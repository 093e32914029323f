import { Type } from 'class-transformer';
import { ArrayMaxSize, IsArray, IsString, MaxLength, ValidateNested } from 'class-validator';
import { ReceivedEventDto } from './received-event.dto';

/** The wire format the shop's webhooks send, checked as a real receiver would. */
export class WebhookBatchDto {
  @IsString()
  @MaxLength(100)
  readonly batchId!: string;

  @IsString()
  @MaxLength(100)
  readonly merchantId!: string;

  @IsArray()
  @ArrayMaxSize(10_000)
  @ValidateNested({ each: true })
  @Type(() => ReceivedEventDto)
  readonly events!: ReceivedEventDto[];
}
