/** The baseline of bench:api: a bare Express 5 route answering a fixed JSON body (argv: port, body file). */
import fs from 'node:fs';
import express from 'express';

const [port, bodyFile] = process.argv.slice(2);
const body = JSON.parse(fs.readFileSync(bodyFile!, 'utf8'));
const app = express();
app.get('/repos/:id', (_req, res) => {
  res.json(body);
});
app.listen(Number(port), '127.0.0.1', () => process.send?.('ready'));
