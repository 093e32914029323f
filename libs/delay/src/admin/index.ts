// nestjs-delay/admin: the server-rendered admin page an app mounts on a path of its choice.
export { DelayAdminModule } from './delay-admin.module';
export type { DelayAdminOptions } from './delay-admin-options.interface';
export { AdminGuardRequiredError, InvalidAdminOptionsError } from '../errors';
