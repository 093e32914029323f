import { IsOptional, IsString, Length, Matches, MaxLength } from 'class-validator';

export class CreateMerchantDto {
  @Matches(/^[a-z0-9-]{1,64}$/, { message: 'id must be 1 to 64 lowercase letters, digits or "-"' })
  readonly id!: string;

  @IsString()
  @Length(1, 100)
  readonly name!: string;

  /** An IANA name such as "Europe/Paris"; default UTC. */
  @IsOptional()
  @IsString()
  @MaxLength(64)
  readonly timeZone?: string;
}
