//! Plans: the exact commands and script arguments one call sends, built
//! without a server (keys, commands, script arguments, reply decoding).
//! Each is unit tested here; the store sends them.

pub(crate) mod json;
pub(crate) mod read;
pub(crate) mod write;

pub use write::UpdateOp;
