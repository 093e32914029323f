/** A webhook POST that did not get a 2xx; thrown so the delay library retries the batch. */
export class WebhookRequestError extends Error {
  constructor(
    readonly url: string,
    readonly httpStatus: number | undefined,
    reason: string,
  ) {
    super(`POST ${url} failed: ${reason}`);
    this.name = WebhookRequestError.name;
  }
}
