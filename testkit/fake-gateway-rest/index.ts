/**
 * Fake REST APIs of the phone gateways, on loopback, written from each vendor's API reference: they
 * check method, path, authentication and body as the vendor documents them, record every request,
 * keep the calls they know, and answer with the vendor's success and error shapes (see each file).
 */
export { FakeRestServer, type Fault, type RecordedRequest, type Reply } from './server.js';
export { FakeDocumentHost, fetchDocument, type PublishedDocument } from './documents.js';
export { parseXml, findAll, type XmlElement } from './xml.js';
export { FakeTwilioRest, twilioStream, type TwilioFakeCall } from './twilio.js';
export { FakeTelnyxRest, type TelnyxFakeCall } from './telnyx.js';
export { FakePlivoRest, type PlivoFakeCall, type FetchedXml } from './plivo.js';
export { FakeVonageRest, badNcco, type VonageFakeCall } from './vonage.js';
export { FakeJambonzRest, type JambonzFakeCall, type FetchedVerbs } from './jambonz.js';
export { FakeAsteriskAri, type AsteriskFakeChannel } from './asterisk.js';
export { FakeExotelRest } from './exotel.js';
export { fakeGatewayCredentials, fakeTwilioAccountSid } from './credentials.js';
export { fakeSecret } from '../secrets.js';
