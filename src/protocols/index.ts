/** Every gateway's wire protocol by name: the media-stream server picks one per connection path. */
import { asterisk } from './asterisk.js';
import { exotel } from './exotel.js';
import { jambonz } from './jambonz.js';
import { plivo } from './plivo.js';
import { telnyx } from './telnyx.js';
import { twilio } from './twilio.js';
import type { GatewayName, GatewayProtocol } from './types.js';
import { vonage } from './vonage.js';

export const PROTOCOLS: Readonly<Record<GatewayName, GatewayProtocol>> = {
  twilio,
  telnyx,
  plivo,
  vonage,
  exotel,
  asterisk,
  jambonz,
};
