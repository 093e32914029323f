/** User and buyer ids: short, and safe to put in a URL path or a delay key. */
export const USER_ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
export const USER_ID_MESSAGE = 'must be 1 to 64 letters, digits, "_" or "-"';
