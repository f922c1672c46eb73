/**
 * A relay app's `handoffData` naming a transfer (`{"transfer": {…}}`): read into the same request as
 * `POST /calls/{id}/transfer` takes; anything else stays data for whoever follows the call.
 */
import { describe, expect, it } from 'vitest';
import { readHandoffTransfer } from '../../../src/control/transfer-request.js';

describe('readHandoffTransfer', () => {
  it('reads a transfer, cold by default', () => {
    expect(readHandoffTransfer('{"transfer": {"to": "+15551234567"}}')).toEqual({
      kind: 'transfer',
      request: { to: '+15551234567', mode: 'cold' },
    });
    expect(
      readHandoffTransfer(
        JSON.stringify({
          reason: 'billing',
          transfer: {
            to: 'sip:desk@pbx.example.com',
            mode: 'warm',
            caller_id: '+15550001111',
            summary: 'Bill',
          },
        }),
      ),
    ).toEqual({
      kind: 'transfer',
      request: { to: 'sip:desk@pbx.example.com', mode: 'warm', caller_id: '+15550001111', summary: 'Bill' },
    });
  });

  it('leaves anything that names no transfer as data', () => {
    for (const data of [undefined, '', 'plain text', '{"reason":"done"}', '[1,2]', '{not json', '"transfer"'])
      expect(readHandoffTransfer(data)).toEqual({ kind: 'none' });
    expect(readHandoffTransfer(`{"a":${'['.repeat(100)}${']'.repeat(100)}}`)).toEqual({ kind: 'none' });
  });

  it('says what is wrong with a transfer it cannot read', () => {
    expect(readHandoffTransfer('{"transfer": {"to": "+15551234567", "mode": "lukewarm"}}')).toMatchObject({
      kind: 'invalid',
      message: expect.stringMatching(/^handoffData transfer\.mode: /) as unknown,
    });
    expect(readHandoffTransfer('{"transfer": "+15551234567"}')).toMatchObject({ kind: 'invalid' });
    expect(readHandoffTransfer('{"transfer": {"to": "+1555", "summary": "hi"}}')).toMatchObject({
      kind: 'invalid',
      message: 'handoffData transfer.summary: summary is for a warm transfer',
    });
  });
});
