/** The baseline: a bare node:http server answering every request with one fixed JSON body. */
import http from 'node:http';

const body = Buffer.from(process.env.BARE_BODY ?? '{}');
const server = http.createServer((_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': body.length, 'cache-control': 'no-store' });
  res.end(body);
});
server.listen(Number(process.env.PORT), '127.0.0.1', () => process.send?.('ready'));
