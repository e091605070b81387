import { useEffect, useState } from 'react';

/** The token lives in the tab's session only: gone when the tab is closed, never in localStorage. */
const TOKEN_KEY = 'cairn.token';

/** A pasted token is taken at once; while one is typed, only after a pause (each try is a request). */
const SETTLE_MS = 400;

export const storedToken = (): string => sessionStorage.getItem(TOKEN_KEY)?.trim() ?? '';

type Props = {
  /** The token (trimmed, maybe empty) once entered: pasted, typed then paused, or leaving the field; `again` for Enter. */
  onToken(token: string, again?: boolean): void;
  /** The token in use: empty until one is entered. */
  token: string;
  /** While its schema is being asked for. */
  loading: boolean;
  /** Why there is no schema or an operation was refused: a sentence for the user. */
  problem: string | null;
};

/** The Token field, and the notice under it saying what is missing or what the service refused. */
export function TokenField({ onToken, ...state }: Props) {
  const [value, setValue] = useState(() => sessionStorage.getItem(TOKEN_KEY) ?? ''); // as typed, spaces and all
  useEffect(() => {
    const timer = setTimeout(() => onToken(value.trim()), SETTLE_MS);
    return () => clearTimeout(timer);
  }, [value, onToken]);

  return (
    <form
      className="cairn-token"
      onSubmit={(event) => {
        event.preventDefault();
        onToken(value.trim(), true);
      }}
    >
      <div className="cairn-token-row">
        <label htmlFor="cairn-token">Token</label>
        <input
          id="cairn-token"
          name="token"
          type="password"
          autoComplete="off"
          placeholder="paste a personal access token (sent as Authorization: Bearer)"
          aria-describedby="cairn-token-notice"
          value={value}
          onChange={(event) => {
            setValue(event.target.value);
            sessionStorage.setItem(TOKEN_KEY, event.target.value);
            if ((event.nativeEvent as InputEvent).inputType === 'insertFromPaste') onToken(event.target.value.trim());
          }}
          onBlur={() => onToken(value.trim())}
        />
      </div>
      <Notice {...state} />
    </form>
  );
}

function Notice({ token, loading, problem }: Omit<Props, 'onToken'>) {
  if (problem)
    return (
      <p id="cairn-token-notice" className="cairn-notice cairn-notice-error" role="alert">
        {problem}
      </p>
    );
  if (loading)
    return (
      <p id="cairn-token-notice" className="cairn-notice" role="status">
        Loading the schema…
      </p>
    );
  if (token) return <p id="cairn-token-notice" hidden />;
  return (
    <p id="cairn-token-notice" className="cairn-notice" role="status">
      A token is needed to load the schema and run operations: paste one into the Token field. The site admin&apos;s token is in the
      service&apos;s data directory, <code>data/admin-token</code> by default.
    </p>
  );
}
