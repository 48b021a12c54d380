/**
 * Ids that become part of Redis key names (product, user, lock names): no braces (they would
 * change the hash tag), no spaces, bounded length. Checked at the edge (HTTP, CLI) and again when
 * a key is built.
 */
export const ID_PATTERN = /^[A-Za-z0-9_.:-]{1,128}$/;
