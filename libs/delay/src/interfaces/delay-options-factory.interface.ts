import { DelayModuleOptions } from './delay-module-options.interface';

/**
 * What a class given to `DelayModule.forRootAsync({ useClass })` or
 * `({ useExisting })` implements: Nest instantiates (or looks up) the class
 * and calls `createDelayOptions()` once, at bootstrap.
 */
export interface DelayOptionsFactory {
  createDelayOptions(): DelayModuleOptions | Promise<DelayModuleOptions>;
}
