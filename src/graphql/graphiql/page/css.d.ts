// Style sheets are bundled by esbuild, imported only for their effect.
declare module '*.css';
