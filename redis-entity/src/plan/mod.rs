//! Plans: the exact keys, commands and script arguments one call sends,
//! built without a server, and the decoding of the replies. Each is unit
//! tested here; the store sends them.
//!
//! - [`write`]: one write of one entity (and batches of them);
//! - [`read`]: reading entities and decoding their rows;
//! - [`json`]: the `json` layout's document;
//! - [`query`]: query planning, the query script's arguments and replies,
//!   and the checks of fetched entities against the query;
//! - [`verify`]: the `verify` state machine and its repairs.

pub(crate) mod explain;
pub(crate) mod json;
pub(crate) mod pages;
pub(crate) mod plain;
pub(crate) mod query;
pub(crate) mod read;
pub(crate) mod verify;
pub(crate) mod write;
