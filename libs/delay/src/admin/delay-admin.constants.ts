/** Injection token of the admin page's checked options. */
export const DELAY_ADMIN_OPTIONS = Symbol('nestjs-delay:admin-options');
