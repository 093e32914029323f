/** Where a webhook POST goes: the URL, and the one address it connects to, checked before the connection. */
export interface WebhookDestination {
  readonly url: URL;
  readonly address: string;
  readonly family: 4 | 6;
}
