/** Why an operator's control of a drop changed nothing (the HTTP layer maps each code to a status). */
import { QuietError } from '../../errors.js';

export type DropRefusalCode =
  | 'unknown-product'
  /** the sale has ended: there is nothing left to pause, pace or stock */
  | 'sale-over'
  | 'no-waiting-room'
  /** a withdrawal of more units than are unsold */
  | 'not-enough-units'
  /** another control of the product held it too long */
  | 'control-busy'
  | 'segment-busy'
  | 'segments-unreachable'
  /** a reseed ran meanwhile: the control acted on an epoch that is gone */
  | 'reseeded';

export class DropRefusal extends QuietError {
  constructor(
    readonly code: DropRefusalCode,
    message: string,
  ) {
    super(message);
    this.name = 'DropRefusal';
  }
}
