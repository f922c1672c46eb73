/** The cluster's own bounds against the control APIs' (a sibling it may not import). */
import { describe, expect, it } from 'vitest';
import { FORWARDED_JSON_MAX_BYTES } from '../../../src/cluster/forward.js';
import { SAY_MAX_BODY_BYTES } from '../../../src/control/say-request.js';

describe('forwarding between instances', () => {
  it('takes any say body a client may send to the owner', () => {
    expect(FORWARDED_JSON_MAX_BYTES).toBeGreaterThanOrEqual(SAY_MAX_BODY_BYTES);
  });
});
