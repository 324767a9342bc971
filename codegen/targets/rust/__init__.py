"""The Rust target: one ``no_std`` crate per protocol version (``codec``), spelled from the
same plan as Python and TypeScript, on the support crate ``runtime/rust/wirestream-runtime``."""
