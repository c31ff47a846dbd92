/** The Dovecot harness lives in `devtools/` so benchmarks can use it too (they import nothing from `test/`). */
export * from '../../devtools/dovecot.js';
