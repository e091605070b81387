/**
 * The bytes `text` takes in a JSON answer or payload, without its quotes: a control character takes
 * six (`\u0001`), so a bound on what git holds is not a bound on what is sent.
 */
export const jsonBytes = (text: string): number => Buffer.byteLength(JSON.stringify(text)) - 2;
