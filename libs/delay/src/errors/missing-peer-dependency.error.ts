import { DelayError } from './delay.error';

/**
 * An optional peer dependency that the chosen configuration needs is not
 * installed, e.g. `driver: { type: 'redis' }` without ioredis. Raised at
 * bootstrap, before anything is connected, with the command that fixes it.
 */
export class MissingPeerDependencyError extends DelayError {
  readonly code = 'ERR_DELAY_MISSING_PEER_DEPENDENCY';

  constructor(
    readonly packageName: string,
    readonly neededFor: string,
    readonly versionRange: string,
    cause?: unknown,
  ) {
    super(`${neededFor} needs the package '${packageName}' (${versionRange}), which is not installed: run npm install ${packageName}`, cause);
  }
}
