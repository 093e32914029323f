import { IsUrl, MaxLength } from 'class-validator';

export class SubscribeWebhookDto {
  // No TLD required: localhost and bare IPs are what a demo and a test use.
  @IsUrl({ protocols: ['http', 'https'], require_protocol: true, require_tld: false }, { message: 'url must be an http:// or https:// URL' })
  @MaxLength(2048)
  readonly url!: string;
}
