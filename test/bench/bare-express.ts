/** The baseline of bench:api: a bare Express 5 route answering a fixed JSON body after a Bearer check (argv: port, body file, token). */
import fs from 'node:fs';
import express from 'express';

const [port, bodyFile, token] = process.argv.slice(2);
const body = JSON.parse(fs.readFileSync(bodyFile!, 'utf8'));
const app = express();
app.get('/repos/:id', (req, res) => {
  if (req.get('authorization') !== `Bearer ${token}`) {
    res.status(401).json({ error: { code: 'unauthorized', message: 'bad token' } });
    return;
  }
  res.json(body);
});
app.listen(Number(port), '127.0.0.1', () => process.send?.('ready'));
