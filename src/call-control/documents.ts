/**
 * Some gateways cannot take their instructions in the REST request itself: Plivo fetches XML from an
 * `answer_url` / `aleg_url` (and a `<Dial>`'s `confirmSound` and `dialMusic`), jambonz fetches its verbs
 * from a `call_hook` (and a dial's `confirmHook`), Vonage a connected party's NCCO from `onAnswer.url`.
 * For those, the port publishes the document it would have sent and gives the gateway its URL.
 *
 * The app implements this port (a route on its public address serving each document at an unguessable
 * path for a while); without one, what needs it is `not_configured` and its capability is off.
 */

import type { CallControlCapabilities } from './port.js';

/**
 * What a gateway that fetches every instruction from a URL (Plivo, jambonz) can do: everything with a
 * document host, nothing but hanging up without one.
 */
export function fetchedInstructionCapabilities(hosted: boolean): CallControlCapabilities {
  return {
    hangUp: true,
    coldTransfer: hosted,
    warmTransfer: hosted,
    holdMusic: hosted,
    summary: hosted ? ['text', 'audio'] : [],
    sipTargets: true,
    originate: hosted,
    machineDetection: hosted,
  };
}

/** One document a gateway will fetch. */
export interface HostedDocument {
  /** `application/xml` (Plivo), `application/json` (jambonz verbs, a Vonage NCCO). */
  readonly contentType: string;
  readonly body: string;
}

export interface DocumentHost {
  /**
   * Makes `document` reachable at an absolute http(s) URL, answered to GET and POST alike (Plivo
   * fetches a `<Dial>`'s `confirmSound` and `dialMusic` with POST whatever is asked; the ports ask for
   * GET everywhere else), for as long as a call may take to be answered and transferred (minutes,
   * not seconds), and returns that URL.
   */
  publish(document: HostedDocument): Promise<string>;
}
