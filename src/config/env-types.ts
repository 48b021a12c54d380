/** The value types the environment's variables share. */
import { z } from 'zod';

export const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .transform((v) => v === 'true' || v === '1' || v === 'yes');

export const port = z.coerce.number().int().min(1).max(65535);
export const ms = z.coerce.number().int().min(1);
export const positiveInt = z.coerce.number().int().min(1);
