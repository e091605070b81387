/**
 * The browser entry of the GraphQL IDE served at GET /graphql: GraphiQL (CodeMirror, no workers)
 * with the endpoint preset to this origin's /graphql and a token field. Bundled by build-assets.ts
 * into dist/assets/graphiql/; everything it loads comes from the service itself.
 */
import { GraphiQL } from 'graphiql';
import 'graphiql/style.css';
import type { GraphQLSchema } from 'graphql';
import './page.css';
import { StrictMode, useCallback, useEffect, useMemo, useRef, useState } from 'react';
import { createRoot } from 'react-dom/client';
import { serviceFetcher } from './fetcher.js';
import { loadSchema, type SchemaAnswer } from './schema.js';
import { storedToken, TokenField } from './token-field.js';

function App() {
  const [token, setToken] = useState(storedToken);
  // Enter in the field loads the schema again even for the same token: GraphiQL's own re-fetch is hidden (page.css).
  const [attempt, setAttempt] = useState(0);
  const current = useRef(token);
  const onToken = useCallback((entered: string, again = false) => {
    if (entered === current.current && !again) return;
    current.current = entered;
    setToken(entered);
    setAttempt((n) => n + 1);
  }, []);

  const [schema, setSchema] = useState<GraphQLSchema | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const [loading, setLoading] = useState(false);
  useEffect(() => {
    setSchema(null);
    setProblem(null);
    setLoading(Boolean(token));
    if (!token) return;
    const request = new AbortController();
    loadSchema(token, request.signal)
      .catch((error: unknown): SchemaAnswer => ({ problem: `The schema could not be loaded: ${String(error)}.` }))
      .then((answer) => {
        if (request.signal.aborted) return; // a replaced token's answer is not shown
        if ('schema' in answer) setSchema(answer.schema);
        else setProblem(answer.problem);
        setLoading(false);
      });
    return () => request.abort();
  }, [token, attempt]);

  const fetcher = useMemo(() => serviceFetcher(token, (refused) => token === current.current && setProblem(refused)), [token]);

  return (
    <div className="cairn-ide">
      <TokenField onToken={onToken} token={token} loading={loading} problem={problem} />
      <div className="cairn-graphiql">
        {/* The schema is the page's to load (schema.tsx): `null` keeps GraphiQL from asking for it. */}
        <GraphiQL fetcher={fetcher} schema={schema} defaultQuery={'{\n  viewer {\n    login\n  }\n}\n'} />
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
