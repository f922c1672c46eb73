import WebSocket from 'ws';

/**
 * The HTTP status a WebSocket upgrade gets: 101 when the socket opens (it is closed again at once), the
 * refusal's status otherwise. No answer within 5 s fails the test.
 */
export function upgradeStatus(target: string, headers: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(target, { headers, handshakeTimeout: 5000 });
    ws.once('open', () => {
      ws.close();
      resolve(101);
    });
    ws.once('unexpected-response', (_req, res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    ws.once('error', reject);
  });
}
