import { IsString, MaxLength } from 'class-validator';

export class MerchantTimeZoneDto {
  /** An IANA name such as "Europe/Paris"; one the runtime does not know gets the delay library's ERR_DELAY_UNKNOWN_TIME_ZONE. */
  @IsString()
  @MaxLength(64)
  readonly timeZone!: string;
}
