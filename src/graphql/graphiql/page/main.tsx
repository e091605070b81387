/**
 * The browser entry of the GraphQL IDE served at GET /graphql: GraphiQL (CodeMirror, no workers)
 * with the endpoint preset to this origin's /graphql and a token field. Bundled by build-assets.ts
 * into dist/assets/graphiql/; everything it loads comes from the service itself.
 */
import { GraphiQL, type GraphiQLProps } from 'graphiql';
import 'graphiql/style.css';
import './page.css';
import { StrictMode, useMemo, useRef, useState } from 'react';
import { createRoot } from 'react-dom/client';

/** The token lives in the tab's session only: gone when the tab is closed, never in localStorage. */
const TOKEN_KEY = 'cairn.token';

type Fetcher = GraphiQLProps['fetcher'];

/** A plain POST to /graphql; the token is read at each request, so a pasted token applies at once. */
function tokenFetcher(token: () => string): Fetcher {
  return async (params, options) => {
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json', ...options?.headers };
    const bearer = token().trim();
    if (bearer) headers.authorization = `Bearer ${bearer}`;
    const response = await fetch('/graphql', { method: 'POST', headers, body: JSON.stringify(params) });
    return response.json();
  };
}

function App() {
  const [token, setToken] = useState(() => sessionStorage.getItem(TOKEN_KEY) ?? '');
  const current = useRef(token);
  current.current = token;
  // A new fetcher makes GraphiQL fetch the schema again: only once the token is committed (Enter, leaving the field), not per keystroke.
  const [committed, setCommitted] = useState(token);
  const fetcher = useMemo(() => tokenFetcher(() => current.current), [committed]);
  const commit = () => setCommitted(current.current);

  return (
    <div className="cairn-ide">
      <form
        className="cairn-token"
        onSubmit={(event) => {
          event.preventDefault();
          commit();
        }}
      >
        <label htmlFor="cairn-token">Token</label>
        <input
          id="cairn-token"
          name="token"
          type="password"
          autoComplete="off"
          placeholder="paste a personal access token (sent as Authorization: Bearer)"
          value={token}
          onChange={(event) => {
            setToken(event.target.value);
            sessionStorage.setItem(TOKEN_KEY, event.target.value);
          }}
          onBlur={commit}
        />
      </form>
      <div className="cairn-graphiql">
        <GraphiQL fetcher={fetcher} defaultQuery={'{\n  viewer {\n    login\n  }\n}\n'} />
      </div>
    </div>
  );
}

const root = document.getElementById('root');
if (root)
  createRoot(root).render(
    <StrictMode>
      <App />
    </StrictMode>,
  );
